"""Checks proposed from a run's final page (fixtures/outcomes/): the states it left, the
texts it typed as rows show them, what its summary quotes; they hold where the run ended,
and the agent loop proposes them when it is done.  The live view's "check this" records a
check of what is under the pointer."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from automation import AgentConfig, AgentRun, Tab
from automation.actions import execute
from automation.events import ChecksProposed, StepRecorded
from automation.llm.openai import OpenAICompatPlanner
from automation.recording import expect
from automation.recording.propose import Proposal, propose_checks
from automation.recording.recorder import Recorder
from tests.bounds import room
from tests.busypage import busy_in_bursts
from tests.fakellm import ScriptedLLMServer
from tests.refs import ref_of
from tests.sinks import WaitingSink


async def run_steps(tab: Tab, fixture_url: str) -> list[dict[str, Any]]:
    """Two todos added, the first ticked, as a run records its steps."""
    rows: list[dict[str, Any]] = []

    async def do(action: str, ref: str = "", **args: Any) -> None:
        target = await tab.target(ref) if ref else None
        await execute(tab, action, {"ref": ref, **args} if ref else args, budget=room())
        identity = target.identity.to_dict() if target and target.identity else None
        rows.append({"action": action, "args": args, "identity": identity, "ok": True})

    await do("navigate", url=f"{fixture_url}/outcomes/v1/index.html")
    for title in ("Buy milk", "Walk the dog"):
        await do("fill", ref_of(await tab.snapshot(), "textbox", "New todo"), value=title,
                 submit=True)  # fmt: skip
    await do("check", ref_of(await tab.snapshot(), "checkbox", "Toggle"))
    return rows


async def test_proposals_read_the_final_page_and_hold_there(tab: Tab, fixture_url: str) -> None:
    rows = await run_steps(tab, fixture_url)
    proposals = await propose_checks(
        tab, rows, summary='Added "Buy milk" and "Walk the dog", ticked the first',
        budget=room(),
    )  # fmt: skip
    shown = [(p.check.describe(), p.picked) for p in proposals]
    assert ("expect checkbox 'Toggle' in row 'Buy milk' is ticked", True) in shown
    assert ("expect at least 1 row(s) show 'Buy milk'", True) in shown
    assert ("expect at least 1 row(s) show 'Walk the dog'", True) in shown
    assert ("expect text '1 item left' is visible", False) in shown  # the page's status
    assert ("expect text 'Todos' is visible", False) in shown  # its heading
    # The field was emptied by Enter: its value says nothing and is not proposed.
    assert not any(p.check.args.get("kind") == "value" for p in proposals)
    for proposal in proposals:  # each holds where the run ended, which it keeps
        assert await expect.check(tab, proposal.check.args, proposal.check.target(), budget=room())
        assert proposal.check.url == tab.page.url
        again = Proposal.from_dict(json.loads(json.dumps(proposal.to_dict())))
        assert again == proposal
    # The next replay adds its "Buy milk" to the list the last one left: the rows check
    # ticked for it still holds (it counted one row or more, not exactly one).
    typed = next(p.check for p in proposals if p.check.args.get("text") == "Buy milk")
    await execute(tab, "fill", {"ref": ref_of(await tab.snapshot(), "textbox", "New todo"),
                                "value": "Buy milk", "submit": True}, budget=room())  # fmt: skip
    assert await expect.count_rows(tab, "Buy milk", room()) == 2
    assert await expect.check(tab, typed.args, None, budget=room())


async def test_a_final_page_slow_to_answer_still_gets_every_proposal(
    tab: Tab, fixture_url: str
) -> None:
    """Finding a changed element again takes seconds on a page that answers slowly: it
    takes what it needs of the budget, and the checks read after it are still proposed."""
    rows = await run_steps(tab, fixture_url)
    await tab.page.evaluate(busy_in_bursts(2_500, for_ms=5_000))  # a question waits up to 2.5 s
    proposals = await propose_checks(tab, rows, budget=room())
    shown = [p.check.describe() for p in proposals]
    assert "expect checkbox 'Toggle' in row 'Buy milk' is ticked" in shown
    assert "expect at least 1 row(s) show 'Buy milk'" in shown
    assert "expect at least 1 row(s) show 'Walk the dog'" in shown
    assert "expect text '1 item left' is visible" in shown


async def test_every_box_the_run_ticked_has_its_check_proposed(tab: Tab, fixture_url: str) -> None:
    """Both boxes are named "Toggle": their rows tell them (and their checks) apart."""
    rows = await run_steps(tab, fixture_url)
    second = ref_of(await tab.snapshot(), "checkbox", "Toggle", 1)
    target = await tab.target(second)
    await execute(tab, "check", {"ref": second}, budget=room())
    assert target.identity is not None
    rows.append({"action": "check", "args": {}, "identity": target.identity.to_dict(), "ok": True})
    proposals = await propose_checks(tab, rows, budget=room())
    ticked = [p.check.describe() for p in proposals if p.check.args["kind"] == "checked"]
    assert ticked == [
        "expect checkbox 'Toggle' in row 'Buy milk' is ticked",
        "expect checkbox 'Toggle' in row 'Walk the dog' is ticked",
    ]
    for proposal in proposals:
        assert await expect.check(tab, proposal.check.args, proposal.check.target(), budget=room())


async def test_the_loop_proposes_checks_when_it_is_done(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/outcomes/v1/index.html")
    probe_snapshot = await tab.snapshot()
    field = ref_of(probe_snapshot, "textbox", "New todo")
    llm_server.script(
        f'<action>{{"action": "fill", "ref": "{field}", "value": "Buy milk", "submit": true}}'
        "</action>",
        '<action>{"action": "done", "summary": "Added \\"Buy milk\\""}</action>',
    )
    planner = OpenAICompatPlanner(base_url=llm_server.base_url, model="test-model")
    sink = WaitingSink()
    run = AgentRun(tab=tab, planner=planner, sink=sink, task="Add a todo",
                   config=AgentConfig(llm_timeout_ms=5_000))  # fmt: skip
    finished = await run.run()
    assert finished.status == "succeeded"
    proposed = sink.of_type(ChecksProposed)
    assert len(proposed) == 1
    described = [Proposal.from_dict(c).check.describe() for c in proposed[0].checks]
    assert "expect at least 1 row(s) show 'Buy milk'" in described
    assert "expect text 'Buy milk' is visible" not in described  # one check a text
    assert sink.events.index(proposed[0]) < len(sink.events) - 1  # before the run ends
    assert len(sink.of_type(StepRecorded)) == 1


async def test_check_this_records_what_is_under_the_pointer(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/rerender/index.html")
    recorder = Recorder(tab)
    await recorder.start()
    page = tab.page

    async def at(selector: str) -> tuple[float, float]:
        box = await page.locator(selector).first.bounding_box()
        assert box is not None
        return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

    await page.evaluate("() => { document.querySelector('#city').value = 'Oslo'; }")
    checks = [
        await recorder.check_at(*await at("#controlled"), budget=room()),
        await recorder.check_at(*await at("#city"), budget=room()),
        await recorder.check_at(*await at("h1"), budget=room()),
        await recorder.check_at(*await at("#star"), budget=room()),  # aria-pressed
        await recorder.check_at(*await at("#reset"), budget=room()),
    ]
    assert [(c.args, c.identity is not None) for c in checks] == [
        ({"kind": "unchecked"}, True),
        ({"kind": "value", "value": "Oslo"}, True),
        ({"kind": "text_visible", "text": "Settings"}, False),
        ({"kind": "unchecked"}, True),
        ({"kind": "visible"}, True),
    ]
    assert await page.evaluate("() => model.controlled") is False  # nothing was clicked
    steps = await recorder.stop()
    assert [replace(s, led_to="") for s in steps[1:]] == checks  # where they led: known later


SUPPLIER = """<main><h1>Supplier</h1><form>
<label>Company <input name="company" value="{company}"></label>
<label>Terms <select name="terms"><option>30 days</option>
  <option{net60}>60 days</option></select></label>
