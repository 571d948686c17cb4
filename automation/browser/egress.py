"""The egress proxy: every connection a launched Chromium makes passes the URL policy.

Chromium's own interception (the URL guard's, :mod:`automation.browser.url_guard`) would
judge document navigations only, and costs every request of the browser; fetch, XHR,
WebSocket, EventSource, beacons, images, scripts, styles, workers and whatever else a page
thinks of would go straight out.  So Chromium is launched with this proxy as its only way
out, documents included (``--proxy-server``, with ``<-loopback>`` so that loopback is no
exception), and the proxy judges each connection:

- ``CONNECT host:port`` (https, wss, and ws, which Chromium also tunnels) is judged as
  ``https://host:port/``: a tunnel hides its path, so an allow rule with a path never
  opens one;
- a plain-HTTP request (``GET http://host:port/path``) is judged by its whole URL and
  goes upstream on a kept-alive connection to the checked address it resolved to: one
  left idle by an earlier request to that address when there is one (at most
  :data:`MAX_IDLE_PER_ADDRESS`, for :data:`IDLE_S` at most), else a new one.  A pooled
  connection is taken only after the request was judged, and only for an address the
  judgement just allowed: the pool saves the connect, never the check.  The browser's
  connection to the proxy is kept alive too, as it would be to a server, and carries
  request after request: each one judged on its own.  What arrives is passed on as it
  arrives, a head and what follows it in one write.  A head goes on as it was received
  but for its hop-by-hop headers (and those its Connection header names; so
  Proxy-Authorization, the credentials of the browser's context, never reaches a server):
  httptools reads each head, and the proxy writes only its start line and framing
  (Content-Length, or chunks where the length is not known in advance), and a message
  with both a Content-Length and chunks goes on chunked alone
  (:mod:`automation.browser.egresshttp`, which says what a message must be to pass).

For either, the proxy resolves the name itself, refuses when the policy refuses any of its
addresses, and connects to a checked address.  A name's answer is remembered for 30 s
(:mod:`automation.browser.egressnames`: the system's resolver tells no TTL; Chromium keeps
such answers for a minute), so a page's hundred requests to one host cost one lookup; the
addresses are checked again for each connection all the same.  Chromium never resolves a
name of a page (it hands names to the proxy), so a name can't resolve to a public address
for the check and to a private one for the connection (DNS rebinding).  A refusal is a 403
with a line of text, logged at INFO, and remembered: :meth:`EgressProxy.why_refused` tells
a navigation whose hop it refused why (a refused tunnel shows the browser only an error).
Where the network fails (a name that does not resolve, a refused connection) the browser
is shown the network failing, as it would be without us: the connection closes without an
answer, so a fetch rejects and a navigation errors (``net::ERR_EMPTY_RESPONSE``), and
:meth:`EgressProxy.why_unreachable` tells whoever reports that error what lay behind it.

Why our own code: proxy.py runs its own acceptor threads or processes with plugins loaded
by dotted name from global flags, and mitmproxy is a TLS-intercepting application with a
large dependency tree; neither lives in a BrowserSession's own event loop with its
policy.  httpcore's pool (httpx's) keys connections by origin and resolves names itself,
where ours must connect only to the address the policy just checked, and it reads a
response for a caller instead of relaying both bodies as they stream.  HTTP/1.1 parsing,
the part where a proxy gets things subtly wrong, is llhttp's (Node's parser, through
httptools, as uvicorn uses it): h11, which the proxy used first, took two thirds of the
proxy's CPU a request (a request's head, about 50 µs to llhttp's 5).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from automation.browser.egresshttp import (
    END,
    READ_CHUNK_BYTES,
    BadMessage,
    Cut,
    Head,
    Incoming,
    answer_head,
    chunk,
    request_head,
)
from automation.browser.egressnames import RESOLVE_TIMEOUT_MS, Names
from automation.browser.url_policy import SHOWN_URL_CHARS, IPAddress, UrlPolicy
from automation.budget import Budget
from automation.errors import BudgetExceeded, UrlBlocked

__all__ = ["RELAY_EVENTS_PER_TURN", "EgressProxy"]

log = logging.getLogger("automation.browser")

CONNECT_TIMEOUT_MS = 10_000
HEAD_TIMEOUT_MS = 30_000  # a client that opens a connection and never asks for anything
# A body's parts relayed before the loop goes to others (a read of one-byte chunks is ten
# thousand of them: on the loop every run of the worker shares).
RELAY_EVENTS_PER_TURN = 256
MAX_REMEMBERED = 256  # unreachable hosts, and refusals, kept to explain the browser's errors
MAX_IDLE_PER_ADDRESS = 8  # kept-alive upstream connections left idle, per address and port
IDLE_S = 30.0  # an idle upstream connection older than this is closed, not reused


class _Refused(Exception):
    """Answer the client with ``status`` and ``reason`` instead of going upstream."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass
