"""What a replay reads again once its steps passed, so that a verdict never rests on a
state the app then took back (:class:`~automation.recording.replay.Replay`'s last part,
and the same before a step that leaves the page or acts after checks): what the steps
left for later done first (a debounced save sent and answered), the checks since the
last step that acts read again, the page the app went on to by itself read for an error,
and the box or the value the last write left read again (an app that puts it back took
the write back).  Which steps are read again is :mod:`automation.recording.readagain`'s.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from playwright.async_api import Error as PlaywrightError

from automation.browser.address import same_page
from automation.browser.effect import dispose
from automation.browser.seen import errors_shown
from automation.browser.settle import END_HOLD_TIMER_MS, SettleReport
from automation.browser.textmatch import shows_again
from automation.budget import Budget
from automation.errors import (
    BrowserClosed,
    BudgetExceeded,
    Cancelled,
    CheckFailed,
    HttpStatus,
    RefusedInPlace,
    TabwrightError,
    UnexpectedDialog,
)
from automation.recording import expect
from automation.recording.answered import refused_at_end
from automation.recording.outcome import StepOutcome
from automation.recording.readagain import acted_before

if TYPE_CHECKING:
    from automation.recording.replay import Replay

__all__ = ["CONFIRM_MS", "before", "confirm"]

# A check read again after the hold gets this long before it is read as a step (told).
CONFIRM_MS = 2_000


async def confirm(replay: Replay, budget: Budget, outcomes: list[StepOutcome]) -> tuple[str, str]:
    """Once every step passed: what the last steps left for later (a save the app
    debounces, an answer still to come) done (:meth:`~automation.browser.settle.
    Settler.hold`), the checks after them are read again, so that a verdict never
    rests on a state the app then took back (a switch put back when its save failed),
    and a write it sent that the server refused fails the replay.  A state the app
    keeps (a box, a value, rows, a text gone, the address) must still hold, even when
    nothing was left for later (a timer may have put it back while the checks after
    it were read); a text shown (a toast may go by itself) only when a request failed
    meanwhile; none when the app went on to another page, which must show no error
    (the same address loaded again is the page they read: read again).  The first
    that no longer holds is the step that failed."""
    steps = replay.scenario.steps
    last = acted_before(steps, len(steps))
    trailing = list(range(last + 1, len(steps)))
    await replay.windows.follow(replay)  # the last steps' popup closed itself
    read_at = replay.tab.url  # where the checks after the last step were read
    # (an undo toast's deletion, sent once it went, too: before the browser closes)
    held = await replay.tab.settler.hold(budget.child(label="hold"), timer_ms=END_HOLD_TIMER_MS)
    after = f"step {last} ({steps[last].describe()})" if last >= 0 else "the steps"
    try:  # a dialog no step armed, that came as the page went on by itself
        replay.tab.dialogs_raise(f"after {after}")
    except UnexpectedDialog as exc:
        return "failed", exc.message
    status, reason, navigated = await _read_again(
        replay, trailing, held, read_at, after, "at the end", budget, outcomes
    )
    if status != "passed":
        return status, reason
    when = _when(held, "at the end")
    if held is not None:
        try:
            replay.refusals(replay.tab.log.requests_seen)
        except HttpStatus as exc:
            return "failed", f"after {after}, {when}: " + exc.message
    # The box the last step that acts ticked (a check, or a click on it; a wait after
    # it aside), once the checks after it held: the app may untick it when its save is
    # refused, answered 200 with an error the status does not tell.
    # So is the value the last step that acts wrote (typed, picked), or the fill it
    # committed with Enter or Tab (an edit in place): an app that shows the value from
    # before it again took the write back (a committed one: saying why).
    acting = replay.acting
    said = "" if navigated or acting < 0 else await _taken_back(replay, acting, budget)
    if not said and not navigated and replay.written != acting and replay.written >= 0:
        acting = replay.written  # the fill the last step's key committed
        said = await _taken_back(replay, acting, budget)
    if said:
        error = replay._redacted(CheckFailed(said))  # (a secret's value, as a step's are)
        outcomes[:] = [replace(o, status="failed", error=error) if o.index == acting
                       else o for o in outcomes]  # fmt: skip
        return "failed", (f"step {acting} ({steps[acting].describe()}): held at first, "
                          f"then not {when}: {said}")  # fmt: skip
    try:  # its write refused on the same page, the error shown since
        await refused_at_end(replay, budget)
    except RefusedInPlace as exc:
        index = replay.in_place[0] if replay.in_place is not None else acting
        error = replay._redacted(exc)
        outcomes[:] = [replace(o, status="failed", error=error) if o.index == index
                       else o for o in outcomes]  # fmt: skip
        return "failed", f"step {index} ({steps[index].describe()}): {exc.message}"
    try:  # a write answered in JSON saying it failed, the page saying nothing of it
        await replay.answered_failed(replay.tab.log.requests_seen)
    except HttpStatus as exc:
        return "failed", f"after {after}, {when}: " + exc.message
    return "passed", ""


async def before(
    replay: Replay, index: int, budget: Budget, outcomes: list[StepOutcome]
) -> tuple[str, str]:
    """Before step ``index`` (one that leaves the page, or acts after checks:
    :func:`holds_before`): what the steps before it left for later done first (a
    debounced save sent and answered, as a person waits for "Saved" before going
    on), then the checks since the last step that acts read again, as
    :func:`confirm` reads those at the end: a save the app took back shows on this
    page, before the next step leaves it or changes it."""
    replay.held_before = index
    steps = replay.scenario.steps
    last = acted_before(steps, index)
    checks = list(range(last + 1, index))
    read_at = replay.tab.url
    held = await replay.tab.settler.hold(budget.child(label="hold"))
    if last < 0 or not checks:
        return "passed", ""
    after = f"step {last} ({steps[last].describe()})"
    leaves = "left the page" if steps[index].leaves_the_page else "acted"
    at = f"before step {index} ({steps[index].describe()}) {leaves}"
    status, reason, _ = await _read_again(
        replay, checks, held, read_at, after, at, budget, outcomes
    )
    return status, reason


async def _read_again(
    replay: Replay, checks: list[int], held: SettleReport | None, read_at: str, after: str, at: str,
    budget: Budget, outcomes: list[StepOutcome],
) -> tuple[str, str, bool]:  # fmt: skip
    """``checks`` (read at ``read_at``, ``after`` a step) read again (``at``, as the
    verdict says when) once the page did what the steps left for later (``held``):
    those of a state the app keeps (a box, a value, rows, a text gone, the address),
    and a text shown only when a request failed meanwhile (a toast may go by itself).
    None when the app went on to another page, which must show no error (the same
    address loaded again is the page they read: read again).  The status and reason
    (of the first that no longer holds, read as a step and told), and whether the app
    went on to another page."""
    steps = replay.scenario.steps
    # A page the app went on to by itself ("saved, back to the list in 2 s") is not
    # the one the checks read: they are not read again there, but it shows no error
    # (a save refused: "Something went wrong").  The same address loaded again (a
    # reload, the form's page answered again) is the page they read, as the server
    # now draws it: read again.  When nothing was left (None), a timer may still have
    # taken back a state after its check was read.
    navigated, refused = (held.navigated, held.refused) if held is not None else (False, 0)
    navigated = navigated and not same_page(replay.tab.url, read_at)
    when = _when(held, at)
    if navigated:
        return await _went_on(replay, after, when, budget)
    for index in checks:
        step = steps[index]
        if step.args.get("kind") not in expect.KEPT_KINDS and not refused:
            continue
        try:
            await replay.read_check(step, budget.child(CONFIRM_MS, label="confirm"))
            continue
        except (Cancelled, BrowserClosed):
            raise
        except TabwrightError:  # not held, or not read in time: read as a step
            budget.check()
        outcome = await replay.step(index, step, budget)  # read as a step, and told
        if not outcome.ok and not same_page(replay.tab.url, read_at):
            # The app went on to another page as it was read (its answer came just
            # after the hold): as above, that page is read for an error.
            return await _went_on(replay, after, when, budget)
        outcomes[:] = [outcome if o.index == index else o for o in outcomes]
        if not outcome.ok:
            message = outcome.error["message"] if outcome.error else outcome.status
            said = f"step {index} ({step.describe()}): held at first, then not {when}: "
            return outcome.status, said + message, False
    return "passed", "", False


async def _went_on(replay: Replay, after: str, when: str, budget: Budget) -> tuple[str, str, bool]:
    """The page the app went on to by itself shows no error, else the replay fails
    (read once it has loaded: an error page still on its way shows none yet)."""
    try:
        await budget.child(CONFIRM_MS).run(replay.tab.page.wait_for_load_state())
    except (PlaywrightError, BudgetExceeded):
        pass  # (read as it is)
    errors = await errors_shown(replay.tab, budget.child(CONFIRM_MS))
    if not errors:
        return "passed", "", True
    went = f"the page the app went on to ({replay.tab.url[:200]})"
    return "failed", f"after {after}, {when}, {went} shows {errors[0][:200]!r}", True


async def _taken_back(replay: Replay, index: int, budget: Budget) -> str:
    """What step ``index`` left that the page no longer shows, read once: the box it
    ticked (or clicked), or the value it wrote back to the one before it; "" when it
    still holds or can't be told (not there, not read)."""
    step = replay.scenario.steps[index]
    kept = step.kept_state(replay.left_ticked.get(index))
    target = replay.values.target(kept) if kept is not None else None
    if kept is not None and target is not None:
        ticked = kept.args["kind"] == "checked"
        now = await expect.ticked_now(replay.tab, target, budget.child(CONFIRM_MS))
        if now is None or now == ticked:
            return ""
        return f"the box is {'not ' if ticked else ''}ticked"
    before, after = replay.left_value.get(index, (None, None))
    target = replay.values.target(step)
    if before is None or after is None or before == after or target is None:
        return ""  # (a write that showed nothing new: its own step tells)
    committed = replay.committed and index == replay.written
    if committed and not before:
        return ""  # an entry field the app emptied as it took what was entered
    now = await expect.value_now(replay.tab, target, budget.child(CONFIRM_MS))
    if now is None:  # gone: an editor the app took away as the edit was committed
        return await _put_back_where_it_stood(replay, index, before, after, budget)
    if now != before:
        return ""
    said = await _saying(replay, budget) if committed else ""
    if committed and not said:  # a line added, its form drawn anew, says nothing is wrong
        return ""
    return f"it shows {now[:200]!r} again, as before the step: the app put it back{said}"


