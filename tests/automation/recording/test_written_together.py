"""Controls written with nothing between them (as JSX renders them, `</button><button>`)
are read apart, by replay and its export alike, on the day they were recorded.

A confirm dialog's Cancel and Delete read as "CancelDelete" to the export, which then
found no card reading as the recorded "Delete invoice INV-7? Cancel" (replay takes the
button's text and its name out of it, both "Delete"; the export once); and a tag picker's
chip "Urgent" written against its Save button read "UrgentSave" to both, whose choice
"did not take".  Both failed on the app as recorded; now both pass, and a day whose
dialog swaps its buttons too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from automation import Tab
from automation.recording.recorder import Recorder
from automation.recording.scenario import Scenario
from tests.automation.recording.test_recorder import click_center
from tests.exported import both_pass
from tests.net import QuietHandler, loopback_app

INVOICES = """<!doctype html><title>Invoices</title><h1>Invoices</h1><table>
<tr><td>INV-6</td><td><button onclick="ask(6)">Delete</button></td></tr>
<tr><td>INV-7</td><td><button onclick="ask(7)">Delete</button></td></tr></table>
<div id=modal role=dialog aria-labelledby=mt hidden><h2 id=mt></h2>BUTTONS</div>
<p role=status id=said></p>
<script>
let asked = null;
function ask(n) { asked = n; mt.textContent = `Delete invoice INV-${n}?`; modal.hidden = false; }
function shut() { modal.hidden = true; }
async function go() {
  modal.hidden = true;
  await fetch("/delete", { method: "POST", body: String(asked) });
  said.textContent = "Deleted";
}
</script>"""
CANCEL = '<button onclick="shut()">Cancel</button>'
DELETE = '<button onclick="go()">Delete</button>'
TICKET = """<!doctype html><title>Ticket 7</title><h1>Ticket 7</h1><form method=post>
<label for=q>Tags</label> <span id=chips></span><input id=q role=combobox aria-controls=lb
 aria-expanded=false autocomplete=off oninput="filter()"><ul role=listbox id=lb hidden></ul><input
 type=hidden name=tags><button>Save</button></form>
<script>
function filter() {
  lb.innerHTML = "";
  for (const o of ["Urgent", "Not urgent"]) {
    if (!q.value || !o.toLowerCase().includes(q.value.toLowerCase())) continue;
    const li = document.createElement("li");
    li.setAttribute("role", "option");
    li.textContent = o;
    li.onclick = () => {
      const chip = document.createElement("span");
      chip.textContent = o;
      chips.appendChild(chip);
      document.querySelector("[name=tags]").value = o;
      q.value = "";
      lb.hidden = true;
    };
    lb.appendChild(li);
  }
  lb.hidden = !lb.children.length;
  q.setAttribute("aria-expanded", String(!lb.hidden));
}
</script>"""


@pytest.fixture
def app() -> Iterator[tuple[dict, str]]:
    state: dict = {"buttons": CANCEL + DELETE, "saved": []}

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            page = TICKET if self.path.startswith("/ticket") else INVOICES
            self.send(200, page.replace("BUTTONS", state["buttons"]).encode())

        def do_POST(self) -> None:
            state["saved"].append(self.rfile.read(int(self.headers["Content-Length"])).decode())
            if self.path.startswith("/ticket"):
                self.send(303, Location="/ticket?saved=1")
            else:
                self.send(200, b"{}", Content_Type="application/json")

    with loopback_app(Handler) as url:
        yield state, url


async def test_a_dialog_s_buttons_written_together(
    tab: Tab, app: tuple[dict, str], tmp_path: Path
) -> None:
    state, base = app
    await tab.navigate(f"{base}/invoices")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "tr:nth-child(2) button")
    await click_center(tab.page, "#modal button:nth-of-type(2)")
    await tab.page.wait_for_function("said.textContent === 'Deleted'")
    scenario = Scenario("Delete INV-7", tuple(await recorder.stop()), base_url=f"{base}/")
    assert state["saved"] == ["7"]
    await both_pass(tab, scenario, tmp_path / "recorded", base, state["saved"])
    state["buttons"] = DELETE + CANCEL  # swapped, another day
    await both_pass(tab, scenario, tmp_path / "swapped", base, state["saved"])


async def test_a_chip_written_against_the_save_button(
    tab: Tab, app: tuple[dict, str], tmp_path: Path
) -> None:
    state, base = app
    await tab.navigate(f"{base}/ticket")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "#q")
    await tab.page.keyboard.type("urg")
    await click_center(tab.page, "#lb li:first-child")
    await click_center(tab.page, "form > button")
    await tab.page.wait_for_url("**saved=1")
    scenario = Scenario("Tag it urgent", tuple(await recorder.stop()), base_url=f"{base}/")
    assert state["saved"] == ["tags=Urgent"]
    await both_pass(tab, scenario, tmp_path, base, state["saved"])
