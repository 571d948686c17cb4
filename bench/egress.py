"""What the egress proxy costs: page loads and fetches through it against a Chromium
launched the plain Playwright way (no proxy), in the same run.

The page pulls 20 images, 5 scripts and 5 style sheets, each with a fresh query so the
browser cache never answers; a fetch series asks for a small JSON body 10 times, one
after another, each timed in the page.  The pages come from a server in a process of its
own that keeps connections alive, as a web server does: the proxy shares no interpreter
with it, and its upstream connections are reused.

On a 2-core machine that other work shares, one load takes 1.5 times as long as the next
for no reason of ours, and the machine's load drifts within seconds; the pooled medians of
a few long series moved the ratios by 0.3 from one run to the next.  So the measure is
taken in short rounds, paired: each round loads the page twice in every browser, in a
mirrored order (A B C D D C B A, the first browser turning round by round), so that
whatever the machine did during a round weighs on each browser alike, and then runs two
fetch series in each, in the same order.  A round's ratio is ours over raw within that
round (two loads, twenty fetches each); the result is the median of the rounds' ratios,
printed with their quartiles (the spread from round to round), after warm-up rounds that
are not counted.

    .venv/bin/python -m bench.egress [--rounds N]

Last line:
    RESULT egress load_ratio=<median of rounds' ours/raw> fetch_ratio=<the same, fetches>
                  load_p50_ms=… fetch_p50_ms=…   (ours)
                  cpu_us_per_request=… load_q1_q3=…-… fetch_q1_q3=…-…   (one line)

``cpu_us_per_request`` is this process's CPU time during our browser's loads and fetches
(the proxy, and Playwright's handling of the page's events), per request: unlike the
ratios, it hardly moves with what else the machine is busy with.

Lines before it take the price apart, against the raw one, rounds' medians alike: the same
loads and fetches in a third Chromium, launched the plain way behind the session's proxy
(no tab of ours: no listeners): what the proxy alone costs; and in a fourth, no proxy,
with the URL guard's interception on (``Fetch.enable`` for documents, each paused one let
go at once): what Chromium's interception alone costs every request, subresources
included (a session's launched browser has no URL guard; a browser it reaches by CDP URL
does).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Browser, Page, async_playwright

from automation import BrowserSession
from automation.browser.config import QUIET_CHROMIUM_ARGS
from automation.browser.launch import proxy_args
from automation.browser.url_guard import DOCUMENTS
from bench.common import browser_config, median, serve_apart

ROUNDS = 24  # counted, each: every browser loads twice and runs two fetch series
WARM_UP_ROUNDS = 2
FETCHES = 10  # one series
LOAD_REQUESTS = 31  # the page and its 30 subresources
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


async def plain_fetches(page: Page) -> list[float]:
    took: list[float] = await page.evaluate(FETCH_SERIES, FETCHES)
    return took


async def ours_fetches(page: Page) -> list[float]:
    cpu = time.process_time()
    took = await plain_fetches(page)
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


@dataclass
class Timings:
    """One browser's loads and fetch series, round by round."""

    page: Page
    name: str
    loads: list[list[float]] = field(default_factory=list)
    fetches: list[list[float]] = field(default_factory=list)


def round_order(timings: list[Timings], turn: int) -> list[Timings]:
    """Every browser twice, mirrored (A B C D D C B A), starting with the ``turn``-th."""
    shift = turn % len(timings)
    first = timings[shift:] + timings[:shift]
    return first + first[::-1]


async def one_round(timings: list[Timings], ours: Timings, turn: int, base: str) -> None:
    order = round_order(timings, turn)
    loads: dict[str, list[float]] = {t.name: [] for t in timings}
    fetches: dict[str, list[float]] = {t.name: [] for t in timings}
    for seen, t in enumerate(order):
        url = f"{base}/assets.html?v={t.name}{turn}-{seen}"
        timed = ours_load_ms if t is ours else load_ms
        loads[t.name].append(await timed(t.page, url))
    for t in order:
        timed_series = ours_fetches if t is ours else plain_fetches
        fetches[t.name] += await timed_series(t.page)
    for t in timings:
        t.loads.append(loads[t.name])
        t.fetches.append(fetches[t.name])


def ratios(ours: list[list[float]], raw: list[list[float]]) -> list[float]:
    """Round by round, the median of ours over the median of raw in that round."""
    return [median(o) / median(r) for o, r in zip(ours, raw, strict=True)]


