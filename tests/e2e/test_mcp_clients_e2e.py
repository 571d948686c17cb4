"""Several MCP clients of one person over streamable HTTP (the MCP SDK's own client)
against a real daphne whose worker (its own, or a worker process beside it on PostgreSQL
and Redis) drives two runs at once.  Clients that start together each get a run of their
own, and every first call is answered: it waits for its session's browser to open.
Ten sessions in a row (five times the slots; bench.mcp measures twenty) leave no run
holding a slot.  A call whose session's browser can't open within its budget (every slot
taken) says so, and the session keeps its one run, which opens once a slot frees.  A
client that goes away, whether it ends its session or just drops its connections, frees its
slot at once: a queued run then starts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.daphne import api_token, daphne, log_in, log_tail, migrated_postgres, new_run, runworker
from tests.e2e.ui import CHROMIUM, PASSWORD, USERNAME
from tests.servers import redis_server, shared_settings
from tests.tasks import FORM_TASK
from tests.waiting import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="session")]

SLOTS = 2  # runs the worker drives at once
# Bounds a wait that would otherwise hang (a run that never ends, a slot never freed): the
# wait ends as soon as its condition holds.
HANG_S = 180
LIVE = ("queued", "pending", "running", "paused")
ENDED_BY_CLIENT = "the MCP client ended the session"


@dataclass(frozen=True)
class Dashboard:
    base_url: str
    logs: list[Path]  # the server's (and the worker's, when it runs apart)
    token: str
    page: httpx.Client  # logged in, as the person's browser is

    @property
    def form(self) -> str:
        return f"{self.base_url}/demo/form.html"


@pytest.fixture(
    scope="module",
    params=["one process", pytest.param("web and worker", marks=pytest.mark.multiprocess)],
)
def dashboard(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Dashboard]:
    """One daphne whose own worker drives the runs (SQLite, the in-memory layer); or a
    daphne that drives none beside a worker process, on PostgreSQL and Redis, so every
    call crosses the layer to the worker that holds its run."""
    # Longer than any test: a session ends because its client went away, not idle.
    more = {"WORKER_RUNS": str(SLOTS), "SESSION_IDLE_S": "900"}
    user = (USERNAME, PASSWORD)
    with ExitStack() as stack:
        if request.param == "one process":
            settings = {
                "TABWRIGHT_DEBUG": "1",  # the demo pages
                "TABWRIGHT_BLOCK_PRIVATE_ADDRESSES": "0",
                "TABWRIGHT_PLANNER": "rules",
                "TABWRIGHT_CHROMIUM_PATH": CHROMIUM,
                "TABWRIGHT_ACTION_TIMEOUT_MS": "5000",
                **{f"TABWRIGHT_{name}": value for name, value in more.items()},
            }
            base_url, log = stack.enter_context(
                daphne(tmp_path_factory.mktemp("mcp-clients"), user, settings)
            )
            logs = [log]
        else:
            database_url = stack.enter_context(migrated_postgres())
            redis_url = stack.enter_context(redis_server())
            media = tmp_path_factory.mktemp("media")
            settings = shared_settings(database_url, redis_url, media, EMBEDDED_WORKER="0", **more)
            base_url, log = stack.enter_context(
                daphne(tmp_path_factory.mktemp("mcp-web"), user, settings)
            )
            _worker, worker_log = stack.enter_context(
                runworker(tmp_path_factory.mktemp("mcp-worker"), settings)
            )
            logs = [log, worker_log]
        page = log_in(base_url, user)
        yield Dashboard(base_url, logs, api_token(page, "my editor"), page)


@asynccontextmanager
async def mcp_client(dashboard: Dashboard, *, end_session: bool = True) -> AsyncIterator[Client]:
    """A client session; ``end_session=False``: at the end the client just goes away (its
    connections close, no DELETE), as when its process ends."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {dashboard.token}"})
    try:
        transport = streamable_http_client(
            f"{dashboard.base_url}/mcp", http_client=http, terminate_on_close=end_session
        )
        async with Client(transport) as client:
            yield client
    finally:
        await http.aclose()


async def call(client: Client, name: str, args: dict[str, Any]) -> tuple[bool, str]:
    result = await client.call_tool(name, args)
    return not result.is_error, result.content[0].text


