"""The egress proxy's HTTP/1.1 framing, spoken to over raw sockets on both sides: a head
goes on as it was received but for its hop-by-hop headers (Proxy-Authorization never
reaches a server), HEAD and 1xx answers, chunked bodies both ways, an answer read to its
close, uploads, and peers that hang up mid-body (whose upstream connection is never
kept for another request)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest
import pytest_asyncio

from automation import UrlPolicy
from automation.browser.egress import RELAY_EVENTS_PER_TURN, EgressProxy
from tests.waiting import eventually

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


@dataclass
class Received:
    """One request as the server read it: its head's lines and its body (unchunked)."""

    line: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes
    chunked: bool

    def header(self, name: bytes) -> list[bytes]:
        return [v for n, v in self.headers if n.lower() == name.lower()]


@dataclass
class Scripted:
    """A loopback server that answers each request with what ``answer`` gives for it:
    the bytes to send, and whether to close the connection after them."""

    answer: Callable[[Received], tuple[bytes, bool]] = lambda r: (OK, False)
    port: int = 0
    received: list[Received] = field(default_factory=list)
    connections: int = 0
    ended: int = 0  # connections that ended, either side first

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line, *rest = head[:-4].split(b"\r\n")
                headers = [tuple(h.split(b": ", 1)) for h in rest]
                request = Received(line, headers, b"", False)  # type: ignore[arg-type]
                if request.header(b"transfer-encoding"):
                    request.chunked = True
                    while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
                        request.body += (await reader.readexactly(size + 2))[:-2]
                    await reader.readuntil(b"\r\n")
                elif length := request.header(b"content-length"):
                    request.body = await reader.readexactly(int(length[0]))
                self.received.append(request)
                data, close = self.answer(request)
                writer.write(data)
                await writer.drain()
                if close:
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.ended += 1
            writer.close()


@pytest_asyncio.fixture
async def upstream() -> AsyncIterator[Scripted]:
    scripted = Scripted()
    server = await asyncio.start_server(scripted.serve, "127.0.0.1", 0)
    scripted.port = server.sockets[0].getsockname()[1]
    async with server:
        yield scripted


@pytest_asyncio.fixture
async def proxy(upstream: Scripted) -> AsyncIterator[EgressProxy]:
    egress = EgressProxy(UrlPolicy(allowed_domains=(f"127.0.0.1:{upstream.port}",)))
    await egress.start()
    yield egress
    await egress.close()


async def connect(proxy: EgressProxy) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]))


async def exchange(proxy: EgressProxy, data: bytes) -> bytes:
    """Send ``data`` on one connection to the proxy; everything it answers until it closes."""
    reader, writer = await connect(proxy)
    writer.write(data)
    answer = await reader.read()
    writer.close()
    return answer


def get(upstream: Scripted, path: str = "/", extra: str = "", *, close: bool = False) -> bytes:
    last = "Connection: close\r\n" if close else ""
    return f"GET {upstream.url(path)} HTTP/1.1\r\nHost: x\r\n{extra}{last}\r\n".encode()


def answering(
    start: bytes, data: bytes, *, close: bool = False
) -> Callable[[Received], tuple[bytes, bool]]:
    """Answers ``data`` to a request whose line starts with ``start``, OK to the others."""
    return lambda r: (data, close) if r.line.startswith(start) else (OK, False)


def dechunk(data: bytes) -> bytes:
    body = b""
    while True:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        if not size:
            return body
        body, data = body + data[:size], data[size + 2 :]


