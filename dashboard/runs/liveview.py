"""A live run's picture on its pages: a screencast of the run's current tab while at least
one page watches, sent to the run's group as ``run.frame`` messages.

Frames are not stored and carry no sequence number: a page that missed one simply waits
for the next.  Each page's socket takes a new frame only after the page has drawn the last
one (see consumers.RunPageConsumer.run_frame), so a slow connection gets fewer frames, never
a backlog.  Frames are as large as the widest watching page shows the picture (each says
how wide, in device pixels), :data:`FULL` at most and when a page has not said: a page that
shows the tab at a third of its width is sent a ninth of the pixels.

While a page watches, the run's open tabs are looked at every :data:`TABS_S` and, while
there is more than one, sent as ``run.tabs`` when they changed (a popup opened or closed,
a page loaded, another tab became current), and once more when a page comes: the run
page's tab strip (a run of one tab has none, and sends nothing).  On it the
person who has the tab makes another one current (:func:`switch_tab`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.conf import settings

from automation import Tab
from automation.browser.screencast import DEFAULT_MAX_SIZE, Frame, Screencast, viewport_point
from automation.budget import Budget
from automation.errors import ActionInvalid
from automation.recording.recorder import Recorder
from dashboard.runs.doorbell import ring_group
from dashboard.runs.messages import frame_message, tabs_message

__all__ = ["FULL", "MAX_SAID_WIDTH", "TABS_S", "LiveView", "check_at", "frame_size",
           "recorder_follows", "switch_tab", "view_width"]  # fmt: skip

log = logging.getLogger("tabwright.liveview")

FULL = DEFAULT_MAX_SIZE  # the largest JPEG of a frame, width and height in pixels
MIN_WIDTH = 160  # the smallest, for a page that shows the picture tiny
MAX_SAID_WIDTH = 16_384  # device pixels a page may say it shows the picture at
TABS_S = 0.5  # how often the run's tabs are looked at while a page watches


def view_width(value: object) -> int | None:
    """The width a page says it shows the picture at: a whole number of device pixels
    from 0 (not said) to :data:`MAX_SAID_WIDTH`; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_SAID_WIDTH else None


def frame_size(widths: Sequence[int]) -> tuple[int, int]:
    """The size of frames for pages showing the picture ``widths`` wide (0: not said):
    the widest, in :data:`FULL`'s shape, within :data:`MIN_WIDTH` and :data:`FULL`."""
    if not widths or 0 in widths:
        return FULL
    width = min(FULL[0], max(MIN_WIDTH, *widths))
    return width, FULL[1] * width // FULL[0]


def _as_is(text: str) -> str:
    return text


