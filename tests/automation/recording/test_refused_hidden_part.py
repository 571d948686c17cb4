"""A form the server draws again as its answer, its error in a part nobody sees, fails the
save, in replay and in the pytest export.

Shop settings in a panel of tabs (General, Billing) of one form and one Save: the server
saves and redirects back (303), or, refusing the VAT number, answers the post itself (200)
with the form drawn again, the General tab shown and the error beside the VAT field in the
hidden Billing panel.  Nothing the person sees says it; the same address, so nothing else
told either: the save passed, with or without a check that the page shows no error.  A
page the server drew as its answer to a form is now read for the marks in the form's hidden
parts too (a field marked invalid, an error list); a page opened as such, a hidden error
template waiting for a script, is not."""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from automation import Tab
from automation.recording.scenario import Scenario, ScenarioStep
from tests.exported import replayed_and_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import acted

PAGE = """<!doctype html><title>Settings</title><h1>Shop settings</h1>
<div class=error hidden>Something went wrong</div>
<form method=post action="/settings"><div role=tablist>
<button type=button role=tab aria-selected=true aria-controls=general>General</button>
<button type=button role=tab aria-selected=false aria-controls=billing>Billing</button></div>
<div role=tabpanel id=general><label>Store name <input name=store value="{store}"></label></div>
<div role=tabpanel id=billing hidden>{error}
<label>VAT number <input name=vat value="{vat}"{invalid}></label></div>
<button>Save settings</button></form>
<script>
for (const tab of document.querySelectorAll("[role=tab]")) tab.onclick = () => {
  for (const other of document.querySelectorAll("[role=tab]")) {
    other.setAttribute("aria-selected", String(other === tab));
    document.getElementById(other.getAttribute("aria-controls")).hidden = other !== tab;
  }
};
</script>"""


@dataclass
class Shop:
    store: str = "Old Shop"
    vat: str = "GB111"
    refuse: bool = False


@pytest.fixture
def shop() -> Iterator[tuple[Shop, str]]:
    state = Shop()

    def page(store: str, vat: str, refused: bool) -> bytes:
        error = '<ul class="errorlist"><li>Enter a valid VAT number.</li></ul>' if refused else ""
        filled = PAGE.replace("{store}", html.escape(store)).replace("{vat}", html.escape(vat))
        filled = filled.replace("{invalid}", ' aria-invalid="true"' if refused else "")
        return filled.replace("{error}", error).encode()

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self.send(200, page(state.store, state.vat, False))

        def do_POST(self) -> None:
            posted = self.posted()
            if state.refuse:  # the form drawn again with what was posted, and why
                self.send(200, page(posted["store"], posted["vat"], True))
                return
            state.store, state.vat = posted["store"], posted["vat"]
            self.send(303, Location="/settings")

    with loopback_app(Handler) as url:
        yield state, url


@pytest.mark.parametrize("checked", [False, True], ids=["no check", "a no_error check"])
async def test_a_form_drawn_again_with_its_error_in_a_hidden_tab_fails_replay_and_export(
    tab: Tab, shop: tuple[Shop, str], tmp_path: Path, checked: bool
) -> None:
    state, base = shop
    steps = await acted(tab, f"{base}/settings", [
        ("fill", "textbox", "Store name", {"value": "Nordic Goods"}),
        ("click", "tab", "Billing", {}),
        ("fill", "textbox", "VAT number", {"value": "SE556677"}),
        ("click", "tab", "General", {}),
        ("click", "button", "Save settings", {}),
    ])  # fmt: skip
    assert (state.store, state.vat) == ("Nordic Goods", "SE556677")
    check = (ScenarioStep("expect", {"kind": "no_error"}),) if checked else ()
    scenario = Scenario("Shop settings", (*steps, *check), base_url=base + "/")

    def reset() -> None:
        state.store, state.vat = "Old Shop", "GB111"

    state.refuse = True
    result, status, out = await replayed_and_exported(tab, scenario, tmp_path / "no", base, reset)
    assert not result.ok and "'Enter a valid VAT number.'" in result.reason, result.reason
    assert status == 1 and "Enter a valid VAT number." in out and state.vat == "GB111", out

    state.refuse = False
    result, status, out = await replayed_and_exported(tab, scenario, tmp_path / "ok", base, reset)
    assert result.ok, result.to_dict()
    assert status == 0 and state.vat == "SE556677", out
