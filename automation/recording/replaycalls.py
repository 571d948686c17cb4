"""The replay of a ``call`` step (:mod:`automation.recording.calls`): the scenario it
names, replayed at that point in the same tab with the values the step passes, its steps
reported as steps of the run of their own (:class:`~automation.recording.calls.CallFrame`),
numbered after every step of the replayed scenario."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from automation.budget import Budget
from automation.errors import ActionFailed, NeedsPerson
from automation.events import StepRecorded
from automation.recording.basemove import moved_base
from automation.recording.calls import CallFrame
from automation.recording.outcome import StepOutcome
from automation.recording.replayhandlers import interruptions_of
from automation.recording.scenario import ScenarioStep

if TYPE_CHECKING:
    from automation.recording.replay import Replay

__all__ = ["calls_frame", "play_call"]


def calls_frame(replay: Replay) -> CallFrame:
    """Where the scenarios ``replay``'s call steps call report: its own frame when it is
    a called scenario's replay, else a new one numbering their steps after its last."""
    if replay.frame is not None:
        return replay.frame
    return CallFrame(replay.out, (), itertools.count(len(replay.scenario.steps)))


async def play_call(
    replay: Replay,
    index: int,
    step: ScenarioStep,
    budget: Budget,
    inner: list[StepOutcome],
    shown: dict[str, Any],
    words: dict[str, Any],
) -> str:
    """Call step ``index`` of ``replay``: the scenario it names replayed here, each of its
    steps' outcomes added to ``inner`` (``shown`` and ``words``: its arguments as the run
    shows them, and in words); what it did, or ActionFailed (NeedsPerson when
    no one can answer the replay) when it did not pass."""
    # Listed before the steps it runs (and said again, done, in its place).
    await replay.out.emit(StepRecorded(index=index, action=step.action, args=shown,
                                       url=replay.tab.url, words=words, by="replay"))  # fmt: skip
    name = step.args["scenario"]
    frame = replay.calls_frame.under(name)
    callee = replace(replay.scenario.callees[name], callees=replay.scenario.callees)
    child = type(replay)(
        replay.tab, callee,
        params=replay.values.fill(step.args["params"]),
        base_url=moved_base(callee.base_url, replay.scenario.base_url, replay.base_url),
        config=replay.config, sink=frame, control=replay.control, env=replay.env,
        secrets=replay.run_secrets, agent=replay.agent, frame=frame,
    )  # fmt: skip
    child.interruptions = interruptions_of(child, replay.interruptions)
    status, reason = await child.play(budget, inner)
    child.not_run(inner)
    if status == "needs_person" and replay.control is None:  # else it waited for one
        raise NeedsPerson(f"{name!r} needs a person: {reason}", index=-1)
    if status != "passed":
        raise ActionFailed(f"{name!r} did not pass: {reason}")
    return f"{name!r} passed ({len(inner)} steps)"
