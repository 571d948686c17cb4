"""Conversations on the run socket: after the agent's done its tab stays open for the next
message; the session closes on the person's close or past the per-person limit; messages
while the model works are seen or carried on; what can't be taken is refused.  A real
Chromium against pages on 127.0.0.1, the real runner and database; the scripted LLM
server where a model is needed.  (Idle closing and restoring a closed conversation's
page: test_conversation_restore.py.)"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from automation.errors import ActionInvalid
from dashboard.models import Run
from dashboard.runs import files as runfiles
from dashboard.runs.runner import runner
from dashboard.scenarios import services
from tests.dashboard.conftest import OpenSocket, Runs
from tests.dashboard.runs.conversations import (
    FINISH_SIGN_UP,
    NAME_TASK,
    NEVER,
    SIGNED_UP_IN_TWO,
    action,
    expect_error,
    idle_after_name,
    receive_until,
    say,
    start_replay,
    start_watched,
    stored_steps,
)
from tests.dashboard.sockets import (
    ANSWER_S,
    connected_socket,
    load_run,
    of_type,
    one,
    stored_events,
    types,
)
from tests.fakellm import Reply, ScriptedLLMServer

pytestmark = pytest.mark.django_db(transaction=True)


# -- talking after done -------------------------------------------------------------------


async def test_a_message_after_done_goes_on_in_the_same_tab(
    runs: Runs, open_socket: OpenSocket, owner: Any, form_url: str, keep_tabs: Any
) -> None:
    run, comm, first = await idle_after_name(runs, open_socket, owner, form_url)
    assert first[0]["type"] == "run.started" and first[0]["said_before"] is False
    assert {m["stretch"] for m in first} == {1}
    assert first[-1]["idle_s"] == 60
    stored = await load_run(run.pk)
    assert (stored.status, stored.session) == (Run.Status.SUCCEEDED, Run.Session.OPEN)
    first_finished_at = stored.finished_at
    assert first_finished_at is not None
    assert runner.is_live(run.pk) and not runner.is_working(run.pk)
    assert await stored_steps(run.pk) == [(0, "navigate", 1, True), (1, "type", 1, True)]

    await say(comm, FINISH_SIGN_UP)
    # The message is shown at once, then its work starts as a new stretch.
    said = await receive_until(comm, of_type("run.started"))
    assert types(said) == ["user.message", "run.started"]
    assert said[0]["text"] == FINISH_SIGN_UP
    assert said[1]["task"] == FINISH_SIGN_UP
    assert (said[1]["said_before"], said[1]["stretch"], said[1]["start_url"]) == (True, 2, "")
    second = await receive_until(comm, of_type("session.idle"))
    kinds = types(second)
    # The same tab: nothing was closed, restored or opened again.
    assert not {"session.closed", "session.restoring", "session.restored"} & set(kinds)
    assert kinds[-2:] == ["run.finished", "session.idle"]
    assert second[-2]["status"] == "succeeded", second[-2]
    assert {m["stretch"] for m in second} == {2}
    recorded = [m for m in second if m["type"] == "step.recorded"]
    assert [(m["index"], m["action"], m["ok"]) for m in recorded] == [
        (2, "type", True), (3, "click", True), (4, "wait_for", True),
    ]  # fmt: skip
    assert recorded[-1]["args"] == {"text": "Welcome, Ada Lovelace!"}

    assert await stored_steps(run.pk) == SIGNED_UP_IN_TWO
    stored = await load_run(run.pk)
    assert (stored.status, stored.session) == (Run.Status.SUCCEEDED, Run.Session.OPEN)
    assert stored.finished_at is not None and stored.finished_at > first_finished_at
    assert "click Sign up" in stored.summary  # the latest stretch's
    assert runner.is_live(run.pk) and not runner.is_working(run.pk)
    assert runner.idle_count == 1  # /metrics: tabwright_sessions_idle


async def test_stop_ends_the_stretch_not_the_conversation(
    runs: Runs, open_socket: OpenSocket, owner: Any, form_url: str, keep_tabs: Any
) -> None:
    run, comm = await start_watched(runs, open_socket, owner, f"{NAME_TASK}\n{NEVER}", form_url)
    await receive_until(comm, lambda m: m["type"] == "action.started" and m["name"] == "wait_for")
    await comm.send_json_to({"command": "stop"})
    rest = await receive_until(comm, of_type("session.idle"))
    assert types(rest)[-2:] == ["run.finished", "session.idle"], types(rest)
    assert rest[-2]["status"] == "stopped" and rest[-2]["reason"] == "stopped by olive"
    stored = await load_run(run.pk)
    assert (stored.status, stored.session) == (Run.Status.STOPPED, Run.Session.OPEN)
    assert runner.is_live(run.pk) and not runner.is_working(run.pk)
    # Nothing works now: a stop has nothing to stop (and closes nothing).
    await expect_error(comm, {"command": "stop"}, "nothing is working now")
    assert runner.is_live(run.pk)

    await say(comm, FINISH_SIGN_UP)
    second = await receive_until(comm, of_type("session.idle"))
    assert types(second)[:2] == ["user.message", "run.started"]
    assert second[-2]["type"] == "run.finished" and second[-2]["status"] == "succeeded"
    stored = await load_run(run.pk)
    assert (stored.status, stored.status_reason) == (Run.Status.SUCCEEDED, "")
    assert stored.session == Run.Session.OPEN
    # The stopped wait never finished: it is no step; the indexes go on without a gap.
    assert await stored_steps(run.pk) == SIGNED_UP_IN_TWO


# -- closing ------------------------------------------------------------------------------


async def test_close_while_idle_closes_the_session(
    runs: Runs, open_socket: OpenSocket, owner: Any, form_url: str, keep_tabs: Any
) -> None:
    run, comm, _ = await idle_after_name(runs, open_socket, owner, form_url)
    await comm.send_json_to({"command": "close"})
    closed = await receive_until(comm, of_type("session.closed"))
    assert types(closed) == ["session.closed"]
    assert closed[0]["reason"] == "closed by the person"
    await runner.wait_closed(run.pk)
    assert not runner.is_live(run.pk)
    stored = await load_run(run.pk)
    assert (stored.status, stored.session) == (Run.Status.SUCCEEDED, Run.Session.CLOSED)
    assert stored.session_reason == "closed by the person"
    # Closed: there is no session left to close.
    await expect_error(comm, {"command": "close"}, "not live any more")


async def test_close_while_working_stops_the_work_and_closes(
    runs: Runs, open_socket: OpenSocket, owner: Any, form_url: str, keep_tabs: Any
) -> None:
    run, comm = await start_watched(runs, open_socket, owner, NEVER, form_url)
    await receive_until(comm, lambda m: m["type"] == "action.started" and m["name"] == "wait_for")
    await comm.send_json_to({"command": "close"})
    rest = await receive_until(comm, of_type("session.closed"))
    assert types(rest)[-2:] == ["run.finished", "session.closed"], types(rest)
    assert "session.idle" not in types(rest)
    assert rest[-2]["status"] == "stopped" and rest[-2]["reason"] == "closed by the person"
    assert rest[-1]["reason"] == "closed by the person"
    await runner.wait_closed(run.pk)
    assert not runner.is_live(run.pk)
    stored = await load_run(run.pk)
    assert (stored.status, stored.session) == (Run.Status.STOPPED, Run.Session.CLOSED)


@dataclass
class JustFinished:
    """A conversation whose work has just finished, its files (kept once the work ends)
    held until :meth:`release`: what the person does meanwhile lands after the work
    finished, before the session waits for a message."""

    run: Run
    comm: WebsocketCommunicator
    kept: threading.Event

    def release(self) -> None:
        self.kept.set()


@pytest_asyncio.fixture(loop_scope="session")
async def just_finished(
    runs: Runs,
    open_socket: OpenSocket,
    owner: Any,
    form_url: str,
    keep_tabs: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[JustFinished]:
    keeping, kept = threading.Event(), threading.Event()
    keep = runfiles.keep

    def slow_keep(run_id: int, workspace: Path) -> bool:
        keeping.set()
        kept.wait(ANSWER_S)
        return keep(run_id, workspace)

    monkeypatch.setattr(runfiles, "keep", slow_keep)
    run, comm = await start_watched(runs, open_socket, owner, NAME_TASK, form_url)
    finished = await receive_until(comm, of_type("run.finished"))
    assert finished[-1]["status"] == "succeeded", finished[-1]
    assert await asyncio.to_thread(keeping.wait, ANSWER_S), "no files kept"
    yield JustFinished(run, comm, kept)
    kept.set()


async def test_a_close_as_the_work_ends_closes_the_session_then(
    just_finished: JustFinished,
) -> None:
    """The person closes the tab the moment the agent's work has finished, while the run
    still keeps its files (it is not waiting for a message yet): the session closes once
    they are kept, as closed by the person, not when the idle time is up."""
    run = just_finished.run
    await runner.command(run.pk, "close")  # as the page's and the API's close do
    just_finished.release()
    closed = await receive_until(just_finished.comm, of_type("session.closed"))
    assert "session.idle" not in types(closed), types(closed)
    assert closed[-1]["reason"] == "closed by the person"
    async with asyncio.timeout(ANSWER_S):
        await runner.wait_closed(run.pk)
    stored = await load_run(run.pk)
    assert (stored.status, stored.session) == (Run.Status.SUCCEEDED, Run.Session.CLOSED)


async def test_a_message_as_the_work_ends_is_worked_on_at_once(
    just_finished: JustFinished,
) -> None:
    """A message written the moment the work finished (its files still being kept) is the
    next stretch's request, as one written to the waiting conversation is: not left for
    a model that is no longer asked."""
    run = just_finished.run
    await runner.message(run.pk, FINISH_SIGN_UP)  # as the page's and the API's message do
    just_finished.release()
    went_on = await receive_until(just_finished.comm, of_type("session.idle"))
    assert types(went_on)[0] == "user.message", types(went_on)
    started = one(went_on, "run.started")
    assert (started["task"], started["said_before"]) == (FINISH_SIGN_UP, True)
    assert went_on[-2]["type"] == "run.finished" and went_on[-2]["status"] == "succeeded"
    assert await stored_steps(run.pk) == SIGNED_UP_IN_TWO


async def test_a_pause_as_the_work_ends_does_not_pause_the_next_message(
    just_finished: JustFinished,
) -> None:
    """A pause asked the moment the work finished finds nothing left to pause: the
    conversation waits as usual, and the next message's work is not paused for it."""
    run, comm = just_finished.run, just_finished.comm
    await runner.command(run.pk, "pause")
    just_finished.release()
    await receive_until(comm, of_type("session.idle"))
    await say(comm, FINISH_SIGN_UP)
    went_on = await receive_until(comm, of_type("session.idle"))
    assert "run.paused" not in types(went_on), types(went_on)
    assert went_on[-2]["type"] == "run.finished" and went_on[-2]["status"] == "succeeded"


