"""Playwright traces of a browser context: what a person opens to see why a run went wrong.

A trace zip holds every action, DOM snapshots before and after it, screenshots, console and
network, and opens in Playwright's trace viewer (``playwright show-trace run.zip`` or
trace.playwright.dev, which reads the file locally).  :class:`TraceRecorder` keeps the
one-trace-at-a-time rule of a context explicit: starting twice or stopping a trace that was
never started is the caller's mistake (ActionInvalid), not a browser failure.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from playwright.async_api import BrowserContext

from automation.browser.pwcall import call
from automation.budget import Budget
from automation.errors import ActionFailed, ActionInvalid

__all__ = ["TraceRecorder"]


class TraceRecorder:
    """Start and stop one trace of ``context`` at a time."""

    def __init__(self, context: BrowserContext) -> None:
        self.context = context
        self._active = False

    @property
    def active(self) -> bool:
        return self._active

    async def start(
        self,
        *,
        title: str | None = None,
        screenshots: bool = True,
        snapshots: bool = True,
        budget: Budget,
    ) -> None:
        """Begin recording; screenshots and DOM snapshots make the trace useful but larger."""
        if self._active:
            raise ActionInvalid("a trace is already being recorded", hint="stop it first")
        if title is not None and not isinstance(title, str):
            raise ActionInvalid("title must be a text")
        if not isinstance(screenshots, bool) or not isinstance(snapshots, bool):
            raise ActionInvalid("screenshots and snapshots must be true or false")
        await call(
            "start the trace",
            budget,
            self.context.tracing.start(
                title=title, screenshots=screenshots, snapshots=snapshots, sources=False
            ),
        )
        self._active = True

    async def stop(self, path: Path, *, budget: Budget) -> Path:
        """End recording and write the zip the trace viewer opens; returns its path."""
        if not self._active:
            raise ActionInvalid("no trace is being recorded", hint="start one first")
        path = _zip_path(path)
        try:
            await budget.run(asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True))
        except OSError as exc:
            raise ActionFailed(f"cannot create the folder for {path}: {exc}") from None
        try:
            await call("stop the trace", budget, self.context.tracing.stop(path=path))
        finally:
            # Forget the trace even when stop failed or ran out of time: the context cannot be
            # asked whether it still traces, and refusing every later start would be worse
            # (a start on a context that still traces fails with ActionFailed and says so).
            self._active = False
        return path

    async def discard(self, *, budget: Budget) -> None:
        """End recording and write nothing (a trace records the values typed: a run that
        typed a secret must not leave one)."""
        if not self._active:
            raise ActionInvalid("no trace is being recorded", hint="start one first")
        try:
            await call("discard the trace", budget, self.context.tracing.stop())
        finally:
            self._active = False


def _zip_path(path: object) -> Path:
    if isinstance(path, str) and path.strip():
        path = Path(path)
    if not isinstance(path, Path) or path.suffix != ".zip":
        raise ActionInvalid(f"a trace is saved as a .zip file path, not {path!r}")
    return path
