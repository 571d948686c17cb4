"""Replays whose verdict can be trusted (fixtures/outcomes/): a person's recording on one
release replays on another written apart (drawn late, a form that reloads the page, rows
redrawn in a click handler, other names), is judged by its expect checks, and fails when
they do not hold; a base URL naming a file, an HTTP error, a person's rescue and heals
that accumulate variants."""

from __future__ import annotations

import asyncio
import html
import time
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qs, quote, quote_plus, unquote, urlsplit

import pytest
from playwright.async_api import Page

from automation import Tab
from automation.browser.identity import ElementIdentity, capture, locate
from automation.budget import Budget
from automation.control import RunControl
from automation.events import RunPaused, StepRecorded
from automation.recording.export import to_pytest
from automation.recording.fromrun import from_run_steps
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig, StepOutcome
from automation.recording.scenario import Scenario, ScenarioStep
from tests.bounds import room
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
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
    assert "rows_showing(page, 'Buy\\\\s*milk').get_by_role('checkbox', " in text
    # The last check, then the helper that fails a write the server refused, then the
    # checks of a state the app keeps read again, on the page they read.
    end = text[
        text.index(".to_be_checked()\n    documents, address = len(DOCUMENT), page.url\n"
                   "    served(page)") :
    ]  # fmt: skip
    assert "\n    if not went_on(page, documents, address):" in end
    again, box = end.rstrip().split("\n        kept_tick(")  # then the box the step ticked
    box, refused = box.split("\n")  # then its save refused on the page, a check's text aside
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


CUSTOMERS = ("Ann Lee, Jr.", "bob@example.org", "Zoë Ray")
# How a page may write a customer's name into its "Pay" link: as it is in the query (the
# browser keeps "@" and "," there), as a template's urlencode does, as a path segment.
LINKS = {
    "query as written": lambda name: f"/paid?who={html.escape(name)}",
    "query urlencoded": lambda name: f"/paid?who={quote_plus(name)}",
    "path segment": lambda name: f"/paid/to/{quote(name, safe='')}",
}


class _PayLinks(QuietHandler):
    """Customers, each a row with a Note field above and a "Pay" link to its own page,
    written as ``LINKS[link]`` says; ``paid`` keeps whom each payment was for."""

    link = "query as written"
    paid: list[str] = []

    def do_GET(self) -> None:
        where = urlsplit(self.path)
        if where.path.startswith("/paid"):
            to = where.path.removeprefix("/paid/to/") if where.path != "/paid" else ""
            self.paid.append(unquote(to) or parse_qs(where.query)["who"][0])
            self.send(200, b"<!doctype html><title>Paid</title><h1>Paid</h1>")
            return
        rows = "".join(f'<tr><td>{html.escape(name)}</td><td><a href="{LINKS[self.link](name)}">'
                       "Pay</a></td></tr>" for name in CUSTOMERS)  # fmt: skip
        self.send(200, ("<!doctype html><title>Customers</title><h1>Customers</h1>"
                        '<label>Note <input id="note"></label>'
                        f"<table>{rows}</table>").encode())  # fmt: skip


@pytest.mark.parametrize("link", list(LINKS))
async def test_a_parameter_is_found_in_each_row_s_link_however_the_page_writes_it(
    tab: Tab, link: str
) -> None:
    """Bob's "Pay" clicked after his e-mail was typed, the typed value made a parameter:
    a replay for each other customer pays that customer, whether the page writes the name
    into its link as it is (``?who=bob@example.org``, which the parameter did not reach:
    every replay paid Bob, and passed), urlencoded, or as a path segment."""
    _PayLinks.link, _PayLinks.paid = link, []
    with loopback_app(_PayLinks) as app:
        await tab.page.goto(f"{app}/customers")
        budget = Budget(10_000)
        note = await capture(await tab.page.query_selector("#note"), budget=budget)
        pay = await capture(await tab.page.query_selector("tr:nth-child(2) a"), budget=budget)
        steps = (ScenarioStep("navigate", {"url": f"{app}/customers"}),
                 ScenarioStep("fill", {"value": CUSTOMERS[1]}, note),
                 ScenarioStep("click", {}, pay))  # fmt: skip
        scenario = Scenario("Pay", steps, base_url=app).with_param(1, "customer")
        for who in (CUSTOMERS[0], CUSTOMERS[2]):
            result = await Replay(tab, scenario, params={"customer": who}).run()
            assert result.ok, result.to_dict()
        assert _PayLinks.paid == [CUSTOMERS[0], CUSTOMERS[2]], _PayLinks.paid


