"""What a recorder's CDP listener takes from the page (cdplisten.py): the page writes every
text its binding sends, so what is not one event of the recorder's, in JSON, of a sane
length, through its own binding, is dropped; a document's flush mark is waited for, also
when it came first; and an event says whether its document is the page's top one."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from automation.budget import Budget
from automation.recording.cdplisten import MAX_EVENT_CHARS, CdpListener

PAGE = object()  # the page the events are said to come from


def listener() -> tuple[CdpListener, list[tuple[dict[str, Any], Any]]]:
    heard: list[tuple[dict[str, Any], Any]] = []
    made = CdpListener(PAGE, "rec", lambda source, event: heard.append((source, event)))  # type: ignore[arg-type]
    made._main = "MAIN"
    made._context_created({"context": {"id": 1, "auxData": {"frameId": "MAIN"}}})
    made._context_created({"context": {"id": 2, "auxData": {"frameId": "CHILD"}}})
    return made, heard


def called(made: CdpListener, payload: object, *, context: int = 1, name: str = "rec") -> None:
    made._called({"name": name, "payload": payload, "executionContextId": context})


def test_only_the_recorder_s_own_events_are_passed_on() -> None:
    made, heard = listener()
    click = {"kind": "click", "el": "d:1"}
    called(made, json.dumps(click))
    called(made, json.dumps(click), name="another")  # another binding's
    called(made, "{not json")
    called(made, json.dumps([click]))  # not an event
    called(made, 42)
    called(made, json.dumps({**click, "text": "x" * MAX_EVENT_CHARS}))  # too long
    assert heard == [({"page": PAGE, "frame": None, "top": True}, click)]


def test_an_event_says_whether_its_document_is_the_top_one() -> None:
    made, heard = listener()
    load = {"kind": "load", "location": "http://x.test/"}
    called(made, json.dumps(load), context=2)
    called(made, json.dumps(load), context=3)  # a context not heard of: not the top one
    made._context_destroyed({"executionContextId": 1})
    called(made, json.dumps(load), context=1)  # gone with its document
    assert [source["top"] for source, _ in heard] == [False, False, False]
    made._context_created({"context": {"id": 4, "auxData": {"frameId": "MAIN"}}})
    called(made, json.dumps(load), context=4)
    assert heard[-1][0]["top"] is True


async def test_a_flush_is_over_once_its_mark_came_before_or_after() -> None:
    made, heard = listener()
    called(made, json.dumps({"kind": "flush", "mark": "early"}))
    await asyncio.wait_for(made.arrived("early"), 5)  # came before it was waited for
    waiting = asyncio.ensure_future(made.arrived("late"))
    await asyncio.sleep(0)
    assert not waiting.done()
    called(made, json.dumps({"kind": "flush", "mark": "other"}))
    await asyncio.sleep(0)
    assert not waiting.done()
    called(made, json.dumps({"kind": "flush", "mark": "late"}))
    await asyncio.wait_for(waiting, 5)
    assert heard == []  # marks are the listener's, not events


async def test_a_flush_still_waited_for_ends_with_the_listener() -> None:
    made, _ = listener()
    waiting = asyncio.ensure_future(made.arrived("never"))
    await asyncio.sleep(0)
    await made.close(Budget(5_000))  # (no session: nothing to detach)
    with pytest.raises(asyncio.CancelledError):
        await waiting
