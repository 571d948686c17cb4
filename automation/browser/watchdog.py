"""A page whose own script hangs: told from a slow page when a call on it runs out, stopped,
and said so.

A script of the page's that never yields (``while(true){}`` in a click handler, in a timer,
in the document's own ``<script>`` as it loads) wedges every later call on the tab: the
input Playwright sends, its evaluations and the snapshot all wait behind it, and each runs
out of its budget in turn.  So when a tab's call ends out of time or cancelled
(:func:`watched`), the tab asks the page one cheap question (``Runtime.evaluate`` of a
constant) on the tab's own CDP session (:meth:`TabCore.cdp_session`, made when the tab was).
That session was attached before any hang, which is what lets a command through to a
spinning page: measured on Chromium 156, ``Runtime.terminateExecution`` sent on it frees a
page spinning in a click handler or in its loading document within ~10 ms (cross-site
too, after the navigation moved the tab to another renderer), and the next snapshot and
click work.

The probe asks the browser too (``Target.getTargetInfo`` on the same session, answered by
the browser process, not the page): when the connection itself is late (drowned by a flood
of messages from another page, say), that answer is late as well, and a calm page must
not be taken for a hung one.

- The browser does not answer within :data:`CONNECTION_MS`: the connection is slow, the
  page can't be judged.  The call's own error stands; nothing is stopped.  (The page is
  judged against the browser's answer, not against the clock: on a loaded machine this
  process, the driver and the browser may all answer seconds late, a calm page too.)
- The page answers within :data:`PROBE_MS` of the browser: it is alive, only slow (a fetch
  not answered yet, a text that never came).  The call's own error stands; nothing is stopped.
- It does not: its running script is terminated and the call raises :class:`PageHung`
  (a :class:`BudgetExceeded`: the budget did run out) or, when it was cancelled,
  :class:`Cancelled`, each saying the page's script hung and was stopped.  When the page
  still does not answer after that (a script that hangs again at once), the error says so.

A call cancelled as a task (not through its budget) is not held up: the probe runs beside,
and the tab is usable again for the next call.  Nothing is sent while nothing hangs: the
session is the one every tab already has, the probe goes out only after a call ran out.
Probes and what they found are counted in :data:`automation.metrics.PAGE_PROBES`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar, cast

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame

from automation.browser.frames import falls_silent, silent_note
from automation.errors import ActionFailed, BudgetExceeded, Cancelled, PageHung, TabwrightError
from automation.metrics import PAGE_PROBES

if TYPE_CHECKING:
    from automation.browser.core import TabCore
    from automation.browser.snapshot import RefEntry
    from automation.browser.tab import Tab

__all__ = ["CONNECTION_MS", "PROBE_MS", "TERMINATE_WAIT_MS", "Watchdog", "watched"]

log = logging.getLogger("automation.browser")

# How long a page may take to answer the probe before its script is taken as hung: far
# above what a page with a free main thread needs (a few ms), even on a loaded machine.
PROBE_MS = 500
# How long the browser's own answer beside the probe may take before the connection is
# taken as too slow to judge the page by (a machine this busy answers late as a whole).
CONNECTION_MS = 3_000
# How long the page gets to confirm the terminate (it answers at once when it gets it).
TERMINATE_WAIT_MS = 1_000

ALIVE, STOPPED, STILL_HUNG, SLOW = "alive", "stopped", "still_hung", "slow"

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
T = TypeVar("T")

# The watchdogs whose call the current task is inside: a call made there is part of it.
_WATCHING: ContextVar[tuple[int, ...]] = ContextVar("tabwright_watching", default=())


class Watchdog:
    """One tab's: probes its page after a call ran out, stops a hung script."""

    def __init__(self, core: TabCore) -> None:
        self.core = core
        self.stopped = 0  # hung scripts stopped in this tab
        self._found = ALIVE  # what the last stop found
        self._lock = asyncio.Lock()  # one probe at a time: calls that ran out together
        self._beside: set[asyncio.Task[object]] = set()

    async def judge(self, error: BudgetExceeded | Cancelled, *, since: int) -> TabwrightError:
        """The error a call that ended with ``error`` raises: ``error`` itself when the page
        answers (or can't be asked), else one saying its hung script was stopped.  ``since``
        is :attr:`stopped` as the call began: a hang another call stopped meanwhile was this
        call's too."""
        async with self._lock:
            found = self._found if self.stopped > since else await self._probe_and_stop()
        if found == ALIVE:
            return error
        what = (
            "the page's script was hung (it answered nothing) and was stopped; the tab works again"
            if found == STOPPED
            else "the page's script was hung and was told to stop, but the page still "
            "does not answer"
        )
        hint = (
            "the page's own script never yielded, whether this action or the page set it "
            "off; take a new snapshot before going on, and expect the same action to hang "
            "the page again"
            if found == STOPPED
            else "the page hangs again as soon as it is stopped: open it anew or use another tab"
        )
        if isinstance(error, Cancelled):
            return type(error)(f"{error.message}; {what}", hint=hint)
        return PageHung(f"{error.message}; {what}", hint=hint)

    def judge_beside(self) -> None:
        """For a call cancelled as a task: the probe (and stop) without holding it up."""
        task = asyncio.ensure_future(self._judged_beside())
        self._beside.add(task)
        task.add_done_callback(self._done_beside)

    def _done_beside(self, task: asyncio.Task[object]) -> None:
        self._beside.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("could not look at a page after a cancelled call: %s", task.exception())

    async def _judged_beside(self) -> None:
        async with self._lock:
            await self._probe_and_stop()

    async def _probe_and_stop(self) -> str:
        """ALIVE, STOPPED or STILL_HUNG; ALIVE also when the page can't be asked (a closed
        tab, one that is no CDP target): there is nothing to stop."""
        session = self.core.cdp
        if session is None or not self.core.alive:
            return ALIVE
        answered = await self._answers()
        if answered is not False:
            found = ALIVE if answered else SLOW
            PAGE_PROBES.inc(found=found)
            if not answered:
                log.info("the browser's connection answered late; the page was not judged")
            return ALIVE
        try:
            async with asyncio.timeout(TERMINATE_WAIT_MS / 1000):
                await session.send("Runtime.terminateExecution")
        except (TimeoutError, PlaywrightError) as exc:
            log.warning("a hung page did not take the terminate: %s", exc)
        self.stopped += 1
        found = self._found = STILL_HUNG if await self._answers() is False else STOPPED
        PAGE_PROBES.inc(found=found)
        log.warning("the page of a tab hung (%s): %s", found, self.core.page.url[:200])
        return found

    async def _answers(self) -> bool | None:
        """Whether the page's main world answers a constant within :data:`PROBE_MS` of the
        browser answering beside it; None when the browser's own answer takes longer than
        :data:`CONNECTION_MS` (the connection is slow, the page can't be judged).  An
        error answer (the page went away meanwhile) counts as answered: nothing hangs
        there."""
        session = self.core.cdp
        assert session is not None
        page = asyncio.ensure_future(session.send("Runtime.evaluate", {"expression": "0"}))
        browser = asyncio.ensure_future(session.send("Target.getTargetInfo"))
        try:
            await asyncio.wait({browser}, timeout=CONNECTION_MS / 1000)
            if not browser.done():
                return True if page.done() else None
            if not page.done():
                await asyncio.wait({page}, timeout=PROBE_MS / 1000)
            return page.done()
        finally:
            for asked in (page, browser):
                if not asked.done():
                    asked.cancel()
                elif not asked.cancelled():
                    asked.exception()  # an error answer is an answer: nothing to raise


