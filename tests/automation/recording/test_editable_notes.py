"""A bare contenteditable element (a notes box drawn as a div a person types into, no role
written for it) is a text box to replay and to its pytest export alike.

The snapshot and replay read it as a textbox; Playwright's role engine gives it no role,
and the export looked for a textbox by that name and failed on the day it was recorded.
Now the export finds it among the page's editable elements, by the name replay reads."""

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

PAGE = """<!doctype html><title>Ticket 12</title><h1>Ticket 12</h1>
<p>Customer: Acme</p>
<div contenteditable {named} id=box style="min-height: 3em; border: 1px solid"></div>
<button onclick="save()">Save</button><p role=status id=said></p>
<script>
async function save() {{
  await fetch("/notes", {{ method: "POST", body: box.innerText }});
  said.textContent = "Saved";
}}
</script>"""


@pytest.fixture(params=["aria-label=Notes", ""], ids=["named", "unnamed"])
def app(request: pytest.FixtureRequest) -> Iterator[tuple[list, str]]:
    saved: list = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self.send(200, PAGE.format(named=request.param).encode())

        def do_POST(self) -> None:
            saved.append(self.rfile.read(int(self.headers["Content-Length"])).decode())
            self.send(200, json.dumps({"ok": True}).encode(), Content_Type="application/json")

    with loopback_app(Handler) as url:
        yield saved, url


async def test_typing_into_an_editable_div_is_replayed_and_exported(
    tab: Tab, app: tuple[list, str], tmp_path: Path
) -> None:
    saved, base = app
    await tab.navigate(f"{base}/ticket")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "#box")
    await tab.page.keyboard.type("Called back")
    await click_center(tab.page, "button")
    await tab.page.wait_for_function("said.textContent === 'Saved'")
    steps = await recorder.stop()
    assert saved == ["Called back"]
    scenario = Scenario("Note the call", tuple(steps), base_url=f"{base}/")
    await both_pass(tab, scenario, tmp_path, base, saved)
