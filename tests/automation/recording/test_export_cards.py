"""Fields of one name in two sections of a form (a billing and a shipping address, each
with its "Street" and "City"), each field wrapped in its label: the export tells them
apart by the card each sits in, as replay does.  The export read a field's card as its
own label ("Street", "City": the text around the field but the field's own name, which
replay leaves out), so no card read as the recorded one and it failed on the very page
it was recorded on."""

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

KINDS = {"billing": "Billing address", "shipping": "Shipping address"}


class Addresses(QuietHandler):
    """Order 1001's addresses, billing then shipping (``shipping_first``: the other way)."""

    saved: dict[str, str] = {}
    shipping_first = False

    def do_GET(self) -> None:
        kinds = list(KINDS)[::-1] if self.shipping_first else list(KINDS)
        sets = "".join(
            f"<fieldset><legend>{KINDS[kind]}</legend>"
            f"<label>Street <input name={kind}_street value='{self.saved[kind + '_street']}'>"
            f"</label><label>City <input name={kind}_city value='{self.saved[kind + '_city']}'>"
            "</label></fieldset>"
            for kind in kinds
        )
        self.send(200, (f"<!doctype html><title>Addresses</title><h1>Order 1001</h1>"
                        f"<form method=post action=/address>{sets}"
                        "<button>Save addresses</button></form>").encode())  # fmt: skip

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        sent = parse_qs(self.rfile.read(length).decode(), keep_blank_values=True)
        Addresses.saved = {name: values[0] for name, values in sent.items()}
        self.send(303, Location="/address?saved=1")


def reset(shipping_first: bool = False) -> None:
    Addresses.shipping_first = shipping_first
    Addresses.saved = {"billing_street": "1 Main St", "billing_city": "Leeds",
                       "shipping_street": "2 Quay Rd", "shipping_city": "Hull"}  # fmt: skip


@pytest.fixture
def app() -> Iterator[str]:
    reset()
    with loopback_app(Addresses) as url:
        yield url


async def test_a_field_named_as_another_section_s_is_found_by_its_section(
    tab: Tab, app: str, tmp_path: Path
) -> None:
    await tab.navigate(f"{app}/address")
    recorder = Recorder(tab)
    await recorder.start()
    shipping = tab.page.locator("fieldset", has_text="Shipping address")
    await shipping.get_by_label("City").fill("Dock 4")
    await tab.page.get_by_role("button", name="Save addresses").click()
    await tab.page.wait_for_url("**/address?saved=1")
    scenario = Scenario("Ship to the dock", tuple(await recorder.stop()), base_url=app + "/")
    assert Addresses.saved["shipping_city"] == "Dock 4"
    code = to_pytest(scenario)

    for shipping_first in (False, True):  # as recorded; the sections the other way round
        reset(shipping_first)
        result = await Replay(tab, scenario).run()
        assert result.ok, result.to_dict()
        assert (Addresses.saved["shipping_city"], Addresses.saved["billing_city"]) == (
            "Dock 4", "Leeds")  # fmt: skip
        reset(shipping_first)
        status, out = await run_exported(code, tmp_path / str(shipping_first), app)
        assert status == 0, out
        assert (Addresses.saved["shipping_city"], Addresses.saved["billing_city"]) == (
            "Dock 4", "Leeds")  # fmt: skip
