"""DownloadKeeper on a real Chromium (fixtures/engine/downloads.html) and with hostile names."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from automation import BrowserSession, Budget, Tab
from automation.browser.downloads import (
    MAX_NAME_BYTES,
    DownloadKeeper,
    DownloadRecord,
    safe_file_name,
)
from automation.errors import ActionInvalid, BudgetExceeded
from tests.bounds import room
from tests.net import QuietHandler, loopback_app
from tests.waiting import eventually

REPORT = Path(__file__).resolve().parents[3] / "fixtures" / "engine" / "files" / "report.csv"


async def open_downloads(tab: Tab, fixture_url: str, folder: Path) -> DownloadKeeper:
    keeper = DownloadKeeper(tab.page, folder)
    await tab.page.goto(f"{fixture_url}/engine/downloads.html")
    return keeper


async def download(keeper: DownloadKeeper, tab: Tab, link: str) -> DownloadRecord:
    mark = keeper.mark()
    await tab.page.click(f"#{link}", timeout=3_000)
    return await keeper.wait_next(after=mark, budget=room())


def listing(root: Path) -> list[str]:
    """Every path under ``root``, relative and sorted: proof nothing was written elsewhere."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


class FakeDownload:
    """What Playwright hands over, with a name a browser other than Chromium might pass on."""

    def __init__(self, suggested_filename: str, *, failure: str | None = None) -> None:
        self.suggested_filename = suggested_filename
        self.url = "http://127.0.0.1/evil"
        self._failure = failure

    async def failure(self) -> str | None:
        return self._failure

    async def save_as(self, path: Path) -> None:
        await asyncio.to_thread(Path(path).write_text, "pwned?")


