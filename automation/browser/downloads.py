"""Every download of a page, kept in one folder under a name that cannot escape it.

Playwright leaves downloads in a temporary folder that disappears with the browser context,
so a report the agent exported would be gone by the time a person looks for it.
:class:`DownloadKeeper` copies each finished download into the run's folder.  The page
chooses the suggested name (``download="../../etc/passwd"``, a ``Content-Disposition``
header), so the name is treated as hostile: :func:`safe_file_name` strips separators, ``..``
and leading dots and limits its length, and the final path is checked to sit in the folder.

The page also chooses the size, endless if it likes (a body that never ends fills the
disk at hundreds of MB a second).  Listening on the tab's CDP session (:meth:`DownloadKeeper.
listen`), the keeper follows each download's progress as Chromium reports it and cancels
one past the tab's ``max_download_bytes``; its record says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.async_api import CDPSession, Download, Page
from playwright.async_api import Error as PlaywrightError

from automation.budget import Budget
from automation.errors import ActionFailed, ActionInvalid, BrowserClosed, BudgetExceeded

__all__ = ["DownloadKeeper", "DownloadRecord", "safe_file_name"]

log = logging.getLogger("automation.browser")

# Bytes, not characters: file systems limit names to 255 bytes, and a suffix like " (12)"
# must still fit after the name was cut.
MAX_NAME_BYTES = 150
_MAX_EXT_BYTES = 16
_UNSAFE_CHARS = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]')
_MAX_RECORDS = 200


@dataclass(frozen=True)
class DownloadRecord:
    name: str  # the file name in the folder ("" when the download failed)
    path: Path | None  # None when the download failed
    size_bytes: int
    url: str
    failure: str | None  # Playwright's failure text ("canceled", a net:: error ...)
    suggested_name: str = ""  # what the page asked for, before sanitizing

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": str(self.path) if self.path else None,
            "size_bytes": self.size_bytes,
            "url": self.url,
            "failure": self.failure,
            "suggested_name": self.suggested_name,
        }


def safe_file_name(suggested: str, *, max_bytes: int = MAX_NAME_BYTES) -> str:
    """A plain file name for ``suggested``: one path component, no ``..``, no leading dot."""
    name = unicodedata.normalize("NFC", suggested or "")
    name = _UNSAFE_CHARS.sub("_", name)
    name = re.sub(r"\.{2,}", ".", name)
    name = name.lstrip(" ._").rstrip(" .")
    if not name:
        return "download"
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem or len(ext.encode()) > _MAX_EXT_BYTES:
        stem, ext = name, ""
    ext = f".{ext}" if ext else ""
    budget = max_bytes - len(ext.encode())
    while len(stem.encode()) > budget:
        stem = stem[:-1]
    return (stem.rstrip(" .") or "download") + ext


def _size(path: Path) -> int:
    return path.stat().st_size


class DownloadKeeper:
    """Saves each download of ``page`` into ``folder`` and records it, in the order they
    began; ``max_bytes`` (asked each time) is the most one may take, once :meth:`listen`
    follows their progress."""

    def __init__(
        self, page: Page, folder: Path, *, max_bytes: Callable[[], int] = lambda: 1 << 30
    ) -> None:
        self.page = page
        self.folder = Path(folder).resolve()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self._started = 0
        # What a download check reads (automation.recording.expect): the downloads begun
        # since ``_window``, which a step after a check that read one moves past it.
        self._window = 0
        self._judged = -1
        # What a wait with no ``after`` answers (:meth:`unanswered`): the downloads begun
        # since the last action began, that no wait answered yet.
        self._action_from = 0
        self._answered = -1
        self._records: dict[int, DownloadRecord] = {}
        self._waiters: dict[int, list[asyncio.Future[DownloadRecord]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._attached = True
        # Under way: Playwright's downloads, and what Chromium says of each (by its guid).
        self._going: list[Download] = []
        self._begun: dict[str, tuple[str, str]] = {}  # guid -> (url, suggested name)
        self._cut: dict[int, str] = {}  # id(download) -> why it was cancelled
        self._session: CDPSession | None = None
        page.on("download", self._on_download)
        page.on("close", self._on_close)

    def listen(self, session: CDPSession) -> None:
        """Follow the downloads' progress on the page's CDP session (its Page domain
        enabled), cancelling one that grows past ``max_bytes``."""
        self._session = session
        session.on("Page.downloadWillBegin", self._on_will_begin)
        session.on("Page.downloadProgress", self._on_progress)

    def detach(self) -> None:
        """Stop keeping new downloads; downloads already begun are still saved."""
        if self._attached:
            self._attached = False
            self.page.remove_listener("download", self._on_download)
            self.page.remove_listener("close", self._on_close)
            if self._session is not None:
                self._session.remove_listener("Page.downloadWillBegin", self._on_will_begin)
                self._session.remove_listener("Page.downloadProgress", self._on_progress)

    async def finish(self, timeout_s: float) -> list[str]:
        """Wait, at most ``timeout_s``, for the downloads under way to end and be saved (a
        run whose last click began one ends before it came); the URLs of those still
        coming after it, which closing the context cancels."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout_s)
        return [download.url for download in self._going]

    def records(self) -> list[DownloadRecord]:
        """Finished downloads (saved or failed), oldest first."""
        return [self._records[seq] for seq in sorted(self._records)]

    def latest_to_check(self) -> tuple[int, DownloadRecord | None] | None:
        """The latest download begun since the last step that followed a check of one
        (:meth:`step_begins`): its number, and its record once it has ended (None while
        it comes); None when none has begun since.  A check of an earlier download would
        hold on a file a step before gave, whatever the step it checks did."""
        if self._started <= self._window:
            return None
        seq = self._started - 1
        return seq, self._records.get(seq)

    def judged(self, seq: int) -> None:
        """A check read download ``seq``: the next step's downloads are the next check's."""
        self._judged = max(self._judged, seq)

    def step_begins(self) -> None:
        """A step that may download begins: once a check has read a download, the checks
        after this step read only what began since (two checks in a row read one)."""
        if self._judged >= self._window:
            self._window = self._judged + 1

    def mark(self) -> int:
        """How many downloads have begun; pass it to :meth:`wait_next` as ``after``."""
        return self._started

    def action_begins(self) -> None:
        """An action begins (not a wait for a download): a wait right after it answers the
        downloads it starts, though they end as it settles, before the wait is asked."""
        self._action_from = self._started

    def unanswered(self) -> int:
        """What a wait after an action waits for (``after``): the first download begun
        since the action began that no wait answered yet; else the next to begin."""
        return max(self._action_from, self._answered + 1)

    async def wait_next(self, *, budget: Budget, after: int | None = None) -> DownloadRecord:
        """The first download that begins after ``after`` (default: now), once it is finished.

        For an action that expects a download, take ``mark()`` before the action and pass it
        here, so a download that finishes before this call is not missed.  A failed download
        is returned with its ``failure`` set; the caller decides whether that is an error.
        """
        if after is None:
            after = self._started
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise ActionInvalid(f"after must be a mark() value, not {after!r}")
        if after in self._records:
            self._answered = max(self._answered, after)
            return self._records[after]
        if self.page.is_closed():
            raise BrowserClosed("the tab is closed; no download can arrive")
        waiter: asyncio.Future[DownloadRecord] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(after, []).append(waiter)
        try:
            record = await budget.run(waiter)
            self._answered = max(self._answered, after)
            return record
        except BudgetExceeded:
            raise BudgetExceeded(
                f"no download finished within {budget.timeout_ms:.0f} ms",
                hint="check that the action starts a download, or give it more time",
            ) from None
        finally:
            waiters = self._waiters.get(after, [])
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters:
                self._waiters.pop(after, None)

    # -- listeners ----------------------------------------------------------------------

    def _on_will_begin(self, params: dict[str, Any]) -> None:
        self._begun[str(params.get("guid"))] = (
            str(params.get("url", "")), str(params.get("suggestedFilename", ""))
        )  # fmt: skip

    def _on_progress(self, params: dict[str, Any]) -> None:
        guid = str(params.get("guid"))
        if params.get("state") != "inProgress":
            self._begun.pop(guid, None)
            return
        limit = self.max_bytes()
        received = params.get("receivedBytes")
        if guid not in self._begun or not isinstance(received, int | float) or received <= limit:
            return
        url, name = self._begun.pop(guid)
        download = next((d for d in self._going if id(d) not in self._cut
                         and (d.url, d.suggested_filename) == (url, name)), None)  # fmt: skip
        if download is None:
            return
        self._cut[id(download)] = (
            f"cancelled past {limit} bytes, the most a download may take here "
            f"({int(received)} bytes had come)"
        )
        task = asyncio.ensure_future(download.cancel())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_download(self, download: Download) -> None:
        seq, self._started = self._started, self._started + 1
        self._going.append(download)
        task = asyncio.ensure_future(self._keep(seq, download))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_close(self, _page: Page) -> None:
        for waiters in self._waiters.values():
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(BrowserClosed("the tab closed before a download came"))

    async def _keep(self, seq: int, download: Download) -> None:
        suggested, url = download.suggested_filename, download.url
        path: Path | None = None
        try:
            failure = await download.failure()  # waits until the download ends
            failure = self._cut.get(id(download), failure)
            if failure is None:
                path = await asyncio.to_thread(self._reserve, safe_file_name(suggested))
                await download.save_as(path)
            size = await asyncio.to_thread(_size, path) if path is not None else 0
            record = DownloadRecord(path.name if path else "", path, size, url, failure, suggested)
        except (PlaywrightError, ActionFailed, OSError) as exc:
            if path is not None:
                with contextlib.suppress(OSError):
                    path.unlink()
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            record = DownloadRecord("", None, 0, url, reason[:300], suggested)
        self._records[seq] = record
        self._going.remove(download)
        self._cut.pop(id(download), None)
        while len(self._records) > _MAX_RECORDS:
            self._records.pop(min(self._records))
        for waiter in self._waiters.pop(seq, []):
            if not waiter.done():
                waiter.set_result(record)

    def _reserve(self, name: str) -> Path:
        """Create an empty file under a free name, so concurrent downloads never share one."""
        stem, dot, ext = name.rpartition(".")
        if not dot or not stem:
            stem, ext = name, ""
        ext = f".{ext}" if ext else ""
        for attempt in range(1000):
            candidate = self.folder / (name if attempt == 0 else f"{stem} ({attempt}){ext}")
            # Defense in depth: safe_file_name already made one plain path component.
            if candidate.parent != self.folder or candidate.name in ("", ".", ".."):
                raise ActionFailed(f"refused to save a download as {candidate.name!r}")
            try:
                # O_EXCL also refuses an existing symlink, so nothing redirects the write.
                os.close(os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            except FileExistsError:
                continue
            return candidate
        raise ActionFailed(f"no free file name for {name!r} in {self.folder}")
