"""Signing in again in the middle of a replay: the scenario's login scenario.

A scenario may name a login scenario (``login_scenario``), which its document brings in
``callees`` (:mod:`automation.recording.calls`).  When a step of its replay fails on a
page that asks to sign in, the replay (:attr:`Replay.relogin
<automation.recording.replay.Replay.relogin>`) replays the login scenario in the same tab
with the run's secrets, goes back to the step's page and tries the step again, once a
replay.  The dashboard also saves the run's sign-in profile again (dashboard.runs.relogin).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import ActionFailed
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from automation.secrets import Secrets

__all__ = ["Relogin", "login_replay"]

Relogin = Callable[[Budget], Awaitable[str]]


def login_replay(
    scenario: Scenario, tab: Tab, *, base_url: str, secrets: Secrets, step_timeout_ms: int
) -> Relogin | None:
    """How a replay of ``scenario`` in ``tab`` signs in again: its login scenario, from
    its ``callees``, replayed there; it says what it did, or raises ActionFailed when the
    login scenario did not pass.  None when the scenario brings no login scenario."""
    name = scenario.login_scenario
    login = scenario.callees.get(name) if name else None
    if login is None:
        return None
    document = replace(login, callees=scenario.callees)  # the scenarios it calls

    async def relogin(budget: Budget) -> str:
        config = ReplayConfig(step_timeout_ms=step_timeout_ms,
                              run_timeout_ms=max(1, int(budget.remaining_ms())))  # fmt: skip
        result = await Replay(tab, document, base_url=base_url, secrets=secrets,
                              config=config).run()  # fmt: skip
        if not result.ok:
            raise ActionFailed(f"the login scenario {name!r} did not pass: {result.reason}")
        return f"signed in again with the login scenario {name!r}"

    return relogin
