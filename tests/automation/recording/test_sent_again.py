"""A click that sent a write when recorded must send one at replay.

A person renamed a profile and clicked Save; the page sent ``POST /api/profile``.
Another day the page's script returned before sending (its own check of the phone on
file, said in grey beside the button, no error mark), or a new build's handler threw:
the click found its button, nothing was saved, and replay and its export said
succeeded.  Now the recording keeps what the click sent (the step's ``sent``), and a
replay (and its export) whose click sends nothing fails, saying what it sent when
recorded; an app that sends nothing because nothing changed (the name already the one
typed) still passes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from tests.automation.recording.test_recorder import click_center
from tests.automation.recording.test_replay_postback import agent_made
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.waiting import eventually

SHORT = ReplayConfig(locate_wait_ms=2_000)
# The page's Save, by day: what its script does before it sends.
SAVE = {
    "as recorded": "",
    "checks the phone": "if (!f.phone.value.startsWith('+')) return;",
    "throws": "f.missing.value.trim();",
    "sends nothing unchanged": "if (f.name.value === f.name.defaultValue) return;",
}
PROFILE = """<!doctype html><title>Profile</title><h1>Profile</h1><form id=f>
<label>Name <input name=name value="NAME"></label>
<label>Phone <input name=phone value="PHONE"></label>
<p id=hint style="color:#888">HINT</p>
<button type=button onclick="save()">Save</button></form><p id=msg></p>
<script>
function save() {
  CHECK
  send(JSON.stringify({ name: f.name.value, phone: f.phone.value }));
}
async function send(body) {
  await fetch("/api/profile", { method: "POST", body });
  msg.textContent = "Saved";
}
</script>"""


@pytest.fixture
def app() -> Iterator[tuple[dict, str]]:
    state: dict = {"day": "as recorded", "name": "Ann Lee", "saved": []}

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            day = state["day"]
            phone = "555-0100" if day == "checks the phone" else "+1 555 0100"
            hint = "Phone must start with a country code." if phone[0] != "+" else ""
            page = (PROFILE.replace("NAME", state["name"]).replace("PHONE", phone)
                    .replace("HINT", hint).replace("CHECK", SAVE[day]))  # fmt: skip
            self.send(200, page.encode())

        def do_POST(self) -> None:
            sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["saved"].append(sent["name"])
            self.send(200, b'{"ok": true}', Content_Type="application/json")

    with loopback_app(Handler) as url:
        yield state, url


async def recorded(tab: Tab, state: dict, base: str) -> Scenario:
    await tab.navigate(f"{base}/profile")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "input[name=name]")
    await tab.page.keyboard.press("Control+A")
    await tab.page.keyboard.type("Ann Leigh")
    await click_center(tab.page, "button")
    await eventually(lambda: state["saved"], what="the save")
    return Scenario("Rename Ann", tuple(await recorder.stop()), base_url=f"{base}/")


async def test_a_click_that_sends_nothing_where_it_sent_a_save_fails(
    tab: Tab, app: tuple[dict, str], tmp_path: Path
) -> None:
    state, base = app
    scenario = await recorded(tab, state, base)
    assert [(s.action, s.sent) for s in scenario.steps if s.sent] == [
        ("click", "POST /api/profile")
    ]  # (the click that saved: not the typing before it)
    click = len(scenario.steps) - 1
    assert Scenario.from_dict(scenario.to_dict()) == scenario
    code = to_pytest(scenario)
    for day, (passes, saved) in {
        "as recorded": (True, ["Ann Leigh"]),
        "checks the phone": (False, []),
        "throws": (False, []),
    }.items():
        state.update(day=day, saved=[])
        result = await Replay(tab, scenario, config=SHORT).run()
        assert (result.ok, state["saved"]) == (passes, saved), (day, result.to_dict())
        if not passes:
            assert result.reason.startswith(f"step {click} (click"), result.reason
            assert "it sent nothing, where it sent POST /api/profile" in result.reason
            error = result.steps[click].error
            assert error is not None and error["code"] == "nothing_sent", error
        if day == "throws":
            assert "the page's script failed: TypeError" in result.reason, result.reason
        state["saved"] = []
        status, out = await run_exported(code, tmp_path / day.replace(" ", "_"), base)
        assert (status == 0, state["saved"]) == (passes, saved), (day, out[-3000:])
        if not passes:
            assert "sent nothing, where it sent POST /api/profile" in out, out[-3000:]


async def test_a_save_that_sends_nothing_when_nothing_changed_passes(
    tab: Tab, app: tuple[dict, str], tmp_path: Path
) -> None:
    """The app sends nothing when the name is the one typed already: a replay on a day
    the rename was done passes (nothing to save); on a day it was not, it sends."""
    state, base = app
    state["day"] = "sends nothing unchanged"
    scenario = await recorded(tab, state, base)
    code = to_pytest(scenario)
    for name, saved in {"Ann Leigh": [], "Ann Lee": ["Ann Leigh"]}.items():
        state.update(name=name, saved=[])
        result = await Replay(tab, scenario, config=SHORT).run()
        assert (result.ok, state["saved"]) == (True, saved), (name, result.to_dict())
        state["saved"] = []
        status, out = await run_exported(code, tmp_path / name.replace(" ", "_"), base)
        assert (status, state["saved"]) == (0, saved), (name, out[-3000:])


async def test_a_save_an_agent_run_made_keeps_what_it_sent(tab: Tab, app: tuple[dict, str]) -> None:
    """The scenario made from an agent's run (its recorded steps, as the dashboard keeps
    them) knows what its Save sent, and its replay fails where the Save sends nothing."""
    state, base = app
    task = "type Ann Leigh into Name\nclick Save\nwait for Saved"
    scenario = await agent_made(tab, task, f"{base}/profile", base)
    assert [(s.action, s.sent) for s in scenario.steps if s.sent] == [
        ("click", "POST /api/profile")
    ]
    state.update(day="checks the phone", saved=[])
    result = await Replay(tab, scenario, config=SHORT).run()
    assert (result.ok, state["saved"]) == (False, []), result.to_dict()
    assert "it sent nothing, where it sent POST /api/profile" in result.reason


async def test_a_write_the_page_sends_on_its_own_is_no_step_s(
    tab: Tab, app: tuple[dict, str]
) -> None:
    """A keep-alive the page posts every 500 ms lands right after a click that writes
    nothing (a tab of the page opened): it is the page's, sent away from every step too,
    and the click keeps no ``sent`` (a replay would fail it on a day the two part)."""
    state, base = app
    await tab.navigate(f"{base}/profile")
    await tab.page.evaluate(
        "setInterval(() => fetch('/api/alive', {method: 'POST', body: '{\"name\": \"-\"}'}), 500);"
        "document.body.insertAdjacentHTML('beforeend', '<button onclick=\"this.textContent="
        "\\'Notes open\\'\">Notes</button>')"
    )
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "text=Notes")
    await eventually(lambda: len(state["saved"]) >= 8, what="the keep-alives")
    steps = await recorder.stop()
    assert [(s.action, s.sent) for s in steps] == [("navigate", ""), ("click", "")], steps