class _LongNotes(QuietHandler):
    """Orders to approve, each row a long delivery note (the same for all) before its
    number, and an Approve posting the order's number; ``approved`` keeps which were."""

    NOTE = ("Deliver to the loading bay behind the warehouse, ring twice, ask for the "
            "duty manager, never leave parcels outside, call ahead on public holidays, "
            "pallets go through gate B only, the forklift is shared with the bakery.")  # fmt: skip
    pending: list[int] = []
    approved: list[int] = []

    def do_GET(self) -> None:
        rows = "".join(
            f"<tr><td>{self.NOTE}</td><td>Order {n}</td><td><form method=post action=/approve>"
            f"<input type=hidden name=order value={n}><button>Approve</button></form></td></tr>"
            for n in self.pending
        )
        page = f"<!doctype html><title>Orders</title><h1>Orders</h1><table>{rows}</table>"
        self.send(200, page.encode())

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        order = int(parse_qs(body)["order"][0])
        self.approved.append(order)
        self.pending.remove(order)
        self.send(303, Location="/orders")


async def test_a_row_s_action_is_not_taken_for_a_row_alike_for_what_its_identity_keeps(
    tab: Tab,
) -> None:
    """Order 1002's Approve, recorded where every row starts with the same long note: an
    identity keeps 200 characters of its row, all of them the note.  Replayed once 1002
    was approved, the replay approved 1003 (its Approve stood where 1002's had) and
    passed; it stops now, and approves 1002 wherever its row has moved."""
    _LongNotes.pending, _LongNotes.approved = [1001, 1002, 1003], []
    with loopback_app(_LongNotes) as app:
        await tab.page.goto(f"{app}/orders")
        approve = await tab.page.query_selector("tr:nth-child(2) button")
        identity = await capture(approve, budget=Budget(10_000))
        steps = (ScenarioStep("navigate", {"url": f"{app}/orders"}),
                 ScenarioStep("click", {}, identity))  # fmt: skip
        scenario = Scenario("Approve 1002", steps, base_url=app)
        _LongNotes.pending = [1001, 1003]  # 1002 approved by hand since
        result = await Replay(tab, scenario).run()
        assert not result.ok and _LongNotes.approved == [], result.to_dict()
        _LongNotes.pending = [1003, 1004, 1002]
        result = await Replay(tab, scenario).run()
        assert result.ok and _LongNotes.approved == [1002], result.to_dict()


class _SlowSave(QuietHandler):
    """A profile whose Save says "Saved" at once and sends the save, answered after a
    while with ``status``: refused, the app takes "Saved" back.  ``saves`` counts the
    saves the server answered."""

    status = 409
    delay_s = 1.5
    saves = 0

    def do_GET(self) -> None:
        page = """<!doctype html><title>Profile</title><h1>Profile</h1>
        <button id=save>Save</button> <a id=orders href="/orders">Orders</a><p id=said></p>
        <script>
        save.onclick = async () => {
          said.textContent = "Saved";
          const answer = await fetch("/save", {method: "POST", body: "x"});
          if (!answer.ok) said.textContent = "Could not save";
        };
        </script>"""
        self.send(200, page.encode() if self.path == "/profile" else b"<h1>Orders</h1>")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(self.delay_s)  # (a slow server: longer than the settle's bound)
        type(self).saves += 1
        self.send(self.status, b"{}", Content_Type="application/json")


