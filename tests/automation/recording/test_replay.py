"""Replay on real Chromium: a scenario recorded on the shop's v1 (fixtures/replay/) replays on
v1, heals on v2 (ids, classes, wrappers, wording and row order changed) and pauses for a person
on v3, where the order it edits is gone.  Secrets never reach an event; bad input fails early
with a clear error."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from automation import Tab
from automation.actions import execute
from automation.control import RunControl
from automation.errors import ParamMissing
from automation.events import RunFinished, RunPaused, StepRecorded, StepReplayed
from automation.recording.export import to_pytest
from automation.recording.fromrun import from_run_steps
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.rescue import NOT_RECORDED
from automation.recording.scenario import Scenario, ScenarioStep
from tests.bounds import room
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import ref_of
from tests.sinks import WaitingSink

PASSWORD = "correct horse battery"
ENV = {"TABWRIGHT_SECRET_PASSWORD": PASSWORD}
# Where the element is gone for good, replay need not look for it long.
GONE_SOON = ReplayConfig(locate_wait_ms=300)


async def record_on_v1(tab: Tab, base: str) -> Scenario:
    """Sign in and edit Grace Hopper's order on v1, kept as an agent run keeps its steps."""
    rows: list[dict[str, Any]] = []

    async def do(action: str, ref: str = "", **args: Any) -> None:
        target = await tab.target(ref) if ref else None
        call = {"ref": ref, **args} if ref else args
        await execute(tab, action, call, budget=room())
        identity = target.identity.to_dict() if target and target.identity else None
        rows.append({"action": action, "args": call, "url": tab.url, "identity": identity})

    await do("navigate", url=f"{base}/replay/v1/login.html")
    login = await tab.snapshot()
    await do("fill", ref_of(login, "textbox", "Email"), value="ada@example.org")
    await do("fill", ref_of(login, "textbox", "Password"), value=PASSWORD)
    await do("check", ref_of(login, "checkbox", "Remember me"), checked=True)
    await do("select_option", ref_of(login, "combobox", "Region"), values=["Asia"])
    await do("click", ref_of(login, "button", "Sign in"))
    await tab.wait_for(text="Signed in as", budget=room())
    orders = await tab.snapshot()
    await do("click", ref_of(orders, "button", "Edit", 1))  # Grace Hopper's row
    scenario = from_run_steps(rows, name="Edit Grace's order", base_url=f"{base}/replay/v1")
    return scenario.with_param(1, "email")


@pytest.fixture
async def scenario(tab: Tab, fixture_url: str) -> Scenario:
    recorded = await record_on_v1(tab, fixture_url)
    await tab.page.goto("about:blank")
    return recorded


def status_text(tab: Tab) -> Any:
    return tab.page.locator("[role=status]").text_content()


async def test_a_recorded_scenario_replays_where_it_was_recorded(
    tab: Tab, scenario: Scenario
) -> None:
    assert scenario.steps[2].args == {"value": "${SECRET:PASSWORD}"}  # a password field
    sink = WaitingSink()
    result = await Replay(tab, scenario, sink=sink, env=ENV).run()
    assert result.ok, result.to_dict()
    assert [s.status for s in result.steps] == ["passed"] * 7
    strategies = [s.strategy for s in result.steps]
    assert strategies[:6] == ["", "role_name", "role_name", "role_name", "role_name", "role_name"]
    assert strategies[6] in ("role_name", "selector")  # one of three "Edit" buttons
    assert not any(s.heal for s in result.steps)
    assert await status_text(tab) == "Editing order #1002"
    who = await tab.page.locator("#who").text_content()
    remembered = f"(Asia, remembered, password of {len(PASSWORD)} characters)"
    assert who == f"Signed in as ada@example.org {remembered}"
    assert len(sink.of_type(StepReplayed)) == 7 and len(sink.of_type(StepRecorded)) == 7