# A Tab call named as the action (the tool) that makes it: what a model and a person know.
_TOOL_OF = {"press_key": "press", "set_checked": "check", "set_input_files": "upload"}


def watched(method: F) -> F:
    """Make a :class:`~automation.browser.tab.Tab` call end as :meth:`Watchdog.judge` says
    when it runs out of time or is cancelled; a call made inside another of the tab's is
    left to the outer one.  A call on a ref of a child frame (its ``ref``, ``source``,
    ``target`` or a field's) ends as soon as that frame is found not answering
    (:func:`unless_silent`), not when its budget runs out."""
    signature = inspect.signature(method)
    names = [name for name in _REF_PARAMETERS if name in signature.parameters]

    @functools.wraps(method)
    async def guarded(self: Tab, *args: Any, **kwargs: Any) -> Any:
        watchdog = self.watchdog
        inside = _WATCHING.get()
        if id(watchdog) in inside:
            return await method(self, *args, **kwargs)
        token = _WATCHING.set((*inside, id(watchdog)))
        since = watchdog.stopped
        try:
            if names and (held := _frames_of(self, signature.bind(self, *args, **kwargs), names)):
                said = _TOOL_OF.get(method.__name__, method.__name__)
                return await unless_silent(method(self, *args, **kwargs), held, said)
            return await method(self, *args, **kwargs)
        except (BudgetExceeded, Cancelled) as exc:
            judged = await watchdog.judge(exc, since=since)
            if judged is exc:
                raise
            raise judged from None
        except asyncio.CancelledError:
            watchdog.judge_beside()
            raise
        finally:
            _WATCHING.reset(token)

    return cast(F, guarded)


# The parameters of a tab's call that name an element by its ref (fill_form's fields: each
# field's).
_REF_PARAMETERS = ("ref", "source", "target", "fields")


def _frames_of(tab: Tab, bound: inspect.BoundArguments, names: list[str]) -> dict[Frame, RefEntry]:
    """The child frames holding the refs the call names, each with the first such ref's
    entry (a ref that names nothing is the call's own business to refuse)."""
    held: dict[Frame, RefEntry] = {}
    refs: list[object] = []
    for name in names:
        value = bound.arguments.get(name)
        if isinstance(value, list | tuple):
            refs.extend(field.get("ref") for field in value if isinstance(field, dict))
        else:
            refs.append(value)
    for ref in refs:
        if not isinstance(ref, str) or not ref:
            continue
        try:
            entry = tab.core.entry(ref)
            frame = tab.core.frame_of(entry) if entry.frame else None
        except TabwrightError:
            continue
        if frame is not None:
            held.setdefault(frame, entry)
    return held


async def unless_silent(work: Awaitable[T], held: dict[Frame, RefEntry], what: str) -> T:
    """``work`` on elements of child frames, ended with ActionFailed as soon as one of those
    frames is found not answering (:func:`falls_silent`): a frame that hung after the
    snapshot would otherwise hold the call until its budget ran out, and say only that."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(falls_silent(list(held)))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        for pending in (task, watch):
            pending.cancel()
        await asyncio.gather(task, watch, return_exceptions=True)
        raise
    if task.done():
        watch.cancel()
        return task.result()
    silent = watch.result()
    if silent is None:  # none left to ask, or the page itself: the call's own end says
        return await task
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    raise ActionFailed(
        f"{what} {held[silent].describe()}: {silent_note(silent)}",
        hint="the frame's own script is busy or hung: act on the page around it, or take a "
        "new snapshot later",
    )
