"""Self-healing locators on the healing corpus: record on v1, find again on v2.

fixtures/healing/cases.json lists page pairs (v1 → v2) with the changes real releases
make, and where the target is in each (or that it is gone from v2).  For every pair the
target's identity is recorded on v1 through its ref, as a run records a step; then on v2:

- ours: :func:`automation.browser.identity.locate` (strategies, then similarity, or it
  abstains);
- baseline_css: the single CSS selector a step kept before identities (``Tab.target``);
- baseline_role: role + accessible name only (``get_by_role(role, name, exact=True)``).

A locator *acts* when it points at exactly one visible element.  correct: it acted on the
right element, or (target gone) it did not act; wrong: it acted on another element;
abstain: it did not act although the target is there.

    .venv/bin/python -m bench.healing [--verbose] [--corpus heldout]

``--corpus heldout`` runs fixtures/healing-heldout/ instead: pairs written apart from the
matcher's tuning, so its score there measures how the matcher generalises.  ``--corpus
crossimpl`` runs bench/crossimpl.py: whole scenarios recorded on one implementation of an
app and replayed on the others.

Targets: correct >= 0.97, wrong <= 0.01.

Last line:
    RESULT healing pairs=<n> correct=<share> wrong=<share> abstain=<share> baseline_css=<share correct> baseline_role=<share correct>
"""  # noqa: E501

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.async_api import ElementHandle, Frame, Page
from playwright.async_api import Error as PlaywrightError

from automation import BrowserSession, Budget, Tab
from automation.browser.identity import locate
from bench import crossimpl
from bench.common import FIXTURES, browser_config, median, serve

CASES = FIXTURES / "healing" / "cases.json"
CORPORA = {"healing": "healing", "heldout": "healing-heldout"}  # --corpus -> folder


@dataclass
class Outcome:
    verdict: str  # correct | wrong | abstain
    detail: str = ""


def load_cases(path: Path = CASES) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text(encoding="utf-8"))["cases"])


async def frame_of(page: Page, where: dict[str, Any]) -> Frame:
    if not where.get("frame"):
        return page.main_frame
    host = await page.locator(where["frame"]).element_handle()
    frame = await host.content_frame() if host else None
    assert frame is not None, f"no frame {where['frame']}"
    return frame


async def expected(page: Page, where: dict[str, Any] | None) -> ElementHandle | None:
    if where is None:
        return None
    frame = await frame_of(page, where)
    handle = await frame.locator(where["css"]).element_handle(timeout=5_000)
    assert handle is not None, f"no element {where}"
    return handle


async def same(a: ElementHandle, b: ElementHandle) -> bool:
    frame_a, frame_b = await a.owner_frame(), await b.owner_frame()
    if frame_a != frame_b:
        return False
    return bool(await a.evaluate("(x, y) => x === y", b))


async def judge(found: ElementHandle | None, want: ElementHandle | None) -> Outcome:
    if found is None:
        return Outcome("correct" if want is None else "abstain")
    if want is not None and await same(found, want):
        return Outcome("correct")
    return Outcome("wrong", await found.evaluate("(e) => e.outerHTML.slice(0, 120)"))


async def unique_visible(page: Page, selector: str) -> ElementHandle | None:
    """The one visible element matching ``selector`` over all frames, else None."""
    hits: list[ElementHandle] = []
    for frame in page.frames:
        try:
            for handle in await frame.query_selector_all(selector):
                if await handle.is_visible():
                    hits.append(handle)
        except PlaywrightError:  # a selector a frame can't parse finds nothing there
            continue
    return hits[0] if len(hits) == 1 else None


async def by_role(page: Page, role: str, name: str) -> ElementHandle | None:
    hits: list[ElementHandle] = []
    for frame in page.frames:
        locator = frame.get_by_role(role, name=name, exact=True)  # type: ignore[arg-type]
        for handle in await locator.element_handles():
            if await handle.is_visible():
                hits.append(handle)
    return hits[0] if len(hits) == 1 else None


