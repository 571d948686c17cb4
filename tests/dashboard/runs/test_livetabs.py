"""The live view's tab strip through the run socket: the run's open tabs sent as they
change, the person's choice of one making it the run's current tab (and, while their acts
are recorded, the move a replay makes to get there), and a choice of no tab refused with a
typed error, the socket going on."""

from __future__ import annotations

from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from dashboard.runs.runner import runner
from tests.dashboard.conftest import OpenSocket, Runs
from tests.dashboard.runs.test_consumer import paused_on_delete, stored_steps
from tests.dashboard.sockets import of_type, receive_until, types

pytestmark = pytest.mark.django_db(transaction=True)


async def tabs_where(
    comm: WebsocketCommunicator, seen: list[dict[str, Any]], count: int, current: int,
    url_end: str = "",
) -> list[dict[str, Any]]:  # fmt: skip
    """The run's tabs as the socket says them once there are ``count``, the one at
    ``current`` (their order) the current one, showing an address ending in ``url_end``."""

    def fits(m: dict[str, Any]) -> bool:
        if m["type"] != "tabs" or len(m["tabs"]) != count:
            return False
        tab = m["tabs"][current]
        return tab["current"] and tab["url"].endswith(url_end)

    said = [m for m in seen if m["type"] == "tabs"][-1:]
    if not (said and fits(said[0])):
        said = [(await receive_until(comm, fits, skip={"frame"}))[-1]]
    return said[-1]["tabs"]


async def choose(comm: WebsocketCommunicator, tab: object, call: int) -> dict[str, Any]:
    await comm.send_json_to({"command": "input", "id": call, "kind": "tab", "tab": tab})
    answer = await receive_until(comm, lambda m: m["type"] == "input.result", skip={"frame"})
    assert answer[-1]["id"] == call
    return answer[-1]


async def test_the_person_switches_between_the_runs_tabs_and_a_bad_choice_is_refused(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    run, comm, messages = await paused_on_delete(runs, open_socket, owner, fixture_url)
    assert "tabs" not in types(messages)  # one tab: no strip to draw

    live = runner._live[run.pk]
    opener = live.current_tab()
    assert opener is not None
    await opener.page.evaluate("() => { window.open(location.href + '?popup', 'p'); }")
    # The popup shows as opened from the run's tab, and is current (the recording went
    # there to listen).
    first, popup = await tabs_where(comm, [], 2, 1, "?popup")
    assert first["url"].endswith("/demo/list.html") and first["title"], first
    assert first["opener"] is None and popup["opener"] == first["id"], popup

    for bad, code in [(999, "tab_not_found"), ("1", "action_invalid"), (True, "action_invalid")]:
        refused = await choose(comm, bad, 1)
        assert not refused["ok"] and refused["error"]["code"] == code, refused
    assert live.current_tab() is not opener  # nothing moved

    chosen = await choose(comm, first["id"], 2)
    assert chosen["ok"] and "is current" in chosen["done"], chosen
    assert live.current_tab() is opener
    await tabs_where(comm, [], 2, 0)
    for call, tab in [(3, popup["id"]), (4, first["id"])]:
        assert (await choose(comm, tab, call))["ok"]
    # The same by the act panel's tabs select: recorded alike.
    act = {"command": "act", "id": 5, "action": "tabs", "args": {"op": "select", "index": 1}}
    await comm.send_json_to(act)
    acted = await receive_until(comm, of_type("act.result"), skip={"frame", "tabs"})
    assert acted[-1]["ok"], acted[-1]

    await comm.send_json_to({"command": "stop"})
    await receive_until(comm, of_type("run.finished"), skip={"frame"})
    steps = await stored_steps(run.pk)
    # Back to where the person had been, never acted in: nothing to replay.  Into the
    # popup and back: the moves a replay makes, recorded as acting there records them.
    assert [(s.action, s.args, s.by) for s in steps if s.by == "person"] == [
        ("tabs", {"op": "popup"}, "person"),
        ("tabs", {"op": "opener"}, "person"),
        ("tabs", {"op": "popup"}, "person"),
    ]
