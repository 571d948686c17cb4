"""What a person did while a run waited for them: recorded, and read as a rescue.

When a replay can't tell which element a step means, it pauses and a person takes over:
they do the step themselves in the live view (or a visible browser).  A Recorder runs on
the tab while the run is paused (:func:`start_recorder`, also used by the agent loop), and
:func:`rescue_of` picks out of what they did the act that does what the step does: its
element becomes a proposed heal of the step, so the next replay finds it there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from automation.browser.identity import ElementIdentity
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import BrowserClosed, Cancelled, TabwrightError
from automation.recording.recorder import Recorder
from automation.recording.scenario import ScenarioStep

__all__ = ["Rescue", "rescue_of", "start_recorder", "unrecorded"]

log = logging.getLogger("automation.recording")

# Acts of a person that do what a step of this action does (a click on a checkbox is
# recorded as the check it makes, and a check step may have been a click).
_SAME_DEED = {
    "click": {"click", "check"},
    "check": {"check", "click"},
    "double_click": {"double_click"},
    "fill": {"fill", "type"},
    "type": {"fill", "type"},
    "select_option": {"select_option"},
    "hover": {"hover", "click"},
    "press": {"press"},
    "upload": {"upload"},
}


@dataclass(frozen=True)
class Rescue:
    """How a pause ended: ``skipped`` (the person said they did the step), and the
    element of the person's act that does what the step does, if they did one; or
    ``gave_up``: no one came in the time a person is waited for."""

    skipped: bool
    rescue: ElementIdentity | None = None
    gave_up: int = 0  # ms waited before the replay gave up on a person (0: one came)


def rescue_of(step: ScenarioStep, acts: list[ScenarioStep]) -> ElementIdentity | None:
    """The element of the person's last act that does what ``step`` does, on an element
    of the same kind (the identity it was recorded with)."""
    deeds = _SAME_DEED.get(step.action, set())
    target = step.target()
    for act in reversed(acts):
        if act.action in deeds and act.identity is not None:
            if target is None or not target.role or _same_kind(target.role, act.identity.role):
                return act.identity
    return None


def _same_kind(a: str, b: str) -> bool:
    kinds = ({"button", "link", "menuitem", "tab", "treeitem"},
             {"textbox", "searchbox", "combobox", "spinbutton"},
             {"checkbox", "switch", "menuitemcheckbox"},
             {"radio", "menuitemradio", "option"})  # fmt: skip
    return a == b or any(a in kind and b in kind for kind in kinds)


# Said to the person with the pause when their recorder could not start.
NOT_RECORDED = "what you do in the tab is not recorded this time (its recorder did not start)"


def unrecorded(recorder: Recorder | None) -> str:
    """What the person is told, with a pause, of what their ``recorder`` leaves out: all
    (:data:`NOT_RECORDED`, none started), a part (a frame held it), or "" (nothing)."""
    return NOT_RECORDED if recorder is None else recorder.left_out


async def start_recorder(
    tab: Tab, budget: Budget, *, on_secret: Callable[[str], None] | None = None,
    takes_checks: bool = True,
) -> Recorder | None:  # fmt: skip
    """A Recorder listening on the tab (None, logged, when it can't be started: the run
    still waits for the person, and the pause says :data:`NOT_RECORDED`); ``on_secret``
    hides what the person types into a password field, ``takes_checks`` says whether
    their checks are kept (Recorder)."""
    if tab.page.is_closed():
        return None
    recorder = Recorder(tab, on_secret=on_secret, takes_checks=takes_checks)
    try:
        # Bounded, not tight: a busy machine may take seconds, and a recorder that could
        # not start leaves the person's acts out of the run.
        await recorder.start(budget=budget.child(30_000, label="record the person"))
    except TabwrightError as exc:
        if isinstance(exc, Cancelled | BrowserClosed):
            raise
        log.warning("could not record the person's actions: %s", exc)
        return None
    return recorder
