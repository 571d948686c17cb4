"""Every browser action on real Chromium, through the registry an agent uses, and each way
it can be refused: a typed error within its budget, and a tab that still works after."""

from __future__ import annotations

import asyncio
import time

import pytest

from automation import Budget, Tab
from automation.actions import ACTIONS, execute
from automation.browser.snapshot import Snapshot
from automation.errors import (
    ActionFailed,
    ActionInvalid,
    BudgetExceeded,
    StaleRef,
    UnexpectedDialog,
    UrlBlocked,
)
from tests.bounds import room
from tests.refs import ref_of
from tests.waiting import eventually


async def run(tab: Tab, name: str, **args: object) -> str:
    return await execute(tab, name, dict(args), budget=room())


async def log_text(tab: Tab) -> str:
    return await tab.page.text_content("#log") or ""


@pytest.fixture
async def controls(tab: Tab, fixture_url: str) -> Snapshot:
    await tab.navigate(f"{fixture_url}/snapshot/controls.html")
    return await tab.snapshot()


async def test_click_variants(tab: Tab, controls: Snapshot) -> None:
    await run(tab, "double_click", ref=ref_of(controls, "button", "Twice"))
    assert await log_text(tab) == "Double clicked"
    await run(tab, "click", ref=ref_of(controls, "button", "Context"), button="right")
    assert await log_text(tab) == "Right clicked"
    out = await run(tab, "click", ref=ref_of(controls, "button", "Modifier"), modifiers=["Shift"])
    assert await log_text(tab) == "Shift click" and "Shift" in out
    await run(tab, "click", ref=ref_of(controls, "button", "Fancy div"))
    assert await log_text(tab) == "div clicked"
    span = next(r for r in controls.refs.values() if r.name == "Clickable span")
    assert span.role == "clickable"  # a clickable element without a role still gets a ref
    await run(tab, "click", ref=span.ref)
    assert await log_text(tab) == "span clicked"
    with pytest.raises(ActionInvalid, match="button must be"):
        await run(tab, "click", ref=ref_of(controls, "button", "Twice"), button="fourth")
    with pytest.raises(ActionInvalid, match="unknown modifier"):
        await run(tab, "click", ref=ref_of(controls, "button", "Twice"), modifiers=["Hyper"])


async def test_hover_opens_a_menu(tab: Tab, controls: Snapshot) -> None:
    await run(tab, "hover", ref=ref_of(controls, "button", "Account"))
    snap = await tab.snapshot()
    await run(tab, "click", ref=ref_of(snap, "link", "Profile"))
    assert await log_text(tab) == "Profile opened"


async def test_type_fill_select_check(tab: Tab, controls: Snapshot) -> None:
    search = ref_of(controls, "textbox", "Search")
    await run(tab, "type", ref=search, text="abc", delay_ms=20)
    assert await log_text(tab) == "keys: 3"  # one input event per key
    await run(tab, "fill", ref=ref_of(controls, "textbox", "Name"), value="Grace")
    assert await tab.page.input_value("#name") == "Grace"
    await run(tab, "select_option", ref=ref_of(controls, "combobox", "Colour"), values="Green")
    assert await tab.page.input_value("#colour") == "g"
    await run(tab, "check", ref=ref_of(controls, "checkbox", "Agree"))
    assert await tab.page.is_checked("#agree")
    await run(tab, "check", ref=ref_of(controls, "checkbox", "Agree"), checked=False)
    assert not await tab.page.is_checked("#agree")
    with pytest.raises(ActionFailed, match="no option 'Purple'"):
        await run(tab, "select_option", ref=ref_of(controls, "combobox", "Colour"), values="Purple")
    with pytest.raises(ActionFailed, match="does not take text"):
        await run(tab, "fill", ref=ref_of(controls, "button", "Twice"), value="x")