def runs(dashboard: Dashboard, kind: str = "mcp") -> dict[int, dict[str, Any]]:
    api = {"Authorization": f"Bearer {dashboard.token}"}
    listed = dashboard.page.get(f"/api/runs?kind={kind}&limit=500", headers=api)
    assert listed.status_code == 200, listed.text
    return {run["id"]: run for run in listed.json()}


def run_of(dashboard: Dashboard, run_id: int) -> dict[str, Any]:
    api = {"Authorization": f"Bearer {dashboard.token}"}
    return dashboard.page.get(f"/api/runs/{run_id}", headers=api).json()


async def until(dashboard: Dashboard, what: str, holds: Callable[[], bool]) -> None:
    """Wait until ``holds()`` (it reads the dashboard over HTTP), within HANG_S."""
    await eventually(
        lambda: asyncio.to_thread(holds),
        HANG_S,
        f"waited {HANG_S} s for {what}",
        said=lambda: "the servers said:\n" + "\n".join(log_tail(log) for log in dashboard.logs),
        every_s=0.2,  # (the dashboard is read over HTTP: no event)
    )


async def all_ended(dashboard: Dashboard, ids: set[int]) -> dict[int, dict[str, Any]]:
    """Once none of the runs ``ids`` is live (holds a slot or waits for one): them.  Each
    look is one request for the list of runs, not one a run."""

    def ended() -> bool:
        listed = runs(dashboard, kind="")
        return all(listed[i]["status"] not in LIVE for i in ids)

    await until(dashboard, f"runs {sorted(ids)} to end", ended)
    return {run_id: run_of(dashboard, run_id) for run_id in ids}


async def test_clients_that_start_together_each_get_a_run_and_every_first_call_is_answered(
    dashboard: Dashboard,
) -> None:
    before = set(runs(dashboard))

    async def session() -> list[tuple[bool, str]]:
        async with mcp_client(dashboard) as client:
            # Its first calls go out at once, before its browser has opened.
            first = await asyncio.gather(
                call(client, "navigate", {"url": dashboard.form}),
                call(client, "snapshot", {"interactive": True}),
            )
            return [*first, await call(client, "find", {"text": "Name"})]

    answers = await asyncio.gather(session(), session())
    for ok, said in (answer for each in answers for answer in each):
        assert ok, said
    made = set(runs(dashboard)) - before
    assert len(made) == 2, made  # one run per session
    for run in (await all_ended(dashboard, made)).values():
        assert (run["status"], run["status_reason"]) == ("stopped", ENDED_BY_CLIENT), run
        assert [s["action"] for s in run["steps"]][:1] in (["navigate"], ["snapshot"]), run


async def test_ten_sessions_in_a_row_answer_their_first_call_and_leave_no_run_holding_a_slot(
    dashboard: Dashboard,
) -> None:
    before = set(runs(dashboard))
    first = []
    for _ in range(5 * SLOTS):
        async with mcp_client(dashboard) as client:
            first.append(await call(client, "navigate", {"url": dashboard.form}))
    assert [said for ok, said in first if not ok] == []
    made = set(runs(dashboard)) - before
    assert len(made) == 5 * SLOTS, made
    ended = await all_ended(dashboard, made)
    assert {run["status_reason"] for run in ended.values()} == {ENDED_BY_CLIENT}
    assert all(len(run["steps"]) == 1 for run in ended.values()), ended


async def test_a_call_whose_browser_can_t_open_in_time_says_so_and_the_session_keeps_its_run(
    dashboard: Dashboard,
) -> None:
    before = set(runs(dashboard))
    async with mcp_client(dashboard) as late:  # (the SDK's sessions close in reverse order)
        async with AsyncExitStack() as holding:
            for _ in range(SLOTS):  # sessions that hold every slot
                client = await holding.enter_async_context(mcp_client(dashboard))
                ok, said = await call(client, "navigate", {"url": dashboard.form})
                assert ok, said
            held = set(runs(dashboard)) - before
            ok, said = await call(late, "navigate", {"url": dashboard.form, "timeout_ms": 1000})
            assert not ok and said.startswith("error budget_exceeded"), said
            assert "queued" in said and "hint:" in said, said
            [waiting] = set(runs(dashboard)) - before - held
            assert run_of(dashboard, waiting)["status"] == "queued"
        # Those sessions ended: a slot frees, and the late session's run opens.
        ok, said = await call(late, "navigate", {"url": dashboard.form})
        assert ok, said
        assert set(runs(dashboard)) - before == held | {waiting}  # still one per session
        assert run_of(dashboard, waiting)["status"] == "running"
    await all_ended(dashboard, held | {waiting})


