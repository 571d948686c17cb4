"""DialogGuard on a real Chromium: fixtures/engine/dialogs.html opens alert, confirm, prompt."""

from __future__ import annotations

import pytest
from playwright.async_api import Error as PlaywrightError

from automation import Tab
from automation.browser.dialogs import DialogGuard
from automation.errors import ActionFailed, ActionInvalid, UnexpectedDialog


async def open_dialogs(tab: Tab, fixture_url: str) -> DialogGuard:
    tab.dialogs.detach()  # the tab's own guard would answer first
    guard = DialogGuard(tab.page)
    await tab.page.goto(f"{fixture_url}/engine/dialogs.html")
    return guard


async def press(tab: Tab, button: str) -> str:
    await tab.page.click(f"#{button}", timeout=3_000)
    return await tab.page.text_content("#out", timeout=3_000) or ""


async def test_unarmed_dialog_is_dismissed_and_reported_once(tab: Tab, fixture_url: str) -> None:
    guard = await open_dialogs(tab, fixture_url)
    assert await press(tab, "alert") == "alert closed"  # the page was not left blocked
    with pytest.raises(UnexpectedDialog) as caught:
        guard.raise_if_unexpected("click Alert")
    error = caught.value
    assert error.code == "unexpected_dialog" and isinstance(error, ActionFailed)
    assert "click Alert" in error.message and "alert" in error.message
    assert "'Saved!'" in error.message and "arm" in error.hint
    guard.raise_if_unexpected("the next action")  # each dialog is reported once

    assert await press(tab, "confirm") == "confirm: false"
    (record,) = guard.take_unexpected()
    assert (record.type, record.message, record.handled) == (
        "confirm",
        "Delete order #1003?",
        "dismissed",
    )
    assert record.unexpected and not record.armed and record.url.endswith("/dialogs.html")
    assert guard.take_unexpected() == []


async def test_armed_confirm_and_prompt(tab: Tab, fixture_url: str) -> None:
    guard = await open_dialogs(tab, fixture_url)
    guard.arm("accept")
    assert guard.armed == "accept"
    assert await press(tab, "confirm") == "confirm: true"
    assert guard.armed is None  # used up

    guard.arm("accept", prompt_text="Ada")
    assert await press(tab, "prompt") == "prompt: Ada"
    guard.arm("accept")  # no text: keep the prefilled value, like pressing OK
    assert await press(tab, "prompt") == "prompt: Guest"
    guard.arm("dismiss")
    assert await press(tab, "prompt") == "prompt: null"

    guard.raise_if_unexpected("armed dialogs")  # nothing unexpected
    history = guard.history(limit=3)
    assert [(r.type, r.handled, r.prompt_text) for r in history] == [
        ("prompt", "accepted", "Ada"),
        ("prompt", "accepted", "Guest"),
        ("prompt", "dismissed", None),
    ]
    assert all(r.armed and not r.to_dict()["unexpected"] for r in history)


async def test_times_then_unexpected_again(tab: Tab, fixture_url: str) -> None:
    guard = await open_dialogs(tab, fixture_url)
    guard.arm("accept", times=2)
    assert await press(tab, "confirm") == "confirm: true"
    assert await press(tab, "confirm") == "confirm: true"
    assert await press(tab, "confirm") == "confirm: false"
    with pytest.raises(UnexpectedDialog, match="confirm 'Delete order #1003\\?'"):
        guard.raise_if_unexpected("third confirm")
    guard.arm("accept", times=3)
    guard.disarm()
    assert guard.armed is None


async def test_beforeunload_is_accepted_unless_armed(tab: Tab, fixture_url: str) -> None:
    guard = await open_dialogs(tab, fixture_url)
    assert await press(tab, "guard") == "guarded"
    guard.arm("dismiss")
    with pytest.raises(PlaywrightError, match="ERR_ABORTED"):
        await tab.page.goto(f"{fixture_url}/engine/log.html")  # leaving was refused
    assert tab.page.url.endswith("/engine/dialogs.html")

    # Chromium asks again only after a new user gesture; without one it cancels silently.
    assert await press(tab, "guard") == "guarded"
    await tab.page.goto(f"{fixture_url}/engine/log.html")  # unarmed: leaving goes ahead
    assert tab.page.url.endswith("/engine/log.html")
    last = guard.history(limit=1)[0]
    assert (last.type, last.handled, last.armed, last.unexpected) == (
        "beforeunload",
        "accepted",
        False,
        False,
    )
    guard.raise_if_unexpected("navigate")


async def test_bad_arming_is_invalid(tab: Tab) -> None:
    guard = DialogGuard(tab.page)
    for bad in (
        lambda: guard.arm("ok"),  # type: ignore[arg-type]
        lambda: guard.arm("dismiss", prompt_text="x"),
        lambda: guard.arm("accept", prompt_text=5),  # type: ignore[arg-type]
        lambda: guard.arm("accept", times=0),
        lambda: guard.arm("accept", times=True),
        lambda: guard.arm("accept", times=1_000),
        lambda: guard.history(limit=0),
    ):
        with pytest.raises(ActionInvalid):
            bad()
    assert guard.armed is None
    guard.detach()
    guard.detach()
