"""The browser layer on a real Chromium against the fixture pages served on loopback."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import time
import warnings
from collections.abc import Iterator

import pytest

from automation import BrowserSession, Budget, Tab, metrics
from automation.actions import execute
from automation.errors import (
    ActionFailed,
    ActionInvalid,
    BudgetExceeded,
    Cancelled,
    PageHung,
    RefNotFound,
    StaleRef,
    UrlBlocked,
)
from tests.bounds import room
from tests.conftest import browser_config
from tests.net import QuietHandler, loopback_app
from tests.refs import ref_of
from tests.waiting import eventually

pytestmark = pytest.mark.long  # one of the longest files: dealt out first


async def test_snapshot_lists_refs_with_role_name_nth(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/list.html")
    snap = await tab.snapshot()
    deletes = [r for r in snap.refs.values() if r.role == "button" and r.name == "Delete"]
    assert [r.nth for r in deletes] == [0, 1, 2, 3, 4]
    assert all(r.count == 5 for r in deletes)
    assert f"[{deletes[0].ref}]" in snap.text
    assert "[ref=" not in snap.text  # the model sees the short form only
    assert snap.url.endswith("/demo/list.html")


async def test_form_type_click_and_wait(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    snap = await tab.snapshot()
    await tab.type(ref_of(snap, "textbox", "Name"), "Ada")
    await tab.type(ref_of(snap, "textbox", "Email"), "ada@example.org")
    await tab.click(ref_of(snap, "button", "Sign up"))
    assert await tab.wait_for_text("Welcome, Ada!") == "text 'Welcome, Ada!' is visible"
    assert await tab.page.input_value("#email") == "ada@example.org"


async def test_typing_says_what_a_field_shows_when_it_is_not_what_was_typed(
    tab: Tab, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(
        '<label>Line <input id="line"></label><label>Notes <textarea id="notes"></textarea>'
        '</label><label>Code <input id="code" oninput="this.value=this.value.toUpperCase()">'
        "</label>"
    )
    snap = await tab.snapshot()
    two_lines = "line1\nline2"
    # A one-line field turns the line break into a space: said, with what it shows.
    said = await tab.type(ref_of(snap, "textbox", "Line"), two_lines)
    assert said.endswith(" (the field shows 'line1 line2')"), said
    assert not (await tab.type(ref_of(snap, "textbox", "Notes"), two_lines)).endswith(")")
    # A formatter that keeps the letters and digits is no news.
    assert "shows" not in await tab.type(ref_of(snap, "textbox", "Code"), "ab12")
    assert await tab.page.input_value("#code") == "AB12"


async def test_a_value_longer_than_its_field_holds_fails_the_fill(
    tab: Tab, fixture_url: str
) -> None:
    """A customer's name longer than its field's maxlength: the browser cut it and the fill
    passed, saying what the field showed; the app would keep a name cut short.  It fails,
    saying how much the field holds; a value that fits passes."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content('<label>Name <input id="name" maxlength="8"></label>')
    snap = await tab.snapshot()
    for typing in (tab.fill, tab.type):
        with pytest.raises(ActionFailed, match="holds at most 8 characters"):
            await typing(ref_of(snap, "textbox", "Name"), "Ada Lovelace")
        assert await typing(ref_of(snap, "textbox", "Name"), "Ada King")
        assert await tab.page.input_value("#name") == "Ada King"


async def test_duplicate_names_click_the_right_row(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/list.html")
    snap = await tab.snapshot()
    await tab.click(ref_of(snap, "button", "Delete", nth=2))
    await tab.wait_for_text("Order #1003 deleted")
    rows = await tab.page.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.testid)"
    )
    assert rows == ["order-1001", "order-1002", "order-1004", "order-1005"]


