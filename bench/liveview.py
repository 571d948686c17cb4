"""What a person watching a run's live view costs the machine, against nobody watching.

Two pages, each held open in one tab for a few seconds at a time, watched (a live view
sending frames to a receiver that keeps them), watched small (frames 480 pixels wide, as
the run page asks for beside the conversation) and unwatched, interleaved: a spinner that
animates without end (a CSS animation, as a back office shows while it loads) and a form
that stands still.  The CPU measured is the whole of it: this process and every process
it started (Playwright's driver, Chromium's browser, renderer and GPU processes).

    .venv/bin/python -m bench.liveview [--seconds 5] [--rounds 3]

Last line:
    RESULT liveview spinner_cpu_ratio=<watched / unwatched>
      spinner_watched_cpu_per_s=<CPU seconds a second> spinner_unwatched_cpu_per_s=…
      static_watched_cpu_per_s=… spinner_fps=<frames sent a second> static_fps=…
      spinner_small_cpu_per_s=… small_over_full_bytes=<a small frame's JPEG / a full one's>
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from automation import BrowserSession, Tab
from automation.browser.screencast import Frame, Screencast
from bench.common import browser_config, descendants, median, process_stats, serve

SPINNER = """<!doctype html><title>Loading</title>
<style>@keyframes spin { to { transform: rotate(360deg) } }
#spin { width: 40px; height: 40px; border: 6px solid #ccc; border-top-color: #333;
        border-radius: 50%; animation: spin 1s linear infinite }</style>
<main><h1>Orders</h1><div id="spin"></div><p>Loading the orders…</p></main>"""
TICK = 1 / os.sysconf("SC_CLK_TCK")


def tree_cpu_s() -> float:
    """CPU seconds of this process and its descendants (those that ended included)."""
    stats = process_stats()
    spent = sum(
        sum(int(value) for value in stats[pid][11:15])  # utime, stime, cutime, cstime
        for pid in descendants(os.getpid(), stats)
    )
    own = os.times()
    return spent * TICK + own.user + own.system


SMALL = (480, 360)


async def hold(
    tab: Tab, url: str, seconds: float, *, watched: bool, small: bool = False
) -> tuple[float, int, int]:
    """The CPU seconds a second with the page open for ``seconds``, frames sent and the
    median size of their JPEGs."""
    await tab.page.goto(url)
    frames: list[Frame] = []

    async def keep(frame: Frame) -> None:
        frames.append(frame)

    sizes = {"max_width": SMALL[0], "max_height": SMALL[1]} if small else {}
    cast = Screencast(lambda: tab, keep, **sizes) if watched else None
    await asyncio.sleep(0.5)  # the page drawn, the cast's first frame not counted apart
    before, started = tree_cpu_s(), time.monotonic()
    if cast is not None:
        cast.start()
    try:
        await asyncio.sleep(seconds)
    finally:
        if cast is not None:
            await cast.stop()
    took = time.monotonic() - started
    size = int(median([len(frame.jpeg) for frame in frames])) if frames else 0
    return (tree_cpu_s() - before) / took, len(frames), size


async def main(seconds: float, rounds: int) -> None:
    with serve({"/spinner.html": SPINNER}) as base:
        pages = {"spinner": f"{base}/spinner.html", "static": f"{base}/demo/form.html"}
        cpu: dict[tuple[str, str], list[float]] = {}
        fps: dict[str, list[float]] = {name: [] for name in pages}
        size: dict[str, list[int]] = {"watched": [], "small": []}
        hows = ["watched", "unwatched", "small"]
        async with BrowserSession(browser_config()) as session:
            tab = await session.new_tab()
            for round_ in range(rounds):
                for name, url in pages.items():
                    for how in hows[round_ % 3 :] + hows[: round_ % 3]:
                        used, sent, bytes_ = await hold(tab, url, seconds,
                                                        watched=how != "unwatched",
                                                        small=how == "small")  # fmt: skip
                        cpu.setdefault((name, how), []).append(used)
                        if how == "watched":
                            fps[name].append(sent / seconds)
                        if name == "spinner" and how != "unwatched":
                            size[how].append(bytes_)
                        print(f"round {round_ + 1} {name:8s} {how:9s} {used:.3f} CPU s/s"
                              f"{f', {sent} frames of {bytes_} bytes' if sent else ''}",
                              flush=True)  # fmt: skip
    spinner = median(cpu[("spinner", "watched")]), median(cpu[("spinner", "unwatched")])
    print(
        f"RESULT liveview spinner_cpu_ratio={spinner[0] / max(spinner[1], 1e-3):.2f} "
        f"spinner_watched_cpu_per_s={spinner[0]:.3f} spinner_unwatched_cpu_per_s={spinner[1]:.3f} "
        f"static_watched_cpu_per_s={median(cpu[('static', 'watched')]):.3f} "
        f"spinner_fps={median(fps['spinner']):.1f} static_fps={median(fps['static']):.1f} "
        f"spinner_small_cpu_per_s={median(cpu[('spinner', 'small')]):.3f} "
        f"small_over_full_bytes={median(size['small']) / max(median(size['watched']), 1):.2f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="each page held this long")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    asyncio.run(main(options.seconds, options.rounds))
