"""A replay's step that needs a person: the pause, what they do meanwhile, and the step
done by them.

A step replay can't take (locate abstains, or an interruption with no handler covers its
element) *needs a person*.  With a :class:`~automation.control.RunControl` (the
dashboard) the replay pauses (:func:`step_with_person`): a Recorder listens in the tab
(:mod:`automation.recording.rescue`), the person does the step or clears what covers it
in the live view, then resumes (the step is tried again) or replies "skip" (they did it).
The act of theirs that does what the step does is the step's rescue: its element is
proposed as the step's identity.  With :attr:`ReplayConfig.person_wait_ms
<automation.recording.replay.ReplayConfig.person_wait_ms>`, no one coming in that time
ends the step as it stood.  A pause the person asked for is taken before a step, and ends
the same way.

These take the replay (as :mod:`automation.recording.replaycalls` and
:mod:`automation.recording.replayhandlers` do), so this module needs no import of
:mod:`automation.recording.replay`, which imports it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from automation.browser.identity import ElementIdentity
from automation.budget import Budget
from automation.events import RunPaused, RunResumed, StepReplayed
from automation.recording.outcome import (
    StepOutcome,
    event_fields,
    replayed_record,
    written_back,
)
from automation.recording.rescue import Rescue, rescue_of, start_recorder, unrecorded
from automation.recording.scenario import ScenarioStep

if TYPE_CHECKING:
    from automation.recording.replay import Replay

__all__ = ["SKIP_REPLIES", "step_with_person"]

SKIP_REPLIES = frozenset({"skip", "skipped", "done", "did it"})


async def step_with_person(
    replay: Replay, index: int, step: ScenarioStep, budget: Budget
) -> StepOutcome:
    """A step that needs a person pauses the replay (when someone can answer) until they
    resume (try again), reply "skip" (they did it) or stop.  A pause the person asked
    for is taken before the step, and ends the same way."""
    if replay.control is not None and replay.control.pause_requested:
        replay.control.pause_requested = False
        at = replay.tab.url
        done = await _wait_for_person(
            replay, index, step, budget, "requested", f"paused by the person before step {index}"
        )
        if done.skipped:
            return await _done_by_person(replay, index, step, done.rescue, at)
    while True:
        outcome = await replay.tried(index, step, budget)
        if outcome.status != "needs_person" or replay.control is None:
            return outcome
        assert outcome.error is not None
        at = replay.tab.url
        done = await _wait_for_person(
            replay, index, step, budget, "needs_person",
            f"step {index} ({step.describe()}): {outcome.error['message']}",
            limit_ms=replay.config.person_wait_ms,
        )  # fmt: skip
        if done.gave_up:
            waited = f"no one came to do it within {_seconds(done.gave_up)}"
            message = f"{outcome.error['message']}; {waited}"
            return replace(outcome, error={**outcome.error, "message": message})
        if done.skipped:
            return await _done_by_person(replay, index, step, done.rescue, at)
        covered = replay.interruptions.blocked is not None  # (they were asked to clear it)
        if done.rescue is not None and (
            (not covered and _named_alike(replay.values.target(step), done.rescue))
            or not await replay.findable(step, budget)
        ):
            # They did the step: on an element named as its own (the one of two alike
            # they meant: done again, it would act on the other), or on one replay still
            # can't find.  Else what they did cleared the way (a cover): tried again.
            return await _done_by_person(replay, index, step, done.rescue, at)


def _named_alike(target: ElementIdentity | None, rescue: ElementIdentity) -> bool:
    """Whether the element the person acted on has the name the step's element has (case
    and spacing aside)."""
    name = " ".join((target.name if target is not None else "").split()).casefold()
    return bool(name) and name == " ".join(rescue.name.split()).casefold()


async def _wait_for_person(
    replay: Replay, index: int, step: ScenarioStep, budget: Budget, reason: str, detail: str,
    limit_ms: int | None = None,
) -> Rescue:  # fmt: skip
    """Pause until the person resumes or replies "skip" (they did the step), or for
    ``limit_ms`` at most (``gave_up`` then says how long it waited).  What they do in
    the tab meanwhile is recorded: the last act of theirs that does what the step
    does is the step's rescue."""
    assert replay.control is not None
    replay.control.begin_pause()
    recorder = await start_recorder(replay.tab, budget, on_secret=replay.run_secrets.hide,
                                    takes_checks=False)  # fmt: skip
    replay.control.recorder = recorder
    ask = (
        "Do the step yourself in the live view, then resume: its element is proposed "
        "for the step. Or resume to try it again"
    )
    if replay.interruptions.blocked is not None:
        ask = (
            "Clear it in the live view, then resume: the step is tried again, and what "
            "you did is offered to keep as a handler. Or do the step yourself"
        )
    unheard = f" ({left_out})" if (left_out := unrecorded(recorder)) else ""
    await replay.out.emit(
        RunPaused(
            reason,
            f'{detail}. {ask}, reply "skip" if you did it some other way, or stop.{unheard}',
        )
    )
    waited_from = time.monotonic()
    limit = asyncio.timeout(None if limit_ms is None else limit_ms / 1000)
    try:
        async with limit:
            await replay.control.wait_for_person(budget)
    except TimeoutError:
        if not limit.expired():
            raise
    finally:
        replay.control.recorder = None
        acts = await recorder.stop() if recorder is not None else []
    budget.extend((time.monotonic() - waited_from) * 1000)
    if limit.expired():
        assert limit_ms is not None
        return Rescue(False, gave_up=limit_ms)
    await replay.out.emit(RunResumed())
    await replay.interruptions.learn(index, step, acts, budget)
    replies = {r.lower().strip(" .!") for r in replay.control.take_replies()}
    return Rescue(bool(replies & SKIP_REPLIES), rescue_of(step, acts))


async def _done_by_person(
    replay: Replay, index: int, step: ScenarioStep, rescue: ElementIdentity | None, at: str
) -> StepOutcome:
    """The step counts as done by the person (``at`` the address they were asked on); the
    element they did it on (if any) is proposed as its identity, so the next replay finds
    it.  It is recorded again as done, on that element (or on the one replay looked for,
    when they did it some other way): the record of its failed try left it out of a
    scenario saved from this replay, which then passed without doing it."""
    fields: dict[str, Any] = {"url": replay.tab.url}
    target = replay.values.target(step)  # as this replay looked for it
    element = rescue if rescue is not None and step.needs_element else target
    record = replayed_record(replay, index, step, element, url=at, led_to=replay.tab.url)
    await replay.out.emit(record)
    if rescue is not None and target is not None and step.needs_element:
        changes = ["done by the person", *target.changes(rescue)]
        fields.update(strategy="person", changes=changes, heal="proposed",
                      healed=written_back(replay, step, rescue).to_dict())  # fmt: skip
    skipped = StepOutcome(index, step.action, "skipped", **fields)
    await replay.out.emit(StepReplayed(**event_fields(skipped)))
    return skipped


def _seconds(ms: int) -> str:
    return f"{ms / 1000:g} s"