async def test_fill_form_in_one_call(tab: Tab, controls: Snapshot) -> None:
    out = await run(
        tab,
        "fill_form",
        fields=[
            {"ref": ref_of(controls, "textbox", "Name"), "value": "Ada"},
            {"ref": ref_of(controls, "checkbox", "Agree"), "value": True},
            {"ref": ref_of(controls, "combobox", "Colour"), "value": "Blue"},
        ],
    )
    assert out.startswith("filled 3 fields")
    assert await tab.page.input_value("#name") == "Ada"
    assert await tab.page.is_checked("#agree")
    assert await tab.page.input_value("#colour") == "b"
    with pytest.raises(ActionFailed, match="stopped at field 1"):
        await run(
            tab,
            "fill_form",
            fields=[
                {"ref": ref_of(controls, "textbox", "Name"), "value": "Bea"},
                {"ref": ref_of(controls, "button", "Locked"), "value": "x"},
            ],
        )
    for bad in ([], [{"ref": "e1"}], [{"value": "x"}], [{"ref": "e1", "value": 3}], "x"):
        with pytest.raises(ActionInvalid):
            await run(tab, "fill_form", fields=bad)


async def test_press_drag_scroll_highlight_resize(tab: Tab, controls: Snapshot) -> None:
    name = ref_of(controls, "textbox", "Name")
    await run(tab, "fill", ref=name, value="abc")
    await run(tab, "press", key="Backspace", ref=name)
    assert await tab.page.input_value("#name") == "ab"
    await run(
        tab,
        "drag",
        source=ref_of(controls, "button", "Card A"),
        target=ref_of(controls, "region", "Done column"),
    )
    assert await log_text(tab) == "dropped"
    out = await run(tab, "scroll", dy=800)
    assert "y=800" in out
    await run(tab, "scroll", ref=ref_of(controls, "button", "Far away"))
    assert await tab.page.evaluate("() => scrollY") > 2000
    await run(tab, "highlight", ref=ref_of(controls, "button", "Twice"))
    assert await run(tab, "resize", width=800, height=600) == "the viewport is 800x600"
    assert tab.page.viewport_size == {"width": 800, "height": 600}
    with pytest.raises(ActionInvalid):
        await run(tab, "resize", width=10, height=600)
    with pytest.raises(ActionInvalid, match="scroll needs"):
        await run(tab, "scroll")


async def test_upload_only_from_the_upload_folder(tab: Tab, controls: Snapshot) -> None:
    avatar = ref_of(controls, "button", "Avatar")
    await run(tab, "upload", ref=avatar, files=["avatar.txt"])
    assert await log_text(tab) == "file: avatar.txt"
    for outside in (["../demo/form.html"], ["/etc/passwd"], ["../../pyproject.toml"]):
        with pytest.raises(ActionInvalid, match="outside the upload folder"):
            await run(tab, "upload", ref=avatar, files=outside)
    with pytest.raises(ActionInvalid, match="no file"):
        await run(tab, "upload", ref=avatar, files=["missing.txt"])
    # A NUL in a name is a typed refusal (it escaped as Python's ValueError: over MCP, an
    # internal error and a traceback).
    with pytest.raises(ActionInvalid, match="holds no NUL"):
        await run(tab, "upload", ref=avatar, files=["avatar\x00.txt"])


async def test_hidden_disabled_and_detached_fail_fast(tab: Tab, controls: Snapshot) -> None:
    assert "Invisible" not in controls.text  # hidden elements are not in the snapshot
    twice = ref_of(controls, "button", "Twice")
    await tab.page.evaluate(
        "() => document.querySelector('[ondblclick]').style.visibility = 'hidden'"
    )
    started = time.monotonic()
    with pytest.raises(ActionFailed, match="hidden"):
        await run(tab, "click", ref=twice)
    with pytest.raises(ActionFailed, match="disabled"):
        await run(tab, "click", ref=ref_of(controls, "button", "Locked"))
    assert time.monotonic() - started < 5  # refused at once, not once the click's budget ran out
    vanish = ref_of(controls, "button", "Vanish")
    await run(tab, "click", ref=vanish)
    with pytest.raises(StaleRef):
        await run(tab, "click", ref=vanish)
    await run(tab, "click", ref=ref_of(controls, "button", "Modifier"))  # the tab still works
    assert await log_text(tab) == "Plain click"


