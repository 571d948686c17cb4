"""An edit made in an editor the app takes away once it is committed, and puts back when
its save is refused, fails its step.

A price edited in its table's cell (double-click, type, Enter) or a name in its list's line
(Rename, type, Enter): the app takes the editor away as the edit is committed, saves it,
is told no (answered 200, ``{"ok": false}``: the status says nothing) and shows the old
value where the editor stood, saying why or not.  The field is gone, so reading it again
tells nothing; the place it stood in shows the value from before the edit again, not the
one typed: the edit did not happen, in replay and in the pytest export alike.  A cell
drawn anew (its row's cells written again) is read in its row.  One the app keeps, or
shows its own way ("12.5" shown as "12.50"), passes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import acted

PRICES = """<!doctype html><title>Prices</title><h1>Prices</h1><p id=msg></p>
<table><thead><tr><th>Item</th><th>Price</th></tr></thead><tbody>{rows}</tbody></table>
<script>
const msg = document.getElementById("msg");
for (const td of document.querySelectorAll("td.price")) td.ondblclick = () => {
  if (td.querySelector("input")) return;
  const old = td.textContent, input = document.createElement("input");
  input.setAttribute("aria-label", "Price of " + td.dataset.item);
  input.value = old; td.textContent = ""; td.append(input); input.focus();
  input.onkeydown = async (e) => {
    if (e.key !== "Enter") return;
    td.textContent = input.value;  // at once; put back should the save be refused
    const answer = await (await fetch("/save", {method: "POST",
      body: JSON.stringify({item: td.dataset.item, value: input.value})})).json();
    if (answer.ok) { td.textContent = answer.shown; return; }
    if (DRAWN_ANEW) td.parentElement.innerHTML =
      `<td>${td.dataset.item}</td><td class=price data-item="${td.dataset.item}">${old}</td>`;
    else td.textContent = old;
    if (answer.why) { msg.setAttribute("role", "alert"); msg.textContent = answer.why; }
  };
};
</script>"""
NAMES = """<!doctype html><title>Teams</title><h1>Teams</h1><p id=msg></p><ul>{lines}</ul>
<script>
const msg = document.getElementById("msg");
function line(li, name) {
  li.innerHTML = `<span>${name}</span> <button aria-label="Rename ${name}">Rename</button>`;
  li.querySelector("button").onclick = () => {
    li.innerHTML = `<form><input aria-label="Name of ${name}" value="${name}"></form>`;
    const input = li.querySelector("input");
    li.querySelector("form").onsubmit = async (e) => {
      e.preventDefault();
      const answer = await (await fetch("/save", {method: "POST",
        body: JSON.stringify({item: li.dataset.item, value: input.value})})).json();
      line(li, answer.ok ? answer.shown : name);
      if (answer.why) { msg.setAttribute("role", "alert"); msg.textContent = answer.why; }
    };
  };
}
for (const li of document.querySelectorAll("li")) line(li, li.dataset.item);
</script>"""


@dataclass
class Back:
    """The back office's data and how its save answers: "ok", "said" (refused, saying
    why), "silent" (refused, saying nothing), "own" (kept, shown its own way)."""

    values: dict[str, str] = field(default_factory=dict)
    mode: str = "ok"
    drawn_anew: bool = False

    def reset(self, mode: str) -> None:
        self.values = {"Item 1": "10.00", "Item 2": "20.00", "Alpha": "Alpha", "Beta": "Beta"}
        self.mode = mode

    def save(self, item: str, value: str) -> dict[str, Any]:
        if self.mode in ("said", "silent"):
            return {"ok": False, "why": "Above the list price" if self.mode == "said" else ""}
        shown = f"{float(value):.2f}" if self.mode == "own" else value
        self.values[item] = shown
        return {"ok": True, "shown": shown}


@pytest.fixture
def back() -> Iterator[tuple[Back, str]]:
    state = Back()
    state.reset("ok")

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            v = state.values
            if self.path == "/prices":
                rows = "".join(f'<tr><td>{i}</td><td class=price data-item="{i}">{v[i]}</td></tr>'
                               for i in ("Item 1", "Item 2"))  # fmt: skip
                html = PRICES.replace("{rows}", rows)
                html = html.replace("DRAWN_ANEW", str(state.drawn_anew).lower())
            else:
                lines = "".join(f'<li data-item="{v[i]}"></li>' for i in ("Alpha", "Beta"))
                html = NAMES.replace("{lines}", lines)
            self.send(200, html.encode())

        def do_POST(self) -> None:
            asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            answer = state.save(asked["item"], asked["value"])
            self.send(200, json.dumps(answer).encode(), Content_Type="application/json")

    with loopback_app(Handler) as url:
        yield state, url


async def price_edit(tab: Tab, base: str, typed: str) -> Scenario:
    steps = await acted(tab, f"{base}/prices", [
        ("double_click", "cell", "10.00", {}),
        ("fill", "textbox", "Price of Item 1", {"value": typed}),
        ("press", "textbox", "Price of Item 1", {"key": "Enter"}),
    ])  # fmt: skip
    return Scenario("Reprice item 1", steps, base_url=base + "/")


async def rename(tab: Tab, base: str, typed: str) -> Scenario:
    steps = await acted(tab, f"{base}/teams", [
        ("click", "button", "Rename Alpha", {}),
        ("fill", "textbox", "Name of Alpha", {"value": typed, "submit": True}),
    ])  # fmt: skip
    return Scenario("Rename Alpha", steps, base_url=base + "/")


@pytest.mark.parametrize(
    ("edit", "mode", "drawn_anew"),
    [("price", "silent", False), ("price", "said", True), ("name", "said", False)],
    ids=["cell, refused silently", "cell drawn anew, refused saying why", "line, refused"],
)
async def test_an_edit_put_back_where_its_editor_stood_fails_replay_and_export(
    tab: Tab, back: tuple[Back, str], tmp_path: Path, edit: str, mode: str, drawn_anew: bool
) -> None:
    state, base = back
    state.drawn_anew = drawn_anew
    scenario = await (price_edit(tab, base, "12.50") if edit == "price"
                      else rename(tab, base, "Alpha Two"))  # fmt: skip
    item, before, typed = ("Item 1", "10.00", "12.50") if edit == "price" else (
        "Alpha", "Alpha", "Alpha Two")  # fmt: skip
    assert state.values[item] == typed
    code = to_pytest(scenario)

    state.reset(mode)
    result = await Replay(tab, scenario).run()
    assert not result.ok and state.values[item] == before, result.to_dict()
    failed = result.steps[-2 if edit == "price" else -1]
    assert failed.error is not None, result.to_dict()
    said = failed.error["message"]
    assert f"where it stood shows {before!r} again, not {typed!r}: the app put it back" in said
    assert ("saying 'Above the list price'" in said) == (mode == "said"), said
    status, out = await run_exported(code, tmp_path, base)
    assert status == 1 and "the app put it back" in out, out
    assert state.values[item] == before


@pytest.mark.parametrize("edit", ["price", "name"])
async def test_an_edit_kept_or_shown_the_app_s_own_way_passes_replay_and_export(
    tab: Tab, back: tuple[Back, str], tmp_path: Path, edit: str
) -> None:
    state, base = back
    if edit == "price":  # typed "12.5", shown as the app writes prices
        state.mode = "own"
        scenario, item, shown = await price_edit(tab, base, "12.5"), "Item 1", "12.50"
    else:
        scenario, item, shown = await rename(tab, base, "Alpha Two"), "Alpha", "Alpha Two"
    assert state.values[item] == shown

    state.reset("own" if edit == "price" else "ok")
    result = await Replay(tab, scenario).run()
    assert result.ok and state.values[item] == shown, result.to_dict()
    state.reset("own" if edit == "price" else "ok")
    status, out = await run_exported(to_pytest(scenario), tmp_path, base)
    assert status == 0 and state.values[item] == shown, out
