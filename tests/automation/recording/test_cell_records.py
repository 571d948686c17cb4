"""A table's cell a person clicked to edit is that record's cell, in replay and in its
pytest export.

A grid edited in place (a click on a price cell moves the one editor over it; Enter
saves): the cell is named by what it holds, the record's price, and was found by that
name and where it stood.  Another day, Gadget listed first at the same price, replay
set Gadget's price; with Widget gone, replay and export set Gadget's, and passed.  Now
a cell is found in its record's row alone: the same value in another row is another
record's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from tests.automation.recording.test_recorder import click_center
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

SHORT = ReplayConfig(locate_wait_ms=1_000)
PAGE = """<!doctype html><title>Prices</title><h1>Prices</h1>
<table><thead><tr><th>Product</th><th>Price</th></tr></thead><tbody id=rows></tbody></table>
<input id=editor aria-label="Cell editor" style="position: absolute; display: none; width: 80px">
<p role=status id=said></p>
<script>
let cell = null;
async function draw() {
  const rows = await (await fetch("/api/rows")).json();
  document.getElementById("rows").innerHTML = rows.map((r) => `<tr><td>${r.name}</td>` +
    `<td class=price data-id=${r.id} tabindex=0>${r.price}</td></tr>`).join("");
  for (const td of document.querySelectorAll(".price")) td.onclick = () => {
    cell = td;
    const r = td.getBoundingClientRect();
    Object.assign(editor.style, { display: "block", left: `${r.left + scrollX}px`,
                                  top: `${r.top + scrollY}px` });
    editor.value = "";
    editor.focus();
  };
}
editor.onkeydown = async (e) => {
  if (e.key !== "Enter") return;
  await fetch("/api/rows/" + cell.dataset.id, { method: "POST", body: editor.value });
  editor.style.display = "none";
  said.textContent = "Saved";
  await draw();
};
draw();
</script>"""
WIDGET = {"id": 1, "name": "Widget", "price": "9.99"}
GADGET = {"id": 2, "name": "Gadget", "price": "4.50"}
DAYS = {
    "the same list": ([WIDGET, GADGET], "Widget"),
    "Gadget first at the same price": ([{**GADGET, "price": "9.99"}, WIDGET], "Widget"),
    "Widget gone": ([{**GADGET, "price": "9.99"}, {"id": 3, "name": "Sprocket", "price": "1"}],
                    None),
}  # fmt: skip


@pytest.fixture
def app() -> Iterator[tuple[dict, str]]:
    state: dict = {"rows": [], "saved": []}

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            if self.path == "/api/rows":
                self.send(200, json.dumps(state["rows"]).encode(), Content_Type="application/json")
            else:
                self.send(200, PAGE.encode())

        def do_POST(self) -> None:
            price = self.rfile.read(int(self.headers["Content-Length"])).decode()
            if state.get("locked"):  # refused in an envelope of its outcome alone, 200
                self.send(200, b'{"status": "error"}', Content_Type="application/json")
                return
            row = next(r for r in state["rows"] if str(r["id"]) == self.path.rsplit("/", 1)[-1])
            row["price"] = price
            state["saved"].append((row["name"], price))
            self.send(200, b'{"ok": true}', Content_Type="application/json")

    with loopback_app(Handler) as url:
        yield state, url


async def _recorded(tab: Tab, state: dict, base: str) -> Scenario:
    """A person reprices the widget in the grid."""
    state["rows"] = [dict(r) for r in DAYS["the same list"][0]]
    await tab.navigate(f"{base}/prices")
    await tab.page.wait_for_selector("td.price")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "td.price[data-id='1']")
    await tab.page.keyboard.type("12.50")
    await tab.page.keyboard.press("Enter")
    await tab.page.wait_for_function("said.textContent === 'Saved'")
    steps = await recorder.stop()
    assert state["saved"] == [("Widget", "12.50")]
    return Scenario("Reprice the widget", tuple(steps), base_url=f"{base}/")


async def test_a_cell_edited_in_place_is_its_record_s(
    tab: Tab, app: tuple[dict, str], tmp_path: Path
) -> None:
    state, base = app
    scenario = await _recorded(tab, state, base)
    code = to_pytest(scenario)
    for n, (day, (rows, edited)) in enumerate(DAYS.items()):
        for run in ("replay", "export"):
            state.update(rows=[dict(r) for r in rows], saved=[])
            if run == "replay":
                passed = (await Replay(tab, scenario, config=SHORT).run()).ok
            else:
                status, _ = await run_exported(code, tmp_path / str(n), base, timeout_ms=3_000)
                passed = status == 0
            assert passed == bool(edited), (day, run)
            assert state["saved"] == ([(edited, "12.50")] if edited else []), (day, run)


async def test_a_save_the_server_refused_in_a_bare_envelope_fails(
    tab: Tab, app: tuple[dict, str], tmp_path: Path
) -> None:
    """The price locked: the save answered 200 {"status": "error"}, nothing saved, the
    editor still showing what was typed; replay and export passed."""
    state, base = app
    scenario = await _recorded(tab, state, base)
    state["locked"] = True
    for run in ("replay", "export"):
        state.update(rows=[dict(r) for r in DAYS["the same list"][0]], saved=[])
        if run == "replay":
            result = await Replay(tab, scenario, config=SHORT).run()
            passed, said = result.ok, json.dumps(result.to_dict())
        else:
            status, said = await run_exported(to_pytest(scenario), tmp_path, base)
            passed = status == 0
        assert not passed and "status" in said and "error" in said, (run, said[-2000:])