async def record(tab: Tab, url: str, where: dict[str, Any]) -> tuple[Any, str, str, str]:
    """The target's identity, kept selector, role and name, taken through its ref."""
    await tab.navigate(url)
    await tab.snapshot()
    frame = await frame_of(tab.page, where)
    element = await frame.locator(where["css"]).element_handle(timeout=5_000)
    assert element is not None
    ref = await element.evaluate("(e) => window.__tabwright.refOf(e)")
    assert ref and ref in tab.refs, f"the target has no ref: {where}"
    target = await tab.target(ref)
    return target.identity, target.selector, target.role, target.name


async def run_case(
    tab: Tab, base: str, case: dict[str, Any], folder: str = "healing"
) -> dict[str, Any]:
    folder = f"{base}/{folder}/"
    identity, selector, role, name = await record(tab, folder + case["v1"], case["target_v1"])
    await tab.navigate(folder + case["v2"])
    await tab.snapshot()
    want = await expected(tab.page, case["target_v2"])
    started = time.perf_counter()
    located = await locate(tab.page, identity, budget=Budget(10_000))
    ms = (time.perf_counter() - started) * 1000
    ours = await judge(located.element, want)
    css = await judge(await unique_visible(tab.page, selector), want)
    role_only = Outcome("abstain")
    if role:
        role_only = await judge(await by_role(tab.page, role, name), want)
    return {
        "id": case["id"],
        "change": case["change"],
        "ours": ours,
        "css": css,
        "role": role_only,
        "strategy": located.strategy or "abstain",
        "score": located.score,
        "reason": located.reason,
        "ms": ms,
    }


async def main(verbose: bool, corpus: str = "healing") -> None:
    folder = CORPORA[corpus]
    cases = load_cases(FIXTURES / folder / "cases.json")
    results = []
    with serve() as base:
        async with BrowserSession(browser_config()) as browser:
            tab = await browser.new_tab()
            for case in cases:
                results.append(await run_case(tab, base, case, folder))
    n = len(results)
    share = lambda key, verdict: sum(r[key].verdict == verdict for r in results) / n  # noqa: E731
    for r in results:
        if verbose or r["ours"].verdict != "correct":
            print(
                f"{r['ours'].verdict:8} {r['id']:40} {r['change']:22} {r['strategy']:12}"
                f" score={r['score']:.3f} {r['reason']} {r['ours'].detail}"
            )
    by_change: dict[str, Counter[str]] = {}
    for r in results:
        by_change.setdefault(r["change"], Counter())[r["ours"].verdict] += 1
    for change, counts in sorted(by_change.items()):
        print(f"  {change:22} " + " ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    strategies = Counter(r["strategy"] for r in results)
    print("strategies: " + " ".join(f"{k}={v}" for k, v in strategies.most_common()))
    print(f"locate p50={median([r['ms'] for r in results]):.1f} ms")
    print(
        f"RESULT healing pairs={n} correct={share('ours', 'correct'):.3f}"
        f" wrong={share('ours', 'wrong'):.3f} abstain={share('ours', 'abstain'):.3f}"
        f" baseline_css={share('css', 'correct'):.3f}"
        f" baseline_role={share('role', 'correct'):.3f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--verbose", action="store_true", help="a line for every pair")
    parser.add_argument(
        "--corpus",
        choices=[*sorted(CORPORA), "crossimpl"],
        default="healing",
        help="healing: the tuning corpus (default); heldout: fixtures/healing-heldout/; "
        "crossimpl: whole replays across implementations (bench/crossimpl.py)",
    )
    args = parser.parse_args()
    if args.corpus == "crossimpl":
        manifest = crossimpl.load_manifest()
        asyncio.run(crossimpl.run(manifest["apps"], manifest["task"], verbose=args.verbose))
    else:
        asyncio.run(main(args.verbose, args.corpus))
