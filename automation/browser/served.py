"""When a server refused what a page's script sent: a write (POST, PUT, PATCH, DELETE) it
sent to the page's own site by fetch or XHR (a form sent by script, a save), answered HTTP
4xx/5xx.  A replay fails the step that sent it (:mod:`automation.browser.pagelog` notes
them); the pytest export fails the same way: it writes the code below its marker into the
exported file as it is.
"""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["WRITES", "refused_write", "same_site"]

# -- written into an exported pytest file as it is ----------------------------------
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def same_site(url: str, page_url: str) -> bool:
    """Whether ``url`` is on the page's site: its host, or a host under the same last two
    labels (app.example.com and api.example.com); an address's host only as itself."""
    host, page_host = urlsplit(url).hostname or "", urlsplit(page_url).hostname or ""
    if host == page_host:
        return bool(host)
    if not host or not page_host or ":" in host or host.replace(".", "").isdigit():
        return False
    return host.split(".")[-2:] == page_host.split(".")[-2:] and "." in host


def refused_write(method: str, resource_type: str, status: int, url: str, page_url: str) -> bool:
    """Whether a request the page made, answered ``status``, is a write of its script's to
    its own site that the server refused."""
    return (
        status >= 400
        and resource_type in ("fetch", "xhr")
        and method in WRITES
        and same_site(url, page_url)
    )