async def save_then_leave(tab: Tab, app: str) -> Scenario:
    """Save, a check that it says "Saved", then the link to another page."""
    await tab.page.goto(f"{app}/profile")
    budget = Budget(10_000)
    save = await capture(await tab.page.query_selector("#save"), budget=budget)
    orders = await capture(await tab.page.query_selector("#orders"), budget=budget)
    steps = (ScenarioStep("navigate", {"url": f"{app}/profile"}),
             ScenarioStep("click", {}, save),
             ScenarioStep("expect", {"kind": "text_visible", "text": "Saved"}),
             ScenarioStep("click", {}, orders),
             ScenarioStep("expect", {"kind": "url", "url": f"{app}/orders"}))  # fmt: skip
    return Scenario("Save", steps, base_url=app)


@pytest.mark.parametrize("status", [409, 200])
async def test_a_check_after_a_slow_save_is_read_once_the_save_is_answered(
    tab: Tab, status: int
) -> None:
    """A save the server answers after the settle's bound, a check of what the app showed
    at once ("Saved"), then a link to another page: the check was read before the answer
    and held, and leaving the page cancelled the save in the browser, which the server
    refused: the replay passed.  The next step waits for a write under way; the refusal
    fails the check, and a save that was accepted replays as before."""
    _SlowSave.status, _SlowSave.saves = status, 0
    tab.settler.configure(bound_ms=500)
    with loopback_app(_SlowSave) as app:
        result = await Replay(tab, await save_then_leave(tab, app)).run()
        if status == 200:
            assert result.ok and _SlowSave.saves == 1, result.to_dict()
            return
        assert not result.ok and result.reason.startswith("step 2 (expect"), result.reason
        assert "POST" in result.reason and "409" in result.reason, result.reason
        assert [o.status for o in result.steps][3:] == ["not_run", "not_run"]


@pytest.mark.parametrize("status", [409, 200])
async def test_the_export_waits_for_a_slow_save_as_replay_does(
    tab: Tab, tmp_path: Path, status: int
) -> None:
    """The exported test of the scenario above: its check of "Saved" held before the
    save's answer, the link cancelled it, and the test passed whatever the server said."""
    _SlowSave.status, _SlowSave.saves = status, 0
    with loopback_app(_SlowSave) as app:
        code, out = await run_exported(to_pytest(await save_then_leave(tab, app)), tmp_path, app)
    if status == 200:
        assert code == 0 and "1 passed" in out and _SlowSave.saves == 1, out
    else:
        assert code == 1 and "the server refused POST" in out and "409" in out, out


class _Invoices(QuietHandler):
    """Invoices (``?i=100,2200``), each row's "Mark paid" posting its number; ``paid``
    keeps which were."""

    paid: list[str] = []

    def do_GET(self) -> None:
        numbers = parse_qs(urlsplit(self.path).query)["i"][0].split(",")
        rows = "".join(
            f"<tr><td>{n}</td><td>ACME</td><td>250.00</td><td><button "
            f"onclick=\"fetch('/pay?n={n}', {{method: 'POST'}}).then(() => "
            f"this.textContent = 'Paid')\">Mark paid</button></td></tr>"
            for n in numbers
        )
        self.send(200, f"<!doctype html><title>Invoices</title><table>{rows}</table>".encode())

    def do_POST(self) -> None:
        self.paid.append(parse_qs(urlsplit(self.path).query)["n"][0])
        self.send(200, b"{}", Content_Type="application/json")


