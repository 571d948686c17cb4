"""An element its aria-labelledby lists beside its label, as the WAI-ARIA combobox pattern
writes it (``aria-labelledby="tier-label tier"``): the accname rules, and so Playwright's
``get_by_role``, name it with its own text in it ("Tier Silver"), where Tabwright names
it by its label alone ("Tier": its ref and identity hold while its value changes).

The export wrote ``get_by_role("combobox", name="Tier", exact=True)``, which found
nothing: it failed on the working app where replay passed.  A text field labelled so was
named with the value it held ("City Leeds", where Playwright reads "City"): the same.
Now the identity keeps where the element's own text stands in its name (``name_own``)
and the export takes any text there, and only there, so it passes where replay passes
and fails where the element is gone; a combobox labelled plainly keeps its exact name."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest

from automation import Tab
from automation.actions import execute
from automation.browser.identity import ElementIdentity, capture
from automation.browser.textmatch import named
from automation.errors import ActionInvalid
from automation.recording.export import to_pytest
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario, ScenarioStep
from tests.bounds import room
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import ref_of

SHORT = ReplayConfig(check_timeout_ms=1_500, locate_wait_ms=1_500)
START = {"tier": "Silver", "plan": "Monthly", "support": "Standard", "city": "Leeds",
         "nick": "Ace"}  # fmt: skip


def _combobox(key: str, label: str, options: tuple[str, ...], state: dict[str, str],
              itself: bool) -> str:  # fmt: skip
    """A WAI-ARIA combobox (a button and the listbox it opens), labelled by its label and,
    ``itself``, by itself too; an option chosen shows in it and goes in the form."""
    labelled = f"{key}-l {key}" if itself else f"{key}-l"
    items = "".join(f"<li role=option>{o}</li>" for o in options)
    return (f'<span id={key}-l>{label}</span><button type=button id={key} role=combobox '
            f'aria-haspopup=listbox aria-expanded=false aria-controls={key}-list '
            f'aria-labelledby="{labelled}">{html.escape(state[key])}</button>'
            f"<ul role=listbox id={key}-list aria-labelledby={key}-l hidden>{items}</ul>"
            f'<input type=hidden name={key} value="{html.escape(state[key])}">')  # fmt: skip


SCRIPT = """<script>
for (const box of document.querySelectorAll('[role=combobox]')) {
  const list = document.getElementById(box.getAttribute('aria-controls'));
  box.onclick = () => {
    list.hidden = !list.hidden; box.setAttribute('aria-expanded', !list.hidden);
  };
  for (const option of list.querySelectorAll('[role=option]')) option.onclick = () => {
    list.hidden = true; box.setAttribute('aria-expanded', 'false');
    box.textContent = option.textContent;
    document.querySelector(`input[name=${box.id}]`).value = option.textContent;
  };
}
document.forms[0].onsubmit = () => {
  document.querySelector('input[name=nick]').value = document.getElementById('nick').textContent;
};
</script>"""


class _Customer(QuietHandler):
    """A customer's tier (labelled by itself), plan (by its label only), support level (by
    itself, a look-alike of the tier's), city (a text field labelled by itself) and
    nickname (an editor labelled by itself); Save stores them in ``state``.  ``gone``:
    the page without the tier's combobox."""

    state: dict[str, str] = {}
    gone = False

    def do_GET(self) -> None:
        s = self.state
        tier = "" if self.gone else _combobox("tier", "Tier", ("Bronze", "Silver", "Gold"), s, True)
        page = (
            "<!doctype html><title>Customer</title><h1>Customer Acme</h1>"
            f'<form method=post action="/customer">{tier}'
            + _combobox("plan", "Plan", ("Monthly", "Yearly"), s, False)
            + _combobox("support", "Support tier", ("Standard", "Priority"), s, True)
            + f'<span id=city-l>City</span><input id=city name=city aria-labelledby="city-l city"'
            f' value="{html.escape(s["city"])}">'
            "<span id=nick-l>Nickname</span><div id=nick role=textbox contenteditable"
            f' aria-labelledby="nick-l nick">{html.escape(s["nick"])}</div>'
            "<input type=hidden name=nick><button>Save</button></form>" + SCRIPT
        )
        self.send(200, page.encode())

    def do_POST(self) -> None:
        self.state.update(self.posted())
        self.send(303, Location="/customer")


async def _recorded(tab: Tab, url: str) -> Scenario:
    """An agent's run that sets each field, found by its ref as the snapshot names it."""
    await tab.navigate(url)
    rows: list[dict[str, Any]] = [{"action": "navigate", "args": {"url": url}}]
    for action, role, name, args in (
        ("click", "combobox", "Tier", {}), ("click", "option", "Gold", {}),
        ("click", "combobox", "Plan", {}), ("click", "option", "Yearly", {}),
        ("fill", "textbox", "City", {"value": "York"}),
        ("fill", "textbox", "Nickname", {"value": "Ace of clubs"}),
        ("click", "button", "Save", {}),
    ):  # fmt: skip
        target = await tab.target(ref_of(await tab.snapshot(), role, name))
        await execute(tab, action, {"ref": target.ref, **args}, budget=room())
        assert target.identity is not None
        rows.append({"action": action, "args": args, "identity": target.identity.to_dict()})
    steps = tuple(ScenarioStep.from_dict(row) for row in rows)
    return Scenario("Upgrade a customer", steps, base_url=url.rsplit("/", 1)[0] + "/")


