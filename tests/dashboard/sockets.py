"""Reading a run's socket and store in tests: messages up to one that matters, by type."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from typing import Any

from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from dashboard.models import Run, RunEvent
from tests.dashboard.conftest import ANSWER_S, OpenSocket


async def receive_until(
    comm: WebsocketCommunicator,
    done: Callable[[dict[str, Any]], bool],
    timeout_s: float = ANSWER_S,
    *,
    skip: Collection[str] = (),
) -> list[dict[str, Any]]:
    """Every message up to and including the first one ``done`` accepts; those of the
    types in ``skip`` are read but not returned."""
    deadline = time.monotonic() + timeout_s
    got: list[dict[str, Any]] = []
    while True:
        remaining = deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            message = await comm.receive_json_from(timeout=remaining)
        except TimeoutError:
            last = [m for m in got if m["type"] not in ("frame", "screenshot", "llm.token")]
            raise AssertionError(
                f"no matching message within {timeout_s} s; got {types(got)}; "
                f"the last: {str(last[-3:])[:1500]}"
            ) from None
        if message["type"] not in skip:
            got.append(message)
        if done(message):
            return got


def of_type(kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda m: m["type"] == kind


def types(messages: list[dict[str, Any]]) -> list[str]:
    return [m["type"] for m in messages]


def one(messages: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [m for m in messages if m["type"] == kind]
    assert len(found) == 1, (kind, types(messages))
    return found[0]


@database_sync_to_async
def load_run(run_id: int) -> Run:
    return Run.objects.get(pk=run_id)


@database_sync_to_async
def stored_events(run_id: int) -> list[tuple[int, str]]:
    return [(e.seq, e.type) for e in RunEvent.objects.filter(run_id=run_id).order_by("seq")]


async def connected_socket(
    open_socket: OpenSocket, run: Run, user: Any, query: str = ""
) -> WebsocketCommunicator:
    comm, connected, _ = await open_socket(run.pk, user, query)
    assert connected
    return comm
