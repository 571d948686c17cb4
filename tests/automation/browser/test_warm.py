"""A warm browser session: one browser, a fresh context for each caller (the one opened
ahead is handed out once), the browser replaced after ``contexts_per_browser`` contexts
and started again by itself after a crash, contexts closed with their groups, and the
options a caller may give its context."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import uuid
from pathlib import Path

import pytest

from automation import BrowserSession
from automation.browser.config import QUIET_CHROMIUM_ARGS
from automation.errors import ActionInvalid, TabwrightError
from tests.automation.browser.test_session import browser_pids
from tests.bounds import room
from tests.conftest import browser_config
from tests.waiting import eventually

STORAGE = "/engine/storage.html"


def marked_session(**overrides: object) -> tuple[BrowserSession, str]:
    marker = f"--tabwright-test={uuid.uuid4().hex}"  # finds this session's Chromium
    config = browser_config(args=(*QUIET_CHROMIUM_ARGS, marker), **overrides)
    return BrowserSession(config), marker


async def browsers(marker: str, count: int) -> list[int]:
    """The session's browser processes, once there are ``count``."""
    await eventually(lambda: len(browser_pids(marker)) == count, what=f"{count} browser processes")
    return browser_pids(marker)


async def who(tab: object) -> str:
    return await tab.page.inner_text("#who")  # type: ignore[attr-defined]


async def test_each_caller_gets_a_context_nobody_used(fixture_url: str, tmp_path: Path) -> None:
    session, _ = marked_session()
    try:
        await session.warm()
        await eventually(lambda: session.contexts_open == 1, what="a context opened ahead")
        first = await session.new_tab(workspace=tmp_path / "first")
        await first.navigate(f"{fixture_url}{STORAGE}")
        await first.page.click("#login")
        assert await who(first) == "logged in with abc123, cookie"
        await first.navigate(f"{fixture_url}/engine/downloads.html")
        assert first.downloads is not None
        await first.page.click("#file")
        await first.downloads.wait_next(budget=room(), after=0)

        second = await session.new_tab(workspace=tmp_path / "second")
        assert second.context is not first.context
        await second.navigate(f"{fixture_url}{STORAGE}")
        assert await who(second) == "logged out, no cookie"
        assert second.downloads is not None and second.downloads.records() == []
        assert [p.name for p in (tmp_path / "first" / "downloads").iterdir()] == ["report.csv"]
        assert not any((tmp_path / "second" / "downloads").iterdir())
        # Both still open, and the next held ahead: three contexts, none shared.
        await eventually(lambda: session.contexts_open == 3, what="the next context opened ahead")
        assert session.in_use == 2
    finally:
        await session.close()


async def in_use_until_the_next_is_open(session: BrowserSession) -> set[int]:
    """``in_use`` at every turn of the event loop until the context opened ahead is open."""
    seen = set()
    while session._spare is not None and not session._spare.done():
        seen.add(session.in_use)
        await asyncio.sleep(0)
    return seen | {session.in_use}


async def test_contexts_close_with_their_runs_and_the_browser_is_replaced_after_n(
    fixture_url: str,
) -> None:
    session, marker = marked_session(contexts_per_browser=3)
    try:
        await session.warm()
        first_browser = await browsers(marker, 1)
        for n in range(7):
            tab = await session.new_tab()
            # The next context opens ahead meanwhile: never counted as in use, also while
            # it is still opening (nor the one a replaced browser closes as it opens).
            assert await in_use_until_the_next_is_open(session) == {1}
            await tab.navigate(f"{fixture_url}{STORAGE}?n={n}")
            assert await who(tab) == "logged out, no cookie"
            assert tab.group is not None
            await tab.group.close()
            assert session.in_use == 0  # nothing is kept of a run but the next context
        # Seven contexts and the spares opened ahead, three a browser: replaced twice.
        assert session.replaced >= 2
        await eventually(lambda: len(browser_pids(marker)) == 1, what="one browser left")
        assert browser_pids(marker) != first_browser
        await eventually(lambda: session.contexts_open <= 1, what="only the context held ahead")
    finally:
        await session.close()
    await eventually(lambda: not browser_pids(marker), what="no browser left")