<button>Save</button></form></main>"""


async def test_a_field_still_holding_what_the_run_typed_is_offered_not_ticked(
    tab: Tab, fixture_url: str
) -> None:
    """A form that stays on the page (its save answered 409, the toast gone by the end):
    its fields show what the run typed whether or not the app took it, so their checks
    are offered, not ticked.  Loaded again with the values the app keeps, they are."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(SUPPLIER.format(company="Initech", net60=""))
    rows: list[dict[str, Any]] = []
    for action, name, args in (("fill", "Company", {"value": "Globex Ltd"}),
                               ("select_option", "Terms", {"values": "60 days"})):  # fmt: skip
        role = "textbox" if action == "fill" else "combobox"
        target = await tab.target(ref_of(await tab.snapshot(), role, name))
        await execute(tab, action, {"ref": target.ref, **args}, budget=room())
        assert target.identity is not None
        rows.append({"action": action, "args": args, "identity": target.identity.to_dict()})

    def values(proposals: list[Proposal]) -> list[tuple[str, bool]]:
        return [(p.check.describe(), p.picked) for p in proposals
                if p.check.args.get("kind") == "value"]  # fmt: skip

    typed = values(await propose_checks(tab, rows, budget=room()))
    assert typed == [("expect textbox 'Company' shows 'Globex Ltd'", False),
                     ("expect combobox 'Terms' shows '60 days'", False)]  # fmt: skip
    await tab.page.set_content(SUPPLIER.format(company="Globex Ltd", net60=" selected"))
    kept = values(await propose_checks(tab, rows, budget=room()))
    assert kept == [(words, True) for words, _picked in typed]