async def test_a_changed_release_is_replayed_and_its_identities_healed(
    tab: Tab, scenario: Scenario, fixture_url: str
) -> None:
    replay = Replay(tab, scenario, base_url=f"{fixture_url}/replay/v2", env=ENV,
                    params={"email": "grace@example.org"})  # fmt: skip
    result = await replay.run()
    assert result.ok, result.to_dict()
    assert tab.url.startswith(f"{fixture_url}/replay/v2/")
    # The row moved from second to last: the right one was edited, not the second.
    assert await status_text(tab) == "Editing order #1002"
    assert (await tab.page.locator("#who").text_content() or "").startswith(
        "Signed in as grace@example.org"
    )
    by_index = {s.index: s for s in result.steps}
    email, sign_in = by_index[1], by_index[5]
    assert email.heal == "confident" and any(
        "id: 'email' -> 'login-email'" in c for c in email.changes
    )
    assert sign_in.healed is not None and sign_in.healed["name"] == "Sign in now"
    assert sign_in.heal in ("confident", "proposed") and sign_in.score is not None
    healed = Scenario.from_dict(scenario.to_dict())  # the healed identity replays as recorded
    steps = list(healed.steps)
    steps[5] = replace(steps[5], identity=type(steps[5].identity).from_dict(sign_in.healed))  # type: ignore[union-attr]
    await tab.page.goto("about:blank")
    again = await Replay(tab, replace(healed, steps=tuple(steps)),
                         base_url=f"{fixture_url}/replay/v2", env=ENV).run()  # fmt: skip
    assert again.ok and again.steps[5].strategy == "role_name" and not again.steps[5].changes


async def test_a_gone_element_needs_a_person_and_nothing_is_clicked(
    tab: Tab, scenario: Scenario, fixture_url: str
) -> None:
    result = await Replay(
        tab, scenario, base_url=f"{fixture_url}/replay/v3", env=ENV, config=GONE_SOON
    ).run()
    assert result.status == "needs_person" and not result.ok
    last = result.steps[6]
    assert last.status == "needs_person" and last.error is not None
    assert (
        last.error["code"] == "needs_person" and "can't tell which element" in last.error["message"]
    )
    assert await status_text(tab) == ""  # no other order was edited instead


async def test_a_scenario_of_no_steps_does_not_succeed(tab: Tab) -> None:
    """Nothing done and nothing checked is no success: it succeeded, and so did every batch
    row, firing and caller of it."""
    empty = Scenario.from_dict({"version": 1, "name": "Nothing", "steps": []})
    result = await Replay(tab, empty).run()
    assert (result.status, result.reason) == (
        "failed",
        "the scenario has no steps: nothing was replayed",
    )


SEARCHED_PAGE = b"""<!doctype html><title>Found</title><h1>Found</h1><script>
  history.replaceState(null, "", "/found?name=" + encodeURIComponent("Grace Hopper") + "&x=1");
</script>"""
PRESS_PAGE = b"""<!doctype html><title>Form</title><p id="out"></p>
<button onclick="out.textContent = this.textContent + ' pressed'">Sign up</button>
<button onclick="out.textContent = this.textContent + ' pressed'">Cancel</button>"""


async def test_a_parameter_in_a_step_s_role_and_name_is_filled_in(tab: Tab) -> None:
    """A file's step given as a role and a name (no identity), the name a parameter's: the
    replay looked for a button named "${b}" and asked a person; it clicks the button the
    value names, and the parameter is one the scenario uses (a batch's column for it)."""

    class Site(QuietHandler):
        def do_GET(self) -> None:
            self.send(200, PRESS_PAGE)

    with loopback_app(Site) as site:
        scenario = Scenario.from_dict({
            "version": 1, "name": "Press", "params": {"b": {"default": "Cancel"}},
            "steps": [{"action": "navigate", "args": {"url": site + "/"}},
                      {"action": "click", "args": {}, "role": "button", "name": "${b}"},
                      {"action": "expect",
                       "args": {"kind": "text_visible", "text": "Sign up pressed"}}],
        })  # fmt: skip
        assert scenario.placeholders() == ({"b"}, set())
        result = await Replay(tab, scenario, params={"b": "Sign up"}).run()
        assert result.status == "passed", result.reason


