"""Cookies, web storage and saved sessions on a real Chromium (fixtures/engine/storage.html)."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from automation import BrowserSession, Budget, Tab
from automation.browser.storage import (
    STATE_MARKER_KEY,
    cookies_clear,
    cookies_get,
    cookies_set,
    storage_state_load,
    storage_state_save,
    web_storage_clear,
    web_storage_get,
    web_storage_set,
)
from automation.errors import ActionFailed, ActionInvalid, BrowserClosed
from tests.bounds import room


def budget() -> Budget:
    return room("storage test")


async def who(tab: Tab) -> str:
    return await tab.page.text_content("#who", timeout=3_000) or ""


async def test_cookies_set_get_clear(tab: Tab, fixture_url: str) -> None:
    count = await cookies_set(
        tab.context,
        [
            {"name": "session", "value": "s1", "url": fixture_url},
            {"name": "theme", "value": "dark", "domain": "127.0.0.1", "path": "/", "secure": False},
            {"name": "other", "value": "x", "url": "http://other.test/"},
        ],
        budget=budget(),
    )
    assert count == 3
    mine = await cookies_get(tab.context, urls=fixture_url, budget=budget())
    assert sorted(c["name"] for c in mine) == ["session", "theme"]
    assert len(await cookies_get(tab.context, budget=budget())) == 3
    assert await cookies_clear(tab.context, name="session", budget=budget()) == 1
    assert await cookies_clear(tab.context, domain="other.test", budget=budget()) == 1
    assert [c["name"] for c in await cookies_get(tab.context, budget=budget())] == ["theme"]
    assert await cookies_clear(tab.context, budget=budget()) == 1


BAD_COOKIES: list[Any] = [
    {"name": "a"},  # no value
    {"name": "a", "value": "1"},  # no place
    {"name": "a", "value": "1", "url": "http://x.test", "domain": "x.test", "path": "/"},
    {"name": "a", "value": "1", "domain": "x.test"},  # no path
    {"name": "a", "value": "1", "domain": "x.test", "path": "no-slash"},
    {"name": "a", "value": "1", "url": "ftp://x.test"},
    {"name": "", "value": "1", "url": "http://x.test"},
    {"name": "a", "value": 1, "url": "http://x.test"},
    {"name": "a", "value": "1", "url": "http://x.test", "colour": "blue"},
    {"name": "a", "value": "1", "url": "http://x.test", "sameSite": "lax"},
    {"name": "a", "value": "1", "url": "http://x.test", "expires": True},
    {"name": "a", "value": "1", "url": "http://x.test", "httpOnly": "yes"},
    "a=1",
]


async def test_bad_cookie_calls_are_invalid(tab: Tab) -> None:
    for cookie in BAD_COOKIES:
        with pytest.raises(ActionInvalid):
            await cookies_set(tab.context, [cookie], budget=budget())
    with pytest.raises(ActionInvalid):
        await cookies_set(tab.context, [], budget=budget())
    with pytest.raises(ActionInvalid):
        await cookies_set(tab.context, {"name": "a"}, budget=budget())  # type: ignore[arg-type]
    with pytest.raises(ActionInvalid):
        await cookies_get(tab.context, urls="ftp://x.test", budget=budget())
    with pytest.raises(ActionInvalid):
        await cookies_clear(tab.context, name="", budget=budget())


async def test_web_storage_on_the_page_origin(tab: Tab, fixture_url: str) -> None:
    await tab.page.goto(f"{fixture_url}/engine/storage.html")
    assert await web_storage_get(tab.page, "local", budget=budget()) == {}
    assert await web_storage_set(tab.page, "local", {"token": "t1", "lang": "fr"}, budget=budget())
    assert await web_storage_set(tab.page, "session", {"tab": "one"}, budget=budget()) == 1
    assert await web_storage_get(tab.page, "local", budget=budget()) == {
        "token": "t1",
        "lang": "fr",
    }
    assert await web_storage_get(tab.page, "local", "lang", budget=budget()) == {"lang": "fr"}
    assert await web_storage_get(tab.page, "local", "missing", budget=budget()) == {}
    assert await tab.page.evaluate("sessionStorage.getItem('tab')") == "one"
    assert await web_storage_clear(tab.page, "local", budget=budget()) == 2
    assert await tab.page.evaluate("localStorage.length") == 0
    assert await web_storage_get(tab.page, "session", budget=budget()) == {"tab": "one"}


async def test_web_storage_refuses_pages_without_origin(tab: Tab) -> None:
    assert tab.page.url == "about:blank"
    with pytest.raises(ActionFailed, match="no origin") as caught:
        await web_storage_get(tab.page, "local", budget=budget())
    assert "navigate" in caught.value.hint
    await tab.page.goto("data:text/html,<p>x</p>")
    with pytest.raises(ActionFailed):
        await web_storage_set(tab.page, "session", {"a": "b"}, budget=budget())


async def test_bad_web_storage_calls_are_invalid(tab: Tab) -> None:
    for call in (
        web_storage_get(tab.page, "disk", budget=budget()),  # type: ignore[arg-type]
        web_storage_get(tab.page, "local", "", budget=budget()),
        web_storage_set(tab.page, "local", {}, budget=budget()),
        web_storage_set(tab.page, "local", {"a": 1}, budget=budget()),  # type: ignore[dict-item]
        web_storage_set(tab.page, "local", [("a", "b")], budget=budget()),  # type: ignore[arg-type]
        web_storage_clear(tab.page, "cookies", budget=budget()),  # type: ignore[arg-type]
    ):
        with pytest.raises(ActionInvalid):
            await call


async def test_saved_session_is_reused_by_a_later_context(
    tab: Tab, browser: BrowserSession, fixture_url: str, tmp_path: Path
) -> None:
    page_url = f"{fixture_url}/engine/storage.html"
    await tab.page.goto(page_url)
    await tab.page.click("#login")
    assert await who(tab) == "logged in with abc123, cookie"
    path = tmp_path / "state" / "shop.json"
    saved = await storage_state_save(tab.context, path, budget=budget())
    assert saved == {"path": str(path), "cookies": 1, "origins": 1, "local_storage_items": 1}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds session secrets
    assert [p.name for p in path.parent.iterdir()] == ["shop.json"]  # no temporary left
    assert json.loads(path.read_text())["cookies"][0]["name"] == "session"

    later = await browser.new_tab()
    try:
        loaded = await storage_state_load(later.context, str(path), budget=budget())
        assert loaded["cookies"] == 1 and loaded["local_storage_items"] == 1
        await later.page.goto(page_url)
        assert await who(later) == "logged in with abc123, cookie"
        # Filled once: what the app changes afterwards (a logout) is not put back.
        await later.page.click("#logout")
        await later.page.reload()
        assert await who(later) == "logged out, no cookie"
        assert await later.page.evaluate(f"localStorage.getItem({STATE_MARKER_KEY!r})")
    finally:
        await later.close()


async def test_state_as_a_dict(tab: Tab, fixture_url: str) -> None:
    origin = fixture_url  # http://127.0.0.1:<port>
    state = {"origins": [{"origin": origin, "localStorage": [{"name": "token", "value": "d1"}]}]}
    counts = await storage_state_load(tab.context, state, budget=budget())
    assert counts == {"path": None, "cookies": 0, "origins": 1, "local_storage_items": 1}
    await storage_state_load(tab.context, state, budget=budget())  # twice: still filled once
    await tab.page.goto(f"{fixture_url}/engine/storage.html")
    assert await who(tab) == "logged in with d1, no cookie"
    await tab.page.click("#logout")
    await tab.page.reload()
    assert await who(tab) == "logged out, no cookie"


BAD_STATE_FILES: list[tuple[str | None, str]] = [
    (None, "no storage state file"),
    ("{not json", "is not a JSON storage state"),
    ("[1, 2]", "is not a storage state"),
    ('{"cookies": {}}', "must be lists"),
    ('{"cookies": [{"name": "a", "value": "b"}]}', "needs either url"),
    ('{"origins": [{"origin": "file:///x", "localStorage": []}]}', "an http(s) origin"),
    ('{"origins": [{"origin": "http://a.test", "localStorage": [{"name": 1}]}]}', "name, value"),
]


async def test_bad_state_files_are_invalid(tab: Tab, tmp_path: Path) -> None:
    for n, (content, message) in enumerate(BAD_STATE_FILES):
        path = tmp_path / f"state{n}.json"
        if content is not None:
            path.write_text(content)
        with pytest.raises(ActionInvalid) as caught:
            await storage_state_load(tab.context, path, budget=budget())
        assert message in caught.value.message and str(path) in caught.value.message
    assert await cookies_get(tab.context, budget=budget()) == []  # nothing half-applied


async def test_bad_state_arguments_and_closed_context(tab: Tab, tmp_path: Path) -> None:
    with pytest.raises(ActionInvalid):
        await storage_state_load(tab.context, 42, budget=budget())  # type: ignore[arg-type]
    with pytest.raises(ActionInvalid):
        await storage_state_save(tab.context, "", budget=budget())  # type: ignore[arg-type]
    await tab.context.close()
    with pytest.raises(BrowserClosed):
        await storage_state_save(tab.context, tmp_path / "s.json", budget=budget())
    with pytest.raises(BrowserClosed):
        await cookies_get(tab.context, budget=budget())
