"""The egress proxy on its own, spoken to over a raw socket: each request on a kept
connection judged on its own, the Host header the checked URL's, tunnels refused with a
403 that says why or carried both ways, upstream connections kept alive and pooled per
checked address without skipping the policy, names looked up once."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from automation import Budget, UrlPolicy
from automation.browser import egressnames
from automation.browser.egress import EgressProxy
from automation.browser.url_policy import system_lookup
from tests.automation.browser import counting
from tests.automation.browser.counting import Counting, CountingHandler, serve

# The two loopback servers, as fixtures of this module (tests/automation/browser/counting.py).
servers, allowed, other = counting.servers, counting.allowed, counting.other


@pytest_asyncio.fixture(loop_scope="session")
async def proxy(allowed: Counting) -> AsyncIterator[EgressProxy]:
    egress = EgressProxy(UrlPolicy(allowed_domains=(f"127.0.0.1:{allowed.port}",)))
    await egress.start()
    yield egress
    await egress.close()


async def exchange(proxy: EgressProxy, data: bytes) -> bytes:
    """Send ``data`` on one connection to the proxy; everything it answers until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]))
    writer.write(data)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    return answer


async def test_each_request_on_a_kept_connection_is_judged_on_its_own(
    proxy: EgressProxy, allowed: Counting, other: Counting
) -> None:
    # Three requests on one connection, the last to a host the policy refuses: the first
    # two are answered on the same connection, the third is refused and never leaves.
    request = "GET {}/data HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n"
    answer = await exchange(
        proxy,
        (
            request.format(allowed.origin(), allowed.port)
            + request.format(allowed.origin(), allowed.port)
            + request.format(other.origin(), other.port)
        ).encode(),
    )
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert answer.count(b"HTTP/1.1 200 ") == 2 and answer.count(b"HTTP/1.1 403 ") == 1
    assert answer.index(b"HTTP/1.1 403 ") > answer.rindex(b"HTTP/1.1 200 ")
    assert other.connections == 0
    assert allowed.requests == [("GET", "/data"), ("GET", "/data")]


async def test_the_host_header_is_the_checked_url_s(proxy: EgressProxy, allowed: Counting) -> None:
    # A Host header that names another site can't steer the request on the server.
    answer = await exchange(
        proxy,
        # (Connection: close: the answer ends with the connection, not the proxy's idle time.)
        f"GET {allowed.origin()}/frame HTTP/1.1\r\nHost: admin.internal\r\n"
        "Connection: close\r\n\r\n".encode(),
    )
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert allowed.hosts == [f"127.0.0.1:{allowed.port}"]


