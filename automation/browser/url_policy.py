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

A rule is ``host``, ``host:port`` or, for allow rules only, ``host:port/path``.  A host
covers its subdomains (``example.com`` covers ``www.example.com``); an address matches
only itself.  With a port the rule holds for that port only (``127.0.0.1:8000`` allows
that address on that port and no other); without one, for every port.  An allow rule
with a path (``127.0.0.1:8000/demo/``) allows only URLs under that path, and only over
plain ``http``: an https or WebSocket tunnel hides its path from the egress proxy, so a
path rule never opens one.  A block rule with a path would be a promise the proxy can't
keep for https, so it is refused as malformed (as is any rule that can't be read: a
policy that can't be read must not quietly let things through).

Hosts are read the way Chromium reads them (the WHATWG URL host parser): to the browser
``http://2130706433/``, ``http://0x7f.1/``, ``http://017700000001/`` and ``http://127.1/``
are all 127.0.0.1, so they are to the check as well.

:meth:`UrlPolicy.check` is synchronous and does no DNS.  :meth:`UrlPolicy.check_resolved`
also resolves a host name and refuses it when any of its addresses is private.  A name
that does not resolve is let through: the browser cannot reach it either and says so
itself, while refusing it would dress a DNS failure up as a policy decision.  DNS answers
can change between this lookup and a later one (DNS rebinding): the egress proxy
(:mod:`automation.browser.egress`) closes that gap for a browser we launch, with
:meth:`UrlPolicy.connect_addresses`: it resolves once, checks every address and connects
to a checked one.  ``host_map`` gives fixed answers for names (as /etc/hosts would), for
tests and closed networks.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import socket
import string
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import unquote_to_bytes

from automation.budget import Budget
from automation.errors import UrlBlocked

__all__ = ["DEFAULT_RESOLVE_TIMEOUT_MS", "LOOKUP_THREADS", "IPAddress", "Lookup", "UrlPolicy",
           "http_url", "system_lookup"]  # fmt: skip

ALLOWED_SCHEMES = frozenset({"http", "https"})
DEFAULT_RESOLVE_TIMEOUT_MS = 5_000
SHOWN_URL_CHARS = 200
_SCHEME_CHARS = frozenset(string.ascii_lowercase + string.digits + "+-.")
_SCHEME_HINT = "only http:// and https:// URLs can be opened"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_RULE_HINT = (
    "a rule is host, host:port or (to allow only) host:port/path, e.g. example.com, "
    "intranet.example:8443, 127.0.0.1:8000/demo/"
)
_DOUBLE_DOTS = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})
# Chromium refuses a URL whose (decoded) host holds one of these.
_FORBIDDEN_IN_HOST = frozenset(map(chr, range(0x21))) | set("#%/:<>?@[\\]^|\x7f")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# Resolves a host name (and port) to its addresses within a budget: the system's resolver
# (system_lookup), or one that remembers its answers (the egress proxy's).
Lookup = Callable[[str, int, Budget], Awaitable[list[IPAddress]]]
# The system's resolver is asked in threads of its own, never the event loop's default
# executor: a lookup the resolver answers slowly (a page asking for names whose servers
# never answer) holds its thread until the resolver gives up, long after its budget
# ended, and with the default executor's few threads held so, every read of a file,
# parse of a big page and check of a download of the process waited behind it.
LOOKUP_THREADS = 8
_lookup_threads = ThreadPoolExecutor(LOOKUP_THREADS, thread_name_prefix="tabwright-lookup")

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


class _Target(NamedTuple):
    """A URL as Chromium reads it: scheme, host (an address or a domain), port, path."""

    url: str
    scheme: str
    host: str | IPAddress
    port: int
    path: str


class _Rule(NamedTuple):
    host: str | IPAddress
    port: int | None  # None: any port
    path: str  # "": any path (and scheme); else a prefix, http only

    def matches(self, target: _Target) -> bool:
        if self.port is not None and self.port != target.port:
            return False
        if self.path and (target.scheme != "http" or not _under(target.path, self.path)):
            return False
        if isinstance(self.host, str) != isinstance(target.host, str):
            return False  # a domain never matches an address by suffix, nor the reverse
        if isinstance(target.host, str):
            assert isinstance(self.host, str)
            return target.host == self.host or target.host.endswith("." + self.host)
        return target.host == self.host


