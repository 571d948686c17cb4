"""A list that filters as keys are released (jQuery's keyup, as back offices still
write them) is filtered by replay and its export as a person's typing filtered it.

A person typed "acme" into the filter, leaving one customer; ticked Select all and
clicked Delete selected: the app deleted Acme.  Replay filled the field (an input event,
no key) and the export alike: the list stayed whole, Select all ticked every row, and
every customer was deleted; both said passed.  Now a fill releases the key of its last
character (Backspace for an empty value), as a person's typing ends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from automation import Tab
from automation.recording.recorder import Recorder
from automation.recording.scenario import Scenario
from tests.automation.recording.test_recorder import click_center
from tests.exported import both_pass
from tests.net import QuietHandler, loopback_app
from tests.waiting import eventually

PAGE = """<!doctype html><title>Customers</title><h1>Customers</h1>
<label for=q>Filter</label> <input id=q type=text>
<table><tr><th><input type=checkbox id=all aria-label="Select all"></th><th>Name</th></tr>
<tbody id=rows>ROWS</tbody></table>
<button type=button id=del>Delete selected</button><p id=msg></p><script>
let timer;
q.addEventListener("keyup", () => { clearTimeout(timer); timer = setTimeout(() => {
  for (const tr of rows.children) {
    tr.hidden = !tr.textContent.toLowerCase().includes(q.value.toLowerCase());
  }
}, 300); });
all.onchange = () => {
  for (const tr of rows.children) if (!tr.hidden) tr.querySelector("input").checked = all.checked;
};
del.onclick = async () => {
  const ids = [...rows.querySelectorAll("input:checked")].map((b) => +b.value);
  await fetch("/api/delete", { method: "POST", body: JSON.stringify(ids) });
  msg.textContent = ids.length + " deleted";
};
</script>"""
CUSTOMERS = [(1, "Aardvark Ltd"), (2, "Acme Corp"), (3, "Beta Inc"), (4, "Globex")]


@pytest.fixture
def app() -> Iterator[tuple[list, str]]:
    deleted: list = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            rows = "".join(
                f"<tr><td><input type=checkbox value={key} aria-label='Select {name}'></td>"
                f"<td>{name}</td></tr>" for key, name in CUSTOMERS
            )  # fmt: skip
            self.send(200, PAGE.replace("ROWS", rows).encode())

        def do_POST(self) -> None:
            deleted.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send(200, b"{}", Content_Type="application/json")

    with loopback_app(Handler) as url:
        yield deleted, url


async def test_a_list_filtered_on_keyup_is_filtered_by_replay_and_export(
    tab: Tab, app: tuple[list, str], tmp_path: Path
) -> None:
    deleted, base = app
    await tab.navigate(f"{base}/customers")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "#q")
    await tab.page.keyboard.type("acme")
    await tab.page.wait_for_function("[...rows.children].filter((r) => !r.hidden).length === 1")
    await click_center(tab.page, "#all")
    await click_center(tab.page, "#del")
    await eventually(lambda: deleted, what="the deletion")
    assert deleted == [[2]]
    scenario = Scenario("Delete Acme", tuple(await recorder.stop()), base_url=f"{base}/")
    await both_pass(tab, scenario, tmp_path, base, deleted)