async def test_wait_for_each_condition(tab: Tab, controls: Snapshot, fixture_url: str) -> None:
    await run(tab, "click", ref=ref_of(controls, "button", "Make late"))
    await tab.page.get_by_role("button", name="Late", exact=True).wait_for()
    snap = await tab.snapshot()
    late = ref_of(snap, "button", "Late")
    assert "is enabled" in await run(tab, "wait_for", ref=late, state="enabled")
    await run(tab, "click", ref=ref_of(snap, "button", "Twice"))
    assert "gone" in await run(tab, "wait_for", text_gone="Make lateX")
    assert await run(tab, "wait_for", time_ms=50) == "waited 50 ms"
    assert "reached load" in await run(tab, "wait_for", load_state="load")
    await tab.page.evaluate("() => history.pushState({}, '', '?step=2&from=/done')")
    assert "step=2" in await run(tab, "wait_for", url="?step=2")
    with pytest.raises((BudgetExceeded, ActionFailed)):  # as a URL check: not in its query
        await execute(tab, "wait_for", {"url": "/done"}, budget=Budget(300))
    with pytest.raises(ActionInvalid, match="exactly one"):
        await run(tab, "wait_for", text="a", url="b")
    with pytest.raises(ActionInvalid, match="exactly one"):
        await run(tab, "wait_for")
    with pytest.raises(ActionInvalid, match="state must be"):
        await run(tab, "wait_for", ref=late, state="sleepy")
    started = time.monotonic()
    with pytest.raises((BudgetExceeded, ActionFailed)):
        await execute(tab, "wait_for", {"text": "never"}, budget=Budget(300))
    with pytest.raises(BudgetExceeded):
        await execute(tab, "wait_for", {"time_ms": 5_000}, budget=Budget(300))
    assert time.monotonic() - started < 4.5  # not either wait's 5 s


async def test_history_and_screenshots(tab: Tab, fixture_url: str, tmp_path) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.navigate(f"{fixture_url}/demo/list.html")
    assert (await run(tab, "back")).endswith("/demo/form.html")
    assert (await run(tab, "forward")).endswith("/demo/list.html")
    assert (await run(tab, "reload")).startswith("reloaded")
    png = await tab.screenshot()
    assert png.startswith(b"\x89PNG")
    jpeg = await tab.screenshot(format="jpeg", quality=50, full_page=True)
    assert jpeg.startswith(b"\xff\xd8")
    snap = await tab.snapshot()
    element = await tab.screenshot(ref=ref_of(snap, "heading", "Orders"), path=tmp_path / "h.png")
    assert (tmp_path / "h.png").read_bytes() == element and len(element) < len(png)
    out = await tab.pdf(tmp_path / "page.pdf")
    assert (tmp_path / "page.pdf").read_bytes().startswith(b"%PDF") and "bytes" in out
    with pytest.raises(ActionInvalid):
        await tab.screenshot(format="gif")  # type: ignore[arg-type]


async def test_tabs_list_open_select_close(tab: Tab, controls: Snapshot, fixture_url: str) -> None:
    await run(tab, "click", ref=ref_of(controls, "link", "Open in new tab"))
    await tab.page.wait_for_timeout(300)
    listing = await run(tab, "tabs")
    assert listing.count("\n") == 1 and "popup=1" in listing  # the site's own new tab joined
    out = await run(tab, "tabs", op="open", url=f"{fixture_url}/demo/form.html")
    assert out.startswith("opened tab 2")
    group = tab.group
    assert group is not None and group.current is not tab
    assert group.current.url.endswith("/demo/form.html")
    await run(tab, "tabs", op="select", index=0)
    assert group.current is tab
    await run(tab, "tabs", op="close", index=2)
    assert len(group.tabs) == 2
    with pytest.raises(ActionInvalid, match="no tab 7"):
        await run(tab, "tabs", op="select", index=7)
    with pytest.raises(ActionInvalid):
        await run(tab, "tabs", op="explode")


