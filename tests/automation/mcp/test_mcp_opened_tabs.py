"""Every way a page opens a tab is told by the action that opened it, and the new tab is
there to select right away: a ``target=_blank`` link clicked or pressed, a form posted to
a new window, ``window.open`` with a URL or blank and written into, one opened once a
request came back, one whose page is slow to come, and one a cross-site frame opened.  An
action that opens nothing says nothing of tabs."""

from __future__ import annotations

import asyncio
import time

import pytest

from automation.actions import act, opened_since, tabs_known
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.events import ListSink
from automation.mcp import McpSession
from tests.automation.mcp.test_mcp import ref_of
from tests.automation.mcp.test_mcp_popup import caller
from tests.net import QuietHandler, loopback_app
from tests.waiting import eventually

OPENERS = {
    "link": "<a href='/opened?via=link' target=_blank>Open</a>",
    "form": "<form action='/opened' target=_blank><input type=hidden name=via value=form>"
    "<button>Open</button></form>",
    "window.open": "<button onclick=\"window.open('/opened?via=open', 'w', 'width=400')\">"
    "Open</button>",
    "written": "<button onclick=\"const w = window.open(''); w.document.write("
    "'<title>Written</title><h1>Opened page</h1>')\">Open</button>",
    "after a request": "<button onclick=\"fetch('/slow').then(() => "
    "window.open('/opened?via=fetch'))\">Open</button>",
    "slow page": "<a href='/opened?via=slow&ms=1500' target=_blank>Open</a>",
    # A frame of another site (a process of its own): its window is still the page's.
    "cross-site frame": "<iframe src='http://localhost:{port}/frame'></iframe>",
}
# Slower than a cancel takes to come, even on a busy machine.
SLOWER = "<a href='/opened?via=slower&ms=4000' target=_blank>Open</a>"


class Handler(QuietHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/opener/"):
            kind = self.path.removeprefix("/opener/").replace("%20", " ")
            port = self.server.server_address[1]
            opener = {**OPENERS, "slower page": SLOWER}[kind].replace("{port}", str(port))
            body = f"<title>Opener</title><h1>Opener</h1>{opener}<p><a href=#x>Stay</a>"
            self.send(200, body.encode())
        elif self.path == "/frame":
            self.send(200, b"<button onclick=\"window.open('/opened?via=frame')\">Open</button>")
        elif self.path.startswith("/slow"):
            time.sleep(0.3)  # the app's own pace: the popup opens once this answers
            self.send(200, b"{}", Content_Type="application/json")
        elif self.path.startswith("/opened"):
            if "ms=" in self.path:
                time.sleep(int(self.path.rsplit("ms=", 1)[1]) / 1000)  # a slow page
            self.send(200, b"<title>Opened</title><h1>Opened page</h1>")
        else:
            self.send(404)


@pytest.mark.parametrize("kind", list(OPENERS))
async def test_each_way_of_opening_a_tab_is_told_and_the_tab_is_there(tab: Tab, kind: str) -> None:
    session = McpSession(tab, sink=ListSink())
    call = caller(session)
    with loopback_app(Handler) as base:
        await call("navigate", url=f"{base}/opener/{kind}")
        page = await call("snapshot", interactive=True)
        stayed = await call("click", ref=ref_of(page, '"Stay"'))
        assert "it opened" not in stayed, stayed
        opener = ref_of(page, '"Open"')
        if kind == "link":  # by the keyboard this time
            opened = await call("press", key="Enter", ref=opener)
        else:
            opened = await call("click", ref=opener)
        assert "\nit opened tab 1 (" in opened, opened
        assert "this one stays current: tabs with op select and index 1 acts there" in opened
        assert session.tab.page.url.startswith(f"{base}/opener/")  # still in the opener
        await call("tabs", op="select", index=1)
        assert "Opened page" in await call("snapshot")


async def test_the_act_entry_points_tell_it_too(tab: Tab) -> None:
    """The act API's answer (HTTP, WebSocket, command line; a person's act on a paused run)
    tells the tab a call opened, a ``steps`` call's as well."""
    with loopback_app(Handler) as base:
        await tab.navigate(f"{base}/opener/link")
        snap = await tab.snapshot()
        ref = next(r.ref for r in snap.find("Open") if r.role == "link")
        answer = await act(tab, "click", {"ref": ref}, budget=Budget(30_000))
        assert answer["result"].endswith(
            f"\nit opened tab 1 ({base}/opened?via=link); this one stays current: tabs with "
            "op select and index 1 acts there"
        ), answer
        steps = {"steps": [{"type": "click", "ref": ref}]}  # the same link again
        answer = await act(tab, "steps", steps, budget=Budget(30_000))
        assert answer["ok"] and "\nit opened tab 2 (" in answer["result"], answer


async def test_a_cancelled_call_stops_waiting_for_the_tab_it_opened(tab: Tab) -> None:
    """The wait for a tab whose page is slow to come ends as the call is cancelled (its
    caller went away): it is said to be on its way, not waited for."""
    with loopback_app(Handler) as base:
        await tab.navigate(f"{base}/opener/slower page")
        snap = await tab.snapshot()
        known = await tabs_known(tab)
        await tab.click(next(r.ref for r in snap.find("Open") if r.role == "link"))
        budget = Budget(60_000)
        waiting = asyncio.ensure_future(opened_since(tab, known, budget))
        group = tab.group
        assert group is not None
        await eventually(lambda: group._told, what="the new tab seen, its page awaited")
        budget.cancel("the caller went away")
        said = await waiting
        assert said == (
            "\nit opened a tab still loading: tabs with op list shows it once its page has come"
        )
