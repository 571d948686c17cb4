"""A page read over the HTTP act API against Playwright MCP's snapshot over stdio: what one
request costs a client that drives a run from outside, fixed cost included.

Ours: a dashboard as it runs for real (daphne, its embedded worker, the rule planner), a
run paused on the page, ``POST /runs/<id>/act {"action": "read_page"}`` as a logged-in
client sends it (bench.macro's client), each answer read before the next is sent.
Playwright MCP (``@playwright/mcp``, bench.mcpclient): ``browser_snapshot`` of the same page
over stdio through the MCP SDK's client.  Two pages: a form of three lines, where the fixed
cost of a request is most of it, and a list of 30 orders (bench.macro's page).  TRIALS
calls each after three to warm up; medians.

    .venv/bin/python -m bench.actsnap [--trials 40]

Goal: small_ratio <= 1 (a small page's read answers at least as fast as Playwright MCP's).

Last line (ours over Playwright MCP's, medians):
    RESULT actsnap small_ratio=… orders_ratio=… small_ms=… orders_ms=…
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

from bench.common import median, serve
from bench.macro import USER, ActClient, _page, act_settings, wait_until_paused
from bench.mcpclient import open_driver
from tests.daphne import daphne

SMALL = """<!doctype html><title>Sign in</title><h1>Sign in</h1>
<label>Email <input type="email"></label> <button type="button">Go</button>"""
PAGES = {"small": SMALL, "orders": _page()}


def ours(client: ActClient, url: str, trials: int) -> float:
    """The median of ``trials`` reads of ``url`` through the act API, in ms."""
    run_id = client.start_paused_run(url)
    wait_until_paused(client, run_id)
    took = []
    for trial in range(trials + 3):
        started = time.perf_counter()
        status, answer, _ = client.act(run_id, {"action": "read_page"})
        if trial >= 3:
            took.append((time.perf_counter() - started) * 1000)
        assert status == 200 and answer["ok"], (status, answer)
    return median(took)


async def playwright_mcp(urls: dict[str, str], trials: int) -> dict[str, float]:
    """The median of ``trials`` snapshots of each page over Playwright MCP, in ms."""
    found = {}
    async with open_driver("playwright") as driver:
        for name, url in urls.items():
            await driver.navigate(url)
            took = []
            for trial in range(trials + 3):
                answer = await driver.snapshot()
                assert not answer.is_error, answer.text
                if trial >= 3:
                    took.append(answer.ms)
            found[name] = median(took)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=40)
    options = parser.parse_args()
    paths = {name: f"/bench/{name}.html" for name in PAGES}
    with (
        serve({paths[name]: html for name, html in PAGES.items()}) as base,
        tempfile.TemporaryDirectory() as var,
        daphne(Path(var), USER, act_settings()) as (dashboard, _log),
    ):
        urls = {name: base + path for name, path in paths.items()}
        client = ActClient(dashboard)
        tabwright = {name: ours(client, url, options.trials) for name, url in urls.items()}
        playwright = asyncio.run(playwright_mcp(urls, options.trials))
    for name in PAGES:
        print(f"{name:7} act read_page p50 {tabwright[name]:.1f} ms, "
              f"Playwright MCP snapshot p50 {playwright[name]:.1f} ms")  # fmt: skip
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    print(
        f"RESULT actsnap small_ratio={tabwright['small'] / playwright['small']:.2f} "
        f"orders_ratio={tabwright['orders'] / playwright['orders']:.2f} "
        f"small_ms={tabwright['small']:.1f} orders_ms={tabwright['orders']:.1f}"
    )


if __name__ == "__main__":
    main()
