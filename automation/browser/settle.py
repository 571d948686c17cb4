"""After an action, wait for what it set off, and only for that.

The next snapshot must show the action's effect: the page a link led to, the rows a
"Load" button fetched, the dialog a click opened.  A fixed pause after every action is
wrong both ways: too long when the action set nothing off (most clicks and fills), too
short when a request takes longer than the pause.  So each action is watched:

- Before it runs, :meth:`Settler.arm` notes which requests the page has started so far
  and arms a MutationObserver in the page's main document, which also hears the page ask
  for a navigation (the Navigation API's ``navigate`` event, a form submitted).
- After it returns, :meth:`Settler.settle` asks the page (one round trip) whether the DOM
  changed, a navigation was asked for or a short timer is still due, and looks at the
  requests started meanwhile.
  The round trip also orders things: the browser reports a request a handler started
  before it answers a later evaluation on the same page.  Nothing started and nothing
  changed: it returns at once (``nothing pending``), no sleep.
- A click costs neither round trip of its own (:meth:`Settler.arm_early`): the arm is sent
  beside the click's first step (which takes and proves the ref's element), not waited
  for, and its answer comes in the same round trip as the click, once the click's event
  on the ref's element has been handled.  It is decided right there when the click has
  no default action still to come (a link, a form's button, a box, a label...) and the
  page left nothing for a later task: no short timer or frame due, nothing handed over
  (a message posted, a stream opened, a scroll, a history traversal: pending.js counts
  them).  Otherwise it looks a task later, when the default action has run; when the
  page handed work over (then, or in a timer or frame it scheduled), once the next frame
  and a task after it have run (a scroll's events come with the frame: a task alone may
  come first when the browser draws late), up to three frames while it keeps handing
  over, and then, or when no frame comes, the answer is not idle but left to the quiet
  wait below.  When that answer is not
  back as the click returns (the page was busy, or the event went elsewhere), the probe
  is sent as after any action, and the first of the two answers counts.
- A click whose own handling changed the DOM, and left nothing for later as above, is
  settled in that same answer: it comes one task after the next frame (where size and
  intersection observers report, and the frame's own callbacks run), and when nothing
  changed, was scheduled or handed over meanwhile and no request or navigation started,
  the page has stopped watching and the settle returns (``settled``) with no quiet wait
  and no stop.  Only when the page was still until the click's event and none of its
  intervals ran since the arm (a ticker's change is not the click's).  A probe sent
  meanwhile waits for that same answer.
- Otherwise it waits, in this order and bounded: a navigation to commit and its document
  to be parsed (:data:`NAVIGATION_WAIT_MS`), then ``load``; the requests the action
  started (and those started after them, until the page is quiet) to be answered; then
  the DOM to be quiet for :data:`QUIET_MS` (measured in the page, one round trip, capped
  at :data:`QUIET_MAX_MS`: a page that animates forever costs no more than a fixed pause).
  When the action started no request, :data:`SHORT_QUIET_MS` of quiet is enough once
  every short timer, animation frame and idle callback the page scheduled since the
  action began has run, and it opened no web socket or event stream: pending.js, an
  init script, counts them (a click whose handler changes the DOM
  at once is answered in a few tens of milliseconds, not a hundred).  So is a new
  document's, once loaded (its scripts and styles have run by then), when it asked for
  nothing a script answers later (a fetch, an XHR, an event stream, a web socket):
  pending.js counts its timers and frames from the document's start.
  Requests, load and quiet together get :data:`SETTLE_BOUND_MS`, taken from the caller's
  budget; a navigation commit starts a new bound for the page it brought.

Only requests that change what a snapshot shows are waited for: documents, scripts,
stylesheets, fetch and XHR.  Images, fonts and media are not (the accessibility tree has
their alt text already), nor event streams, web sockets and beacons, nor a fetch whose
answer turns out to be an event stream: those never end.  A long poll started by the
action looks like a slow fetch and is waited for until the bound.  Requests started
before the action (the page's own polling) are never waited for.

What was waited for comes back as a :class:`SettleReport` (and is logged at debug):
why it returned, how long it waited, how many requests were answered or left pending,
whether the page navigated.  Every action of a tab that can set something off settles
before it returns (:func:`~automation.browser.settles.settles`); :attr:`Settler.last`
keeps the latest report.
The page's requests and commits are counted by :class:`automation.browser.traffic.Traffic`.

Not seen: a timer longer than :data:`QUIET_MS` that fires after the action and its
settling (a search box's debounce, say) while the DOM stays still; ``wait_for`` waits
for those, and so does :meth:`Settler.hold`, which a replay calls before its verdict:
the timers of up to :data:`HOLD_TIMER_MS` the last action set (a debounced save; at
the end of a replay :data:`END_HOLD_TIMER_MS`, an undo toast's), the requests they start
and the quiet after them, and the timers those left in turn (an answer that puts the
old value back a moment later).  Nor what a click with no default action
leaves to a browser API that answers in a task of its own, other than those pending.js
counts (a clipboard read, a digest of WebCrypto), when it changed nothing else: that
click is decided as its event was handled.
Mutations inside iframes are not observed (their requests are).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from automation.browser.traffic import Mark, Traffic
from automation.budget import DEFAULT_HEADROOM_MS, Budget
from automation.errors import (
    ActionInvalid,
    BudgetExceeded,
    Cancelled,
    TabwrightError,
)
from automation.limits import cut_text

__all__ = [
    "BOUND",
    "BUSY",
    "END_HOLD_TIMER_MS",
    "GONE",
    "HOLD_TIMER_MS",
    "IDLE",
    "NAVIGATION_WAIT_MS",
    "NOT_SENT_JS",
    "PENDING_JS",
    "QUIET_MAX_MS",
    "QUIET_MS",
    "SETTLED",
    "SETTLE_BOUND_MS",
    "SHORT_QUIET_MS",
    "Mark",
    "SettleReport",
    "Settler",
    "with_not_sent",
]

log = logging.getLogger("automation.browser")

# Requests, load and DOM quiet together, after the action (and after each navigation).
SETTLE_BOUND_MS = 2_500
# The DOM counts as settled after this long without a mutation in the main document.
QUIET_MS = 100
# ... or after this long, when the action started no request and every timer (of at most
# QUIET_MS) and animation frame the page scheduled since it began has run (pending.js).
SHORT_QUIET_MS = 30
# One quiet wait gives up after this long: a page that never stops changing (a ticker,
# a JS animation) costs this, no more than a fixed pause after every action would.
QUIET_MAX_MS = 500
# A navigation the action set off has this long to commit and parse its document.
NAVIGATION_WAIT_MS = 10_000
# A navigation the page asked for (a link, a form, location=) reaches the network within
# a moment; one that does not was cancelled or stayed in the page.
NAVIGATION_START_MS = 100
# Arming is one evaluation; a page too busy to answer it is acted on unwatched.
ARM_WAIT_MS = 500
# The longest timer an action may leave for later that a hold waits for: a debounced
# save runs within a second or two of the last keystroke or click.
HOLD_TIMER_MS = 3_000
# ... and at the end of a replay, before its verdict and the browser closing: an undo
# toast's time (5 to 10 s) goes before the app sends the deletion it stood for.
END_HOLD_TIMER_MS = 10_000
# ... and the longest it waits for a write (POST, PUT, PATCH, DELETE) still unanswered.
HOLD_WRITE_MS = 15_000
# A hold's rounds: what one round waited for may leave timers of its own (a debounced
# save whose answer puts the old value back a moment later: two); a page whose timers
# set the next one, forever, is waited for this many rounds, no more (one, when the
# round's timers only read: a page that polls).
HOLD_ROUNDS = 3
# Navigations followed in one settle, each with its own bound (a login that redirects
# through a JS page to the dashboard is two).
MAX_NAVIGATIONS = 3

IDLE = "nothing pending"  # the action set nothing off: returned at once
SETTLED = "settled"  # what it set off finished and the DOM went quiet
BOUND = "bound reached"  # something was still going when the bound (or budget) ran out
BUSY = "still changing"  # requests done, but the DOM did not go quiet within quiet_max_ms
GONE = "page closed"  # the page closed or crashed meanwhile

# What the browser refused to send a form for (notsent.js): settle.js's, the recorder's
# and an export's.
NOT_SENT_JS = Path(__file__).with_name("notsent.js").read_text(encoding="utf-8").strip()


def with_not_sent(script: Path) -> str:
    """The text of the page script ``script``, :data:`NOT_SENT_JS` where it names it."""
    text = script.read_text(encoding="utf-8").replace("(NOT_SENT_JS)", f"({NOT_SENT_JS})")
    assert NOT_SENT_JS in text
    return text


# The page's side: arms, probes, waits for quiet, stops (see settle.js).
_PAGE_JS = with_not_sent(Path(__file__).with_name("settle.js"))
# The context's init script that counts a page's short timers and frames (pending.js),
# from its document's start too: those of at most QUIET_MS.
_AT_LOAD = "const AT_LOAD_MS = 100;"
_HOLD = "const HOLD_MS = 3000;"
_END = "const END_MS = 10000;"
PENDING_JS = (
    Path(__file__)
    .with_name("pending.js")
    .read_text(encoding="utf-8")
    .replace(_AT_LOAD, f"const AT_LOAD_MS = {QUIET_MS};")
    .replace(_HOLD, f"const HOLD_MS = {HOLD_TIMER_MS};")
    .replace(_END, f"const END_MS = {END_HOLD_TIMER_MS};")
)
assert _AT_LOAD.replace("100", str(QUIET_MS)) in PENDING_JS
assert _HOLD.replace("3000", str(HOLD_TIMER_MS)) in PENDING_JS
assert _END.replace("10000", str(END_HOLD_TIMER_MS)) in PENDING_JS
# The hold's two looks: the timers the last action left, and a wait for some to run.
_LEFT_JS = "(ms) => (window.__tabwrightPending ? window.__tabwrightPending.left(ms) : [])"
_RUN_JS = """([ids, maxMs]) => new Promise((done) => {
  const p = window.__tabwrightPending;
  const end = performance.now() + maxMs;
  const look = () => {
    if (!p || p.leftOf(ids).length === 0 || performance.now() >= end) done(null);
    else p.later(look, 20);
  };
  look();
})"""


@dataclass(frozen=True)
class SettleReport:
    """What a settle waited for, and why it returned (one of the reason constants)."""

    reason: str
    waited_ms: int = 0
    requests: int = 0  # requests the action set off that were answered (or failed)
    pending: int = 0  # ... still unanswered when it returned
    ignored: int = 0  # long-lived requests it set off (streams, long polls): not waited for
    navigated: bool = False  # the main frame committed a new document or URL
    mutations: int = 0  # batches of DOM changes seen in the main document
    refused: int = 0  # (a hold's) requests answered 4xx/5xx or failed meanwhile
    # The fields the browser refused to send a form for (their names and what it said of
    # each), when the page's focus went to one of them (settle.js: refusedToSend).
    blocked: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        parts = [f"{self.reason} after {self.waited_ms} ms"]
        if self.requests:
            parts.append(f"{self.requests} request{'s' if self.requests != 1 else ''} answered")
        if self.pending:
            parts.append(f"{self.pending} still pending")
        if self.ignored:
            parts.append(f"{self.ignored} long-lived ignored")
        if self.navigated:
            parts.append("navigated")
        if self.mutations:
            parts.append(f"{self.mutations} DOM change batches")
        if self.refused:
            parts.append(f"{self.refused} refused")
        if self.blocked:
            parts.append(f"the browser refused to send a form ({len(self.blocked)} fields)")
        return ", ".join(parts)


@dataclass
class _Watch:
    """What one settle learnt from the page so far."""

    mark: Mark
    fresh: bool = False  # quiet counts from now (an answer or a new page may still render)
    loaded: bool = False  # a new document reached its load (and nothing came since)
    asked: bool = False  # the page asked for a navigation not yet followed
    observing: bool = False  # the page's DOM watcher is connected
    due: int = 0  # the page's short timers and frames scheduled since arm, still to run
    settled: bool = False  # the page found the click's own change settled (settle.js: framed)
    blocked: tuple[tuple[str, str], ...] = ()  # (SettleReport.blocked)
    mutations: int = 0  # in the current document
    earlier_mutations: int = 0  # in documents navigated away from
    _nav_seen: int = 0

    def saw(self, state: dict[str, Any]) -> None:
        self.observing = bool(state["armed"])
        self.mutations = int(state["n"])
        self.due = int(state.get("due") or 0)
        self.settled = bool(state.get("settled"))
        self.blocked = _fields(state.get("blocked")) or self.blocked
        if state["nav"] > self._nav_seen:
            self.asked, self._nav_seen = True, int(state["nav"])

    def new_document(self) -> None:
        self.fresh, self.loaded, self.observing, self._nav_seen = True, False, False, 0
        self.earlier_mutations += self.mutations
        self.mutations = 0


class Settler:
    """One tab's watcher: its page's requests and navigations, and the settle after
    each action."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.enabled = True  # off: actions return as soon as they are done
        self.bound_ms = SETTLE_BOUND_MS
        self.quiet_ms = QUIET_MS
        self.quiet_max_ms = QUIET_MAX_MS
        self.short_quiet_ms = SHORT_QUIET_MS
        self.last: SettleReport | None = None
        # One action of the tab's at a time: two at once interleave their input (two
        # clicks' mouse moves and presses on one page: one lands, both say done).
        self.turn = asyncio.Lock()
        self.traffic = Traffic(page, bound_ms=lambda: self.bound_ms)
        self._since = self.traffic.mark(armed=False)  # when the last settle ended
        self._refused_since = 0  # traffic.refused then
        self._writes_waited = 0  # the requests numbered up to this: writes waited for once

    def busy(self) -> bool:
        """Whether the page is loading something a snapshot shows: a navigation not yet
        committed, or a document, script, stylesheet, fetch or XHR not yet answered."""
        return self.traffic.busy()

    def configure(
        self,
        *,
        bound_ms: int | None = None,
        quiet_ms: int | None = None,
        quiet_max_ms: int | None = None,
        short_quiet_ms: int | None = None,
    ) -> None:
        """Change the bound of a settle, the quiet window, how long one quiet wait may
        last, or the short quiet after an action that started no request (0: none; all
        in ms)."""
        for name, value, low, top in (
            ("bound_ms", bound_ms, 1, 60_000),
            ("quiet_ms", quiet_ms, 1, 5_000),
            ("quiet_max_ms", quiet_max_ms, 1, 10_000),
            ("short_quiet_ms", short_quiet_ms, 0, 5_000),
        ):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= top:
                raise ActionInvalid(f"settle {name} must be a whole number from {low} to {top}")
            setattr(self, name, value)

    def _gone(self) -> bool:
        return self.page.is_closed()

    async def _in_page(self, budget: Budget, *args: object) -> dict[str, Any]:
        return cast(dict[str, Any], await budget.run(self._op(*args)))

    def _op(self, *args: object) -> Coroutine[Any, Any, Any]:
        """The page op ``args`` (arm, probe, quiet, stop: _PAGE_JS), its message sent as
        the coroutine starts."""
        return self.page.evaluate(_PAGE_JS, list(args))

    async def hold(self, budget: Budget, *, timer_ms: int = HOLD_TIMER_MS) -> SettleReport | None:
        """What the last action left for later, waited for (within the bound and
        ``budget``): the timers of up to ``timer_ms`` (at most :data:`END_HOLD_TIMER_MS`)
        it set that are still to run (a debounced save), then the requests under way, and
        those started meanwhile, answered (a write up to :data:`HOLD_WRITE_MS`), and the
        DOM quiet; then again for the timers those left, of up to :data:`HOLD_TIMER_MS`
        (up to :data:`HOLD_ROUNDS` rounds: a long timer that sets the next, a carousel,
        is waited for once).  None when it left nothing (one round trip) and no request was sent
        since the last action settled (one its timers sent while the checks after it were
        read: what they read may have been taken back).  Its ``refused`` counts those
        since then too.  Never raises but Cancelled."""
        if not self.enabled or self._gone():
            return None
        try:
            look = Budget(ARM_WAIT_MS, label="hold", parent=budget)
            left = await look.run(self.page.evaluate(_LEFT_JS, timer_ms))
        except (PlaywrightError, BudgetExceeded):
            left = []
        sent = self.traffic.tracked > self._since.tracked
        if not left and not self.traffic.busy() and not sent:
            return None
        begun, refused = time.monotonic(), self._refused_since
        for _ in range(HOLD_ROUNDS):
            mark, writes = await self.arm(budget), self.traffic.writes
            await self._held(left, budget, timer_ms)
            report = await self.settle(mark, budget=budget, what="hold")
            # What ran meanwhile may have left timers of its own: a save's answer that
            # puts the old value back 300 ms later, a debounce that then saves.  Not a
            # round that only read (a page polling on a timer, which never ends).
            reads_only = self.traffic.tracked > mark.tracked and self.traffic.writes == writes
            if reads_only or self._gone():
                break
            timer_ms = min(timer_ms, HOLD_TIMER_MS)
            try:
                left = await Budget(ARM_WAIT_MS, label="hold", parent=budget).run(
                    self.page.evaluate(_LEFT_JS, timer_ms)
                )
            except (PlaywrightError, BudgetExceeded):
                left = []
            if not left:
                break
        waited_ms = int((time.monotonic() - begun) * 1000)
        return replace(report, waited_ms=waited_ms, refused=self.traffic.refused - refused)

    async def _held(self, left: list[Any], budget: Budget, timer_ms: int) -> None:
        """One round of a hold: the timers ``left`` run (each due within ``timer_ms``),
        the requests under way answered (a write up to :data:`HOLD_WRITE_MS`)."""
        try:
            if left:
                wait = budget.child(timer_ms + ARM_WAIT_MS, label="hold")
                await wait.run(self.page.evaluate(_RUN_JS, [left, timer_ms]))
            if self.traffic.busy():
                wait = budget.child(self.bound_ms, label="hold")
                await self.traffic.until(lambda: not self.traffic.busy(), wait)
        except (PlaywrightError, BudgetExceeded):
            budget.check_cancelled()
        try:  # a save under way decides the verdict: longer than a read
            if self.traffic.writing():
                wait = budget.child(HOLD_WRITE_MS, label="hold")
                await self.traffic.until(lambda: not self.traffic.writing(), wait)
        except (PlaywrightError, BudgetExceeded):
            budget.check_cancelled()

    async def writes_answered(self, budget: Budget) -> bool:
        """The writes the page sent that are still unanswered (a slow save), waited for
        up to :data:`HOLD_WRITE_MS` (each write once), and what their answers set off:
        before a replay's next step, which would otherwise read what the app showed
        before the answer came (and takes back when the save is refused), or leave the
        page and cancel it.  Whether there was one to wait for.  Never raises but
        Cancelled."""
        after, self._writes_waited = self._writes_waited, self.traffic.seq
        if not self.enabled or self._gone() or not self.traffic.writing(after):
            return False
        mark = await self.arm(budget)
        try:
            wait = budget.child(HOLD_WRITE_MS, label="writes under way")
            await self.traffic.until(lambda: not self.traffic.writing(after), wait)
        except (PlaywrightError, BudgetExceeded):
            budget.check_cancelled()
        await self.settle(mark, budget=budget, what="writes answered")
        return True

    # -- the two halves around an action -------------------------------------------------

    async def arm(self, budget: Budget | None = None) -> Mark:
        """Note the page's activity so far and arm its DOM watcher, before an action."""
        if not self.enabled or self._gone():
            return self.traffic.mark(armed=False)
        mark = self.traffic.mark(armed=False)
        wait_ms = ARM_WAIT_MS if budget is None else min(ARM_WAIT_MS, budget.remaining_ms())
        try:
            arm_budget = Budget(wait_ms, label="settle arm", parent=budget)
            await self._in_page(arm_budget, "arm", self.quiet_ms)
        except (PlaywrightError, BudgetExceeded):
            return mark  # no document to watch right now (one is loading): unarmed
        return replace(mark, armed=True)

    def arm_early(self, budget: Budget | None, *, trigger: str = "", ref: str = "") -> Mark:
        """Arm without waiting for the page's answer: only before an action whose first
        step is an evaluation in the page (taking its ref's element), so that the page has
        run this one before the action's input reaches it.  With ``trigger`` (an event type)
        the answer is also the probe: it comes once that event, trusted and on ``ref``'s
        element, has been handled (a click), so that the settle after the action needs no
        round trip of its own."""
        if not self.enabled or self._gone():
            return self.traffic.mark(armed=False)
        wait_ms = self.bound_ms if budget is None else max(1, budget.remaining_ms())
        args = ("arm", self.quiet_ms, wait_ms, None, None, trigger or None, ref)
        # The evaluation is a task of its own, made before the action's and sending at its
        # first step: its message goes out before the action's once the caller yields
        # (:func:`automation.browser.settles.settles` does).  Sent a task later, after the
        # action's, a busy machine's pause between the two sends let the click's input
        # reach the page before the arm, which then heard nothing ("nothing pending").
        sent = asyncio.ensure_future(self._op(*args))
        answer = asyncio.ensure_future(Budget(wait_ms, parent=budget).run(sent))
        answer.add_done_callback(_retrieve)
        return replace(self.traffic.mark(armed=True), early=answer)

    async def _early_answer(self, answer: asyncio.Future[dict[str, Any]], bound: Budget) -> Any:
        """The probe after an early arm: its answer when the action's event was heard,
        else the probe op's (which ends the arm's wait: the first answer to come counts).
        PlaywrightError when the document went away."""
        if not answer.done():
            probe = asyncio.ensure_future(self._in_page(bound, "probe"))
            probe.add_done_callback(_retrieve)
            await bound.run(asyncio.wait((answer, probe), return_when=asyncio.FIRST_COMPLETED))
            if not _probed(answer):
                return await probe
        elif not _probed(answer):
            return await self._in_page(bound, "probe")
        return answer.result()

    async def settle(
        self, mark: Mark | None = None, *, budget: Budget, what: str = "settle"
    ) -> SettleReport:
        """Wait, within the bound and ``budget``, for what the page set off since ``mark``
        (by default: since the last settle ended).  Never raises but Cancelled."""
        mark = self._since if mark is None else mark
        begun = time.monotonic()
        watch = _Watch(mark)
        if not self.enabled:
            reason = IDLE
        elif self._gone():
            reason = GONE
        else:
            try:
                reason = await self._settle(watch, budget)
            except BudgetExceeded:
                budget.check_cancelled()
                reason = BOUND
            except Cancelled:
                raise
            except (PlaywrightError, TabwrightError) as exc:
                reason = GONE if self._gone() else BOUND
                log.debug("%s: gave up: %s", what, exc)
        if self._gone():
            reason = GONE
        elif watch.observing:
            await self._stop(budget)
        pending = self.traffic.pending(mark)
        if reason == BOUND and pending:
            self.traffic.learn(mark)
        dropped = self.traffic.dropped - mark.dropped
        report = SettleReport(
            reason=reason,
            waited_ms=int((time.monotonic() - begun) * 1000),
            requests=max(0, self.traffic.tracked - mark.tracked - pending - dropped),
            pending=pending,
            ignored=self.traffic.streams - mark.streams,
            navigated=self.traffic.commits > mark.commits,
            mutations=watch.mutations + watch.earlier_mutations,
            blocked=watch.blocked,
        )
        self.last = report
        self._since = self.traffic.mark(armed=False)
        self._refused_since = self.traffic.refused
        log.debug("%s: %s", what, report)
        return report

    async def _settle(self, watch: _Watch, budget: Budget) -> str:
        traffic = self.traffic
        mark = watch.mark
        room_ms = budget.remaining_ms(headroom_ms=2 * DEFAULT_HEADROOM_MS)
        if room_ms <= 0:
            return BOUND
        bound = budget.child(min(self.bound_ms, room_ms), label="settle")
        if mark.armed:
            try:
                if mark.early is not None:
                    watch.saw(await self._early_answer(mark.early, bound))
                else:
                    watch.saw(await self._in_page(bound, "probe"))
            except PlaywrightError:
                watch.fresh = True  # the document went away: a navigation, seen below
            quiet = traffic.tracked == mark.tracked and not traffic.navigating(mark.commits)
            if not (watch.fresh or watch.asked or watch.mutations or watch.due) and quiet:
                return IDLE
            if watch.settled and quiet:
                return SETTLED  # what the click drew itself, and nothing after its frame
            if watch.settled:  # the page stopped watching: a new watch counts afresh
                watch.earlier_mutations += watch.mutations
                watch.mutations = 0
        elif traffic.tracked == mark.tracked and not traffic.navigating(mark.commits):
            return IDLE  # nothing was started, and no DOM watcher to ask
        if traffic.tracked > mark.tracked or not mark.armed:
            watch.fresh = True  # an answer may still be rendering
        return await self._follow(watch, budget, bound)

    async def _follow(self, watch: _Watch, budget: Budget, bound: Budget) -> str:
        """The loop: navigation, then requests, then DOM quiet, until all three hold."""
        traffic = self.traffic
        mark = watch.mark
        commits = mark.commits
        navigations = 0
        while True:
            if self._gone():
                return GONE
            if watch.asked or traffic.navigating(commits):
                if navigations >= MAX_NAVIGATIONS:
                    return BOUND
                navigations += 1
                asked, watch.asked = watch.asked, False
                if await self._navigation(budget, commits, asked):
                    commits = traffic.commits
                    watch.new_document()
                    room_ms = budget.remaining_ms(headroom_ms=2 * DEFAULT_HEADROOM_MS)
                    bound = budget.child(min(self.bound_ms, max(room_ms, 0)), label="settle")
                    watch.loaded = await self._loaded(bound)
                if traffic.navigating(commits):
                    continue
            if traffic.pending(mark):
                watch.fresh, watch.loaded = True, False
                await traffic.until(
                    lambda: not traffic.pending(mark) or traffic.nav is not None, bound
                )
                if traffic.nav is not None:
                    continue
            max_ms = min(self.quiet_max_ms, bound.remaining_ms(headroom_ms=DEFAULT_HEADROOM_MS))
            if max_ms <= 0:
                return BOUND
            try:
                # Nothing requested, or a new document loaded (its scripts and styles
                # have run) that asked for nothing a script answers later: the short
                # quiet may do, when no page timer is due.
                done_loading = watch.loaded and traffic.answered == traffic.answered_at_commit
                short_ms = self.short_quiet_ms if done_loading or not watch.fresh else 0
                state = await self._in_page(
                    bound, "quiet", self.quiet_ms, max_ms, watch.fresh, short_ms
                )
            except PlaywrightError:
                # The document went away under the wait: a navigation is committing.
                await bound.run(asyncio.sleep(0.02))
                watch.fresh = True
                continue
            watch.saw(state)
            if watch.asked or traffic.pending(mark) or traffic.navigating(commits):
                watch.fresh, watch.loaded = True, False
                continue
            if state["quiet"]:
                return SETTLED
            return BOUND if bound.remaining_ms() <= DEFAULT_HEADROOM_MS else BUSY

    async def _navigation(self, budget: Budget, commits: int, asked: bool) -> bool:
        """Wait for the navigation under way to commit and its document to be parsed;
        True when the main frame committed one since ``commits``."""
        traffic = self.traffic
        room_ms = budget.remaining_ms(headroom_ms=2 * DEFAULT_HEADROOM_MS)
        if room_ms <= 0:
            raise budget.exceeded()
        wait = budget.child(min(NAVIGATION_WAIT_MS, room_ms), label="settle navigation")
        if asked and traffic.nav is None and traffic.commits == commits:
            start = wait.child(NAVIGATION_START_MS, label="navigation start")
            try:
                await traffic.until(
                    lambda: traffic.nav is not None or traffic.commits > commits, start
                )
            except BudgetExceeded:
                wait.check()
                return False  # cancelled or kept in the page: no navigation after all
        await traffic.until(lambda: traffic.nav is None, wait)
        if traffic.commits == commits:
            return False  # it ended without a new page: a download, a 204, a refusal
        try:
            await wait.run(
                self.page.wait_for_load_state("domcontentloaded", timeout=wait.playwright_timeout())
            )
        except PlaywrightError:
            pass  # replaced by a newer navigation, or gone: the loop looks again
        return True

    async def _loaded(self, bound: Budget) -> bool:
        """The new document's ``load``, within the bound (a resource that never comes
        leaves the page as it is); whether it came."""
        try:
            await bound.run(
                self.page.wait_for_load_state(
                    "load", timeout=bound.playwright_timeout(headroom_ms=DEFAULT_HEADROOM_MS)
                )
            )
        except PlaywrightError:
            return False  # timed out or replaced by a newer navigation: the loop looks again
        return True

    async def _stop(self, budget: Budget) -> None:
        """Disconnect the page's observer: a page is not watched between actions."""
        try:
            await self._in_page(Budget(ARM_WAIT_MS, label="settle stop", parent=budget), "stop")
        except (PlaywrightError, BudgetExceeded):
            pass  # gone or busy: the next arm restarts it


def _fields(reported: object) -> tuple[tuple[str, str], ...]:
    """The fields a page reported the browser refused to send a form for, as (name, what
    it said) pairs: the page's own words, so only strings, cut short."""
    if not isinstance(reported, list):
        return ()
    return tuple(
        (cut_text(field.get("name"), 80), cut_text(field.get("said"), 200))
        for field in reported[:3]
        if isinstance(field, dict)
        and isinstance(field.get("name"), str)
        and isinstance(field.get("said"), str)
    )


def _probed(answer: asyncio.Future[dict[str, Any]]) -> bool:
    """An early arm's answer that holds the probe (the action's event was heard)."""
    if not answer.done() or answer.cancelled() or answer.exception() is not None:
        return False
    return bool(answer.result().get("probed"))


def _retrieve(answer: asyncio.Future[Any]) -> None:
    """Take a page answer's error nobody waits for any more (the page went away)."""
    if not answer.cancelled():
        answer.exception()