@dataclass(frozen=True)
class UrlPolicy:
    allowed_domains: tuple[str, ...] = ()  # empty: any domain not blocked
    blocked_domains: tuple[str, ...] = field(default_factory=tuple)
    block_private: bool = True
    # (name, address) pairs answered without DNS; "*.test" covers every name under test.
    host_map: tuple[tuple[str, str], ...] = ()
    # Allow rules that do not make an allow list: what they match is allowed (and may be
    # private) while everything else is judged as without them.  The dashboard's own demo
    # pages (127.0.0.1:8000/demo/) are let in this way, and nothing else of its origin.
    extra_allowed: tuple[str, ...] = ()
    _allow: tuple[_Rule, ...] = field(init=False, repr=False, compare=False, default=())
    _extra: tuple[_Rule, ...] = field(init=False, repr=False, compare=False, default=())
    _block: tuple[_Rule, ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        # Read once, refused at once: a rule that can't be read must not match nothing.
        allow = tuple(_rule(r, path_ok=True) for r in self.allowed_domains)
        block = tuple(_rule(r, path_ok=False) for r in self.blocked_domains)
        object.__setattr__(self, "_allow", allow)
        object.__setattr__(
            self, "_extra", tuple(_rule(r, path_ok=True) for r in self.extra_allowed)
        )
        object.__setattr__(self, "_block", block)
        for name, address in self.host_map:
            try:
                ipaddress.ip_address(address)
            except ValueError:
                raise UrlBlocked(
                    f"host_map gives {name!r} the address {address!r}, which is not one"
                ) from None

    def check(self, url: str) -> str:
        """Return the URL if it may be opened, else raise UrlBlocked saying why (no DNS)."""
        return self._checked(url).url

    async def check_resolved(self, url: str, *, budget: Budget | None = None) -> str:
        """Like :meth:`check`, and a host name must not resolve to a private address.

        Resolution runs within ``budget`` (default 5 s) and raises BudgetExceeded when it
        runs out; a name that does not resolve at all is allowed (see the module doc).
        """
        target = self._checked(url)
        host = target.host
        if not self.block_private or not isinstance(host, str) or self._trusted(target):
            return target.url
        budget = budget or Budget(DEFAULT_RESOLVE_TIMEOUT_MS, label=f"resolve {host}")
        try:
            addresses = await self._resolve(host, target.port, budget)
        except (OSError, UnicodeError):
            return target.url  # unresolvable: the browser will fail on its own
        for address in addresses:
            self._check_address(target, address)
        return target.url

    async def connect_addresses(
        self, url: str, *, budget: Budget, lookup: Lookup | None = None
    ) -> tuple[list[IPAddress], int]:
        """The addresses a connection for ``url`` may go to, each one checked, and the port.

        For the egress proxy: it connects to one of these and resolves nothing itself, so
        a name can't resolve to one address here and to another at connect time.  Names
        not in ``host_map`` are resolved by ``lookup`` (default: the system's resolver,
        asked each time); whatever it answers, every address is checked here, every call.
        Raises UrlBlocked when the URL or any address of its host is refused, OSError when
        the name does not resolve, BudgetExceeded when resolving takes too long.
        """
        target = self._checked(url)
        if isinstance(target.host, str):
            addresses = await self._resolve(target.host, target.port, budget, lookup)
        else:
            addresses = [target.host]
        for address in addresses:
            self._check_address(target, address)
        return addresses, target.port

    def _check_address(self, target: _Target, address: IPAddress) -> None:
        if not self.block_private or self._trusted(target):
            return
        what = _private_kind(address)
        if what:
            said = f"{address} is" if target.host == address else f"resolves to {address},"
            if target.host != address:
                said = f"{target.host} {said}"
            raise _refused(target.url, f"{said} {what}", hint=_PRIVATE_HINT, rule="private")

    async def _resolve(
        self, host: str, port: int, budget: Budget, lookup: Lookup | None = None
    ) -> list[IPAddress]:
        for name, address in self.host_map:
            name = name.lower()
            if host == name or (name.startswith("*.") and host.endswith(name[1:])):
                return [ipaddress.ip_address(address)]
        return await (lookup or system_lookup)(host, port, budget)

    def _checked(self, url: str) -> _Target:
        target = _parse(url)
        if any(rule.matches(target) for rule in self._block):
            raise _refused(
                target.url,
                f"{target.host} is on the blocked list",
                hint="blocked: " + ", ".join(self.blocked_domains),
                rule="blocked",
            )
        if self.allowed_domains and not self._trusted(target):
            raise _refused(
                target.url,
                f"{target.host}{_port_shown(target)} is not on the allowed list",
                hint="allowed: " + ", ".join(self.allowed_domains),
                rule="not_allowed",
            )
        if self.block_private and not self._trusted(target):
            host = target.host
            if isinstance(host, str):
                what = "a loopback name" if _is_localhost(host) else ""
            else:
                what = _private_kind(host)
            if what:
                raise _refused(target.url, f"{host} is {what}", hint=_PRIVATE_HINT, rule="private")
        return target

    def _trusted(self, target: _Target) -> bool:
        return any(rule.matches(target) for rule in (*self._allow, *self._extra))


async def system_lookup(
    host: str,
    port: int,
    budget: Budget,
    *,
    threads: Executor | None = None,
    done: Callable[[], object] | None = None,
) -> list[IPAddress]:
    """``host``'s addresses from the system's resolver (hosts file, DNS...), each once, in
    the resolver's order; OSError when it has none.  Asked in one of ``threads`` (the
    lookups' own, unless given); one still waiting for a thread when the budget ends is
    dropped.  ``done`` is called on the event loop once the lookup holds no thread (it
    may be long after the budget ended: a lookup in a thread can't be stopped)."""
    asking = functools.partial(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    loop = asyncio.get_running_loop()
    try:
        budget.check()
        future = (threads or _lookup_threads).submit(asking)
    except BaseException:
        if done is not None:
            done()
        raise
    if done is not None:
        future.add_done_callback(lambda _: _soon(loop, done))
    infos = await budget.run(asyncio.wrap_future(future, loop=loop))
    found: list[IPAddress] = []
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    if not found:
        raise OSError(f"{host} has no address")
    return found


def _soon(loop: asyncio.AbstractEventLoop, call: Callable[[], object]) -> None:
    """``call`` on ``loop``, from a lookup's thread (not when the loop has closed)."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(call)


def http_url(url: object) -> str:
    """``url`` (trimmed) when it is an http(s) address with a host, read as Chromium will
    read it; UrlBlocked saying why not (a ``javascript:`` or ``file:`` URL, no host, a
    malformed port).  Only its form: whether a run may open it is the policy's, asked
    when a run opens it (:meth:`UrlPolicy.check`)."""
    return _parse(url).url


def _port_shown(target: _Target) -> str:
    """The URL's port when it is not its scheme's own (rules may name ports)."""
    return "" if target.port == _DEFAULT_PORTS[target.scheme] else f":{target.port}"


def _parse(url: object) -> _Target:
    """The URL (trimmed) and its parts as Chromium will see them."""
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
    rest = rest.lstrip("/\\")
    end = min((i for i in map(rest.find, "/\\?#") if i >= 0), default=len(rest))
    authority, after = rest[:end], rest[end:]
    path = _normal_path(after)
    raw = authority.rpartition("@")[2]
    host: str | IPAddress
    if raw.startswith("["):
        inner, bracket, port_text = raw[1:].partition("]")
        try:
            if not bracket or (port_text and not port_text.startswith(":")):
                raise ValueError("no closing bracket")
            host = ipaddress.IPv6Address(inner)
        except ValueError:
            raise _refused(url, f"malformed IPv6 host {raw[:60]!r}") from None
        port_text = port_text[1:]
    else:
        raw, _colon, port_text = raw.partition(":")
        if not raw:
            raise _refused(url, "no host", hint="give an absolute http(s) URL")
        try:
            host = _host(raw)
        except ValueError:
            raise _refused(url, f"malformed host {raw[:60]!r}") from None
    port = _port(port_text, default=_DEFAULT_PORTS[scheme])
    if port is None:
        raise _refused(url, f"malformed port {port_text[:20]!r}")
    return _Target(url, scheme, host, port, path)


def _port(text: str, *, default: int) -> int | None:
    """The WHATWG port: ASCII digits up to 65535; empty is the scheme's default."""
    if not text:
        return default
    if not (text.isascii() and text.isdigit()) or int(text) > 65535:
        return None
    return int(text)


def _normal_path(after: str) -> str:
    """The path of the URL with dot segments (also %2e ones) resolved, as Chromium sends it."""
    path = after
    for end in "?#":
        path = path.partition(end)[0]
    segments: list[str] = []
    parts = path.replace("\\", "/").split("/")[1:] if path else [""]
    for i, part in enumerate(parts):
        lowered = part.lower()
        last = i == len(parts) - 1
        if lowered in _DOUBLE_DOTS:
            if segments:
                segments.pop()
            if last:
                segments.append("")
        elif lowered in {".", "%2e"}:
            if last:
                segments.append("")
        else:
            segments.append(part)
    return "/" + "/".join(segments)


def _under(path: str, prefix: str) -> bool:
    """Whether ``path`` is ``prefix`` or below it, segment-wise (/demo covers /demo/x)."""
    prefix = prefix.rstrip("/")
    return path == prefix or path.startswith(prefix + "/")


def _rule(text: str, *, path_ok: bool) -> _Rule:
    """A rule of the allow or block list; UrlBlocked when it can't be read."""

    def malformed(why: str) -> UrlBlocked:
        return UrlBlocked(f"malformed URL rule {text[:60]!r}: {why}", hint=_RULE_HINT)

    spec = text.strip().lower()
    if "://" in spec:
        raise malformed("a rule names a host, not a URL")
    spec, slash, path = spec.partition("/")
    spec = spec.removeprefix("*.").lstrip(".")
    if slash and not path_ok:
        raise malformed("a block rule can't name a path")
    if "\\" in path or "?" in path or "#" in path:
        raise malformed("a rule's path is a plain path")
    port_text = ""
    host: str | IPAddress
    if spec.startswith("["):
        inner, bracket, port_text = spec[1:].partition("]")
        if not bracket or (port_text and not port_text.startswith(":")):
            raise malformed("no closing bracket")
        port_text = port_text[1:]
        try:
            host = ipaddress.IPv6Address(inner)
        except ValueError:
            raise malformed("not an IPv6 address") from None
    elif spec.count(":") > 1:  # a bare IPv6 address takes no port
        try:
            host = ipaddress.IPv6Address(spec)
        except ValueError:
            raise malformed("not an IPv6 address (write [address]:port)") from None
    else:
        name, colon, port_text = spec.partition(":")
        if colon and not port_text:
            raise malformed("an empty port")
        try:
            name = _domain_to_ascii(name).rstrip(".")
            address = _ipv4(name)
        except (ValueError, UnicodeError):
            raise malformed("not a host name or address") from None
        if not name:
            raise malformed("no host")
        host = address if address is not None else name
    port: int | None = None
    if port_text:
        port = _port(port_text, default=0)
        if not port:
            raise malformed(f"{port_text[:20]!r} is not a port")
    return _Rule(host, port, _normal_path("/" + path) if slash else "")


def _is_localhost(host: str) -> bool:
    return host == "localhost" or host.endswith(".localhost")


# A page asks for many URLs of a few hosts (the egress proxy judges every request): each
# host's reading is kept.  A pure function of the text; a malformed one raises each time.
@functools.lru_cache(maxsize=256)
def _host(raw: str) -> str | ipaddress.IPv4Address:
    """A URL's host (not in brackets) as Chromium reads it: an IPv4 address (in any of
    the forms WHATWG allows), else the name; ValueError when it is none."""
    name = _domain_to_ascii(raw)
    address = _ipv4(name)
    if address is not None:
        return address
    if not name.rstrip("."):
        raise ValueError("no name")
    return name.rstrip(".")


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


def _refused(url: str, reason: str, *, hint: str = "", rule: str = "") -> UrlBlocked:
    return UrlBlocked(f"refused URL {url[:SHOWN_URL_CHARS]!r}: {reason}", hint=hint, rule=rule)