async def test_the_export_tells_a_row_by_its_whole_number_as_replay_does(
    tab: Tab, tmp_path: Path
) -> None:
    """Invoice 100's "Mark paid", recorded beside invoice 2200; another day the list holds
    1100 and 2200.  Replay refuses (1100's row lacks the number that told 100's apart);
    the export found the row by a pattern "100 ACME 250.00" that 1100's row holds, paid
    invoice 1100 and passed.  Where 100 is, both pay it."""
    _Invoices.paid = []
    with loopback_app(_Invoices) as app:
        await tab.page.goto(f"{app}/invoices?i=100,2200")
        button = await tab.page.query_selector("tr:nth-child(1) button")
        pay = await capture(button, budget=Budget(10_000))
        for numbers, pays in (("1100,2200", []), ("2200,100", ["100"])):
            steps = (ScenarioStep("navigate", {"url": f"{app}/invoices?i={numbers}"}),
                     ScenarioStep("click", {}, pay),
                     ScenarioStep("expect", {"kind": "text_visible", "text": "Paid"}))  # fmt: skip
            scenario = Scenario("Pay 100", steps, base_url=app)
            config = ReplayConfig(locate_wait_ms=1_000, person_wait_ms=0)
            result = await Replay(tab, scenario, config=config).run()
            assert result.ok is bool(pays) and _Invoices.paid == pays, result.to_dict()
            _Invoices.paid = []
            code, out = await run_exported(to_pytest(scenario), tmp_path, app, timeout_ms=4_000)
            assert (code == 0) is bool(pays) and _Invoices.paid == pays, out
            _Invoices.paid = []


class _StatusGrid(QuietHandler):
    """Orders whose Status is typed into a field in each row, as an app drawn by React
    keeps it: each key copied into the field's value attribute.  A row's Save posts it;
    the app answers ``{"ok": true}`` and shows the status as text, or ``{"ok": false}``
    when ``refuse`` is set, and the app, like many, says nothing."""

    refuse = False
    saved: list[str] = []

    def do_GET(self) -> None:
        rows = "".join(
            f"<tr><td>{who}</td><td><input aria-label=Status value=Pending "
            f'oninput="this.defaultValue = this.value"></td><td><button onclick="save(this)">'
            f"Save</button></td></tr>"
            for who in ("Ann", "Bob")
        )
        page = f"""<!doctype html><title>Orders</title><table>{rows}</table><script>
        async function save(button) {{
          const row = button.closest("tr"), field = row.querySelector("input");
          const answer = await fetch("/save", {{method: "POST", body: field.value}});
          if ((await answer.json()).ok) field.replaceWith(field.value);
        }}
        </script>"""
        self.send(200, page.encode())

    def do_POST(self) -> None:
        status = self.rfile.read(int(self.headers["Content-Length"])).decode()
        if not self.refuse:
            self.saved.append(status)
        body = b'{"ok": false}' if self.refuse else b'{"ok": true}'
        self.send(200, body, Content_Type="application/json")


@pytest.mark.parametrize("refuse", [True, False])
async def test_a_row_shows_no_status_typed_into_its_field_the_app_copied_as_typed(
    tab: Tab, tmp_path: Path, refuse: bool
) -> None:
    """Ann's Status typed "Shipped", its save answered ``{"ok": false}``, nothing drawn:
    a check that Ann's row shows "Shipped" held, the replay and its export passed.  A
    row's field counted with the value the app wrote, judged by the value attribute, and
    React copies each key typed into it.  What was typed, still shown, is no value the
    app wrote, wherever the attribute stands; the status the app shows once saved is."""
    _StatusGrid.refuse, _StatusGrid.saved = refuse, []
    with loopback_app(_StatusGrid) as app:
        await tab.page.goto(f"{app}/orders")
        budget = Budget(10_000)
        field = await capture(await tab.page.query_selector("tr input"), budget=budget)
        save = await capture(await tab.page.query_selector("tr button"), budget=budget)
        shipped = {"kind": "rows", "text": "Ann Shipped", "count": 1}
        steps = (ScenarioStep("navigate", {"url": f"{app}/orders"}),
                 ScenarioStep("fill", {"value": "Shipped"}, field),
                 ScenarioStep("click", {}, save),
                 ScenarioStep("expect", shipped))  # fmt: skip
        scenario = Scenario("Ship Ann's order", steps, base_url=app)
        result = await Replay(tab, scenario, config=ReplayConfig(check_timeout_ms=1_000)).run()
        assert result.ok is not refuse, result.to_dict()
        if refuse:
            assert result.reason.startswith("step 3 (expect"), result.reason
        code, out = await run_exported(to_pytest(scenario), tmp_path, app, timeout_ms=4_000)
        assert (code == 0) is not refuse, out
        assert _StatusGrid.saved == ([] if refuse else ["Shipped", "Shipped"])


