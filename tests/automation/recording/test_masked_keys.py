"""A field whose script cancels each key and writes the value itself (a currency mask,
as maskMoney and autoNumeric do) is recorded with the value it shows.

A person emptied a product's price and typed 250000; the mask drew "2,500.00" and the
save sent it.  The browser sent no input of the person's (the mask's own events are the
page's), so the recorder kept no fill: replay and export saved the old price and passed.
Now a text field keys were typed into is read as the person leaves it (or presses Enter
in it, or the recording stops), and a value no fill said is recorded as one."""

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

PAGE = b"""<!doctype html><title>Product</title><form method=post action=/save>
<label for=price>Price (USD)</label> <input id=price name=price value="1,000.00">
<p><button>Save</button></p></form><script>
const shown = (n) => n.toLocaleString("en-US", { minimumFractionDigits: 2 });
price.addEventListener("keydown", (e) => {
  let digits = price.value.replace(/\\D/g, "");
  if (/^[0-9]$/.test(e.key)) digits += e.key;
  else if (e.key === "Backspace") digits = digits.slice(0, -1);
  else if (e.key === "Delete") digits = "";
  else return;
  e.preventDefault();
  price.value = shown((+digits || 0) / 100);
  price.dispatchEvent(new Event("input", { bubbles: true }));
});
</script>"""


@pytest.fixture
def app() -> Iterator[tuple[list, str]]:
    with form_app(PAGE, "price") as (saved, url):
        yield saved, url


@pytest.mark.parametrize("sent_by", ["Save clicked", "Enter"])
async def test_a_value_a_mask_wrote_as_keys_were_typed_is_recorded(
    tab: Tab, app: tuple[list, str], tmp_path: Path, sent_by: str
) -> None:
    saved, base = app
    await tab.navigate(f"{base}/product")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "#price")
    await tab.page.keyboard.press("Delete")
    await tab.page.keyboard.type("250000")
    if sent_by == "Enter":
        await tab.page.keyboard.press("Enter")
    else:
        await click_center(tab.page, "form button")
    await eventually(lambda: saved, what="the save")
    assert saved == ["2,500.00"]
    steps = await recorder.stop()
    fills = [s.args["value"] for s in steps if s.action == "fill"]
    assert fills == ["2,500.00"], steps
    scenario = Scenario("Price", tuple(steps), base_url=f"{base}/")
    await both_pass(tab, scenario, tmp_path, base, saved)


async def test_a_masked_field_still_focused_as_the_recording_stops_is_recorded(
    tab: Tab, app: tuple[list, str]
) -> None:
    _, base = app
    await tab.navigate(f"{base}/product")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "#price")
    await tab.page.keyboard.type("5")
    steps = await recorder.stop()
    assert [s.args.get("value") for s in steps if s.action == "fill"] == ["10,000.05"]