class _Client:
    """The browser's connection to the proxy."""

    incoming: Incoming
    writer: asyncio.StreamWriter
    answering: bool = False  # an answer's head went out for the request being served


@dataclass
class _Upstream:
    """A connection to a checked address, and the answers read on it."""

    key: tuple[IPAddress, int]  # the address and port it was opened to
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    incoming: Incoming = field(init=False)
    reused: bool = False
    idle_since: float = 0.0

    def __post_init__(self) -> None:
        self.incoming = Incoming(self.reader, answers=True)

    def close(self) -> None:
        self.writer.close()


class _Pool:
    """Idle kept-alive upstream connections, by the address and port they go to."""

    def __init__(self) -> None:
        self._idle: dict[tuple[IPAddress, int], list[_Upstream]] = {}
        self.opened = 0  # upstream connections opened so far

    def take(self, key: tuple[IPAddress, int]) -> _Upstream | None:
        """The newest idle connection to ``key`` still open, if any."""
        idle = self._idle.get(key, [])
        while idle:
            upstream = idle.pop()
            fresh = time.monotonic() - upstream.idle_since < IDLE_S
            if fresh and not upstream.reader.at_eof() and not upstream.writer.is_closing():
                upstream.reused = True
                return upstream
            upstream.close()  # the server closed it while it was idle, or it is too old
        self._idle.pop(key, None)
        return None

    def give(self, upstream: _Upstream, answer: Head) -> None:
        """Keep ``upstream``, whose exchange just ended with ``answer``, for the next
        request to its address, when HTTP allows."""
        if not (answer.keep_alive and upstream.incoming.idle):
            upstream.close()  # an answer that ends the connection, or more came than asked
            return
        upstream.idle_since = time.monotonic()
        idle = self._idle.setdefault(upstream.key, [])
        idle.append(upstream)
        while len(idle) > MAX_IDLE_PER_ADDRESS:
            idle.pop(0).close()

    def close(self) -> None:
        for idle in self._idle.values():
            for upstream in idle:
                upstream.close()
        self._idle.clear()


