"""Which URLs the agent may open.

Only http and https: ``file:``, ``chrome:``, ``javascript:``, ``data:`` and friends would
let a model read local files or run script outside any page.  Domain allow/block lists and
private-network blocking are layered on the same check.

Private-network blocking (``block_private``, on by default) refuses hosts that are, or
resolve to, addresses of this machine or its networks: loopback, RFC 1918, link-local
(with the cloud metadata service at 169.254.169.254), carrier-grade NAT, unique-local,
unspecified, multicast and reserved ranges, the same behind IPv4-mapped, NAT64 and 6to4
IPv6 addresses, and the names ``localhost`` and ``*.localhost``.  A page that talks the
model into opening ``http://169.254.169.254/`` or the office router must not get there.
A host named in ``allowed_domains`` is trusted to be private: that is how an operator
lets the agent into one intranet application and nowhere else.

Hosts are read the way Chromium reads them (the WHATWG URL host parser): to the browser
``http://2130706433/``, ``http://0x7f.1/``, ``http://017700000001/`` and ``http://127.1/``
are all 127.0.0.1, so they are to the check as well.

:meth:`UrlPolicy.check` is synchronous and does no DNS.  :meth:`UrlPolicy.check_resolved`
also resolves a host name and refuses it when any of its addresses is private.  A name
that does not resolve is let through: the browser cannot reach it either and says so
itself, while refusing it would dress a DNS failure up as a policy decision.  DNS answers
can change between our lookup and the browser's (DNS rebinding); only an egress firewall
or a resolving proxy closes that gap, this check narrows it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import string
from dataclasses import dataclass, field
from urllib.parse import unquote_to_bytes

from automation.budget import Budget
from automation.errors import UrlBlocked

__all__ = ["DEFAULT_RESOLVE_TIMEOUT_MS", "UrlPolicy"]

ALLOWED_SCHEMES = frozenset({"http", "https"})
DEFAULT_RESOLVE_TIMEOUT_MS = 5_000
SHOWN_URL_CHARS = 200
_SCHEME_CHARS = frozenset(string.ascii_lowercase + string.digits + "+-.")
_SCHEME_HINT = "only http:// and https:// URLs can be opened"
# Chromium refuses a URL whose (decoded) host holds one of these.
_FORBIDDEN_IN_HOST = frozenset(map(chr, range(0x21))) | set("#%/:<>?@[\\]^|\x7f")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_PRIVATE_HINT = (
    "private and local addresses are blocked: allow them all with block_private=False "
    "(TABWRIGHT_BLOCK_PRIVATE_ADDRESSES=0), or one host by naming it in allowed_domains "
    "(TABWRIGHT_ALLOWED_DOMAINS)"
)

# Checked in order: the first range that holds the address names it.
_V4_RANGES = tuple(
    (ipaddress.IPv4Network(net), what)
    for net, what in (
        ("0.0.0.0/8", "an unspecified address"),
        ("10.0.0.0/8", "a private address"),
        ("100.64.0.0/10", "a carrier-grade NAT address"),
        ("127.0.0.0/8", "a loopback address"),
        ("169.254.169.254/32", "the cloud metadata address"),
        ("169.254.0.0/16", "a link-local address"),
        ("172.16.0.0/12", "a private address"),
        ("192.0.0.0/24", "a reserved address"),
        ("192.0.2.0/24", "a reserved (documentation) address"),
        ("192.88.99.0/24", "a reserved address"),
        ("192.168.0.0/16", "a private address"),
        ("198.18.0.0/15", "a reserved (benchmarking) address"),
        ("198.51.100.0/24", "a reserved (documentation) address"),
        ("203.0.113.0/24", "a reserved (documentation) address"),
        ("224.0.0.0/4", "a multicast address"),
        ("240.0.0.0/4", "a reserved address"),
    )
)
_V6_RANGES = tuple(
    (ipaddress.IPv6Network(net), what)
    for net, what in (
        ("::/128", "an unspecified address"),
        ("::1/128", "a loopback address"),
        ("::/8", "a reserved address"),  # after the two above; mapped ones are unwrapped first
        ("64:ff9b:1::/48", "a private (local NAT64) address"),
        ("100::/64", "a reserved address"),
        ("2001:db8::/32", "a reserved (documentation) address"),
        ("fc00::/7", "a unique-local address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address"),
        ("ff00::/8", "a multicast address"),
    )
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


@dataclass(frozen=True)
class UrlPolicy:
    allowed_domains: tuple[str, ...] = ()  # empty: any domain not blocked
    blocked_domains: tuple[str, ...] = field(default_factory=tuple)
    block_private: bool = True

    def check(self, url: str) -> str:
        """Return the URL if it may be opened, else raise UrlBlocked saying why (no DNS)."""
        url, host = self._checked(url)
        if self.block_private and not self._trusted(host):
            if isinstance(host, str):
                what = "a loopback name" if _is_localhost(host) else ""
            else:
                what = _private_kind(host)
            if what:
                raise _refused(url, f"{host} is {what}", hint=_PRIVATE_HINT)
        return url

    async def check_resolved(self, url: str, *, budget: Budget | None = None) -> str:
        """Like :meth:`check`, and a host name must not resolve to a private address.

        Resolution runs within ``budget`` (default 5 s) and raises BudgetExceeded when it
        runs out; a name that does not resolve at all is allowed (see the module doc).
        """
        url = self.check(url)
        host = _parse(url)[1]
        if not self.block_private or not isinstance(host, str) or self._trusted(host):
            return url
        budget = budget or Budget(DEFAULT_RESOLVE_TIMEOUT_MS, label=f"resolve {host}")
        loop = asyncio.get_running_loop()
        try:
            infos = await budget.run(loop.getaddrinfo(host, None, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError):
            return url  # unresolvable: the browser will fail on its own
        for *_, sockaddr in infos:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            what = _private_kind(address)
            if what:
                raise _refused(url, f"{host} resolves to {address}, {what}", hint=_PRIVATE_HINT)
        return url

    def _checked(self, url: str) -> tuple[str, str | IPAddress]:
        url, host = _parse(url)
        shown = str(host)
        if any(_matches(host, d) for d in self.blocked_domains):
            raise _refused(
                url,
                f"{shown} is on the blocked list",
                hint="blocked: " + ", ".join(self.blocked_domains),
            )
        if self.allowed_domains and not self._trusted(host):
            raise _refused(
                url,
                f"{shown} is not on the allowed list",
                hint="allowed: " + ", ".join(self.allowed_domains),
            )
        return url, host

    def _trusted(self, host: str | IPAddress) -> bool:
        return any(_matches(host, d) for d in self.allowed_domains)


def _parse(url: object) -> tuple[str, str | IPAddress]:
    """The URL (trimmed) and its host as Chromium will see it: an address or a domain."""
    if not isinstance(url, str) or not url.strip():
        raise UrlBlocked("empty URL", hint="give an absolute http(s) URL")
    # The URL standard drops surrounding controls and spaces and every tab and newline.
    url = url.strip("".join(map(chr, range(0x21))))
    cleaned = url.replace("\t", "").replace("\n", "").replace("\r", "")
    scheme, colon, rest = cleaned.partition(":")
    scheme = scheme.lower()
    if not colon or not _SCHEME_CHARS.issuperset(scheme) or not scheme[:1].isalpha():
        scheme = ""
    if scheme not in ALLOWED_SCHEMES:
        shown = scheme + ":" if scheme else "no scheme"
        raise _refused(url, f"{shown} is not allowed", hint=_SCHEME_HINT)
    # http(s) is a "special" scheme: any run of slashes and backslashes opens the
    # authority, and a backslash ends it like a slash (http://127.0.0.1\@example.com/).
    authority = rest.lstrip("/\\")
    for end in "/\\?#":
        authority = authority.partition(end)[0]
    raw = authority.rpartition("@")[2]
    if raw.startswith("["):
        inner, bracket, _port = raw[1:].partition("]")
        try:
            if not bracket:
                raise ValueError("no closing bracket")
            return url, ipaddress.IPv6Address(inner)
        except ValueError:
            raise _refused(url, f"malformed IPv6 host {raw[:60]!r}") from None
    raw = raw.partition(":")[0]
    if not raw:
        raise _refused(url, "no host", hint="give an absolute http(s) URL")
    try:
        host = _domain_to_ascii(raw)
        address = _ipv4(host)
        if address is None and not host.rstrip("."):
            raise ValueError("no name")
    except ValueError:
        raise _refused(url, f"malformed host {raw[:60]!r}") from None
    return url, address if address is not None else host.rstrip(".")


def _is_localhost(host: str) -> bool:
    return host == "localhost" or host.endswith(".localhost")


def _domain_to_ascii(raw: str) -> str:
    """Percent-decoded, IDNA-mapped and lower-cased, so full-width digits and dots count."""
    host = unquote_to_bytes(raw).decode("utf-8")
    if not host.isascii():
        host = host.encode("idna").decode("ascii")
    if not _FORBIDDEN_IN_HOST.isdisjoint(host):
        raise ValueError("a character that no host may hold")
    return host.lower()


def _ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The WHATWG IPv4 parser: None for a domain, else the address (ValueError if invalid).

    A host whose last label is a number is an address, in up to four parts, each decimal,
    octal (leading 0) or hex (0x); the last part fills the bytes that are left."""
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    last = parts[-1]
    if not (last and set(last) <= set(string.digits)) and _number(last) is None:
        return None
    numbers = [_number(p) for p in parts]
    if len(numbers) > 4 or any(n is None for n in numbers):
        raise ValueError("not an IPv4 address")
    *head, last = [n for n in numbers if n is not None]
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise ValueError("IPv4 part out of range")
    value = last + sum(n << (8 * (3 - i)) for i, n in enumerate(head))
    return ipaddress.IPv4Address(value)


