"""A box an agent clicked, whose state the scenario then checks, is ticked to that state.

An agent (or an MCP client) clicks a switch, a checkbox or a button pressed in where a
person's recording says check; the run's checks proposed after it say the state it left
(automation.recording.propose).  Replayed as a click, it undoes that state on a day the
box is already so: the check after it fails, but the click has been sent (an alert
switched off, a note unpinned).  Read with its check, the click says what a person's check
says: leave the box so.  Replay and the export both tick it to that state (a box already
so is left as it is), through :func:`ticks_ensured`."""

from __future__ import annotations

from dataclasses import replace

from automation.recording.scenario import EXPECT, Scenario, ScenarioStep

__all__ = ["ticks_ensured"]

_STATES = {"checked": True, "unchecked": False}


def ticks_ensured(scenario: Scenario) -> Scenario:
    """``scenario`` with each plain click on a box (ScenarioStep.clicks_a_box) whose
    state a later check reads, no other step acting on that box between, as a check
    step ticking it to that state; the same scenario where there is none."""
    steps = list(scenario.steps)
    for index, step in enumerate(steps):
        state = _checked_after(steps, index) if step.clicks_a_box() else None
        if state is not None:
            steps[index] = replace(step, action="check", args={"checked": state})
    if steps == list(scenario.steps):
        return scenario
    return replace(scenario, steps=tuple(steps))


def _checked_after(steps: list[ScenarioStep], index: int) -> bool | None:
    """The state the first later step on the box of step ``index`` checks, when it is a
    check of its state; None when another step acts on it first, or none reads it."""
    identity = steps[index].identity
    assert identity is not None
    same = identity.sameness()
    for later in steps[index + 1 :]:
        if later.identity is None or later.identity.sameness() != same:
            continue
        if later.action == EXPECT and later.args.get("kind") in _STATES:
            return _STATES[later.args["kind"]]
        return None
    return None