async def test_a_persons_open_conversations_stay_within_the_limit(
    runs: Runs,
    open_socket: OpenSocket,
    owner: Any,
    stranger: Any,
    form_url: str,
    keep_tabs: Any,
) -> None:
    keep_tabs(per_user=1)
    first, first_comm, _ = await idle_after_name(runs, open_socket, owner, form_url)
    theirs, theirs_comm, _ = await idle_after_name(runs, open_socket, stranger, form_url)
    second, second_comm = await start_watched(runs, open_socket, owner, NAME_TASK, form_url)

    # The owner's second conversation closes the first one, idle; the stranger's stays.
    closed = await receive_until(first_comm, of_type("session.closed"))
    assert "within 1 open session (conversations, MCP)" in closed[-1]["reason"], closed[-1]
    second_messages = await receive_until(second_comm, of_type("session.idle"))
    assert second_messages[-2]["status"] == "succeeded"
    await runner.wait_closed(first.pk)
    assert not runner.is_live(first.pk)
    assert runner.is_live(second.pk) and runner.is_live(theirs.pk)
    sessions = [(await load_run(r.pk)).session for r in (first, second, theirs)]
    assert sessions == [Run.Session.CLOSED, Run.Session.OPEN, Run.Session.OPEN]
    assert (await load_run(first.pk)).session_reason == closed[-1]["reason"]
    assert "session.closed" not in [kind for _, kind in await stored_events(theirs.pk)]

    # The stranger's conversation still takes a message in its open tab.
    await say(theirs_comm, FINISH_SIGN_UP)
    rest = await receive_until(theirs_comm, of_type("session.idle"))
    assert "session.restoring" not in types(rest)
    assert rest[-2]["type"] == "run.finished" and rest[-2]["status"] == "succeeded"


