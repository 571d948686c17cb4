"""A name with a glyph drawn in it ("☆ Star", drawn "★ Star" once pressed) is found by its
words in the export, as replay reads a name.

A person pressed "☆ Star" on a project; the app drew the star filled.  Replay read the
name by its words, the same; the export looked for "☆ Star" exactly to read the box again
at the end, and failed on the day it was recorded, the star saved."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from automation import Tab
from automation.browser.textmatch import named
from automation.recording.recorder import Recorder
from automation.recording.scenario import Scenario
from tests.automation.recording.test_recorder import click_center
from tests.exported import both_pass
from tests.net import QuietHandler, loopback_app

PAGE = """<!doctype html><title>Apollo</title><h1>Project Apollo</h1>
<button id=star aria-pressed=false>☆ Star</button><p role=status id=said></p>
<script>
star.onclick = async () => {
  const on = star.getAttribute("aria-pressed") !== "true";
  star.setAttribute("aria-pressed", String(on));
  star.textContent = on ? "★ Star" : "☆ Star";
  await fetch("/star", { method: "POST", body: JSON.stringify(on) });
  said.textContent = "Saved";
};
</script>"""


@pytest.fixture
def app() -> Iterator[tuple[list, str]]:
    saved: list = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self.send(200, PAGE.encode())

        def do_POST(self) -> None:
            saved.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send(200, b'{"ok": true}', Content_Type="application/json")

    with loopback_app(Handler) as url:
        yield saved, url


def test_a_glyph_in_a_name_is_any_glyph_or_none() -> None:
    star = named("☆ Star")
    assert not isinstance(star, str)
    assert [bool(star.match(t)) for t in ("☆ Star", "★ Star", "Star", "Stars", "Un Star")] == [
        True, True, True, False, False,
    ]  # fmt: skip
    assert named("Star") == "Star"  # (no glyph: the text itself)


async def test_a_star_pressed_is_read_again_by_its_words(
    tab: Tab, app: tuple[list, str], tmp_path: Path
) -> None:
    saved, base = app
    await tab.navigate(f"{base}/apollo")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "#star")
    await tab.page.wait_for_function("said.textContent === 'Saved'")
    scenario = Scenario("Star Apollo", tuple(await recorder.stop()), base_url=f"{base}/")
    assert saved == [True]
    await both_pass(tab, scenario, tmp_path, base, saved)