class _Customers(QuietHandler):
    """A customer form whose Name holds at most 12 characters; ``added`` keeps the names
    its Add posted."""

    added: list[str] = []

    def do_GET(self) -> None:
        page = """<!doctype html><title>Customers</title><form method=post action=/add>
        <label>Name <input name=name maxlength=12></label><button>Add</button></form>"""
        self.send(200, page.encode() if self.path == "/new" else b"<p>Added</p>")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        self.added.append(parse_qs(body)["name"][0])
        self.send(303, Location="/done")


async def test_a_parameter_longer_than_its_field_holds_fails_its_row(
    tab: Tab, tmp_path: Path
) -> None:
    """A batch row's name longer than the field holds: the browser cut it, the replay
    and its export passed and the app added "Ada Lovelac".  The fill fails saying how much
    the field holds, nothing is added; a name that fits is added whole."""
    with loopback_app(_Customers) as app:
        await tab.page.goto(f"{app}/new")
        budget = Budget(10_000)
        name = await capture(await tab.page.query_selector("input"), budget=budget)
        add = await capture(await tab.page.query_selector("button"), budget=budget)
        steps = (ScenarioStep("navigate", {"url": f"{app}/new"}),
                 ScenarioStep("fill", {"value": "${name}"}, name),
                 ScenarioStep("click", {}, add),
                 ScenarioStep("expect", {"kind": "text_visible", "text": "Added"}))  # fmt: skip
        scenario = Scenario("Add a customer", steps, base_url=app,
                            params={"name": {"default": "Ada"}})  # fmt: skip
        for given in ("Ada Lovelace King", "Ada Lovelace"):
            _Customers.added = []
            result = await Replay(tab, scenario, params={"name": given}).run()
            fits = len(given) <= 12
            assert result.ok is fits, result.to_dict()
            if not fits:
                assert result.reason.startswith("step 1 (fill"), result.reason
                assert "holds at most 12 characters" in result.reason, result.reason
            env = {"TABWRIGHT_PARAM_name": given}
            code, out = await run_exported(to_pytest(scenario), tmp_path, app, env)
            assert (code == 0) is fits, out
            assert "holds at most 12 characters" in out or fits, out
            assert _Customers.added == ([given, given] if fits else []), _Customers.added


class _Saves(QuietHandler):
    """An app whose save is answered ``{"ok": false}`` when ``refuse`` is set, else
    ``{"ok": true}``: a refusal its HTTP status does not tell."""

    refuse = True

    def do_POST(self) -> None:
        body = b'{"ok": false}' if self.refuse else b'{"ok": true}'
        self.send(200, body, Content_Type="application/json")


class _Toasts(_Saves):
    """A profile whose Save answers ``{"ok": false}`` when ``refuse`` is set: the app says
    so in an error toast (``role=alert``) that hides itself after ``toast_ms``, as toast
    libraries do (3 to 6 s); else a "Saved" toast (``role=status``)."""

    toast_ms = 1_500

    def do_GET(self) -> None:
        page = f"""<!doctype html><title>Profile</title><h1>Profile</h1>
        <button id=save>Save</button><div id=toasts></div><script>
        save.onclick = async () => {{
          const ok = (await (await fetch("/save", {{method: "POST"}})).json()).ok;
          const toast = document.createElement("div");
          toast.setAttribute("role", ok ? "status" : "alert");
          toast.textContent = ok ? "Saved" : "Could not save your display name";
          toasts.append(toast);
          setTimeout(() => toast.remove(), {self.toast_ms});
        }};
        </script>"""
        self.send(200, page.encode())


