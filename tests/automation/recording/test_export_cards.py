"""Fields of one name in two sections of a form (a billing and a shipping address, each
with its "Street" and "City"), each field wrapped in its label: the export tells them
apart by the card each sits in, as replay does.  The export read a field's card as its
own label ("Street", "City": the text around the field but the field's own name, which
replay leaves out), so no card read as the recorded one and it failed on the very page
it was recorded on."""

from __future__ import annotations

import json
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


class People(QuietHandler):
    """People and their phones, a phone edited in its cell: a click puts a field there,
    Enter saves it (``{"ok": false}`` when ``refuse``: the cell shows the number before),
    and the field is gone either way.  ``reverse``: the rows the other way round."""

    phones: dict[str, str] = {}
    refuse = False
    reverse = False

    def do_GET(self) -> None:
        rows = "".join(
            f"<tr data-who='{who}'><td>{who}</td><td class=phone>{phone}</td></tr>"
            for who, phone in sorted(self.phones.items(), reverse=self.reverse)
        )
        self.send(200, f"""<!doctype html><title>People</title><h1>People</h1><table>
        <tr><th>Name</th><th>Phone</th></tr>{rows}</table><p id=said role=status></p><script>
        for (const cell of document.querySelectorAll("td.phone")) cell.onclick = () => {{
          if (cell.querySelector("input")) return;
          const before = cell.textContent, field = document.createElement("input");
          field.value = before; cell.textContent = ""; cell.append(field); field.focus();
          field.onkeydown = async (e) => {{
            if (e.key !== "Enter") return;
            const who = cell.parentElement.dataset.who;
            const answer = await (await fetch("/phone", {{method: "POST",
              body: JSON.stringify({{who, phone: field.value}})}})).json();
            cell.textContent = answer.ok ? field.value : before;
          }};
        }};</script>""".encode())  # fmt: skip

    def do_POST(self) -> None:
        sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not self.refuse:
            People.phones[sent["who"]] = sent["phone"]
        self.send(200, json.dumps({"ok": not self.refuse}).encode(),
                  Content_Type="application/json")  # fmt: skip


def people(refuse: bool = False, reverse: bool = False, shared: bool = False) -> None:
    """The people as recorded (``shared``: Ann now has Bob's number, a shared line)."""
    People.phones = {"Ann Lee": "555-0102" if shared else "555-0101", "Bob Roe": "555-0102",
                     "Cat Moe": "555-0103"}  # fmt: skip
    People.refuse, People.reverse = refuse, reverse


async def test_an_edit_in_a_cell_whose_field_is_gone_once_saved_is_judged_by_the_cell(
    tab: Tab, tmp_path: Path
) -> None:
    """The field the app puts in a cell is gone once Enter saved it: the export waited
    for it to read it again (for the whole TIMEOUT_MS) and failed a save that was made.
    Now it reads the cell, as replay does: saved, it passes (the rows as recorded or the
    other way round); refused (the cell shows the number before), it fails.  Where
    another row's cell shows the same number now, the export's click found two cells (a
    strict locator's error) and failed where replay passed: it takes the one in its row."""
    people()
    with loopback_app(People) as app:
        await tab.navigate(f"{app}/people")
        recorder = Recorder(tab)
        await recorder.start()
        await tab.page.get_by_role("row", name="Bob Roe").locator("td.phone").click()
        await tab.page.keyboard.press("Control+a")
        await tab.page.keyboard.type("555-9999")
        await tab.page.keyboard.press("Enter")
        await tab.page.get_by_role("cell", name="555-9999").wait_for()
        scenario = Scenario("Bob's phone", tuple(await recorder.stop()), base_url=app + "/")
        assert People.phones["Bob Roe"] == "555-9999"
        code = to_pytest(scenario)

        for refuse, reverse, shared in ((False, False, False), (False, True, False),
                                        (True, False, False), (False, False, True)):  # fmt: skip
            people(refuse, reverse, shared)
            result = await Replay(tab, scenario).run()
            assert result.ok is not refuse, result.to_dict()
            people(refuse, reverse, shared)
            status, out = await run_exported(
                code, tmp_path / f"{refuse}{reverse}{shared}", app, timeout_ms=60_000
            )
            assert (status == 0) is not refuse, out
            assert not refuse or "555-0102" in out, out  # the number the app put back
            assert People.phones["Bob Roe"] == ("555-0102" if refuse else "555-9999")
            assert People.phones["Ann Lee"] == ("555-0102" if shared else "555-0101")