REFUSED = """<h1>Customers</h1><label>Company <input name="company"></label>
<p role="alert">Could not add 'Acme Ltd': that name is taken</p>"""


async def test_a_typed_text_shown_only_in_a_message_is_offered_not_ticked(tab: Tab) -> None:
    """An error that repeats what was typed ("Could not add 'Acme Ltd'") shows it as well
    when the app refused it: a check of it would pass on the refusal.  Shown elsewhere on
    the page (the new customer's row), it is ticked as before."""
    company = {"role": "textbox", "name": "Company", "tag": "input"}
    rows = [{"action": "fill", "args": {"value": "Acme Ltd"}, "identity": company, "ok": True}]
    await tab.page.set_content(REFUSED)
    offered = [(p.check.describe(), p.picked, p.why)
               for p in await propose_checks(tab, rows, summary="", budget=room())]  # fmt: skip
    why = "a text the run typed, shown only in a message (an error may repeat it)"
    assert ("expect text 'Acme Ltd' is visible", False, why) in offered
    await tab.page.set_content(REFUSED.replace("<p role", "<p>Acme Ltd, since today</p><p role"))
    offered = [(p.check.describe(), p.picked)
               for p in await propose_checks(tab, rows, summary="", budget=room())]  # fmt: skip
    assert ("expect text 'Acme Ltd' is visible", True) in offered


SHOWN_PASSWORD = """<h1>Account</h1><label>Password <input name="pw" type="text"
autocomplete="current-password" value="hunter2 blue"></label>
<p>Your password hunter2 blue was saved</p><ul><li>hunter2 blue</li></ul>"""


async def test_a_password_shown_as_text_is_never_proposed(tab: Tab) -> None:
    """A password field its "show password" switch made text: neither its value nor the
    password as rows or text shown is proposed as a check (a check would spell it out)."""
    field = {"role": "textbox", "name": "Password", "tag": "input", "type": "text",
             "name_attr": "pw", "autocomplete": "current-password"}  # fmt: skip
    rows = [{"action": "fill", "args": {"value": "hunter2 blue"}, "identity": field, "ok": True}]
    await tab.page.set_content(SHOWN_PASSWORD)
    proposals = await propose_checks(tab, rows, summary="", budget=room())
    assert not any("hunter2" in json.dumps(p.to_dict()) for p in proposals), proposals
    plain = {**field, "autocomplete": ""}  # the same field unmarked: it would be
    rows = [{"action": "fill", "args": {"value": "hunter2 blue"}, "identity": plain, "ok": True}]
    proposals = await propose_checks(tab, rows, summary="", budget=room())
    assert any("hunter2" in json.dumps(p.to_dict()) for p in proposals), proposals
