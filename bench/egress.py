"""What the egress proxy costs: page loads and fetches through it against a Chromium
launched the plain Playwright way (no proxy), in the same run.

The page pulls 20 images, 5 scripts and 5 style sheets, each with a fresh query so the
browser cache never answers; then 50 fetches one after another, each timed in the page.
Loads and fetch series alternate between the two browsers.  The pages come from a server
in a process of its own that keeps connections alive, as a web server does: the proxy
shares no interpreter with it, and its upstream connections are reused.

    .venv/bin/python -m bench.egress

Last line:
    RESULT egress load_ratio=<p50 ours / p50 raw> fetch_ratio=<p50 ours / p50 raw>
                  load_p50_ms=… fetch_p50_ms=…   (ours)
                  cpu_us_per_request=…   (one line)

``cpu_us_per_request`` is this process's CPU time during our browser's loads and fetches
(the proxy, and Playwright's handling of the page's events), per request: unlike the
ratios, it hardly moves with what else the machine is busy with.

Lines before it take the price apart, against the raw one: the same loads and fetches in
a third Chromium, launched the plain way behind the session's proxy (no tab of ours: no
listeners, no URL guard): what the proxy alone costs; and in a fourth, no proxy, with the
URL guard's interception on (``Fetch.enable`` for documents, each paused one let go at
once): what Chromium's interception alone costs every request, subresources included.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from playwright.async_api import Browser, Page, async_playwright

from automation import BrowserSession
from automation.browser.config import QUIET_CHROMIUM_ARGS
from automation.browser.launch import proxy_args
from automation.browser.url_guard import DOCUMENTS
from bench.common import browser_config, median, serve_apart

LOADS = 30
FETCHES = 50
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8"/></svg>'
PAGE = """<!doctype html><title>Assets</title><script>
const v = new URLSearchParams(location.search).get("v");
for (let i = 0; i < 20; i++) document.write(`<img src="/dot.svg?v=${v}-${i}">`);
for (let i = 0; i < 5; i++) document.write(`<script src="/noop.js?v=${v}-${i}"><\\/script>`);
for (let i = 0; i < 5; i++) document.write(`<link rel=stylesheet href="/plain.css?v=${v}-${i}">`);
</script><h1>Assets</h1>"""
FETCH_SERIES = """async (n) => {
  const took = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await (await fetch(`/data.json?i=${i}-${Math.random()}`)).json();
    took.push(performance.now() - started);
  }
  return took;
}"""
PAGES = {
    "/assets.html": PAGE,
    "/dot.svg": SVG,
    "/noop.js": "window.noop = (window.noop || 0) + 1;",
    "/plain.css": "h1 { color: #222; }",
    "/data.json": '{"ok": true}',
}


CPU_S = [0.0]  # this process's CPU seconds in our browser's loads and fetches


async def load_ms(page: Page, url: str) -> float:
    started = time.perf_counter()
    await page.goto(url, wait_until="load")
    return (time.perf_counter() - started) * 1000


async def ours_load_ms(page: Page, url: str) -> float:
    """A load in our browser, its CPU time counted (the proxy's, and its events')."""
    cpu = time.process_time()
    took = await load_ms(page, url)
    CPU_S[0] += time.process_time() - cpu
    return took


async def ours_fetches(page: Page) -> list[float]:
    cpu = time.process_time()
    took = await page.evaluate(FETCH_SERIES, FETCHES)
    CPU_S[0] += time.process_time() - cpu
    return took


async def intercept_documents(browser: Browser) -> None:
    """Chromium pauses each document request of ``browser`` as the URL guard has it do,
    and each is let go at once: the interception's cost, no judgement's."""
    session = await browser.new_browser_cdp_session()

    sent: set[asyncio.Future[Any]] = set()

    def go_on(event: dict[str, Any]) -> None:
        going = asyncio.ensure_future(
            session.send("Fetch.continueRequest", {"requestId": event["requestId"]})
        )
        sent.add(going)
        going.add_done_callback(sent.discard)

    session.on("Fetch.requestPaused", go_on)
    await session.send("Fetch.enable", {"patterns": DOCUMENTS})


async def main() -> None:
    with serve_apart(PAGES) as base:
        config = browser_config()
        async with BrowserSession(config) as session, async_playwright() as pw:
            assert session.egress is not None, "the session launched no egress proxy"
            ours = (await session.new_tab()).page
            plain = await pw.chromium.launch(
                executable_path=config.executable_path, args=list(QUIET_CHROMIUM_ARGS)
            )
            raw = await (await plain.new_context()).new_page()
            behind = await pw.chromium.launch(
                executable_path=config.executable_path,
                args=[*QUIET_CHROMIUM_ARGS, *proxy_args(session.egress.url)],
            )
            proxied = await (await behind.new_context()).new_page()
            guarded_browser = await pw.chromium.launch(
                executable_path=config.executable_path, args=list(QUIET_CHROMIUM_ARGS)
            )
            guarded = await (await guarded_browser.new_context()).new_page()
            await intercept_documents(guarded_browser)
            ours_load, raw_load, ours_fetch, raw_fetch = [], [], [], []
            proxied_load, proxied_fetch, guarded_load, guarded_fetch = [], [], [], []
            for i in range(-3, LOADS):  # three rounds to warm up, not counted
                took = (
                    await ours_load_ms(ours, f"{base}/assets.html?v=o{i}"),
                    await load_ms(raw, f"{base}/assets.html?v=r{i}"),
                    await load_ms(proxied, f"{base}/assets.html?v=p{i}"),
                    await load_ms(guarded, f"{base}/assets.html?v=g{i}"),
                )
                if i >= 0:
                    ours_load.append(took[0])
                    raw_load.append(took[1])
                    proxied_load.append(took[2])
                    guarded_load.append(took[3])
            for _ in range(3):
                ours_fetch += await ours_fetches(ours)
                raw_fetch += await raw.evaluate(FETCH_SERIES, FETCHES)
                proxied_fetch += await proxied.evaluate(FETCH_SERIES, FETCHES)
                guarded_fetch += await guarded.evaluate(FETCH_SERIES, FETCHES)
            await plain.close()
            await behind.close()
            await guarded_browser.close()
            opened = session.egress.opened
    requests = (LOADS + 3) * 31 + 3 * FETCHES
    print(f"upstream connections the proxy opened: {opened} for {2 * requests} requests")
    print(
        f"the proxy alone (a plain Chromium behind it): "
        f"load_ratio={median(proxied_load) / median(raw_load):.2f} "
        f"fetch_ratio={median(proxied_fetch) / median(raw_fetch):.2f}"
    )
    print(
        f"the URL guard's interception alone (a plain Chromium, Fetch on for documents): "
        f"load_ratio={median(guarded_load) / median(raw_load):.2f} "
        f"fetch_ratio={median(guarded_fetch) / median(raw_fetch):.2f}"
    )
    print(
        f"loads={LOADS} (20 images, 5 scripts, 5 style sheets each) fetches={3 * FETCHES}\n"
        f"load p50: ours {median(ours_load):.1f} ms, raw {median(raw_load):.1f} ms\n"
        f"fetch p50: ours {median(ours_fetch):.2f} ms, raw {median(raw_fetch):.2f} ms"
    )
    print(
        f"RESULT egress load_ratio={median(ours_load) / median(raw_load):.2f} "
        f"fetch_ratio={median(ours_fetch) / median(raw_fetch):.2f} "
        f"load_p50_ms={median(ours_load):.1f} fetch_p50_ms={median(ours_fetch):.2f} "
        f"cpu_us_per_request={CPU_S[0] / requests * 1e6:.0f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
