"""A person's click in a text field is a step only where what comes next says it did more
than put the caret there.

A delivery date's field opens a calendar when clicked; the person clicks the field, then a
day.  The click in the field was left out as one that only puts the caret there, so the
recording clicked "19" in a calendar nobody had opened, and its replay of the working app
failed.  Now the click in a field is kept back until the next act: a click elsewhere keeps
it (before that click), typing into it or a click in another field drops it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from automation import Tab
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario
from tests.net import QuietHandler, loopback_app

PAGE = """<!doctype html><title>Order 1003</title><h1>Order 1003</h1>
<label>Reference <input id=ref></label><label>Note <input id=note></label>
<label for=d>Delivery date</label> <input id=d value="{date}">
<div id=cal hidden role=group aria-label="May 2024">{days}</div><p id=state></p>
<script>
d.addEventListener("click", () => { cal.hidden = false; });
cal.addEventListener("click", async (e) => {
  const day = e.target.closest("button");
  if (!day) return;
  d.value = "2024-05-" + day.textContent.padStart(2, "0"); cal.hidden = true;
  await fetch("/date", {method: "POST", body: d.value});
  state.textContent = "Saved";
});
</script>"""


@pytest.fixture
def order() -> Iterator[tuple[dict[str, str], str]]:
    state = {"date": "2024-05-10"}

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            days = "".join(f"<button type=button>{day}</button>" for day in range(1, 32))
            html = PAGE.replace("{date}", state["date"]).replace("{days}", days)
            self.send(200, html.encode())

        def do_POST(self) -> None:
            state["date"] = self.rfile.read(int(self.headers["Content-Length"])).decode()
            self.send(200, json.dumps({"ok": True}).encode(), Content_Type="application/json")

    with loopback_app(Handler) as url:
        yield state, url


@pytest.fixture
async def recording(tab: Tab, order: tuple[dict[str, str], str]) -> Recorder:
    """A recorder listening on the order's page, opened in ``tab``."""
    await tab.navigate(f"{order[1]}/order")
    recorder = Recorder(tab)
    await recorder.start()
    return recorder


def acts(steps: tuple) -> list[tuple[str, str]]:
    return [(s.action, s.identity.name if s.identity else "") for s in steps[1:]]


async def test_a_click_in_a_field_that_opens_a_calendar_is_a_step_and_replays(
    tab: Tab, order: tuple[dict[str, str], str], recording: Recorder
) -> None:
    state, base = order
    await tab.page.locator("#d").click()
    await tab.page.get_by_role("button", name="19", exact=True).click()
    await tab.page.get_by_text("Saved").wait_for()
    steps = tuple(await recording.stop())
    assert acts(steps) == [("click", "Delivery date"), ("click", "19")]
    assert state["date"] == "2024-05-19"

    state["date"] = "2024-05-10"
    result = await Replay(tab, Scenario("Deliver on the 19th", steps, base_url=base + "/")).run()
    assert result.ok and state["date"] == "2024-05-19", result.to_dict()


async def test_a_click_that_only_puts_the_caret_in_a_field_is_no_step(
    tab: Tab, recording: Recorder
) -> None:
    page = tab.page
    await page.locator("#ref").click()  # another field clicked next: dropped
    await page.locator("#note").click()
    await page.keyboard.type("leave at the door")  # typed into: dropped
    await page.locator("#ref").click()
    await page.keyboard.type("PO-7")
    await page.locator("#note").click()  # the last act: nothing came after it
    steps = tuple(await recording.stop())
    assert acts(steps) == [("fill", "Note"), ("fill", "Reference")]