async def test_blocked_navigation_and_a_page_that_never_loads(tab: Tab, fixture_url: str) -> None:
    with pytest.raises(UrlBlocked):
        await run(tab, "navigate", url="file:///etc/passwd")
    started = time.monotonic()
    with pytest.raises(BudgetExceeded):
        await execute(tab, "navigate", {"url": f"{fixture_url}/hang"}, budget=Budget(800))
    assert time.monotonic() - started < 4  # the page never loads
    await run(tab, "navigate", url=f"{fixture_url}/demo/form.html")  # still usable
    snap = await tab.snapshot()
    assert ref_of(snap, "button", "Sign up")


async def test_timeout_ms_narrows_the_budget(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    started = time.monotonic()
    with pytest.raises((BudgetExceeded, ActionFailed)):
        await execute(tab, "wait_for", {"text": "never", "timeout_ms": 200}, budget=Budget(10_000))
    assert time.monotonic() - started < 5  # not the budget's 10 s
    with pytest.raises(ActionInvalid, match="timeout_ms"):
        await execute(tab, "wait_for", {"text": "x", "timeout_ms": -5}, budget=Budget(1_000))


def test_every_action_is_documented() -> None:
    for spec in ACTIONS.values():
        assert spec.description and spec.signature().startswith(f"{spec.name}(")
        for param in spec.params:
            assert param.description


async def test_dialogs_through_actions(tab: Tab, controls: Snapshot) -> None:
    confirm = ref_of(controls, "button", "Confirm")
    with pytest.raises(UnexpectedDialog, match="Delete it"):
        await run(tab, "click", ref=confirm)
    assert await log_text(tab) == "cancelled"  # dismissed, never left blocking the page
    assert (await run(tab, "dialog", accept=True)).startswith("armed")
    await run(tab, "click", ref=confirm)
    assert await log_text(tab) == "confirmed"
    with pytest.raises(UnexpectedDialog):
        await run(tab, "click", ref=ref_of(controls, "button", "Alert"))
    await run(tab, "click", ref=ref_of(controls, "button", "Twice"))  # still usable


async def test_page_log_cookies_storage_and_downloads(tab: Tab, controls: Snapshot) -> None:
    await tab.page.evaluate("() => { console.error('boom here'); localStorage.setItem('k', 'v'); }")
    await tab.page.evaluate("() => setTimeout(() => { throw new Error('uncaught one') }, 0)")
    await tab.page.wait_for_timeout(100)
    assert "boom here" in await run(tab, "page_log", kind="console", level="error")
    assert "uncaught one" in await run(tab, "page_log")
    assert "controls.html -> 200" in await run(tab, "page_log", kind="requests")
    assert "k = v" in await run(tab, "storage")
    assert await run(tab, "storage", op="set", items={"a": "1"}) == "set 1 local storage items"
    assert await run(tab, "storage", op="clear") == "cleared 2 local storage items"
    await tab.context.add_cookies([{"name": "sid", "value": "secret", "url": tab.url}])
    listed = await run(tab, "cookies")
    assert "sid" in listed and "secret" not in listed  # values stay out of the model's view
    assert await run(tab, "cookies", op="clear") == "cleared 1 cookies"
    with pytest.raises(ActionInvalid, match="no workspace"):
        await run(tab, "downloads")
    with pytest.raises(ActionInvalid):
        await run(tab, "page_log", kind="gossip")


async def test_downloads_land_in_the_workspace(browser, fixture_url: str, tmp_path) -> None:
    tab = await browser.new_tab(workspace=tmp_path)
    try:
        await tab.navigate(f"{fixture_url}/engine/downloads.html")
        snap = await tab.snapshot()
        link = next(r for r in snap.refs.values() if r.role == "link")
        mark = tab.downloads.mark()
        await tab.click(link.ref)
        record = await tab.downloads.wait_next(budget=room(), after=mark)
        assert record.path.parent == tmp_path / "downloads" and record.size_bytes > 0
        listed = await run(tab, "downloads")
        assert f"{record.name}: {record.size_bytes} bytes" in listed
    finally:
        await tab.close()


async def test_a_saved_login_is_reused_by_a_later_tab(
    browser, tab: Tab, fixture_url: str, tmp_path
) -> None:
    from automation.browser import storage

    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.context.add_cookies([{"name": "session", "value": "s3cret", "url": tab.url}])
    await run(tab, "storage", op="set", items={"user": "ada"})
    saved = await storage.storage_state_save(tab.context, tmp_path / "login.json", budget=room())
    assert saved["cookies"] == 1
    later = await browser.new_tab(storage_state=tmp_path / "login.json")
    try:
        await later.navigate(f"{fixture_url}/demo/form.html")
        assert "session" in await run(later, "cookies")
        assert "user = ada" in await run(later, "storage")
    finally:
        await later.close()


COUNTERS = """<main><button id="a">Alpha</button><button id="b">Beta</button>
<p id="n">a=0 b=0</p><script>
(() => {  // (set_content writes into the same window each time: nothing global)
  const n = { a: 0, b: 0 };
  for (const id of ["a", "b"]) {
    document.getElementById(id).addEventListener("click", () => {
      n[id] += 1;
      document.getElementById("n").textContent = `a=${n.a} b=${n.b}`;
    });
  }
})();
</script></main>"""


async def test_two_actions_on_one_tab_at_once_take_turns(tab: Tab, fixture_url: str) -> None:
    """A library user's two clicks on one tab at once (asyncio.gather): each is done, in
    turn, and says so truly.  Their mouse moves and presses interleaved on the one page:
    one click landed, and both said done."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    for round_ in range(1, 5):
        await tab.page.set_content(COUNTERS)
        snap = await tab.snapshot()
        alpha, beta = ref_of(snap, "button", "Alpha"), ref_of(snap, "button", "Beta")
        said = await asyncio.gather(tab.click(alpha, budget=room()), tab.click(beta, budget=room()))
        assert said == ["clicked button 'Alpha'", "clicked button 'Beta'"]
        assert await tab.page.text_content("#n") == "a=1 b=1", round_


async def test_a_wait_for_a_download_after_the_click_that_started_it_is_that_download(
    browser, fixture_url: str, tmp_path
) -> None:
    """The natural order, click then wait: a small download ends as the click settles, and
    the wait asked for the next one, which never came (it timed out).  It answers the one
    the action before it started; with none, the next to begin."""
    tab = await browser.new_tab(workspace=tmp_path)

    def listed() -> list[str]:
        return [f"{r.name}: {r.size_bytes} bytes" for r in tab.downloads.records()]

    try:
        await tab.navigate(f"{fixture_url}/engine/downloads.html")
        snap = await tab.snapshot()
        await run(tab, "click", ref=ref_of(snap, "link", "Report (file)"))
        await eventually(lambda: listed(), what="the download ended")  # before the wait
        assert await run(tab, "downloads", wait=True) == listed()[0] == "report.csv: 31 bytes"
        # Asked again, it waits for the next: the one the click started was answered.
        with pytest.raises(BudgetExceeded, match="no download finished"):
            await run(tab, "downloads", wait=True, timeout_ms=300)
        await run(tab, "click", ref=ref_of(snap, "link", "Notes (blob)"))
        assert await run(tab, "downloads", wait=True) == listed()[-1] == "notes.txt: 23 bytes"
        # One an action before the last started, no wait answered: the wait after an
        # action that started none is for the next to begin, not that old one.
        await run(tab, "click", ref=ref_of(snap, "link", "Report again"))
        await eventually(lambda: len(listed()) == 3, what="the third download ended")
        await run(tab, "read_page")
        assert tab.downloads.unanswered() == tab.downloads.mark() == 3
        waiting = asyncio.create_task(run(tab, "downloads", wait=True))
        await tab.page.click("#dotfile")
        assert await waiting == listed()[-1] and len(listed()) == 4
    finally:
        await tab.close()
