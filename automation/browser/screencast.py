"""The live view: pictures of a run's current tab as it changes, and a person's input to it.

**Frames.**  ``Page.startScreencast`` makes Chromium send a JPEG whenever the page's picture
changes, up to three not acked yet; a change past those is dropped, not sent later.
:class:`Screencast` keeps the newest frame, and one task hands it to ``on_frame`` at most
``max_fps`` times a second; after each send it acks one frame, so Chromium encodes about
one frame a send: a page that animates at 60 fps costs ``max_fps`` frames a second, not 60
(measured on a spinner with every frame acked at once: two thirds of a core, a third of it
the encoding).  Chromium drops a change that comes while it waits for an ack, and on a busy
machine one that comes while it still encodes the frame before (with a single frame
unacked), so a picture is taken whenever no frame follows a send's ack within
``_CATCH_UP_S``: the last picture of a page that then stands still is never lost.  The
picture makes Chromium draw a frame of its own, so a frame that is the same JPEG as the
last one sent is not sent again and takes no picture after it, nor a picture that is the
same as the last one: on a page that stands still the pictures end after one that changed
nothing.  What is sent is never older than what was: a frame is known by when Chromium
drew it (its ``metadata.timestamp``, on the browser's clock, put on ours by the least delay
a frame of the cast took to arrive: a browser reached over CDP may run on a clock of its
own), a picture by when it was asked for, and a frame drawn before the newest picture
(encoded late on a busy machine) is acked and left.

**Pictures while a page never stops.**  The cast's capture, in Chromium's GPU process,
goes on at the page's frame rate however few frames are acked (a fifth of a core for a
spinner).  So a page that kept Chromium at its limit for ``_BUSY_SENDS`` sends in a row
is followed by screenshots instead, ``max_fps`` a second at most (a tenth of that cost),
a picture sent only when it differs from the last; once ``_STILL_PICTURES`` pictures in a
row are the same, the cast starts again (and sends the page as it stands).

**Size.**  Frames are JPEGs of at most ``max_width`` x ``max_height`` pixels (scaled down
by Chromium, the page's shape kept; the pictures taken instead are scaled alike), so a
person who sees the tab small is not sent, nor makes Chromium encode, a picture four
times the size shown.  :meth:`Screencast.resize` changes that bound while it runs: the
cast starts again at the new size.  A frame's ``width`` and ``height`` stay the
viewport's, in CSS pixels, whatever the JPEG's own size.  A frame Chromium drew while a
screenshot of the tab had it draw at the screenshot's size (its metadata says another
size than the viewport's) is left: the page maps a person's click by the frame's size.

Chromium sends a first frame when a cast starts; should none come within
``_FIRST_FRAME_S`` (a busy machine, a page Chromium won't draw for the cast), one
screenshot of the tab stands in for it, so a person watching is never left with no picture
of a tab that stands still. A failure to follow a tab is logged (once per tab) and tried
again: the live view outlives it. ``on_frame`` is awaited, so a slow receiver slows the
sends down instead of queueing them. The screencast follows the run: whichever tab is
current (the ``current`` callable) is the one shown, and a tab that closes or crashes is
left quietly until another is current.

**Input.**  :func:`person_input` carries one click, scroll, key or piece of text to the
current tab as real input (CDP ``Input.dispatch*`` through Playwright), so the page cannot
tell it from a person at the machine, and the recorder (recorder.js listens to trusted
events) records it exactly as it records a person at a visible browser.  Coordinates are
CSS pixels of the viewport, which is what the frames' ``width`` and ``height`` measure.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from playwright.async_api import CDPSession
from playwright.async_api import Error as PlaywrightError

from automation.browser.frames import silent_at, silent_focus, silent_note
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import ActionFailed, ActionInvalid, TabwrightError

__all__ = [
    "DEFAULT_MAX_SIZE",
    "KEYS",
    "MAX_TYPE_CHARS",
    "Frame",
    "Screencast",
    "person_input",
    "viewport_point",
]

log = logging.getLogger("automation.browser")

_CDP_MS = 5_000  # one screencast call (start, stop, attach) before it is given up
_FOLLOW_S = 0.5  # how often the current tab is looked at when no frame comes
_FIRST_FRAME_S = 2.0  # a cast with no frame by then gets a screenshot instead
# After a send's ack, Chromium sends its next frame on the page's next change; when none
# comes by then, what changed while it waited or encoded (it drops that) is pictured.
_CATCH_UP_S = 0.3
_CATCH_UP_TRIES = 3  # catch-up pictures that failed in a row before it waits for a frame
_MAX_HELD = 8  # frames held unacked (Chromium stops sending at three; a bound all the same)
_AT_LIMIT = 3  # frames held at which Chromium waits for an ack (and drops what changes)
_BUSY_SENDS = 8  # sends in a row with Chromium at its limit: the page never stops
_STILL_PICTURES = 3  # pictures in a row the same: the page stands still
MIN_SIDE, MAX_SIDE = 64, 4_096  # the bounds of max_width and max_height, in pixels
DEFAULT_MAX_SIZE = (1_280, 960)  # max_width and max_height unless told


@dataclass(frozen=True)
class Frame:
    """One picture of the tab: a JPEG of the viewport, which is ``width`` x ``height`` CSS
    pixels (the JPEG itself may be scaled down)."""

    jpeg: bytes
    width: int
    height: int
    url: str


OnFrame = Callable[[Frame], Awaitable[None]]


class Screencast:
    def __init__(
        self,
        current: Callable[[], Tab | None],
        on_frame: OnFrame,
        *,
        max_fps: float = 4.0,
        quality: int = 60,
        max_width: int = DEFAULT_MAX_SIZE[0],
        max_height: int = DEFAULT_MAX_SIZE[1],
        every_nth_frame: int = 1,
    ) -> None:
        if not 0 < max_fps <= 30:
            raise ActionInvalid("max_fps must be above 0 and at most 30")
        if not 1 <= quality <= 100:
            raise ActionInvalid("quality must be between 1 and 100")
        self._current = current
        self._on_frame = on_frame
        if every_nth_frame < 1:
            raise ActionInvalid("every_nth_frame must be at least 1")
        _check_sides(max_width, max_height)
        self._interval_s = 1 / max_fps
        self._params = {"format": "jpeg", "quality": quality, "maxWidth": max_width,
                        "maxHeight": max_height, "everyNthFrame": every_nth_frame}  # fmt: skip
        self._resized = False  # the cast must start again at the new size
        self._tab: Tab | None = None
        self._session: CDPSession | None = None
        self._newest: Frame | None = None
        # When what _newest shows was drawn (a frame) or asked for (a picture), on
        # time.monotonic(): a frame drawn before it is older.  A frame's stamp is on the
        # browser's clock; _stamp_offset puts it on ours (the least arrival - stamp seen).
        self._newest_at = 0.0
        self._stamp_offset: float | None = None
        self._followed_at = 0.0  # when the cast of the current tab started
        self._failed: Tab | None = None  # the tab it last failed to follow (said once)
        self._fresh = asyncio.Event()
        # The frames received and not acked yet (their session and id), oldest first: one
        # is acked after each send, so Chromium encodes about one frame a send.
        self._held: list[tuple[CDPSession, Any]] = []
        self._released_at: float | None = None  # a send's ack went, no frame since
        self._last_sent = b""  # the JPEG of the last frame sent
        self._last_caught = b""  # the JPEG of the last picture taken to catch up
        self._catch_up_failures = 0
        self._busy = 0  # sends in a row with Chromium at its limit
        # Following the tab by pictures (the cast stopped) while the page never stops;
        # the last picture's JPEG and how many in a row were the same.
        self.polling = False
        self._last_picture = b""
        self._same = 0
        self._acks: set[asyncio.Task[Any]] = set()
        self._task: asyncio.Task[None] | None = None
        self.frames_sent = 0
        self.frames_received = 0  # from Chromium

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start following the current tab; again while running does nothing."""
        if not self.running:
            self._task = asyncio.create_task(self._run(), name="screencast")

    @property
    def max_size(self) -> tuple[int, int]:
        """The largest JPEG sent, width and height in pixels."""
        return self._params["maxWidth"], self._params["maxHeight"]

    def resize(self, max_width: int, max_height: int) -> None:
        """Send JPEGs of at most this size from now on (ActionInvalid outside
        ``MIN_SIDE``..``MAX_SIDE``); a running cast starts again at it on the sender's
        next turn."""
        _check_sides(max_width, max_height)
        if (max_width, max_height) != self.max_size:
            self._params["maxWidth"], self._params["maxHeight"] = max_width, max_height
            self._resized = True
            self._fresh.set()  # the sender's wait ends: it starts the cast again now

    async def stop(self) -> None:
        """Stop sending frames and stop Chromium's screencast; never raises."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._leave()
        for ack in list(self._acks):
            ack.cancel()

    async def _run(self) -> None:
        while True:
            if self._resized:  # followed anew below, at the new size
                self._resized = False
                await self._leave()
            tab = self._current()
            if tab is not self._tab or (tab is not None and self._session is None):
                try:
                    await self._follow(tab)
                except Exception:  # whatever it was, the next turn tries again
                    self._failed_to_follow(
                        tab, "the live view could not follow the tab", stack=True
                    )
                    await self._leave()
            if self.polling:
                await self._poll()
                if not self._fresh.is_set():
                    continue
            catching_up = self._released_at is not None
            wait_s = _FOLLOW_S
            if self._released_at is not None:
                wait_s = max(0.0, self._released_at + _CATCH_UP_S - time.monotonic())
            try:
                # Not asyncio.wait_for: on Python 3.11 a stop() that lands as its timeout
                # fires comes out as TimeoutError, and this loop would never end.
                async with asyncio.timeout(wait_s):
                    await self._fresh.wait()
            except TimeoutError:
                if catching_up:  # the page stands still: what Chromium dropped is pictured
                    self._release(every=True)
                    self._released_at = None
                    await self._picture(first=False)
                else:
                    await self._picture(first=True)
                continue
            self._fresh.clear()
            frame = self._newest
            if frame is None or self._resized:  # (resized: the cast's next frame, then)
                continue
            if frame.jpeg == self._last_sent:  # the picture's own frame of a still page
                self._release(catch_up=False)
                continue
            self._last_sent = frame.jpeg
            try:
                await self._on_frame(frame)
                self.frames_sent += 1
            except Exception:  # the receiver's failure must not end the live view
                log.exception("a live-view frame could not be delivered")
            await asyncio.sleep(self._interval_s)
            if not self.polling:
                await self._count_busy()
                self._release()

    async def _count_busy(self) -> None:
        """After a send: a page that kept Chromium at its limit for ``_BUSY_SENDS`` sends
        in a row is followed by pictures from now (the cast stopped)."""
        self._busy = self._busy + 1 if len(self._held) >= _AT_LIMIT else 0
        session = self._session
        if self._busy < _BUSY_SENDS or session is None:
            return
        self._release(every=True)  # none left waiting, should the cast start again
        self._busy, self._released_at = 0, None
        self.polling, self._last_picture, self._same = True, b"", 0
        budget = Budget(_CDP_MS, label="pause the live view's cast")
        with contextlib.suppress(PlaywrightError, TabwrightError):
            await budget.run(session.send("Page.stopScreencast"))

    async def _poll(self) -> None:
        """One picture of the tab, sent when it differs from the last; a page whose last
        ``_STILL_PICTURES`` pictures were the same gets its cast again."""
        session, asked = self._session, time.monotonic()
        frame = await self._shot()
        if self._session is not session or session is None:
            return  # it left the tab: the next turn follows the current one
        if frame is None:  # the tab closed or crashed, say (logged): followed anew
            self.polling = False
            await self._leave()
            await asyncio.sleep(self._interval_s)
            return
        if frame.jpeg != self._last_picture:
            self._last_picture, self._same = frame.jpeg, 0
            self._newest, self._newest_at = frame, asked
            self._fresh.set()
            return
        self._same += 1
        if self._same < _STILL_PICTURES:
            await asyncio.sleep(self._interval_s)
            return
        self.polling = False
        budget = Budget(_CDP_MS, label="start the live view's cast again")
        try:
            await budget.run(session.send("Page.startScreencast", self._params))
        except (PlaywrightError, TabwrightError) as exc:
            log.info("the live view could not start its cast again: %s", exc)
            await self._leave()  # followed again on the next turn

    def _release(self, *, every: bool = False, catch_up: bool = True) -> None:
        """Ack the oldest frame held (``every``: each): Chromium sends its next frame on
        the page's next change.  After a send (``catch_up``), a picture is taken when no
        frame follows within ``_CATCH_UP_S``."""
        count = len(self._held) if every else 1
        released, self._held = self._held[:count], self._held[count:]
        for session, frame_id in released:
            if session is self._session:
                self._ack(session, frame_id)
        if catch_up and not every and self._session is not None:
            self._released_at = time.monotonic()

    def _ack(self, session: CDPSession, frame_id: Any) -> None:
        ack = asyncio.ensure_future(
            session.send("Page.screencastFrameAck", {"sessionId": frame_id})
        )
        self._acks.add(ack)
        ack.add_done_callback(_forget(self._acks))

    async def _follow(self, tab: Tab | None) -> None:
        await self._leave()
        self._tab = tab
        self._newest = None  # a frame of the tab it left is not a picture of this one
        self._newest_at, self._stamp_offset = 0.0, None
        self._held, self._released_at = [], None
        self._last_sent = self._last_caught = b""
        self._busy, self.polling = 0, False
        self._followed_at = time.monotonic()
        if tab is None or tab.crashed or tab.page.is_closed():
            return
        budget = Budget(_CDP_MS, label="start the live view")
        try:
            session = await budget.run(tab.context.new_cdp_session(tab.page))
            session.on("Page.screencastFrame", self._on_cdp_frame)
            self._session = session
            await budget.run(session.send("Page.startScreencast", self._params))
        except (PlaywrightError, TabwrightError) as exc:
            # A tab closing as we start: the next current tab is tried on the next turn.
            self._failed_to_follow(tab, f"the live view could not start on {tab.page.url}: {exc}")
            await self._leave()
            return
        self._failed = None

    def _failed_to_follow(self, tab: Tab | None, what: str, *, stack: bool = False) -> None:
        """Log a failure to follow ``tab`` the first time (an unexpected one, ``stack``,
        as an error with its stack); its retries, every ``_FOLLOW_S``, at DEBUG: a tab that
        keeps failing the same way does not fill the log."""
        if tab is not None and tab is self._failed:
            log.debug("%s (again)", what, exc_info=stack)
            return
        self._failed = tab
        if stack:
            log.exception(what)
        else:
            log.info("%s", what)

    async def _picture(self, *, first: bool) -> None:
        """A screenshot of the tab: as its ``first`` frame, when the cast has sent none
        for ``_FIRST_FRAME_S``; else as its newest (what changed while Chromium could not
        send it), unless it is the same as the last such picture.  A failure is tried
        again: a first frame after as long, a catch-up up to ``_CATCH_UP_TRIES`` times."""
        session, tab = self._session, self._tab
        if session is None or tab is None or (first and self._newest is not None):
            return
        if first and time.monotonic() - self._followed_at < _FIRST_FRAME_S:
            return
        asked = time.monotonic()
        frame = await self._shot()
        if frame is None:
            if first:
                self._followed_at = time.monotonic()
            elif self._session is session and self._catch_up_failures < _CATCH_UP_TRIES:
                self._catch_up_failures += 1
                self._released_at = time.monotonic()
            return
        self._catch_up_failures = 0
        if not first:
            if frame.jpeg == self._last_caught:
                return  # the page as it was last pictured: nothing was dropped
            self._last_caught = frame.jpeg
        if self._session is not session or self._newest_at > asked:
            return  # it left the tab, or a frame drawn since the ask came: that one is newer
        self._newest, self._newest_at = frame, asked
        self._fresh.set()

    async def _shot(self) -> Frame | None:
        """A screenshot of the tab as a frame (None: it could not be taken, logged)."""
        session, tab = self._session, self._tab
        if session is None or tab is None:
            return None
        budget = Budget(_CDP_MS, label="a picture for the live view")
        params: dict[str, Any] = {"format": "jpeg", "quality": self._params["quality"]}
        max_width, max_height = self.max_size
        size = tab.page.viewport_size  # None for a page of a browser reached over CDP
        try:
            if size is None or size["width"] > max_width or size["height"] > max_height:
                # What the viewport shows, where the page is scrolled to (a clip is in the
                # document's CSS pixels), scaled down to the cast's size as its frames are.
                metrics = await budget.run(session.send("Page.getLayoutMetrics"))
                view = metrics["cssVisualViewport"]
                size = size or {"width": round(view["clientWidth"]),
                                "height": round(view["clientHeight"])}  # fmt: skip
                scale = min(1.0, max_width / max(size["width"], 1),
                            max_height / max(size["height"], 1))  # fmt: skip
                if scale < 1:
                    params["clip"] = {"x": view["pageX"], "y": view["pageY"],
                                      "width": size["width"], "height": size["height"],
                                      "scale": scale}  # fmt: skip
            async with tab.one_picture(budget):
                shot = await budget.run(session.send("Page.captureScreenshot", params))
            jpeg = base64.b64decode(shot["data"], validate=True)
        except (PlaywrightError, TabwrightError, KeyError, ValueError) as exc:
            log.info("no picture for the live view of %s: %s", tab.page.url, exc)
            return None
        return Frame(jpeg, size["width"], size["height"], tab.page.url)

    async def _leave(self) -> None:
        session, self._session = self._session, None
        if session is None:
            return
        budget = Budget(_CDP_MS, label="stop the live view")
        with contextlib.suppress(PlaywrightError, TabwrightError):
            await budget.run(session.send("Page.stopScreencast"))
        with contextlib.suppress(PlaywrightError, TabwrightError):
            await budget.run(session.detach())

    def _on_cdp_frame(self, params: dict[str, Any]) -> None:
        # Called in Playwright's event dispatch: copy, hold its ack, wake the sender.
        session, tab = self._session, self._tab
        if session is None or tab is None or self.polling:  # one on its way as it stopped
            return
        self.frames_received += 1
        meta = params.get("metadata", {})
        drawn_at = self._drawn_at(meta.get("timestamp"))
        size = (round(meta.get("deviceWidth", 0)), round(meta.get("deviceHeight", 0)))
        viewport = tab.page.viewport_size  # None for a page of a browser reached over CDP
        if drawn_at < self._newest_at or (viewport is not None and _other_size(size, viewport)):
            # Older than what is shown: never sent.  Or drawn while a screenshot of the
            # tab (a picture of the cast's, a step's) had Chromium draw it at the
            # screenshot's size: not the tab as a person's click would find it (the page
            # maps a click by the frame's size: a 480-wide one sent it to 37% of its point).
            self._ack(session, params.get("sessionId"))
            return
        self._released_at = None
        self._held.append((session, params.get("sessionId")))
        if len(self._held) > _MAX_HELD:
            self._ack(*self._held.pop(0))
        try:
            jpeg = base64.b64decode(params["data"], validate=True)
        except (KeyError, ValueError):
            return
        self._newest = Frame(jpeg, size[0], size[1], tab.page.url)
        self._newest_at = drawn_at
        self._fresh.set()

    def _drawn_at(self, stamp: object) -> float:
        """When a frame stamped ``stamp`` (Chromium's swap time, seconds on the browser's
        clock) was drawn, on time.monotonic(): late by the least delay a frame of this cast
        has taken to arrive (a few ms).  A frame with no stamp is taken as drawn now."""
        now = time.monotonic()
        if isinstance(stamp, bool) or not isinstance(stamp, int | float):
            return now
        if self._stamp_offset is None or now - stamp < self._stamp_offset:
            self._stamp_offset = now - stamp
        return stamp + self._stamp_offset


def _other_size(size: tuple[int, int], viewport: Mapping[str, int]) -> bool:
    """Whether a frame's size (CSS px) is not the tab's viewport's (a pixel of rounding
    aside)."""
    return abs(size[0] - viewport["width"]) > 1 or abs(size[1] - viewport["height"]) > 1


def _check_sides(max_width: int, max_height: int) -> None:
    for name, side in (("max_width", max_width), ("max_height", max_height)):
        if isinstance(side, bool) or not isinstance(side, int) or not MIN_SIDE <= side <= MAX_SIDE:
            raise ActionInvalid(f"{name} must be a whole number from {MIN_SIDE} to {MAX_SIDE}")


def _forget(acks: set[asyncio.Task[Any]]) -> Callable[[asyncio.Task[Any]], None]:
    def done(task: asyncio.Task[Any]) -> None:
        acks.discard(task)
        if not task.cancelled():
            task.exception()  # an ack to a page that just went away is not worth a warning

    return done


# -- the person's input ---------------------------------------------------------------

MAX_TYPE_CHARS = 2_000  # one "type" message; the live view sends typing in small pieces
KEYS = frozenset(
    """Enter Tab Escape Backspace Delete ArrowUp ArrowDown ArrowLeft ArrowRight Home End
    PageUp PageDown Space""".split()
)
_MODIFIERS = ("Alt", "Control", "Meta", "Shift")
_BUTTONS = ("left", "right", "middle")
_MAX_SCROLL_PX = 10_000


async def person_input(tab: Tab, event: Mapping[str, Any], *, budget: Budget) -> str:
    """Carry one input of the live view to ``tab``; returns what was done, for the log.

    ``{"kind": "click", "x", "y", "button"?, "clicks"?: 1|2}``,
    ``{"kind": "scroll", "x", "y", "dx", "dy"}``, ``{"kind": "type", "text"}`` and
    ``{"kind": "key", "key", "modifiers"?: [...]}`` (a key of :data:`KEYS`, or one
    character with Control, Alt or Meta).  ActionInvalid for anything else."""
    kind = event.get("kind")
    mouse, keyboard = tab.page.mouse, tab.page.keyboard
    if kind in ("click", "scroll"):
        x, y = viewport_point(tab, event)
        # A frame that hangs never acknowledges the input: it would hold this one, and the
        # person's next ones behind it, for the whole of its time.
        if (silent := await silent_at(tab.page, x, y, budget)) is not None:
            raise ActionFailed(f"nothing at ({x:g}, {y:g}) can be acted on: {silent_note(silent)}")
        if kind == "click":
            button = event.get("button", "left")
            clicks = event.get("clicks", 1)
            if button not in _BUTTONS:
                raise ActionInvalid(f"button must be one of {', '.join(_BUTTONS)}")
            if clicks not in (1, 2):
                raise ActionInvalid("clicks must be 1 or 2")
            # The second click of a double click is one press with clickCount 2, as a
            # person's is (click_count=2 on Playwright's click would press twice more).
            await tab.core.call("live-view click", budget, mouse.move(x, y))
            await tab.core.call(
                "live-view click", budget, mouse.down(button=button, click_count=clicks)
            )
            await tab.core.call(
                "live-view click", budget, mouse.up(button=button, click_count=clicks)
            )
            return f"{'double ' if clicks == 2 else ''}{button} click at ({x:g}, {y:g})"
        dx, dy = _number(event, "dx", _MAX_SCROLL_PX), _number(event, "dy", _MAX_SCROLL_PX)
        await tab.core.call("live-view scroll", budget, mouse.move(x, y))
        await tab.core.call("live-view scroll", budget, mouse.wheel(dx, dy))
        return f"scroll by ({dx:g}, {dy:g})"
    if kind == "type":
        text = event.get("text")
        if not isinstance(text, str) or not text or len(text) > MAX_TYPE_CHARS:
            raise ActionInvalid(f"text must be 1 to {MAX_TYPE_CHARS} characters")
        await _focus_answers(tab, budget)
        await tab.core.call("live-view typing", budget, keyboard.type(text))
        return f"typed {len(text)} characters"
    if kind == "key":
        combo = _key_combo(event)
        await _focus_answers(tab, budget)
        await tab.core.call("live-view key", budget, keyboard.press(combo))
        return f"pressed {combo}"
    raise ActionInvalid("kind must be click, scroll, type or key")


async def _focus_answers(tab: Tab, budget: Budget) -> None:
    """ActionFailed when the focus is in a frame that hangs: as a click on one, the keys
    would hold this input and the person's next ones for the whole of its time."""
    if (silent := await silent_focus(tab.page, budget)) is not None:
        raise ActionFailed(
            f"keys can't reach the focus: {silent_note(silent)}",
            hint="click the page where the keys should go",
        )