async def test_a_url_check_holds_in_replay_and_export_however_the_app_encodes_it(
    tab: Tab, tmp_path: Path
) -> None:
    """An app whose script writes the search into its address as encodeURIComponent does
    ("Grace%20Hopper"), a check of it as a form writes it ("Grace+Hopper"): replay read it
    as the same address and the pytest export did not (a regex of the text as written),
    so the export failed where the replay passed.  Both read it by one rule now, and both
    fail an address that differs."""

    class Site(QuietHandler):
        def do_GET(self) -> None:
            self.send(200, SEARCHED_PAGE)

    with loopback_app(Site) as site:
        for name, held in (("Grace+Hopper", True), ("Grace+Hoppers", False)):
            scenario = Scenario.from_dict({
                "version": 1, "name": "Found", "base_url": site + "/",
                "steps": [{"action": "navigate", "args": {"url": site + "/"}},
                          {"action": "expect",
                           "args": {"kind": "url", "url": f"/found?name={name}&x=1"}}],
            })  # fmt: skip
            replayed = await Replay(
                tab, scenario, config=ReplayConfig(check_timeout_ms=2_000)
            ).run()
            folder = tmp_path / name
            folder.mkdir()
            status, out = await run_exported(
                to_pytest(scenario), folder, site + "/", timeout_ms=2_000
            )
            assert (replayed.status == "passed", status == 0) == (held, held), (name, out[-2000:])


async def test_with_a_person_the_replay_pauses_and_carries_on_when_told(
    tab: Tab, scenario: Scenario, fixture_url: str
) -> None:
    control = RunControl()
    sink = WaitingSink()
    extra = ScenarioStep("navigate", {"url": f"{fixture_url}/replay/v1/login.html"})
    longer = replace(scenario, steps=(*scenario.steps, extra))
    replay = Replay(tab, longer, base_url=f"{fixture_url}/replay/v3", env=ENV,
                    sink=sink, control=control, config=GONE_SOON)  # fmt: skip
    task = asyncio.create_task(replay.run())
    paused = await sink.wait_for(RunPaused)
    assert paused.reason == "needs_person" and 'reply "skip"' in paused.detail
    control.resume()  # try again: still gone, so it pauses again
    await sink.wait_for(RunPaused, 2)
    control.reply("skip")
    result = await asyncio.wait_for(task, 60)
    assert result.ok, result.to_dict()
    assert [s.status for s in result.steps][-2:] == ["skipped", "passed"]
    assert tab.url.endswith("/replay/v3/login.html")
    # The step the person did is recorded again, done: a scenario saved from this replay
    # keeps it (the record of its failed try left it out, and that scenario's replay
    # passed without doing it).
    skipped = result.steps[-2].index
    records = [e for e in sink.events if isinstance(e, StepRecorded)]
    tries = [e for e in records if e.index == skipped]
    assert [e.ok for e in tries] == [False, False, True], tries
    assert tries[-1].identity == longer.steps[skipped].identity.to_dict()  # as looked for
    rows = {e.index: e.to_dict() for e in records}  # the last of each, as stored
    saved = from_run_steps(list(rows.values()), name="Saved", base_url=f"{fixture_url}/replay/v3")
    assert [st.action for st in saved.steps] == [st.action for st in longer.steps]
    assert saved.steps[skipped].identity == longer.steps[skipped].identity


async def test_a_replay_s_pause_whose_recorder_could_not_start_says_so(
    tab: Tab, scenario: Scenario, fixture_url: str, recorder_cannot_start: None
) -> None:
    control, sink = RunControl(), WaitingSink()
    replay = Replay(tab, scenario, base_url=f"{fixture_url}/replay/v3", env=ENV,
                    sink=sink, control=control, config=GONE_SOON)  # fmt: skip
    task = asyncio.create_task(replay.run())
    paused = await sink.wait_for(RunPaused)
    assert paused.reason == "needs_person" and NOT_RECORDED in paused.detail
    control.stop()
    await asyncio.wait_for(task, 60)


