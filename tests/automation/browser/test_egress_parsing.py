"""What the egress proxy takes as HTTP/1.1, spoken to over raw sockets on both sides:
answers without a body whatever their length says (to a HEAD; 1xx, 204, 304) on
connections that go on, and the messages two parsers could read two ways (request
smuggling), refused before anything reaches a server: folded or badly ended lines, a
space before a colon, two lengths, a length beside a coding that is not chunked, a bad
chunk size, a head past the limit, a switch of protocols with a body."""

from __future__ import annotations

import asyncio

import pytest

from automation.browser.egress import EgressProxy
from automation.browser.egresshttp import MAX_HEAD_BYTES, READ_CHUNK_BYTES
from tests.automation.browser.test_egress_framing import (
    OK,
    Scripted,
    answering,
    connect,
    dechunk,
    exchange,
    get,
    proxy,
    upstream,
)
from tests.waiting import eventually

__all__ = ["proxy", "upstream"]  # the fixtures, shared with test_egress_framing


async def exchange_or_reset(proxy: EgressProxy, data: bytes) -> bytes:
    """As :func:`exchange`, but a connection the proxy cut (reset) answers what came."""
    reader, writer = await connect(proxy)
    writer.write(data)
    answer = b""
    try:
        while chunk := await reader.read(65_536):
            answer += chunk
    except ConnectionResetError:
        pass
    writer.close()
    return answer