@pytest.mark.parametrize("refuse", [True, False])
async def test_an_error_toast_that_hides_itself_fails_the_no_error_check(
    tab: Tab, tmp_path: Path, refuse: bool
) -> None:
    """A save refused, the app saying so in a toast that hides itself after 1.5 s: the
    no_error check was read until it held, so once the toast had gone, and the replay
    and its export passed.  An error read fails the check at once; a save the app took
    passes."""
    _Toasts.refuse = refuse
    with loopback_app(_Toasts) as app:
        await tab.page.goto(f"{app}/profile")
        save = await capture(await tab.page.query_selector("#save"), budget=Budget(10_000))
        steps = (ScenarioStep("navigate", {"url": f"{app}/profile"}),
                 ScenarioStep("click", {}, save),
                 ScenarioStep("expect", {"kind": "no_error"}))  # fmt: skip
        scenario = Scenario("Save the profile", steps, base_url=app)
        result = await Replay(tab, scenario).run()
        assert result.ok is not refuse, result.to_dict()
        if refuse:
            assert "Could not save your display name" in result.reason, result.reason
        code, out = await run_exported(to_pytest(scenario), tmp_path, app)
        assert (code == 0) is not refuse, out
        assert "Could not save your display name" in out or not refuse, out


class _Notifications(_Saves):
    """A switch (``role=switch``) whose click saves it; the save answered ``{"ok": false}``
    when ``refuse`` is set, and the app turns the switch back off 300 ms later."""

    def do_GET(self) -> None:
        page = """<!doctype html><title>Settings</title><h1>Notifications</h1>
        <button id=mail role=switch aria-checked=false>Email me</button><script>
        mail.onclick = async () => {
          mail.setAttribute("aria-checked", "true");
          const ok = (await (await fetch("/save", {method: "POST"})).json()).ok;
          if (!ok) setTimeout(() => mail.setAttribute("aria-checked", "false"), 300);
        };
        </script>"""
        self.send(200, page.encode())


@pytest.mark.parametrize("refuse", [True, False])
async def test_a_switch_a_click_turned_on_is_read_again_at_the_end(
    tab: Tab, tmp_path: Path, refuse: bool
) -> None:
    """An agent (or an MCP client) turns a switch on with a click, a wait for the page's
    heading after it: its save refused, the app turned it back off, and the replay and its
    export passed (only a check step's box, and only the very last step's, was read
    again).  A click on a box is read right after and again at the end, past waits."""
    _Notifications.refuse = refuse
    with loopback_app(_Notifications) as app:
        await tab.page.goto(f"{app}/settings")
        switch = await capture(await tab.page.query_selector("#mail"), budget=Budget(10_000))
        assert switch.role == "switch"
        steps = (ScenarioStep("navigate", {"url": f"{app}/settings"}),
                 ScenarioStep("click", {}, switch),
                 ScenarioStep("wait_for", {"text": "Notifications"}))  # fmt: skip
        scenario = Scenario("Email me", steps, base_url=app)
        result = await Replay(tab, scenario).run()
        assert result.ok is not refuse, result.to_dict()
        if refuse:
            assert result.reason.startswith("step 1 (click"), result.reason
            assert result.reason.endswith("the box is not ticked"), result.reason
        code, out = await run_exported(to_pytest(scenario), tmp_path, app, timeout_ms=4_000)
        assert (code == 0) is not refuse, out


class _InlineEdit(_Saves):
    """An order edited in place: its status (a select) and its reference (a text field)
    are saved as they change (the text 200 ms after the last key), the save answered
    ``{"ok": false}`` when ``refuse`` is set; the app then puts the value from before back
    300 ms later, else writes the reference as it keeps it (upper case)."""

    def do_GET(self) -> None:
        page = """<!doctype html><title>Order 12</title><h1>Order 12</h1>
        <label>Status <select id=state><option>Pending</option><option>Shipped</option>
        </select></label>
        <label>Reference <input id=reference value="ab-1"></label><script>
        for (const field of [state, reference]) {
          let kept = field.value, timer;
          const save = async () => {
            const ok = (await (await fetch("/save", {method: "POST"})).json()).ok;
            const value = field === reference ? field.value.toUpperCase() : field.value;
            setTimeout(() => { field.value = ok ? value : kept; kept = field.value; }, 300);
          };
          field.addEventListener(field === state ? "change" : "input", () => {
            clearTimeout(timer);
            timer = setTimeout(save, field === state ? 0 : 200);
          });
        }
        </script>"""
        self.send(200, page.encode())


