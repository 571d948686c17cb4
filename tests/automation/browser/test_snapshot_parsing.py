"""A snapshot of a page whose document is still coming (its HTML sent slowly: a long
report, a slow server) shows what has come, within its budget.  It waited for the rest
with the whole budget, then failed with budget_exceeded: an agent or an MCP client on such
a page could never see it, where a screenshot could."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from automation.browser.tab import Tab
from automation.budget import Budget

HEAD = """<!doctype html><title>Report</title><h1>Monthly report</h1>
<a href="/export">Export CSV</a><table><tr><td>January</td><td>120</td></tr>"""


@pytest.fixture
def endless() -> Iterator[str]:
    """A page whose end never comes while the test runs (until it ends)."""
    done = threading.Event()

    class Site(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(HEAD.encode())
            self.wfile.flush()
            done.wait(120)  # the rest of the report: never, for the test

    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    done.set()
    server.shutdown()
    server.server_close()


async def test_a_page_still_being_parsed_is_snapshotted_as_it_is(tab: Tab, endless: str) -> None:
    await tab.page.goto(endless, wait_until="commit")
    await tab.page.wait_for_selector("text=January")  # what has come is drawn
    snap = await tab.snapshot(budget=Budget(20_000, label="snapshot"))
    assert 'link "Export CSV"' in snap.text and "January" in snap.text, snap.text
    assert any(r.name == "Export CSV" for r in snap.refs.values())


async def test_a_big_page_s_refs_are_read_off_the_event_loop(
    tab: Tab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page of 20,000 buttons: its walk's refs are read into the tab's table in a
    thread (they held the event loop, which every page and run of the process shares, for
    half a second and more at 40,000); a small page's on the loop, where a thread costs
    more than the work."""
    from automation.browser import pagewalk

    threads: list[threading.Thread] = []

    def read(*args: object, **kwargs: object) -> object:
        threads.append(threading.current_thread())
        return ref_entries(*args, **kwargs)

    ref_entries = pagewalk.ref_entries
    monkeypatch.setattr(pagewalk, "ref_entries", read)
    buttons = "".join(f"<button>Item {i}</button>" for i in range(20_000))
    await tab.page.set_content(f"<main>{buttons}</main>")
    big = await tab.snapshot()
    await tab.page.set_content("<main><button>Save</button></main>")
    small = await tab.snapshot()
    assert len(big.refs) > 20_000 and len(small.refs) < 5
    assert threads[0] is not threading.main_thread() and threads[-1] is threading.main_thread()
    assert tab.core.state.seed > max(int(ref.removeprefix("e")) for ref in big.refs)
