"""The browser session: relaunch after Chromium dies (no processes left behind), reaching a
browser by CDP URL, and refs that survive a new Page object for the same tab."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from automation import BrowserSession, Budget, UrlPolicy
from automation.browser.config import QUIET_CHROMIUM_ARGS
from automation.errors import BrowserClosed, UrlBlocked
from tests.conftest import browser_config


def processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, command line) for every process we can read."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        found[int(entry.name)] = (int(fields[1]), fields[0], cmdline)
    return found


def browser_pids(mark: str) -> list[int]:
    """The browser processes whose command line has ``mark``: not their helpers, not a
    zombie, nor a child a browser has just forked and not yet made a helper (it shows the
    browser's command line a moment)."""
    table = processes()
    return [
        pid
        for pid, (parent, state, cmd) in table.items()
        if mark in cmd and "--type=" not in cmd and state != "Z"
        and mark not in table.get(parent, (0, "", ""))[2]
    ]  # fmt: skip


def descendants(root: int, table: dict[int, tuple[int, str, str]]) -> set[int]:
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        for child, (parent, _, _) in table.items():
            if parent == pid and child not in out:
                out.add(child)
                todo.append(child)
    return out


def compile_cache_of(driver: int) -> Path:
    """The private folder the driver process ``driver`` keeps Node.js's compile cache in
    (Node.js writes it as the process exits)."""
    environ = dict(
        line.split("=", 1)
        for line in Path(f"/proc/{driver}/environ").read_text().split("\0")
        if "=" in line
    )
    cache = Path(environ["NODE_COMPILE_CACHE"])
    assert cache.stat().st_mode & 0o777 == 0o700
    return cache


def holds_compiled_code(cache: Path) -> bool:
    return any(path.is_file() for path in cache.rglob("*"))


async def test_dead_browser_is_relaunched_and_leaves_no_processes(fixture_url: str) -> None:
    marker = f"--tabwright-test={uuid.uuid4().hex}"  # finds this session's Chromium
    session = BrowserSession(browser_config(args=(*QUIET_CHROMIUM_ARGS, marker)))
    tab = await session.new_tab()
    await tab.navigate(f"{fixture_url}/demo/form.html")
    (browser_pid,) = browser_pids(marker)
    table = processes()
    family = {browser_pid} | descendants(browser_pid, table)
    assert len(family) > 1  # the browser and its helpers (renderer, utility...)

    os.kill(browser_pid, signal.SIGKILL)
    with pytest.raises(BrowserClosed):
        for _ in range(50):
            await tab.snapshot()
            await asyncio.sleep(0.1)
    fresh = await session.new_tab()  # the next call relaunches
    assert session.restarts == 1
    await fresh.navigate(f"{fixture_url}/demo/form.html")
    assert (await fresh.snapshot()).find("Sign up")
    await session.close()

    deadline = time.monotonic() + 60  # bounds a hang only
    while time.monotonic() < deadline:
        table = processes()
        left = [pid for pid in family if pid in table]
        relaunched = [pid for pid, (_, _, cmd) in table.items() if marker in cmd]
        if not left and not relaunched:
            break
        await asyncio.sleep(0.2)
    assert not left, f"processes of the killed browser are still there: {left}"
    assert not relaunched, f"the relaunched browser outlived session.close(): {relaunched}"


def test_sessions_of_one_loop_share_a_driver_that_the_last_one_stops(fixture_url: str) -> None:
    """Two sessions of one event loop launch their browsers through one Playwright driver;
    it runs on while either is open and exits when the last closes, leaving Node.js's
    compiled code in the user's own folder.  (A loop of its own: the suite's loop has
    sessions open throughout.)"""
    marks = [f"--tabwright-test={uuid.uuid4().hex}" for _ in range(2)]

    async def two_sessions() -> None:
        first, second = (BrowserSession(browser_config(args=(*QUIET_CHROMIUM_ARGS, mark)))
                         for mark in marks)  # fmt: skip
        for session in (first, second):
            await (await session.new_tab()).navigate(f"{fixture_url}/demo/form.html")
        table = processes()
        drivers = {table[pid][0] for mark in marks for pid in browser_pids(mark)}
        assert len(drivers) == 1, f"each session started a driver: {drivers}"
        (driver,) = drivers
        assert "run-driver" in table[driver][2]
        cache = compile_cache_of(driver)

        await first.close()
        assert driver in processes(), "the driver stopped while a session still used it"
        tab = await second.new_tab()  # the other session still works through it
        await tab.navigate(f"{fixture_url}/demo/form.html")
        assert (await tab.snapshot()).find("Sign up")
        await second.close()
        deadline = time.monotonic() + 60  # bounds a hang only
        while driver in processes() and processes()[driver][1] != "Z":
            assert time.monotonic() < deadline, "the driver outlived its last session"
            await asyncio.sleep(0.1)
        while not holds_compiled_code(cache):  # written by the driver as it exited
            assert time.monotonic() < deadline, f"no compiled code in {cache}"
            await asyncio.sleep(0.2)

    asyncio.run(two_sessions())


async def test_cdp_url_and_refs_kept_per_target(chromium_with_cdp: str, fixture_url: str) -> None:
    for _ in range(100):  # the port opens a moment after the process starts
        try:
            first = BrowserSession(browser_config(cdp_url=chromium_with_cdp))
            tab = await first.new_tab()
            break
        except Exception:
            await asyncio.sleep(0.1)
    await tab.navigate(f"{fixture_url}/demo/form.html")
    snap = await tab.snapshot()
    name = next(r.ref for r in snap.refs.values() if r.name == "Name")
    await tab.fill(name, "Ada")

    # A second connection sees the same tab as a new Page object; with the refs kept per
    # browser target, the old refs still work there.
    second = BrowserSession(browser_config(cdp_url=chromium_with_cdp), ref_states=first.ref_states)
    await second.start()
    pages = [p for c in second._browser.contexts for p in c.pages if "form.html" in p.url]
    assert len(pages) == 1 and pages[0] is not tab.page
    adopted = await second.adopt(pages[0])
    assert adopted.refs[name].name == "Name"
    await adopted.fill(name, "Grace")
    assert await tab.page.input_value("#name") == "Grace"
    await second._drop_browser()  # disconnect only: the browser is not ours to close
    await second.close()
    await tab.close()
    await first.close()


async def test_a_redirect_to_a_blocked_host_is_url_blocked(fixture_url: str) -> None:
    policy = UrlPolicy(block_private=False, blocked_domains=("localhost",))
    async with BrowserSession(browser_config(url_policy=policy)) as session:
        tab = await session.new_tab()
        await tab.navigate(f"{fixture_url}/demo/form.html")
        target = fixture_url.replace("127.0.0.1", "localhost") + "/demo/list.html"
        with pytest.raises(UrlBlocked, match="localhost"):
            await tab.navigate(f"{fixture_url}/redirect?to={target}")
        with pytest.raises(UrlBlocked):
            await tab.navigate(target)  # refused before the browser is asked
        await tab.navigate(f"{fixture_url}/demo/list.html")  # the tab still works


async def test_a_cross_site_frame_runs_in_a_process_of_its_own(
    browser: BrowserSession, fixture_url: str
) -> None:
    """Site isolation, whichever Chromium the session launched (the headless shell's default
    is off): the frame of another site is a target of its own, out of the page's process."""
    tab = await browser.new_tab()
    try:
        other_site = fixture_url.replace("127.0.0.1", "localhost")
        await tab.page.goto(f"{fixture_url}/demo/form.html")
        await tab.page.set_content(f'<iframe src="{other_site}/demo/form.html"></iframe>')
        await tab.page.frame_locator("iframe").get_by_role("button").first.wait_for()
        cdp = await tab.page.context.browser.new_browser_cdp_session()  # type: ignore[union-attr]
        try:
            targets = (await cdp.send("Target.getTargets"))["targetInfos"]
        finally:
            await cdp.detach()
        assert any(t["type"] == "iframe" and t["url"].startswith(other_site) for t in targets)
    finally:
        await tab.close()


async def test_a_page_that_changes_its_url_in_a_loop_stalls_no_other_context(
    fixture_url: str,
) -> None:
    """One run's page calling history.pushState a hundred times a turn: another run's tab in
    another context of the same browser still snapshots and clicks, a new tab opens and the
    flooding tab closes.  Each gets a budget that only bounds a hang: with Chromium's limit
    on navigations off (Playwright's default switches) the browser's UI thread drowns and
    every one of them runs out."""
    async with BrowserSession(browser_config()) as session:
        other = await session.new_tab()
        await other.navigate(f"{fixture_url}/engine/history-flood.html?calm")
        hostile = await session.new_tab()
        await hostile.navigate(f"{fixture_url}/engine/history-flood.html", budget=Budget(20_000))
        await asyncio.sleep(1)  # the flood under way

        snap = await other.snapshot(budget=Budget(20_000))
        await other.click(snap.find("Press")[0].ref, budget=Budget(20_000))
        assert "Pressed" in (await other.snapshot(budget=Budget(20_000))).text
        third = await session.new_tab(budget=Budget(20_000))
        await Budget(20_000).run(hostile.close())
        assert not third.page.is_closed() and hostile.page.is_closed()
