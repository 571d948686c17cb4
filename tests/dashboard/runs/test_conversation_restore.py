"""A conversation's session closes when idle too long, and a message to a closed
conversation restores its page by replaying the recorded steps, then the agent goes on;
a restore that can't says where, and the conversation waits.  A real Chromium against
pages on 127.0.0.1, the real runner and database; the scripted LLM server where a model
is needed."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from dashboard.models import Run
from dashboard.runs.runner import runner
from tests.dashboard.conftest import OpenSocket, Runs
from tests.dashboard.runs.conversations import (
    FINISH_SIGN_UP,
    SIGNED_UP_IN_TWO,
    action,
    idle_after_name,
    receive_until,
    say,
    start_watched,
    stored_steps,
)
from tests.dashboard.sockets import (
    connected_socket,
    load_run,
    of_type,
    one,
    stored_events,
    types,
)
from tests.fakellm import ScriptedLLMServer

pytestmark = pytest.mark.django_db(transaction=True)


# -- idle time, restore, reload -----------------------------------------------------------


async def test_an_idle_session_closes_and_a_message_restores_the_page(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str, keep_tabs: Any
) -> None:
    keep_tabs(idle_s=1)
    # A start address without a file ending (an app's /login), as most are: the restore
    # opens it as it is (once, it opened /redirect/, which the server answered 404).
    start = f"{fixture_url}/redirect?to=/demo/form.html"
    run, comm, first = await idle_after_name(runs, open_socket, owner, start)
    assert first[-1]["idle_s"] == 1
    closed = await receive_until(comm, of_type("session.closed"))
    assert types(closed) == ["session.closed"]
    assert closed[0]["reason"] == "no message for 1 s"
    await runner.wait_closed(run.pk)
    assert not runner.is_live(run.pk) and not runner.is_working(run.pk)
    stored = await load_run(run.pk)
    assert (stored.status, stored.session) == (Run.Status.SUCCEEDED, Run.Session.CLOSED)
    assert stored.session_reason == "no message for 1 s"

    await say(comm, FINISH_SIGN_UP)
    restore = await receive_until(comm, of_type("session.restored"))
    assert types(restore) == [
        "user.message", "session.restoring", "restore.step", "restore.step", "session.restored",
    ]  # fmt: skip
    assert restore[0]["text"] == FINISH_SIGN_UP
    assert restore[1]["steps"] == 2
    assert [(m["index"], m["action"], m["status"]) for m in restore[2:4]] == [
        (0, "navigate", "passed"), (1, "type", "passed"),
    ]  # fmt: skip
    assert "Name" in restore[3]["what"]
    assert {k: restore[4][k] for k in ("ok", "done", "total", "reason")} == {
        "ok": True, "done": 2, "total": 2, "reason": "",
    }  # fmt: skip
    second = await receive_until(comm, of_type("session.idle"))
    assert second[0]["type"] == "run.started", types(second)
    assert (second[0]["said_before"], second[0]["stretch"]) == (True, 2)
    assert second[0]["task"] == FINISH_SIGN_UP
    # It greets the name typed in stretch 1: the restore typed it again.
    assert second[-2]["type"] == "run.finished" and second[-2]["status"] == "succeeded"
    recorded = [m for m in second if m["type"] == "step.recorded"]
    assert [(m["index"], m["action"]) for m in recorded] == [
        (2, "type"), (3, "click"), (4, "wait_for"),
    ]  # fmt: skip
    # The restore's steps are not the run's: only the two stretches' own are stored.
    assert await stored_steps(run.pk) == SIGNED_UP_IN_TWO
    stored = await load_run(run.pk)
    assert (stored.status, stored.session) == (Run.Status.SUCCEEDED, Run.Session.OPEN)
    await runner.wait_closed(run.pk)  # idle again for 1 s, then closed

    # A page opened now (a reload) reads every stored event, in order, stretches and all.
    rows = await stored_events(run.pk)
    reloaded = await connected_socket(open_socket, run, owner, "after=0")
    backlog = await receive_until(reloaded, of_type("state"))
    state, backlog = backlog[-1], backlog[:-1]
    assert [(m["seq"], m["type"]) for m in backlog] == rows
    assert [m["seq"] for m in backlog] == list(range(1, len(rows) + 1))
    assert types(backlog).count("run.started") == 2
    assert types(backlog).count("session.closed") == 2
    stretch = 0
    for m in backlog:  # each event belongs to the stretch begun last before it
        stretch += m["type"] == "run.started"
        assert m["stretch"] == max(1, stretch), m
    assert [m["stretch"] for m in backlog if m["type"] == "step.recorded"] == [1, 1, 2, 2, 2]
    assert backlog[-1]["type"] == "session.closed"
    assert {k: state[k] for k in ("status", "live", "working", "session")} == {
        "status": "succeeded", "live": False, "working": False, "session": "closed",
    }  # fmt: skip


# -- a restore that can't -----------------------------------------------------------------


@dataclass
class Site:
    folder: Path
    url: str

    def page(self, body: str) -> None:
        (self.folder / "orders.html").write_text(
            f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<link rel="icon" href="data:,"><title>Shop</title></head>'
            f"<body><main>{body}</main></body></html>"
        )


class _FreshHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")  # the page changes under the test
        super().end_headers()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    """A page in a folder of the test's own, served on 127.0.0.1, that the test changes."""
    folder = tmp_path / "site"
    folder.mkdir()
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_FreshHandler, directory=str(folder))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Site(folder, f"http://127.0.0.1:{server.server_address[1]}/orders.html")
    server.shutdown()
    server.server_close()