async def test_selector_prefers_stable_attributes(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/list.html")
    snap = await tab.snapshot()
    selector = await tab.selector_for(ref_of(snap, "button", "Delete", nth=1))
    assert selector.startswith('[data-testid="order-1002"]')
    assert await tab.page.locator(selector).count() == 1
    await tab.navigate(f"{fixture_url}/demo/form.html")
    snap = await tab.snapshot()
    assert await tab.selector_for(ref_of(snap, "textbox", "Email")) == "#email"


async def test_press_key_submits_form(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    snap = await tab.snapshot()
    await tab.type(ref_of(snap, "textbox", "Email"), "x@y.z")
    assert await tab.press("Enter") == "pressed Enter"
    await tab.wait_for_text("Welcome, friend!")


async def test_unknown_ref_is_refused(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.snapshot()
    for bad in ("e999", "", "click me", "f9e1"):
        with pytest.raises(RefNotFound):
            await tab.click(bad)


async def test_changed_element_is_stale_and_untouched(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/dynamic.html")
    snap = await tab.snapshot()
    counter = ref_of(snap, "button", "Count: 0")
    await tab.click(counter)  # the name is now "Count: 1": the ref must not act again
    with pytest.raises(StaleRef, match="take a new snapshot"):
        await tab.click(counter)
    assert await tab.page.text_content("#counter") == "Count: 1"
    snap = await tab.snapshot()
    assert ref_of(snap, "button", "Count: 1") != counter  # a new name gets a new ref
    await tab.click(ref_of(snap, "button", "Count: 1"))
    assert await tab.page.text_content("#counter") == "Count: 2"


async def test_refs_stay_while_role_and_name_do(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/dynamic.html")
    first = await tab.snapshot()
    await tab.click(ref_of(first, "button", "Load more"))
    await tab.wait_for_text("Show details")
    second = await tab.snapshot()
    assert ref_of(second, "button", "Load more") == ref_of(first, "button", "Load more")


async def test_frames_after_navigation(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.navigate(f"{fixture_url}/demo/list.html")  # a second document in the same tab
    await tab.page.evaluate(
        """() => { const f = document.createElement('iframe');
        f.srcdoc = '<button onclick="this.textContent=`Done`">Inner</button>';
        document.body.appendChild(f); }"""
    )
    await tab.page.wait_for_function("document.querySelector('iframe').contentDocument.body")
    await asyncio.sleep(0.2)
    snap = await tab.snapshot()
    inner = next(r for r in snap.refs.values() if r.name == "Inner")
    delete = next(r for r in snap.refs.values() if r.name == "Delete")
    assert inner.frame and inner.host and not delete.frame and not delete.host
    await tab.click(inner.ref)
    text = await tab.page.frames[1].text_content("button")
    assert text == "Done"
    await tab.click(delete.ref)
    await tab.wait_for_text("Order #1001 deleted")


async def test_refs_are_stale_after_navigation(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/flow/step1.html")
    snap = await tab.snapshot()
    company = ref_of(snap, "textbox", "Company")
    await tab.type(company, "Acme")
    await tab.click(ref_of(snap, "button", "Continue"))
    await tab.wait_for_text("Company: Acme")
    with pytest.raises(StaleRef):
        await tab.type(company, "Other")
    snap = await tab.snapshot()
    await tab.click(ref_of(snap, "button", "Confirm"))
    await tab.wait_for_text("Order confirmed")


async def test_removed_element_is_stale(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/list.html")
    snap = await tab.snapshot()
    first_delete = ref_of(snap, "button", "Delete", nth=0)
    await tab.click(first_delete)
    with pytest.raises(StaleRef):
        await tab.click(first_delete)  # its row is gone; never click the next row's button
    assert await tab.page.locator("tbody tr").count() == 4


async def test_blocked_schemes(tab: Tab) -> None:
    for url in ("file:///etc/passwd", "chrome://settings", "javascript:alert(1)",
                "data:text/html,<b>x</b>", "about:blank", "ftp://x.org/", "", "   "):  # fmt: skip
        with pytest.raises(UrlBlocked):
            await tab.navigate(url)


async def test_wait_for_text_reads_every_frame_and_only_the_copies_one_sees(
    tab: Tab, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(
        '<p hidden>Busy</p><p id="busy">Busy</p><iframe srcdoc="<p id=t></p><script>'
        "setTimeout(() => { t.textContent = 'Thanks for subscribing'; }, 200)</script>\"></iframe>"
    )
    # Said inside the frame (a form there thanks its subscriber).
    said = await tab.wait_for(text="Thanks for subscribing", budget=room())
    assert said == "text 'Thanks for subscribing' is visible"
    # Not gone while a copy one sees is there, whatever the hidden one first in the page.
    with pytest.raises((BudgetExceeded, ActionFailed)):
        await tab.wait_for(text_gone="Busy", budget=Budget(800))
    await tab.page.evaluate("document.getElementById('busy').remove()")
    assert await tab.wait_for(text_gone="Busy", budget=room()) == "text 'Busy' is gone"


async def test_wait_for_missing_text_ends_within_budget(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    started = time.monotonic()
    with pytest.raises((BudgetExceeded, ActionFailed)):
        await tab.wait_for_text("never there", budget=Budget(400))
    assert time.monotonic() - started < 4  # not the action's 5 s


async def test_dynamic_content_after_wait(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/dynamic.html")
    snap = await tab.snapshot()
    await tab.click(ref_of(snap, "button", "Load more"))
    await tab.wait_for_text("Show details")
    snap = await tab.snapshot()
    await tab.click(ref_of(snap, "button", "Show details"))
    await tab.wait_for_text("Details for item 3")


async def test_execute_validates_arguments(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.snapshot()
    with pytest.raises(ActionInvalid, match="unknown action"):
        await execute(tab, "teleport", {"ref": "e1"}, budget=Budget(1000))
    with pytest.raises(ActionInvalid, match="needs 'text'"):
        await execute(tab, "type", {"ref": "e1"}, budget=Budget(1000))
    with pytest.raises(ActionInvalid, match="must be str"):
        await execute(tab, "click", {"ref": ["e1"]}, budget=Budget(1000))


async def test_cancelled_budget_stops_a_wait(tab: Tab, fixture_url: str) -> None:
    from automation.errors import Cancelled

    await tab.navigate(f"{fixture_url}/demo/form.html")
    budget = room()
    asyncio.get_running_loop().call_later(0.2, budget.cancel, "stop pressed")
    started = time.monotonic()
    with pytest.raises(Cancelled, match="stop pressed"):
        await tab.wait_for_text("never there", budget=budget)
    assert time.monotonic() - started < 5  # not the budget's 10 s
    await tab.wait_for_text("Sign up")  # the tab still works


async def test_find_puts_actionable_elements_first(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    snap = await tab.snapshot()
    found = snap.find("sign up")
    assert [r.role for r in found] == ["button", "heading"]
    assert [r.role for r in snap.find("Sign", roles=frozenset({"heading"}))] == ["heading"]
    assert snap.find("no such thing") == [] and snap.find("   ") == []


async def test_crashed_tab_says_so(browser, fixture_url: str) -> None:
    from automation.errors import BrowserClosed

    tab = await browser.new_tab()
    await tab.navigate(f"{fixture_url}/demo/form.html")
    snap = await tab.snapshot()
    try:
        await tab.page.goto("chrome://crash")  # the page's renderer dies
    except Exception:
        pass
    await asyncio.sleep(0.5)
    assert tab.crashed
    with pytest.raises(BrowserClosed, match="crashed"):
        await tab.click(ref_of(snap, "button", "Sign up"))
    with pytest.raises(BrowserClosed):
        await tab.snapshot()
    # Refused before any wait is made: none is left unawaited ("coroutine ... was never
    # awaited" was printed for each frame's).
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with pytest.raises(BrowserClosed):
            await tab.wait_for(text="Thanks")
        gc.collect()
    assert not [w for w in said if "never awaited" in str(w.message)], said
    await tab.close()
    fresh = await browser.new_tab()  # the browser itself is fine
    await fresh.navigate(f"{fixture_url}/demo/form.html")
    await fresh.close()


# -- a page whose own script hangs (automation.browser.watchdog) --------------------------

# Each button says on the console that it was clicked, so a test can wait for the page's
# handler to have begun, not a fixed while.
HANGING = """<!doctype html><title>Hangs</title>
<button onclick="console.log('spinning'); while (true) {}">Hang</button>
<button onclick="setTimeout(() => { console.log('spinning'); while (true) {} })">Hang later</button>
<button onclick="n.textContent = +n.textContent + 1">Count</button>
<button onclick="fetch('/slow').then(r => r.text()).then(t => out.textContent = t)">Fetch</button>
<button onclick="chunks(0)">Crunch</button>
<p id="n">0</p><p id="out"></p>
<script>
// Busy for long, in short slices: a page that works hard but still answers between them.
// Stopped in the middle of a slice, it would never say Crunched.
function chunks(i) {
  const end = performance.now() + 20;
  while (performance.now() < end) {}
  if (i < 150) setTimeout(() => chunks(i + 1)); else out.textContent = "Crunched";
}
</script>"""
# A document whose own script spins as it loads (its Count button is past the script).
SPIN_ON_LOAD = """<!doctype html><title>Spins</title><p>Loading</p>
<script>while (true) {}</script>
<button onclick="n.textContent = +n.textContent + 1">Count</button><p id="n">0</p>"""


class _Hangs(QuietHandler):
    released = threading.Event()  # the slow fetch is answered once a test sets it

    def do_GET(self) -> None:
        if self.path == "/slow":
            _Hangs.released.wait(60)
            self.send(200, b"Fetched", Content_Type="text/plain")
        else:
            self.send(200, (SPIN_ON_LOAD if self.path == "/spin" else HANGING).encode())


@pytest.fixture(scope="module")
def hangs_url() -> Iterator[str]:
    with loopback_app(_Hangs) as url:
        yield url
    _Hangs.released.set()  # no handler thread left waiting


def _spinning(tab: Tab) -> asyncio.Event:
    begun = asyncio.Event()
    tab.page.on("console", lambda message: begun.set() if message.text == "spinning" else None)
    return begun


async def _counts(tab: Tab, times: int = 2) -> None:
    """The tab works: a snapshot, then a click that the page counts, ``times`` over."""
    for _ in range(times):
        snap = await tab.snapshot(budget=room())
        before = int(await tab.page.text_content("#n") or "0")
        await tab.click(ref_of(snap, "button", "Count"), budget=room())
        assert int(await tab.page.text_content("#n") or "0") == before + 1


async def test_a_click_that_hangs_the_page_says_so_and_the_tab_works_again(
    tab: Tab, hangs_url: str
) -> None:
    await tab.navigate(hangs_url)
    snap = await tab.snapshot()
    with pytest.raises(PageHung) as hung:
        await tab.click(ref_of(snap, "button", "Hang"), budget=Budget(5_000, label="click"))
    assert hung.value.code == "page_hung"
    assert "hung" in hung.value.message and "stopped" in hung.value.message
    assert "more time" not in hung.value.hint
    assert tab.watchdog.stopped == 1
    await _counts(tab)
    # A script the click set off for later hangs the page after the click: the next call
    # (the click's own settle, or the snapshot after it) finds the hang and stops it.
    begun = _spinning(tab)
    snap = await tab.snapshot(budget=room())
    with pytest.raises(PageHung):
        await tab.click(ref_of(snap, "button", "Hang later"), budget=Budget(5_000))
        async with asyncio.timeout(30):
            await begun.wait()
        await tab.snapshot(budget=Budget(5_000))
    await _counts(tab)


async def test_cancelling_a_call_on_a_hung_page_stops_its_script(tab: Tab, hangs_url: str) -> None:
    await tab.navigate(hangs_url)
    snap = await tab.snapshot()
    begun, budget = _spinning(tab), room()
    clicking = asyncio.ensure_future(tab.click(ref_of(snap, "button", "Hang"), budget=budget))
    async with asyncio.timeout(30):
        await begun.wait()
    budget.cancel("stop pressed")
    with pytest.raises(Cancelled, match=r"stop pressed.*hung.*stopped"):
        await clicking
    await _counts(tab)


async def test_a_page_that_hangs_as_it_loads_is_stopped_and_the_tab_works_again(
    tab: Tab, hangs_url: str
) -> None:
    with pytest.raises(PageHung, match=r"navigate.*hung.*stopped"):
        await tab.navigate(f"{hangs_url}/spin", budget=Budget(5_000, label="navigate"))
    await _counts(tab)
    await tab.navigate(hangs_url, budget=room())  # and it can go elsewhere
    await _counts(tab, times=1)


async def test_a_slow_page_that_still_answers_is_not_stopped(tab: Tab, hangs_url: str) -> None:
    await tab.navigate(hangs_url)
    snap = await tab.snapshot()
    alive_before = metrics.PAGE_PROBES.value(found="alive")
    # A fetch the server has not answered (the click settles for its bound, not for it):
    # the wait runs out, the page answers the probe.
    await tab.click(ref_of(snap, "button", "Fetch"), budget=room())
    with pytest.raises(BudgetExceeded) as slow:
        await tab.wait_for(text="Fetched", budget=Budget(1_000))
    assert not isinstance(slow.value, PageHung) and "more time" in slow.value.hint
    _Hangs.released.set()
    await tab.wait_for(text="Fetched", budget=room())
    # Hard at work in slices: the wait runs out, the page answers between two of them.
    snap = await tab.snapshot(budget=room())
    await tab.click(ref_of(snap, "button", "Crunch"), budget=room())
    with pytest.raises(BudgetExceeded) as busy:
        await tab.wait_for(text="Crunched", budget=Budget(1_000))
    assert not isinstance(busy.value, PageHung)
    await tab.wait_for(text="Crunched", budget=room())  # it was never stopped midway
    assert tab.watchdog.stopped == 0
    assert metrics.PAGE_PROBES.value(found="alive") >= alive_before + 2


# The console flood that drowns the DevTools connection keeps the lines it has written
# but this process has not yet read to about four seconds' worth of reading, however fast
# this machine reads them (at least 10,000), and goes on until told to stop.  Paced so,
# the lines it writes stay few: every one that reaches this process is held (as its
# arguments' handles) until its context closes, and a flood that ran ahead of a busy
# machine's reading held a gigabyte and crashed the test process.
FLOOD = """(pace) => { (async () => {
  const began = performance.now();
  let written = 0;
  for (;;) {
    const { read, going } = await (await fetch(pace + "/?written=" + written)).json();
    if (!going) return;
    const perSecond = read / Math.max(1, (performance.now() - began) / 1000);
    if (written - read < Math.max(10000, 4 * perSecond)) {
      for (let i = 0; i < 2000; i++) console.log("x" + i, { a: i });
      written += 2000;
    } else {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
})().catch(() => {}); }"""


class _Flood:
    """What the flood's page asks for before each burst: the lines read here, and whether
    to go on; and what it tells: the lines written."""

    def __init__(self) -> None:
        self.lines_read = 0
        self.written = 0
        self.going = True

    def read(self) -> None:
        self.lines_read += 1

    def ahead(self) -> bool:
        """The page has written at least 10,000 lines more than were read here."""
        return self.lines_read >= 1_000 and self.written - self.lines_read >= 10_000

    def handler(self) -> type[QuietHandler]:
        flood = self

        class Pace(QuietHandler):
            def do_GET(self) -> None:
                flood.written = int(self.path.rpartition("=")[2])
                body = json.dumps({"read": flood.lines_read, "going": flood.going})
                self.send(
                    200,
                    body.encode(),
                    Content_Type="application/json",
                    Access_Control_Allow_Origin="*",
                )

        return Pace


async def test_a_calm_page_is_not_stopped_while_the_connection_is_drowned(
    fixture_url: str, hangs_url: str
) -> None:
    """A context of the same browser without the console rate floods its console: the
    browser's DevTools connection is drowned, a call on a calm tab runs out of its budget,
    and the probe's answer is late though the page is calm.  The browser's own answer
    (asked beside it) is as late: the connection is slow, the page is not taken as hung
    and its script is not stopped; the call's own error stands."""
    flood = _Flood()
    async with BrowserSession(browser_config()) as session:
        calm = await session.new_tab()
        await calm.navigate(hangs_url)
        snap = await calm.snapshot()
        assert calm.context.browser is not None
        unlimited = await calm.context.browser.new_context()
        flooding = await unlimited.new_page()
        flooding.on("console", lambda _message: flood.read())
        await flooding.goto(f"{fixture_url}/engine/console-flood.html?calm")
        with loopback_app(flood.handler()) as pace:
            await flooding.evaluate(FLOOD, pace)
            await eventually(lambda: flood.ahead())
            with pytest.raises(BudgetExceeded) as late:
                await calm.click(ref_of(snap, "button", "Count"), budget=Budget(2_000))
            flood.going = False
        assert not isinstance(late.value, PageHung)
        assert calm.watchdog.stopped == 0
        await unlimited.close()
        await _counts(calm)
