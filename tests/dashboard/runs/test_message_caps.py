"""One huge model reply must not break the run page: the reply kept (events, context) is
cut with a marker, every event is stored and relayed within the message limit, the socket
never sends a message over it (the live relay, the backlog replayed on reconnect, an event
stored before these limits), and the pause that followed the reply reaches the page.  A
token count past what the database holds is kept at a bound."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from channels.db import database_sync_to_async

from automation.limits import MAX_MESSAGE_BYTES, MAX_REPLY_CHARS, fit
from dashboard.models import Run, RunEvent
from dashboard.runs import services
from dashboard.runs.runner import runner
from tests.dashboard.conftest import OpenSocket, Runs
from tests.dashboard.runs.test_consumer import (
    connected_socket,
    of_type,
    receive_until,
    start_watched,
)
from tests.fakellm import FAKE_MODEL, Reply, ScriptedLLMServer

# Rollback transactions, but for the async tests: their database work runs in another
# thread (sync_to_async), which must see the rows.
pytestmark = pytest.mark.django_db

QUESTION = "NEED_HELP: which of the two exports do you mean?"


def huge_reply_sse(text: str, pieces: int = 6) -> str:
    """An OpenAI stream of ``text`` in a few big deltas (as a model that sends long
    chunks, and fast to produce), then the finish chunk."""
    size = -(-len(text) // pieces)
    chunks = [{"role": "assistant", "content": ""}]
    chunks += [{"content": text[i : i + size]} for i in range(0, len(text), size)]
    events = [
        {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": FAKE_MODEL,
         "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        for delta in chunks
    ]  # fmt: skip
    events.append({**events[0], "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def sent_size(message: dict[str, Any]) -> int:
    return len(json.dumps(message))  # as the consumer encodes it (ASCII-escaped)


@pytest.mark.django_db(transaction=True)
async def test_a_reply_over_a_mebibyte_is_cut_and_the_pause_after_it_arrives(
    runs: Runs,
    open_socket: OpenSocket,
    owner: Any,
    fixture_url: str,
    llm_server: ScriptedLLMServer,
    llm_at: Callable[..., None],
) -> None:
    llm_at(llm_server.base_url, timeout_ms=20_000)
    # 1.4 MiB of text, a third of it in characters JSON escapes to 6 bytes each.
    body = ("Looking at the page. " * 20_000) + ("ünïcødé " * 60_000)
    reply = body + "\n" + QUESTION
    assert len(reply.encode()) > 1024 * 1024
    llm_server.script(Reply(raw_sse=huge_reply_sse(reply)))
    run, comm = await start_watched(
        runs, open_socket, owner, "Export the report.", f"{fixture_url}/demo/form.html",
        planner="openai",
    )  # fmt: skip
    live = await receive_until(comm, of_type("run.paused"), timeout_s=60)

    assert live[-1]["reason"] == "need_help"
    assert "which of the two exports" in live[-1]["detail"]
    assert all(sent_size(m) <= MAX_MESSAGE_BYTES for m in live), max(map(sent_size, live))
    message = next(m for m in live if m["type"] == "llm.message")
    assert len(message["text"]) <= MAX_REPLY_CHARS
    assert "more chars]" in message["text"] and message["text"].endswith(QUESTION)
    tokens = "".join(m["text"] for m in live if m["type"] == "llm.token")
    assert len(tokens) < len(reply) and tokens.endswith("…[cut: the rest is not streamed]")

    stored = await database_sync_to_async(
        lambda: RunEvent.objects.get(run_id=run.pk, type="llm.message").data
    )()
    assert stored["text"] == message["text"]

    # A page that reconnects gets the backlog, each event a message within the limit,
    # the pause included.
    again = await connected_socket(open_socket, run, owner)
    backlog = await receive_until(again, of_type("state"))
    assert [m["type"] for m in backlog].count("run.paused") == 1
    assert all(sent_size(m) <= MAX_MESSAGE_BYTES for m in backlog)

    # The run goes on from the pause as from any other.
    llm_server.script('<action>{"action": "done", "summary": "asked"}</action>')
    await comm.send_json_to({"command": "reply", "text": "the first one"})
    finished = await receive_until(comm, of_type("run.finished"))
    await runner.wait(run.pk)
    assert finished[-1]["status"] == "succeeded"
    assert all(sent_size(m) <= MAX_MESSAGE_BYTES for m in finished)


@pytest.mark.django_db(transaction=True)
async def test_an_event_stored_before_the_limits_is_cut_on_the_way_out(
    open_socket: OpenSocket, owner: Any
) -> None:
    run = await database_sync_to_async(services.run_create)(
        owner=owner, task="click OK", start_url="", planner="rules"
    )
    huge = {"type": "llm.message", "round": 1, "text": "é" * 400_000, "usage": {}}

    def store() -> None:  # as an older version stored it: whole
        RunEvent.objects.create(run_id=run.pk, seq=1, type="llm.message", data=huge)
        RunEvent.objects.create(
            run_id=run.pk, seq=2, type="run.paused", data={"type": "run.paused", "reason": "x"}
        )

    await database_sync_to_async(store)()
    comm = await connected_socket(open_socket, run, owner)
    got = await receive_until(comm, of_type("state"))
    assert [m["type"] for m in got] == ["llm.message", "run.paused", "state"]
    assert sent_size(got[0]) <= MAX_MESSAGE_BYTES
    assert got[0]["seq"] == 1 and "more chars]" in got[0]["text"]


def test_stored_rows_are_kept_within_the_limits(owner: Any) -> None:
    run = services.run_create(owner=owner, task="t", start_url="", planner="rules")
    event = services.run_event_append(
        run_id=run.pk, seq=1, type="observation",
        data={"type": "observation", "round": 1, "text": "x" * 2_000_000},
    )  # fmt: skip
    assert len(json.dumps(event.data)) <= MAX_MESSAGE_BYTES
    step = services.step_record(
        run_id=run.pk,
        data={"index": 0, "action": "click", "args": {"v": "y" * 3_000_000}, "name": "n" * 10**6},
    )
    assert len(step.name) < 100_000 and "more chars]" in step.name
    assert len(json.dumps(step.args)) <= MAX_MESSAGE_BYTES
    services.run_set_status(run_id=run.pk, status=Run.Status.FAILED, reason="r" * 10**6)
    assert len(Run.objects.get(pk=run.pk).status_reason) < 100_000
    assert fit({"type": "x", "text": "short"}) == {"type": "x", "text": "short"}
    # A list just past the limit (an MCP client's fill_form of 20,000 fields, stored as
    # its step's args before the action refuses it): cut to fit, its marker counting what
    # went, not given up (once each pass replaced the marker with another, 64 passes of
    # seconds on the event loop, and a "cut" the step's row has no field for).
    fields = [{"ref": "e3", "value": "x"}] * 20_000
    step = services.step_record(
        run_id=run.pk, data={"index": 1, "action": "fill_form", "args": {"fields": fields}}
    )
    kept = step.args["fields"]
    assert len(json.dumps(step.args)) <= MAX_MESSAGE_BYTES
    assert kept[-1] == f"…[cut: {20_000 - (len(kept) - 1)} more items]" and len(kept) > 10_000
    # Whatever a model server reports it used: kept within what the database holds.
    for usage in ({"prompt_tokens": 10**30, "completion_tokens": float("inf")},
                  {"prompt_tokens": -5, "completion_tokens": float("nan")}):  # fmt: skip
        services.run_usage_add(run_id=run.pk, usage=usage)
    kept = Run.objects.get(pk=run.pk)
    assert (kept.prompt_tokens, kept.completion_tokens) == (10**12, 10**12)


def test_through_a_real_daphne_a_huge_stored_event_does_not_drop_the_socket(
    tmp_path: Any,
) -> None:
    """Daphne refuses to send a message over 1 MiB and closes the socket (1011); the page
    reconnected forever.  An event stored whole (by an older version) now reaches the page
    cut, and so does everything after it."""
    import asyncio

    from tests.daphne import daphne, sql
    from tests.dashboard.daphne_session import USER, logged_in_run, socket_messages

    var = tmp_path / "var"
    with daphne(var, USER, {}) as (base_url, _log):
        run_id, session = logged_in_run(base_url)
        huge = {"type": "llm.message", "round": 1, "text": "é" * 400_000, "usage": {}}
        for seq, data in ((10_000, huge), (10_001, {"type": "run.paused", "reason": "x"})):
            sql(
                var / "db.sqlite3",
                "INSERT INTO dashboard_runevent (run_id, seq, type, data, created_at)"
                " VALUES (?, ?, ?, ?, datetime('now'))",
                (run_id, seq, data["type"], json.dumps(data)),
            )
        got = asyncio.run(socket_messages(base_url, run_id, session, base_url))
    assert isinstance(got, list)
    kinds = [m["type"] for m in got]
    assert kinds[-3:] == ["llm.message", "run.paused", "state"]
    assert all(sent_size(m) <= MAX_MESSAGE_BYTES for m in got)
    assert "more chars]" in got[-3]["text"]
