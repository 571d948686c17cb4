"""A box an agent clicked (a switch, a button pressed in) is left as the run left it, or
the replay and its export fail: a click another day, on a box already so, undoes it.

An agent (or an MCP client) clicks a switch where a person's recording says check; the
click was saved as a click, and no check of the state it left was proposed.  On a day the
switch was already on, replay and the export clicked it off and passed.  A button whose
name says the press it makes ("Pin", "Unpin" once pressed) was taken in its other state
(renamed, its row and id the same) and pressed: the note unpinned, the replay passed.
Now the state a clicked box was left in is proposed as a check, ticked, and with it the
click ticks the box to that state (a switch on already is left on: the replay passes);
a toggle named for the press that undoes the recorded one is another control: replay
waits for a person, the export fails."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.propose import propose_checks
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from tests.automation.recording.test_recorder import click_center
from tests.bounds import room
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import acted
from tests.waiting import eventually

SHORT = ReplayConfig(locate_wait_ms=1_000)

SETTINGS = """<!doctype html><title>Settings</title><h1>Settings</h1><ul>ITEMS</ul>
<script>
for (const b of document.querySelectorAll("[role=switch]")) b.onclick = async () => {
  const on = b.getAttribute("aria-checked") !== "true";
  await fetch("/api/" + b.dataset.key, {method: "POST", body: JSON.stringify(on)});
  b.setAttribute("aria-checked", on);
};
</script>"""
NOTES = """<!doctype html><title>Notes</title><h1>Notes</h1><table>ITEMS</table>
<script>
for (const b of document.querySelectorAll("[aria-pressed]")) b.onclick = async () => {
  const on = b.getAttribute("aria-pressed") !== "true";
  await fetch("/api/" + b.dataset.key, {method: "POST", body: JSON.stringify(on)});
  b.setAttribute("aria-pressed", on);
  b.textContent = on ? "Unpin" : "Pin";
};
</script>"""


PREFS = """<!doctype html><title>Preferences</title><h1>Preferences</h1>
<style>.switch input { position: absolute; opacity: 0; width: 0; height: 0 }
.slider { display: inline-block; width: 30px; height: 16px; background: #ccc }</style>
<p><span>Dark mode</span> <label class=switch>
<input type=checkbox data-key=dark aria-label="Dark mode" DARK>
<span class=slider></span></label></p>
<script>
for (const b of document.querySelectorAll("[data-key]")) b.onchange = () =>
  fetch("/api/" + b.dataset.key, {method: "POST", body: JSON.stringify(b.checked)});
</script>"""


@pytest.fixture
def app() -> Iterator[tuple[dict, str]]:
    state: dict = {"alerts": False, "digest": False, "q3": False, "hiring": False, "dark": False}

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/prefs"):
                page = PREFS.replace("DARK", "checked" if state["dark"] else "")
            elif self.path.startswith("/settings"):
                items = "".join(
                    f"<li><button role=switch aria-checked={str(state[k]).lower()} data-key={k}>"
                    f"{label}</button></li>"
                    for k, label in (("alerts", "Email alerts"), ("digest", "Weekly digest"))
                )
                page = SETTINGS.replace("ITEMS", items)
            else:
                rows = "".join(
                    f"<tr><td>{title}</td><td><button id=pin-{k} data-key={k}"
                    f" aria-pressed={str(state[k]).lower()}>{'Unpin' if state[k] else 'Pin'}"
                    "</button></td></tr>"
                    for k, title in (("q3", "Q3 plan"), ("hiring", "Hiring"))
                )
                page = NOTES.replace("ITEMS", rows)
            self.send(200, page.encode())

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state[self.path.rsplit("/", 1)[-1]] = json.loads(body)
            self.send(200, b'{"ok": true}', **{"Content-Type": "application/json"})

    with loopback_app(Handler) as url:
        yield state, url


async def _saved(tab: Tab, url: str, role: str, name: str) -> Scenario:
    """The agent's click on the ``role`` named ``name``, and the checks it leaves ticked."""
    steps = await acted(tab, url, [("click", role, name, {})])
    rows = [{**step.to_dict(), "ok": True} for step in steps]
    proposed = await propose_checks(tab, rows, budget=room())
    checks = tuple(p.check for p in proposed if p.picked)
    return Scenario(f"Click {name}", (*steps, *checks), base_url=url.rsplit("/", 1)[0] + "/")


async def _replayed(
    tab: Tab, state: dict, scenario: Scenario, base: str, folder: Path, key: str,
    days: dict[str, tuple[bool, bool]],
) -> None:  # fmt: skip
    """Each day starts with ``key`` as its first value; replay and export pass where the
    second is true, and fail otherwise."""
    code = to_pytest(scenario)
    for n, (day, (before, passes)) in enumerate(days.items()):
        state[key] = before
        result = await Replay(tab, scenario, config=SHORT).run()
        assert result.ok == passes, (day, result.to_dict())
        if passes:
            assert state[key] is True, day
        state[key] = before
        status, out = await run_exported(code, folder / str(n), base, timeout_ms=3_000)
        assert (status == 0) == passes, (day, out)
        if passes:
            assert state[key] is True, day


async def test_a_switch_the_agent_clicked_on_is_left_on(
    tab: Tab, app: tuple[dict, str], tmp_path: Path
) -> None:
    state, base = app
    scenario = await _saved(tab, f"{base}/settings", "switch", "Email alerts")
    assert state["alerts"] is True
    assert "expect switch 'Email alerts' is ticked" in [s.describe() for s in scenario.steps]
    await _replayed(tab, state, scenario, base, tmp_path, "alerts", {
        "off, as it was": (False, True),
        "already on": (True, True),  # left on: a click would turn it off
    })  # fmt: skip


async def test_a_pin_pressed_in_is_not_pressed_out(
    tab: Tab, app: tuple[dict, str], tmp_path: Path
) -> None:
    state, base = app
    scenario = await _saved(tab, f"{base}/notes", "button", "Pin")
    assert state["q3"] is True
    await _replayed(tab, state, scenario, base, tmp_path, "q3", {
        "not pinned, as it was": (False, True),
        "already pinned": (True, False),  # "Unpin" now: pressing it undoes the step
    })  # fmt: skip
    state["q3"] = True
    result = await Replay(tab, scenario, config=SHORT).run()
    assert not result.ok and state["q3"] is True  # nothing pressed: it waits for a person


async def test_the_export_ticks_a_box_drawn_over_and_a_button_pressed_in(
    tab: Tab, app: tuple[dict, str], tmp_path: Path
) -> None:
    # A person's tick is recorded as a check: the export ticked it with Playwright's
    # set_checked, which finds a box drawn over (a switch's slider on a checkbox nobody
    # sees) not visible and a button pressed in no box, and failed on the very day it
    # was recorded, where replay passes.
    state, base = app
    for page, selector, shown, key in (
        ("prefs", ".slider", "[data-key=dark]:checked", "dark"),
        ("notes", "#pin-q3", "#pin-q3[aria-pressed=true]", "q3"),
    ):
        await tab.navigate(f"{base}/{page}")
        recorder = Recorder(tab)
        await recorder.start()
        await click_center(tab.page, selector)
        # The app answered (the pin shows pressed once its save is answered: a busy
        # machine's recording stopped before that read the pin as not pressed).
        await eventually(lambda: state[key] is True, what="the save")  # noqa: B023
        await tab.page.wait_for_selector(shown, state="attached")
        steps = await recorder.stop()
        assert (steps[-1].action, steps[-1].args.get("checked")) == ("check", True), steps
        scenario = Scenario(f"Tick {key}", tuple(steps), base_url=f"{base}/")
        days = {"not ticked, as it was": (False, True)}
        if page == "prefs":  # (a button renamed once pressed in is not found by the export)
            days["already ticked"] = (True, True)  # ticked already: left so
        await _replayed(tab, state, scenario, base, tmp_path / page, key, days)
