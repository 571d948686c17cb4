"""The live view through the run socket: frames of the run's tab with per-page flow
control, the owner's takeover input recorded as the person's steps, and the round cap's
"continue for N more rounds"."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

import dashboard.worker
from automation.browser.tab import Tab
from dashboard.runs.liveview import FULL, frame_size
from dashboard.runs.runner import runner
from tests.dashboard.conftest import OpenSocket, Runs
from tests.dashboard.runs.test_consumer import paused_on_delete, start_watched, stored_steps
from tests.dashboard.sockets import connected_socket, of_type, receive_until, types
from tests.tasks import AMBIGUOUS_TASK, FORM_TASK
from tests.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)


def run_tab(run_id: int) -> Tab:
    live = runner._live[run_id]
    tab = live.current_tab()
    assert tab is not None
    return tab


async def centre_of(tab: Tab, selector: str) -> dict[str, float]:
    box = await tab.page.locator(selector).bounding_box()
    assert box is not None
    return {"x": box["x"] + box["width"] / 2, "y": box["y"] + box["height"] / 2}


async def frame_showing(
    comm: WebsocketCommunicator, messages: list[dict[str, Any]], url_end: str
) -> dict[str, Any]:
    """Ack frames, as a page does once it drew them, until one shows ``url_end``."""
    seen = [m for m in messages if m["type"] == "frame"]
    while not (seen and seen[-1]["url"].endswith(url_end)):
        if seen:
            await comm.send_json_to({"command": "frame.ack"})
        seen = [(await receive_until(comm, of_type("frame")))[-1]]
    return seen[-1]


async def no_message(comm: WebsocketCommunicator, kind: str, wait_s: float) -> None:
    """Nothing of ``kind`` arrives within ``wait_s`` (other messages may).  Waits with
    receive_nothing: a receive that times out would cancel the consumer."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while (left := deadline - loop.time()) > 0:
        if await comm.receive_nothing(timeout=left, interval=0.02):
            return
        message = await comm.receive_json_from(timeout=1)
        assert message["type"] != kind, message