async def test_a_head_goes_on_as_received_but_for_its_hop_by_hop_headers(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    upstream.answer = lambda r: (
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Served-By: Loopback\r\n"
        b"Set-Cookie: a=1\r\nKeep-Alive: timeout=5\r\nProxy-Authenticate: Basic\r\n"
        b"Connection: keep-alive, X-Server-Hop\r\nX-Server-Hop: 1\r\nSet-Cookie: b=2\r\n\r\nok",
        False,
    )
    extra = (
        "Proxy-Authorization: Basic c2VjcmV0OnNlY3JldA==\r\nProxy-Connection: keep-alive\r\n"
        "X-Mixed-Case: Value With Spaces\r\nTE: trailers\r\nConnection: X-Client-Hop\r\n"
        "X-Client-Hop: 1\r\nAccept: */*\r\n"
    )
    answer = await exchange(proxy, get(upstream, "/p?q=1", extra, close=True))
    [request] = upstream.received
    assert request.line == b"GET /p?q=1 HTTP/1.1"
    names = [n for n, _ in request.headers]
    assert names == [b"host", b"X-Mixed-Case", b"Accept"]  # as received, in order
    assert request.header(b"x-mixed-case") == [b"Value With Spaces"]
    assert request.header(b"host") == [f"127.0.0.1:{upstream.port}".encode()]
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and body == b"ok"
    assert b"X-Served-By: Loopback\r\n" in head
    assert head.count(b"Set-Cookie: ") == 2 and head.index(b"a=1") < head.index(b"b=2")
    for hop in (b"keep-alive:", b"proxy-authenticate:", b"x-server-hop:"):
        assert hop not in head.lower()


@pytest.mark.parametrize("framing", [b"content-length: 5000", b"transfer-encoding: chunked"])
async def test_a_head_answer_has_no_body_and_the_connection_goes_on(
    proxy: EgressProxy, upstream: Scripted, framing: bytes
) -> None:
    upstream.answer = answering(b"HEAD ", b"HTTP/1.1 200 OK\r\n" + framing + b"\r\n\r\n")
    head = f"HEAD {upstream.url('/big')} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    answer = await exchange(proxy, head + get(upstream, close=True))
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    first, _, second = answer.partition(b"\r\n\r\n")
    assert framing in first.lower()
    assert second.startswith(b"HTTP/1.1 200 ") and second.endswith(b"\r\n\r\nok")
    assert upstream.connections == 1 and len(upstream.received) == 2


async def test_informational_answers_come_before_the_answer(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    upstream.answer = lambda r: (
        b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" + OK,
        False,
    )
    answer = await exchange(proxy, get(upstream, close=True))
    assert answer.startswith(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
    assert answer.endswith(b"\r\n\r\nok") and answer.count(b"HTTP/1.1 200 OK\r\n") == 1


async def test_a_chunked_answer_arrives_chunked_whole_and_the_connection_goes_on(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    upstream.answer = lambda r: (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n",
        False,
    )
    answer = await exchange(proxy, get(upstream) + get(upstream, close=True))
    first, second = answer.split(b"HTTP/1.1 200 OK\r\n")[1:]
    for one in (first, second):
        head, _, body = one.partition(b"\r\n\r\n")
        assert b"transfer-encoding: chunked" in head.lower()
        assert dechunk(body) == b"hello, world"
    assert upstream.connections == 1


async def test_an_answer_read_to_its_close_is_chunked_to_the_browser(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    # No length: the answer ends where the server closes; an HTTP/1.1 client gets it
    # chunked and keeps its connection, and the closed upstream one is never reused.
    to_the_end = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end"
    upstream.answer = lambda r: (to_the_end, True)
    answer = await exchange(proxy, get(upstream) + get(upstream, close=True))
    assert answer.count(b"HTTP/1.1 200 OK\r\n") == 2
    for one in answer.split(b"HTTP/1.1 200 OK\r\n")[1:]:
        head, _, body = one.partition(b"\r\n\r\n")
        assert b"transfer-encoding: chunked" in head.lower()
        assert dechunk(body) == b"to the end"
    assert upstream.connections == 2
    # An HTTP/1.0 client, which knows no chunks, gets it read to the close as well.
    old = f"GET {upstream.url()} HTTP/1.0\r\nHost: x\r\n\r\n".encode()
    answer = await exchange(proxy, old)
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\nto the end")
    assert b"transfer-encoding" not in answer.lower()


async def test_uploads_arrive_whole_with_their_own_framing(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    big = bytes(range(256)) * 1024  # more than one read
    post = f"POST {upstream.url('/up')} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(big)}\r\n\r\n"
    chunked = (
        f"POST {upstream.url('/up')} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        "4\r\nsome\r\n5\r\nthing\r\n0\r\n\r\n"
    )
    # Both at once would let two parties read two bodies (request smuggling): chunked wins.
    both = (
        f"POST {upstream.url('/up')} HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    )
    answer = await exchange(proxy, post.encode() + big + chunked.encode() + both.encode())
    assert answer.count(b"HTTP/1.1 200 OK\r\n") == 3
    sized, chunks, smuggled = upstream.received
    assert sized.body == big and not sized.chunked
    assert sized.header(b"content-length") == [str(len(big)).encode()]
    assert chunks.body == b"something" and chunks.chunked
    assert smuggled.body == b"abc" and smuggled.chunked
    assert smuggled.header(b"content-length") == []
    assert upstream.connections == 1


async def test_a_client_that_hangs_up_mid_upload_leaves_no_connection_to_reuse(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    _reader, writer = await connect(proxy)
    post = f"POST {upstream.url('/up')} HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
    writer.write(post.encode() + b"only the start")
    await eventually(lambda: upstream.connections == 1, what="the upload reached upstream")
    writer.close()
    await eventually(lambda: upstream.ended == 1, what="the half-sent upload's connection closed")
    answer = await exchange(proxy, get(upstream, close=True))
    assert answer.endswith(b"\r\n\r\nok")
    assert upstream.connections == 2 and [r.line for r in upstream.received] == [b"GET / HTTP/1.1"]


async def test_a_server_that_hangs_up_mid_answer_closes_the_client_and_is_not_reused(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    cut = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nten bytes."
    upstream.answer = answering(b"GET /cut ", cut, close=True)
    # The client's connection ends mid-answer: the next request on it is never read.
    answer = await exchange(proxy, get(upstream, "/cut") + get(upstream, close=True))
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\nten bytes.")
    assert len(upstream.received) == 1
    answer = await exchange(proxy, get(upstream, close=True))
    assert answer.endswith(b"\r\n\r\nok") and upstream.connections == 2


async def test_a_plain_upgrade_is_not_passed_on(proxy: EgressProxy, upstream: Scripted) -> None:
    # WebSockets go through CONNECT; a plain request's Upgrade is about its hop only, and
    # a server that switches protocols anyway is cut off, not spliced to the browser.
    upstream.answer = lambda r: (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        False,
    )
    extra = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
    answer = await exchange(proxy, get(upstream, "/ws", extra))
    [request] = upstream.received
    assert request.header(b"upgrade") == [] and request.header(b"connection") == []
    assert request.header(b"sec-websocket-version") == [b"13"]
    assert b"101" not in answer


async def test_a_body_of_tiny_chunks_leaves_the_loop_to_others_as_it_goes(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    """A site that answers in one-byte chunks: each is an event of the proxy's own, on the
    loop every run of the worker shares.  The relay lets the others run every few hundred
    of them (it read a buffer's ten thousand in one go: a tab's snapshot beside it waited
    out its budget).  Counted in the loop's turns another task gets, not in time."""
    chunks = 30_000
    upstream.answer = lambda r: (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1\r\nx\r\n" * chunks
        + b"0\r\n\r\n", True,
    )  # fmt: skip
    turns = 0

    async def other_work() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    beside = asyncio.create_task(other_work())
    try:
        answer = await exchange(proxy, get(upstream, close=True))
    finally:
        beside.cancel()
    assert dechunk(answer.partition(b"\r\n\r\n")[2]) == b"x" * chunks
    assert turns >= chunks // RELAY_EVENTS_PER_TURN // 2, turns