@pytest.mark.parametrize("refuse", [True, False])
@pytest.mark.parametrize("field", ["state", "reference"])
async def test_a_value_the_last_step_wrote_is_read_again_at_the_end(
    tab: Tab, tmp_path: Path, refuse: bool, field: str
) -> None:
    """A status picked (or a reference typed) as a scenario's last step, the app saving it
    as it changes: its save refused, the app put the old value back, and the replay and
    its export passed with no check to read it.  The field the last step writes is read
    before it, after it, and again at the end: showing the old value again fails it; the
    value as the app keeps it (written in upper case) passes.  (A choice that asked the
    server is held as it is made, and fails at once.)"""
    _InlineEdit.refuse = refuse
    with loopback_app(_InlineEdit) as app:
        await tab.page.goto(f"{app}/order")
        found = await capture(await tab.page.query_selector(f"#{field}"), budget=Budget(10_000))
        picks = field == "state"
        write = ScenarioStep("select_option", {"values": ["Shipped"]}, found) if picks else (
            ScenarioStep("fill", {"value": "ab-2"}, found))  # fmt: skip
        steps = (ScenarioStep("navigate", {"url": f"{app}/order"}), write)
        scenario = Scenario("Edit order 12", steps, base_url=app)
        result = await Replay(tab, scenario).run()
        assert result.ok is not refuse, result.to_dict()
        # A choice is held once made (the app asked its server, and puts it back a
        # moment after the answer): its own step fails.  The reference, saved after a
        # pause in the typing, is read again at the end.
        said = "but the page put it back as it was" if picks else "again, as before the step"
        if refuse:
            assert result.reason.startswith("step 1 ("), result.reason
            assert said in result.reason, result.reason
            assert picks or "it shows 'ab-1' again, as before the step" in result.reason
        code, out = await run_exported(to_pytest(scenario), tmp_path, app, timeout_ms=4_000)
        assert (code == 0) is not refuse, out
        exported = "the page put the choice back as it was" if picks else said
        assert exported in out or not refuse, out


class _Reloads(QuietHandler):
    """A setting saved 1.5 s after its box is ticked (long enough for the check after the
    tick to be read first on a busy machine too: the page it reads goes away then);
    the save is refused (``{"ok":
    false}``) when ``refuse`` is set.  Then the app, as ``goes`` says, loads the page
    again (``reload``: the box as the server keeps it) or goes on to ``/error`` (an
    error banner) or ``/done`` ("Saved")."""

    refuse, goes, on = True, "reload", False

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path in ("/error", "/done"):
            said = (
                '<div class="alert alert-danger">Your settings could not be saved</div>'
                if path == "/error"
                else '<p class="alert alert-success">Saved</p>'
            )
            self.send(200, f"<!doctype html><title>Settings</title>{said}".encode())
            return
        after = "location.reload()" if self.goes == "reload" else (
            'location.assign(ok ? "/done" : "/error")')  # fmt: skip
        page = f"""<!doctype html><title>Settings</title><h1>Settings</h1><label>
        <input type=checkbox id=digest {"checked" if _Reloads.on else ""}> Weekly digest
        </label><script>
        digest.onchange = () => setTimeout(async () => {{
          const ok = (await (await fetch("/save", {{method: "POST"}})).json()).ok;
          {after};
        }}, 1500);
        </script>"""
        self.send(200, page.encode())

    def do_POST(self) -> None:
        _Reloads.on = _Reloads.on or not self.refuse
        self.send(200, b'{"ok": false}' if self.refuse else b'{"ok": true}',
                  Content_Type="application/json")  # fmt: skip


