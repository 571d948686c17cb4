"""A value an app saves as it is typed, its save refused with a status saying so, fails its
fill, in replay and in the pytest export.

A product's description is saved a moment after it is typed (a debounced ``fetch``); the
status beside it (``role=status``) says "Saving…", then "Saved", or, the save refused
(answered 200, ``{"ok": false}``: the status says nothing), "Failed to save", the text kept
as typed.  Nothing was saved and no step clicked a Save button: the fill passed.  Now a
fill that sent a write is judged by the errors the page shows after it, as a click is, and
a status counts as one where its few words say it refused; "Saved" and "Saving…" do not."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from automation import Tab
from automation.browser.seen import errors_shown
from automation.recording.export import to_pytest
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario
from tests.bounds import room
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import acted

PAGE = """<!doctype html><title>Mug</title><h1>Stoneware mug</h1>
<label>Description <textarea id=text>{text}</textarea></label>
<span role=status id=state></span>
<script>
let timer;
text.addEventListener("input", () => {
  clearTimeout(timer);
  state.textContent = "Saving…";
  timer = setTimeout(async () => {
    const answer = await (await fetch("/save", {method: "POST", body: text.value})).json();
    state.textContent = answer.ok ? "Saved" : "Failed to save";
  }, 200);
});
</script>"""


@dataclass
class Product:
    text: str = "A sturdy mug."
    refuse: bool = False


@pytest.fixture
def product() -> Iterator[tuple[Product, str]]:
    state = Product()

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self.send(200, PAGE.replace("{text}", state.text).encode())

        def do_POST(self) -> None:
            text = self.rfile.read(int(self.headers["Content-Length"])).decode()
            if not state.refuse:
                state.text = text
            answer = {"ok": not state.refuse}
            self.send(200, json.dumps(answer).encode(), Content_Type="application/json")

    with loopback_app(Handler) as url:
        yield state, url


TYPED = "A sturdy stoneware mug, 350 ml."


async def test_a_typed_value_whose_autosave_is_refused_fails_replay_and_export(
    tab: Tab, product: tuple[Product, str], tmp_path: Path
) -> None:
    state, base = product
    steps = await acted(tab, f"{base}/mug", [("fill", "textbox", "Description", {"value": TYPED})])
    await tab.page.get_by_text("Saved", exact=True).wait_for()
    assert state.text == TYPED
    scenario = Scenario("Describe the mug", steps, base_url=base + "/")
    code = to_pytest(scenario)

    state.text, state.refuse = "A sturdy mug.", True
    result = await Replay(tab, scenario).run()
    assert not result.ok and state.text == "A sturdy mug.", result.to_dict()
    failed = result.steps[1]
    assert failed.error is not None and "saying 'Failed to save'" in failed.error["message"]
    status, out = await run_exported(code, tmp_path / "refused", base)
    assert status == 1 and "'Failed to save'" in out and state.text == "A sturdy mug.", out

    state.refuse = False
    result = await Replay(tab, scenario).run()
    assert result.ok and state.text == TYPED, result.to_dict()
    state.text = "A sturdy mug."
    status, out = await run_exported(code, tmp_path / "kept", base)
    assert status == 0 and state.text == TYPED, out


async def test_a_status_is_an_error_where_its_few_words_say_it_refused(module_tab: Tab) -> None:
    await module_tab.page.set_content(
        "<span role=status>Failed to save</span><span role=status>Saved</span>"
        "<span role=status>Saving…</span><output>3 results</output>"
        "<span role=status>Couldn't save your note</span>"
        f"<div role=status>{'A log line that failed. ' * 20}</div>"
    )
    for named in (True, False):
        shown = await errors_shown(module_tab, room(), named=named)
        assert shown == ["Failed to save", "Couldn't save your note"], shown
