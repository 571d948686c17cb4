"""Checks of a download: its name, type, size, a CSV's header and rows, a phrase; proposed
from the file a run downloaded, and held against the file a replay downloads."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from automation.browser.session import BrowserSession
from automation.errors import ScenarioInvalid
from automation.recording import downloads, expect
from automation.recording.downloadfile import holds_file
from automation.recording.export import to_pytest
from automation.recording.propose import propose_checks
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario, ScenarioStep
from automation.secrets import Secrets
from tests.automation.recording.test_totp_replay import ENV, sign_in
from tests.backoffice import back_office
from tests.bounds import room
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

CSV = 'order,customer,total\r\n1001,Ada,12.50\r\n1002,"Grace, H.",8.00\r\n'


def write(folder: Path, name: str, data: bytes | str) -> Path:
    path = folder / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def holds(path: Path, **args: object) -> tuple[bool, str]:
    return holds_file(path, path.name, {"kind": "download", **args})


def test_a_csv_is_checked_by_name_type_size_header_rows_and_text(tmp_path: Path) -> None:
    path = write(tmp_path, "orders-2026-11-28.csv", CSV)
    assert holds(path, name="orders-*.csv", type="csv", min_bytes=10, max_bytes=1000,
                 header=["order", "customer", "total"], rows=2, text="grace,  h.")[0]  # fmt: skip
    assert holds(path, rows=3) == (False, "'orders-2026-11-28.csv' has 2 row(s) of data")
    assert holds(path, header=["order", "total"])[1].startswith("'orders-2026-11-28.csv' has the")
    assert holds(path, name="invoices-*.csv") == (
        False, "the download is named 'orders-2026-11-28.csv'"
    )  # fmt: skip
    assert holds(path, max_bytes=5)[1] == f"'orders-2026-11-28.csv' has {len(CSV)} bytes"
    assert holds(path, text="Hopper")[1] == "'orders-2026-11-28.csv' does not say 'Hopper'"


def test_a_pdf_is_known_by_its_content_and_has_no_rows(tmp_path: Path) -> None:
    path = write(tmp_path, "report.bin", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj")
    assert holds(path, type="pdf")[0]
    assert holds(path, type="csv") == (False, "'report.bin' is pdf")
    assert holds(path, text="total") == (False, "'report.bin' is pdf, not text")


def test_the_proposal_is_the_file_as_it_is_and_holds_on_the_next_days(tmp_path: Path) -> None:
    args = downloads.propose(write(tmp_path, "orders-2026-11-28.csv", CSV),
                             "orders-2026-11-28.csv")  # fmt: skip
    header = ["order", "customer", "total"]
    assert args == {"kind": "download", "name": "orders-*-*-*.csv", "type": "csv",
                    "min_bytes": 1, "header": header}  # fmt: skip
    check = ScenarioStep.from_dict({"action": "expect", "args": args})
    assert check.describe().startswith("expect a download 'orders-*-*-*.csv' (csv)")
    tomorrow = write(tmp_path, "orders-2026-11-29.csv", CSV)
    assert holds_file(tomorrow, tomorrow.name, check.args)[0]
    # Another day's orders, fewer of them: the same export.
    fewer = write(tmp_path, "orders-2026-11-30.csv", CSV.rsplit("\r\n", 2)[0] + "\r\n")
    assert holds_file(fewer, fewer.name, check.args)[0]
    other = write(tmp_path, "orders-2026-12-01.csv", "order;total\r\n1;2\r\n")
    assert not holds_file(other, other.name, check.args)[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "names at least one of"),
        ({"type": "docx"}, "type is one of"),
        ({"rows": -1}, "rows must be a whole number"),
        ({"header": "a,b"}, "header must be a list"),
        ({"type": "pdf", "rows": 2}, "header and rows are a CSV's"),
        ({"min_bytes": 2_000, "max_bytes": 1_000}, "min_bytes is over its max_bytes"),
        ({"size": 3}, "download takes no size"),
        ({"text": "${SECRET:PW}"}, "can't hold a secret"),
        ({"text": "${TOTP:BO}"}, "can't hold a secret"),
    ],
)
def test_a_bad_download_check_is_refused_saying_why(args: dict[str, object], message: str) -> None:
    with pytest.raises(ScenarioInvalid, match=message):
        expect.validate({"kind": "download", **args}, has_element=False, index=3)


# A file a page served as a CSV, shaped against csv.Sniffer: its patterns take time
# quadratic in the file's first 64 KiB, in one call that holds the interpreter (minutes
# for each of these, during which every thread of the process waited: the pages, sockets
# and runs of the server a run's worker lives in).  Each is read now in linear time.
HOSTILE_CSV = ['"\n' * 40_000, ',"' * 40_000, ';"x' * 30_000]


@pytest.mark.parametrize("text", HOSTILE_CSV, ids=["quote-break", "comma-quote", "semi-quote"])
def test_a_csv_shaped_against_the_delimiter_guess_is_read_at_once(
    tmp_path: Path, text: str
) -> None:
    path = write(tmp_path, "export.csv", text)
    held, why = holds(path, rows=1)
    assert not held and why.startswith("'export.csv' has "), why
    assert downloads.propose(path, "export.csv")["type"] == "csv"


async def test_a_download_is_checked_while_the_default_executor_is_held(tmp_path: Path) -> None:
    """Every thread of the event loop's default executor held (slow reads, a big page's
    parse, lookups): a check of a download waited behind them; and a check, seconds of
    work for a file a page shaped, held one of them.  Checks have threads of their own."""
    path = write(tmp_path, "orders.csv", CSV)
    loop = asyncio.get_running_loop()
    release = threading.Event()
    held = [loop.run_in_executor(None, release.wait) for _ in range(64)]  # past its threads
    try:
        async with asyncio.timeout(60):
            assert (await downloads.holds(path, path.name, {"kind": "download", "rows": 2}))[0]
            assert (await downloads.proposed(path, path.name))["type"] == "csv"
    finally:
        release.set()
        await asyncio.gather(*held)


def test_the_delimiter_is_the_one_that_splits_the_rows_alike(tmp_path: Path) -> None:
    semi = write(tmp_path, "a.csv", 'order;note;total\r\n1;"late, again";3\r\n2;ok;4\r\n')
    assert holds(semi, header=["order", "note", "total"], rows=2)[0]
    spaced = write(tmp_path, "b.csv", 'order, note\n1, "late, again"\n')
    assert holds(spaced, header=["order", "note"], rows=1)[0]
    piped = write(tmp_path, "c.csv", "order|total\n1|2\n")
    assert holds(piped, header=["order", "total"], rows=1)[0]
    one = write(tmp_path, "d.csv", "order\n1\n2\n")
    assert holds(one, header=["order"], rows=2)[0]


def test_a_csv_that_cant_be_read_says_so(tmp_path: Path) -> None:
    path = write(tmp_path, "big.csv", 'a,b\n"' + "x" * 200_000 + '",1\n')
    held, why = holds(path, rows=1)
    assert not held and why.startswith("'big.csv' can't be read as CSV: field larger"), why
    assert "header" not in downloads.propose(path, "big.csv")


# -- in a real browser: the back office's export --------------------------------------


async def test_a_replay_checks_the_export_it_downloads(
    browser: BrowserSession, tmp_path: Path
) -> None:
    link = {"role": "link", "name": "Export CSV", "tag": "a", "selectors": ["a[download]"]}

    def export(url: str, rows: int) -> Scenario:
        check = {"kind": "download", "name": "orders*.csv", "type": "csv", "rows": rows,
                 "header": ["order", "customer", "total"]}  # fmt: skip
        steps = [*sign_in(url).to_dict()["steps"],
                 {"action": "click", "args": {}, "identity": link},
                 {"action": "expect", "args": check}]  # fmt: skip
        return Scenario.from_dict({"version": 1, "name": "Export", "steps": steps})

    results = []
    with back_office() as office:
        for rows in (2, 3):
            tab = await browser.new_tab(workspace=tmp_path / str(rows))
            try:
                replay = Replay(tab, export(office.url, rows), env=ENV, secrets=Secrets(ENV))
                results.append(await replay.run())
            finally:
                await tab.close()
    assert results[0].ok, results[0].reason
    assert not results[1].ok
    assert results[1].reason.endswith("but 'orders.csv' has 2 row(s) of data"), results[1].reason


class _TwoExports(QuietHandler):
    """Two exports, orders and customers; from ``release`` 2 on, the customers' link opens
    a page saying the export failed, and downloads nothing."""

    release = 1

    def do_GET(self) -> None:
        if self.path == "/orders.csv":
            self.send(200, b"order,customer\r\n1001,Ada\r\n", Content_Type="text/csv",
                      Content_Disposition='attachment; filename="orders.csv"')  # fmt: skip
        elif self.path == "/customers.csv" and self.release == 1:
            self.send(200, b"customer\r\nBob\r\n", Content_Type="text/csv",
                      Content_Disposition='attachment; filename="customers.csv"')  # fmt: skip
        elif self.path == "/customers.csv":
            self.send(200, b"<h1>The export failed</h1>")
        else:
            self.send(200, b'<h1>Exports</h1><a href="/orders.csv">Orders</a> '
                      b'<a href="/customers.csv">Customers</a>')  # fmt: skip


async def test_a_download_check_reads_a_download_its_steps_began_not_one_checked_before(
    browser: BrowserSession, tmp_path: Path
) -> None:
    """The customers' export stopped downloading: the check after its click read the
    orders' file, checked before it, and the replay passed."""

    def link(name: str) -> dict[str, Any]:
        return {"action": "click", "args": {},
                "identity": {"role": "link", "name": name, "tag": "a"}}  # fmt: skip

    csv = {"action": "expect", "args": {"kind": "download", "type": "csv"}}
    with loopback_app(_TwoExports) as site:
        steps = [{"action": "navigate", "args": {"url": f"{site}/"}}, link("Orders"), csv,
                 {"action": "expect", "args": {"kind": "download", "text": "Ada"}},  # one file
                 link("Customers"), csv]  # fmt: skip
        scenario = Scenario.from_dict({"version": 1, "name": "Exports", "steps": steps})
        results = []
        for release in (1, 2):
            _TwoExports.release = release
            tab = await browser.new_tab(workspace=tmp_path / str(release))
            try:
                config = ReplayConfig(check_timeout_ms=1_500)
                results.append(await Replay(tab, scenario, config=config).run())
            finally:
                await tab.close()
        # The pytest export reads the downloads by the same rule (it read the latest one).
        code = to_pytest(scenario)
        exported = []
        for release in (1, 2):
            _TwoExports.release = release
            folder = tmp_path / f"export-{release}"
            folder.mkdir()
            exported.append(await run_exported(code, folder, site, timeout_ms=3_000))
    assert results[0].ok, results[0].reason
    assert not results[1].ok
    assert results[1].reason.startswith("step 5 (expect"), results[1].reason
    assert "nothing was downloaded since the download checked before" in results[1].reason
    assert exported[0][0] == 0, exported[0][1]
    assert exported[1][0] == 1 and "1 failed" in exported[1][1], exported[1][1]
    assert "nothing was downloaded since the download checked before" in exported[1][1]