def viewport_point(tab: Tab, event: Mapping[str, Any]) -> tuple[float, float]:
    """The event's ``x``, ``y``: finite numbers inside the tab's viewport (ActionInvalid)."""
    size = tab.page.viewport_size or {"width": 10_000, "height": 10_000}
    x, y = _number(event, "x", None), _number(event, "y", None)
    if not (0 <= x < size["width"] and 0 <= y < size["height"]):
        raise ActionInvalid(
            f"({x:g}, {y:g}) is outside the viewport ({size['width']}x{size['height']})"
        )
    return x, y


_HUGE = 2**53  # past it, an integer is no float's exact value


def _number(event: Mapping[str, Any], name: str, limit: float | None) -> float:
    value = event.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ActionInvalid(f"{name} must be a number")
    # (An integer of 400 digits is JSON too: no float holds it, isfinite can't read it.)
    if abs(value) > _HUGE if isinstance(value, int) else not math.isfinite(value):
        raise ActionInvalid(f"{name} must be a finite number")
    if limit is not None and abs(value) > limit:
        raise ActionInvalid(f"{name} must be at most {limit:g} in size")
    return float(value)


def _key_combo(event: Mapping[str, Any]) -> str:
    key, modifiers = event.get("key"), event.get("modifiers", [])
    if not isinstance(modifiers, list) or any(m not in _MODIFIERS for m in modifiers):
        raise ActionInvalid(f"modifiers are a list of {', '.join(_MODIFIERS)}")
    if not isinstance(key, str):
        raise ActionInvalid("key must be text")
    chord = {m for m in modifiers if m != "Shift"}
    if key not in KEYS and not (len(key) == 1 and key.isprintable() and chord):
        raise ActionInvalid(
            f"key {key[:20]!r} is not one the live view sends",
            hint="named keys: " + ", ".join(sorted(KEYS)) + "; or one character with "
            "Control, Alt or Meta (type text with kind=type)",
        )
    ordered = [m for m in _MODIFIERS if m in modifiers]
    return "+".join([*ordered, key])
