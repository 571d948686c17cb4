"""The run socket inside one process: consumer, channel layer, runner, a real Chromium
against the fixture pages, and the scripted LLM server for LLM-backed runs."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from dashboard.models import Run, RunEvent, Step
from dashboard.runs import consumers, services
from dashboard.runs.consumers import (
    CLOSE_FORBIDDEN,
    CLOSE_TOO_MANY,
    MAX_REPLY_CHARS,
    RunPageConsumer,
)
from dashboard.runs.runner import runner
from tests.dashboard.conftest import OpenSocket, Runs
from tests.dashboard.sockets import (
    ANSWER_S,
    connected_socket,
    load_run,
    of_type,
    receive_until,
    stored_events,
    types,
)
from tests.fakellm import ScriptedLLMServer
from tests.net import free_port
from tests.tasks import AMBIGUOUS_TASK, FORM_TASK

pytestmark = pytest.mark.django_db(transaction=True)


UNSTORED = frozenset({"llm.token", "frame", "files"})  # relayed live, never stored


# -- helpers ------------------------------------------------------------------------------


@database_sync_to_async
def stored_steps(run_id: int) -> list[Step]:
    return list(Step.objects.filter(run_id=run_id).order_by("index"))


async def expect_error(
    comm: WebsocketCommunicator, payload: Any, contains: str, *, raw: bool = False
) -> None:
    """Send ``payload`` (as JSON, or as a raw text frame) and expect one error back."""
    if raw:
        await comm.send_to(text_data=payload)
    else:
        await comm.send_json_to(payload)
    message = await comm.receive_json_from(timeout=ANSWER_S)
    assert message["type"] == "error", message
    assert contains in message["message"], message


async def start_watched(
    runs: Runs, open_socket: OpenSocket, owner: Any, task: str, start_url: str, **kw: Any
) -> tuple[Run, WebsocketCommunicator]:
    """Create a run, open its socket, then start it: no live event can be missed."""
    run = await runs.create(owner=owner, task=task, start_url=start_url, **kw)
    comm = await connected_socket(open_socket, run, owner)
    state = await comm.receive_json_from(timeout=ANSWER_S)
    assert state == {"type": "state", "status": "queued", "reason": "", "live": False,
                     "working": False, "worker": "", "session": "", "session_reason": "",
                     "queue": 1}  # fmt: skip
    await runs.start(run)
    return run, comm


async def paused_on_delete(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> tuple[Run, WebsocketCommunicator, list[dict[str, Any]]]:
    """A live run on list.html, paused by the ambiguous "click Delete"."""
    run, comm = await start_watched(
        runs, open_socket, owner, AMBIGUOUS_TASK, f"{fixture_url}/demo/list.html"
    )
    messages = await receive_until(comm, of_type("run.paused"))
    return run, comm, messages


# -- who may connect, what a page gets on connect -----------------------------------------


@pytest.fixture
def quiet_run(owner: Any) -> Run:
    """A stored, paused run with three events that is not live."""
    run = services.run_create(owner=owner, task="click OK", start_url="", planner="rules")
    # Stored out of order: the socket must replay by seq, not by insertion.
    for seq, kind in [(2, "llm.message"), (1, "run.started"), (3, "run.paused")]:
        services.run_event_append(run_id=run.pk, seq=seq, type=kind, data={"type": kind, "n": seq})
    services.run_set_status(run_id=run.pk, status=Run.Status.PAUSED, reason="need_help: which?")
    return run


async def test_anonymous_and_other_users_are_refused(
    open_socket: OpenSocket, quiet_run: Run, stranger: Any
) -> None:
    for user in (None, AnonymousUser(), stranger):
        comm, connected, code = await open_socket(quiet_run.pk, user)
        assert (connected, code) == (False, CLOSE_FORBIDDEN), user
        assert await comm.receive_nothing(timeout=0.05)


async def test_unknown_run_is_refused_like_a_foreign_one(
    open_socket: OpenSocket, staff: Any
) -> None:
    _comm, connected, code = await open_socket(999_999, staff)
    assert (connected, code) == (False, CLOSE_FORBIDDEN)


async def test_one_person_s_sockets_are_bounded_and_a_closed_one_frees_its_place(
    open_socket: OpenSocket, quiet_run: Run, owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consumers, "MAX_SOCKETS_PER_USER", 2)
    first = await connected_socket(open_socket, quiet_run, owner)
    await connected_socket(open_socket, quiet_run, owner)
    _comm, connected, code = await open_socket(quiet_run.pk, owner)
    assert (connected, code) == (False, CLOSE_TOO_MANY)
    await first.disconnect()
    await connected_socket(open_socket, quiet_run, owner)


async def test_a_socket_past_the_persons_cap_is_refused_before_any_database_work(
    open_socket: OpenSocket, quiet_run: Run, owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script opening a person's run page over and over costs no query past the cap
    (each would wait for a thread, and hold it, before being refused)."""
    monkeypatch.setattr(consumers, "MAX_SOCKETS_PER_USER", 2)
    for _ in range(2):
        await receive_until(await connected_socket(open_socket, quiet_run, owner), of_type("state"))
    calls: list[Callable[..., Any]] = []

    def counted(fn: Callable[..., Any]) -> Any:
        calls.append(fn)
        return database_sync_to_async(fn)

    monkeypatch.setattr(consumers, "database_sync_to_async", counted)
    _comm, connected, code = await open_socket(quiet_run.pk, owner)
    assert (connected, code) == (False, CLOSE_TOO_MANY)
    assert calls == []