async def test_a_pause_the_person_asks_for_is_taken_before_the_next_step(
    tab: Tab, scenario: Scenario, fixture_url: str
) -> None:
    control = RunControl()
    control.request_pause()  # before the first step
    sink = WaitingSink()
    replay = Replay(tab, scenario, base_url=f"{fixture_url}/replay/v1", env=ENV,
                    sink=sink, control=control)  # fmt: skip
    task = asyncio.create_task(replay.run())
    paused = await sink.wait_for(RunPaused)
    assert paused.reason == "requested" and "before step 0" in paused.detail
    assert not any(isinstance(e, StepRecorded) for e in sink.events)  # nothing ran yet
    assert tab.url == "about:blank"
    control.resume()
    result = await asyncio.wait_for(task, 60)
    assert result.ok and result.steps[0].status == "passed", result.to_dict()
    assert sum(isinstance(e, RunPaused) for e in sink.events) == 1  # asked once, paused once


async def test_secrets_never_reach_an_event_or_a_result(tab: Tab, scenario: Scenario) -> None:
    sink = WaitingSink()
    result = await Replay(tab, scenario, sink=sink, env=ENV).run()
    assert result.ok
    everything = json.dumps([e.to_dict() for e in sink.events]) + json.dumps(result.to_dict())
    assert PASSWORD not in everything and "${SECRET:PASSWORD}" in everything


async def test_missing_secrets_and_parameters_fail_before_anything_runs(
    tab: Tab, scenario: Scenario
) -> None:
    with pytest.raises(ParamMissing, match="TABWRIGHT_SECRET_PASSWORD"):
        Replay(tab, scenario, env={})
    bare = Scenario.from_dict({**scenario.to_dict(), "params": {}})
    with pytest.raises(ParamMissing, match="parameter 'email'"):
        Replay(tab, bare, env=ENV)
    assert tab.url == "about:blank"


async def test_a_base_url_that_does_not_answer_fails_at_the_first_step(
    tab: Tab, scenario: Scenario
) -> None:
    from tests.net import free_port

    dead = f"http://127.0.0.1:{free_port()}"
    result = await Replay(tab, scenario, base_url=dead, env=ENV).run()
    assert result.status == "failed" and result.steps[0].status == "failed"
    assert (
        result.steps[0].error is not None
        and "connection refused" in result.steps[0].error["message"]
    )
    assert {s.status for s in result.steps[1:]} == {"not_run"}


async def test_a_step_stored_before_identities_replays_by_its_selector_and_is_healed(
    tab: Tab, fixture_url: str
) -> None:
    old = Scenario.from_dict({
        "version": 1, "name": "old", "steps": [
            {"action": "navigate", "args": {"url": f"{fixture_url}/replay/v1/orders.html"}},
            {"action": "click", "args": {}, "role": "button", "name": "Edit",
             "selector": "tr:nth-child(4) > td > button"},
        ],
    })  # fmt: skip
    result = await Replay(tab, old).run()
    assert result.ok, result.to_dict()
    assert result.steps[1].strategy == "selector"
    assert (
        result.steps[1].healed is not None and result.steps[1].healed["row"] == "#1003 Alan Turing"
    )
    assert await status_text(tab) == "Editing order #1003"


def waiting_for_nothing(fixture_url: str) -> Scenario:
    """Open a page, wait for a text it never shows, reload."""
    return Scenario.from_dict({
        "version": 1, "name": "waits", "steps": [
            {"action": "navigate", "args": {"url": f"{fixture_url}/replay/v1/orders.html"}},
            {"action": "wait_for", "args": {"text": "never shown"}},
            {"action": "reload", "args": {}},
        ],
    })  # fmt: skip


