"""What settling after an action costs, against a fixed pause after every action.

One page, two buttons: one sets nothing off, one fetches an answer the server gives after
300 ms and writes it into the page.  Each is clicked by ref, interleaved in one tab, three
ways: settling (ours), not settling at all (the bare click), and not settling but pausing
a fixed 500 ms after the click (the reference: what Playwright MCP does).  Every fetch
click checks that the answer is on the page when the action returns.  Then the page is
navigated to again and again, settling and bare (the load waited for, then nothing).

    .venv/bin/python -m bench.settle

Last line:
    RESULT settle idle_ms_p50=… fetch_ms_p50=… idle_over_fixed=<p50 ours / p50 fixed>
      fetch_over_fixed=… idle_overhead_ms=<p50 ours - p50 bare> fetch_overhead_ms=<… - 300>
      navigate_ms_p50=… navigate_overhead_ms=<p50 ours - p50 bare>
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler

from automation import BrowserSession, Tab
from bench.common import browser_config, median, p95
from tests.net import loopback_app

ROUNDS = 30
FETCH_MS = 300
FIXED_MS = 500
PAGE = """<!doctype html><title>Settle</title>
<main><h1>Settle</h1>
<button id="idle" onclick="window.clicks = (window.clicks || 0) + 1">Nothing</button>
<button id="fetch" onclick="load()">Fetch</button>
<p id="status">Idle</p></main>
<script>
  let round = 0;
  async function load() {
    round += 1;
    document.getElementById("status").textContent = "Loading";
    const answer = await fetch("/api/slow?round=" + round);
    document.getElementById("status").textContent = `Answer #${(await answer.json()).round}.`;
  }
</script>"""


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/api/slow"):
            time.sleep(FETCH_MS / 1000)
            body = json.dumps({"round": self.path.rsplit("=", 1)[-1]}).encode()
            kind = "application/json"
        else:
            body, kind = PAGE.encode(), "text/html; charset=utf-8"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def serve() -> Iterator[str]:
    with loopback_app(_Handler) as url:
        yield url + "/"


async def timed_click(tab: Tab, ref: str, how: str) -> float:
    """One click, the way ``how`` says; the ms until the next snapshot could be taken."""
    tab.settler.enabled = how == "ours"
    started = time.perf_counter()
    await tab.click(ref)
    if how == "fixed":
        await asyncio.sleep(FIXED_MS / 1000)
    return (time.perf_counter() - started) * 1000


async def timed_navigate(tab: Tab, url: str, how: str) -> float:
    tab.settler.enabled = how == "ours"
    started = time.perf_counter()
    await tab.navigate(url)
    return (time.perf_counter() - started) * 1000


async def answered(tab: Tab, fetches: int) -> bool:
    return await tab.page.text_content("#status") == f"Answer #{fetches}."


async def main() -> None:
    ways = ("ours", "bare", "fixed")
    idle: dict[str, list[float]] = {way: [] for way in ways}
    fetch: dict[str, list[float]] = {way: [] for way in ways}
    shown = {way: 0 for way in ways}
    with serve() as url:
        async with BrowserSession(browser_config()) as browser:
            tab = await browser.new_tab()
            await tab.navigate(url)
            snap = await tab.snapshot()
            refs = {entry.name: entry.ref for entry in snap.refs.values()}
            for _ in range(5):  # warm up every path
                for way in ways:
                    await timed_click(tab, refs["Nothing"], way)
            fetches = 0
            for _ in range(ROUNDS):
                for way in ways:
                    idle[way].append(await timed_click(tab, refs["Nothing"], way))
                    fetch[way].append(await timed_click(tab, refs["Fetch"], way))
                    fetches += 1
                    shown[way] += await answered(tab, fetches)
                    tab.settler.enabled = True
                    # The next click starts on a quiet page: this answer drawn.
                    await tab.wait_for(text=f"Answer #{fetches}.")
            clicks = await tab.page.evaluate("window.clicks")
            assert clicks == (ROUNDS + 5) * len(ways), clicks
            navigate: dict[str, list[float]] = {way: [] for way in ("ours", "bare")}
            for n in range(ROUNDS + 3):
                for way in navigate:
                    took = await timed_navigate(tab, f"{url}?visit={n}", way)
                    if n >= 3:
                        navigate[way].append(took)
            tab.settler.enabled = True
    for way in ways:
        print(
            f"{way:5}: idle p50 {median(idle[way]):7.1f} ms p95 {p95(idle[way]):7.1f} ms | "
            f"fetch p50 {median(fetch[way]):7.1f} ms p95 {p95(fetch[way]):7.1f} ms, "
            f"answer shown {shown[way]}/{ROUNDS}"
        )
    print(
        f"navigate: ours p50 {median(navigate['ours']):.1f} ms, "
        f"bare p50 {median(navigate['bare']):.1f} ms"
    )
    assert shown["ours"] == ROUNDS, "a settled fetch click returned before its answer"
    ours_idle, ours_fetch = median(idle["ours"]), median(fetch["ours"])
    print(
        f"RESULT settle idle_ms_p50={ours_idle:.1f} fetch_ms_p50={ours_fetch:.1f} "
        f"idle_over_fixed={ours_idle / median(idle['fixed']):.3f} "
        f"fetch_over_fixed={ours_fetch / median(fetch['fixed']):.3f} "
        f"idle_overhead_ms={ours_idle - median(idle['bare']):.1f} "
        f"fetch_overhead_ms={ours_fetch - FETCH_MS:.1f} "
        f"navigate_ms_p50={median(navigate['ours']):.1f} "
        f"navigate_overhead_ms={median(navigate['ours']) - median(navigate['bare']):.1f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
