"""A page's child frames that do not answer: left out, not waited for.

A frame from another site runs in a renderer process of its own, so its script can be
busy or hung (a chat widget caught in an endless loop, an ad) while the page around it
answers as ever; a frame still loading its document has nothing to answer with yet.  A
question put to such a frame waits for the caller's whole budget: a snapshot would show
the agent nothing of the page, a replay's search for an element in no frame would run its
step out of time, a picture would never be taken, a check would never read the page, for
a widget nobody asked about.  So a question to every frame of a page is preceded by one
that costs nothing, put to all its child frames at once (:func:`unanswering`): those
that do not answer it within :data:`FRAME_ANSWER_MS` of the page's main frame answering
it (asked beside them) are left out of the question, and the caller says so where it
answers.  Timed from the main frame's answer, not from the question: on a machine or in a
browser slow to answer anything (a loaded machine, the page's own script busy, which holds
the frames of its site as well) a frame is judged beside its page, as the watchdog judges
a page beside the browser.  The main frame is never left out: a page whose own document
hangs is a page that hangs, and the caller's budget says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable, Iterable

from playwright.async_api import ElementHandle, Frame, Page
from playwright.async_api import Error as PlaywrightError

from automation.budget import Budget
from automation.errors import TabwrightError

__all__ = [
    "FOCUS_ON_FRAME_JS",
    "FRAME_ANSWER_MS",
    "HOLDS_FOCUS_JS",
    "falls_silent",
    "held_by",
    "left_to_end",
    "silent_at",
    "silent_focus",
    "silent_note",
    "unanswering",
]

log = logging.getLogger(__name__)

# A child frame's answer to a question that costs nothing, after its page's main frame's.
FRAME_ANSWER_MS = 3_000
FRAME_RECHECK_MS = 300  # ... from a frame that did not answer the last one
# The frames that did not answer their last question (forgotten with their page).
_silent: weakref.WeakSet[Frame] = weakref.WeakSet()


async def unanswering(frames: Iterable[Frame], budget: Budget) -> set[Frame]:
    """The child frames of ``frames`` that did not answer within FRAME_ANSWER_MS of their
    page's main frame (asked all at once, the main frame beside them: one bound, however
    many there are; a frame that did not answer last time is given FRAME_RECHECK_MS, so
    that a page with a hung widget costs each question that once).  A frame that went
    away meanwhile is not among them (its caller finds it gone); BudgetExceeded or
    Cancelled when ``budget`` ends first (a main frame that does not answer)."""
    asked = [frame for frame in frames if frame.parent_frame is not None]
    if not asked:
        return set()
    main = asked[0].page.main_frame
    answered = await budget.run(_asked(main, asked))
    silent = {frame for frame, yes in zip(asked, answered, strict=True) if not yes}
    _silent.difference_update(asked)
    _silent.update(silent)
    return silent


async def _asked(main: Frame, frames: list[Frame]) -> list[bool]:
    """Whether each of ``frames`` answered, asked together with ``main``."""

    async def page() -> None:
        with contextlib.suppress(PlaywrightError):  # going away: the frames' answers tell
            await main.evaluate("0")

    answered = asyncio.ensure_future(page())
    try:
        return list(await asyncio.gather(*(_answers(f, answered) for f in frames)))
    finally:
        answered.cancel()


async def _answers(frame: Frame, page_answered: asyncio.Future[None]) -> bool:
    limit_s = (FRAME_RECHECK_MS if frame in _silent else FRAME_ANSWER_MS) / 1000
    asked = asyncio.ensure_future(frame.evaluate("0"))
    try:
        await asyncio.wait({asked, page_answered}, return_when=asyncio.FIRST_COMPLETED)
        if not asked.done():
            await asyncio.wait({asked}, timeout=limit_s)
        if not asked.done():
            return False
        if not asked.cancelled():
            asked.exception()  # gone, or going (an error answer): not a frame that hangs
        return True
    finally:
        if not asked.done():
            asked.cancel()


async def silent_at(page: Page, x: float, y: float, budget: Budget) -> Frame | None:
    """The frame under the viewport point (x, y) of ``page`` that does not answer, if one
    does not: the one the browser would hand a click or a wheel there, whose answer (the
    input's acknowledgement) a frame that hangs never gives.  Each frame under the point,
    from the page's down, is asked as :func:`unanswering` asks."""

    async def holds_point(owner: ElementHandle) -> bool:
        box = await budget.run(owner.bounding_box())
        if box is None:
            return False
        return 0 <= x - box["x"] < box["width"] and 0 <= y - box["y"] < box["height"]

    async def under_point(frame: Frame) -> Frame | None:
        return await _child_whose(frame, holds_point, budget)

    return await _silent_on_the_way(page, under_point, budget)


async def silent_focus(page: Page, budget: Budget) -> Frame | None:
    """The frame holding the keyboard focus of ``page`` when it does not answer: the one
    the browser hands a key to, whose acknowledgement a frame that hangs never gives.  Each
    frame on the way to the focus, from the page's down, is asked as :func:`unanswering`
    asks; a page with no child frames costs nothing, one whose focus is on none of them one
    question."""

    async def holds_focus(owner: ElementHandle) -> bool:
        return bool(await budget.run(owner.evaluate(HOLDS_FOCUS_JS)))

    async def focused(frame: Frame) -> Frame | None:
        if not frame.child_frames:
            return None
        try:
            if not await budget.run(frame.evaluate(FOCUS_ON_FRAME_JS)):
                return None
        except PlaywrightError:
            return None  # going away: the key goes nowhere, as it would
        return await _child_whose(frame, holds_focus, budget)

    return await _silent_on_the_way(page, focused, budget)


# The element with the focus of a document, through open shadow roots.
_FOCUSED_IN_JS = """(doc) => {
  let a = doc.activeElement;
  while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
  return a;
}"""
HOLDS_FOCUS_JS = f"(el) => ({_FOCUSED_IN_JS})(el.ownerDocument) === el"
FOCUS_ON_FRAME_JS = f'() => ["IFRAME", "FRAME"].includes(({_FOCUSED_IN_JS})(document)?.tagName)'


async def _silent_on_the_way(
    page: Page, into: Callable[[Frame], Awaitable[Frame | None]], budget: Budget
) -> Frame | None:
    """The first frame that does not answer on the way down from ``page``'s main frame,
    each step taken by ``into`` (the child frame an input would go to, or None)."""
    frame = page.main_frame
    while (inner := await into(frame)) is not None:
        if await unanswering([inner], budget):
            return inner
        frame = inner
    return None


async def _child_whose(
    frame: Frame, holds: Callable[[ElementHandle], Awaitable[bool]], budget: Budget
) -> Frame | None:
    """The first child frame of ``frame`` whose element (asked in ``frame``'s document,
    which answers) ``holds``; one gone meanwhile is passed over."""
    for child in frame.child_frames:
        try:
            owner = await budget.run(child.frame_element())
            try:
                found = await holds(owner)
            finally:
                await budget.run(owner.dispose())
        except PlaywrightError:
            continue  # gone meanwhile
        if found:
            return child
    return None


async def falls_silent(frames: list[Frame]) -> Frame | None:
    """The first of ``frames`` (child frames) found not answering, asked every
    FRAME_ANSWER_MS as :func:`unanswering` asks; None once none is left to ask (gone with
    their page) or when the page's main frame itself does not answer (its hang is the
    page's, for its watchdog to tell).  Runs until then: an action on an element of a
    frame races it (:func:`automation.browser.watchdog.watched`)."""
    while True:
        await asyncio.sleep(FRAME_ANSWER_MS / 1000)
        live = [frame for frame in frames if not frame.is_detached()]
        if not live:
            return None
        try:
            silent = await unanswering(live, Budget(2 * FRAME_ANSWER_MS, label="ask the frames"))
        except TabwrightError:  # the main frame did not answer either
            return None
        if silent:
            return next(frame for frame in live if frame in silent)


def silent_note(frame: Frame) -> str:
    """What is said where a frame that did not answer is left out."""
    return (
        f"the frame {frame.url[:200]} did not answer within {FRAME_ANSWER_MS} ms of the "
        "page around it (its page is loading, busy or hung)"
    )


def held_by(frame: Frame, silent: set[Frame] | frozenset[Frame]) -> bool:
    """Whether a frame that holds ``frame`` (its parent, or one above) is in ``silent``:
    what ``frame`` is in the page can only be asked of that one."""
    while (frame := frame.parent_frame) is not None:  # type: ignore[assignment]
        if frame in silent:
            return True
    return False


# Work a frame that does not answer holds, left to end by itself (see left_to_end).
_left: set[asyncio.Task[object]] = set()


def left_to_end(work: Awaitable[object], what: str) -> None:
    """Let ``work`` that a frame which does not answer holds (a script's removal, a
    session's detach: each waits for every frame it reaches) end by itself, once the frame
    answers or goes with its page, instead of holding its caller; kept from the garbage
    collector meanwhile, its failure logged as ``what``'s."""
    task = asyncio.ensure_future(work)
    _left.add(task)
    task.add_done_callback(lambda done: _ended(done, what))


def _ended(task: asyncio.Task[object], what: str) -> None:
    _left.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.info("%s did not end: %s", what, task.exception())