SAVED = {"tier": "Gold", "plan": "Yearly", "support": "Standard", "city": "York",
         "nick": "Ace of clubs"}  # fmt: skip


async def test_a_combobox_labelled_by_itself_is_found_by_replay_and_its_export(
    tab: Tab, tmp_path: Path
) -> None:
    _Customer.state, _Customer.gone = dict(START), False
    with loopback_app(_Customer) as app:
        url = f"{app}/customer"
        await tab.navigate(url)
        # The rules (Playwright's reading) name the tier by its label and its value.
        assert await tab.page.get_by_role("combobox", name="Tier Silver", exact=True).count() == 1
        scenario = await _recorded(tab, url)
        assert _Customer.state == SAVED

        _Customer.state = dict(START)
        result = await Replay(tab, scenario, config=SHORT).run()
        assert result.ok and _Customer.state == SAVED, (result.to_dict(), _Customer.state)

        # The export finds what replay found, on the page as it was recorded...
        code = to_pytest(scenario)
        _Customer.state = dict(START)
        status, out = await run_exported(code, tmp_path / "works", app, timeout_ms=5_000)
        assert status == 0 and _Customer.state == SAVED, (out, _Customer.state)
        # ...and on one whose values differ (another day's data: the tier is Bronze).
        _Customer.state = {**START, "tier": "Bronze", "city": "Hull"}
        status, out = await run_exported(code, tmp_path / "other", app, timeout_ms=5_000)
        assert status == 0 and _Customer.state == SAVED, (out, _Customer.state)

        # Without the tier's combobox, neither finds another ("Support tier Standard",
        # labelled by itself too, is not the tier's): nothing is saved.
        _Customer.state, _Customer.gone = dict(START), True
        status, out = await run_exported(code, tmp_path / "gone", app, timeout_ms=2_000)
        assert status == 1 and _Customer.state == START, (out, _Customer.state)
        result = await Replay(tab, scenario, config=SHORT).run()
        assert not result.ok and _Customer.state == START, (result.to_dict(), _Customer.state)

        # Where each one's own text stands in its name, as the export wrote it.
        owns = {s.identity.name: s.identity.name_own for s in scenario.steps if s.identity}
        assert owns == {"Tier": "end", "Gold": "", "Plan": "", "Yearly": "", "City": "end",
                        "Nickname": "end", "Save": ""}  # fmt: skip
        assert 'named("Tier", own="end")' in code.replace("'", '"'), code


PLACES = """<!doctype html><title>Places</title>
<span id=a-l>Start</span><button role=combobox id=a aria-labelledby="a a-l">One</button>
<span id=b-l>Amount</span><span id=b-u>per month</span>
<input id=b aria-labelledby="b-l b b-u" value="12">
<span id=c-l>Region</span>
<select id=c aria-labelledby="c-l c"><option>North<option selected>South</select>
<span id=d-l>Alone</span><button role=combobox id=d aria-labelledby="d">Two</button>
<span id=e-l></span><span id=e-m>Quiet</span>
<div role=textbox contenteditable id=e aria-labelledby="e-l e e-m">Hush</div>"""


@pytest.mark.parametrize(
    ("role", "name", "own"),
    [("combobox", "Start", "start"), ("textbox", "Amount per month", "within"),
     ("combobox", "Region", "end"), ("textbox", "Quiet", "start")],
)  # fmt: skip
async def test_where_its_own_text_stands_playwright_finds_that_element_alone(
    module_tab: Tab, role: str, name: str, own: str
) -> None:
    """Wherever the element's own text stands among its labels (before them, between
    them, after them; a label reading as nothing is no label), the name recorded and
    where its own text goes find it, and nothing else, by Playwright's reading."""
    tab = module_tab
    with loopback_app(_page(PLACES)) as app:
        await tab.navigate(f"{app}/")
        target = await tab.target(ref_of(await tab.snapshot(), role, name))
        identity = target.identity
        assert identity is not None and (identity.name, identity.name_own) == (name, own)
        found = tab.page.get_by_role(role, name=named(identity.name, own=identity.name_own))  # type: ignore[arg-type]
        assert await found.count() == 1
        assert await found.evaluate("(e) => e.id") == identity.id


async def test_an_element_only_itself_labels_keeps_no_place(module_tab: Tab) -> None:
    """Labelled by itself alone, its name is not its labels': nothing marks a place."""
    with loopback_app(_page(PLACES)) as app:
        await module_tab.navigate(f"{app}/")
        element = await module_tab.page.query_selector("#d")
        assert element is not None
        identity = await capture(element, budget=room())
        assert (identity.name, identity.name_own) == ("", "")


def test_a_place_that_is_none_is_refused() -> None:
    with pytest.raises(ValueError, match="own is"):
        named("Tier", own="middle")
    with pytest.raises(ActionInvalid, match="name_own 'middle' is none of"):
        ElementIdentity.from_dict({"role": "combobox", "name": "Tier", "name_own": "middle"})


def _page(body: str) -> type[QuietHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self.send(200, body.encode())

    return Handler
