"""Click by ref against a plain Playwright ``locator.click()`` on the same element.

200 clicks each, interleaved in one tab, on a button that counts its clicks.  Ours
resolves the ref fail-closed (role and name re-checked in the page) before clicking.

    .venv/bin/python -m bench.actions

Last line:
    RESULT actions click_ratio=<p50 ours / p50 raw> p50_ms=… p95_ms=…   (ours)
"""

from __future__ import annotations

import asyncio
import time

from automation import BrowserSession
from bench.common import browser_config, median, p95, serve

CLICKS = 200
PAGE = """<!doctype html><title>Clicks</title>
<main><h1>Clicks</h1><p>Some text around the button.</p>
<button id="hit" onclick="window.clicks = (window.clicks || 0) + 1">Press me</button></main>"""


async def main() -> None:
    with serve({"/clicks.html": PAGE}) as base:
        async with BrowserSession(browser_config()) as browser:
            tab = await browser.new_tab()
            await tab.navigate(f"{base}/clicks.html")
            snap = await tab.snapshot()
            ref = next(r.ref for r in snap.refs.values() if r.name == "Press me")
            raw = tab.page.locator("#hit")
            for _ in range(10):  # warm both paths up
                await tab.click(ref)
                await raw.click()
            ours_ms, raw_ms = [], []
            for _ in range(CLICKS):
                started = time.perf_counter()
                await tab.click(ref)
                ours_ms.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                await raw.click()
                raw_ms.append((time.perf_counter() - started) * 1000)
            clicks = await tab.page.evaluate("window.clicks")
            assert clicks == 2 * (CLICKS + 10), clicks
    print(f"ours: p50 {median(ours_ms):.2f} ms, p95 {p95(ours_ms):.2f} ms")
    print(f"raw:  p50 {median(raw_ms):.2f} ms, p95 {p95(raw_ms):.2f} ms")
    print(
        f"RESULT actions click_ratio={median(ours_ms) / median(raw_ms):.2f} "
        f"p50_ms={median(ours_ms):.2f} p95_ms={p95(ours_ms):.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