async def test_takeover_click_is_recorded_as_the_persons_step(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    run, comm, messages = await paused_on_delete(runs, open_socket, owner, fixture_url)
    frame = await frame_showing(comm, messages, "/demo/list.html")
    tab = run_tab(run.pk)
    size = tab.page.viewport_size
    assert size is not None and (frame["width"], frame["height"]) == (size["width"], size["height"])
    assert frame["jpeg"].startswith("/9j/")  # base64 of a JPEG's FF D8 FF

    point = await centre_of(tab, '[data-testid="order-1003"] button.delete')
    await comm.send_json_to({"command": "input", "id": 1, "kind": "click", **point})
    done = await receive_until(comm, of_type("input.result"))
    assert done[-1]["ok"] and done[-1]["id"] == 1, done[-1]
    assert "Order #1003 deleted" in await tab.page.content()

    await comm.send_json_to({"command": "reply", "text": "skip"})  # done by hand
    rest = await receive_until(comm, of_type("run.finished"))
    assert rest[-1]["status"] == "succeeded", rest[-1]
    recorded = [m for m in rest if m["type"] == "step.recorded"]
    assert [(m["action"], m["by"]) for m in recorded][:1] == [("click", "person")]
    steps = await stored_steps(run.pk)
    assert [(s.action, s.by) for s in steps] == [
        ("navigate", "agent"), ("click", "person"), ("wait_for", "agent")
    ]  # fmt: skip
    assert steps[1].identity["name"] == "Delete"
    assert "order-1003" in json.dumps(steps[1].identity), steps[1].identity


async def test_a_click_sent_just_before_resume_is_done_first(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    """The person clicks on the live view and resumes at once (as fast as a page sends
    them): the click reaches the tab before the run takes it back, and is the person's
    step."""
    run, comm, messages = await paused_on_delete(runs, open_socket, owner, fixture_url)
    await frame_showing(comm, messages, "/demo/list.html")
    tab = run_tab(run.pk)
    point = await centre_of(tab, '[data-testid="order-1003"] button.delete')
    await comm.send_json_to({"command": "input", "id": 7, "kind": "click", **point})
    await comm.send_json_to({"command": "resume"})  # not waiting for the click's answer
    done = await receive_until(comm, of_type("input.result"))
    assert done[-1]["ok"] and done[-1]["id"] == 7, done[-1]
    await comm.send_json_to({"command": "stop"})
    rest = await receive_until(comm, of_type("run.finished"))
    recorded = [(m["action"], m["by"]) for m in done + rest if m["type"] == "step.recorded"]
    assert ("click", "person") in recorded, recorded
    steps = await stored_steps(run.pk)
    assert ("click", "person") in [(s.action, s.by) for s in steps], steps


async def test_check_this_records_a_check_of_what_is_under_the_pointer(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    run, comm, _ = await paused_on_delete(runs, open_socket, owner, fixture_url)
    tab = run_tab(run.pk)
    point = await centre_of(tab, '[data-testid="order-1003"] button.delete')
    await comm.send_json_to({"command": "input", "id": 7, "kind": "check", **point})
    done = await receive_until(comm, of_type("input.result"))
    # Five buttons are named "Delete": the check says which row's.
    assert done[-1]["ok"] and done[-1]["done"] == (
        "expect button 'Delete' in row '#1003 Alan Turing $310.00' is on the page"
    )
    assert "Order #1003 deleted" not in await tab.page.content()  # nothing was clicked
    await comm.send_json_to({"command": "input", "id": 8, "kind": "check", "x": -5, "y": 3})
    refused = await receive_until(comm, of_type("input.result"))
    assert not refused[-1]["ok"] and "outside the viewport" in refused[-1]["error"]["message"]
    await comm.send_json_to({"command": "stop"})
    await receive_until(comm, of_type("run.finished"))
    steps = await stored_steps(run.pk)
    checks = [s for s in steps if s.action == "expect"]
    assert [(s.args, s.by) for s in checks] == [({"kind": "visible"}, "person")]
    assert "order-1003" in json.dumps(checks[0].identity)


async def test_a_page_gets_the_next_frame_only_after_drawing_the_last(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    run, comm, messages = await paused_on_delete(runs, open_socket, owner, fixture_url)
    await frame_showing(comm, messages, "/demo/list.html")
    tab = run_tab(run.pk)
    # The page changes, but the last frame was not acked: no frame comes.
    await tab.page.evaluate("document.querySelector('h1').textContent = 'Changed once'")
    await no_message(comm, "frame", 1.5)
    await tab.page.evaluate("document.querySelector('h1').textContent = 'Changed twice'")
    await asyncio.sleep(0.5)
    await comm.send_json_to({"command": "frame.ack"})
    newest = await receive_until(comm, of_type("frame"))
    assert newest[-1]["type"] == "frame"
    # Exactly one frame waited: the newest; nothing more until the next ack.
    await no_message(comm, "frame", 1.0)
    # A second page opening now sees the picture at once, without a change of the page.
    other = await connected_socket(open_socket, run, owner)
    got = await receive_until(other, of_type("frame"))
    assert types(got)[-2:] == ["state", "frame"]


async def test_frames_are_as_large_as_the_widest_page_shows_them(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    run, comm, messages = await paused_on_delete(runs, open_socket, owner, fixture_url)
    view = runner._live[run.pk].view
    assert view.size == FULL  # the page has not said how wide it shows the picture
    await frame_showing(comm, messages, "/demo/list.html")
    await comm.send_json_to({"command": "view", "width": 480})
    await eventually(lambda: view.size == (480, 360))
    # The cast starts again at that size: its next frame is a JPEG 480 wide.
    await comm.send_json_to({"command": "frame.ack"})
    async with asyncio.timeout(60):
        while jpeg_width((await receive_until(comm, of_type("frame")))[-1]) != 480:
            await comm.send_json_to({"command": "frame.ack"})
    # A second page, shown wider (it says so as it connects): sized for it, until it goes.
    other = await connected_socket(open_socket, run, owner, "width=640")
    assert view.size == (640, 480)
    await other.disconnect()
    assert view.size == (480, 360)
    for bad in ("wide", -1, 20_000, True, None):
        await comm.send_json_to({"command": "view", "width": bad})
        refused = await receive_until(comm, of_type("error"))
        assert refused[-1]["message"] == "width must be a whole number from 0 to 16384"
    assert view.size == (480, 360)
    assert frame_size([100]) == (160, 120) and frame_size([9_000, 320]) == FULL
    assert frame_size([320, 0]) == FULL  # one page that has not said: the full size


def jpeg_width(frame: dict[str, Any]) -> int:
    """The width of a frame's JPEG, from its start-of-frame segment."""
    data = base64.b64decode(frame["jpeg"])
    at = 2
    while at + 9 < len(data):
        marker, length = data[at + 1], int.from_bytes(data[at + 2 : at + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2):
            return int.from_bytes(data[at + 7 : at + 9], "big")
        at += 2 + length
    raise AssertionError("no start of frame in the JPEG")


async def test_the_live_view_runs_only_while_a_page_watches(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    run, comm, _ = await paused_on_delete(runs, open_socket, owner, fixture_url)
    view = runner._live[run.pk].view
    assert view.streaming
    await comm.disconnect()
    await asyncio.sleep(0.1)
    assert not view.streaming
    again = await connected_socket(open_socket, run, owner)
    assert view.streaming
    await receive_until(again, of_type("frame"))


async def test_a_page_that_opens_while_the_worker_takes_its_run_gets_the_live_view(
    runs: Runs,
    open_socket: OpenSocket,
    owner: Any,
    fixture_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run page opens in the moment between the worker making the run's live view and
    the run being live (the worker holds its lease meanwhile, a write to the database):
    the page is counted all the same, and its pictures come."""
    taking, go_on = asyncio.Event(), asyncio.Event()
    hold = runner.leases.hold

    async def slow_hold(run_id: int) -> None:
        taking.set()
        await go_on.wait()
        await hold(run_id)

    monkeypatch.setattr(runner.leases, "hold", slow_hold)
    run = await runs.create(owner=owner, task=AMBIGUOUS_TASK,
                            start_url=f"{fixture_url}/demo/list.html")  # fmt: skip
    starting = asyncio.ensure_future(runs.start(run))
    async with asyncio.timeout(60):
        await taking.wait()
    comm = await connected_socket(open_socket, run, owner)
    go_on.set()
    await starting
    messages = await receive_until(comm, of_type("run.paused"))
    assert runner._live[run.pk].view.streaming
    await frame_showing(comm, messages, "/demo/list.html")


async def test_input_is_refused_while_the_agent_has_the_tab_and_for_others(
    runs: Runs, open_socket: OpenSocket, owner: Any, staff: Any, fixture_url: str
) -> None:
    run, comm, _ = await paused_on_delete(runs, open_socket, owner, fixture_url)
    watcher = await connected_socket(open_socket, run, staff)
    await watcher.send_json_to({"command": "input", "kind": "click", "x": 5, "y": 5})
    got = await receive_until(watcher, of_type("error"))
    assert got[-1]["message"] == "only the run's owner can do that"

    for bad, says in [
        ({"kind": "click", "x": -5, "y": 5}, "outside the viewport"),
        ({"kind": "key", "key": "F13"}, "not one the live view sends"),
        ({"kind": "paint"}, "kind must be"),
    ]:
        await comm.send_json_to({"command": "input", **bad})
        answer = (await receive_until(comm, of_type("input.result")))[-1]
        assert not answer["ok"] and answer["error"]["code"] == "action_invalid", answer
        assert says in answer["error"]["message"], answer

    # The agent has the tab again (as once resumed; a resumed run of this page pauses again
    # at once on the same ambiguity, so the flag is set here): an input is refused.
    runner._live[run.pk].control.paused = False
    await comm.send_json_to({"command": "input", "kind": "type", "text": "x"})
    answer = (await receive_until(comm, of_type("input.result")))[-1]
    assert not answer["ok"] and "the agent is using the tab" in answer["error"]["message"]


async def test_the_round_cap_pauses_and_continue_grants_exactly_n_rounds(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str, settings: Any
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ROUND_CAP": 1}
    run, comm = await start_watched(
        runs, open_socket, owner, FORM_TASK, f"{fixture_url}/demo/form.html"
    )
    paused = (await receive_until(comm, of_type("run.paused")))[-1]
    assert paused["reason"] == "round_cap"
    for rounds, says in [(0, "extend by 1 to 1000"), (5000, "extend by 1 to 1000"),
                         ("2", "whole number"), (True, "whole number")]:  # fmt: skip
        await comm.send_json_to({"command": "extend", "rounds": rounds})
        error = (await receive_until(comm, of_type("error")))[-1]
        assert says in error["message"], (rounds, error)
    before = len(await stored_steps(run.pk))
    await comm.send_json_to({"command": "extend", "rounds": 2})
    got = await receive_until(comm, of_type("run.paused"))
    assert "run.resumed" in types(got) and got[-1]["reason"] == "round_cap"
    rounds = sum(1 for m in got if m["type"] == "llm.message")
    assert rounds == 2, types(got)
    assert len(await stored_steps(run.pk)) > before
    await comm.send_json_to({"command": "stop"})
    await receive_until(comm, of_type("run.finished"))


async def test_a_page_on_another_process_keeps_the_live_view_running_while_it_renews(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setattr(dashboard.worker, "VIEWER_TTL_S", 0.5)
    run, comm, messages = await paused_on_delete(runs, open_socket, owner, fixture_url)
    view = runner._live[run.pk].view
    # The pause is told before the paused page's picture may have been drawn: that picture
    # is what a page new to the worker gets first, below.
    await frame_showing(comm, messages, "/demo/list.html")
    await comm.disconnect()  # no page here any more
    await eventually(lambda: not view.streaming)
    # The worker's consumer on its own channel (started now: its queue poll must not
    # claim the run before the page above saw it queued).
    worker = dashboard.worker.start_embedded()
    assert worker is not None
    try:
        await eventually(lambda: runner.serving)
        await _watched_from_elsewhere(run, view)
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)


async def _watched_from_elsewhere(run: Any, view: Any) -> None:

    # What a page's socket on another process sends to the worker's own channel.
    layer = get_channel_layer()
    viewer = await layer.new_channel()
    watch = {"type": "run.watch", "run_id": run.pk, "viewer": viewer, "width": 320}
    await layer.send(runner.leases.holder, watch)
    async with asyncio.timeout(10):  # a page new to the worker gets the latest frame at once
        first = await layer.receive(viewer)
    assert first["type"] == "run.frame" and first["frame"]["url"].endswith("/demo/list.html")
    assert view.streaming and view.size == (320, 240)  # as wide as that page shows it
    # Each renewal moves the page's time on.
    counted_until = runner.viewers.remote_until(run.pk, viewer)
    assert counted_until is not None
    await layer.send(runner.leases.holder, watch)
    await eventually(lambda: (runner.viewers.remote_until(run.pk, viewer) or 0) > counted_until)
    # Not renewed any more (its process died): it stops counting by itself.
    await eventually(lambda: not view.streaming)
    assert runner.viewers.remote_until(run.pk, viewer) is None

    await layer.send(runner.leases.holder, watch)
    async with asyncio.timeout(10):
        again = await layer.receive(viewer)  # new again: the latest frame
    assert again["type"] == "run.frame" and view.streaming
    await layer.send(runner.leases.holder, {"type": "run.unwatch", "run_id": run.pk,
                                            "viewer": viewer})  # fmt: skip
    await eventually(lambda: not view.streaming)  # a page that closed says so
