"""The interruption handlers of a replay (:mod:`automation.recording.handlers`): the
:class:`~automation.recording.handlers.Interruptions` that watch its steps, and each
handler's steps, replayed in its tab when their interruption shows."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from automation.budget import Budget
from automation.recording.handlers import Handler, Interruptions
from automation.recording.scenario import Scenario

if TYPE_CHECKING:
    from automation.recording.replay import Replay

__all__ = ["interruptions_of", "play_handler"]

HANDLER_MOST_MS = 60_000  # a handler's steps take at most this (and the replay's remaining)


def interruptions_of(replay: Replay, caller: Interruptions | None = None) -> Interruptions:
    """What watches ``replay``'s steps for the interruptions its scenario handles; a
    called scenario's (``caller``: its caller's) for its caller's too, those it does not
    handle itself, each played as its caller plays it: an interruption its caller handles
    is handled wherever it shows, as in the pytest export."""
    own = replay.scenario.handlers
    theirs = tuple(h for h in (caller.handlers if caller else ()) if h not in own
                   and h.name not in {o.name for o in own})  # fmt: skip

    async def play(handler: Handler, budget: Budget) -> str:
        if caller is not None and handler in theirs:
            return await caller.run_steps(handler, budget)
        return await play_handler(replay, handler, budget)

    return Interruptions(replay.tab, (*own, *theirs), replay.out, play,
                         ask_ms=replay.config.step_timeout_ms)  # fmt: skip


async def play_handler(replay: Replay, handler: Handler, budget: Budget) -> str:
    """A handler's steps, replayed in ``replay``'s tab: "" when they passed, else why not."""
    steps = Scenario(f"handler {handler.name}", handler.steps, base_url=replay.scenario.base_url)
    most_ms = max(1, int(min(budget.remaining_ms(), HANDLER_MOST_MS)))
    config = replace(replay.config, run_timeout_ms=most_ms, screenshots=False)
    result = await type(replay)(replay.tab, steps, base_url=replay.base_url, config=config,
                                secrets=replay.run_secrets).run()  # fmt: skip
    return "" if result.ok else result.reason
