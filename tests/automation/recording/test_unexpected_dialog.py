"""A dialog the scenario has no ``dialog`` step for fails its replay and its pytest export
alike, naming it.  The app now asks ``confirm("Delete all orders?")`` before it saves an
order's note: replay dismissed it and failed the step, and the exported file, whose page
had no dialog listener, had Playwright dismiss it and went on: nothing was saved, the
note's field still showed what was typed, and the file passed.  A ``dialog`` step still
answers it as recorded, in a later step than its own, in both."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario, ScenarioStep
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

PAGE = """<!doctype html><title>Order 1</title><h1>Order 1</h1>
<form method="post"><label>Note <input name="note" value="{note}"></label>
<input type="hidden" name="reason"><button>Save</button></form>
<script>const form = document.forms[0];
{script}</script>"""
ASKS = {  # what the app's Save asks first, by release
    "nothing": "",
    "confirm": 'form.addEventListener("submit", (e) => {'
    ' if (!confirm("Delete all orders?")) e.preventDefault(); });',
    "prompt": 'form.addEventListener("submit", (e) => { const why = prompt("Why?", "no reason");'
    " if (why === null) e.preventDefault(); else form.reason.value = why; });",
    # saved by the page's script, which then says something nobody answers
    "alert_later": 'form.addEventListener("submit", (e) => { e.preventDefault();'
    ' fetch("", { method: "POST", body: new URLSearchParams(new FormData(form)) })'
    '.then(() => alert("Saved, but order 2 was deleted")); });',
    # says, where it used to ask, why it saves nothing
    "alert_instead": 'form.addEventListener("submit", (e) => { e.preventDefault();'
    ' alert("Order 1 is locked: its note cannot change"); });',
}


@dataclass
class Orders:
    asks: str = "nothing"
    saved: list[tuple[str, str]] = field(default_factory=list)  # (note, reason)
    url: str = ""


@pytest.fixture
def orders() -> Iterator[Orders]:
    state = Orders()

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            note = state.saved[-1][0] if state.saved else ""
            html = PAGE.format(note=escape(note), script=ASKS[state.asks])
            self.send(200, html.encode())

        def do_POST(self) -> None:
            form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            state.saved.append((form.get("note", [""])[0], form.get("reason", [""])[0]))
            self.send(303, Location=self.path)

    with loopback_app(Handler) as state.url:
        yield state


NOTE = {"role": "textbox", "name": "Note", "tag": "input", "name_attr": "note"}


def step(action: str, args: dict[str, Any], identity: dict[str, Any] | None = None) -> ScenarioStep:
    return ScenarioStep.from_dict({"action": action, "args": args, "identity": identity})


def scenario(orders: Orders, *dialog: ScenarioStep) -> Scenario:
    """Types a note and saves it; the field shows it after (``dialog``: a dialog step
    first, two steps before the one that opens the dialog)."""
    url = f"{orders.url}/orders/1/"
    steps = (step("navigate", {"url": url}), *dialog, step("fill", {"value": "Rush"}, NOTE),
             step("click", {}, {"role": "button", "name": "Save", "tag": "button"}),
             step("expect", {"kind": "value", "value": "Rush"}, NOTE))  # fmt: skip
    return Scenario("Note an order", steps, base_url=orders.url)


async def both(tab: Tab, orders: Orders, scenario: Scenario, tmp_path: Path, asks: str) -> tuple[
    Any, int, str, list[tuple[str, str]]
]:  # fmt: skip
    """The scenario replayed, then its export run, each on the release that ``asks``: the
    replay's result, the export's status and output, what the export saved."""
    orders.asks, orders.saved = asks, []
    result = await Replay(tab, scenario).run()
    replayed, orders.saved = orders.saved, []
    code, out = await run_exported(to_pytest(scenario), tmp_path, orders.url, timeout_ms=4_000)
    assert orders.saved == replayed  # the file did what the replay did
    return result, code, out, replayed


async def test_an_unexpected_confirm_fails_replay_and_export_naming_it(
    tab: Tab, orders: Orders, tmp_path: Path
) -> None:
    said = "an unexpected dialog appeared and was dismissed: confirm 'Delete all orders?'"
    result, code, out, saved = await both(tab, orders, scenario(orders), tmp_path, "confirm")
    assert result.status == "failed" and result.steps[2].status == "failed", result.to_dict()
    assert result.reason.startswith("step 2 (click button 'Save')") and said in result.reason
    assert code == 1 and f"step 2: {said}" in out, out
    assert saved == []
    # The release that does not ask: both pass, and save the note.
    result, code, out, saved = await both(tab, orders, scenario(orders), tmp_path, "nothing")
    assert result.ok, result.to_dict()
    assert code == 0, out
    assert saved == [("Rush", "")]


@pytest.mark.parametrize(
    ("asks", "args", "saved"),
    [
        ("confirm", {"accept": True}, [("Rush", "")]),
        ("confirm", {"accept": False}, []),  # recorded dismissed: nothing saved, as then
        ("prompt", {"accept": True, "prompt_text": "late stock"}, [("Rush", "late stock")]),
        ("prompt", {"accept": True}, [("Rush", "no reason")]),  # as prefilled
    ],
)
async def test_a_recorded_dialog_step_answers_it_in_replay_and_export(
    tab: Tab, orders: Orders, tmp_path: Path, asks: str, args: dict[str, Any],
    saved: list[tuple[str, str]],
) -> None:  # fmt: skip
    steps = scenario(orders, step("dialog", args))  # (its check holds either way)
    result, code, out, done = await both(tab, orders, steps, tmp_path, asks)
    assert result.ok, result.to_dict()
    assert code == 0, out
    assert done == saved


async def test_a_dialog_that_comes_as_the_page_goes_on_fails_the_step_in_replay(
    tab: Tab, orders: Orders
) -> None:
    """The page's script saves, then alerts: the click had returned, and the replay,
    which raised only for a dialog its action brought, passed."""
    orders.asks = "alert_later"
    result = await Replay(tab, scenario(orders)).run()
    assert result.status == "failed", result.to_dict()
    assert "alert 'Saved, but order 2 was deleted'" in result.reason, result.reason
    assert orders.saved == [("Rush", "")]


async def test_a_replay_owes_nothing_to_the_dialogs_of_the_tab_before_it(
    tab: Tab, orders: Orders, fixture_url: str
) -> None:
    """The tab had an alert nobody armed, then an arming nothing used (a conversation's
    earlier work).  A replay started there: its first step failed on the old alert, and
    the app's new confirm was accepted by the old arming (the orders were deleted and the
    replay passed).  Neither is the replay's: it fails on the confirm, at its own step."""
    await tab.navigate(f"{fixture_url}/engine/dialogs.html")
    await tab.page.click("#alert")  # unarmed: dismissed, and noted as unexpected
    tab.dialogs.arm("accept")  # and never used
    orders.asks = "confirm"
    result = await Replay(tab, scenario(orders)).run()
    assert [s.status for s in result.steps][:3] == ["passed", "passed", "failed"], result.to_dict()
    assert "unexpected dialog appeared and was dismissed: confirm" in result.reason
    assert orders.saved == []


@pytest.mark.parametrize("asks", ["confirm", "alert_instead"])
async def test_a_dialog_step_answers_only_the_kind_of_dialog_it_names(
    tab: Tab, orders: Orders, tmp_path: Path, asks: str
) -> None:
    """The scenario accepts the confirm its Save asks.  The next release says instead, in
    an alert, that the order is locked, and saves nothing: the alert took the answer meant
    for the question, the field still showed what was typed, and replay and export passed.
    A dialog step that names its kind (as a run's saved dialog step does) answers that
    kind only: the alert is unexpected, and fails the Save in both."""
    steps = scenario(orders, step("dialog", {"accept": True, "kind": "confirm"}))
    result, code, out, saved = await both(tab, orders, steps, tmp_path, asks)
    if asks == "confirm":
        assert result.ok, result.to_dict()
        assert code == 0, out
        assert saved == [("Rush", "")]
        return
    said = "unexpected dialog appeared and was dismissed: alert 'Order 1 is locked"
    assert result.status == "failed", result.to_dict()
    assert result.reason.startswith("step 3 (click button 'Save')"), result.reason
    assert said in result.reason, result.reason
    assert code == 1 and said in out, out
    assert saved == []