class _ReportPopup(QuietHandler):
    """A report opened in a popup (``target=_blank``), whose link downloads the orders."""

    def do_GET(self) -> None:
        if self.path == "/orders.csv":
            self.send(200, b"order,customer\r\n1001,Ada\r\n", Content_Type="text/csv",
                      Content_Disposition='attachment; filename="orders.csv"')  # fmt: skip
        elif self.path == "/report":
            self.send(200, b'<h1>Report</h1><a href="/orders.csv">Orders</a>')
        else:
            self.send(200, b'<h1>Home</h1><a href="/report" target="_blank">Report</a>')


async def test_a_download_in_a_popup_is_checked_there_by_the_replay_and_the_export(
    browser: BrowserSession, tmp_path: Path
) -> None:
    """The orders are downloaded from a report the home page opens in a popup, and checked
    there: the replay reads the popup's download, and so does the pytest export (it kept
    only its first page's downloads: nothing was downloaded, it said)."""

    def link(name: str) -> dict[str, Any]:
        return {"action": "click", "args": {},
                "identity": {"role": "link", "name": name, "tag": "a"}}  # fmt: skip

    with loopback_app(_ReportPopup) as site:
        steps = [{"action": "navigate", "args": {"url": f"{site}/"}}, link("Report"),
                 {"action": "tabs", "args": {"op": "popup"}}, link("Orders"),
                 {"action": "expect", "args": {"kind": "download", "type": "csv", "rows": 1,
                                               "text": "Ada"}}]  # fmt: skip
        scenario = Scenario.from_dict({"version": 1, "name": "Report", "steps": steps})
        tab = await browser.new_tab(workspace=tmp_path / "replay")
        try:
            result = await Replay(tab, scenario).run()
        finally:
            await tab.close()
        (tmp_path / "export").mkdir()
        status, out = await run_exported(to_pytest(scenario), tmp_path / "export", site)
    assert result.ok, result.reason
    assert status == 0, out[-3000:]


async def test_a_run_that_downloaded_an_export_is_proposed_a_check_of_it(
    browser: BrowserSession, fixture_url: str, tmp_path: Path
) -> None:
    tab = await browser.new_tab(workspace=tmp_path)
    try:
        await tab.navigate(f"{fixture_url}/backoffice/export.html")
        assert tab.downloads is not None
        mark = tab.downloads.mark()
        await tab.page.get_by_role("link", name="Download the orders").click()
        await tab.downloads.wait_next(after=mark, budget=room())
        proposals = await propose_checks(tab, [], budget=room())
    finally:
        await tab.close()
    first = proposals[0]
    assert first.picked and first.why == "the run downloaded orders-2026-11-28.csv"
    header = ["order", "customer", "total"]
    assert first.check.args == {"kind": "download", "name": "orders-*-*-*.csv", "type": "csv",
                                "min_bytes": 1, "header": header}  # fmt: skip