# -- messages while the agent works -------------------------------------------------------


async def test_messages_while_the_model_works_are_seen_or_carried_on(
    runs: Runs,
    open_socket: OpenSocket,
    owner: Any,
    form_url: str,
    keep_tabs: Any,
    llm_server: ScriptedLLMServer,
    llm_at: Callable[[str], None],
) -> None:
    llm_at(llm_server.base_url)
    # Each answer waits until the test said what it says while the model thinks.
    thought = [threading.Event() for _ in range(3)]
    llm_server.script(
        Reply(gate=thought[0], text=action('{"action": "wait_for", "text": "Sign up"}')),
        Reply(gate=thought[1], text=action('{"action": "done", "summary": "the form is there"}')),
        Reply(gate=thought[2], text=action('{"action": "done", "summary": "noted the plan"}')),
    )
    run, comm = await start_watched(
        runs, open_socket, owner, "Check the sign-up form.", form_url, planner="openai"
    )
    try:
        await said_while_the_model_thinks(run, comm, llm_server, thought)
    finally:
        for each in thought:
            each.set()


async def said_while_the_model_thinks(
    run: Run, comm: Any, llm_server: ScriptedLLMServer, thought: list[threading.Event]
) -> None:
    await receive_until(comm, lambda m: m["type"] == "llm.waiting" and m["round"] == 1)
    await say(comm, "Mind the email field.")
    # Stored and shown at once, while the model is still answering round 1.
    first = await receive_until(comm, of_type("user.message"))
    assert "llm.message" not in types(first)
    assert first[-1]["text"] == "Mind the email field."
    assert "user.message" in [kind for _, kind in await stored_events(run.pk)]
    thought[0].set()

    # The next request carries it, and the page is told it was seen.
    seen = await receive_until(comm, lambda m: m["type"] == "llm.waiting" and m["round"] == 2)
    assert types(seen)[-2:] == ["user.seen", "llm.waiting"]
    assert (seen[-2]["round"], seen[-2]["count"]) == (2, 1)

    # A message while the model's done is on its way starts the next stretch.
    await say(comm, "Which plan is picked?")
    carried = await receive_until(comm, of_type("user.message"))
    thought[1].set()
    carried += await receive_until(comm, of_type("run.started"))
    kinds = types(carried)
    assert kinds[0] == "user.message" and carried[0]["text"] == "Which plan is picked?"
    assert kinds.index("user.message") < kinds.index("llm.message")
    assert kinds[-2:] == ["run.finished", "run.started"], kinds
    assert carried[-2]["status"] == "succeeded"
    assert "user.seen" not in kinds  # not a reply to the first stretch: its own request
    started = carried[-1]
    assert (started["task"], started["said_before"], started["stretch"]) == (
        "Which plan is picked?", True, 2,
    )  # fmt: skip
    # The run is at work again (the model's answer is held): its status says so.
    stored = await load_run(run.pk)
    assert (stored.status, stored.finished_at) == (Run.Status.RUNNING, None)
    assert runner.is_working(run.pk)
    thought[2].set()

    rest = await receive_until(comm, of_type("session.idle"))
    assert rest[-2]["type"] == "run.finished" and rest[-2]["summary"] == "noted the plan"
    assert len(llm_server.requests) == 3 and llm_server.pending == 0
    assert "Which plan is picked?" in str(llm_server.requests[2]["messages"])
    assert "Which plan is picked?" not in str(llm_server.requests[1]["messages"])
    assert (await load_run(run.pk)).status == Run.Status.SUCCEEDED
    asked = [str(request["messages"]) for request in llm_server.requests]
    assert "The person says: Mind the email field." in asked[1]
    assert "Mind the email field." not in asked[0]