async def test_file_and_blob_downloads_are_kept(tab: Tab, fixture_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "new" / "downloads"  # created on demand
    keeper = await open_downloads(tab, fixture_url, folder)
    report = await download(keeper, tab, "file")
    assert (report.name, report.failure, report.suggested_name) == (
        "report.csv",
        None,
        "report.csv",
    )
    assert report.path == folder.resolve() / "report.csv"
    assert report.path.read_bytes() == REPORT.read_bytes()
    assert report.size_bytes == REPORT.stat().st_size
    assert report.url.endswith("/engine/files/report.csv")

    notes = await download(keeper, tab, "blob")
    assert notes.name == "notes.txt" and notes.url.startswith("blob:")
    assert notes.path is not None and notes.path.read_text() == "first note\nsecond note\n"

    again = await download(keeper, tab, "same-name")
    assert again.name == "report (1).csv"  # never overwrites an earlier download
    assert keeper.records() == [report, notes, again]
    assert again.to_dict()["path"] == str(again.path)


async def test_hostile_names_stay_in_the_folder(tab: Tab, fixture_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "downloads"
    keeper = await open_downloads(tab, fixture_url, folder)
    for link in ("hostile", "hostile-backslash", "dotfile"):  # Chromium cleans these first
        record = await download(keeper, tab, link)
        assert record.path is not None and record.path.parent == folder.resolve()
        assert not record.name.startswith(".")

    kept = sorted(f"downloads/{r.name}" for r in keeper.records())
    assert listing(tmp_path) == ["downloads", *kept]


async def test_names_a_browser_passes_on_untouched(tab: Tab, tmp_path: Path) -> None:
    # Chromium cleans download="../../etc/passwd" itself; a browser reached by CDP may not.
    folder = tmp_path / "downloads"
    keeper = DownloadKeeper(tab.page, folder)
    for suggested, expected in (("../../etc/passwd", "etc_passwd"), ("..\\x", "x")):
        mark = keeper.mark()
        keeper._on_download(FakeDownload(suggested))  # type: ignore[arg-type]
        record = await keeper.wait_next(after=mark, budget=room())
        assert record.name == expected and record.suggested_name == suggested
        assert record.path == folder.resolve() / expected
    assert listing(tmp_path) == [
        "downloads",
        "downloads/etc_passwd",
        "downloads/x",
    ]


async def test_failed_download_is_recorded(tab: Tab, tmp_path: Path) -> None:
    keeper = DownloadKeeper(tab.page, tmp_path)
    mark = keeper.mark()
    keeper._on_download(FakeDownload("report.csv", failure="canceled"))  # type: ignore[arg-type]
    record = await keeper.wait_next(after=mark, budget=room())
    assert (record.name, record.path, record.size_bytes, record.failure) == (
        "",
        None,
        0,
        "canceled",
    )
    assert listing(tmp_path) == []  # no empty placeholder left behind


async def test_wait_next_times_out_and_checks_after(tab: Tab, tmp_path: Path) -> None:
    keeper = DownloadKeeper(tab.page, tmp_path)
    with pytest.raises(BudgetExceeded, match="no download"):
        await keeper.wait_next(budget=Budget(150))
    for bad in (-1, "0", True):
        with pytest.raises(ActionInvalid):
            await keeper.wait_next(after=bad, budget=Budget(150))  # type: ignore[arg-type]
    keeper.detach()
    keeper.detach()


@pytest.mark.parametrize(
    ("suggested", "expected"),
    [
        ("report.csv", "report.csv"),
        ("../../etc/passwd", "etc_passwd"),
        ("..\\x", "x"),
        ("..\\..\\windows\\system32", "windows_system32"),
        (".bashrc", "bashrc"),
        ("a..b.txt", "a.b.txt"),
        ('what?<>:|*"\x00\n.pdf', "what_________.pdf"),
        ("", "download"),
        ("....", "download"),
        ("/", "download"),
        ("facture été.pdf", "facture été.pdf"),
    ],
)
def test_safe_file_name(suggested: str, expected: str) -> None:
    assert safe_file_name(suggested) == expected


def test_safe_file_name_limits_bytes_and_keeps_the_extension() -> None:
    name = safe_file_name("é" * 300 + ".xlsx")
    assert len(name.encode()) <= MAX_NAME_BYTES and name.endswith(".xlsx")
    assert safe_file_name("x" * 300).startswith("x") and len(safe_file_name("x" * 300)) == 150


class _Endless(BaseHTTPRequestHandler):
    """A page whose link downloads a body that never ends (until the browser hangs up)."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/":
            page = b'<a id="big" href="/big.bin" download>Get it</a>'
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        with contextlib.suppress(OSError):
            while True:
                self.wfile.write(b"x" * 65_536)


async def test_a_download_without_end_is_cancelled_past_the_tab_s_limit(
    browser: BrowserSession, tmp_path: Path
) -> None:
    limit = 2 * 1024 * 1024
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endless)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config = replace(browser.config, max_download_bytes=limit)
    tab = await browser.new_tab(workspace=tmp_path, config=config)
    try:
        assert tab.downloads is not None
        await tab.page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        mark = tab.downloads.mark()
        await tab.page.click("#big")
        record = await tab.downloads.wait_next(after=mark, budget=room())
    finally:
        await tab.close()
        server.shutdown()
        server.server_close()
    assert record.failure is not None and record.path is None, record
    assert record.failure.startswith(f"cancelled past {limit} bytes, the most a download may")
    assert listing(tmp_path / "downloads") == []  # nothing kept


SLOW_BODY = b"id,total\n" + b"1,10\n" * 20_000


class _Slow(QuietHandler):
    """A page whose link downloads a file that comes half at once, the rest a second
    later: a download still under way when the tab's work ends."""

    def do_GET(self) -> None:
        if self.path == "/":
            self.send(200, b'<a id="slow" href="/slow.csv" download>Slow report</a>')
            return
        half = len(SLOW_BODY) // 2
        self.send_response(200)
        self.send_header("Content-Type", "text/csv")
        self.send_header("Content-Length", str(len(SLOW_BODY)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(SLOW_BODY[:half])
            self.wfile.flush()
            threading.Event().wait(1.0)  # the download, slow: not the test's own wait
            self.wfile.write(SLOW_BODY[half:])


def slow_download_site() -> contextlib.AbstractContextManager[str]:
    """A site on 127.0.0.1 whose "Slow report" takes a second to come (``_Slow``)."""
    return loopback_app(_Slow)


async def begin_slow(tab: Tab, site: str) -> DownloadKeeper:
    """The tab's keeper, once the tab began the slow download (still coming)."""
    assert tab.downloads is not None
    keeper = tab.downloads
    await tab.page.goto(f"{site}/")
    mark = keeper.mark()
    await tab.page.click("#slow")
    await eventually(lambda: keeper.mark() > mark, what="the download begun")
    return keeper


def kept_whole(keeper: DownloadKeeper) -> None:
    [record] = keeper.records()
    assert record.failure is None, record
    assert record.path is not None and record.path.read_bytes() == SLOW_BODY


async def test_a_download_under_way_when_the_tab_closes_is_kept_whole(
    browser: BrowserSession, tmp_path: Path
) -> None:
    with slow_download_site() as site:
        tab = await browser.new_tab(workspace=tmp_path)
        keeper = await begin_slow(tab, site)
        await tab.close()  # the run's last tab: its context, after its downloads
    kept_whole(keeper)


async def test_a_download_of_a_tab_closed_before_its_run_ends_is_kept_whole(
    browser: BrowserSession, tmp_path: Path
) -> None:
    with slow_download_site() as site:
        first = await browser.new_tab(workspace=tmp_path)
        assert first.group is not None
        keeper = await begin_slow(await first.group.open(), site)
        await first.group.close_tab(1)  # the agent closes the tab; its download comes on
        await first.close()  # the run's last tab: its context, after every download
    kept_whole(keeper)