async def test_a_step_out_of_time_fails_the_replay_and_the_rest_does_not_run(
    tab: Tab, fixture_url: str
) -> None:
    waits = waiting_for_nothing(fixture_url)
    result = await Replay(tab, waits, config=ReplayConfig(step_timeout_ms=2_000)).run()
    assert result.status == "failed"
    assert [s.status for s in result.steps] == ["passed", "failed", "not_run"]
    assert result.steps[1].error is not None


async def test_a_replay_out_of_time_names_its_own_budget(tab: Tab, fixture_url: str) -> None:
    waits = waiting_for_nothing(fixture_url)
    config = ReplayConfig(step_timeout_ms=60_000, run_timeout_ms=3_000)
    result = await Replay(tab, waits, config=config).run()
    assert result.status == "failed"
    assert result.reason == "the replay ran out of its 3000 ms budget"
    assert result.steps[2].status == "not_run"


async def test_the_exported_pytest_file_runs_the_scenario_with_role_first_locators(
    tab: Tab, scenario: Scenario, fixture_url: str, tmp_path: Path
) -> None:
    code = to_pytest(scenario)
    assert "get_by_role('button', name='Sign in', exact=True).click()" in code
    assert "rows_showing(page, '\\\\#1002\\\\s*Grace\\\\s*Hopper'" in code  # its row
    assert PASSWORD not in code and "os.environ['TABWRIGHT_SECRET_PASSWORD']" in code
    status, out = await run_exported(
        code, tmp_path, f"{fixture_url}/replay/v1", {**ENV, "EMAIL": "grace@example.org"}
    )
    assert status == 0 and "1 passed" in out, out


async def test_the_replay_and_its_pytest_export_type_the_same_on_a_base_that_ends_in_a_slash(
    tab: Tab, fixture_url: str, tmp_path: Path
) -> None:
    """A type step replaces what the field held, in the replay and in the export alike,
    and a base URL written as a folder ("…/demo/") moves the addresses the same way."""
    base = f"{fixture_url}/demo/"
    name = {"role": "textbox", "name": "Name", "selector": "#name"}
    scenario = Scenario.from_dict({
        "version": 1, "name": "Greet Grace", "base_url": base, "steps": [
            {"action": "navigate", "args": {"url": f"{base}form.html"}},
            {"action": "fill", "args": {"value": "Ada"}, **name},
            {"action": "type", "args": {"text": "Grace"}, **name},
            {"action": "type", "args": {"text": "ada@example.org"}, "role": "textbox",
             "name": "Email", "selector": "#email"},
            {"action": "click", "args": {}, "role": "button", "name": "Sign up",
             "selector": "#signup button"},
            {"action": "expect", "args": {"kind": "text_visible", "text": "Welcome, Grace!"}},
        ],
    })  # fmt: skip
    result = await Replay(tab, scenario, base_url=base).run()
    assert result.status == "passed", result.reason
    status, out = await run_exported(to_pytest(scenario), tmp_path, base)
    assert status == 0 and "1 passed" in out, out