# -- refusals -----------------------------------------------------------------------------


async def test_messages_and_closes_that_cant_be_taken_are_refused(
    runs: Runs,
    open_socket: OpenSocket,
    owner: Any,
    staff: Any,
    form_url: str,
    keep_tabs: Any,
) -> None:
    run, comm, _ = await idle_after_name(runs, open_socket, owner, form_url)
    before = await stored_events(run.pk)
    await expect_error(comm, {"command": "message", "text": "  \n "}, "the message is empty")
    await expect_error(comm, {"command": "message"}, "the message is empty")
    with pytest.raises(ActionInvalid, match="the message is empty"):
        await runner.message(run.pk, " \t")
    watcher = await connected_socket(open_socket, run, staff)
    await receive_until(watcher, of_type("state"))
    await expect_error(watcher, {"command": "message", "text": "click Sign up"}, "run's owner")
    await expect_error(watcher, {"command": "close"}, "only the run's owner")
    assert await stored_events(run.pk) == before
    assert runner.is_live(run.pk) and not runner.is_working(run.pk)

    # A replay is no conversation: it takes no message once over, and has no session.
    run = await load_run(run.pk)  # its request's work ended
    scenario = await sync_to_async(services.scenario_from_run)(owner=owner, run=run)
    replay, replay_comm = await start_replay(runs, open_socket, owner, scenario)
    await receive_until(replay_comm, of_type("run.finished"))
    await runner.wait_closed(replay.pk)
    assert (await load_run(replay.pk)).status == Run.Status.SUCCEEDED
    await expect_error(
        replay_comm, {"command": "message", "text": "type Grace into Name"},
        "a replay takes no messages",
    )  # fmt: skip
    await expect_error(replay_comm, {"command": "close"}, "not live any more")
    assert not runner.is_live(replay.pk)
    assert "user.message" not in [kind for _, kind in await stored_events(replay.pk)]
    replayed = await load_run(replay.pk)
    assert (replayed.status, replayed.session) == (Run.Status.SUCCEEDED, Run.Session.NONE)


async def test_a_live_replay_has_no_session_to_close(
    runs: Runs, open_socket: OpenSocket, owner: Any, form_url: str, keep_tabs: Any
) -> None:
    document = {
        "format": "tabwright.scenario", "version": 1, "name": "Press a button that isn't there",
        "steps": [
            {"action": "navigate", "args": {"url": form_url}},
            {"action": "click", "args": {},
             "identity": {"role": "button", "name": "Delete account", "tag": "button"}},
        ],
    }  # fmt: skip
    scenario = await sync_to_async(services.scenario_import)(owner=owner, data=document)
    replay, comm = await start_replay(runs, open_socket, owner, scenario)
    await receive_until(comm, of_type("run.paused"))  # the button is not there: it asks
    await expect_error(comm, {"command": "close"}, "only a conversation has a session to close")
    assert runner.is_live(replay.pk)
    await comm.send_json_to({"command": "stop"})
    rest = await receive_until(comm, of_type("run.finished"))
    assert rest[-1]["status"] == "stopped"
    assert "session.closed" not in [kind for _, kind in await stored_events(replay.pk)]
