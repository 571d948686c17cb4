"""Fixtures of the batches', schedules' and alerts' tests: a scenario of the demo form, a
webhook receiver and an SMTP server on loopback."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from dashboard.jobs import schedules
from dashboard.models import Scenario, Schedule
from dashboard.scenarios import services
from tests.dashboard.signup import sign_up
from tests.net import free_port


@pytest.fixture
def scenario(owner: Any, fixture_url: str) -> Scenario:
    return services.scenario_import(owner=owner, data=sign_up(fixture_url))


def make(scenario: Scenario, **fields: Any) -> Schedule:
    defaults: dict[str, Any] = {"cron": "*/10 * * * *", "timezone": "Europe/Paris"}
    if "rows" not in fields:  # a replay's values, or a batch's rows: never both
        defaults["params"] = {"name": "Ada", "greet": "Ada"}
    checked = schedules.check_schedule(scenario=scenario, **{**defaults, **fields})
    return schedules.save(Schedule(owner=scenario.owner, scenario=scenario), **checked)


class Receiver(BaseHTTPRequestHandler):
    """A webhook receiver that answers with the statuses it is given, in turn."""

    statuses: list[int] = []
    got: list[tuple[dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
        status = Receiver.statuses.pop(0) if Receiver.statuses else 200
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[str]:
    Receiver.statuses, Receiver.got = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()
    server.server_close()


class Mailbox:
    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(envelope)
        return "250 OK"


@pytest.fixture
def smtp(settings: Any) -> Iterator[Mailbox]:
    """A real SMTP server on loopback, and the dashboard's mail pointed at it."""
    box = Mailbox()
    port = free_port()
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    yield box
    controller.stop()
