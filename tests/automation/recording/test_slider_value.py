"""A slider is replayed to the value the person left it at.

A person dragged a discount's slider from 20 to 80 and saved; the recorder kept a click
on the slider (its value was no typed one), so replay and export clicked its centre,
saved 50, and passed.  Clicked on its thumb and moved by two arrow keys (30), it fared
no better once the click landed on the centre.  Now a slider's value is recorded as a
fill of its final value, and a click on it is no step."""

from __future__ import annotations

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

PAGE = b"""<!doctype html><title>Settings</title><form method=post action=/save>
<label for=disc>Discount (%)</label>
<input type=range id=disc name=discount min=0 max=100 step=5 value=20 style="width:400px">
<p><button>Save</button></p></form>"""


@pytest.fixture
def app() -> Iterator[tuple[list, str]]:
    with form_app(PAGE, "discount") as (saved, url):
        yield saved, url


@pytest.mark.parametrize("how", ["dragged", "thumb clicked, two keys"])
async def test_a_slider_is_replayed_to_the_value_it_was_left_at(
    tab: Tab, app: tuple[list, str], tmp_path: Path, how: str
) -> None:
    saved, base = app
    await tab.navigate(f"{base}/settings")
    recorder = Recorder(tab)
    await recorder.start()
    box = await tab.page.locator("#disc").bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2

    def at(share: float) -> float:  # a point of the thumb's track
        return box["x"] + 8 + (box["width"] - 16) * share

    if how == "dragged":
        await tab.page.mouse.move(at(0.2), y)
        await tab.page.mouse.down()
        for share in (0.4, 0.6, 0.8):
            await tab.page.mouse.move(at(share), y, steps=3)
        await tab.page.mouse.up()
    else:
        await tab.page.mouse.click(at(0.2), y)  # on the thumb: still 20
        for _ in range(2):
            await tab.page.keyboard.press("ArrowRight")
    await click_center(tab.page, "form button")
    await eventually(lambda: saved, what="the save")
    assert saved == [{"dragged": "80"}.get(how, "30")]
    steps = await recorder.stop()
    assert [(s.action, s.args) for s in steps[1:]] == [("fill", {"value": saved[0]}),
                                                        ("click", {})]  # fmt: skip
    scenario = Scenario("Set the discount", tuple(steps), base_url=f"{base}/")
    await both_pass(tab, scenario, tmp_path, base, saved)