class EgressProxy:
    """An HTTP forward proxy on 127.0.0.1 that lets through only what ``policy`` allows."""

    def __init__(self, policy: UrlPolicy) -> None:
        self.policy = policy
        self.refused = 0  # connections and requests refused so far
        self._server: asyncio.Server | None = None
        self._port = 0
        self._handlers: set[asyncio.Task[None]] = set()
        # host:port -> why it could not be reached, newest last: the browser only sees the
        # connection close, so whoever reports its error asks here what lay behind it.
        self._unreachable: OrderedDict[str, str] = OrderedDict()
        # What was refused, newest last: a plain-HTTP URL as it was asked for, a tunnel by
        # its host and port (all the proxy saw of it), so a navigation's error can say so.
        self._refusals: OrderedDict[str, str] = OrderedDict()
        self._pool = _Pool()
        self._names = Names()

    @property
    def url(self) -> str:
        """The proxy's address for ``--proxy-server``."""
        return f"http://127.0.0.1:{self._port}"

    def why_unreachable(self, url: str) -> str | None:
        """Why the proxy last failed to reach ``url``'s host and port, if it did."""
        return self._unreachable.get(_authority(url))

    def _remember_unreachable(self, url: str, reason: str) -> None:
        _remember(self._unreachable, _authority(url), reason)

    def why_refused(self, url: str) -> str | None:
        """Why the proxy refused ``url`` (a plain-HTTP URL exactly, an https or wss one by
        its host and port: the tunnel it asked for), if it did."""
        reason = self._refusals.get(url.partition("#")[0])
        if reason is None and url.lower().startswith(("https:", "wss:")):
            reason = self._refusals.get(_authority(url))
        return reason

    def _remember_refused(self, url: str, reason: str) -> None:
        key = _authority(url) if url.lower().startswith("https:") else url
        _remember(self._refusals, key, reason)

    @property
    def opened(self) -> int:
        """Upstream connections opened so far (kept-alive ones carry many requests)."""
        return self._pool.opened

    @property
    def looked_up(self) -> int:
        """Names looked up so far (an answer serves every request to its host a while)."""
        return self._names.looked_up

    @property
    def running(self) -> bool:
        return self._server is not None

    async def start(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            self._port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        self._pool.close()
        self._names.close()
        await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        client = _Client(Incoming(reader, answers=False), writer)
        try:
            while True:  # plain-HTTP requests, each judged on its own, while the client keeps on
                client.answering = False
                async with asyncio.timeout(HEAD_TIMEOUT_MS / 1000):  # no task of its own
                    request = await client.incoming.next()
                if not isinstance(request, Head):
                    return  # the client went away without asking (more)
                if request.method == b"CONNECT":
                    await self._tunnel(client, request)
                    return
                if not await self._forward(client, request):
                    return  # an exchange cut short, or one that asked to close
        except _Refused as refusal:
            if refusal.status == 403:
                self.refused += 1
            log.info("egress proxy: %s", refusal.reason)
            if refusal.status == 502:
                # Where the network failed, the browser should see the network fail (a
                # fetch rejects, a navigation errors) rather than a page of ours.
                writer.transport.abort()
                return
            await _answer(client, refusal.status, refusal.reason)
        except Cut:
            pass  # the client went away mid-request: nobody to answer
        except BadMessage as exc:
            await _answer(client, 400, f"bad request: {exc}")
        except (TimeoutError, BudgetExceeded, ConnectionError, asyncio.IncompleteReadError):
            pass  # a slow or vanished peer: nothing to tell anyone
        except asyncio.CancelledError:
            pass  # close() ends the connections it finds open; the handler ends with them
        except Exception:
            log.exception("egress proxy failed on a connection")
        finally:
            self._handlers.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _tunnel(self, client: _Client, request: Head) -> None:
        target = request.target.decode("ascii", "replace")
        if target.startswith("[") or target.count(":") == 1:
            url = f"https://{target}/"
        else:
            raise _Refused(400, f"refused CONNECT {target[:SHOWN_URL_CHARS]!r}: no port")
        if await client.incoming.next() is not END:
            return  # (a CONNECT has no body: its head is the whole request)
        upstream = await self._connect(url, f"CONNECT {target}", pooled=False)
        try:
            client.answering = True
            client.writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            early = client.incoming.take_rest()  # sent after the CONNECT, before our answer
            if early:
                upstream.writer.write(early)
            await _splice(client.incoming.reader, client.writer, upstream.reader, upstream.writer)
        finally:
            upstream.close()

    async def _forward(self, client: _Client, request: Head) -> bool:
        """Judge ``request``, send it upstream and its answer back; True when the
        client's connection may carry another request."""
        url = request.target.decode("ascii", "replace")
        scheme, sep, rest = url.partition("://")
        if not sep or scheme.lower() != "http":
            raise _Refused(400, f"refused {url[:SHOWN_URL_CHARS]!r}: not an absolute http URL")
        cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
        authority, origin_form = rest[:cut], rest[cut:]
        if not origin_form.startswith("/"):
            origin_form = "/" + origin_form
        authority = authority.rpartition("@")[2]  # credentials are not for the server
        what = f"{request.method.decode('ascii', 'replace')} {url[:SHOWN_URL_CHARS]}"
        head = request_head(request, origin_form.encode("ascii"), authority.encode("ascii"))
        # A request without a body can go again on a new connection when a kept-alive one
        # turns out closed before it answered (the server closed it as it was taken).
        bodiless = request.bodiless_request
        if bodiless and await client.incoming.next() is not END:
            return False  # (llhttp ends a bodiless request with its head)
        upstream = await self._connect(url, what)
        try:
            while True:
                if request.method == b"HEAD":
                    upstream.incoming.expect_head_only()
                if bodiless:
                    upstream.writer.write(head)
                else:
                    try:
                        await _relay_body(client.incoming, upstream.writer, head, request.chunked)
                    except Cut:
                        return False  # the client went away mid-request
                try:
                    event = await upstream.incoming.next()
                except BadMessage as exc:
                    raise _Refused(502, f"{what}: the answer is not HTTP/1.1: {exc}") from None
                if event is not None:
                    break
                if not (upstream.reused and bodiless):
                    raise _Refused(502, f"{what}: the server closed without an answer")
                upstream.close()  # closed as it was taken: the request goes again
                upstream = await self._connect(url, what, pooled=False)
            heads: list[bytes] = []
            while True:  # informational answers, then the answer's head
                if not isinstance(event, Head):
                    raise _Refused(502, f"{what}: the server closed without an answer")
                if event.status == 101:  # never asked for: Upgrade is not passed on
                    raise _Refused(502, f"{what}: the server switched protocols unasked")
                written, chunked, close = answer_head(event, request)
                heads.append(written)
                if event.status >= 200:
                    break
                try:
                    event = await upstream.incoming.next()
                except BadMessage as exc:
                    raise _Refused(502, f"{what}: the answer is not HTTP/1.1: {exc}") from None
            client.answering = True
            try:
                await _relay_body(upstream.incoming, client.writer, b"".join(heads), chunked)
            except BadMessage:
                return False  # a broken body: the client's connection closes mid-answer
            self._pool.give(upstream, event)
            upstream = None
            return not close
        finally:
            if upstream is not None:
                upstream.close()

    async def _connect(self, url: str, what: str, *, pooled: bool = True) -> _Upstream:
        """A connection to a checked address of ``url``'s host (an idle kept-alive one
        to such an address, when ``pooled`` and there is one); _Refused when there is none.
        The URL is judged first, every time."""
        budget = Budget(RESOLVE_TIMEOUT_MS, label="proxy resolve")
        try:
            addresses, port = await self.policy.connect_addresses(
                url, budget=budget, lookup=self._names.lookup
            )
        except UrlBlocked as exc:
            self._remember_refused(url, str(exc))
            raise _Refused(403, f"{what}: {exc}") from None
        except BudgetExceeded:
            reason = f"the name did not resolve within {RESOLVE_TIMEOUT_MS} ms"
            self._remember_refused(url, reason)
            raise _Refused(403, f"{what}: {reason}") from None
        except (OSError, UnicodeError) as exc:
            self._remember_unreachable(url, "the name does not resolve")
            raise _Refused(502, f"{what}: the name does not resolve ({exc})") from None
        if pooled:
            for address in addresses:
                kept = self._pool.take((address, port))
                if kept is not None:
                    return kept
        failure: Exception | None = None
        for address in addresses:  # each one checked above: never a fresh lookup
            try:
                connecting = asyncio.open_connection(str(address), port)
                reader, writer = await Budget(CONNECT_TIMEOUT_MS, label="proxy connect").run(
                    connecting
                )
                self._unreachable.pop(_authority(url), None)
                self._pool.opened += 1
                return _Upstream((address, port), reader, writer)
            except (OSError, BudgetExceeded) as exc:
                failure = exc
        reason = _connect_failure(failure)
        self._remember_unreachable(url, reason)
        raise _Refused(502, f"{what}: {reason}")


def _remember(kept: OrderedDict[str, str], key: str, reason: str) -> None:
    """``reason`` kept for ``key``, newest last, the oldest let go past MAX_REMEMBERED."""
    kept.pop(key, None)
    kept[key] = reason
    while len(kept) > MAX_REMEMBERED:
        kept.popitem(last=False)


def _authority(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme in ("https", "wss") else 80)
    return f"{parts.hostname}:{port}"


def _connect_failure(exc: Exception | None) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "could not connect: connection refused"
    if isinstance(exc, BudgetExceeded):
        return f"could not connect within {CONNECT_TIMEOUT_MS} ms"
    return f"could not connect ({exc})"


async def _relay_body(
    source: Incoming, writer: asyncio.StreamWriter, head: bytes, chunked: bool
) -> None:
    """Pass one message's body on from ``source`` to ``writer`` as it arrives (after
    ``head``, in the same write), in chunks when ``chunked``: what one read brought goes
    out in one write, the body's bytes as they are; every RELAY_EVENTS_PER_TURN parts,
    the loop goes to others.  Cut when ``source`` ended before the whole message, after
    writing what came (the caller then closes the other side too)."""
    out: list[bytes] = [head] if head else []
    events = 0
    try:
        while True:
            events += 1
            if events % RELAY_EVENTS_PER_TURN == 0:
                await asyncio.sleep(0)
            if not source.ready and out:
                writer.write(b"".join(out))
                out.clear()
                await writer.drain()
            event = await source.next()
            if event is END:
                if chunked:
                    out.append(b"0\r\n\r\n")
                writer.write(b"".join(out))
                await writer.drain()
                return
            if type(event) is bytes:
                out.append(chunk(event) if chunked else event)
            else:  # (a head where a body was due can't come: llhttp ends a body first)
                raise Cut("the message ended without its end")
    except BadMessage:
        if out:
            writer.write(b"".join(out))
        raise


async def _answer(client: _Client, status: int, text: str) -> None:
    """A short text answer, if the client is still in a state to get one."""
    if client.answering:
        return
    body = f"Tabwright egress proxy: {text}\n".encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\n"
        "content-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    with contextlib.suppress(ConnectionError):
        client.writer.write(head.encode() + body)
        await client.writer.drain()


_REASONS = {400: "Bad Request", 403: "Forbidden"}


async def _splice(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    """Copy bytes both ways until both sides are done, or either fails."""

    async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while data := await source.read(READ_CHUNK_BYTES):
            sink.write(data)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()

    pumps = [
        asyncio.create_task(pump(reader, up_writer)),
        asyncio.create_task(pump(up_reader, writer)),
    ]
    try:
        await asyncio.gather(*pumps)
    except (ConnectionError, OSError):
        pass
    finally:
        for task in pumps:
            task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
