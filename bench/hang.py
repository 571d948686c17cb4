"""Hung scripts through the CDP-isolated evaluate: are they stopped in time, and does the tab
still work afterwards?

Trials (200 by default) on one tab of one browser session, each a script that never finishes
on its own, run by ``tab.evaluate(script, budget=Budget(ms))`` with a random budget of
200-2,000 ms (a seeded ``random.Random``, so a run can be repeated):

- ``spin``: ``while(true){}``;
- ``promise``: a promise that never settles;
- ``alert``: ``alert('x')``, which the tab's dialog guard dismisses (evaluate then raises
  UnexpectedDialog: that counts as having returned);
- ``layout``: style writes and ``offsetHeight`` reads over a few thousand elements, forcing a
  layout each time, for far longer than any budget.

About a third of the trials run as a function of an element (``ref=`` from a snapshot,
``Runtime.callFunctionOn``), the rest on the page (``Runtime.evaluate``).  After each trial a
button is clicked by ref and the click is checked in the page (its handler counts clicks).

    .venv/bin/python -m bench.hang [--trials 200] [--seed 7]

contained: the share of evaluate calls that returned (a value or any error) within their
budget + 250 ms; next_ok: the share of following clicks that raised nothing and took effect.
Targets: contained = 1.000, next_ok >= 0.99, and no browser restart.

Last line:
    RESULT hang contained=<share> next_ok=<share> trials=<n>
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import time
from collections import Counter
from dataclasses import dataclass

from automation import BrowserSession, Budget, Tab
from automation.metrics import EVALUATE_TERMINATIONS
from bench.common import browser_config, median, p95, serve

KINDS = ("spin", "promise", "alert", "layout")
MIN_BUDGET_MS, MAX_BUDGET_MS = 200, 2_000
SLACK_MS = 250  # "contained": back within the budget plus this
ELEMENT_SHARE = 1 / 3
CLICK_BUDGET_MS = 5_000
CHECK_BUDGET_MS = 2_000
# Only so that a call that never returns can't hang the benchmark; it counts as not contained.
GIVE_UP_MS = 30_000
BOXES = 3_000

# Each layout pass touches every box, so the loop checks for termination every few ms.
_LAYOUT_BODY = (
    "const boxes = document.querySelectorAll('.box'); let h = 0;"
    " for (let i = 0; ; i++) { for (const b of boxes) {"
    " b.style.width = (120 + (i + h) % 200) + 'px'; h += b.offsetHeight; } }"
)
PAGE_SCRIPTS = {
    "spin": "while(true){}",
    "promise": "new Promise(() => {})",
    "alert": "alert('x')",
    "layout": f"(() => {{ {_LAYOUT_BODY} }})()",
}
ELEMENT_SCRIPTS = {
    "spin": "el => { while(true){} }",
    "promise": "el => new Promise(() => {})",
    "alert": "el => alert('x')",
    "layout": f"el => {{ {_LAYOUT_BODY} }}",
}

PAGE = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Hang</title>"
    "<style>.box{display:inline-block;width:150px;margin:1px;border:1px solid #ccc}</style>"
    "</head><body><main><h1>Hung scripts</h1>"
    "<p><button id='press' type='button'>Press me</button> clicks: <output id='count'>0"
    "</output></p><p><button id='target' type='button'>Target</button></p>"
    "<script>window.clicks = 0; document.getElementById('press').onclick = () => {"
    " document.getElementById('count').textContent = String(++window.clicks); };</script>"
    "<section aria-label='Boxes'>"
    + "".join(f"<div class='box'>box {i} with some words to wrap</div>" for i in range(BOXES))
    + "</section></main></body></html>"
)


@dataclass
class Trial:
    kind: str
    element: bool
    budget_ms: int
    wall_ms: float = 0.0
    outcome: str = ""  # the value's type or the error's class
    route: str = ""  # as the engine recorded it: cdp | cdp_element | playwright
    terminate: str = ""  # confirmed | unanswered | "" (none sent)
    click_ok: bool = False
    click_error: str = ""

    @property
    def contained(self) -> bool:
        return self.wall_ms <= self.budget_ms + SLACK_MS

    @property
    def overshoot_ms(self) -> float:
        return self.wall_ms - self.budget_ms


def refs_by_name(tab: Tab, *names: str) -> list[str]:
    found = {entry.name: entry.ref for entry in tab.refs.values()}
    return [found[name] for name in names]


async def run_trial(tab: Tab, trial: Trial, target_ref: str) -> None:
    script = (ELEMENT_SCRIPTS if trial.element else PAGE_SCRIPTS)[trial.kind]
    ref = target_ref if trial.element else ""
    unanswered = EVALUATE_TERMINATIONS.value(result="unanswered")
    confirmed = EVALUATE_TERMINATIONS.value(result="confirmed")
    started = time.perf_counter()
    try:
        value = await asyncio.wait_for(
            tab.evaluate(script, ref=ref, budget=Budget(trial.budget_ms)), GIVE_UP_MS / 1000
        )
        trial.outcome = f"value:{type(value).__name__}"
    except TimeoutError:
        trial.outcome = "never returned"
    except Exception as exc:
        trial.outcome = type(exc).__name__
    trial.wall_ms = (time.perf_counter() - started) * 1000
    if EVALUATE_TERMINATIONS.value(result="unanswered") > unanswered:
        trial.terminate = "unanswered"
    elif EVALUATE_TERMINATIONS.value(result="confirmed") > confirmed:
        trial.terminate = "confirmed"
    done = tab.take_evaluations()
    trial.route = done[-1].route if done else "?"


async def click_next(tab: Tab, trial: Trial, press_ref: str) -> None:
    """Click the counting button and check that the page counted it."""
    try:
        before = await tab.evaluate("window.clicks", budget=Budget(CHECK_BUDGET_MS))
        await tab.click(press_ref, budget=Budget(CLICK_BUDGET_MS))
        after = await tab.evaluate("window.clicks", budget=Budget(CHECK_BUDGET_MS))
    except Exception as exc:
        trial.click_error = f"{type(exc).__name__}: {exc}"[:300]
        return
    finally:
        tab.take_evaluations()  # only the trials' own evaluations are reported
    if after == before + 1:
        trial.click_ok = True
    else:
        trial.click_error = f"the click did not count: window.clicks {before} -> {after}"


def summarize(name: str, trials: list[Trial]) -> str:
    contained = sum(t.contained for t in trials) / len(trials)
    next_ok = sum(t.click_ok for t in trials) / len(trials)
    wall = median([t.wall_ms for t in trials])
    overshoot = [t.overshoot_ms for t in trials]
    return (
        f"{name:18} n={len(trials):>3}  contained={contained:.3f}  next_ok={next_ok:.3f}  "
        f"p50 wall {wall:>6.0f} ms  p95 overshoot {p95(overshoot):>7.1f} ms  "
        f"max {max(overshoot):>7.1f} ms"
    )


async def main(trials_n: int, seed: int) -> None:
    rnd = random.Random(seed)
    trials = [
        Trial(
            kind=rnd.choice(KINDS),
            element=rnd.random() < ELEMENT_SHARE,
            budget_ms=rnd.randint(MIN_BUDGET_MS, MAX_BUDGET_MS),
        )
        for _ in range(trials_n)
    ]
    config = dataclasses.replace(browser_config(), evaluate_enabled=True)
    started = time.perf_counter()
    with serve({"/hang.html": PAGE}) as base:
        async with BrowserSession(config) as browser:
            tab = await browser.new_tab()
            await tab.navigate(f"{base}/hang.html")
            await tab.snapshot()
            press_ref, target_ref = refs_by_name(tab, "Press me", "Target")
            for i, trial in enumerate(trials):
                await run_trial(tab, trial, target_ref)
                await click_next(tab, trial, press_ref)
                # Worth a look even when contained: past the budget, or no answer to the stop.
                if trial.overshoot_ms > 0 or trial.terminate == "unanswered" or not trial.click_ok:
                    print(
                        f"trial {i}: {trial.kind}{' (element)' if trial.element else ''} "
                        f"budget {trial.budget_ms} ms, returned after {trial.wall_ms:.0f} ms "
                        f"({trial.outcome}, route {trial.route}, terminate "
                        f"{trial.terminate or 'not sent'}); "
                        f"next click {'ok' if trial.click_ok else trial.click_error}"
                    )
            restarts = browser.restarts
            runtime_terminations = tab.runtime.terminations if tab.runtime else 0
    elapsed = time.perf_counter() - started

    for kind in KINDS:
        for element in (False, True):
            group = [t for t in trials if t.kind == kind and t.element == element]
            if group:
                print(summarize(kind + (" (element)" if element else ""), group))
    print(summarize("all", trials))
    routes = Counter(t.route for t in trials)
    outcomes = Counter(f"{t.kind}:{t.outcome}" for t in trials)
    print("routes:", ", ".join(f"{r} {n}" for r, n in sorted(routes.items())))
    print("outcomes:", ", ".join(f"{o} {n}" for o, n in sorted(outcomes.items())))
    print(
        f"terminations: confirmed {EVALUATE_TERMINATIONS.value(result='confirmed'):.0f}, "
        f"unanswered {EVALUATE_TERMINATIONS.value(result='unanswered'):.0f} "
        f"(sent on the tab's session: {runtime_terminations})"
    )
    print(f"browser restarts: {restarts}; elapsed {elapsed:.1f} s")
    contained = sum(t.contained for t in trials) / len(trials)
    next_ok = sum(t.click_ok for t in trials) / len(trials)
    print(f"RESULT hang contained={contained:.3f} next_ok={next_ok:.3f} trials={len(trials)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    asyncio.run(main(args.trials, args.seed))
