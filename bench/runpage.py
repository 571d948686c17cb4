"""What a person's browser spends opening the page of a long finished run, against the
dashboard's home page opened in the same browser: the CPU of the whole Chromium that
shows them (browser, renderer, GPU and network processes), a page load at a time.

A run of ``--steps`` steps (the rules planner typing into the demo form) is made on a
real daphne; then each page is opened ``--loads`` times, interleaved.

    .venv/bin/python -m bench.runpage [--steps 40] [--loads 4]

Last line:
    RESULT runpage run_over_home=<CPU of a run page load / a home page load>
      run_cpu_s=<CPU seconds a run page load> home_cpu_s=… steps=…
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import tempfile
from pathlib import Path

from playwright.async_api import Page, async_playwright, expect

from automation.browser.config import QUIET_CHROMIUM_ARGS
from bench.common import descendants, median, process_stats
from tests.e2e.ui import CHROMIUM, LIVE_MS, e2e_server, log_in, start_run

TICK = 1 / os.sysconf("SC_CLK_TCK")


class _Folders:
    """A stand-in for pytest's tmp_path_factory."""

    def mktemp(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=name))


def chromium_cpu_s() -> float:
    """CPU seconds of Playwright's driver and the Chromium it started (the servers'
    processes, daphne and its own Chromium, left out)."""
    stats = process_stats()
    pids: set[int] = set()
    for child in descendants(os.getpid(), stats, deep=False):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"node" in command:
            pids |= {child} | descendants(child, stats)
    return sum(sum(int(v) for v in stats[pid][11:15]) for pid in pids if pid in stats) * TICK


async def load_cpu_s(page: Page, url: str) -> float:
    await page.goto(url)
    await asyncio.sleep(0.5)  # what the load started (pictures, the socket) has settled
    before = chromium_cpu_s()
    await page.goto(url, wait_until="load")
    await asyncio.sleep(0.7)
    return chromium_cpu_s() - before


async def main(steps: int, loads: int) -> None:
    task = "\n".join(f"type Ada {i} into Name" for i in range(steps))
    with e2e_server(_Folders()) as server:  # type: ignore[arg-type]
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(
                executable_path=CHROMIUM, args=list(QUIET_CHROMIUM_ARGS)
            )
            page = await (
                await browser.new_context(viewport={"width": 1280, "height": 900})
            ).new_page()
            await log_in(page, server)
            run_id = await start_run(page, f"{server.base_url}/demo/form.html", task)
            await expect(page.locator("#status")).to_have_text(
                re.compile("succeeded|failed"), timeout=steps * LIVE_MS
            )
            run_s, home_s = [], []
            for _ in range(loads):
                run_s.append(await load_cpu_s(page, f"{server.base_url}/runs/{run_id}/"))
                home_s.append(await load_cpu_s(page, f"{server.base_url}/"))
            await browser.close()
    run, home = median(run_s), median(home_s)
    print(
        f"RESULT runpage run_over_home={run / home:.2f} run_cpu_s={run:.3f} "
        f"home_cpu_s={home:.3f} steps={steps}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--loads", type=int, default=4)
    args = parser.parse_args()
    asyncio.run(main(args.steps, args.loads))