SEND_ORDER = (
    "<h1>Orders</h1><button onclick=\"document.getElementById('out').textContent='Order sent'\">"
    'Send order</button><p role="status" id="out"></p>'
)


async def test_a_restore_that_cant_says_where_and_the_conversation_waits(
    runs: Runs, open_socket: OpenSocket, owner: Any, site: Site, keep_tabs: Any
) -> None:
    site.page(SEND_ORDER)
    run, comm = await start_watched(
        runs, open_socket, owner, "click Send order\nwait for Order sent", site.url
    )
    first = await receive_until(comm, of_type("session.idle"))
    assert first[-2]["status"] == "succeeded", first[-2]
    await comm.send_json_to({"command": "close"})
    await receive_until(comm, of_type("session.closed"))
    await runner.wait_closed(run.pk)
    site.page("<h1>Orders</h1><p>Orders are sent from the new desk now.</p>")  # no button

    await say(comm, "click Send order")
    paused = await receive_until(comm, of_type("run.paused"))
    assert types(paused) == [
        "user.message", "session.restoring", "restore.step", "restore.step", "run.paused",
    ]  # fmt: skip
    assert paused[1]["steps"] == 3
    assert [(m["action"], m["status"]) for m in paused[2:4]] == [
        ("navigate", "passed"), ("click", "needs_person"),
    ]  # fmt: skip
    assert paused[4]["reason"] == "needs_person"
    assert "step 1 (click button 'Send order')" in paused[4]["detail"]
    # The restore asks the person (do the step, skip it, or stop), as any replay does.
    assert (await load_run(run.pk)).status == Run.Status.PAUSED
    # The person gives up on the restore: it ends there, short of the message's work.
    await comm.send_json_to({"command": "stop"})
    ended = await receive_until(comm, of_type("session.idle"))
    assert "run.started" not in types(ended)
    restored = one(ended, "session.restored")
    assert (restored["ok"], restored["done"], restored["total"]) == (False, 1, 3)
    assert "step 1 (click button 'Send order')" in restored["reason"], restored
    assert runner.is_live(run.pk) and not runner.is_working(run.pk)
    stored = await load_run(run.pk)
    assert stored.session == Run.Session.OPEN
    # Not "paused" any more: nobody is asked now; the message's work was stopped short.
    assert stored.status == Run.Status.STOPPED, (stored.status, stored.status_reason)
    assert stored.status_reason == f"the page was not restored: {restored['reason']}"
    assert await stored_steps(run.pk) == [
        (0, "navigate", 1, True), (1, "click", 1, True), (2, "wait_for", 1, True),
    ]  # fmt: skip

    # The next message goes on from the page the restore left: the new one.
    await say(comm, "wait for sent from the new desk")
    second = await receive_until(comm, of_type("session.idle"))
    assert types(second)[:2] == ["user.message", "run.started"]
    assert (second[1]["said_before"], second[1]["stretch"]) == (True, 2)
    assert second[-2]["type"] == "run.finished" and second[-2]["status"] == "succeeded"
    assert (await stored_steps(run.pk))[3:] == [(3, "wait_for", 2, True)]
    assert (await load_run(run.pk)).status == Run.Status.SUCCEEDED


SIGN_IN = (
    '<h1>Shop</h1><label>Password <input type="password" name="password"></label> '
    "<button onclick=\"document.getElementById('out').textContent='Signed in'\">Sign in"
    '</button><p role="status" id="out"></p>'
)


async def test_a_restore_asks_the_person_for_a_password_the_run_typed(
    runs: Runs, open_socket: OpenSocket, owner: Any, site: Site, keep_tabs: Any
) -> None:
    """The run typed a password as it is: it is kept only as the secret named after the
    field, which its owner was granted no value of.  The restore replays the steps before
    it and asks the person to type it there, instead of refusing at step 0."""
    site.page(SIGN_IN)
    run, comm = await start_watched(
        runs, open_socket, owner, "type hunter2 into Password\nclick Sign in", site.url
    )
    first = await receive_until(comm, of_type("session.idle"))
    assert first[-2]["status"] == "succeeded", first[-2]
    assert "hunter2" not in str(await stored_steps(run.pk))
    await comm.send_json_to({"command": "close"})
    await receive_until(comm, of_type("session.closed"))
    await runner.wait_closed(run.pk)

    await say(comm, "click Sign in")
    paused = await receive_until(comm, of_type("run.paused"))
    assert [(m["action"], m["status"]) for m in paused if m["type"] == "restore.step"] == [
        ("navigate", "passed"), ("type", "needs_person"),
    ]  # fmt: skip
    assert paused[-1]["reason"] == "needs_person"
    assert "it types the secret PASSWORD, which this run can't type" in paused[-1]["detail"]
    assert (await load_run(run.pk)).status == Run.Status.PAUSED
    await comm.send_json_to({"command": "stop"})
    await receive_until(comm, of_type("session.idle"))