async def test_a_replaced_browser_closes_only_after_its_last_context(fixture_url: str) -> None:
    session, marker = marked_session(contexts_per_browser=1)
    try:
        old = await session.new_tab()  # not warm: no context is opened ahead
        old_browser = await browsers(marker, 1)
        new = await session.new_tab()  # past the limit: a new browser
        assert session.replaced == 1
        await browsers(marker, 2)
        await old.navigate(f"{fixture_url}{STORAGE}")  # the old run goes on where it was
        assert await who(old) == "logged out, no cookie"
        assert old.group is not None
        await old.group.close()
        await eventually(lambda: browser_pids(marker) != old_browser, what="the old browser closed")
        await eventually(lambda: len(browser_pids(marker)) == 1, what="one browser left")
        await new.navigate(f"{fixture_url}{STORAGE}")
        assert await who(new) == "logged out, no cookie"
    finally:
        await session.close()


async def test_a_crashed_warm_browser_is_started_again_before_anyone_asks(
    fixture_url: str,
) -> None:
    session, marker = marked_session()
    try:
        await session.warm()
        tab = await session.new_tab()
        (crashed,) = await browsers(marker, 1)
        os.kill(crashed, signal.SIGKILL)
        await eventually(
            lambda: session.restarts == 1 and session.connected, what="a new browser, unasked"
        )
        await eventually(lambda: session.contexts_open == 1, what="a context opened ahead in it")
        assert crashed not in browser_pids(marker)
        with pytest.raises(TabwrightError):  # the crashed run's tab is gone with its browser
            await tab.navigate(f"{fixture_url}{STORAGE}")
        fresh = await session.new_tab()
        await fresh.navigate(f"{fixture_url}{STORAGE}")
        assert await who(fresh) == "logged out, no cookie"
    finally:
        await session.close()


async def test_a_context_takes_storage_state_and_options_but_no_way_around_the_proxy(
    fixture_url: str,
) -> None:
    session, _ = marked_session()
    try:
        await session.warm()
        origin = fixture_url
        state = {
            "cookies": [{"name": "session", "value": "s3cr3t", "domain": "127.0.0.1",
                         "path": "/", "expires": -1, "httpOnly": False, "secure": False,
                         "sameSite": "Lax"}],
            "origins": [{"origin": origin,
                         "localStorage": [{"name": "token", "value": "saved"}]}],
        }  # fmt: skip
        tab = await session.new_tab(storage_state=state, context_options={"locale": "de-DE"})
        await tab.navigate(f"{fixture_url}{STORAGE}")
        assert await who(tab) == "logged in with saved, cookie"
        assert await tab.page.evaluate("navigator.language") == "de-DE"
        for option in ("proxy", "accept_downloads", "record_har_path"):
            with pytest.raises(ActionInvalid, match=option):
                await session.new_tab(context_options={option: "x"})
        plain = await session.new_tab()  # the one held ahead: none of the above
        await plain.navigate(f"{fixture_url}{STORAGE}")
        assert await who(plain) == "logged out, no cookie"
    finally:
        await session.close()


async def test_each_caller_s_tabs_have_its_own_settings_in_the_one_browser(
    fixture_url: str,
) -> None:
    session, marker = marked_session()
    own = dataclasses.replace(session.config, max_tabs=2, action_timeout_ms=3_000)
    try:
        await session.warm()
        await eventually(lambda: session.contexts_open == 1, what="a context opened ahead")
        ahead = await session.new_group(config=own)  # the context opened ahead
        fresh = await session.new_group(  # a context of its own (a saved sign-in)
            config=own, storage_state={"cookies": [], "origins": []}
        )
        plain = await session.new_group()
        for group in (ahead, fresh):
            second = await group.open()
            assert [tab.config.action_timeout_ms for tab in group.tabs] == [3_000, 3_000]
            assert second.config == own
            with pytest.raises(ActionInvalid, match="at most 2 tabs"):
                await group.open()
        for _ in range(3):  # the session's own limit (20), untouched by the others'
            assert (await plain.open()).config == session.config
        assert len(await browsers(marker, 1)) == 1  # all in the one browser

        # What the browser is launched with is not a tab's to choose.
        for launched in ({"evaluate_enabled": True}, {"headless": False}):
            with pytest.raises(ActionInvalid, match="browser's"):
                await session.new_group(config=dataclasses.replace(own, **launched))
    finally:
        await session.close()
