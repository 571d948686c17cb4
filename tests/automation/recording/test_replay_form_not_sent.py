"""A save the browser refuses to send fails the replay and its pytest export.

Recorded with a quantity the form takes, a scenario given one past the field's maximum (a
parameter's value, a batch row's) clicks "Place order" and the browser refuses to send the
form: its bubble, nothing sent, the page where it was.  With no check after the click,
replay and export both passed a save that never happened (nothing judged a step that sent
nothing).  Now the step fails ``form_not_sent`` naming the field and the browser's words,
in both; given a quantity it takes, both pass and the app has the order.

A person who clicked "Place order" too soon (the browser refused: a field empty), filled
the field and clicked again did one thing: the recording keeps the click that sent the
form, not the one the browser refused, and its replay and export pass.

The browser refuses without moving the focus where the field it asks for is hidden (a
new required field in a closed section: "An invalid form control is not focusable"), or
where the page takes the field's ``invalid`` event to say so in words of its own: replay
and export passed such a click, the order never placed; now a click on the form's submit
button (an Enter in its field) whose fields the browser found not valid fails too."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import acted

FORM = """<!doctype html><title>New order</title><h1>New order</h1>
<form method="post" action="/orders/">
<label>Customer <input name="customer" required></label>
<label>Quantity <input name="qty" type="number" min="1" max="10" required></label>
{more}<button>Place order</button></form>"""
# What a later release of the form asks for that the recording never filled, where the
# browser, refusing to send the form, moves the focus to no field.
LATER = {
    "in a closed section": "<details><summary>Billing</summary>"
    "<label>Tax number <input name='tax' required></label></details>",
    "in a tab not shown": "<div role='tabpanel' hidden>"
    "<label>Tax number <input name='tax' required></label></div>",
    "said by the page": "<label>Tax number <input name='tax' required></label><p id='said'></p>"
    "<script>document.querySelector('[name=tax]').addEventListener('invalid', (e) => {"
    " e.preventDefault(); said.textContent = 'Tax number: we need it now'; });</script>",
}
PLACED = "<!doctype html><title>Order</title><h1>Order {n}</h1><p>Thank you.</p>"


@pytest.fixture
def shop() -> Iterator[tuple[list[dict[str, list[str]]], str]]:
    placed: list[dict[str, list[str]]] = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/orders/new"):
                release = parse_qs(self.path.partition("?")[2]).get("release", [""])[0]
                self.send(200, FORM.format(more=LATER.get(release, "")).encode())
            else:
                self.send(200, PLACED.format(n=self.path.rsplit("/", 1)[-1]).encode())

        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            placed.append(parse_qs(self.rfile.read(length).decode()))
            self.send(303, Location=f"/orders/{len(placed)}")

    with loopback_app(Handler) as url:
        yield placed, url


async def _recorded(tab: Tab, base: str) -> Scenario:
    """A run that orders 3 for Acme; its quantity made the parameter ``qty``."""
    steps = await acted(tab, f"{base}/orders/new", [
        ("fill", "textbox", "Customer", {"value": "Acme"}),
        ("fill", "spinbutton", "Quantity", {"value": "3"}), ("click", "button", "Place order", {}),
    ])  # fmt: skip
    return Scenario("Place an order", steps, base_url=base + "/").with_param(2, "qty")


async def test_a_save_the_browser_refused_to_send_fails_replay_and_export(
    tab: Tab, shop: tuple[list[dict[str, list[str]]], str], tmp_path: Path
) -> None:
    placed, base = shop
    scenario = await _recorded(tab, base)
    assert [order["qty"] for order in placed] == [["3"]]
    code = to_pytest(scenario)

    result = await Replay(tab, scenario, params={"qty": "11"}).run()
    assert not result.ok
    failed = result.steps[-1]
    assert failed.action == "click" and failed.error is not None, result.to_dict()
    assert failed.error["code"] == "form_not_sent", failed.error
    assert "'Quantity': " in failed.error["message"], failed.error
    # (alone: in a pytest of its own, its fixture's own browser, as a user runs it)
    status, out = await run_exported(
        code, tmp_path / "over", base, {"TABWRIGHT_PARAM_qty": "11"}, alone=True
    )
    assert status == 1 and "the browser refused to send the form" in out, out
    assert "'Quantity': " in out, out
    assert len(placed) == 1  # neither sent it

    result = await Replay(tab, scenario, params={"qty": "4"}).run()
    assert result.ok, result.to_dict()
    status, out = await run_exported(
        code, tmp_path / "fine", base, {"TABWRIGHT_PARAM_qty": "5"}, alone=True
    )
    assert status == 0 and "1 passed" in out, out
    assert [order["qty"] for order in placed] == [["3"], ["4"], ["5"]]


async def test_a_click_the_browser_refused_is_left_out_of_a_person_s_recording(
    tab: Tab, shop: tuple[list[dict[str, list[str]]], str], tmp_path: Path
) -> None:
    placed, base = shop
    url = f"{base}/orders/new"
    await tab.navigate(url)
    recorder = Recorder(tab)
    await recorder.start()
    page = tab.page
    await page.get_by_label("Quantity").click()
    await page.keyboard.type("3")
    await page.get_by_role("button", name="Place order").click()  # Customer left empty
    await page.keyboard.type("Acme")  # (the browser put the focus on it)
    await page.keyboard.press("Enter")  # sent
    await page.wait_for_url("**/orders/1")
    steps = await recorder.stop()
    assert [order["customer"] for order in placed] == [["Acme"]]
    kept = [(s.action, s.args, s.identity.name if s.identity else "") for s in steps]
    assert kept[:4] == [("navigate", {"url": url}, ""), ("fill", {"value": "3"}, "Quantity"),
                        ("fill", {"value": "Acme"}, "Customer"),
                        ("press", {"key": "Enter"}, "Customer")], kept  # fmt: skip
    scenario = Scenario("Place an order", tuple(steps[:4]), base_url=base + "/")
    result = await Replay(tab, scenario).run()
    assert result.ok, result.to_dict()
    status, out = await run_exported(to_pytest(scenario), tmp_path, base)
    assert status == 0 and "1 passed" in out, out
    assert len(placed) == 3


@pytest.mark.parametrize("release", list(LATER))
async def test_a_save_refused_with_the_focus_moved_nowhere_fails_replay_and_export(
    tab: Tab, shop: tuple[list[dict[str, list[str]]], str], tmp_path: Path, release: str
) -> None:
    placed, base = shop
    scenario = await _recorded(tab, base)
    assert len(placed) == 1
    later = replace(scenario, steps=(
        replace(scenario.steps[0], args={"url": f"{base}/orders/new?release={release}"}),
        *scenario.steps[1:]))  # fmt: skip

    result = await Replay(tab, later).run()
    assert not result.ok, result.to_dict()
    failed = result.steps[-1]
    assert failed.action == "click" and failed.error is not None, result.to_dict()
    assert failed.error["code"] == "form_not_sent", failed.error
    assert "'Tax number': " in failed.error["message"], failed.error
    status, out = await run_exported(to_pytest(later), tmp_path, base)
    assert status == 1 and "the browser refused to send the form" in out, out
    assert "'Tax number': " in out, out
    assert len(placed) == 1  # neither sent it

    result = await Replay(tab, scenario).run()  # the form as it was recorded
    assert result.ok, result.to_dict()
    assert len(placed) == 2


async def test_a_click_refused_for_a_hidden_field_is_left_out_of_a_person_s_recording(
    tab: Tab, shop: tuple[list[dict[str, list[str]]], str]
) -> None:
    placed, base = shop
    await tab.navigate(f"{base}/orders/new?release=in a closed section")
    recorder = Recorder(tab)
    await recorder.start()
    page = tab.page
    await page.get_by_label("Customer").fill("Acme")
    await page.get_by_label("Quantity").fill("3")
    await page.get_by_role("button", name="Place order").click()  # refused: Tax number
    await page.get_by_text("Billing").click()
    await page.get_by_label("Tax number").fill("GB123")
    await page.get_by_role("button", name="Place order").click()
    await page.wait_for_url("**/orders/1")
    steps = await recorder.stop()
    assert [order["tax"] for order in placed] == [["GB123"]]
    clicks = [s.identity.name for s in steps if s.action == "click" and s.identity]
    assert clicks.count("Place order") == 1, [(s.action, s.args, s.identity) for s in steps]
