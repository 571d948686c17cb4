"""A choice or a tick the page puts back once it has checked it fails its step.

A person picks Express shipping; the app asks its server whether Express reaches the
address, and on a no shows Standard again and says why.  Read at once, the choice held:
the replay went on, placed the order with Standard shipping and said succeeded (its last
check, "Order placed", held).  Now a choice or a tick is read again once the page has
settled after it (its checks answered): where it shows the state from before the step,
the step fails, saying what the page says, and nothing after it runs; in the pytest
export too (``kept_change``).  A choice the app changes to one of its own (Pickup) fails
it too; a change the app keeps and a choice already made pass.  An agent's fill_form is
judged so, field by field."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from automation import Tab
from automation.errors import ActionFailed
from automation.recording.export import to_pytest
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario, ScenarioStep
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import ref_of

PAGE = """<!doctype html><title>Checkout</title><main><h1>Checkout</h1>
<form method=post action="/order">
<label>Shipping <select name=ship id=ship>
<option>Standard</option><option>Express</option><option>Pickup</option></select></label>
<label><input type=checkbox name=gift id=gift> Gift wrap</label>
<p id=msg></p><button>Place order</button></form>
<script>
const msg = document.getElementById("msg");
const how = new URLSearchParams(location.search).get("how");
const asked = async (what) => {  // the app's server asked; how= the way its answer is met
  const url = "/available?" + what + "&" + location.search.slice(1);
  const answer = how === "xhr" ? await new Promise((met) => {
    const xhr = new XMLHttpRequest();
    xhr.open("GET", url);
    xhr.onload = () => met(JSON.parse(xhr.responseText));
    xhr.send();
  }) : await (await fetch(url)).json();
  if (how === "timer") {  // a moment later
    const ms = Number(new URLSearchParams(location.search).get("ms"));
    await new Promise((met) => setTimeout(met, ms));
  }
  if (how === "task") {  // a task later, as a scheduler of renders (React's) posts one
    await new Promise((met) => {
      const channel = new MessageChannel();
      channel.port1.onmessage = met;
      channel.port2.postMessage(null);
    });
  }
  return answer;
};
const ship = document.getElementById("ship");
let was = ship.value;
ship.addEventListener("change", async () => {
  const answer = await asked("ship=" + ship.value);
  if (answer.instead) {  // the app's own pick
    ship.value = answer.instead; msg.className = "error"; msg.textContent = answer.why;
  }
  else if (!answer.ok) { ship.value = was; msg.className = "error"; msg.textContent = answer.why; }
  was = ship.value;
});
const gift = document.getElementById("gift");
gift.addEventListener("change", async () => {
  const answer = await asked("gift=" + gift.checked);
  if (!answer.ok) {
    gift.checked = !gift.checked; msg.className = "error"; msg.textContent = answer.why;
  }
});
</script></main>"""


# A menu of actions: choosing one does it and shows the placeholder again, saying what it
# did (as a status) or why it could not (as an error).  ``?menu=``: the placeholder has no
# value; ``disabled``: no one can choose it; ``minus-one``, ``prompt``: it has a value, as
# a first option that prompts (WordPress's "-1", or "none").
ACTIONS = """<!doctype html><title>Orders</title><main><h1>Orders</h1>
<label>With the selected orders <select id=bulk></select></label><p id=said></p>
<script>
const menu = new URLSearchParams(location.search).get("menu");
bulk.innerHTML = {
  disabled: "<option disabled selected>Bulk actions…</option>",
  "minus-one": "<option value=-1>Bulk actions</option>",
  prompt: "<option value=none>Choose what to do</option>",
}[menu] ?? "<option value=''>Bulk actions…</option>";
bulk.innerHTML += "<option value=archive>Archive</option><option value=delete>Delete</option>";
bulk.addEventListener("change", async () => {
  const answer = await (await fetch("/bulk", {method: "POST", body: bulk.value})).json();
  said.className = answer.ok ? "status" : "error";
  said.setAttribute("role", answer.ok ? "status" : "alert");
  said.textContent = answer.said;
  bulk.selectedIndex = 0;
});
</script></main>"""


class Shop(QuietHandler):
    orders: list[dict[str, list[str]]] = []

    def do_GET(self) -> None:
        if self.path.startswith("/available"):
            asked = parse_qs(urlsplit(self.path).query)
            refuse = asked.get("refuse", [""])[0]
            answer: dict[str, object] = {"ok": True}
            if refuse == "express" and asked.get("ship") == ["Express"]:
                answer = {"ok": False, "why": "Express is not available to your address"}
            if refuse == "gift" and asked.get("gift") == ["true"]:
                answer = {"ok": False, "why": "Gift wrap is sold out"}
            if refuse == "pickup" and asked.get("ship") == ["Express"]:
                why = "Express can't reach your address: Pickup chosen"
                answer = {"ok": False, "instead": "Pickup", "why": why}
            threading.Event().wait(0.3)  # a server that takes its time
            self.send(200, json.dumps(answer).encode(), **{"Content-Type": "application/json"})
            return
        page = ACTIONS if self.path.startswith("/orders") else PAGE
        self.send(200, page.encode(), **{"Content-Type": "text/html"})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        if self.path.startswith("/bulk"):  # a menu of actions' action, done or refused
            self.orders.append({"bulk": [body]})
            said = {"archive": "2 orders archived", "delete": "none of them can be deleted"}
            answer = {"ok": body != "delete", "said": said.get(body, "done")}
            self.send(200, json.dumps(answer).encode(), **{"Content-Type": "application/json"})
            return
        self.orders.append(parse_qs(body))
        self.send(200, b"<!doctype html><title>Done</title><h1>Order placed</h1>",
                  **{"Content-Type": "text/html"})  # fmt: skip


@pytest.fixture(scope="module")
def shop() -> Iterator[str]:
    with loopback_app(Shop) as url:
        yield url


def order(url: str, refuse: str, change: ScenarioStep) -> Scenario:
    place = {"role": "button", "name": "Place order", "tag": "button"}
    steps = (
        ScenarioStep("navigate", {"url": f"{url}/checkout?refuse={refuse}"}),
        change,
        ScenarioStep.from_dict({"action": "click", "args": {}, "identity": place}),
        ScenarioStep("expect", {"kind": "text_visible", "text": "Order placed"}),
    )
    return Scenario("Order", steps, base_url=f"{url}/")


EXPRESS = ScenarioStep.from_dict({
    "action": "select_option", "args": {"values": ["Express"]},
    "identity": {"role": "combobox", "name": "Shipping", "tag": "select"},
})  # fmt: skip
GIFT = ScenarioStep.from_dict({
    "action": "check", "args": {"checked": True},
    "identity": {"role": "checkbox", "name": "Gift wrap", "tag": "input"},
})  # fmt: skip


@pytest.mark.parametrize(
    ("change", "refuse", "said"),
    [(EXPRESS, "express", "Express is not available to your address"),
     (GIFT, "gift", "Gift wrap is sold out")],
    ids=["a choice", "a tick"],
)  # fmt: skip
async def test_a_change_the_page_puts_back_once_checked_fails_its_step(
    tab: Tab, shop: str, change: ScenarioStep, refuse: str, said: str, tmp_path: Path
) -> None:
    Shop.orders.clear()
    scenario = order(shop, refuse, change)
    result = await Replay(tab, scenario, config=ReplayConfig()).run()
    assert result.status == "failed", result.to_dict()
    assert result.reason.startswith(f"step 1 ({change.describe()})"), result.reason
    assert "but the page put it back as it was, saying " + repr(said) in result.reason
    assert [s.status for s in result.steps[2:]] == ["not_run", "not_run"]
    code, out = await run_exported(to_pytest(scenario), tmp_path, f"{shop}/")
    assert code == 1, out
    assert ">       kept_change(" in out, out  # it failed at the change
    assert "back as it was, saying " + repr(said) in out, out
    assert Shop.orders == []  # no order went with what the app put back


@pytest.mark.parametrize(
    "how", ["timer&ms=400", "task", "xhr"], ids=["a moment later", "a task later", "by XHR"]
)
async def test_a_tick_put_back_a_moment_after_its_answer_fails_its_step(
    tab: Tab, shop: str, how: str, tmp_path: Path
) -> None:
    """The app meets its server's answer a moment later (a short timer), a task later (a
    scheduler of renders), or by an XMLHttpRequest's handler: the tick it puts back then
    is read so, by the replay and by its export, which waits for what the page does with
    the answers to what it asked (not only for the answers) before reading the field."""
    Shop.orders.clear()
    scenario = order(shop, f"gift&how={how}", GIFT)
    result = await Replay(tab, scenario, config=ReplayConfig()).run()
    assert result.status == "failed", result.to_dict()
    assert "but the page put it back as it was, saying 'Gift wrap is sold out'" in result.reason
    code, out = await run_exported(to_pytest(scenario), tmp_path, f"{shop}/")
    assert code == 1, out
    assert ">       kept_change(" in out, out
    assert "back as it was, saying 'Gift wrap is sold out'" in out, out
    assert Shop.orders == []


@pytest.mark.parametrize(
    "how", ["", "&how=timer&ms=400"], ids=["as its answer came", "a moment later"]
)
async def test_a_choice_the_app_changes_to_its_own_fails_its_step(
    tab: Tab, shop: str, how: str, tmp_path: Path
) -> None:
    """The app answers Express with Pickup, its own pick: the step's choice did not hold,
    and an order with Pickup is not what the scenario does (it passed: the order went
    with Pickup and the replay said succeeded)."""
    Shop.orders.clear()
    scenario = order(shop, "pickup" + how, EXPRESS)
    result = await Replay(tab, scenario, config=ReplayConfig()).run()
    assert result.status == "failed", result.to_dict()
    assert result.reason.startswith(f"step 1 ({EXPRESS.describe()})"), result.reason
    said = "Express can't reach your address: Pickup chosen"
    assert f"but the page changed it to 'Pickup', saying {said!r}" in result.reason
    assert [s.status for s in result.steps[2:]] == ["not_run", "not_run"]
    code, out = await run_exported(to_pytest(scenario), tmp_path, f"{shop}/")
    assert code == 1, out
    assert ">       kept_change(" in out, out
    assert f"the page changed the choice to ['Pickup'], saying {said!r}" in out, out
    assert Shop.orders == []


@pytest.mark.parametrize(
    ("change", "refuse", "sent"),
    [(EXPRESS, "", {"ship": ["Express"]}), (GIFT, "", {"ship": ["Standard"], "gift": ["on"]})],
    ids=["a choice kept", "a tick kept"],
)  # fmt: skip
async def test_a_change_the_page_keeps_passes(
    tab: Tab, shop: str, change: ScenarioStep, refuse: str, sent: dict[str, list[str]],
    tmp_path: Path,
) -> None:  # fmt: skip
    Shop.orders.clear()
    scenario = order(shop, refuse, change)
    result = await Replay(tab, scenario, config=ReplayConfig()).run()
    assert result.ok, result.to_dict()
    code, out = await run_exported(to_pytest(scenario), tmp_path, f"{shop}/")
    assert code == 0, out
    assert Shop.orders == [sent, sent]


@pytest.mark.parametrize(
    ("refuse", "field", "said"),
    [("express", 0, "Express is not available to your address"),
     ("gift", 1, "Gift wrap is sold out")],
    ids=["a choice", "a tick"],
)  # fmt: skip
async def test_a_form_field_the_page_puts_back_stops_fill_form_there(
    tab: Tab, shop: str, refuse: str, field: int, said: str
) -> None:
    """An agent's fill_form is judged field by field as the replay of its steps is: a
    choice or a tick the page puts back stops it at that field, saying so."""
    await tab.navigate(f"{shop}/checkout?refuse={refuse}")
    snapshot = await tab.snapshot()
    fields = [
        {"ref": ref_of(snapshot, "combobox", "Shipping"), "value": ["Express"]},
        {"ref": ref_of(snapshot, "checkbox", "Gift wrap"), "value": True},
        {"ref": ref_of(snapshot, "combobox", "Shipping"), "value": ["Pickup"]},
    ]
    heard: list[tuple[int, str, str | None]] = []

    async def on_field(i: int, action: str, args: object, error: object, ms: int) -> None:
        heard.append((i, action, None if error is None else str(error)))

    with pytest.raises(ActionFailed) as failed:
        await tab.fill_form(fields, on_field=on_field)
    assert failed.value.message.startswith(f"fill_form stopped at field {field} "), failed.value
    assert "but the page put it back as it was, saying " + repr(said) in failed.value.message
    assert [(i, action) for i, action, _ in heard] == [
        (0, "select_option"),
        (1, "check"),
        (2, "select_option"),
    ][: field + 1]
    assert heard[-1][2] is not None and repr(said) in heard[-1][2]  # the step recorded failed
    shown = await tab.page.evaluate("[ship.value, gift.checked]")
    assert shown == [["Standard", False], ["Express", False]][field]  # nothing after it ran


async def test_a_form_the_page_keeps_is_filled(tab: Tab, shop: str) -> None:
    await tab.navigate(f"{shop}/checkout?refuse=")
    snapshot = await tab.snapshot()
    said = await tab.fill_form([
        {"ref": ref_of(snapshot, "combobox", "Shipping"), "value": ["Express"]},
        {"ref": ref_of(snapshot, "checkbox", "Gift wrap"), "value": True},
    ])  # fmt: skip
    assert said.startswith("filled 2 fields"), said
    assert await tab.page.evaluate("[ship.value, gift.checked]") == ["Express", True]


SUGGESTING = """<!doctype html><title>Find</title><main><h1>Find</h1>
<label>Note <input id=note></label>
<label>City <input id=city role=combobox aria-expanded=false aria-controls=list></label>
<ul id=list role=listbox></ul>
<script>
city.addEventListener("input", async () => {
  const names = await (await fetch("/available?city=" + city.value)).json();
  list.innerHTML = "<li role=option>" + city.value + "ville</li>";
});
</script></main>"""


async def test_a_combobox_typed_into_by_fill_form_is_settled(tab: Tab, shop: str) -> None:
    """A combobox that is no <select> takes its text as a fill, settled on its own: the
    suggestions its typing fetched are on the page when fill_form returns."""
    await tab.navigate(f"{shop}/checkout")
    await tab.page.set_content(SUGGESTING)
    snapshot = await tab.snapshot()
    await tab.fill_form([
        {"ref": ref_of(snapshot, "textbox", "Note"), "value": "ring twice"},
        {"ref": ref_of(snapshot, "combobox", "City"), "value": "Lyon"},
    ])  # fmt: skip
    assert await tab.page.evaluate("list.textContent") == "Lyonville"


@pytest.mark.parametrize(
    "menu", ["", "disabled", "minus-one", "prompt"],
    ids=["no value", "disabled", "value -1", "a prompt"],
)  # fmt: skip
async def test_a_menu_of_actions_showing_its_placeholder_again_passes_unless_it_refused(
    tab: Tab, shop: str, menu: str, tmp_path: Path
) -> None:
    """A select that does what is chosen and shows its placeholder again ("Bulk
    actions…", with no value or a value of its own) is no choice put back: the step
    passes, in replay and in the export; where the page says why it could not, the step
    fails saying so."""
    for action, said in (("Archive", ""), ("Delete", "none of them can be deleted")):
        step = ScenarioStep.from_dict({
            "action": "select_option", "args": {"values": [action]},
            "identity": {"role": "combobox", "name": "With the selected orders", "tag": "select"},
        })  # fmt: skip
        steps = (ScenarioStep("navigate", {"url": f"{shop}/orders?menu={menu}"}), step)
        scenario = Scenario("Bulk", steps, base_url=f"{shop}/")
        Shop.orders.clear()
        result = await Replay(tab, scenario, config=ReplayConfig()).run()
        code, out = await run_exported(to_pytest(scenario), tmp_path, f"{shop}/")
        assert Shop.orders == [{"bulk": [action.lower()]}] * 2  # each did it once
        if not said:
            assert result.ok, result.to_dict()
            assert "showed its placeholder again" in result.steps[1].result, result.to_dict()
            assert code == 0, out
            continue
        assert result.status == "failed", result.to_dict()
        assert f"but the page put it back as it was, saying {said!r}" in result.reason
        assert code == 1 and f"back as it was, saying {said!r}" in out, out