async def _put_back_where_it_stood(
    replay: Replay, index: int, before: str, after: str, budget: Budget
) -> str:
    """Where the field step ``index`` wrote is gone from the page (an editor in a table's
    cell, taken away as its edit was committed): the place it stood in showing the value
    from before the edit again, not the one typed, is the app that put it back, said or
    not (a line added draws its form anew; it does not take the field away)."""
    places = replay.left_places.pop(index, None)
    if places is None:
        return ""
    try:
        shown = await expect.shown_where_it_was(places, budget.child(CONFIRM_MS))
    finally:
        await dispose(places)
    if shown is None or not shows_again(shown, before, after):
        return ""
    said = await _saying(replay, budget)
    return (f"the field is gone, and where it stood shows {before[:200]!r} again, not "
            f"{after[:200]!r}: the app put it back{said}")  # fmt: skip


async def _saying(replay: Replay, budget: Budget) -> str:
    """What the page says is wrong that it did not before the edit, as a verdict adds it."""
    shown = await errors_shown(replay.tab, budget.child(CONFIRM_MS))
    new = [e for e in shown if e not in replay.said_before]
    return f", saying {new[0][:200]!r}" if new else ""


def _when(held: SettleReport | None, at: str) -> str:
    """When checks were read again (``at``: where in the replay), as a verdict says it."""
    if held is None:
        return f"when read again {at}"
    return f"once the page had done what the steps before it left for later ({held})"