async def test_a_socket_refused_the_run_gives_its_place_back(
    open_socket: OpenSocket, quiet_run: Run, stranger: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A place is taken before the run is looked at; refused, the socket gives it back."""
    monkeypatch.setattr(consumers, "MAX_SOCKETS_PER_USER", 2)
    for _ in range(3):
        _comm, connected, code = await open_socket(quiet_run.pk, stranger)
        assert (connected, code) == (False, CLOSE_FORBIDDEN)


async def test_owner_gets_stored_events_in_seq_order_then_state(
    open_socket: OpenSocket, quiet_run: Run, owner: Any
) -> None:
    comm = await connected_socket(open_socket, quiet_run, owner)
    messages = [await comm.receive_json_from(timeout=ANSWER_S) for _ in range(4)]
    assert [(m.get("seq"), m["type"]) for m in messages] == [
        (1, "run.started"),
        (2, "llm.message"),
        (3, "run.paused"),
        (None, "state"),
    ]
    assert messages[0]["n"] == 1
    assert messages[3] == {
        "working": False,
        "worker": "",  # no worker holds it
        "session": "",
        "session_reason": "",
        "queue": 0,  # not queued
        "type": "state",
        "status": "paused",
        "reason": "need_help: which?",
        "live": False,
    }
    assert await comm.receive_nothing(timeout=0.05)


@pytest.mark.parametrize(
    ("query", "seqs"),
    [("after=2", [3]), ("after=3", []), ("after=-5", [1, 2, 3]), ("after=x", [1, 2, 3])],
)
async def test_after_replays_only_later_events(
    open_socket: OpenSocket, quiet_run: Run, owner: Any, query: str, seqs: list[int]
) -> None:
    comm = await connected_socket(open_socket, quiet_run, owner, query)
    messages = await receive_until(comm, of_type("state"))
    assert [m["seq"] for m in messages[:-1]] == seqs


class HeldBacklog:
    """A socket's reading of its backlog, held before the first event past its first
    page is made into text (on the socket's thread) until ``release``; ``made``: the
    stored events made into text; ``consumers``: the socket's consumer."""

    def __init__(self) -> None:
        self.made = 0
        self.release = threading.Event()
        self.consumers: list[RunPageConsumer] = []

    @contextlib.contextmanager
    def installed(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldBacklog]:
        fitted = RunPageConsumer._fitted

        def held(consumer: RunPageConsumer, content: Any) -> tuple[str | None, bool]:
            if isinstance(content, dict) and "seq" in content:  # a stored event
                self.made += 1
                if self.made == 1:
                    self.consumers.append(consumer)
                if self.made == consumers.BACKLOG_PAGE_EVENTS + 1:
                    self.release.wait(ANSWER_S)
            return fitted(consumer, content)

        monkeypatch.setattr(RunPageConsumer, "_fitted", held)
        try:
            yield self
        finally:
            self.release.set()  # a failing test leaves no thread waiting


def long_backlog(run: Run, pages: int) -> list[RunEvent]:
    """``pages`` pages of events after the quiet run's three, stored."""
    rows = [RunEvent(run_id=run.pk, seq=seq, type="llm.message",
                     data={"type": "llm.message", "text": f"reply {seq}"})
            for seq in range(4, 4 + pages * consumers.BACKLOG_PAGE_EVENTS)]  # fmt: skip
    return RunEvent.objects.bulk_create(rows)


async def test_a_long_backlog_arrives_a_page_at_a_time_whole_and_in_order(
    open_socket: OpenSocket, quiet_run: Run, owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long conversation's stored events reach a page that connects, each once, in
    order, from where it asks: a page of them sent before the next is read, so that no
    read holds its thread (nor the events in memory) for the whole run."""
    last = (await database_sync_to_async(long_backlog)(quiet_run, 5))[-1].seq
    page = consumers.BACKLOG_PAGE_EVENTS
    with HeldBacklog().installed(monkeypatch) as reading:
        comm = await connected_socket(open_socket, quiet_run, owner, "after=2")
        async with asyncio.timeout(ANSWER_S):  # the whole run read first: it never comes
            first = [await comm.receive_json_from(timeout=ANSWER_S) for _ in range(page)]
        assert [m["seq"] for m in first] == list(range(3, 3 + page))
        reading.release.set()
        messages = first + await receive_until(comm, of_type("state"))
    assert [m["seq"] for m in messages[:-1]] == list(range(3, last + 1))
    assert messages[-2] == {"type": "llm.message", "text": f"reply {last}", "seq": last}


async def test_a_page_closed_mid_backlog_stops_its_reading(
    open_socket: OpenSocket, quiet_run: Run, owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = len(await database_sync_to_async(long_backlog)(quiet_run, 5))
    page = consumers.BACKLOG_PAGE_EVENTS
    with HeldBacklog().installed(monkeypatch) as reading:
        comm = await connected_socket(open_socket, quiet_run, owner)
        async with asyncio.timeout(ANSWER_S):
            for _ in range(page):
                await comm.receive_json_from(timeout=ANSWER_S)
            await comm.send_input({"type": "websocket.disconnect", "code": 1001})
            while not reading.consumers[0].gone:  # noqa: ASYNC110  (the close is seen)
                await asyncio.sleep(0.01)
        reading.release.set()
        await comm.wait(ANSWER_S)  # the consumer ends
    assert reading.made <= 2 * page < stored  # the page under way read, no other


async def test_commands_to_a_run_that_is_not_live_are_refused(
    open_socket: OpenSocket, quiet_run: Run, owner: Any
) -> None:
    comm = await connected_socket(open_socket, quiet_run, owner)
    await receive_until(comm, of_type("state"))
    await comm.send_json_to({"command": "resume"})
    message = await comm.receive_json_from(timeout=ANSWER_S)
    assert message == {"type": "error", "message": "the run is not live any more"}
    assert (await load_run(quiet_run.pk)).status == Run.Status.PAUSED


# -- a live run ---------------------------------------------------------------------------


async def test_live_run_is_relayed_stored_and_screenshotted(
    runs: Runs,
    open_socket: OpenSocket,
    owner: Any,
    fixture_url: str,
    media_root: Path,
    settings: Any,
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "TRACE_RUNS": True}
    run, comm = await start_watched(
        runs, open_socket, owner, FORM_TASK, f"{fixture_url}/demo/form.html"
    )
    # The work ends, then its session (not kept here: SESSION_IDLE_S is 0).
    messages = await receive_until(comm, of_type("session.closed"))
    await runner.wait(run.pk)

    kinds = [kind for kind in types(messages) if kind != "frame"]  # frames come any time
    assert kinds[0] == "run.started"
    # The run's files (its trace) are kept once the work ended, before the tab closes.
    assert kinds[-3:] == ["run.finished", "files", "session.closed"]
    (files,) = [m for m in messages if m["type"] == "files"]
    assert [f["name"] for f in files["files"]] == ["trace.zip"]
    ended = [m for m in messages if m["type"] == "run.finished"]
    assert ended[-1]["status"] == "succeeded", ended[-1]
    expected_actions = ["navigate", "type", "type", "click", "wait_for"]
    finished = [m for m in messages if m["type"] == "action.finished"]
    assert [m["name"] for m in finished] == expected_actions
    assert all(m["ok"] for m in finished), finished
    recorded = [m for m in messages if m["type"] == "step.recorded"]
    assert [m["index"] for m in recorded] == [0, 1, 2, 3, 4]
    shots = [m for m in messages if m["type"] == "screenshot"]
    assert [m["step_index"] for m in shots] == [0, 1, 2, 3, 4]
    assert shots[0]["src"] == f"/runs/{run.pk}/screenshots/0.jpg"
    assert "llm.token" in kinds  # the rule planner's answers stream as one token each

    # Everything but the token deltas and the live view's frames is stored, numbered 1..N
    # in the order it was relayed.
    relayed = [m for m in messages if m["type"] not in UNSTORED]
    assert all("seq" not in m for m in messages if m["type"] in UNSTORED)
    assert [m["seq"] for m in relayed] == list(range(1, len(relayed) + 1))
    assert await stored_events(run.pk) == [(m["seq"], m["type"]) for m in relayed]

    steps = await stored_steps(run.pk)
    assert [(s.index, s.action, s.ok) for s in steps] == [
        (i, action, True) for i, action in enumerate(expected_actions)
    ]
    name_step = steps[1]
    assert (name_step.role, name_step.name, name_step.selector) == ("textbox", "Name", "#name")
    assert name_step.identity is not None and name_step.identity["id"] == "name"
    assert name_step.identity["role"] == "textbox" and name_step.identity["version"] == 1
    assert name_step.args == {"ref": name_step.ref, "text": "Ada Lovelace"}
    assert (steps[3].role, steps[3].name) == ("button", "Sign up")
    for step in steps:
        path = media_root / step.screenshot
        assert path.is_file(), step.screenshot
        assert path.read_bytes()[:3] == b"\xff\xd8\xff"  # a JPEG
    trace = Path(settings.TABWRIGHT["WORKSPACE_DIR"]) / str(run.pk) / "trace.zip"
    assert any(n.endswith(".trace") for n in zipfile.ZipFile(trace).namelist())

    stored = await load_run(run.pk)
    assert stored.status == Run.Status.SUCCEEDED
    assert stored.finished_at is not None
    assert "click Sign up" in stored.summary
    assert not runner.is_live(run.pk)


async def test_ambiguous_click_pauses_and_a_reply_resumes_it(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    run, comm, messages = await paused_on_delete(runs, open_socket, owner, fixture_url)
    paused = messages[-1]
    assert paused["reason"] == "need_help"
    assert "matches 5 elements" in paused["detail"]
    stored = await load_run(run.pk)
    assert stored.status == Run.Status.PAUSED
    assert stored.status_reason.startswith("need_help: ")
    assert runner.is_live(run.pk)
    assert [s.action for s in await stored_steps(run.pk)] == ["navigate"]

    await comm.send_json_to({"command": "reply", "text": "click Delete #3"})
    rest = await receive_until(comm, of_type("run.finished"))
    await runner.wait(run.pk)

    kinds = types(rest)
    assert kinds[:2] == ["user.message", "run.resumed"]
    assert rest[0]["text"] == "click Delete #3"
    assert rest[-1]["status"] == "succeeded", rest[-1]
    clicks = [m for m in rest if m["type"] == "action.finished" and m["name"] == "click"]
    assert len(clicks) == 1 and clicks[0]["ok"]
    steps = await stored_steps(run.pk)
    assert [s.action for s in steps] == ["navigate", "click", "wait_for"]
    # The third row's button: its selector is anchored on that row's test id, and the
    # page then said so (the wait_for step only passes on "Order #1003 deleted").
    assert steps[1].selector.startswith('[data-testid="order-1003"]'), steps[1].selector
    assert steps[2].args == {"text": "Order #1003 deleted"} and steps[2].ok
    stored = await load_run(run.pk)
    assert stored.status == Run.Status.SUCCEEDED


async def test_stop_ends_a_paused_run(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    run, comm, _ = await paused_on_delete(runs, open_socket, owner, fixture_url)
    # Who stopped it is the run's reason, whatever the page sends with the stop.
    await comm.send_json_to({"command": "stop", "text": "stopped by the admin"})
    rest = await receive_until(comm, of_type("session.closed"))
    await runner.wait(run.pk)
    assert rest[-2]["status"] == "stopped"
    assert rest[-2]["reason"] == "stopped by olive while it waited for a person"
    stored = await load_run(run.pk)
    assert (stored.status, stored.finished_at is not None) == (Run.Status.STOPPED, True)
    assert not runner.is_live(run.pk)

    await comm.send_json_to({"command": "stop"})
    assert await comm.receive_json_from(timeout=ANSWER_S) == {
        "type": "error",
        "message": "the run is not live any more",
    }


async def test_stop_ends_a_running_action_at_once(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str, settings: Any
) -> None:
    # The wait would take the whole 60 s action budget; stop must cut it short.
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ACTION_TIMEOUT_MS": 60_000}
    run, comm = await start_watched(
        runs,
        open_socket,
        owner,
        "wait for Text that never appears",
        f"{fixture_url}/demo/form.html",
    )
    await receive_until(comm, lambda m: m["type"] == "action.started" and m["name"] == "wait_for")
    assert (await load_run(run.pk)).status == Run.Status.RUNNING
    stopped_at = time.monotonic()
    await comm.send_json_to({"command": "stop"})
    rest = await receive_until(comm, of_type("run.finished"))
    await runner.wait(run.pk)
    assert time.monotonic() - stopped_at < 30  # not the wait's 60 s
    assert rest[-1]["status"] == "stopped"
    assert (await load_run(run.pk)).status == Run.Status.STOPPED


async def test_bad_messages_get_an_error_and_change_nothing(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    run, comm, _ = await paused_on_delete(runs, open_socket, owner, fixture_url)
    events_before = await stored_events(run.pk)

    await expect_error(comm, {"command": "explode"}, "unknown command")
    await expect_error(comm, {"text": "click Delete #3"}, "unknown command")
    await expect_error(comm, ["reply", "click Delete #3"], "unknown command")
    await expect_error(comm, "reply", "unknown command")  # valid JSON, not an object
    await expect_error(
        comm, {"command": "reply", "text": "x" * (MAX_REPLY_CHARS + 1)}, "at most 4000"
    )
    await expect_error(comm, {"command": "reply", "text": 3}, "at most 4000")
    await expect_error(comm, {"command": "reply", "text": "  \n "}, "empty")
    await expect_error(comm, {"command": "reply"}, "empty")
    await expect_error(comm, 'not json {"command": "stop"}', "JSON text", raw=True)
    await comm.send_to(bytes_data=b'{"command": "stop"}')
    assert (await comm.receive_json_from(timeout=ANSWER_S))[
        "message"
    ] == "commands are JSON text messages"
    assert await comm.receive_nothing(timeout=0.2)

    assert await stored_events(run.pk) == events_before
    stored = await load_run(run.pk)
    assert stored.status == Run.Status.PAUSED
    assert runner.is_live(run.pk)

    # A reply of exactly the limit is accepted (and, not being a command, asks again).
    await comm.send_json_to({"command": "reply", "text": "y" * MAX_REPLY_CHARS})
    rest = await receive_until(comm, of_type("run.paused"))
    assert types(rest)[:2] == ["user.message", "run.resumed"]


async def test_staff_can_watch_but_not_command_someone_elses_run(
    runs: Runs, open_socket: OpenSocket, owner: Any, staff: Any, fixture_url: str
) -> None:
    run, _owner_comm, owner_messages = await paused_on_delete(runs, open_socket, owner, fixture_url)
    watcher = await connected_socket(open_socket, run, staff)
    backlog = await receive_until(watcher, of_type("state"))
    # Then the live view's latest picture, sent to every page at once when it opens.
    assert (await watcher.receive_json_from(timeout=ANSWER_S))["type"] == "frame"
    stored = [m for m in owner_messages if m["type"] not in UNSTORED]
    assert [m["seq"] for m in backlog[:-1]] == [m["seq"] for m in stored]
    assert backlog[-1]["status"] == "paused" and backlog[-1]["live"] is True

    for command in ({"command": "stop"}, {"command": "reply", "text": "click Delete #1"}):
        await expect_error(watcher, command, "only the run's owner")
    assert await watcher.receive_nothing(timeout=0.2)
    assert (await load_run(run.pk)).status == Run.Status.PAUSED
    assert runner.is_live(run.pk)


# -- LLM-backed runs ----------------------------------------------------------------------


async def test_llm_run_streams_tokens_and_survives_malformed_actions(
    runs: Runs,
    open_socket: OpenSocket,
    owner: Any,
    fixture_url: str,
    llm_server: ScriptedLLMServer,
    llm_at: Callable[[str], None],
) -> None:
    llm_at(llm_server.base_url)
    first = (
        "The form is open; I will make sure it rendered.\n"
        '<action>{"action": "wait_for", "text": "Sign up"}</action>'
    )
    llm_server.script(
        first,
        '<action>{"action": "click", "ref": }</action>',  # not JSON
        '<action>{"action": "done", "summary": "the sign-up form is there"}</action>',
    )
    run, comm = await start_watched(
        runs,
        open_socket,
        owner,
        "Check that the sign-up form is shown.",
        f"{fixture_url}/demo/form.html",
        planner="openai",
    )
    messages = await receive_until(comm, of_type("run.finished"))
    await runner.wait(run.pk)

    assert messages[-1]["status"] == "succeeded", messages[-1]
    assert messages[-1]["summary"] == "the sign-up form is there"
    tokens = [m for m in messages if m["type"] == "llm.token" and m["round"] == 1]
    assert len(tokens) > 5  # streamed in pieces, not in one go
    assert "".join(t["text"] for t in tokens) == first
    llm_messages = [m for m in messages if m["type"] == "llm.message"]
    assert [m["round"] for m in llm_messages] == [1, 2, 3]
    assert llm_messages[0]["text"] == first
    observations = [m for m in messages if m["type"] == "observation"]
    assert len(observations) == 1
    assert observations[0]["round"] == 2
    assert observations[0]["error"]["code"] == "action_invalid"
    assert "not valid JSON" in observations[0]["text"]
    # The model is told about its mistake in the next request.
    assert "ERROR [action_invalid]" in llm_server.requests[2]["messages"][-1]["content"]
    assert llm_server.pending == 0

    rows = await stored_events(run.pk)
    stored_kinds = [kind for _, kind in rows]
    assert "llm.token" not in stored_kinds
    assert stored_kinds.count("llm.message") == 3
    assert stored_kinds.count("observation") == 1
    steps = await stored_steps(run.pk)
    assert [(s.action, s.ok) for s in steps] == [("navigate", True), ("wait_for", True)]
    assert (await load_run(run.pk)).status == Run.Status.SUCCEEDED


async def test_unreachable_llm_pauses_quickly_and_keeps_the_steps(
    runs: Runs,
    open_socket: OpenSocket,
    owner: Any,
    fixture_url: str,
    llm_at: Callable[[str], None],
) -> None:
    llm_at(f"http://127.0.0.1:{free_port()}/v1")
    run, comm = await start_watched(
        runs,
        open_socket,
        owner,
        "Sign up as Ada.",
        f"{fixture_url}/demo/form.html",
        planner="openai",
    )
    # Long before the LLM's own 120 s timeout: a refused connection is not waited out.
    messages = await receive_until(comm, of_type("run.paused"))
    paused = messages[-1]
    assert paused["reason"] == "llm_error"
    assert "cannot reach the LLM" in paused["detail"]
    stored = await load_run(run.pk)
    assert stored.status == Run.Status.PAUSED
    assert stored.status_reason.startswith("llm_error: ")
    assert runner.is_live(run.pk)
    steps = await stored_steps(run.pk)
    assert [(s.action, s.ok) for s in steps] == [("navigate", True)]
    assert steps[0].url.endswith("/demo/form.html")

    await comm.send_json_to({"command": "stop"})
    rest = await receive_until(comm, of_type("run.finished"))
    assert rest[-1]["status"] == "stopped"
    await runner.wait(run.pk)
    assert [s.action for s in await stored_steps(run.pk)] == ["navigate"]
