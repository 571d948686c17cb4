"""What the conversation tests share: their tasks, a run watched from before it starts,
a message said on its socket, and the stored events and steps read back."""

from __future__ import annotations

import functools
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from dashboard.models import Run, Step
from dashboard.scenarios import services
from tests.dashboard.conftest import OpenSocket, Runs
from tests.dashboard.sockets import (
    ANSWER_S,
    connected_socket,
    of_type,
    types,
)
from tests.dashboard.sockets import receive_until as receive_any

NAME_TASK = "type Ada Lovelace into Name"
# Succeeds only on a page where "Ada Lovelace" is still typed into Name: with the name
# empty the form greets "Welcome, friend!".
FINISH_SIGN_UP = """type ada@example.org into Email
click Sign up
wait for Welcome, Ada Lovelace!"""
NEVER = "wait for Text that never appears"
# The steps of NAME_TASK, then of FINISH_SIGN_UP in a second stretch: (index, action,
# stretch, ok), numbered on across the two.
SIGNED_UP_IN_TWO = [
    (0, "navigate", 1, True), (1, "type", 1, True),
    (2, "type", 2, True), (3, "click", 2, True), (4, "wait_for", 2, True),
]  # fmt: skip

UNSEEN = frozenset({"frame", "llm.token"})  # relayed live, never stored


# -- helpers ------------------------------------------------------------------------------


# The stored events (no frames, no tokens) up to and including the first one that matters.
receive_until = functools.partial(receive_any, skip=UNSEEN)


@database_sync_to_async
def stored_steps(run_id: int) -> list[tuple[int, str, int, bool]]:
    """(index, action, stretch, ok) of every stored step, by index."""
    rows = Step.objects.filter(run_id=run_id).order_by("index")
    return [(s.index, s.action, s.stretch, s.ok) for s in rows]


async def start_watched(
    runs: Runs, open_socket: OpenSocket, owner: Any, task: str, start_url: str, **kw: Any
) -> tuple[Run, WebsocketCommunicator]:
    """Create a run, open its socket, then start it: no live event can be missed."""
    run = await runs.create(owner=owner, task=task, start_url=start_url, **kw)
    comm = await connected_socket(open_socket, run, owner)
    assert (await comm.receive_json_from(timeout=ANSWER_S))["type"] == "state"
    await runs.start(run)
    return run, comm


async def start_replay(
    runs: Runs, open_socket: OpenSocket, owner: Any, scenario: Any
) -> tuple[Run, WebsocketCommunicator]:
    """A replay of ``scenario``, watched from before it starts."""
    replay = await sync_to_async(services.replay_run_create)(
        owner=owner, scenario=scenario, base_url="", params={}
    )
    comm = await connected_socket(open_socket, replay, owner)
    await receive_until(comm, of_type("state"))
    await runs.start(replay)
    return replay, comm


async def say(comm: WebsocketCommunicator, text: str) -> None:
    await comm.send_json_to({"command": "message", "text": text})


async def expect_error(comm: WebsocketCommunicator, payload: Any, contains: str) -> None:
    await comm.send_json_to(payload)
    message = await receive_until(comm, lambda m: m["type"] not in UNSEEN)
    assert message[-1]["type"] == "error", message
    assert contains in message[-1]["message"], message


async def idle_after_name(
    runs: Runs, open_socket: OpenSocket, owner: Any, form_url: str
) -> tuple[Run, WebsocketCommunicator, list[dict[str, Any]]]:
    """A conversation whose first stretch typed the name and that now waits, tab open."""
    run, comm = await start_watched(runs, open_socket, owner, NAME_TASK, form_url)
    messages = await receive_until(comm, of_type("session.idle"))
    assert types(messages)[-2:] == ["run.finished", "session.idle"], types(messages)
    assert messages[-2]["status"] == "succeeded", messages[-2]
    return run, comm, messages


# A scripted model reply that is one action.
def action(payload: str) -> str:
    return f"<action>{payload}</action>"
