"""A person's pick in a suggestion list that takes it as the press begins is a step.

A customer field suggests names as one types; this widget takes the suggestion on
mousedown and takes the list away, so the browser sends no click (the element pressed is
gone when the press ends).  The recording kept the typing and "Save order" and lost the
pick: its replay of the working app saved no customer and failed.  Now an option (a menu's
item) is described as the press on it begins and, gone when it ends, recorded as clicked;
its replay picks the same customer, and one another suggestion stands in for is not taken."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs

import pytest

from automation import Tab
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario
from tests.net import QuietHandler, loopback_app

PAGE = """<!doctype html><title>New order</title><h1>New order</h1>
<form method=post action=/orders><label>Customer <input id=q role=combobox
 aria-controls=list autocomplete=off></label><input type=hidden name=customer id=picked>
<ul role=listbox id=list></ul><button>Save order</button></form>
<script>
q.addEventListener("input", () => {
  list.innerHTML = "";
  for (const name of NAMES.filter((n) => n.toLowerCase().startsWith(q.value.toLowerCase()))) {
    const option = document.createElement("li");
    option.setAttribute("role", "option");
    option.textContent = name;
    option.addEventListener("mousedown", (e) => {
      e.preventDefault();
      q.value = picked.value = name;
      list.innerHTML = "";
    });
    list.append(option);
  }
});
</script>"""


@pytest.fixture
def shop() -> Iterator[tuple[dict[str, list], str]]:
    state: dict[str, list] = {"names": ["Acme Ltd", "Globex"], "orders": []}

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            names = repr(state["names"]).replace("'", '"')
            self.send(200, PAGE.replace("NAMES", names).encode())

        def do_POST(self) -> None:
            posted = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            state["orders"].append(posted.get("customer", [""])[0])
            self.send(200, b"<!doctype html><title>Order</title><h1>Order placed</h1>")

    with loopback_app(Handler) as url:
        yield state, url


async def test_a_suggestion_taken_on_mousedown_is_recorded_and_replayed(
    tab: Tab, shop: tuple[dict[str, list], str]
) -> None:
    state, base = shop
    await tab.navigate(f"{base}/orders/new")
    recorder = Recorder(tab)
    await recorder.start()
    page = tab.page
    await page.get_by_label("Customer").click()
    await page.keyboard.type("Acm")
    await page.get_by_role("option", name="Acme Ltd").click()
    await page.get_by_role("button", name="Save order").click()
    await page.get_by_text("Order placed").wait_for()
    steps = tuple(await recorder.stop())
    acts = [(s.action, s.identity.name if s.identity else "") for s in steps[1:]]
    assert acts == [("fill", "Customer"), ("click", "Acme Ltd"), ("click", "Save order")], acts
    assert state["orders"] == ["Acme Ltd"]

    scenario = Scenario("Order for Acme", steps, base_url=base + "/")
    state["orders"] = []
    result = await Replay(tab, scenario).run()
    assert result.ok and state["orders"] == ["Acme Ltd"], result.to_dict()

    state.update(names=["Acme Holdings"], orders=[])  # another Acme only
    result = await Replay(tab, scenario).run()
    assert not result.ok and state["orders"] == [], result.to_dict()
