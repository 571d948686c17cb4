"""When a server refused what a page's script sent: a write (POST, PUT, PATCH, DELETE) it
sent to the page's own site by fetch or XHR (a form sent by script, a save), answered HTTP
4xx/5xx.  A replay fails the step that sent it (:mod:`automation.browser.pagelog` notes
them); the pytest export fails the same way: it writes the code below its marker into the
exported file as it is.  And where a write led: :func:`same_place` tells whether the page
a write ended on is the place it led to when recorded; :func:`address_shape` whether the
server's answer to a form stands at the address a check was recorded on.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["WRITES", "address_shape", "refused_write", "same_place", "same_site"]

# -- written into an exported pytest file as it is ----------------------------------
from urllib.parse import parse_qsl, unquote

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# What names one record among others in an address, read as one "#": a UUID, a hex id
# (of 6 or more, a digit among them), a generated id (of 10 or more letters and digits,
# both: a cuid, a nanoid, a ULID), a run of digits.
_ID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|(?<![0-9a-z])(?=[0-9a-z]*\d)(?=[0-9a-z]*[a-z])(?:[0-9a-f]{6,}|[0-9a-z]{10,})(?![0-9a-z])"
    r"|\d+",
    re.IGNORECASE,
)


def _shape(text: str) -> str:
    """``text`` with each id in it (:data:`_ID`) as one "#"."""
    return _ID.sub("#", text)


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


def same_place(recorded: str, now: str) -> bool:
    """Whether the page at ``now`` is the place the address ``recorded`` names, as a
    person reads an address: the same path, a trailing slash aside, and every parameter of
    the recorded query still there with its value; ids aside in both (record 17 where the
    recording had 12, page 3 where it had 2, a UUID or a hex id where it had another).  A
    parameter the app adds (``?saved=1``, ``?page=2``) and the fragment (``#saved``) name
    no other place.  Each
    is read decoded, however it was encoded (``Ada%20L``, ``Ada+L``: a form and a script
    write a value differently)."""
    was, now_parts = urlsplit(recorded), urlsplit(now)

    def fields(query: str) -> set[tuple[str, str]]:
        return {(_shape(key), _shape(value)) for key, value in parse_qsl(query, True)}

    if _shape(unquote(was.path).rstrip("/")) != _shape(unquote(now_parts.path).rstrip("/")):
        return False
    return fields(was.query) <= fields(now_parts.query)


def address_shape(url: str) -> str:
    """A page's path and query with each id in it (a run of digits, a UUID…) as one "#"."""
    parts = urlsplit(url)
    return _shape(parts.path.rstrip("/") + ("?" + parts.query if parts.query else ""))
