"""A back office's daily scenario, unattended: a firing every EVERY_S seconds for MINUTES,
across a session that expires and a release that puts interruptions over the page.

The back office (tests.backoffice) signs in with a password and a one-time code.  Before
the first firing its sign-in is saved (a sign-in profile: the tab's storage state).  Each
firing replays the order scenario (tests.backoffice.order_scenario) in a fresh tab that
starts with the saved state, as a schedule's firing does: when its session has ended, the
login scenario signs in again in the same tab and the state is saved again (a relogin).
Before the firing a third of the way through, every session ends; before the one half
way, the release switches: a "What's new" dialog and a cookie wall cover the order's
page.  The first firing that meets them has no handler and needs a person (no one comes:
it ends there); the handlers a person would then keep (what the learn-once journey
proposes: tests/e2e) are kept, and the firings after clear both by themselves.

    .venv/bin/python -m bench.daily [--minutes 10] [--every-s 60] [--through dashboard]

Last line:
    RESULT daily firings=… passed=… relogins=… interruptions_handled=… person_needed=…
Goal: person_needed 1 (the firing before the handlers are kept), every other firing
passed.  By default this drives the engine's replay on a timer; ``--through dashboard``
fires a dashboard's own schedule instead (bench.dailyboard: a daphne and its worker, the
profile saved from a conversation, each firing the schedule's Run now).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from automation import BrowserSession, Budget, Tab
from automation.browser.config import default_chromium
from automation.browser.storage import storage_state_read
from automation.errors import ActionFailed
from automation.events import ListSink, Observation
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from automation.secrets import Secrets
from bench.common import browser_config
from tests.backoffice import (
    COOKIES,
    PASSWORD,
    SEED,
    WHATS_NEW,
    BackOffice,
    back_office,
    order_scenario,
    sign_in_scenario,
)

ENV = {"TABWRIGHT_SECRET_BO_PASSWORD": PASSWORD, "TABWRIGHT_SECRET_BO": SEED}
CONFIG = ReplayConfig(step_timeout_ms=15_000, run_timeout_ms=120_000, locate_wait_ms=2_000)


@dataclass
class Day:
    firings: int = 0
    passed: int = 0
    relogins: int = 0
    interruptions_handled: int = 0
    person_needed: int = 0
    handlers: list[dict[str, Any]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)  # the saved sign-in
    reasons: list[str] = field(default_factory=list)  # of the firings that did not pass

    def line(self) -> str:
        return (f"RESULT daily firings={self.firings} passed={self.passed} "
                f"relogins={self.relogins} interruptions_handled={self.interruptions_handled} "
                f"person_needed={self.person_needed}")  # fmt: skip


def _secrets() -> Secrets:
    return Secrets(ENV, allowed={"BO", "BO_PASSWORD"})


async def _sign_in(tab: Tab, office: BackOffice, day: Day) -> None:
    """The login scenario in ``tab``, its state saved (ActionFailed if it did not pass)."""
    config = ReplayConfig(step_timeout_ms=15_000, run_timeout_ms=60_000)
    result = await Replay(tab, sign_in_scenario(office.url), env=ENV, secrets=_secrets(),
                          config=config).run()  # fmt: skip
    if not result.ok:
        raise ActionFailed(f"the login scenario did not pass: {result.reason}")
    day.state = await storage_state_read(tab.context, budget=Budget(10_000, label="state"))


async def fire(
    browser: BrowserSession, office: BackOffice, day: Day, config: ReplayConfig = CONFIG
) -> str:
    """One firing; its status."""
    tab = await browser.new_tab(storage_state=day.state or None)
    try:

        async def relogin(budget: Budget) -> str:
            await _sign_in(tab, office, day)
            return "signed in again with the login scenario 'Sign in'"

        sink = ListSink()
        scenario = Scenario.from_dict(order_scenario(office.url, *day.handlers))
        replay = Replay(tab, scenario, sink=sink, env=ENV, secrets=_secrets(), config=config,
                        relogin=relogin)  # fmt: skip
        result = await replay.run()
    finally:
        await tab.close()
    notes = [e.text for e in sink.events if isinstance(e, Observation)]
    day.firings += 1
    day.passed += result.ok
    day.relogins += sum(n.startswith("signed in again") for n in notes)
    day.interruptions_handled += len(replay.interruptions.handled)
    if result.status == "needs_person":
        day.person_needed += 1
        if "covered by" in result.reason and not day.handlers:
            day.handlers = [WHATS_NEW, COOKIES]  # what the person keeps after clearing them
    if not result.ok:
        day.reasons.append(result.reason)
    return result.status


async def daily(
    firings: int,
    every_s: float,
    *,
    browser: BrowserSession | None = None,
    config: ReplayConfig = CONFIG,
    quiet: bool = False,
) -> Day:
    """``firings`` firings ``every_s`` apart: every session ends before the firing a third
    of the way through, the release switches before the one half way."""
    if browser is None:
        async with BrowserSession(browser_config()) as own:
            return await daily(firings, every_s, browser=own, config=config, quiet=quiet)
    day = Day()
    with back_office() as office:
        first = await browser.new_tab()
        try:
            await _sign_in(first, office, day)
        finally:
            await first.close()
        started = time.monotonic()
        for firing in range(firings):
            await asyncio.sleep(max(0.0, started + firing * every_s - time.monotonic()))
            before(firings)(firing, office)
            status = await fire(browser, office, day, config)
            if not quiet:
                print(
                    f"firing {firing} at {time.monotonic() - started:.0f} s: {status}", flush=True
                )
    return day


def before(firings: int) -> Callable[[int, BackOffice], None]:
    """What happens to the back office before a firing of ``firings``: every session ends
    before the one a third of the way through, the release switches before the one half
    way."""

    def happen(firing: int, office: BackOffice) -> None:
        if firing == max(1, firings // 3):
            office.expire_sessions()
        if firing == max(1, firings // 2):
            office.switch_release("2026.12", after_views=1)

    return happen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long the day lasts")
    parser.add_argument("--every-s", type=float, default=60.0, help="seconds between firings")
    parser.add_argument("--through", choices=("engine", "dashboard"), default="engine",
                        help="what fires: the engine's replay on a timer, or a dashboard's "
                        "schedule (Run now, fired by its worker's scheduler)")  # fmt: skip
    args = parser.parse_args()
    os.environ.setdefault("TABWRIGHT_CHROMIUM_PATH", default_chromium())
    firings = max(1, round(args.minutes * 60 / args.every_s))
    if args.through == "dashboard":
        from bench.dailyboard import daily_through_dashboard

        day = daily_through_dashboard(firings, args.every_s, day=Day(), before=before(firings))
    else:
        day = asyncio.run(daily(firings, args.every_s))
    for reason in day.reasons:
        print(f"not passed: {reason}")
    print(day.line())


if __name__ == "__main__":
    main()
