"""A page still being parsed when a replay step finds its element or reads the page for a
check: judged once it is parsed, as a person would see it, not half-read (what lies over
the element, what the page's own scripts change as it loads)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from automation.browser.tab import Tab
from automation.events import ListSink
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from tests.automation.recording.test_handlers import notes
from tests.backoffice import COOKIES

# A page whose end comes PARSE_HOLD_S after its start: parsed so far, its link shows with
# the cookie wall beneath a splash; the script at its end takes the splash away.
PARSE_HOLD_S = 3.0
START = """<!doctype html><title>Start</title><p>Starting…</p>
<script>setTimeout(() => { location.href = "/next"; }, 1500);</script>"""
NEXT_START = """<!doctype html><title>Next</title><a href="/done">Finish</a><p id="said">Saved</p>
<section id="consent" aria-label="Cookie consent"
  style="position:fixed;inset:0;background:rgba(0,0,0,.25);z-index:10">
  <button type="button" onclick="this.parentElement.remove()">Accept all</button></section>
<div id="splash" role="dialog" aria-label="Loading"
  style="position:fixed;inset:0;background:#fff;z-index:20">Loading…</div>
"""
NEXT_END = """<script>document.getElementById("splash").remove();
document.getElementById("said").textContent = "Could not save";</script>"""


@pytest.fixture
def slow_parse() -> Iterator[str]:
    """A site whose start page goes to /next by itself; /next comes in two parts."""

    class Site(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            parts = {"/": [START], "/next": [NEXT_START, NEXT_END]}.get(self.path, ["Done"])
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            for index, part in enumerate(parts):
                if index:
                    time.sleep(PARSE_HOLD_S)  # the app's pace: its page's end comes later
                self.wfile.write(part.encode())
                self.wfile.flush()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def replay(tab: Tab, url: str, sink: ListSink, *steps: dict[str, Any]) -> Any:
    """Replays ``steps`` after opening the start page (which goes to /next by itself),
    with the cookie wall's handler."""
    scenario = Scenario.from_dict({
        "format": "tabwright.scenario", "version": 1, "name": "Next", "base_url": url,
        "handlers": [COOKIES],
        "steps": [{"action": "navigate", "args": {"url": f"{url}/"}}, *steps],
    })  # fmt: skip
    config = ReplayConfig(locate_wait_ms=30_000, step_timeout_ms=60_000, check_timeout_ms=8_000)
    return await Replay(tab, scenario, sink=sink, config=config).run()


async def test_a_step_found_in_a_document_still_parsed_is_judged_once_it_is(
    tab: Tab, slow_parse: str
) -> None:
    """The step's link is found while its page is still being parsed, under a splash the
    script at the page's end takes away: what covers it is judged once the page is parsed
    (the cookie wall, which its handler clears), not as it stood half-read (a splash over
    the cookie wall: no handler for it, a person asked for)."""
    link = {"role": "link", "name": "Finish", "tag": "a"}
    done = {"kind": "text_visible", "text": "Done"}
    sink = ListSink()
    result = await replay(tab, slow_parse, sink,
                          {"action": "click", "args": {}, "identity": link},
                          {"action": "expect", "args": done})  # fmt: skip
    assert result.ok, result.reason
    assert notes(sink) == ["handled 'Cookie consent' banner"]
    assert tab.url.endswith("/done")


async def test_a_check_that_holds_on_a_document_half_parsed_is_read_again_once_parsed(
    tab: Tab, slow_parse: str
) -> None:
    """ "Saved" shows while the page is still being parsed; the script at its end says it
    could not save: the check reads the page again once it is parsed, and fails."""
    sink = ListSink()
    result = await replay(tab, slow_parse, sink,
                          {"action": "expect", "args": {"kind": "text_visible",
                                                        "text": "Saved"}})  # fmt: skip
    assert result.status == "failed" and "Saved" in result.reason, result.reason
    assert "it is not shown" in result.reason