async def test_a_head_answer_s_length_is_no_body_on_connections_that_go_on(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    # The answer to a HEAD says how long the GET's body would be; none follows.  Read
    # as a body, the next answer would be swallowed (or the connection wait for ever).
    upstream.answer = lambda r: (
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\nX-Head: 1\r\n\r\n", False)
        if r.line.startswith(b"HEAD ")
        else (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", False)
    )
    head = f"HEAD {upstream.url('/big')} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    reader, writer = await connect(proxy)
    try:
        writer.write(head)
        first = await reader.readuntil(b"\r\n\r\n")
        assert first.startswith(b"HTTP/1.1 200 OK\r\n")
        assert b"content-length: 5000\r\n" in first.lower() and b"X-Head: 1\r\n" in first
        writer.write(get(upstream, "/after") + head)  # the same connection, kept alive
        second = await reader.readuntil(b"\r\n\r\n")
        assert b"content-length: 5\r\n" in second.lower()
        assert await reader.readexactly(5) == b"hello"
        third = await reader.readuntil(b"\r\n\r\n")
        assert b"content-length: 5000\r\n" in third.lower()
    finally:
        writer.close()
    # ... and from another connection of the browser's, the upstream one is the same.
    answer = await exchange(proxy, get(upstream, "/last", close=True))
    assert answer.endswith(b"\r\n\r\nhello")
    lines = [r.line for r in upstream.received]
    assert lines == [b"HEAD /big HTTP/1.1", b"GET /after HTTP/1.1", b"HEAD /big HTTP/1.1",
                     b"GET /last HTTP/1.1"]  # fmt: skip
    assert upstream.connections == 1 and proxy.opened == 1


async def test_a_head_answer_followed_by_a_body_leaves_no_connection_to_reuse(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    # A server that sends the GET's body after a HEAD's head: read as the next answer,
    # it would be the answer to whatever request the pooled connection carried next.
    upstream.answer = answering(b"HEAD ", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
    head = f"HEAD {upstream.url()} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    answer = await exchange(proxy, head + get(upstream, "/next", close=True))
    first, _, rest = answer.partition(b"\r\n\r\n")
    assert b"content-length: 5" in first.lower()
    assert rest.startswith(b"HTTP/1.1 200 OK\r\n") and rest.endswith(b"\r\n\r\nok")
    assert b"hello" not in answer and upstream.connections == 2


@pytest.mark.parametrize("status", [b"204 No Content", b"304 Not Modified"])
async def test_an_answer_that_has_no_body_is_whole_with_its_head(
    proxy: EgressProxy, upstream: Scripted, status: bytes
) -> None:
    # A 204 or 304 ends with its head, whatever Content-Length it carries.
    upstream.answer = answering(
        b"GET /none ", b"HTTP/1.1 " + status + b"\r\nContent-Length: 7\r\n\r\n"
    )
    answer = await exchange(proxy, get(upstream, "/none") + get(upstream, close=True))
    first, _, rest = answer.partition(b"\r\n\r\n")
    assert first.startswith(b"HTTP/1.1 " + status + b"\r\n")
    assert rest.startswith(b"HTTP/1.1 200 OK\r\n") and rest.endswith(b"\r\n\r\nok")
    assert upstream.connections == 1


async def test_pipelined_requests_are_answered_in_order(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    post = f"POST {upstream.url('/p')} HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
    upstream.answer = lambda r: (
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(r.line), r.line),
        False,
    )
    answer = await exchange(
        proxy, get(upstream, "/1") + post.encode() + get(upstream, "/3", close=True)
    )
    bodies = [part.split(b"\r\n\r\n", 1)[1] for part in answer.split(b"HTTP/1.1 200 OK")[1:]]
    assert bodies == [b"GET /1 HTTP/1.1", b"POST /p HTTP/1.1", b"GET /3 HTTP/1.1"]
    assert [r.body for r in upstream.received] == [b"", b"abc", b""]


SMUGGLED = [
    # A folded line (obs-fold): one party's header value is another's header.
    "GET {url} HTTP/1.1\r\nHost: x\r\nX-A: a\r\n Transfer-Encoding: chunked\r\n\r\n",
    # Lines ended by LF alone, or broken by a bare CR.
    "GET {url} HTTP/1.1\nHost: x\n\n",
    "GET {url} HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n",
    # A space before the colon: Transfer-Encoding to some, an unknown header to others.
    "POST {url} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\nContent-Length: 3\r\n\r\n"
    "0\r\n\r\n",
    # Two lengths, conflicting or not, and a length given as a list.
    "POST {url} HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 30\r\n\r\nabc",
    "POST {url} HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
    "POST {url} HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc",
    # A coding other than chunked alone (one party dechunks, the other does not).
    "POST {url} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    "POST {url} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    # A request to switch protocols with a body: llhttp would read no body of it.
    "GET {url} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Content-Length: 26\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n",
    # A method llhttp does not know (it knows every one IANA registers, WebDAV's too).
    "BREW {url} HTTP/1.1\r\nHost: x\r\n\r\n",
    # Not HTTP/1.1: another version, or none (HTTP/0.9); no Host.
    "GET {url} HTTP/2.0\r\nHost: x\r\n\r\n",
    "GET {url}\r\n\r\n",
    "GET {url} HTTP/1.1\r\n\r\n",
]


@pytest.mark.parametrize("request_text", SMUGGLED)
async def test_what_two_parsers_could_read_two_ways_is_refused(
    proxy: EgressProxy, upstream: Scripted, request_text: str
) -> None:
    then = get(upstream, "/smuggled", close=True)  # would pass for a second request
    answer = await exchange(proxy, request_text.format(url=upstream.url()).encode() + then)
    assert answer.startswith(b"HTTP/1.1 400 "), answer
    assert b"bad request: " in answer and b"connection: close" in answer.lower()
    assert upstream.received == [] and upstream.connections == 0


@pytest.mark.parametrize("size", ["3x", "-3", "0x3", "10000000000000003"])
async def test_a_bad_chunk_size_is_refused_and_its_upstream_connection_closed(
    proxy: EgressProxy, upstream: Scripted, size: str
) -> None:
    # The head went on before its body was read: the server never gets a whole request,
    # and its connection closes.
    post = (
        f"POST {upstream.url()} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        f"{size}\r\nabc\r\n0\r\n\r\n"
    )
    answer = await exchange(proxy, post.encode() + get(upstream, "/smuggled", close=True))
    assert answer.startswith(b"HTTP/1.1 400 ") and b"chunk size" in answer.lower()
    await eventually(lambda: upstream.ended == upstream.connections, what="upstream closed")
    assert upstream.received == []


async def test_a_head_past_the_limit_is_refused(proxy: EgressProxy, upstream: Scripted) -> None:
    big = "X-Big: " + "a" * (MAX_HEAD_BYTES + READ_CHUNK_BYTES) + "\r\n"
    answer = await exchange(proxy, get(upstream, extra=big).replace(b"\r\n\r\n", b"\r\n", 1))
    assert answer.startswith(b"HTTP/1.1 400 ") and b"a head larger than" in answer
    assert upstream.connections == 0
    # Below the limit, a large head goes through.
    fine = "X-Big: " + "a" * (MAX_HEAD_BYTES // 2) + "\r\n"
    answer = await exchange(proxy, get(upstream, extra=fine, close=True))
    assert answer.endswith(b"\r\n\r\nok")
    assert upstream.received[0].header(b"x-big") == [b"a" * (MAX_HEAD_BYTES // 2)]


async def test_a_request_asking_to_switch_protocols_without_a_body_goes_on_as_a_request(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    # llhttp stops at such a head; what follows it is the next request once the answer
    # (a plain one: Upgrade is not passed on) went back.
    upgrade = "Upgrade: websocket\r\nConnection: Upgrade\r\n"
    answer = await exchange(proxy, get(upstream, "/ws", upgrade) + get(upstream, close=True))
    assert answer.count(b"HTTP/1.1 200 OK\r\n") == 2
    assert [r.line for r in upstream.received] == [b"GET /ws HTTP/1.1", b"GET / HTTP/1.1"]
    assert upstream.received[0].header(b"upgrade") == []


async def test_a_chunked_request_s_trailer_does_not_travel_on(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    post = (
        f"POST {upstream.url('/up')} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        "Connection: close\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n"
    )
    answer = await exchange(proxy, post.encode())
    assert answer.endswith(b"\r\n\r\nok")
    [request] = upstream.received
    assert request.body == b"abc" and request.chunked


@pytest.mark.parametrize(
    "bad",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nX-A: a\r\n folded\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok",
        b"HTTP/2 200\r\nContent-Length: 2\r\n\r\nok",
    ],
)
async def test_an_answer_that_is_not_http_1_1_reaches_the_browser_as_a_failed_network(
    proxy: EgressProxy, upstream: Scripted, bad: bytes
) -> None:
    upstream.answer = answering(b"GET /bad ", bad)
    answer = await exchange_or_reset(proxy, get(upstream, "/bad"))
    assert answer == b""
    answer = await exchange(proxy, get(upstream, close=True))  # the bad connection is gone
    assert answer.endswith(b"\r\n\r\nok") and upstream.connections == 2


async def test_an_answer_with_a_bad_chunk_closes_the_browser_s_connection_mid_answer(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    upstream.answer = answering(
        b"GET /bad ", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\nzz\r\n"
    )
    answer = await exchange(proxy, get(upstream, "/bad") + get(upstream, close=True))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and body == b"2\r\nok\r\n"  # no end
    assert len(upstream.received) == 1
    answer = await exchange(proxy, get(upstream, close=True))
    assert answer.endswith(b"\r\n\r\nok") and upstream.connections == 2


async def test_more_than_was_asked_for_leaves_no_connection_to_reuse(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    # A server that sends a second answer nobody asked for: the next request on that
    # connection would be given it.
    upstream.answer = answering(b"GET /twice ", OK + OK)
    first = await exchange(proxy, get(upstream, "/twice", close=True))
    assert first.count(b"HTTP/1.1 200 OK\r\n") == 1
    answer = await exchange(proxy, get(upstream, close=True))
    assert answer.endswith(b"\r\n\r\nok") and upstream.connections == 2


async def test_an_answer_read_to_its_close_may_be_long(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    body = bytes(range(256)) * 2048  # many reads
    upstream.answer = lambda r: (b"HTTP/1.1 200 OK\r\n\r\n" + body, True)
    answer = await exchange(proxy, get(upstream, close=True))
    assert dechunk(answer.partition(b"\r\n\r\n")[2]) == body


async def test_a_client_gone_mid_head_costs_no_upstream_connection(
    proxy: EgressProxy, upstream: Scripted
) -> None:
    reader, writer = await connect(proxy)
    writer.write(f"GET {upstream.url()} HTTP/1.1\r\nHost: x\r\nX-Half".encode())
    await writer.drain()
    writer.close()
    await asyncio.wait_for(reader.read(), 10)  # the proxy closes its side too
    assert upstream.connections == 0
