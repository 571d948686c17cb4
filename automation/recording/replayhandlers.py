"""The interruption handlers of a replay (:mod:`automation.recording.handlers`): the
:class:`~automation.recording.handlers.Interruptions` that watch its steps, and each
handler's steps, replayed in its tab when their interruption shows."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from automation.budget import Budget
from automation.recording.handlers import Handler, Interruptions
from automation.recording.scenario import Scenario

if TYPE_CHECKING:
    from automation.recording.replay import Replay

__all__ = ["interruptions_of", "play_handler"]

HANDLER_MOST_MS = 60_000  # a handler's steps take at most this (and the replay's remaining)


def interruptions_of(replay: Replay) -> Interruptions:
    """What watches ``replay``'s steps for the interruptions its scenario handles."""
    return Interruptions(replay.tab, replay.scenario.handlers, replay.out,
                         partial(play_handler, replay))  # fmt: skip


async def play_handler(replay: Replay, handler: Handler, budget: Budget) -> str:
    """A handler's steps, replayed in ``replay``'s tab: "" when they passed, else why not."""
    steps = Scenario(f"handler {handler.name}", handler.steps, base_url=replay.scenario.base_url)
    most_ms = max(1, int(min(budget.remaining_ms(), HANDLER_MOST_MS)))
    config = replace(replay.config, run_timeout_ms=most_ms, screenshots=False)
    result = await type(replay)(replay.tab, steps, base_url=replay.base_url, config=config,
                                secrets=replay.run_secrets).run()  # fmt: skip
    return "" if result.ok else result.reason
