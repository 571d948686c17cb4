"""A button clicked three or four times in a second is clicked as often by replay and its
export.

A person clicked a quantity's "+" four times, 150 ms apart (the browser counted the
clicks 1, 2, 3, 4), and saved 5.  The recorder kept a double click and dropped the
clicks past the second (a third click selects text), so replay and export saved 3 and
passed.  Now a quick click past the second on a button (a link, a tab, a box) is one
more click step; on text it still selects, and is not recorded."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from automation import Tab
from automation.recording.recorder import Recorder
from automation.recording.scenario import Scenario
from tests.automation.recording.test_recorder import click_center
from tests.exported import both_pass
from tests.net import form_app
from tests.waiting import eventually

PAGE = b"""<!doctype html><title>Order</title><form method=post action=/save>
<p id=note>Quantity</p><input type=number id=q name=qty value=1 aria-labelledby=note>
<button type=button id=plus aria-label="Increase quantity" onclick="q.value=+q.value+1">+</button>
<p><button id=save>Save</button></p></form>"""


@pytest.fixture
def app() -> Iterator[tuple[list, str]]:
    with form_app(PAGE, "qty") as (saved, url):
        yield saved, url


async def quick_clicks(tab: Tab, selector: str, clicks: int) -> None:
    """A person's ``clicks`` quick clicks at ``selector``'s centre, 150 ms apart."""
    box = await tab.page.locator(selector).bounding_box()
    assert box is not None
    await tab.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    for count in range(1, clicks + 1):
        await tab.page.mouse.down(click_count=count)
        await tab.page.mouse.up(click_count=count)
        await asyncio.sleep(0.15)


async def test_a_button_clicked_four_times_quickly_is_clicked_four_times(
    tab: Tab, app: tuple[list, str], tmp_path: Path
) -> None:
    saved, base = app
    await tab.navigate(f"{base}/order")
    recorder = Recorder(tab)
    await recorder.start()
    await quick_clicks(tab, "#note", 3)  # text selected: no step
    await quick_clicks(tab, "#plus", 4)
    await click_center(tab.page, "#save")
    await eventually(lambda: saved, what="the save")
    assert saved == ["5"]
    steps = await recorder.stop()
    named = [(s.action, s.identity.name if s.identity else "") for s in steps[1:]]
    assert named == [
        ("double_click", ""),  # the text: its third click selected it
        ("double_click", "Increase quantity"),
        ("click", "Increase quantity"),
        ("click", "Increase quantity"),
        ("click", "Save"),
    ]
    await both_pass(tab, Scenario("Order 5", tuple(steps), base_url=f"{base}/"), tmp_path, base,
                    saved)  # fmt: skip
