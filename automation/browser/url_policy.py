"""Which URLs the agent may open.

Only http and https: ``file:``, ``chrome:``, ``javascript:``, ``data:`` and friends would
let a model read local files or run script outside any page.  Domain allow/block lists and
private-network blocking are layered on the same check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from automation.errors import UrlBlocked

__all__ = ["UrlPolicy"]

ALLOWED_SCHEMES = frozenset({"http", "https"})


@dataclass(frozen=True)
class UrlPolicy:
    allowed_domains: tuple[str, ...] = ()  # empty: any domain not blocked
    blocked_domains: tuple[str, ...] = field(default_factory=tuple)

    def check(self, url: str) -> str:
        """Return the URL if it may be opened, else raise UrlBlocked saying why."""
        if not isinstance(url, str) or not url.strip():
            raise UrlBlocked("empty URL", hint="give an absolute http(s) URL")
        url = url.strip()
        try:
            parts = urlsplit(url)
        except ValueError as exc:
            raise UrlBlocked(f"malformed URL {url!r}: {exc}") from None
        scheme = parts.scheme.lower()
        if scheme not in ALLOWED_SCHEMES:
            shown = scheme + ":" if scheme else "no scheme"
            raise UrlBlocked(
                f"refused URL {url[:200]!r}: {shown} is not allowed",
                hint="only http:// and https:// URLs can be opened",
            )
        host = (parts.hostname or "").lower()
        if not host:
            raise UrlBlocked(f"refused URL {url[:200]!r}: no host")
        if any(_matches(host, d) for d in self.blocked_domains):
            raise UrlBlocked(f"refused URL {url[:200]!r}: {host} is on the blocked list")
        if self.allowed_domains and not any(_matches(host, d) for d in self.allowed_domains):
            raise UrlBlocked(
                f"refused URL {url[:200]!r}: {host} is not on the allowed list",
                hint="allowed: " + ", ".join(self.allowed_domains),
            )
        return url


def _matches(host: str, domain: str) -> bool:
    domain = domain.lower().lstrip(".")
    return host == domain or host.endswith("." + domain)
