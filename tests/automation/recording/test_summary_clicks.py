"""A details element's summary is a button a person, an agent, a replay and an export
press alike.

Chromium gives a <summary> no ARIA role, and neither the snapshot nor Playwright's role
engine had one for it: an agent could not open "Shipping options" (no ref), and a
person's click on it was recorded, then refused by replay as not in the page (a false
red) and by the export (no button of that name).  Now it is a button, collapsed or
expanded as its details is closed or open."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from automation import Tab
from automation.recording.recorder import Recorder
from automation.recording.scenario import Scenario
from tests.automation.recording.test_recorder import click_center
from tests.exported import both_pass
from tests.net import QuietHandler, loopback_app

PAGE = """<!doctype html><title>Order 7</title><h1>Order 7</h1><form method=post>
<details><summary>Shipping options</summary>
<label>Carrier <input name=carrier></label></details>
<details><summary>Gift options</summary><label>Message <input name=message></label></details>
<button>Save</button></form>"""


@pytest.fixture
def app() -> Iterator[tuple[list, str]]:
    saved: list = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self.send(200, PAGE.encode())

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"])).decode()
            saved.append({k: v[0] for k, v in parse_qs(body).items()})
            self.send(303, Location="/order?saved=1")

    with loopback_app(Handler) as url:
        yield saved, url


async def test_an_agent_sees_a_summary_as_a_button_and_opens_it(
    tab: Tab, app: tuple[list, str]
) -> None:
    _, base = app
    await tab.navigate(f"{base}/order")
    snap = await tab.snapshot()
    ref = next(r for r in snap.refs.values() if r.name == "Shipping options")
    assert (ref.role, ref.interactive) == ("button", True)
    assert f'button "Shipping options" [{ref.ref}] [collapsed]' in snap.text
    await tab.click(ref.ref)
    assert await tab.page.locator("details").first.evaluate("d => d.open")
    assert f'button "Shipping options" [{ref.ref}] [expanded]' in (await tab.snapshot()).text


async def test_a_person_s_click_on_a_summary_is_replayed_and_exported(
    tab: Tab, app: tuple[list, str], tmp_path: Path
) -> None:
    saved, base = app
    await tab.navigate(f"{base}/order")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "summary >> nth=0")
    await click_center(tab.page, "input[name=carrier]")
    await tab.page.keyboard.type("DHL")
    await click_center(tab.page, "form > button")
    await tab.page.wait_for_url("**saved=1")
    steps = await recorder.stop()
    done = {"carrier": "DHL"}
    assert saved == [done]
    opened = steps[1].identity
    assert opened is not None and (opened.role, opened.name) == ("button", "Shipping options")
    scenario = Scenario("Ship by DHL", tuple(steps), base_url=f"{base}/")
    await both_pass(tab, scenario, tmp_path, base, saved)