async def test_what_a_person_recorded_replays_on_the_next_release(
    tab: Tab, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/replay/v1/login.html")
    recorder = Recorder(tab)
    await recorder.start()
    page = tab.page
    await page.locator("#email").click()
    await page.keyboard.type("ada@example.org")
    await page.locator("#pw").click()
    await page.keyboard.type(PASSWORD)
    await page.get_by_text("Remember me").click()
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url("**/orders.html")
    await page.locator("tr", has_text="#1002").get_by_role("button", name="Edit").click()
    await expect_text(tab, "Editing order #1002")
    steps = await recorder.stop()
    assert [s.action for s in steps] == ["navigate", "fill", "fill", "check", "click", "click"]
    assert steps[2].args == {"value": "${SECRET:PASSWORD}"}
    recorded = Scenario("Edit Grace's order", tuple(steps), base_url=f"{fixture_url}/replay/v1")
    recorded = Scenario.from_dict(json.loads(json.dumps(recorded.to_dict())))
    await tab.page.goto("about:blank")
    result = await Replay(tab, recorded, base_url=f"{fixture_url}/replay/v2", env=ENV).run()
    assert result.ok, result.to_dict()
    assert await status_text(tab) == "Editing order #1002"  # its row moved; still the right one


async def expect_text(tab: Tab, text: str) -> None:
    await tab.wait_for(text=text, budget=room())


async def test_a_step_no_one_comes_to_do_ends_the_replay_after_the_wait_for_a_person(
    tab: Tab, scenario: Scenario, fixture_url: str
) -> None:
    control, sink = RunControl(), WaitingSink()
    config = replace(GONE_SOON, person_wait_ms=200)
    replay = Replay(tab, scenario, base_url=f"{fixture_url}/replay/v3", env=ENV,
                    sink=sink, control=control, config=config)  # fmt: skip
    async with asyncio.timeout(60):  # the wait for a person ends it, not this
        result = await replay.run()
    assert result.status == "needs_person" and not result.ok
    assert len(sink.of_type(RunPaused)) == 1 and not control.paused
    assert result.reason.startswith("step 6 (")
    assert result.reason.endswith("; no one came to do it within 0.2 s"), result.reason
    assert sink.of_type(RunFinished)[-1].status == "failed"


DRAFTS = b"""<!doctype html><title>Drafts</title><h1>Drafts</h1><table><tbody>
<tr id="a"><td>Draft A</td><td><button>Delete</button></td></tr>
<tr id="b"><td>Draft B</td><td><button>Delete</button></td></tr></tbody></table>
<p role="status" id="said"></p>
<script>
for (const button of document.querySelectorAll("button")) {
  button.addEventListener("click", () => {
    const row = button.closest("tr");
    fetch("/delete?" + row.id, { method: "POST", body: row.id });
    row.remove();
    document.getElementById("said").textContent = "Deleted " + row.cells[0].textContent;
  });
}
</script>"""


async def test_a_step_the_person_did_while_paused_is_not_done_again_on_resume(
    tab: Tab,
) -> None:
    """Two drafts each with a Delete: the replay can't tell which the step means and
    pauses; the person deletes Draft A themselves and resumes.  The step is theirs (its
    element proposed), and nothing is deleted again: Draft B's Delete, the one left, was
    clicked as the step, a "confident" heal pointed the step at it, and the replay
    said succeeded with two drafts gone."""
    deleted: list[str] = []

    class Drafts(QuietHandler):
        def do_GET(self) -> None:
            self.send(200, DRAFTS)

        def do_POST(self) -> None:
            deleted.append(self.path)
            self.send(204)

    with loopback_app(Drafts) as url:
        deleted_said = {"kind": "text_visible", "text": "Deleted"}
        scenario = Scenario.from_dict({"version": 1, "name": "Delete a draft", "base_url": url,
            "steps": [{"action": "navigate", "args": {"url": f"{url}/drafts"}},
                      {"action": "click", "args": {}, "role": "button", "name": "Delete"},
                      {"action": "expect", "args": deleted_said}]})  # fmt: skip
        control, sink = RunControl(), WaitingSink()
        replay = Replay(tab, scenario, sink=sink, control=control, config=GONE_SOON)
        task = asyncio.create_task(replay.run())
        paused = await sink.wait_for(RunPaused)
        assert "ambiguous" in paused.detail, paused.detail
        box = await tab.page.locator("#a button").bounding_box()
        assert box is not None
        await tab.page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        await tab.wait_for(text="Deleted Draft A", budget=room())
        control.resume()
        async with asyncio.timeout(60):
            result = await task
    assert result.ok, result.to_dict()
    step = result.steps[1]
    assert (step.status, step.strategy) == ("skipped", "person"), step
    assert step.healed is not None and "Draft A" in str(step.healed.get("row", ""))
    assert deleted == ["/delete?a"]