class LiveView:
    def __init__(
        self,
        group: str,
        current: Callable[[], Tab | None],
        *,
        redact: Callable[[str], str] = _as_is,
    ) -> None:
        self._group = group
        self._current = current
        # The run's secrets: a frame carries the tab's address, which a GET form submit
        # filled with a secret (the pixels are masked in the page: automation.browser.masking).
        self._redact = redact
        self._viewers = 0
        self._size = FULL
        self._cast: Screencast | None = None
        self._stopping: set[asyncio.Task[None]] = set()
        self._closed = False
        # For a page that opens now: Chromium sends frames only when the picture changes.
        self.last_frame: dict[str, Any] | None = None
        self._tabs_task: asyncio.Task[None] | None = None
        self.last_tabs: list[dict[str, Any]] | None = None  # as last seen (None: send anew)

    @property
    def size(self) -> tuple[int, int]:
        """The largest JPEG of a frame for the pages that watch now, in pixels."""
        return self._size

    @property
    def streaming(self) -> bool:
        return self._cast is not None and self._cast.running

    def set_viewers(self, widths: Sequence[int]) -> None:
        """The pages that watch now, by the width each shows the picture at (0: not
        said): the screencast runs while there is one, its frames sized for them."""
        if len(widths) > self._viewers:  # a page came: it is told the tabs too
            self.last_tabs = None
        self._viewers = len(widths)
        self._size = frame_size(widths)
        self.update()

    def update(self) -> None:
        """Start or stop to match the viewers and whether the run has a tab yet."""
        want = self._viewers > 0 and not self._closed and self._current() is not None
        if self._cast is not None and (not want or not self._cast.running):  # (ended: anew)
            cast, self._cast = self._cast, None
            task = asyncio.ensure_future(cast.stop())
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)
        if want and self._cast is None:
            conf = settings.TABWRIGHT
            self._cast = Screencast(self._current, self._send, max_fps=conf["LIVE_VIEW_FPS"],
                                    quality=conf["LIVE_VIEW_QUALITY"], max_width=self._size[0],
                                    max_height=self._size[1])  # fmt: skip
            self._cast.start()
        elif want and self._cast is not None:
            self._cast.resize(*self._size)
        if want and (self._tabs_task is None or self._tabs_task.done()):
            self._tabs_task = asyncio.create_task(self._follow_tabs(), name="live-view tabs")
        elif not want and self._tabs_task is not None:
            self._tabs_task.cancel()
            self._tabs_task = None

    async def close(self) -> None:
        """The run ended: no more frames."""
        self._closed = True
        self.update()
        if self._tabs_task is not None:
            self._tabs_task.cancel()
        if self._stopping:
            with contextlib.suppress(Exception):
                await asyncio.gather(*self._stopping)

    async def _send(self, frame: Frame) -> None:
        message = {
            "type": "frame",
            "jpeg": base64.b64encode(frame.jpeg).decode("ascii"),
            "width": frame.width,
            "height": frame.height,
            "url": self._redact(frame.url),
        }
        self.last_frame = message
        await ring_group(self._group, frame_message(message))  # a frame lost: the next comes

    async def _follow_tabs(self) -> None:
        """Send the run's tabs (addresses and titles redacted) whenever they changed, once
        there is more than one (and once more as there is one again)."""
        while True:
            tab = self._current()
            group = tab.group if tab is not None else None
            if group is not None:
                try:
                    rows = await group.overview()
                except Exception:  # the browser going away: the next turn looks again
                    log.debug("the run's tabs could not be listed", exc_info=True)
                else:
                    shown = [{**row, "url": self._redact(row["url"]),
                              "title": self._redact(row["title"])} for row in rows]  # fmt: skip
                    # A run of one tab has no strip: nothing to send until it has more.
                    before, self.last_tabs = self.last_tabs, shown
                    if shown != before and max(len(shown), len(before or ())) > 1:
                        await ring_group(self._group, tabs_message(shown))
            await asyncio.sleep(TABS_S)


async def check_at(
    recorder: Recorder | None, tab: Tab, event: Mapping[str, Any], budget: Budget
) -> str:
    """The live view's "check this": a check of the element at the point, recorded with
    the person's steps (nothing is clicked)."""
    if recorder is None or not recorder.listens_in(tab):
        raise ActionInvalid(
            "checks are recorded only while the run is paused, on its tab or a popup it opened",
            hint="take over, then use Check this",
        )
    if not recorder.takes_checks:  # (it would be dropped with the step's rescue)
        raise ActionInvalid(
            "a replay's checks are its scenario's: a check made here would not be kept",
            hint="add the check on the scenario's page",
        )
    x, y = viewport_point(tab, event)
    step = await recorder.check_at(x, y, budget=budget, tab=tab)
    return step.describe()


async def recorder_follows(recorder: Recorder | None, tab: Tab, budget: Budget) -> None:
    """The person made ``tab`` the run's current one by hand (the tab strip, a ``tabs``
    select of theirs): while their acts are recorded, the recording goes there too."""
    if recorder is not None:
        await recorder.went_to(tab, budget=budget)


async def switch_tab(
    tab: Tab, recorder: Recorder | None, event: Mapping[str, Any], budget: Budget
) -> str:
    """The tab strip's choice ``{"kind": "tab", "tab": id}``: that tab of the run becomes
    its current one, as the agent's ``tabs`` select makes it (the live view follows it,
    the person's input goes there, the run goes on there).  While the person's acts are
    recorded, the recording goes there too: the moves a replay makes to get there are
    recorded as acting there records them (Recorder.went_to).  TabNotFound for an id of
    no open tab, ActionInvalid for one that is no id."""
    group = tab.group
    if group is None:
        raise ActionInvalid("the run has one tab only")
    chosen = await budget.run(group.select_id(event.get("tab")))
    if chosen is not tab:
        await recorder_follows(recorder, chosen, budget)
    return f"tab {group.id_of(chosen)} is current: {chosen.page.url}"
