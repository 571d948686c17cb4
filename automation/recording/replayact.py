"""A replay's step done on the element it found: through the element's ref, from the
tab's registry when the latest snapshot has it, else after a new snapshot; found again
when the app drew it again before the action (an async save), and tried again only where
doing it twice does no harm; a native control a widget stands for set there."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from playwright.async_api import ElementHandle
from playwright.async_api import Error as PlaywrightError

from automation.actions import execute
from automation.browser.identity import Located
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import ActionFailed, NeedsPerson, RefError, StaleRef, UnexpectedDialog
from automation.recording.scenario import ScenarioStep
from automation.recording.widgets import WIDGET_ACTIONS, FindAgain, set_behind_widget

if TYPE_CHECKING:
    from automation.recording.replay import Replay

__all__ = ["act_on"]

# An element found may leave the page before it is acted on (an app that draws its rows
# again after an async save): found again, this many times in all.
_ACT_ATTEMPTS = 3
_REF_OF_JS = "(el) => (window.__tabwright && window.__tabwright.refOf(el)) || ''"


async def act_on(replay: Replay, located: Located, step: ScenarioStep, budget: Budget) -> str:
    """Run the step on the element found, through its ref: from the registry if the
    latest snapshot has it, else after a new snapshot (once more if it went stale)."""
    assert located.element is not None
    action, args = _as_found(step.action, replay.values.fill(step.args), located)
    for attempt in range(_ACT_ATTEMPTS):
        if attempt and not await _connected(located.element):
            # The app drew the page again (an async save) since it was found.
            located = await replay.locate_step(step, budget)
            assert located.element is not None
        try:
            try:
                ref = await _ref_of(replay.tab, located.element, budget, fresh=attempt > 0)
            except _NotInSnapshot:
                if action not in WIDGET_ACTIONS:
                    raise
                # A native control a widget stands for now: set and verified there.
                return await set_behind_widget(replay.tab, located.element, action, args,
                                               budget, _finder(replay, step))  # fmt: skip
            if located.found is not None:  # how the action finds it after a re-render
                replay.tab.remember_identity(ref, located.found)
            return await execute(replay.tab, action, {**args, "ref": ref}, budget=budget)
        except RefError:
            if attempt == _ACT_ATTEMPTS - 1:
                raise
        except ActionFailed as exc:
            # Refused on an element the page has replaced since: no verdict on the step
            # (tried again only where doing it twice does no harm).
            if (
                attempt == _ACT_ATTEMPTS - 1
                or not _again_is_harmless(action, exc)
                or await _connected(located.element)
            ):
                raise
    raise AssertionError("unreachable")


def _finder(replay: Replay, step: ScenarioStep) -> FindAgain:
    """Finds the step's element again (on the page an action led to), or None."""

    async def find(within: Budget) -> ElementHandle | None:
        try:
            return (await replay.locate_step(step, within)).element
        except NeedsPerson:
            return None

    return find


async def _ref_of(tab: Tab, element: ElementHandle, budget: Budget, *, fresh: bool) -> str:
    ref = "" if fresh else await _registry_ref(element, budget)
    if not ref or ref not in tab.refs:
        await tab.snapshot(budget=budget)
        ref = await _registry_ref(element, budget)
    if (not ref or ref not in tab.refs) and not await _connected(element):
        raise StaleRef("the element found left the page before it was acted on")
    if not ref or ref not in tab.refs:
        raise _NotInSnapshot(
            "the element found is not in the page's snapshot (hidden, or not something "
            "that can be acted on)"
        )
    return ref


async def _registry_ref(element: ElementHandle, budget: Budget) -> str:
    try:
        return str(await budget.run(element.evaluate(_REF_OF_JS)) or "")
    except PlaywrightError as exc:
        raise StaleRef(f"the element found went away: {exc.message}") from None


class _NotInSnapshot(ActionFailed):
    """The element found is hidden from the snapshot (a native control behind a widget)."""


# Steps that reach the same state when done twice; other steps are tried again only when
# they were refused before acting.
_IDEMPOTENT = frozenset({"check", "fill", "type", "select_option", "hover", "scroll"})
_REFUSED_BEFORE = ("the element is hidden", "the element is disabled", "not attached")


def _again_is_harmless(action: str, exc: ActionFailed) -> bool:
    if isinstance(exc, UnexpectedDialog):
        return False  # the action was done; a dialog answered it
    return action in _IDEMPOTENT or any(m in exc.message for m in _REFUSED_BEFORE)


async def _connected(element: ElementHandle) -> bool:
    try:
        return bool(await element.evaluate("(e) => e.isConnected"))
    except PlaywrightError:
        return False


def _as_found(action: str, args: dict[str, Any], located: Located) -> tuple[str, dict[str, Any]]:
    """The step's action for the element found: choosing an option recorded as checking a
    radio button ("Active") is a click on the link, button or tab that stands for it now."""
    kind = located.found.kind if located.found is not None else ""
    if action == "check" and kind == "press" and args.get("checked", True) is True:
        return "click", {}
    return action, args
