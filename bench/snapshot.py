"""Our role snapshot against Playwright's ``page.aria_snapshot(mode="ai")`` on the same pages.

Pages: generated back-office screens of about 500, 2,500 and 10,000 DOM nodes, and the
fixture pages.  Both snapshots are taken alternately in one tab, several times each.

    .venv/bin/python -m bench.snapshot

Last line:
    RESULT snapshot time_ratio=… size_ratio=… delta_ratio=… recall=…
time_ratio: median over the generated sizes of (our median time / Playwright's);
size_ratio: interactive-only characters / Playwright's characters (median over sizes);
delta_ratio: a delta after one element changed / our full snapshot (median over sizes);
recall: the share of Playwright's refs on interactive roles that we also give a ref to.
"""

from __future__ import annotations

import asyncio
import re
import time

from automation import BrowserSession, Tab
from automation.browser.snapshot import INTERACTIVE_ROLES, SnapshotOptions
from bench.common import browser_config, median, serve
from bench.pages import back_office_page

SIZES = (500, 2_500, 10_000)
REPEATS = 7
FIXTURE_PAGES = (
    "demo/index.html",
    "demo/form.html",
    "demo/list.html",
    "demo/dynamic.html",
    "demo/flow/step1.html",
    "snapshot/controls.html",
    "snapshot/shadow.html",
    "snapshot/frames.html",
)
_PW_REF = re.compile(r"^\s*- (?P<role>[a-z]+)\b.*?\[ref=(?P<ref>(?:f\d+)?e\d+)\]", re.M)


async def timed(work) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = await work
    return (time.perf_counter() - started) * 1000, result


async def compare_times(tab: Tab) -> tuple[float, float, int, int]:
    ours_ms, pw_ms = [], []
    ours_text, pw_text = "", ""
    for _ in range(REPEATS):
        ms, snap = await timed(tab.snapshot())
        ours_ms.append(ms)
        ours_text = snap.text  # type: ignore[attr-defined]
        ms, raw = await timed(tab.page.aria_snapshot(mode="ai"))
        pw_ms.append(ms)
        pw_text = raw  # type: ignore[assignment]
    return median(ours_ms), median(pw_ms), len(ours_text), len(pw_text)


async def recall(tab: Tab) -> tuple[int, int]:
    """(Playwright's interactive refs, how many of those elements we gave a ref)."""
    await tab.snapshot()
    raw = await tab.page.aria_snapshot(mode="ai")
    wanted = [m["ref"] for m in _PW_REF.finditer(raw) if m["role"] in INTERACTIVE_ROLES]
    found = 0
    for ref in wanted:
        ours = await tab.page.locator(f"aria-ref={ref}").evaluate(
            "el => el.ownerDocument.defaultView.__tabwright?.refOf(el) || ''"
        )
        found += bool(ours)
    return len(wanted), found


async def main() -> None:
    pages = {f"/gen/{n}.html": back_office_page(n) for n in SIZES}
    with serve(pages) as base:
        async with BrowserSession(browser_config()) as browser:
            tab = await browser.new_tab()
            time_ratios, size_ratios, delta_ratios = [], [], []
            wanted_total = found_total = 0
            print(
                f"{'page':28} {'nodes':>6} {'ours ms':>8} {'pw ms':>8} {'ratio':>6} "
                f"{'ours ch':>8} {'pw ch':>8} {'inter ch':>8} {'delta ch':>8}"
            )
            for n in SIZES:
                await tab.navigate(f"{base}/gen/{n}.html")
                nodes = await tab.page.evaluate("document.getElementsByTagName('*').length")
                ours, pw, ours_chars, pw_chars = await compare_times(tab)
                inter = await tab.snapshot(SnapshotOptions(interactive_only=True))
                full = await tab.snapshot()
                count = next(r.ref for r in full.refs.values() if r.name.startswith("Count:"))
                await tab.click(count)
                delta = await tab.snapshot(SnapshotOptions(delta=True))
                wanted, found = await recall(tab)
                wanted_total += wanted
                found_total += found
                time_ratios.append(ours / pw)
                size_ratios.append(len(inter.text) / pw_chars)
                delta_ratios.append(len(delta.text) / len(full.text))
                print(
                    f"{'generated':28} {nodes:>6} {ours:>8.1f} {pw:>8.1f} {ours / pw:>6.2f} "
                    f"{ours_chars:>8} {pw_chars:>8} {len(inter.text):>8} {len(delta.text):>8}"
                )
            for path in FIXTURE_PAGES:
                await tab.navigate(f"{base}/{path}")
                await asyncio.sleep(0.2)  # let frames and custom elements settle
                nodes = await tab.page.evaluate("document.getElementsByTagName('*').length")
                ours, pw, ours_chars, pw_chars = await compare_times(tab)
                wanted, found = await recall(tab)
                wanted_total += wanted
                found_total += found
                print(
                    f"{path:28} {nodes:>6} {ours:>8.1f} {pw:>8.1f} {ours / pw:>6.2f} "
                    f"{ours_chars:>8} {pw_chars:>8} {'':>8} {'':>8}  recall {found}/{wanted}"
                )
    print(
        f"RESULT snapshot time_ratio={median(time_ratios):.2f} "
        f"size_ratio={median(size_ratios):.3f} delta_ratio={median(delta_ratios):.4f} "
        f"recall={found_total / max(wanted_total, 1):.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
