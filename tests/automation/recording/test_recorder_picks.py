"""A person's pick in a suggestion list that takes it as the press begins is a step.

A customer field suggests names as one types; this widget takes the suggestion on
mousedown and takes the list away, so the browser sends no click (the element pressed is
gone when the press ends).  The recording kept the typing and "Save order" and lost the
pick: its replay of the working app saved no customer and failed.  Now an option (a menu's
item) is described as the press on it begins and, gone when it ends, recorded as clicked;
its replay picks the same customer, and one another suggestion stands in for is not taken.

A pick made with the keys (ArrowDown, then Enter) was recorded as those keys: replayed
where another customer is suggested first, Enter took that one, and passed.  Now an Enter
in a field whose list has an active option (its aria-activedescendant, or the option its
list marks selected) is recorded as a click on that option."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

import pytest

from automation import Tab
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario, ScenarioStep
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
    option.id = "opt-" + list.children.length;
    list.append(option);
  }
});
q.addEventListener("keydown", (e) => {
  const options = [...list.children];
  if (!options.length) return;
  let at = options.findIndex((o) => o.classList.contains("active"));
  if (e.key === "ArrowDown") at = Math.min(at + 1, options.length - 1);
  else if (e.key === "Enter" && at >= 0) {
    e.preventDefault();
    options[at].dispatchEvent(new MouseEvent("mousedown", {cancelable: true}));
    return;
  } else return;
  e.preventDefault();
  options.forEach((o, i) => {
    o.classList.toggle("active", i === at);
    if (MARKED === "selected") o.setAttribute("aria-selected", String(i === at));
  });
  if (MARKED === "descendant") q.setAttribute("aria-activedescendant", options[at].id);
});
</script>"""


@pytest.fixture
def shop() -> Iterator[tuple[dict[str, Any], str]]:
    state: dict[str, Any] = {"names": ["Acme Ltd", "Globex"], "orders": []}

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            names = repr(state["names"]).replace("'", '"')
            marked = '"' + state.get("marked", "") + '"'
            self.send(200, PAGE.replace("NAMES", names).replace("MARKED", marked).encode())

        def do_POST(self) -> None:
            posted = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            state["orders"].append(posted.get("customer", [""])[0])
            self.send(200, b"<!doctype html><title>Order</title><h1>Order placed</h1>")

    with loopback_app(Handler) as url:
        yield state, url


async def typed_acm(tab: Tab, base: str) -> Recorder:
    """A recording of a person who opened the order form and typed "Acm" as its customer."""
    await tab.navigate(f"{base}/orders/new")
    recorder = Recorder(tab)
    await recorder.start()
    await tab.page.get_by_label("Customer").click()
    await tab.page.keyboard.type("Acm")
    return recorder


async def saved(tab: Tab, recorder: Recorder) -> tuple[ScenarioStep, ...]:
    """The steps once the person saved the order."""
    await tab.page.get_by_role("button", name="Save order").click()
    await tab.page.get_by_text("Order placed").wait_for()
    return tuple(await recorder.stop())


async def test_a_suggestion_taken_on_mousedown_is_recorded_and_replayed(
    tab: Tab, shop: tuple[dict[str, Any], str]
) -> None:
    state, base = shop
    recorder = await typed_acm(tab, base)
    page = tab.page
    await page.get_by_role("option", name="Acme Ltd").click()
    steps = await saved(tab, recorder)
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


@pytest.mark.parametrize("marked", ["descendant", "selected"])
async def test_a_suggestion_picked_with_the_keys_is_recorded_as_picked(
    tab: Tab, shop: tuple[dict[str, Any], str], marked: str
) -> None:
    state, base = shop
    state.update(names=["Acme Ltd", "Acme Holdings"], marked=marked)
    recorder = await typed_acm(tab, base)
    page = tab.page
    await page.get_by_role("option", name="Acme Ltd").wait_for()
    await page.keyboard.press("ArrowDown")
    await page.keyboard.press("Enter")
    steps = await saved(tab, recorder)
    assert state["orders"] == ["Acme Ltd"]
    assert ("click", "Acme Ltd") in [(s.action, s.identity and s.identity.name) for s in steps]

    scenario = Scenario("Order for Acme", steps, base_url=base + "/")
    state.update(names=["Acme Holdings", "Acme Ltd"], orders=[])  # another suggested first
    result = await Replay(tab, scenario).run()
    assert result.ok and state["orders"] == ["Acme Ltd"], result.to_dict()
