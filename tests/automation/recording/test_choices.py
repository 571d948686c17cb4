"""An option clicked in a combobox's list is judged by what the combobox shows after it.

An app whose list closes on the click but keeps the old choice ("Silver" where "Gold" was
clicked) passed the click, and the form was saved with Silver, in replay and its export
alike.  Now the click fails there, in both; where the choice took (the combobox shows it,
a tag picker's chip beside its emptied field shows it, a list that stays open has it
selected) it passes, whether the combobox names its list or is only the one open."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from automation import Tab
from automation.errors import ActionFailed
from automation.recording.export import to_pytest
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario
from tests.bounds import room
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import acted, ref_of

PAGE = """<!doctype html><title>Customer</title><h1>Customer Acme</h1>
<form method=post action="/save"><span id=lbl>Tier</span>
<button type=button id=cb role=combobox aria-haspopup=listbox aria-expanded=false
 aria-labelledby=lbl{controls}>{tier}</button>
<ul role=listbox id=lb aria-labelledby=lbl hidden>
<li role=option>Bronze</li><li role=option>Silver</li><li role=option>Gold</li></ul>
<input type=hidden name=tier id=tier value="{tier}"><button>Save</button></form>
<script>
const cb = document.getElementById("cb"), lb = document.getElementById("lb");
cb.onclick = () => {
  lb.hidden = !lb.hidden; cb.setAttribute("aria-expanded", String(!lb.hidden));
};
for (const o of lb.querySelectorAll("[role=option]")) o.onclick = () => {
  lb.hidden = true; cb.setAttribute("aria-expanded", "false");
  if (!BROKEN) { cb.textContent = o.textContent; tier.value = o.textContent; }
};
</script>"""
# A tag picker: the chosen option becomes a chip beside the field, which empties.
TAGS = """<!doctype html><title>Tags</title><div class=picker><span id=chips></span>
<input role=combobox aria-label=Tags aria-expanded=true aria-controls=opts>
<ul role=listbox id=opts><li role=option>Urgent</li><li role=option>Billing</li></ul></div>
<ul role=listbox aria-label=Plan><li role=option aria-selected=false>Monthly</li></ul>
<script>
for (const o of document.querySelectorAll("#opts [role=option]")) o.onclick = () => {
  chips.insertAdjacentHTML("beforeend", `<span class=chip>${o.textContent}</span>`);
  document.querySelector("input").value = "";
};
const monthly = document.querySelector("[aria-label=Plan] [role=option]");
monthly.onclick = () => monthly.setAttribute("aria-selected", "true");
</script>"""


@dataclass
class Customer:
    tier: str = "Silver"
    broken: bool = False
    controls: str = ""


@pytest.fixture
def customer() -> Iterator[tuple[Customer, str]]:
    state = Customer()

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            html = PAGE.replace("{controls}", state.controls).replace("{tier}", state.tier)
            self.send(200, html.replace("BROKEN", str(state.broken).lower()).encode())

        def do_POST(self) -> None:
            state.tier = self.posted()["tier"]
            self.send(303, Location="/customer")

    with loopback_app(Handler) as url:
        yield state, url


@pytest.mark.parametrize("controls", ["", " aria-controls=lb"], ids=["open", "named"])
async def test_an_option_the_app_did_not_take_fails_replay_and_export(
    tab: Tab, customer: tuple[Customer, str], tmp_path: Path, controls: str
) -> None:
    state, base = customer
    state.controls = controls
    steps = await acted(tab, f"{base}/customer", [("click", "combobox", "Tier", {}),
                                                  ("click", "option", "Gold", {}),
                                                  ("click", "button", "Save", {})])  # fmt: skip
    assert state.tier == "Gold"
    scenario = Scenario("Make Acme gold", steps, base_url=base + "/")
    code = to_pytest(scenario)

    state.tier, state.broken = "Silver", True  # the list closes, the choice is not made
    result = await Replay(tab, scenario).run()
    assert not result.ok and state.tier == "Silver", result.to_dict()
    failed = result.steps[2]
    assert failed.error is not None and "the choice did not take" in failed.error["message"]
    assert "shows 'Silver'" in failed.error["message"], failed.error
    status, out = await run_exported(code, tmp_path / "broken", base)
    assert status == 1 and "the choice did not take" in out and state.tier == "Silver", out

    state.broken = False
    result = await Replay(tab, scenario).run()
    assert result.ok and state.tier == "Gold", result.to_dict()
    state.tier = "Silver"
    status, out = await run_exported(code, tmp_path / "working", base)
    assert status == 0 and state.tier == "Gold", out


async def test_a_chip_beside_an_emptied_field_or_a_selected_option_is_the_choice_taken(
    tab: Tab,
) -> None:
    await tab.page.set_content(TAGS)
    await tab.click(ref_of(await tab.snapshot(), "option", "Billing"), budget=room())
    assert await tab.page.text_content("#chips") == "Billing"
    await tab.click(ref_of(await tab.snapshot(), "option", "Monthly"), budget=room())
    # A tag picker that drops the option: the field and what is around it say nothing.
    await tab.page.evaluate("() => { for (const o of opts.children) o.onclick = null; }")
    with pytest.raises(ActionFailed, match="the choice did not take"):
        await tab.click(ref_of(await tab.snapshot(), "option", "Urgent"), budget=room())


# A list that stays open, its option marked selected: the combobox shows a count.
FILTERS = """<!doctype html><title>Filters</title><h1>Orders</h1>
<input role=combobox aria-label=Status aria-expanded=true aria-controls=st readonly
 value="0 chosen"><ul role=listbox id=st aria-multiselectable=true>
<li role=option aria-selected=false>Paid</li><li role=option aria-selected=false>Open</li></ul>
<script>
for (const o of document.querySelectorAll("[role=option]")) o.onclick = () => {
  o.setAttribute("aria-selected", "true");
  const n = st.querySelectorAll("[aria-selected=true]").length;
  document.querySelector("input").value = `${n} chosen`;
};
</script>"""


async def test_an_option_left_selected_in_its_open_list_passes_replay_and_export(
    tab: Tab, tmp_path: Path
) -> None:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self.send(200, FILTERS.encode())

    with loopback_app(Handler) as base:
        steps = await acted(tab, f"{base}/orders", [("click", "option", "Open", {})])
        scenario = Scenario("Open orders", steps, base_url=base + "/")
        assert (await Replay(tab, scenario).run()).ok
        status, out = await run_exported(to_pytest(scenario), tmp_path, base)
        assert status == 0, out
