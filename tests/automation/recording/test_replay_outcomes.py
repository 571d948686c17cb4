"""Replays whose verdict can be trusted (fixtures/outcomes/): a person's recording on one
release replays on another written apart (drawn late, a form that reloads the page, rows
redrawn in a click handler, other names), is judged by its expect checks, and fails when
they do not hold; a base URL naming a file, an HTTP error, a person's rescue and heals
that accumulate variants."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from playwright.async_api import Page

from automation import Tab
from automation.browser.identity import ElementIdentity, locate
from automation.control import RunControl
from automation.events import RunPaused, StepRecorded
from automation.recording.export import to_pytest
from automation.recording.fromrun import from_run_steps
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig, StepOutcome
from automation.recording.scenario import Scenario, ScenarioStep
from tests.bounds import room
from tests.exported import run_exported
from tests.sinks import WaitingSink

STATE = "() => JSON.parse(sessionStorage.getItem('todos') || '[]')"

pytestmark = pytest.mark.long  # one of the longest files: dealt out first


async def person_click(page: Page, selector: str) -> None:
    box = await page.locator(selector).first.bounding_box()
    assert box is not None, selector
    await page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


async def record_on_v1(tab: Tab, fixture_url: str) -> Scenario:
    """A person adds two todos on release 1 and ticks the first, with real input."""
    await tab.navigate(f"{fixture_url}/outcomes/v1/index.html")
    recorder = Recorder(tab)
    await recorder.start()
    for title in ("Buy milk", "Walk the dog"):
        await person_click(tab.page, "#new")
        await tab.page.keyboard.type(title)
        await tab.page.keyboard.press("Enter")
        await asyncio.sleep(0.2)
    await person_click(tab.page, "li:first-child input")
    await asyncio.sleep(0.3)
    steps = await recorder.stop()
    return Scenario(
        name="Two todos, the first done", steps=tuple(steps),
        base_url=f"{fixture_url}/outcomes/v1",
    )  # fmt: skip


def checks(*extra: ScenarioStep) -> tuple[ScenarioStep, ...]:
    return (
        ScenarioStep("expect", {"kind": "rows", "text": "Buy milk", "count": 1}),
        ScenarioStep("expect", {"kind": "text_visible", "text": "1 item left"}),
        *extra,
    )


@pytest.fixture
async def recorded(tab: Tab, fixture_url: str) -> Scenario:
    scenario = await record_on_v1(tab, fixture_url)
    await tab.page.goto("about:blank")
    return scenario


async def test_the_recording_replays_on_a_release_written_apart(
    browser, recorded: Scenario, fixture_url: str
) -> None:
    assert [s.action for s in recorded.steps] == [
        "navigate", "fill", "press", "fill", "press", "check",
    ]  # fmt: skip
    tab = await browser.new_tab()  # a fresh context: its own sessionStorage
    try:
        box = recorded.steps[5].target()
        assert box is not None
        tick = ScenarioStep("expect", {"kind": "checked"}, box)
        scenario = replace(recorded, steps=(*recorded.steps, *checks(tick)))
        # The base URL names a file: it means its folder.
        result = await Replay(tab, scenario, base_url=f"{fixture_url}/outcomes/v2/index.html").run()
        assert result.ok, result.to_dict()
        assert tab.url == f"{fixture_url}/outcomes/v2/index.html"
        assert await tab.page.evaluate(STATE) == [
            {"title": "Buy milk", "done": True}, {"title": "Walk the dog", "done": False},
        ]  # fmt: skip
        by_index = {s.index: s for s in result.steps}
        assert by_index[1].strategy == "attribute"  # renamed; its placeholder proves it
        assert by_index[5].status == "passed" and by_index[5].heal  # unnamed now
        assert [s.status for s in result.steps[6:]] == ["passed"] * 3
        assert result.steps[8].result == "checkbox 'Toggle' in row 'Buy milk' is ticked: yes"
    finally:
        await tab.close()


async def test_a_replay_whose_checks_fail_is_failed_and_reports_each(
    browser, recorded: Scenario, fixture_url: str
) -> None:
    tab = await browser.new_tab()
    try:
        wrong = (
            ScenarioStep("expect", {"kind": "text_visible", "text": "2 items left"}),
            ScenarioStep("expect", {"kind": "rows", "text": "Walk the dog", "count": 0}),
            ScenarioStep("expect", {"kind": "url", "url": f"{fixture_url}/outcomes/v1/index.html"}),
        )
        scenario = replace(recorded, steps=(*recorded.steps, *wrong))
        config = ReplayConfig(check_timeout_ms=1_500)
        result = await Replay(tab, scenario, config=config).run()
        assert result.status == "failed" and not result.ok
        statuses = [s.status for s in result.steps]
        assert statuses[:6] == ["passed"] * 6 and statuses[6:] == ["failed", "failed", "passed"]
        assert result.reason.startswith(
            "step 6 (expect text '2 items left' is visible): expected text '2 items left' "
            "is visible, but it is not shown"
        )
        assert result.reason.endswith("(and 1 more checks failed)")
        assert result.steps[7].error["message"].endswith("but 1 row(s) show it")  # type: ignore[index]
        assert result.steps[6].error["code"] == "check_failed"  # type: ignore[index]
    finally:
        await tab.close()


async def test_a_navigate_answered_with_an_http_error_fails_naming_the_status(
    tab: Tab, recorded: Scenario, fixture_url: str
) -> None:
    result = await Replay(tab, recorded, base_url=f"{fixture_url}/outcomes/v9/").run()
    assert result.status == "failed"
    assert "the server answered HTTP 404" in result.reason
    assert result.steps[0].error["code"] == "http_status"  # type: ignore[index]
    assert [s.status for s in result.steps[1:]] == ["not_run"] * 5


async def test_the_pytest_export_asserts_the_checks(recorded: Scenario) -> None:
    box = recorded.steps[5].target()
    scenario = replace(
        recorded, steps=(*recorded.steps, *checks(ScenarioStep("expect", {"kind": "checked"}, box)))
    )
    text = to_pytest(scenario)
    compile(text, "exported.py", "exec")
    # A text's checks read the page by replay's rule of what a person sees.
    assert "expect_rows(page, 'Buy milk', 1)" in text
    assert "expect_text(page, '1 item left')" in text
    row = "'(?<!\\\\w[^\\\\S\\\\n]*)Buy\\\\s*milk'"  # (its cell begins with it)
    assert f"rows_showing(page, {row}).get_by_role('checkbox', " in text
    # The last check, then the helper that fails a write the server refused, then the
    # checks of a state the app keeps read again, on the page they read, and last a write
    # answered in JSON that it failed.
    end = text[
        text.index(".to_be_checked()\n    documents, address = len(DOCUMENT), page.url\n"
                   "    served(page)") :
    ]  # fmt: skip
    assert "\n    if not went_on(page, documents, address):" in end
    again, box = end.rstrip().split("\n        kept_tick(")  # then the box the step ticked
    box, refused, last = box.split("\n")  # then its save refused on the page (a check's
    # text aside), then a write answered in JSON that it failed
    assert last == "    answered_ok()"
    assert again.splitlines()[-2].endswith(".to_be_checked()") and box.endswith(", True)")
    # (with the errors the page showed right after the step: errors_then's)
    assert refused == "        refused_in_place(page, sent, shown, ['1 item left'], THEN)"
    assert "    errors_then(page, sent, shown, ['1 item left'])\n" in text


async def test_a_person_s_rescue_is_proposed_as_the_step_s_identity(
    browser, recorded: Scenario, fixture_url: str
) -> None:
    """The box's row is renamed on this release, so replay can't be sure which box the
    tick means and pauses; the person ticks it on the page and resumes."""
    tab = await browser.new_tab()
    try:
        await tab.navigate(f"{fixture_url}/outcomes/v1/index.html")
        # The same release, but the first row now reads otherwise.
        steps = list(recorded.steps)
        box = steps[5].identity
        assert box is not None
        steps[5] = replace(steps[5], identity=replace(box, row="Buy oat milk", name="Tick"))
        control, sink = RunControl(), WaitingSink()
        replay = Replay(tab, replace(recorded, steps=tuple(steps)), sink=sink, control=control,
                        config=ReplayConfig(locate_wait_ms=300))  # fmt: skip
        task = asyncio.create_task(replay.run())
        paused = await sink.wait_for(RunPaused)
        assert paused.reason == "needs_person" and "Do the step yourself" in paused.detail
        await person_click(tab.page, "li:first-child input")  # the person does it
        await asyncio.sleep(0.3)
        control.resume()
        result = await asyncio.wait_for(task, 60)
        assert result.ok, result.to_dict()
        rescued = result.steps[5]
        assert rescued.status == "skipped" and rescued.strategy == "person"
        assert rescued.heal == "proposed" and rescued.healed is not None
        assert rescued.changes[0] == "done by the person"
        healed = ElementIdentity.from_dict(rescued.healed)
        assert healed.row == "Buy milk" and healed.name == "Toggle"
        # The next replay finds the box by the proposed identity, at once.
        await tab.page.goto("about:blank")
        steps[5] = replace(steps[5], identity=healed)
        again = await Replay(tab, replace(recorded, steps=tuple(steps))).run()
        assert again.ok and again.steps[5].status == "passed", again.to_dict()
        assert not again.steps[5].changes
    finally:
        await tab.close()


async def test_heals_accumulate_variants_and_each_release_is_found(
    browser, recorded: Scenario, fixture_url: str
) -> None:
    """Replayed on release 1, then 2, then 1 again: the field keeps both identities and
    is found on each without anything being rewritten the third time."""
    field = recorded.steps[1].identity
    assert field is not None and field.id == "new"
    tab = await browser.new_tab()
    try:
        await tab.navigate(f"{fixture_url}/outcomes/v2/index.html")
        on_v2 = await locate(tab.page, field, budget=room(), wait_ms=3_000)
        assert on_v2.found is not None and on_v2.changes
        healed = field.confirmed_as(on_v2.found)
        assert healed.aria_label == "New Todo Input" and healed.variants[0].id == "new"
        assert ElementIdentity.from_dict(healed.to_dict()) == healed  # kept through JSON
        await tab.navigate(f"{fixture_url}/outcomes/v1/index.html")
        on_v1 = await locate(tab.page, healed, budget=room())
        assert on_v1.ok and on_v1.variant == 1 and not on_v1.changes
        again = healed.confirmed_as(on_v2.found)  # confirmed on release 2 once more
        assert len(again.variants) == 1 and again.variants[0].id == "new"
    finally:
        await tab.close()


async def test_the_exported_test_passes_and_fails_with_the_checks(
    recorded: Scenario, fixture_url: str, tmp_path: Path
) -> None:
    box = recorded.steps[5].target()
    good = replace(recorded, steps=(
        *recorded.steps, *checks(ScenarioStep("expect", {"kind": "checked"}, box))
    ))  # fmt: skip
    code, out = await run_exported(to_pytest(good), tmp_path, f"{fixture_url}/outcomes/v1")
    assert code == 0 and "1 passed" in out, out
    wrong = ScenarioStep("expect", {"kind": "text_visible", "text": "2 items left"})
    bad = replace(recorded, steps=(*recorded.steps, wrong))
    code, out = await run_exported(  # the wrong check waits 4 s, as long as a step
        to_pytest(bad), tmp_path, f"{fixture_url}/outcomes/v1", timeout_ms=4_000
    )
    assert code == 1 and "1 failed" in out and "2 items left" in out, out
    assert "(waited 4000 ms)" in out, out


def healed(scenario: Scenario, outcomes: list[StepOutcome]) -> Scenario:
    """The scenario with each confident heal written back, as the dashboard writes it:
    the element as found, what it was known as kept as a variant."""
    steps = list(scenario.steps)
    for outcome in outcomes:
        step = steps[outcome.index]
        if outcome.heal == "confident" and outcome.healed and step.identity is not None:
            now = ElementIdentity.from_dict(outcome.healed)
            steps[outcome.index] = replace(step, identity=step.identity.confirmed_as(now))
    return replace(scenario, steps=tuple(steps))


async def test_the_export_of_a_scenario_healed_on_another_release_runs_on_both(
    browser, recorded: Scenario, fixture_url: str, tmp_path: Path
) -> None:
    """Recorded on release 1, healed on release 2 (the field is named otherwise, the
    boxes have no names): the exported file passes on both, as the replay does."""
    box = recorded.steps[5].target()
    scenario = replace(recorded, steps=(
        *recorded.steps, *checks(ScenarioStep("expect", {"kind": "checked"}, box))
    ))  # fmt: skip
    tab = await browser.new_tab()
    try:
        on_v2 = await Replay(tab, scenario, base_url=f"{fixture_url}/outcomes/v2").run()
    finally:
        await tab.close()
    assert on_v2.ok, on_v2.to_dict()
    assert {o.index for o in on_v2.steps if o.heal == "confident"} >= {1, 5}
    scenario = healed(scenario, on_v2.steps)
    field = scenario.steps[1].identity
    assert field is not None and field.name == "New Todo Input" and field.variants
    for release in ("v1", "v2"):  # the replay passes on both, the variants finding each
        tab = await browser.new_tab()
        try:
            again = await Replay(tab, scenario, base_url=f"{fixture_url}/outcomes/{release}").run()
        finally:
            await tab.close()
        assert again.ok, (release, again.to_dict())
    code = to_pytest(scenario)
    assert ".or_(page.get_by_role('textbox', name='New todo', exact=True))" in code
    for release in ("v1", "v2"):
        folder = tmp_path / release
        folder.mkdir()
        status, out = await run_exported(code, folder, f"{fixture_url}/outcomes/{release}")
        assert status == 0 and "1 passed" in out, (release, out)


async def test_a_parameter_reaches_the_steps_and_checks_that_use_its_value(
    browser, recorded: Scenario, fixture_url: str
) -> None:
    """ "Buy milk" made the parameter ``item``: the tick finds its box in the row of the
    value given, the checks count that value's rows, on either release; a heal written
    back keeps the parameter."""
    box = recorded.steps[5].target()
    scenario = replace(recorded, steps=(
        *recorded.steps, *checks(ScenarioStep("expect", {"kind": "checked"}, box))
    )).with_param(1, "item")  # fmt: skip
    steps = scenario.steps
    assert steps[1].args["value"] == "${item}" and steps[3].args["value"] == "Walk the dog"
    assert steps[5].identity is not None and steps[5].identity.row == "${item}"
    assert steps[5].describe() == "tick checkbox 'Toggle' in row '${item}'"
    assert steps[6].args == {"kind": "rows", "text": "${item}", "count": 1}
    assert steps[7].args == {"kind": "text_visible", "text": "1 item left"}
    assert steps[8].identity is not None and steps[8].identity.row == "${item}"
    assert scenario.params == {"item": {"default": "Buy milk"}}
    for item, release in (("Call mom", "v1"), ("Pay the rent", "v2")):
        tab = await browser.new_tab()
        try:
            result = await Replay(tab, scenario, params={"item": item},
                                  base_url=f"{fixture_url}/outcomes/{release}").run()  # fmt: skip
            assert result.ok, (release, result.to_dict())
            ticked = tab.page.locator("li").filter(has_text=item).locator("input")
            assert await ticked.is_checked()
        finally:
            await tab.close()
        rows = [ElementIdentity.from_dict(o.healed).row for o in result.steps[5:] if o.healed]
        assert rows == ([] if release == "v1" else ["${item}", "${item}"])  # v2: unnamed boxes


async def test_a_replay_saved_as_a_scenario_keeps_the_parameter_it_ran_with(
    browser, recorded: Scenario, fixture_url: str
) -> None:
    """A replay with item="Call mom", saved as a scenario (its steps as the run recorded
    them), ticks the row of the value its own replay is given: its steps look for the row
    ``${item}``, as the scenario replayed did, not for "Call mom"'s."""
    scenario = replace(recorded, steps=(*recorded.steps, *checks())).with_param(1, "item")
    sink = WaitingSink()
    tab = await browser.new_tab()
    try:
        ran = await Replay(tab, scenario, params={"item": "Call mom"}, sink=sink,
                           base_url=f"{fixture_url}/outcomes/v2").run()  # fmt: skip
    finally:
        await tab.close()
    assert ran.ok, ran.to_dict()
    rows = {e.index: e.to_dict() for e in sink.of_type(StepRecorded)}  # the last of each
    assert "Call mom" in rows[5]["words"]["text"]  # as the person watching saw it
    saved = from_run_steps(list(rows.values()), name="Saved")
    assert saved.base_url == scenario.base_url  # in the scenario's terms, not the replay's
    assert saved.placeholders()[0] == {"item"}
    tick = saved.steps[5].identity
    assert tick is not None and tick.row == "${item}", tick
    assert not any("Call mom" in s for s in tick.selectors)
    saved = replace(saved, params={"item": {"default": "Call mom"}})
    tab = await browser.new_tab()
    try:
        again = await Replay(tab, saved, params={"item": "Pay the rent"}).run()
        assert again.ok, again.to_dict()
        ticked = tab.page.locator("li").filter(has_text="Pay the rent").locator("input")
        assert await ticked.is_checked()
    finally:
        await tab.close()
