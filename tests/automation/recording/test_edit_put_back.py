"""An edit the app saves as it is committed (Enter), and puts back when its save is
refused, fails its step.

A price edited in place: the person types the new price and presses Enter; the app saves
it, is told no (answered 200, ``{"ok": false}``: the status says nothing) and shows the
old price again, saying why.  Read once the page settled, the field shows the old price:
the edit did not happen.  In replay and in the pytest export, whether Enter came with the
fill (``submit``) or as the step after it on the same field; so is one saved as the field
is left (Tab), or with the key an editor saves with (Ctrl+S).  An entry field emptied as
its entry is taken (a new item added), and one drawn anew as its line is added (the
quantity back to 1) with nothing said to be wrong, are no edit put back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario, ScenarioStep
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

PAGE = """<!doctype html><title>Prices</title><main><h1>Prices</h1>
<label>Price of Widget <input id=price name=price value="12"></label>
<label>Stock of Widget <input id=stock name=stock value="7"></label>
<label>New item <input id=item name=item></label>
<label>Quantity <input id=qty name=qty value="1"></label>
<label>Notes <textarea id=notes name=notes>Call back</textarea></label>
<ul id=items></ul><p id=msg role=status></p><p id=locked role=alert></p>
<script>
const price = document.getElementById("price"), msg = document.getElementById("msg");
let saved = price.value;
price.addEventListener("keydown", async (e) => {
  if (e.key !== "Enter") return;
  const answer = await (await fetch("/save", {method: "POST", body: price.value})).json();
  if (answer.ok) { saved = price.value; msg.textContent = "Saved"; }
  else { price.value = saved; msg.className = "error"; msg.textContent = answer.why; }
});
const stock = document.getElementById("stock");  // saved as it is left
let stocked = stock.value;
stock.addEventListener("change", async () => {
  const answer = await (await fetch("/save", {method: "POST", body: stock.value})).json();
  if (answer.ok) { stocked = stock.value; msg.textContent = "Saved"; }
  else { stock.value = stocked; msg.className = "error"; msg.textContent = answer.why; }
});
const notes = document.getElementById("notes");  // saved with Ctrl+S, as editors are
let noted = notes.value;
document.addEventListener("keydown", async (e) => {
  if (!e.ctrlKey || e.key.toLowerCase() !== "s") return;
  e.preventDefault();
  const answer = await (await fetch("/save", {method: "POST", body: notes.value})).json();
  if (answer.ok) { noted = notes.value; msg.textContent = "Saved"; }
  else {  // in an alert of its own, in words on no list
    notes.value = noted;
    document.getElementById("locked").textContent = "These notes are locked by Bob";
  }
});
const item = document.getElementById("item");
item.addEventListener("keydown", async (e) => {
  if (e.key !== "Enter" || !item.value) return;
  await fetch("/save", {method: "POST", body: "1"});
  const li = document.createElement("li"); li.textContent = item.value;
  document.getElementById("items").append(li); item.value = "";
});
const qty = document.getElementById("qty");  // a line added, the quantity back to 1
qty.addEventListener("keydown", async (e) => {
  if (e.key !== "Enter") return;
  await fetch("/save", {method: "POST", body: qty.value});
  const li = document.createElement("li"); li.textContent = qty.value + " x Widget";
  document.getElementById("items").append(li); qty.value = "1";
});
</script></main>"""


class Prices(QuietHandler):
    def do_GET(self) -> None:
        self.send(200, PAGE.encode(), **{"Content-Type": "text/html"})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        ok = not body.startswith("-")
        answer = {"ok": ok, "why": "" if ok else "A price can't be negative"}
        self.send(200, json.dumps(answer).encode(), **{"Content-Type": "application/json"})


@pytest.fixture(scope="module")
def prices() -> Iterator[str]:
    with loopback_app(Prices) as url:
        yield url


PRICE = {"role": "textbox", "name": "Price of Widget", "tag": "input"}
STOCK = {"role": "textbox", "name": "Stock of Widget", "tag": "input"}
ITEM = {"role": "textbox", "name": "New item", "tag": "input"}
QTY = {"role": "textbox", "name": "Quantity", "tag": "input"}
NOTES = {"role": "textbox", "name": "Notes", "tag": "textarea"}


def steps_of(url: str, field: dict[str, str], value: str, how: str) -> Scenario:
    if how == "submit":
        edit = [
            ScenarioStep.from_dict(
                {"action": "fill", "args": {"value": value, "submit": True}, "identity": field}
            )
        ]
    else:  # Enter or Tab pressed on the field as the step after
        edit = [ScenarioStep.from_dict({"action": "fill", "args": {"value": value},
                                        "identity": field}),
                ScenarioStep.from_dict({"action": "press", "args": {"key": how},
                                        "identity": field})]  # fmt: skip
    return Scenario("Edit", (ScenarioStep("navigate", {"url": f"{url}/prices"}), *edit),
                    base_url=f"{url}/")  # fmt: skip


@pytest.mark.parametrize(
    ("how", "field", "was"),
    [
        ("submit", PRICE, "12"),
        ("Enter", PRICE, "12"),
        ("Tab", STOCK, "7"),
        ("Control+s", NOTES, "Call back"),
    ],
)
async def test_an_edit_put_back_as_its_save_is_refused_fails(
    tab: Tab, prices: str, how: str, field: dict[str, str], was: str, tmp_path: Path
) -> None:
    scenario = steps_of(prices, field, "-5", how)
    result = await Replay(tab, scenario, config=ReplayConfig()).run()
    assert result.status == "failed", result.to_dict()
    assert result.reason.startswith("step 1 (fill "), result.reason  # the edit, not the press
    why = "'These notes are locked by Bob'" if field is NOTES else '"A price can\'t be negative"'
    said = f"the app put it back, saying {why}"
    assert f"it shows {was!r} again, as before the step: {said}" in result.reason
    code, out = await run_exported(to_pytest(scenario), tmp_path, f"{prices}/")
    assert code == 1, out
    assert "kept_value(" in out and f"it shows {was!r} again" in out, out


@pytest.mark.parametrize("how", ["submit", "Enter", "Tab", "Control+s"])
async def test_an_edit_kept_or_an_entry_field_emptied_passes(
    tab: Tab, prices: str, how: str, tmp_path: Path
) -> None:
    edits = ((NOTES, "Sent the contract"),) if how == "Control+s" else (
        (PRICE, "15"), (STOCK, "9"), (ITEM, "Bolt"), (QTY, "3"))  # fmt: skip
    for field, value in edits:
        scenario = steps_of(prices, field, value, how)
        result = await Replay(tab, scenario, config=ReplayConfig()).run()
        assert result.ok, result.to_dict()
        folder = tmp_path / field["name"].replace(" ", "-")
        code, out = await run_exported(to_pytest(scenario), folder, f"{prices}/")
        assert code == 0, out
