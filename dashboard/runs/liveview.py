"""A live run's picture on its pages: a screencast of the run's current tab while at least
one page watches, sent to the run's group as ``run.frame`` messages.

Frames are not stored and carry no sequence number: a page that missed one simply waits
for the next.  Each page's socket takes a new frame only after the page has drawn the last
one (see consumers.RunPageConsumer.run_frame), so a slow connection gets fewer frames, never
a backlog.  Frames are as large as the widest watching page shows the picture (each says
how wide, in device pixels), :data:`FULL` at most and when a page has not said: a page that
shows the tab at a third of its width is sent a ninth of the pixels.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings

from automation import Tab
from automation.browser.screencast import DEFAULT_MAX_SIZE, Frame, Screencast
from dashboard.runs.doorbell import ring_group
from dashboard.runs.messages import frame_message

__all__ = ["FULL", "MAX_SAID_WIDTH", "LiveView", "frame_size", "view_width"]

FULL = DEFAULT_MAX_SIZE  # the largest JPEG of a frame, width and height in pixels
MIN_WIDTH = 160  # the smallest, for a page that shows the picture tiny
MAX_SAID_WIDTH = 16_384  # device pixels a page may say it shows the picture at


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

    async def close(self) -> None:
        """The run ended: no more frames."""
        self._closed = True
        self.update()
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
