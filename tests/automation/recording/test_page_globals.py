"""A page whose own script declares a ``CSS`` of its own (``const CSS = {...}``, a name
bundles give their styles) hides the browser's ``CSS.escape`` from every script run in
it, ours too: describing an element threw, the recorder dropped the person's tick
without a word, and the scenario replayed as passed having ticked nothing.  Elements are
described, recorded, found and replayed there as anywhere else, ids CSS must escape
too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest

from automation import Tab
from automation.browser.identity import locate
from automation.recording.export import to_pytest
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario
from tests.automation.recording.test_recorder import click_center
from tests.bounds import room
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import ref_of

# Ids a selector must escape: a digit first, a hyphen and a digit, a space, a colon, a
# dot, a quote, a non-Latin letter.
IDS = ["1st", "-2", "a b", "opt:3", "v.2", 'say"hi', "ü-x", "plain"]
PAGE = """<!doctype html><title>Rights</title>
<script>const CSS = {{ theme: "dark" }};</script>
<h1>Rights</h1>{boxes}
<script>
for (const b of document.querySelectorAll("input")) b.onchange = () =>
  fetch("/api/" + encodeURIComponent(b.id), {{method: "POST", body: String(b.checked)}});
</script>"""


@pytest.fixture
def app() -> Iterator[tuple[dict, str]]:
    ticked: dict[str, bool] = {}

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            boxes = "".join(
                f"<p><input type=checkbox id='{i}' {'checked' if ticked.get(i) else ''}>"
                f"<label for='{i}'>Right {n}</label></p>"
                for n, i in enumerate(IDS)
            )
            self.send(200, PAGE.format(boxes=boxes.replace('"', "&quot;")).encode())

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"])).decode()
            ticked[unquote(self.path.rsplit("/", 1)[-1])] = body == "true"
            self.send(204)

    with loopback_app(Handler) as url:
        yield ticked, url


async def test_each_element_is_described_and_found_where_the_page_hides_css(
    tab: Tab, app: tuple[dict, str]
) -> None:
    _, base = app
    await tab.navigate(f"{base}/rights")
    assert await tab.page.evaluate("typeof CSS.escape") == "undefined"  # (the page's CSS)
    for n, id_ in enumerate(IDS):
        target = await tab.target(ref_of(await tab.snapshot(), "checkbox", f"Right {n}"))
        identity = target.identity
        assert identity is not None and identity.id == id_, (id_, identity)
        found = await locate(tab.page, identity, budget=room())
        assert found.ok and found.element is not None, (id_, found.reason)
        assert await found.element.evaluate("(e) => e.id") == id_


async def test_a_tick_is_recorded_and_replayed_where_the_page_hides_css(
    tab: Tab, app: tuple[dict, str], tmp_path: Path
) -> None:
    ticked, base = app
    await tab.navigate(f"{base}/rights")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "label[for='a b']")
    await tab.page.wait_for_function("document.getElementById('a b').checked")
    steps = await recorder.stop()
    assert [s.action for s in steps] == ["navigate", "check"], steps
    scenario = Scenario("Grant right 2", tuple(steps), base_url=f"{base}/")
    ticked.clear()
    result = await Replay(tab, scenario).run()
    assert result.ok and ticked == {"a b": True}, (result.to_dict(), ticked)
    ticked.clear()
    status, out = await run_exported(to_pytest(scenario), tmp_path, base)
    assert status == 0 and ticked == {"a b": True}, (out, ticked)
