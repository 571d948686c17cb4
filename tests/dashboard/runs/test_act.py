"""A person's action on a paused run, over the run socket and over HTTP: the request's
timeout_ms is the budget down to the script in the page, and a dropped socket stops it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from dashboard.models import Run
from dashboard.runs.runner import runner
from tests.automation.browser.test_evaluate import terminations_sent
from tests.dashboard.conftest import OpenSocket, Runs
from tests.dashboard.runs.test_consumer import (
    connected_socket,
    of_type,
    paused_on_delete,
    receive_until,
    stored_events,
)

pytestmark = pytest.mark.django_db(transaction=True)

# How far past its budget an act may answer here: a bound on a hang, not a speed (bench.hang
# measures how close to its budget a hung script is stopped).
SLACK_MS = 2_000


@pytest.fixture
def evaluate_on(settings: Any) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALLOW_EVALUATE": True}


def is_result(act_id: str) -> Any:
    return lambda m: m["type"] == "act.result" and m["id"] == act_id


async def send_evaluate(comm: Any, act_id: str, expression: str, **extra: Any) -> None:
    await comm.send_json_to(
        {"command": "act", "id": act_id, "action": "evaluate",
         "args": {"expression": expression}, **extra}
    )  # fmt: skip


async def evaluate_over(comm: Any, act_id: str, expression: str, **extra: Any) -> dict[str, Any]:
    """Send an evaluate act and return its act.result."""
    await send_evaluate(comm, act_id, expression, **extra)
    return (await receive_until(comm, is_result(act_id)))[-1]


async def test_an_act_over_the_socket_runs_on_the_paused_runs_tab(
    evaluate_on: None, runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    run, comm, _ = await paused_on_delete(runs, open_socket, owner, fixture_url)
    await send_evaluate(comm, "a1", "document.querySelectorAll('button').length")
    got = await receive_until(comm, is_result("a1"))
    assert got[-1]["ok"] is True and int(got[-1]["result"]) > 5
    evaluated = [m for m in got if m["type"] == "evaluate.finished"]
    evaluated += await receive_until(comm, of_type("evaluate.finished")) if not evaluated else []
    assert evaluated[-1]["route"] == "cdp" and evaluated[-1]["step_index"] == -1
    assert (await stored_events(run.pk))[-1][1] == "evaluate.finished"


async def test_a_hung_act_returns_within_its_timeout_and_the_tab_still_works(
    evaluate_on: None, runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    _run, comm, _ = await paused_on_delete(runs, open_socket, owner, fixture_url)
    sent = time.monotonic()
    hung = await evaluate_over(comm, "hang", "while (true) {}", timeout_ms=800)
    assert (time.monotonic() - sent) * 1000 < 800 + SLACK_MS
    assert hung["ok"] is False and hung["error"]["code"] == "evaluate_timeout"
    assert (await evaluate_over(comm, "next", "1 + 1"))["result"] == "2"


@contextlib.asynccontextmanager
async def spinning(run_id: int, within_s: float = 30) -> AsyncIterator[str]:
    """Yields the line a script should log just before it spins; on leaving, waits until
    the run's page logged it (the console message arrives while the page is busy, so no
    guess from a slow answer is needed)."""
    tab = runner._live[run_id].current_tab()
    assert tab is not None
    started: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def on_console(message: Any) -> None:
        if message.text == "spinning now" and not started.done():
            started.set_result(None)

    tab.page.on("console", on_console)
    try:
        yield "console.log('spinning now');"
        async with asyncio.timeout(within_s):
            await started
    finally:
        tab.page.remove_listener("console", on_console)


async def test_a_dropped_socket_cancels_the_act_and_stops_the_script(
    evaluate_on: None, runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    run, comm, _ = await paused_on_delete(runs, open_socket, owner, fixture_url)
    stopped = terminations_sent()
    async with spinning(run.pk) as log_line:
        await send_evaluate(comm, "long", log_line + "while (true) {}", timeout_ms=60_000)
    time_sent = time.monotonic()
    await comm.disconnect()
    # The socket's end stops the script: it does not wait out the act's 60 s.
    assert time.monotonic() - time_sent < 30
    # Stopped once (the page's answer to it may come after the terminate's short wait, so
    # confirmed or not: the free page below is what shows it stopped).
    assert terminations_sent() == stopped + 1
    # A new socket finds the page free again.
    again = await connected_socket(open_socket, run, owner)
    await receive_until(again, of_type("state"))
    assert (await evaluate_over(again, "after", "'free'"))["result"] == '"free"'


async def test_act_is_refused_when_it_should_be(
    runs: Runs, open_socket: OpenSocket, owner: Any, stranger: Any, fixture_url: str
) -> None:
    run, comm, _ = await paused_on_delete(runs, open_socket, owner, fixture_url)
    cases = [
        ({"action": "evaluate", "args": {"expression": "1"}}, "turned off"),  # not enabled
        ({"args": {}}, 'needs "action"'),
        ({"action": "click", "args": []}, '"args" must be an object'),
        ({"action": "click", "args": {}, "timeout_ms": 0}, "timeout_ms"),
        ({"action": "fly", "args": {}}, "unknown action"),
        ({"action": "click", "args": {"ref": "e999"}}, "unknown ref"),
    ]
    for n, (payload, expected) in enumerate(cases):
        await comm.send_json_to({"command": "act", "id": n, **payload})
        answer = (await receive_until(comm, of_type("act.result")))[-1]
        assert answer["id"] == n and answer["ok"] is False
        assert expected in answer["error"]["message"], answer
    # Someone else's socket may watch but not act.
    stranger.is_staff = True  # staff may watch someone's run
    await sync_to_async(stranger.save)()
    other = await connected_socket(open_socket, run, stranger)
    await receive_until(other, of_type("state"))
    await other.send_json_to({"command": "act", "id": "x", "action": "back", "args": {}})
    refused = (await receive_until(other, of_type("error")))[-1]
    assert refused["message"] == "only the run's owner can do that"
    await runner.command(run.pk, "stop")
    await runner.wait(run.pk)
    await comm.send_json_to({"command": "act", "id": "late", "action": "click", "args": {}})
    answer = (await receive_until(comm, is_result("late")))[-1]
    assert answer["error"]["code"] == "not_live"


# -- HTTP ---------------------------------------------------------------------------------


async def post(client: AsyncClient, run: Run, body: Any, **extra: Any) -> Any:
    data = body if isinstance(body, bytes) else json.dumps(body)
    return await client.post(
        f"/runs/{run.pk}/act", data=data, content_type="application/json", **extra
    )


async def test_http_act_takes_its_budget_from_the_request(
    evaluate_on: None, runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    run, _comm, _ = await paused_on_delete(runs, open_socket, owner, fixture_url)
    client = AsyncClient()
    await client.aforce_login(owner)
    reply = await post(
        client, run, {"action": "evaluate", "args": {"expression": "document.title"}}
    )
    assert reply.status_code == 200 and reply.json() == {"ok": True, "result": '"Orders"'}
    macro = {"steps": [{"type": "read_page"}, {"type": "wait_for", "text": "Orders"}],
             "return_mode": "final", "timeout_ms": 5_000}  # fmt: skip
    reply = await post(client, run, macro)
    assert reply.status_code == 200 and reply.json()["ok"] is True
    assert reply.json()["result"].startswith("0 read_page: ok")
    started = time.monotonic()
    reply = await post(
        client, run,
        {"action": "evaluate", "args": {"expression": "new Promise(() => {})"}, "timeout_ms": 700},
    )  # fmt: skip
    assert (time.monotonic() - started) * 1000 < 700 + SLACK_MS
    assert reply.status_code == 200 and reply.json()["error"]["code"] == "evaluate_timeout"


async def test_macro_answers_carry_each_step_over_http_and_the_socket(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    run, comm, _ = await paused_on_delete(runs, open_socket, owner, fixture_url)
    client = AsyncClient()
    await client.aforce_login(owner)
    page = (await post(client, run, {"action": "read_page"})).json()
    assert page["ok"] is True and page["result"].startswith("Page: 'Orders'")
    macro = {"steps": [{"type": "wait_for", "text": "Orders"}, {"type": "click", "ref": "e999"},
                       {"type": "read_page"}]}  # fmt: skip
    reply = await post(client, run, macro)
    answer = reply.json()
    assert reply.status_code == 200 and answer["ok"] is False and answer["failed_index"] == 1
    assert answer["error"]["code"] == "step_failed"
    assert [(s["type"], s["ok"], s["skipped"]) for s in answer["steps"]] == [
        ("wait_for", True, False), ("click", False, False), ("read_page", False, True)
    ]  # fmt: skip
    await comm.send_json_to({"command": "act", "id": "m1", **macro})
    over_socket = (await receive_until(comm, is_result("m1")))[-1]
    assert over_socket["failed_index"] == 1 and len(over_socket["steps"]) == 3


async def test_http_act_refusals(
    runs: Runs, open_socket: OpenSocket, owner: Any, stranger: Any, fixture_url: str
) -> None:
    run, _comm, _ = await paused_on_delete(runs, open_socket, owner, fixture_url)
    anonymous = AsyncClient()
    assert (await post(anonymous, run, {"action": "back"})).status_code == 401
    other = AsyncClient()
    await other.aforce_login(stranger)
    assert (await post(other, run, {"action": "back"})).status_code == 404
    client = AsyncClient()
    await client.aforce_login(owner)
    assert (await client.get(f"/runs/{run.pk}/act")).status_code == 405
    assert (await post(client, run, b"{not json")).status_code == 400
    assert (await post(client, run, b'"x"' + b" " * 300_000)).status_code == 413
    bad = await post(client, run, {"action": "evaluate", "args": {"expression": "1"}})
    assert bad.status_code == 400 and "turned off" in bad.json()["error"]["message"]
    # Each request asks again whose the run is: given to someone else, it is theirs at once.
    await Run.objects.filter(pk=run.pk).aupdate(owner=stranger)
    assert (await post(client, run, {"action": "read_page"})).status_code == 404
    assert (await post(other, run, {"action": "read_page"})).json()["ok"] is True
    await Run.objects.filter(pk=run.pk).aupdate(owner=owner)
    await client.alogout()
    assert (await post(client, run, {"action": "read_page"})).status_code == 401
    await client.aforce_login(owner)
    await runner.command(run.pk, "stop")
    await runner.wait(run.pk)
    gone = await post(client, run, {"action": "back"})
    assert gone.status_code == 409 and gone.json()["error"]["code"] == "not_live"
