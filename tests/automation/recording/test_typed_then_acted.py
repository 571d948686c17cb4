"""What a step that typed left for later runs before the next step acts, in replay and in
its pytest export alike.

A list's search box filters it a moment after the last key (a debounce, then a fetch). A
person typed "glo", saw the list show its two customers, ticked "Select all" and archived
them. Replayed on the same data, the box was typed into and "Select all" ticked at once,
on the list before the search answered: replay and export archived every customer and
passed. Now both wait for the timers the typing set (up to settle.HOLD_TIMER_MS), what
they asked of the server and what the page did with its answers, before the next step."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

CUSTOMERS = ("Acme", "Globex", "Globe Trotters", "Initech")
PAGE = """<!doctype html><title>Customers</title><h1>Customers</h1>
<label>Search <input id=q type=search></label>
<p><button type=button id=archive>Archive selected</button></p>
<table><thead><tr><th><label><input type=checkbox id=all> Select all</label></th>
<th>Name</th></tr></thead><tbody id=rows></tbody></table><p role=status id=said></p>
<script>
let query = "";
async function load() {
  const found = await (await fetch("/api/customers?q=" + encodeURIComponent(query))).json();
  rows.innerHTML = ""; all.checked = false;
  for (const name of found) {
    const row = rows.insertRow();
    row.insertCell().innerHTML = "<input type=checkbox class=pick>";
    row.insertCell().textContent = name;
    row.querySelector("input").value = name;
  }
}
all.addEventListener("change", () =>
  document.querySelectorAll(".pick").forEach((box) => { box.checked = all.checked; }));
archive.onclick = async () => {
  const names = Array.from(document.querySelectorAll(".pick:checked"), (box) => box.value);
  await fetch("/api/archive", {method: "POST", body: JSON.stringify(names)});
  said.textContent = `${names.length} customers archived`;
  load();
};
let later;
q.addEventListener("input", () => {
  clearTimeout(later);
  later = setTimeout(() => { query = q.value; load(); }, DEBOUNCE_MS);
});
load();
</script>"""


@pytest.fixture
def customers() -> Iterator[tuple[list[list[str]], str]]:
    archived: list[list[str]] = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            address = urlsplit(self.path)
            if address.path == "/api/customers":
                query = parse_qs(address.query).get("q", [""])[0].lower()
                done = {name for names in archived for name in names}
                found = [n for n in CUSTOMERS if query in n.lower() and n not in done]
                self.send(200, json.dumps(found).encode(), Content_Type="application/json")
            else:
                debounce = parse_qs(address.query).get("debounce", ["300"])[0]
                self.send(200, PAGE.replace("DEBOUNCE_MS", str(int(debounce))).encode())

        def do_POST(self) -> None:
            archived.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send(200, b"{}", Content_Type="application/json")

    with loopback_app(Handler) as url:
        yield archived, url


@pytest.mark.parametrize("debounce_ms", [300, 1500])
async def test_a_search_s_debounce_runs_before_the_next_step_acts(
    tab: Tab, customers: tuple[list[list[str]], str], tmp_path: Path, debounce_ms: int
) -> None:
    archived, base = customers
    await tab.navigate(f"{base}/customers/?debounce={debounce_ms}")
    recorder = Recorder(tab)
    await recorder.start()
    page = tab.page
    await page.get_by_label("Search").click()
    await page.keyboard.type("glo")
    await page.wait_for_function("document.querySelectorAll('#rows tr').length === 2")
    await page.get_by_label("Select all").check()
    await page.get_by_role("button", name="Archive selected").click()
    await page.get_by_text("2 customers archived").wait_for()
    steps = await recorder.stop()
    assert [s.action for s in steps] == ["navigate", "fill", "check", "click"], steps
    scenario = Scenario("Archive the glo customers", tuple(steps), base_url=base + "/")
    assert archived == [["Globex", "Globe Trotters"]]

    archived.clear()
    result = await Replay(tab, scenario).run()
    assert result.ok, result.to_dict()
    assert archived == [["Globex", "Globe Trotters"]]  # not the whole list

    archived.clear()
    status, out = await run_exported(to_pytest(scenario), tmp_path, base)
    assert status == 0 and "1 passed" in out, out
    assert archived == [["Globex", "Globe Trotters"]]