@pytest.mark.parametrize("refuse", [True, False])
@pytest.mark.parametrize("goes", ["reload", "leave"])
async def test_a_page_the_app_loads_after_a_save_is_read_for_what_the_save_did(
    tab: Tab, tmp_path: Path, refuse: bool, goes: str
) -> None:
    """A box ticked and checked, its save sent 1.5 s later and refused, after which the
    app loads its page again (the box unticked, as the server keeps it) or goes on to an
    error page: the checks were never read again once a page loaded, and the replay and
    its export passed.  The same page loaded again is read again; another page the app
    went on to is read for an error.  A save the server kept passes either way."""
    _Reloads.refuse, _Reloads.goes, _Reloads.on = refuse, goes, False
    with loopback_app(_Reloads) as app:
        await tab.page.goto(f"{app}/settings")
        box = await capture(await tab.page.query_selector("#digest"), budget=Budget(10_000))
        steps = (ScenarioStep("navigate", {"url": f"{app}/settings"}),
                 ScenarioStep("check", {"checked": True}, box),
                 ScenarioStep("expect", {"kind": "checked"}, box))  # fmt: skip
        scenario = Scenario("Weekly digest", steps, base_url=app)
        result = await Replay(tab, scenario).run()
        assert result.ok is not refuse, result.to_dict()
        said = "could not be saved" if goes == "leave" else "it is not ticked"
        assert said in result.reason or not refuse, result.reason
        _Reloads.on = False
        code, out = await run_exported(to_pytest(scenario), tmp_path, app, timeout_ms=4_000)
        assert (code == 0) is not refuse, out
        assert (said if goes == "leave" else "expected to be checked") in out or not refuse, out


class _Notes(QuietHandler):
    """An order's note, saved 600 ms after the last key (a debounce), refused (500) when
    ``refuse`` is set; a link back to the list of orders.  The notes it kept: ``saved``."""

    refuse, saved = False, []

    def do_GET(self) -> None:
        if urlsplit(self.path).path == "/orders":
            self.send(200, b"<!doctype html><title>Orders</title><h1>Orders</h1>")
            return
        self.send(
            200,
            b"""<!doctype html><title>Order 12</title><h1>Order 12</h1>
        <label>Note <input id=note></label> <a href="/orders">Back to orders</a><script>
        let timer;
        note.oninput = () => {
          clearTimeout(timer);
          timer = setTimeout(() => fetch("/note", {method: "POST", body: note.value}), 600);
        };
        </script>""",
        )

    def do_POST(self) -> None:
        note = self.rfile.read(int(self.headers["Content-Length"])).decode()
        if self.refuse:
            self.send(500, b"the note could not be kept")
            return
        _Notes.saved.append(note)
        self.send(200, b"{}", Content_Type="application/json")


@pytest.mark.parametrize("refuse", [False, True])
async def test_a_save_the_app_left_for_later_is_sent_before_a_step_leaves_the_page(
    tab: Tab, tmp_path: Path, refuse: bool
) -> None:
    """A note typed, then the link back to the list followed at once: the app saves the
    note 600 ms after the last key, so leaving the page dropped it, nothing was saved and
    the replay and its export passed.  Before a step that leaves the page, what the steps
    before it left for later is done, as a person waits for "Saved": the note is saved,
    and a save refused fails the step."""
    _Notes.refuse, _Notes.saved = refuse, []
    with loopback_app(_Notes) as app:
        await tab.page.goto(f"{app}/order")
        note = await capture(await tab.page.query_selector("#note"), budget=Budget(10_000))
        back = await capture(await tab.page.query_selector("a"), budget=Budget(10_000))
        steps = (ScenarioStep("navigate", {"url": f"{app}/order"}),
                 ScenarioStep("fill", {"value": "Rush"}, note, url=f"{app}/order"),
                 ScenarioStep("click", {}, back, url=f"{app}/order", led_to=f"{app}/orders"),
                 ScenarioStep("expect", {"kind": "text_visible", "text": "Orders"}))  # fmt: skip
        scenario = Scenario("Note order 12", steps, base_url=app)
        result = await Replay(tab, scenario).run()
        assert result.ok is not refuse, result.to_dict()
        assert _Notes.saved == ([] if refuse else ["Rush"])
        assert "500" in result.reason or not refuse, result.reason
        code, out = await run_exported(to_pytest(scenario), tmp_path, app, timeout_ms=4_000)
        assert (code == 0) is not refuse, out
        assert _Notes.saved == ([] if refuse else ["Rush", "Rush"])