async def test_a_client_that_goes_away_frees_its_slot_and_a_queued_run_starts(
    dashboard: Dashboard,
) -> None:
    before = set(runs(dashboard))
    async with mcp_client(dashboard) as staying:
        ok, said = await call(staying, "navigate", {"url": dashboard.form})
        assert ok, said
        stays = set(runs(dashboard)) - before
        async with mcp_client(dashboard, end_session=False) as leaving:
            ok, said = await call(leaving, "navigate", {"url": dashboard.form})
            assert ok, said
            [left] = set(runs(dashboard)) - before - stays
            # Every slot is held: a normal run waits.
            queued = new_run(dashboard.page, FORM_TASK, dashboard.form)
            assert run_of(dashboard, queued)["status"] == "queued"
        # The client went away without ending its session: its connections closed.
        ended = await all_ended(dashboard, {left})
        assert ended[left]["status"] == "stopped", ended
        assert "went away" in ended[left]["status_reason"], ended
        await until(dashboard, "the queued run to succeed",
                    lambda: run_of(dashboard, queued)["status"] == "succeeded")  # fmt: skip
        ok, said = await call(staying, "find", {"text": "Name"})  # the other session goes on
        assert ok, said
    await all_ended(dashboard, stays | {left, queued})


async def test_one_person_s_idle_sessions_never_hold_every_slot(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Two slots, one open session a person: a person's second MCP session closes their
    first, idle between calls (its next call says why), and the slot it gave back runs
    another person's conversation at once instead of after the first session's idle time."""
    other = ("ola", "ola-password-3k9q")
    settings = {
        "TABWRIGHT_DEBUG": "1",
        "TABWRIGHT_BLOCK_PRIVATE_ADDRESSES": "0",
        "TABWRIGHT_PLANNER": "rules",
        "TABWRIGHT_CHROMIUM_PATH": CHROMIUM,
        "TABWRIGHT_WORKER_RUNS": str(SLOTS),
        "TABWRIGHT_SESSIONS_PER_USER": "1",
        "TABWRIGHT_SESSION_IDLE_S": "900",
    }
    home = tmp_path_factory.mktemp("mcp-fair")
    with daphne(home, (USERNAME, PASSWORD), settings, more_users=[other]) as (base_url, log):
        page = log_in(base_url, (USERNAME, PASSWORD))
        mine = Dashboard(base_url, [log], api_token(page, "my editor"), page)
        async with mcp_client(mine) as first, mcp_client(mine) as second:
            ok, said = await call(first, "navigate", {"url": mine.form})
            assert ok, said
            [first_run] = runs(mine)
            ok, said = await call(second, "navigate", {"url": mine.form})
            assert ok, said
            await until(mine, "the first session to be closed",
                        lambda: run_of(mine, first_run)["status"] not in LIVE)  # fmt: skip
            closed = run_of(mine, first_run)
            assert closed["status"] == "stopped", closed
            assert "within 1 open session" in closed["status_reason"], closed
            ok, said = await call(first, "snapshot", {})
            assert not ok and said.startswith("error session_ended"), said

            theirs_page = log_in(base_url, other)
            theirs = Dashboard(base_url, [log], api_token(theirs_page, "theirs"), theirs_page)
            run_id = new_run(theirs_page, FORM_TASK, mine.form)
            await until(theirs, "the other person's run to end",
                        lambda: run_of(theirs, run_id)["status"] not in LIVE)  # fmt: skip
            assert run_of(theirs, run_id)["status"] == "succeeded"
            second_run = max(runs(mine))
            assert run_of(mine, second_run)["status"] in LIVE  # it keeps its tab