async def test_a_refused_tunnel_is_a_403_that_says_why(proxy: EgressProxy, other: Counting) -> None:
    target = f"127.0.0.1:{other.port}"
    answer = await exchange(proxy, f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 403 ")
    assert b"is not on the allowed list" in answer
    assert other.connections == 0
    assert proxy.refused == 1


async def test_what_was_refused_is_remembered_for_the_navigation_that_asked(
    proxy: EgressProxy, allowed: Counting, other: Counting
) -> None:
    # A URL exactly; a tunnel by its host and port, all the proxy saw of it.
    refused = f"{other.origin()}/frame?x=1"
    await exchange(proxy, f"GET {refused} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert "is not on the allowed list" in (proxy.why_refused(refused) or "")
    assert "is not on the allowed list" in (proxy.why_refused(refused + "#top") or "")
    assert proxy.why_refused(f"{other.origin()}/frame") is None  # not asked for
    tunnel = f"localhost:{other.port}"
    await exchange(proxy, f"CONNECT {tunnel} HTTP/1.1\r\nHost: {tunnel}\r\n\r\n".encode())
    assert "is not on the allowed list" in (proxy.why_refused(f"https://{tunnel}/a?b") or "")
    assert "is not on the allowed list" in (proxy.why_refused(f"wss://{tunnel}/") or "")
    assert proxy.why_refused(f"http://{tunnel}/a") is None  # plain http: not asked for
    assert proxy.why_refused(f"{allowed.origin()}/data") is None


async def test_an_allowed_tunnel_carries_bytes_both_ways(
    proxy: EgressProxy, allowed: Counting
) -> None:
    target = f"127.0.0.1:{allowed.port}"
    connect = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"
    # The tunnelled request follows the CONNECT at once, before the proxy's answer.
    answer = await exchange(proxy, f"{connect}GET /data HTTP/1.0\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert answer.endswith(b'{"ok": true}')


class _KeepAliveHandler(CountingHandler):
    protocol_version = "HTTP/1.1"  # keeps its connections open between requests


class _ClosingHandler(_KeepAliveHandler):
    """Answers as if it kept the connection, then closes it (an idle timeout at once)."""

    def _answer(self, status: int, kind: str, body: bytes) -> None:
        super()._answer(status, kind, body)
        self.close_connection = True


@pytest.fixture
def keeping() -> Iterator[Counting]:
    server = Counting()
    server.RequestHandlerClass = _KeepAliveHandler
    serve(server)
    yield server
    server.shutdown()
    server.server_close()


def gets(server: Counting, *paths: str, host: str = "127.0.0.1") -> bytes:
    """GETs of ``paths`` on one connection to the proxy, the last one asking it to close."""
    requests = [
        f"GET {server.origin(host)}{path} HTTP/1.1\r\nHost: {host}:{server.port}\r\n"
        for path in paths
    ]
    requests[-1] += "Connection: close\r\n"
    return "".join(request + "\r\n" for request in requests).encode()


async def test_requests_to_one_address_share_a_kept_alive_upstream_connection(
    keeping: Counting,
) -> None:
    egress = EgressProxy(UrlPolicy(allowed_domains=(f"127.0.0.1:{keeping.port}",)))
    await egress.start()
    try:
        answer = await exchange(egress, gets(keeping, "/data", "/blank", "/data"))
        # ... and from another connection of the browser's: the same upstream one.
        again = await exchange(egress, gets(keeping, "/data", "/blank", "/data"))
    finally:
        await egress.close()
    assert answer.count(b"HTTP/1.1 200 ") == 3 and again.count(b"HTTP/1.1 200 ") == 3
    assert keeping.requests == [("GET", "/data"), ("GET", "/blank"), ("GET", "/data")] * 2
    assert keeping.connections == 1 and egress.opened == 1


async def test_a_pooled_connection_does_not_skip_the_policy(keeping: Counting) -> None:
    # Only /data is allowed: /blank is refused although a connection to the very same
    # address stands open and idle in the pool.
    egress = EgressProxy(UrlPolicy(allowed_domains=(f"127.0.0.1:{keeping.port}/data",)))
    await egress.start()
    try:
        answer = await exchange(egress, gets(keeping, "/data", "/blank"))
    finally:
        await egress.close()
    assert answer.startswith(b"HTTP/1.1 200 ") and b"HTTP/1.1 403 " in answer
    assert keeping.requests == [("GET", "/data")]
    assert egress.refused == 1


async def test_a_name_is_looked_up_once_for_many_requests_each_still_judged(
    keeping: Counting,
) -> None:
    # Only /data is allowed: /blank is refused though the name's answer is remembered.
    egress = EgressProxy(UrlPolicy(allowed_domains=(f"localhost:{keeping.port}/data",)))
    await egress.start()
    try:
        first = await exchange(egress, gets(keeping, "/data", "/data", host="localhost"))
        then = await exchange(egress, gets(keeping, "/data", "/blank", host="localhost"))
    finally:
        await egress.close()
    assert first.count(b"HTTP/1.1 200 ") == 2
    assert then.startswith(b"HTTP/1.1 200 ") and b"HTTP/1.1 403 " in then
    assert keeping.requests == [("GET", "/data")] * 3
    assert keeping.hosts == [f"localhost:{keeping.port}"] * 3
    assert egress.looked_up == 1 and egress.refused == 1


async def test_a_name_asked_for_on_many_connections_at_once_is_looked_up_once(
    keeping: Counting,
) -> None:
    """A page's first requests to a host come on many connections at once (Chromium opens
    dozens through a proxy): they wait for one lookup of its name, not a lookup (and a
    thread of the proxy's few) each, and each request is still judged on its own."""
    egress = EgressProxy(UrlPolicy(allowed_domains=(f"localhost:{keeping.port}/data",)))
    await egress.start()
    port = int(egress.url.rsplit(":", 1)[1])
    paths = ["/data"] * 5 + ["/blank"]
    sockets = []
    try:
        # Every connection made and its request sent before the proxy's event loop runs
        # again (the kernel accepts them meanwhile): each asks for the name before any
        # lookup of it has answered.
        for path in paths:
            connection = socket.create_connection(("127.0.0.1", port))
            connection.sendall(gets(keeping, path, host="localhost"))
            connection.setblocking(False)
            sockets.append(connection)
        answers = await asyncio.gather(*(_read_to_end(connection) for connection in sockets))
    finally:
        for connection in sockets:
            connection.close()
        await egress.close()
    assert [answer.split(b" ", 2)[1] for answer in answers] == [b"200"] * 5 + [b"403"]
    assert keeping.requests == [("GET", "/data")] * 5
    assert egress.looked_up == 1 and egress.refused == 1


async def _read_to_end(connection: socket.socket) -> bytes:
    loop = asyncio.get_running_loop()
    answer = b""
    while chunk := await loop.sock_recv(connection, 65_536):
        answer += chunk
    return answer


async def test_a_kept_connection_the_server_closed_is_replaced(keeping: Counting) -> None:
    keeping.RequestHandlerClass = _ClosingHandler
    egress = EgressProxy(UrlPolicy(allowed_domains=(f"127.0.0.1:{keeping.port}",)))
    await egress.start()
    try:
        answer = await exchange(egress, gets(keeping, "/data", "/data", "/blank"))
    finally:
        await egress.close()
    assert answer.count(b"HTTP/1.1 200 ") == 3
    assert keeping.requests == [("GET", "/data"), ("GET", "/data"), ("GET", "/blank")]
    assert keeping.connections == 3


async def test_names_are_looked_up_while_the_default_executor_is_held(keeping: Counting) -> None:
    """Every thread of the event loop's default executor held (a slow read of a file, a
    big page's parse, a download's check, or lookups a resolver answers slowly): a name
    a page asks for is still looked up, and any other's.  The loop's getaddrinfo queued
    each lookup behind all of that, and the page's request was refused at the lookup's
    deadline ("did not resolve within 5000 ms")."""
    loop = asyncio.get_running_loop()
    release = threading.Event()
    held = [loop.run_in_executor(None, release.wait) for _ in range(64)]  # past its threads
    try:
        egress = EgressProxy(UrlPolicy(allowed_domains=(f"localhost:{keeping.port}/data",)))
        await egress.start()
        try:
            answer = await exchange(egress, gets(keeping, "/data", host="localhost"))
        finally:
            await egress.close()
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
        assert await system_lookup("localhost", keeping.port, Budget(30_000))
    finally:
        release.set()
        await asyncio.gather(*held)


async def test_one_site_s_names_that_never_resolve_hold_no_lookup_of_another_site(
    keeping: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hostile page asks, again and again, for names of a site of its own whose name
    servers never answer (r0-0.slow.test, r0-1.slow.test…): they hold two of the proxy's
    lookup threads, still held once each lookup's bound has ended (a lookup in a thread
    runs until the resolver gives up), and a page of another run, behind the same proxy,
    still reaches its own host.  They held every thread, and the other page's request was
    refused at the lookup's deadline ("did not resolve within …").  The system's resolver
    is the one part made slow here (this machine has no DNS to be slow): a lookup of a
    slow.test name waits in its thread, as one whose server never answers does."""
    release = threading.Event()
    resolve = socket.getaddrinfo

    def resolver(host: object, *args: object, **kwargs: object) -> object:
        if isinstance(host, str) and host.endswith(".slow.test"):
            release.wait(60)
            raise socket.gaierror(socket.EAI_AGAIN, "no answer")
        return resolve(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    monkeypatch.setattr(egressnames, "RESOLVE_TIMEOUT_MS", 1_000)  # the waves end sooner
    egress = EgressProxy(UrlPolicy(block_private=False))
    await egress.start()
    port = int(egress.url.rsplit(":", 1)[1])
    try:
        for wave in range(5):  # each refused at its bound; the threads they took still held
            hostile = []
            for n in range(10):
                name = f"r{wave}-{n}.slow.test"
                connection = socket.create_connection(("127.0.0.1", port))
                connection.sendall(
                    f"GET http://{name}/ HTTP/1.1\r\nHost: {name}\r\n"
                    "Connection: close\r\n\r\n".encode()
                )
                connection.setblocking(False)
                hostile.append(connection)
            try:
                answers = await asyncio.gather(*(_read_to_end(c) for c in hostile))
            finally:
                for connection in hostile:
                    connection.close()
            assert all(answer.startswith(b"HTTP/1.1 403 ") for answer in answers)
        answer = await exchange(egress, gets(keeping, "/data", host="localhost"))
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
    finally:
        release.set()
        await egress.close()