def _number(part: str) -> int | None:
    radix = 10
    if part[:2].lower() == "0x":
        part, radix = part[2:], 16
    elif len(part) > 1 and part.startswith("0"):
        part, radix = part[1:], 8
    elif not part:
        return None
    if not part:
        return 0
    digits = "0123456789abcdef"[:radix]
    if not all(c in digits for c in part.lower()):
        return None
    return int(part, radix)


def _private_kind(address: IPAddress) -> str:
    """What kind of non-public address this is ('' for a public one)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            what = _private_kind(embedded)
            return f"{what} ({embedded})" if what else ""
        ranges: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...]
        ranges = _V6_RANGES
    else:
        ranges = _V4_RANGES
    for network, what in ranges:
        if address in network:
            return what
    return ""


def _matches(host: str | IPAddress, domain: str) -> bool:
    """Suffix match for names (example.com covers www.example.com); exact for addresses."""
    domain = domain.strip().lower().strip(".").removeprefix("[").removesuffix("]")
    if not domain:
        return False
    if not isinstance(host, str):
        try:
            return host == ipaddress.ip_address(domain)
        except ValueError:
            return False
    try:
        domain = _domain_to_ascii(domain).rstrip(".")
    except ValueError:
        return False
    return host == domain or host.endswith("." + domain)


def _refused(url: str, reason: str, *, hint: str = "") -> UrlBlocked:
    return UrlBlocked(f"refused URL {url[:SHOWN_URL_CHARS]!r}: {reason}", hint=hint)
