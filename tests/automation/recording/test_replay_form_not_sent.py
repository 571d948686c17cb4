"""A save the browser refuses to send fails the replay and its pytest export.

Recorded with a quantity the form takes, a scenario given one past the field's maximum (a
parameter's value, a batch row's) clicks "Place order" and the browser refuses to send the
form: its bubble, nothing sent, the page where it was.  With no check after the click,
replay and export both passed a save that never happened (nothing judged a step that sent
nothing).  Now the step fails ``form_not_sent`` naming the field and the browser's words,
in both; given a quantity it takes, both pass and the app has the order.

A person who clicked "Place order" too soon (the browser refused: a field empty), filled
the field and clicked again did one thing: the recording keeps the click that sent the
form, not the one the browser refused, and its replay and export pass."""

from __future__ import annotations

from collections.abc import Iterator
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
<button>Place order</button></form>"""
PLACED = "<!doctype html><title>Order</title><h1>Order {n}</h1><p>Thank you.</p>"


@pytest.fixture
def shop() -> Iterator[tuple[list[dict[str, list[str]]], str]]:
    placed: list[dict[str, list[str]]] = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/orders/new"):
                self.send(200, FORM.encode())
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
    status, out = await run_exported(code, tmp_path / "over", base, {"TABWRIGHT_PARAM_qty": "11"})
    assert status == 1 and "the browser refused to send the form" in out, out
    assert "'Quantity': " in out, out
    assert len(placed) == 1  # neither sent it

    result = await Replay(tab, scenario, params={"qty": "4"}).run()
    assert result.ok, result.to_dict()
    status, out = await run_exported(code, tmp_path / "fine", base, {"TABWRIGHT_PARAM_qty": "5"})
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
