"""Dashboard fixtures: a media dir per test, users, and runs and sockets that end with the test."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import channels.db
import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import connections

from dashboard.lib.requestthreads import RequestThreads
from dashboard.models import Run
from dashboard.routing import websocket_urlpatterns
from dashboard.runs import services
from dashboard.runs.doorbell import wake
from dashboard.runs.runner import RunManager, runner
from dashboard.worker import start_embedded
from tests import tiers

PASSWORD = "correct horse battery staple"

# The runs' manager and worker start Chromium for the runs they start.
tiers.BROWSER.extend([RunManager, runner, start_embedded])

# How long a test waits for a socket's message, its connection or its end: bounds a hang
# only (each wait ends when it is done), so as long as a loaded machine may take.
ANSWER_S = 60


class Socket(WebsocketCommunicator):
    """A page's socket in a test.  Its connect and disconnect wait up to ANSWER_S: with
    channels' own 1 s a consumer still ending (stopping an act's script, say) is cancelled
    half way on a busy machine, and the test sees what a real server never leaves."""

    async def connect(self, timeout: float = ANSWER_S) -> tuple[bool, Any]:  # noqa: ASYNC109
        return await super().connect(timeout)

    async def disconnect(self, code: int = 1000, timeout: float = ANSWER_S) -> None:  # noqa: ASYNC109
        await super().disconnect(code, timeout)


OpenSocket = Callable[..., Awaitable[tuple[WebsocketCommunicator, bool, Any]]]


@pytest.fixture(autouse=True)
def tabwright_test_settings(settings: Any, tmp_path: Path) -> None:
    """The test pages and webhook receivers are served on 127.0.0.1, which the production
    policies refuse; run workspaces go to the test's own folder; sessions are not kept
    (tests of conversations set SESSION_IDLE_S)."""
    settings.TABWRIGHT = {
        **settings.TABWRIGHT,
        "BLOCK_PRIVATE_ADDRESSES": False,
        "WEBHOOK_BLOCK_PRIVATE_ADDRESSES": False,
        "WORKSPACE_DIR": tmp_path / "workspaces",
        # A conversation's tab is closed when its work ends, unless a test keeps it.
        "SESSION_IDLE_S": 0,
        # One process: no leases to renew or sweep, unless a test of leases turns them on.
        "LEASE_S": 0,
    }


@pytest.fixture(autouse=True)
def test_transaction_kept_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """channels' database_sync_to_async closes the connections Django would close at a
    request's end (close_old_connections) before and after each call.  Django's test Client
    runs the async middleware (dashboard.api.bodylimit's token check) in the test's own
    thread, whose connection holds the test's transaction (pytest-django): autocommit is
    off there, so Django takes it for a connection left broken and closes it, and the
    test's next query fails with "the connection is closed".  The in-memory SQLite of a
    test run ignores a close, so only PostgreSQL showed it.  A connection inside a
    transaction is kept, as Django's test Client keeps it from its own request signals;
    every other connection is closed as in production."""

    def close_old_connections(**kwargs: Any) -> None:
        for conn in connections.all(initialized_only=True):
            if not conn.in_atomic_block:
                conn.close_if_unusable_or_obsolete()

    monkeypatch.setattr(channels.db, "close_old_connections", close_old_connections)


@pytest.fixture(autouse=True)
def fast_password_hasher(settings: Any) -> None:
    """Users are made per test; the production hasher would spend most of the test time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def media_root(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def fast_actions(settings: Any) -> None:
    """A failing action should fail its test in seconds, not after the 15 s default."""
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ACTION_TIMEOUT_MS": 5_000}


@pytest.fixture
def owner(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("olive", password=PASSWORD)


@pytest.fixture
def stranger(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("sam", password=PASSWORD)


@pytest.fixture
def staff(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("stella", password=PASSWORD, is_staff=True)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def dashboard_runner() -> AsyncIterator[RunManager]:
    """The module-level runner; its Chromium is closed when the session ends."""
    yield runner
    await runner.shutdown()


@pytest_asyncio.fixture(loop_scope="session")
async def worker(dashboard_runner: RunManager, media_root: Path) -> AsyncIterator[RunManager]:
    """The runs' worker in this process, as daphne starts it: queued runs are claimed (on
    a wake-up, or at its poll) up to WORKER_RUNS.  Stopped, its runs ended, at teardown."""
    task = start_embedded()
    assert task is not None
    yield dashboard_runner
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    for run_id in list(dashboard_runner._live):
        await dashboard_runner.end(run_id, "the test ended")


def ended(run: Run) -> None:
    """A run a test made in the database (steps recorded, no worker) ends as a finished
    one does: it is saved as a scenario only then."""
    run.status = Run.Status.SUCCEEDED
    run.save(update_fields=["status"])


class Runs:
    """Creates runs and starts them in the test's loop; remembers them for teardown."""

    def __init__(self, manager: RunManager) -> None:
        self.manager = manager
        self.started: list[int] = []

    async def create(
        self, *, owner: Any, task: str, start_url: str = "", planner: str = "rules"
    ) -> Run:
        return await sync_to_async(services.run_create)(
            owner=owner, task=task, start_url=start_url, planner=planner
        )

    async def start(self, run: Run) -> Run:
        """Start the queued run: by the worker when one runs here, else by hand (as the
        worker would, claim included)."""
        self.started.append(run.pk)
        if self.manager.serving:
            await wake()
            await self.claimed(run.pk)
        else:
            await self.manager.start(run.pk)
        return run

    async def claimed(self, run_id: int, timeout_s: float = 60) -> None:
        """Until this process's worker has the queued run live, or it is already over: a
        run the database calls claimed (pending) may not have reached the runner yet, and
        waiting for it then (``manager.wait``) would return at once."""
        self.started.append(run_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not self.manager.is_live(run_id):
            status = (await sync_to_async(Run.objects.get)(pk=run_id)).status
            if status in Run.FINAL:
                return
            assert loop.time() < deadline, f"run {run_id} is {status} after {timeout_s} s"
            await asyncio.sleep(0.05)

    async def stop_all(self) -> None:
        for run_id in self.started:
            await self.manager.end(run_id, "the test ended")


@pytest_asyncio.fixture(loop_scope="session")
async def runs(
    dashboard_runner: RunManager, media_root: Path, fast_actions: None
) -> AsyncIterator[Runs]:
    """Whatever is still live at teardown is stopped, so no run writes to the database
    after the test flushed it."""
    manager = Runs(dashboard_runner)
    yield manager
    await manager.stop_all()


@pytest_asyncio.fixture(loop_scope="session")
async def open_socket() -> AsyncIterator[OpenSocket]:
    """Connect to a run's socket as ``user`` (None: no user in the scope at all).

    Routed like dashboard.asgi (each socket's sync code on a thread of its own) but
    without the origin check and the session middleware, so the test sets
    ``scope["user"]`` itself.  Every communicator is disconnected at teardown.
    """
    opened: list[WebsocketCommunicator] = []
    app = RequestThreads(URLRouter(websocket_urlpatterns))

    async def open_(
        run_id: int, user: Any, query: str = ""
    ) -> tuple[WebsocketCommunicator, bool, Any]:
        path = f"/ws/runs/{run_id}/" + (f"?{query}" if query else "")
        comm = Socket(app, path)
        if user is not None:
            comm.scope["user"] = user
        opened.append(comm)
        connected, detail = await comm.connect()
        return comm, connected, detail

    yield open_
    failed = []
    for comm in opened:
        if not comm.future.done():
            await comm.disconnect()
        elif comm.future.cancelled():
            # The consumer's task was cancelled under it: disconnecting would raise that
            # cancellation into the tests' shared event loop, and every later test would
            # inherit this one's database and folders.  Said, not raised.
            failed.append("a socket's consumer was cancelled before the test's end")
        elif comm.future.exception() is not None:
            failed.append(f"a socket's consumer failed: {comm.future.exception()!r}")
    assert not failed, failed


@pytest.fixture
def llm_at(settings: Any) -> Callable[..., None]:
    """Point runs at an OpenAI-compatible server (the fake LLM) by default."""
    from tests.fakellm import FAKE_MODEL

    def point(base_url: str, *, timeout_ms: int = 8_000) -> None:
        settings.TABWRIGHT = {
            **settings.TABWRIGHT,
            "PLANNER": "openai",
            "LLM_BASE_URL": base_url,
            "LLM_MODEL": FAKE_MODEL,
            "LLM_TIMEOUT_MS": timeout_ms,
        }

    return point