def spread(values: list[float]) -> str:
    """The median of ``values`` and its quartiles, as ``median (q1-q3)``."""
    q1, _, q3 = statistics.quantiles(values, n=4)
    return f"{median(values):.2f} ({q1:.2f}-{q3:.2f})"


async def main(rounds: int) -> None:
    load_before = os.getloadavg()[0]
    with serve_apart(PAGES) as base:
        config = browser_config()
        async with BrowserSession(config) as session, async_playwright() as pw:
            assert session.egress is not None, "the session launched no egress proxy"
            ours = Timings((await session.new_tab()).page, "o")
            plain = await pw.chromium.launch(
                executable_path=config.executable_path, args=list(QUIET_CHROMIUM_ARGS)
            )
            raw = Timings(await (await plain.new_context()).new_page(), "r")
            behind = await pw.chromium.launch(
                executable_path=config.executable_path,
                args=[*QUIET_CHROMIUM_ARGS, *proxy_args(session.egress.url)],
            )
            proxied = Timings(await (await behind.new_context()).new_page(), "p")
            guarded_browser = await pw.chromium.launch(
                executable_path=config.executable_path, args=list(QUIET_CHROMIUM_ARGS)
            )
            guarded = Timings(await (await guarded_browser.new_context()).new_page(), "g")
            await intercept_documents(guarded_browser)
            timings = [ours, raw, proxied, guarded]
            for turn in range(WARM_UP_ROUNDS):
                await one_round(timings, ours, turn, base)
            for t in timings:
                t.loads.clear()
                t.fetches.clear()
            CPU_S[0] = 0.0
            for turn in range(rounds):
                await one_round(timings, ours, turn, base)
            await plain.close()
            await behind.close()
            await guarded_browser.close()
            opened = session.egress.opened
    per_round = 2 * (LOAD_REQUESTS + FETCHES)
    requests = rounds * per_round
    load_after = os.getloadavg()[0]
    print(
        f"upstream connections the proxy opened: {opened} for "
        f"{2 * (rounds + WARM_UP_ROUNDS) * per_round} requests"
    )
    for name, t in (("the proxy alone (a plain Chromium behind it)", proxied),
                    ("the URL guard's interception alone (a plain Chromium, Fetch on "
                     "for documents)", guarded)):  # fmt: skip
        print(
            f"{name}: load_ratio={spread(ratios(t.loads, raw.loads))} "
            f"fetch_ratio={spread(ratios(t.fetches, raw.fetches))}"
        )
    load_ratios = ratios(ours.loads, raw.loads)
    fetch_ratios = ratios(ours.fetches, raw.fetches)
    ours_load = [ms for r in ours.loads for ms in r]
    raw_load = [ms for r in raw.loads for ms in r]
    ours_fetch = [ms for r in ours.fetches for ms in r]
    raw_fetch = [ms for r in raw.fetches for ms in r]
    print(
        f"rounds={rounds} after {WARM_UP_ROUNDS} not counted, each: 2 loads (20 images, 5 "
        f"scripts, 5 style sheets) and {2 * FETCHES} fetches per browser; machine load "
        f"{load_before:.1f} before, {load_after:.1f} after\n"
        f"load p50: ours {median(ours_load):.1f} ms, raw {median(raw_load):.1f} ms "
        f"(ratio of the pooled medians {median(ours_load) / median(raw_load):.2f})\n"
        f"fetch p50: ours {median(ours_fetch):.2f} ms, raw {median(raw_fetch):.2f} ms "
        f"(ratio of the pooled medians {median(ours_fetch) / median(raw_fetch):.2f})\n"
        f"rounds' ratios, median (q1-q3): load {spread(load_ratios)}, "
        f"fetch {spread(fetch_ratios)}"
    )
    q_load = statistics.quantiles(load_ratios, n=4)
    q_fetch = statistics.quantiles(fetch_ratios, n=4)
    print(
        f"RESULT egress load_ratio={median(load_ratios):.2f} "
        f"fetch_ratio={median(fetch_ratios):.2f} "
        f"load_p50_ms={median(ours_load):.1f} fetch_p50_ms={median(ours_fetch):.2f} "
        f"cpu_us_per_request={CPU_S[0] / requests * 1e6:.0f} "
        f"load_q1_q3={q_load[0]:.2f}-{q_load[2]:.2f} "
        f"fetch_q1_q3={q_fetch[0]:.2f}-{q_fetch[2]:.2f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds counted")
    asyncio.run(main(parser.parse_args().rounds))
