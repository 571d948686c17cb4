"""Signing in again in the middle of a replay: the scenario's login scenario.

A scenario may name a login scenario (``login_scenario``), which its document brings in
``callees`` (:mod:`automation.recording.calls`).  When a step of its replay fails on a
page that asks to sign in, the replay (:attr:`Replay.relogin
<automation.recording.replay.Replay.relogin>`) replays the login scenario in the same tab
with its own base URL, secrets and step timeout, goes back to the step's page and tries
the step again, once a replay.  Every replay of the document does so by itself (the
library's, ``scenario_replay``'s, a batch's); the dashboard's also saves the run's sign-in
profile again (dashboard.runs.relogin).  The login scenario's own replay never signs in
again with itself, and a called scenario's replay leaves it to its caller's.

The login scenario's replay is made with the replay's own class (as a called scenario's
and a handler's are: :mod:`automation.recording.replaycalls`), so this module needs no
import of :mod:`automation.recording.replay`, which imports it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from automation.budget import Budget
from automation.errors import ActionFailed
from automation.recording.calls import brought_login

if TYPE_CHECKING:
    from automation.recording.replay import Replay

__all__ = ["Relogin", "login_replay"]

Relogin = Callable[[Budget], Awaitable[str]]


def login_replay(replay: Replay) -> Relogin | None:
    """How ``replay`` signs in again: its scenario's login scenario, from its
    ``callees``, replayed in its tab with its base URL, environment, secrets and step
    timeout; it says what it did, or raises ActionFailed when the login scenario did not
    pass.  None when the scenario brings no login scenario (or is its own), or when
    ``replay`` is a called scenario's (its caller's replay signs in again)."""
    document = brought_login(replay.scenario)
    if document is None or replay.frame is not None:
        return None
    name = document.name

    async def relogin(budget: Budget) -> str:
        most_ms = max(1, int(budget.remaining_ms()))
        config = replace(replay.config, run_timeout_ms=most_ms, screenshots=False)
        result = await type(replay)(replay.tab, document, base_url=replay.base_url,
                                    env=replay.env, secrets=replay.run_secrets,
                                    config=config).run()  # fmt: skip
        if not result.ok:
            raise ActionFailed(f"the login scenario {name!r} did not pass: {result.reason}")
        return f"signed in again with the login scenario {name!r}"

    return relogin
