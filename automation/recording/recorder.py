"""Record what a person does in a tab as scenario steps.

Two paths lead to a step, and both describe the element with identity.js, the very capture
replay compares against (:mod:`automation.browser.identity`):

- **The page's own events** (a person at a visible browser, or anything that makes real
  input events).  recorder.js is an init script of the tab's page, so it runs in every
  document and frame before the page's scripts, after every navigation; it is also run in
  the documents already loaded.  It listens on window in the capture phase (a page that
  stops propagation is still recorded), finds the element under the pointer through open
  shadow roots, climbs to the element a person acts on (the button around a ``<span>``,
  the link around an ``<img>``), takes its identity synchronously (the page may leave right
  after a click) and sends one event through one binding.  A password field's typed value
  never leaves the page: its fill names a secret (``${SECRET:PASSWORD}``) instead.
- **The dashboard's live view**, :meth:`Recorder.click_at`: the element at a point of the
  viewport is found over CDP and its identity taken (:mod:`automation.recording.pointed`),
  the step recorded, and only then the click made.  The page reports that click too; for
  a moment after it, its clicks and checks are not recorded a second time.

What becomes a step: a click (``double_click`` when the second click of a double click
lands on the same element), one ``fill`` per streak of typing in a field (each input event
replaces the streak's step), ``select_option`` with option labels, ``check`` for a click on
a checkbox, radio or switch (or its label), with the state the box shows once the app has
settled, read on the box or on the box found again by its identity when the app replaced
it (a step the recorder could not confirm keeps a ``note`` saying so), ``press`` for Enter,
Escape, Tab, arrows, PageUp/PageDown/Home/End and keys with Control/Alt/Meta, and
``navigate`` for a new top document no step caused: one that started within
:data:`CAUSE_WINDOW_MS` of a click, press, fill, select or check is that step's doing.
Left out: clicks that only put the caret in a text field (typing into it, or a click in
another field, comes next; a click elsewhere keeps it: a field that opens a calendar) or
open a select (the fill or select_option after them is the intent), a third click (it
selects text), arrows that move a field's caret, Enter in a multi-line field, events the
page's own scripts make, and same-document route changes (the step that caused them is
recorded).

What the person does in a popup the tab opens (and in its popups) is recorded too, with
the ``tabs`` steps that go there and back (:mod:`automation.recording.popups`).  A page
whose frame of another site hangs is listened to through a CDP session of the recorder's
own (:mod:`automation.recording.cdplisten`: Playwright's binding would wait for that frame
for good); what is done inside frames of other sites is then left out, and
:attr:`Recorder.left_out` says so.

``start`` on a recording recorder does nothing; ``start`` after ``stop`` raises
ActionInvalid (make a new recorder).  ``stop`` may be called again, and never fails because
the tab is gone: it returns what was recorded.  ``on_step`` is called from one task, in
order, and ``stop`` returns after it has seen every step.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Page

from automation.browser.effect import TOGGLE_STATE_JS
from automation.browser.frames import held_by, left_to_end, silent_note, unanswering
from automation.browser.identity import IDENTITY_JS, ElementIdentity, locate
from automation.browser.pwcall import call
from automation.browser.settle import with_not_sent
from automation.browser.snapshot import INTERACTIVE_ROLES, SNAPSHOT_JS
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import (
    ActionFailed,
    ActionInvalid,
    TabwrightError,
)
from automation.recording.cdplisten import CdpListener
from automation.recording.pageevents import (
    SEEN_JS,
    action_of,
    check_of,
    is_web,
    now_ms,
    page_line,
    with_intent,
)
from automation.recording.pointed import element_at, quietly
from automation.recording.popups import Popups
from automation.recording.replaytabs import TABS
from automation.recording.scenario import SENDING_ACTIONS, VALUE_ACTIONS, ScenarioStep
from automation.recording.sent import SENT_WITHIN_MS, first_write, polled

__all__ = ["CAUSE_WINDOW_MS", "RECORDER_JS", "OnRecorded", "Recorder"]

T = TypeVar("T")

log = logging.getLogger("automation.recording")

OnRecorded = Callable[[int, ScenarioStep], Awaitable[None]]  # index, step (added or replaced)

RECORDER_JS = with_not_sent(Path(__file__).with_name("recorder.js"))
CAUSE_WINDOW_MS = 1_500  # a navigation starting this soon after a step is that step's doing
_CAUSES = frozenset({"click", "double_click", "press", "fill", "select_option", "check"})
_QUIET_S = 0.3  # after click_at's own click, the page's report of it is not a second step
_SETTLE_S = 0.15  # after click_at's click on a checkbox, when its state is read
_UNREAD_BOX = (
    "the box could not be read after the click; recorded with the state the click should have made"
)
# For stop: flushing the documents, removing the scripts, the last notices.  Bounded, not
# tight: what the page sent before its flush is dropped once stop gives up, so a person's
# last act (a box ticked just before Resume) is not lost when the page is busy a while.
_STOP_MS = 10_000
# A third quick click on one of these is one more click (a stepper's "+" clicked four
# times in a second), not a selection of text: recorded too.
_COUNTED_ROLES = frozenset({"button", "link", "menuitem", "tab", "switch", "checkbox", "radio"})
# A write begun up to this long before a step's time is its own (the clocks of the page
# and of this process are the machine's; each is read a moment after the fact).
_SENT_EARLY_MS = 50
# A report that the browser refused to send a form comes a task after the click or key
# that asked it to (its clock the page's, the step's recorded as it happened).
_UNSENT_WITHIN_MS = 2_000
_NOT_SENT_NOTE = "left out: the browser refused to send the form (a field not valid)"


def _install_js(key: str, binding: str, *, encoded: bool, fresh: bool) -> str:
    """The registry (idempotent, for documents without it), then the listener (one per
    ``key`` and document)."""
    js = {True: "true", False: "false"}
    args = f"{key!r}, {binding!r}, {js[encoded]}, {IDENTITY_JS}, {js[fresh]}"
    return f"{SNAPSHOT_JS};\n({RECORDER_JS})({args});"


@dataclass
class _Mark:
    """What merging and navigation attribution need to know of a recorded step."""

    key: str  # the element's key in its document ("" when none)
    t_ms: float  # when it happened, epoch ms (the page's clock is the same machine's)


class Recorder:
    """``on_secret`` is called with what a person typed into a password (or one-time
    code) field, whole, once their typing there ended (their next act, the next page, the
    stop): the caller hides it from everything it shows (the page may put it in its
    address).  Steps keep only the ``${SECRET:…}`` that names it."""

    def __init__(
        self,
        tab: Tab,
        *,
        on_step: OnRecorded | None = None,
        on_secret: Callable[[str], None] | None = None,
        takes_checks: bool = True,
    ) -> None:
        self.tab = tab
        self.on_step = on_step
        self.on_secret = on_secret
        # Whether a check the person records (check_at) is kept: not where what they do
        # only says how a replay's step was done (its checks are its scenario's).
        self.takes_checks = takes_checks
        self._typed: tuple[str, str] | None = None  # (field's key, what was typed so far)
        self._steps: list[ScenarioStep] = []
        # Those of a click or a key whose form the browser refused to send: left out.
        self._not_sent: set[int] = set()
        self._marks: list[_Mark] = []
        # Its own names: two recorders (one after another) never share a binding.
        self._key = secrets.token_hex(4)
        self._binding = f"__tabwright_rec_{self._key}"
        self._disposables: list[Any] = []  # the binding and the init script, removed at stop
        # The pages a frame of another site held, listened to through CDP (cdplisten.py).
        self._listeners: dict[Page, CdpListener] = {}
        # What is not recorded, said to the person ("" when everything is).
        self.left_out = ""
        self._started = False
        self._stopped = False
        # Epoch ms from, to: the page's reports of click_at's own click (see click_at).
        self._quiet = (math.inf, math.inf)
        # The page's address as last known (an act's, a new document's): where the last
        # step led, once the next one comes (its led_to).
        self._at = ""
        self._notices: asyncio.Queue[tuple[int, ScenarioStep] | None] = asyncio.Queue()
        self._notifier: asyncio.Task[None] | None = None
        self._popups: Popups | None = None  # the popups it listens in too, and where it is

    @property
    def steps(self) -> list[ScenarioStep]:
        return [step for i, step in enumerate(self._steps) if i not in self._not_sent]

    @property
    def recording(self) -> bool:
        return self._started and not self._stopped

    # -- lifetime ----------------------------------------------------------------------

    async def start(self, *, budget: Budget | None = None) -> None:
        """Listen in every frame of the tab's page, now and after every navigation, and
        in the popups it opens (:mod:`automation.recording.popups`)."""
        if self._stopped:
            raise ActionInvalid("this recorder was stopped", hint="make a new Recorder")
        if self._started:
            return
        what = "start recording"
        budget = (budget or Budget(self.tab.config.action_timeout_ms)).child(label=what)
        self._check_alive()
        page = self.tab.page
        self._started = True
        if self.on_step is not None:
            self._notifier = asyncio.create_task(self._notify_loop(self.on_step))
        self._at = page.url
        self._popups = Popups(self.tab, opened=self._popup_opened, closed=self._popup_closed)
        if is_web(page.url):
            self._add(
                ScenarioStep("navigate", {"url": page.url}, url=page.url), _Mark("", now_ms())
            )
        try:
            silent = await self._listen_unless_held(page, what, budget)
            # Documents loaded before the init script existed.  One that goes away meanwhile
            # (a navigation under way) is replaced by a document the init script runs in.
            # The page's own document must have its listeners: a recorder that ran out of
            # time there would miss every act on the page as it stands, so it fails instead.
            for frame in _answering(page.frames, silent):
                install = frame.evaluate(self._script(page, fresh=False))
                await quietly(budget, install, out_of_time=frame is not page.main_frame)
            self._check_alive()
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> list[ScenarioStep]:
        """Stop listening (later events are ignored), deliver what is under way, and
        return the steps."""
        if not self._started or self._stopped:
            self._stopped = True
            return self.steps
        budget = Budget(_STOP_MS, label="stop recording")
        # A document's flush is answered once the events it sent before are handled.
        held = await self._in_documents("flush", budget)
        self._stopped = True
        where = self._popups.where if self._popups is not None else self.tab.page
        if self._steps and self._alive() and not where.is_closed():  # where the last step led
            self._led(where.url)
            self._sent(now_ms())
        self._not_polled()
        self._tell_typed()
        await self._in_documents("stop", budget)
        if self._popups is not None:  # a popup's listening, its "changed" read; the current tab
            await self._popups.stop(budget)
        closing = [disposable.close() for disposable in self._disposables]
        self._disposables.clear()
        for work in closing:
            if held:  # each close waits for every frame: it ends once that one answers
                left_to_end(work, "a recorder's script's removal")
            else:
                await quietly(budget, work)
        for listener in self._listeners.values():
            await listener.close(budget)
        await self._notices.put(None)
        if self._notifier is not None:
            try:
                await budget.run(asyncio.shield(self._notifier))
            except TabwrightError:
                self._notifier.cancel()  # a callback that hangs does not hold stop up
        return self.steps

    # -- the live view ------------------------------------------------------------------

    async def identity_at(self, x: float, y: float, *, budget: Budget) -> ElementIdentity:
        """The identity of the element a person acts on at (x, y), viewport CSS px of the
        top page; ActionFailed when nothing but the page's background is there."""
        identity, _ = await element_at(self.tab, x, y, budget)
        return identity

    async def click_at(
        self, x: float, y: float, *, button: str = "left", budget: Budget
    ) -> ScenarioStep:
        """Record a click on the element at (x, y), then click there.  A checkbox or radio
        (or its label) is recorded as the ``check`` the click makes.  Outside a recording
        it clicks all the same, and returns the step without keeping it."""
        if button not in ("left", "right", "middle"):
            raise ActionInvalid(f"click_at: button must be left, right or middle, not {button!r}")
        identity, checked = await element_at(self.tab, x, y, budget)
        url = self._at = self.tab.page.url
        if checked is not None and button == "left":
            step = ScenarioStep("check", {"checked": checked}, identity, url=url)
        else:
            args = {} if button == "left" else {"button": button}
            step = ScenarioStep("click", args, identity, url=url)
        if self.recording:
            step = self._add(step, _Mark("", now_ms()))
        # The page reports this click (and the change it makes) too: not a second step.
        self._quiet = (now_ms(), math.inf)
        try:
            click = self.tab.page.mouse.click(x, y, button=button)  # type: ignore[arg-type]
            await self._call("click", budget, click)
        finally:
            self._quiet = (self._quiet[0], now_ms() + _QUIET_S * 1000)
        if step.action == "check":
            step = await self._settled_check(step, budget)
        return step

    def opener_forms(self, popup: Page) -> str | None:
        """What the forms of ``popup``'s opener held as it opened (None: not read)."""
        return self._popups.opened_with(popup) if self._popups is not None else None

    def listens_in(self, tab: Tab) -> bool:
        """Whether the recording listens in ``tab``: its own, or a popup it opened."""
        return self.recording and self._listens_in(tab.page)

    async def went_to(self, tab: Tab, *, budget: Budget) -> None:
        """The person made ``tab`` (the recorded one, or a popup it opened) the current
        one by hand (the live view's tab strip): the ``tabs`` steps a replay takes to get
        there are recorded now, as acting there would record them, after what they did
        where they were (delivered first), so the recording goes on, or ends, there."""
        if not self.recording or not self._listens_in(tab.page):
            return
        await self._in_documents("flush", budget)
        if self.recording:
            self._move_to(tab.page, now_ms())
            self._at = tab.page.url

    async def check_at(
        self, x: float, y: float, *, budget: Budget, tab: Tab | None = None
    ) -> ScenarioStep:
        """Record a check of the element at (x, y) of ``tab`` (the recorded one, or a
        popup it opened) as it is now, clicking nothing (the live view's "check this"): a
        checkbox's state, a field's value, a short text being shown, else the element
        being there.  Kept like any step while recording."""
        tab = tab or self.tab
        identity, _ = await element_at(tab, x, y, budget)
        found = await locate(tab.page, identity, budget=budget.child(3_000, label="locate"))
        if found.element is None:
            raise ActionFailed(f"the element at ({x:g}, {y:g}) can't be found again to check")
        try:
            seen = await self._call("check", budget, found.element.evaluate(SEEN_JS))
        finally:
            with contextlib.suppress(PlaywrightError):
                await found.element.dispose()
        args = check_of(seen, interactive=identity.role in INTERACTIVE_ROLES)
        step = ScenarioStep("expect", args, identity, url=tab.page.url)
        if not step.needs_element:
            step = replace(step, identity=None)
        if self.recording and self._listens_in(tab.page):
            self._move_to(tab.page, now_ms())
            self._at = step.url
            step = self._add(step, _Mark("", now_ms()))
        return step

    async def _settled_check(self, step: ScenarioStep, budget: Budget) -> ScenarioStep:
        """A check made by click_at, with the state the box shows once the app settled
        (found again by its identity if the app replaced it)."""
        assert step.identity is not None
        await budget.run(asyncio.sleep(_SETTLE_S))
        found = await locate(
            self.tab.page, step.identity, budget=budget.child(3_000, label="locate")
        )
        state = None
        if found.element is not None:
            with contextlib.suppress(PlaywrightError):
                state = await budget.run(found.element.evaluate(TOGGLE_STATE_JS))
        if state is None:
            settled = replace(step, note=_UNREAD_BOX)
        else:
            settled = with_intent(replace(step, args={"checked": bool(state)}, intent=""))
        if self.recording and self._steps and self._steps[-1] is step:
            self._steps[-1] = settled
            if self._notifier is not None:
                self._notices.put_nowait((len(self._steps) - 1, settled))
        return settled

    # -- events from the page ----------------------------------------------------------

    def _on_event(self, source: dict[str, Any], event: Any) -> None:
        """One event from recorder.js; handled at once, in the order the page sent them."""
        page = source.get("page")
        if self._stopped or not isinstance(event, dict) or not self._listens_in(page):
            return
        typed = event.pop("typed", None)
        key = str(event.get("el", ""))
        if self._typed is not None and (event.get("kind") != "fill" or key != self._typed[0]):
            self._tell_typed()  # the typing there ended
        if isinstance(typed, str) and typed and event.get("kind") == "fill":
            self._typed = (key, typed)
        if event.get("kind") == "not_sent":
            self._left_out_unsent(float(event.get("t") or now_ms()))
            return
        if event.get("kind") == "load":
            frame = source.get("frame")
            top = source["top"] if "top" in source else frame is None or not frame.parent_frame
            self._on_load(page, top, event)
            return
        found = action_of(event)
        at_ms = float(event.get("t") or now_ms())
        if found is None or (
            found[0] in ("click", "check") and self._quiet[0] <= at_ms <= self._quiet[1]
        ):
            return
        action, args = found
        identity = None
        if isinstance(event.get("identity"), dict):
            # frame_url comes from the page: the frame may be gone by now (a click that left).
            try:
                identity = ElementIdentity.from_page(
                    event["identity"], frame_url=str(event.get("frame_url", ""))
                )
            except (ActionInvalid, ActionFailed) as exc:
                # Everything here came from the page: what can't be trusted is not kept.
                log.warning("a %s the page reported was not recorded: %s", found[0], exc)
        if identity is None and action != "press":
            # An element step without an identity could never be replayed: not kept, and
            # said where the page named an element it could not be described by.
            if key:
                log.warning("a %s the page reported was not recorded: its element could not "
                            "be described", found[0])  # fmt: skip
            return
        # The page sends the url and the warning: kept only as one line of sane length.
        url = page_line(event.get("url"), 8_000)
        url = url if is_web(url) else page.url
        # A step the recorder is not sure of says why (a box it could not read again).
        step = ScenarioStep(action, args, identity, url=url, note=page_line(event.get("warning")))
        mark = _Mark(str(event.get("el", "")), at_ms)
        detail = int(event.get("detail") or 0)
        if action == "click" and detail > 2 and identity and identity.role not in _COUNTED_ROLES:
            return  # a third click selects text; the first two are recorded
        self._move_to(page, at_ms)
        self._at = url
        last = self._steps[-1] if self._steps else None
        same = last is not None and self._marks[-1].key == mark.key != ""
        if (
            action == "click"
            and detail == 2
            and same
            and last.action == "click"
            and not last.args
            and not args
        ):
            merge, step = True, replace(step, action="double_click")
        else:  # consecutive changes of one field are one step: its final value
            merge = same and action in ("fill", "select_option") and last.action == action
        self._add(step, mark, replace_last=merge)

    def _left_out_unsent(self, at_ms: float) -> None:
        """The latest click or key, the page reports, the browser refused to send its form
        for (a required field empty) is left out: it sent nothing, and replayed it would
        fail (form_not_sent) where the person's next try, the field fixed, passes.  The
        report comes a task after it, and a busy browser runs the keys typed meanwhile
        first (input before timers): fills recorded since are passed over.  (One a moment
        older than the report is not that one.)"""
        index = len(self._steps) - 1
        while index >= 0 and self._steps[index].action in VALUE_ACTIONS:
            index -= 1
        if index < 0 or self._steps[index].action not in SENDING_ACTIONS:
            return
        if not 0 <= at_ms - self._marks[index].t_ms <= _UNSENT_WITHIN_MS or index in self._not_sent:
            return
        self._not_sent.add(index)
        if self._notifier is not None:
            step = replace(self._steps[index], note=_NOT_SENT_NOTE)
            self._notices.put_nowait((index, step))

    def _tell_typed(self) -> None:
        typed, self._typed = self._typed, None
        if typed is not None and self.on_secret is not None:
            try:
                self.on_secret(typed[1])
            except Exception:
                log.exception("a typed secret could not be hidden")

    def _on_load(self, page: Page, top: bool, event: dict[str, Any]) -> None:
        """A new top document: a navigate step, unless the last step caused it.  Only in
        the page of the last step: a popup's documents before the person acts there are
        its opening's (the step that opened it), and the opener's meanwhile its own."""
        url = str(event.get("location", ""))
        if not top or not is_web(url):
            return
        if self._popups is not None and page is not self._popups.where:
            return
        started = float(event.get("started") or now_ms())
        if self._steps and self._steps[-1].action in _CAUSES:
            # A little slack below zero: the page's clock and ours are read apart.
            if -100 <= started - self._marks[-1].t_ms <= CAUSE_WINDOW_MS:
                self._at = url  # where that step led
                return
        self._add(ScenarioStep("navigate", {"url": url}, url=url), _Mark("", started))
        self._at = url

    def _listens_in(self, page: object) -> bool:
        return self._popups.knows(page) if self._popups is not None else page is self.tab.page

    def _move_to(self, page: Page, at_ms: float) -> None:
        """The ``tabs`` steps that take a replay to ``page``, when the last step was in
        another page (a popup, its opener)."""
        if self._popups is not None:
            for args in self._popups.moves_to(page):
                self._add(ScenarioStep(TABS, args), _Mark("", at_ms))

    async def _listen_in(self, page: Page, what: str, budget: Budget) -> None:
        """The binding and the listener's init script on ``page`` (each its own: a popup's
        first document may be loaded before a context's init scripts reach it)."""
        binding = page.expose_binding(self._binding, self._on_event)
        self._disposables.append(await self._call(what, budget, binding))
        script = page.add_init_script(self._script(page, fresh=True))
        self._disposables.append(await self._call(what, budget, script))

    async def _listen_unless_held(self, page: Page, what: str, budget: Budget) -> set[Frame]:
        """:meth:`_listen_in` ``page``, or, when a frame that does not answer holds that,
        listen through CDP (:meth:`_listen_past`): the frames left out.  Playwright puts
        the binding and the init script into every frame and waits for each (not for a
        frame still loading: it has nothing to wait for yet): a widget whose script hangs
        held the start, and the person a pause tells only once their recorder is ready,
        for the whole budget."""
        listening = asyncio.ensure_future(self._listen_in(page, what, budget))
        asking = asyncio.ensure_future(unanswering(page.frames, budget))
        try:
            await asyncio.wait({listening, asking}, return_when=asyncio.FIRST_COMPLETED)
            if not listening.done():
                silent = await asking
                if silent and not listening.done():
                    listening.cancel()
                    await self._listen_past(page, next(iter(silent)), what, budget)
                    return silent
            await listening
            return set()
        finally:
            for task in (listening, asking):
                if not task.done():
                    task.cancel()
                elif not task.cancelled():
                    task.exception()  # (raised above when it mattered)

    async def _listen_past(self, page: Page, holding: Frame, what: str, budget: Budget) -> None:
        """Listen in ``page``'s own renderer through a CDP session of its own: its
        documents and its frames of the same site; frames of other sites are left out, and
        :attr:`left_out` says so, naming ``holding`` (a frame that does not answer)."""
        listener = self._listeners[page] = CdpListener(page, f"{self._binding}c", self._on_event)
        await listener.open(self._script(page, fresh=True), what, budget)
        self.left_out = (
            f"what is done inside frames of other sites is not recorded: {silent_note(holding)}"
        )
        log.warning("recording past a frame: %s", self.left_out)

    def _script(self, page: Page, *, fresh: bool) -> str:
        """The listener's script for ``page``'s documents, through its binding."""
        listener = self._listeners.get(page)
        binding = self._binding if listener is None else listener.binding
        return _install_js(self._key, binding, encoded=listener is not None, fresh=fresh)

    async def _popup_opened(self, popup: Page) -> None:
        """Listen in a popup: in its documents from now on, in those loaded already, and
        in the one it loads first (installed once per document)."""
        budget = Budget(_STOP_MS, label="record in a popup")
        try:
            silent = await self._listen_unless_held(popup, "record in a popup", budget)
        except TabwrightError as exc:  # it closed meanwhile, or the browser is busy
            log.warning("a popup's recording did not start: %s", exc)
            return
        for loaded in (False, True):
            if loaded:
                await quietly(budget, popup.wait_for_load_state("domcontentloaded"))
            for frame in _answering(popup.frames, silent) if self.recording else ():
                await quietly(budget, frame.evaluate(self._script(popup, fresh=False)))

    def _popup_closed(self, popup: Page, opener: Page) -> None:
        """The popup of the last step closed itself (its Save): back to its opener, and
        whether the popup changed the opener's forms (read, then the step replaced)."""
        if not self.recording or self._popups is None:
            return
        self._at = ""  # the step that closed it led nowhere there
        args = {"op": "opener", "closed": True, "changed": False}
        self._add(ScenarioStep(TABS, args), _Mark("", now_ms()))
        self._at = opener.url
        self._popups.spawn(self._changed(len(self._steps) - 1, popup, opener))

    async def _changed(self, index: int, popup: Page, opener: Page) -> None:
        assert self._popups is not None
        if await self._popups.changed(popup, opener):
            step = self._steps[index]
            self._steps[index] = replace(step, args={**step.args, "changed": True})
            if self._notifier is not None:
                self._notices.put_nowait((index, self._steps[index]))

    def _add(self, step: ScenarioStep, mark: _Mark, *, replace_last: bool = False) -> ScenarioStep:
        """Keep ``step`` (with its intent in words, what the person meant): the step kept."""
        step = with_intent(step)
        if replace_last and self._steps:
            self._steps[-1], self._marks[-1] = step, mark
        else:
            self._led(self._at)  # the last step led where the page is as this one comes
            self._sent(mark.t_ms)  # ... and sent what the page sent until then
            self._steps.append(step)
            self._marks.append(mark)
        if self._notifier is not None:
            self._notices.put_nowait((len(self._steps) - 1, step))
        return step

    def _led(self, url: str) -> None:
        """The last step led to ``url`` (kept when it is a web address, one sane line)."""
        if self._steps and not self._steps[-1].led_to and is_web(url):
            self._steps[-1] = replace(self._steps[-1], led_to=page_line(url, 8_000))

    def _sent(self, until_ms: float) -> None:
        """The last step (a click, a key) sent the first write of the page's own begun
        after it, before ``until_ms`` and within SENT_WITHIN_MS (kept as its ``sent``)."""
        if not self._steps or self._steps[-1].action not in SENDING_ACTIONS:
            return
        begun = self._marks[-1].t_ms - _SENT_EARLY_MS  # (the page's clock, read first)
        until = min(until_ms, begun + SENT_WITHIN_MS) / 1000
        sent = first_write(self.tab.log, 0, self.tab.page.url, from_s=begun / 1000, to_s=until)
        if sent:
            self._steps[-1] = replace(self._steps[-1], sent=sent)

    def _not_polled(self) -> None:
        """The steps' ``sent`` the page also sent away from every step (a poll that
        writes) left out: not theirs."""
        url = self.tab.page.url if self._alive() and not self.tab.page.is_closed() else ""
        begun = [(mark.t_ms - _SENT_EARLY_MS) / 1000 for mark in self._marks]
        for index, step in enumerate(self._steps):
            if step.sent and polled(self.tab.log, step.sent, url or step.url, begun):
                self._steps[index] = replace(step, sent="")

    async def _notify_loop(self, on_step: OnRecorded) -> None:
        """One task calls on_step, so the callback sees the steps in order."""
        while (notice := await self._notices.get()) is not None:
            try:
                await on_step(*notice)
            except Exception:  # the caller's callback: its failure must not end recording
                log.exception("on_step failed for step %d", notice[0])

    # -- helpers -----------------------------------------------------------------------

    async def _in_documents(self, op: str, budget: Budget) -> bool:
        """Call the listener's ``op`` in every document that has one, but in the frames
        that do not answer (one that hangs sends nothing meanwhile); whether there were
        any."""
        key = f"__tabwright_recorder_{self._key}"
        pages = self._popups.pages if self._popups is not None else [self.tab.page]
        held = False
        for page in pages if self._alive() else ():
            silent = await quietly(budget, unanswering(page.frames, budget)) or set()
            held = held or bool(silent)
            listener = self._listeners.get(page)
            for frame in _answering(page.frames, silent):
                answer = await quietly(budget, frame.evaluate(f"window[{key!r}]?.{op}()"))
                if listener is not None and isinstance(answer, str):  # a flush's mark
                    await quietly(budget, listener.arrived(answer))
        return held

    def _alive(self) -> bool:
        return self.tab.core.alive

    def _check_alive(self) -> None:
        self.tab.core.check_alive()

    async def _call(self, what: str, budget: Budget, work: Awaitable[T]) -> T:
        return await call(what, budget, work, gone=lambda: not self._alive())


def _answering(frames: list[Frame], silent: set[Frame]) -> list[Frame]:
    """``frames`` but those in ``silent`` and those inside them."""
    return [frame for frame in frames if frame not in silent and not held_by(frame, silent)]
