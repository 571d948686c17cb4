"""The run socket's origin check through the whole ASGI application: the Origin's scheme,
host and port must be the dashboard's own (as the handshake's Host and scheme say), or one
listed in CSRF_TRUSTED_ORIGINS."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from channels.testing import WebsocketCommunicator
from django.test import Client

from dashboard.asgi import application
from dashboard.lib.origin import origin_allowed
from dashboard.runs import services
from tests.daphne import daphne
from tests.dashboard.conftest import Socket
from tests.dashboard.daphne_session import USER, logged_in_run, socket_messages
from tests.dashboard.sockets import ANSWER_S

# Rollback transactions, but for the async tests: their database work runs in another
# thread (sync_to_async), which must see the rows.
pytestmark = pytest.mark.django_db

HOST = "127.0.0.1:8000"


class Handshakes:
    def __init__(self) -> None:
        self.opened: list[WebsocketCommunicator] = []

    async def open(
        self,
        run_id: int,
        session: str,
        origin: str | None,
        *,
        host: str = HOST,
        scheme: str = "ws",
        extra: tuple[tuple[bytes, bytes], ...] = (),
    ) -> bool:
        headers = [(b"host", host.encode()), (b"cookie", f"sessionid={session}".encode())]
        if origin is not None:
            headers.append((b"origin", origin.encode()))
        comm = Socket(application, f"/ws/runs/{run_id}/", headers=[*headers, *extra])
        comm.scope["scheme"] = scheme
        self.opened.append(comm)
        connected, _ = await comm.connect()
        if connected:
            assert (await comm.receive_json_from(timeout=ANSWER_S))["type"] == "state"
        return connected


@pytest_asyncio.fixture(loop_scope="session")
async def handshakes() -> AsyncIterator[Handshakes]:
    opened = Handshakes()
    yield opened
    for comm in opened.opened:
        await comm.disconnect()


@pytest.fixture
def run_and_session(owner: Any) -> tuple[int, str]:
    run = services.run_create(owner=owner, task="click OK", start_url="", planner="rules")
    client = Client()
    client.force_login(owner)
    return run.pk, client.cookies["sessionid"].value


@pytest.mark.django_db(transaction=True)
async def test_only_the_exact_origin_of_the_dashboard_is_accepted(
    handshakes: Handshakes, run_and_session: tuple[int, str]
) -> None:
    run_id, session = run_and_session
    refused = [
        "http://127.0.0.1:8001",  # the same host on another port: another app's page
        "http://127.0.0.1",  # port 80
        "https://127.0.0.1:8000",  # another scheme
        "http://localhost:8000",  # an allowed host, but not the one the page is served on
        "http://evil.example:8000",
        "null",
        "http://127.0.0.1:8000/path",
        "http://user@127.0.0.1:8000",
        None,  # no Origin at all
    ]
    for origin in refused:
        assert not await handshakes.open(run_id, session, origin), origin
    assert await handshakes.open(run_id, session, "http://127.0.0.1:8000")
    assert await handshakes.open(run_id, session, "HTTP://127.0.0.1:8000")  # case is no origin


@pytest.mark.django_db(transaction=True)
async def test_tls_is_read_from_the_socket_scheme_or_the_configured_proxy_header(
    handshakes: Handshakes, run_and_session: tuple[int, str], settings: Any
) -> None:
    run_id, session = run_and_session
    settings.ALLOWED_HOSTS = ["tabwright.example"]
    host = "tabwright.example"
    # Served over TLS itself (wss): https://host is its origin, http://host is not.
    assert await handshakes.open(run_id, session, "https://tabwright.example", host=host,
                                 scheme="wss")  # fmt: skip
    assert not await handshakes.open(run_id, session, "http://tabwright.example", host=host,
                                     scheme="wss")  # fmt: skip
    # Behind a TLS proxy that talks plain ws to daphne: the header counts only when the
    # operator configured it, so a client can't claim https on its own.
    proxied = ((b"x-forwarded-proto", b"https"),)
    assert not await handshakes.open(
        run_id, session, "https://tabwright.example", host=host, extra=proxied
    )
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert await handshakes.open(
        run_id, session, "https://tabwright.example", host=host, extra=proxied
    )
    assert not await handshakes.open(
        run_id, session, "http://tabwright.example", host=host, extra=proxied
    )


@pytest.mark.django_db(transaction=True)
async def test_trusted_origins_are_the_explicit_extra_list(
    handshakes: Handshakes, run_and_session: tuple[int, str], settings: Any
) -> None:
    run_id, session = run_and_session
    settings.CSRF_TRUSTED_ORIGINS = ["https://tabwright.example", "https://*.corp.example"]
    assert await handshakes.open(run_id, session, "https://tabwright.example")
    assert await handshakes.open(run_id, session, "https://ops.corp.example")
    assert not await handshakes.open(run_id, session, "https://tabwright.example:8443")
    assert not await handshakes.open(run_id, session, "http://tabwright.example")
    assert not await handshakes.open(run_id, session, "https://corp.example.evil")


def test_a_host_outside_allowed_hosts_is_no_own_origin(settings: Any) -> None:
    """The Host header is checked against ALLOWED_HOSTS first: a page can't make its own
    origin the dashboard's by reaching it under another name (DNS rebinding)."""
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    scope = {
        "type": "websocket",
        "scheme": "ws",
        "headers": [
            (b"host", b"rebound.example:8000"),
            (b"origin", b"http://rebound.example:8000"),
        ],
    }
    assert not origin_allowed(scope)
    scope["headers"] = [(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000")]
    assert origin_allowed(scope)
    scope["headers"].append((b"origin", b"http://127.0.0.1:8000"))  # two: no one origin
    assert not origin_allowed(scope)


def test_a_real_daphne_refuses_the_handshake_from_another_port(tmp_path: Any) -> None:
    """Through daphne as it runs, with a logged-in session and its own run: a page on
    another port of the same host, or over the other scheme, is refused at the handshake
    (HTTP 403); the dashboard's own origin gets the run's messages."""
    with daphne(tmp_path / "var", USER, {}) as (base_url, _log):
        run_id, session = logged_in_run(base_url)
        port = int(base_url.rsplit(":", 1)[1])
        for origin in (f"http://127.0.0.1:{port + 1}", f"https://127.0.0.1:{port}"):
            assert asyncio.run(socket_messages(base_url, run_id, session, origin)) == 403, origin
        got = asyncio.run(socket_messages(base_url, run_id, session, base_url))
        assert isinstance(got, list) and got[-1]["type"] == "state"