async def test_a_message_to_a_paused_restore_goes_on_from_that_page(
    runs: Runs, open_socket: OpenSocket, owner: Any, site: Site, keep_tabs: Any
) -> None:
    """A restore that waits for the person, answered with something other than skip or
    retry: the restore ends there and the agent goes on with that message."""
    site.page(SEND_ORDER)
    run, comm = await start_watched(
        runs, open_socket, owner, "click Send order\nwait for Order sent", site.url
    )
    await receive_until(comm, of_type("session.idle"))
    await comm.send_json_to({"command": "close"})
    await receive_until(comm, of_type("session.closed"))
    await runner.wait_closed(run.pk)
    site.page("<h1>Orders</h1><p>Orders are sent from the new desk now.</p>")

    await say(comm, "click Send order")
    await receive_until(comm, of_type("run.paused"))
    await say(comm, "wait for sent from the new desk")
    went_on = await receive_until(comm, of_type("session.idle"))
    assert types(went_on)[:3] == ["user.message", "session.restored", "run.started"], went_on
    restored = went_on[1]
    assert (restored["ok"], restored["stopped"], restored["done"]) == (False, True, 1)
    assert "step 1 (click button 'Send order'): the person went on" in restored["reason"]
    started = one(went_on, "run.started")
    assert (started["task"], started["said_before"]) == ("wait for sent from the new desk", True)
    assert went_on[-2]["type"] == "run.finished" and went_on[-2]["status"] == "succeeded"
    assert (await stored_steps(run.pk))[-1] == (3, "wait_for", 2, True)


async def test_a_restore_that_fails_tells_the_model_with_the_next_message(
    runs: Runs,
    open_socket: OpenSocket,
    owner: Any,
    site: Site,
    keep_tabs: Any,
    settings: Any,
    llm_server: ScriptedLLMServer,
    llm_at: Callable[[str], None],
) -> None:
    llm_at(llm_server.base_url)
    # The restore's wait for the heading that is gone fails after this long.
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ACTION_TIMEOUT_MS": 2_000}
    llm_server.script(
        action('{"action": "wait_for", "text": "Orders"}'),
        action('{"action": "done", "summary": "the orders page is open"}'),
        action('{"action": "done", "summary": "the orders moved to the desk"}'),
    )
    site.page(SEND_ORDER)
    run, comm = await start_watched(
        runs, open_socket, owner, "Open the orders.", site.url, planner="openai"
    )
    first = await receive_until(comm, of_type("session.idle"))
    assert first[-2]["status"] == "succeeded", first[-2]
    await comm.send_json_to({"command": "close"})
    await receive_until(comm, of_type("session.closed"))
    await runner.wait_closed(run.pk)
    site.page("<h1>Desk</h1><p>Everything is sent from the new desk now.</p>")

    await say(comm, "Send the order.")
    # The recorded wait fails on its own: no person is asked, the restore ends there.
    ended = await receive_until(comm, of_type("session.idle"))
    assert types(ended) == [
        "user.message", "session.restoring", "restore.step", "restore.step",
        "session.restored", "session.idle",
    ]  # fmt: skip
    assert [(m["action"], m["status"]) for m in ended[2:4]] == [
        ("navigate", "passed"), ("wait_for", "failed"),
    ]  # fmt: skip
    restored = ended[4]
    assert (restored["ok"], restored["done"], restored["total"]) == (False, 1, 2)
    assert restored["reason"].startswith("step 1 (wait_for): "), restored
    assert len(llm_server.requests) == 2  # the model was not asked: the message waits
    stored = await load_run(run.pk)
    assert (stored.status, stored.session) == (Run.Status.FAILED, Run.Session.OPEN)
    assert stored.status_reason == f"the page was not restored: {restored['reason']}"
    assert runner.is_live(run.pk) and not runner.is_working(run.pk)

    await say(comm, "Where do orders go now?")
    second = await receive_until(comm, of_type("session.idle"))
    assert types(second)[:2] == ["user.message", "run.started"]
    assert (second[1]["task"], second[1]["said_before"], second[1]["stretch"]) == (
        "Where do orders go now?", True, 2,
    )  # fmt: skip
    assert second[-2]["status"] == "succeeded" and "desk" in second[-2]["summary"]
    # The model learns how the page was left and what was asked before.
    asked = str(llm_server.requests[2]["messages"])
    assert "stopped after 1: step 1 (wait_for)" in asked
    assert "Before that, the person had asked: Send the order." in asked
    assert "Where do orders go now?" in asked
    assert "Open the orders." in asked and "the orders page is open" in asked
    assert llm_server.pending == 0
    assert (await load_run(run.pk)).status == Run.Status.SUCCEEDED
