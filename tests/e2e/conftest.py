"""The end-to-end tests' server and browser: a real daphne per test module (with its own
database, user and scripted LLM), and a real Chromium that drives the dashboard's pages
(one per test process; each test has a context of its own)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright, expect

from automation.browser.config import QUIET_CHROMIUM_ARGS
from tests.automation.recording.test_refused_in_place import office  # noqa: F401  (a fixture)
from tests.e2e.ui import CHROMIUM, SOCKET_SPY, UI_MS, Server, e2e_server
from tests.fakellm import ScriptedLLMServer

# Every expect() waits as long as a page may take on a loaded machine (Playwright's 5 s
# is a deadline a busy run misses); it ends as soon as its condition holds.
expect.set_options(timeout=UI_MS)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with e2e_server(tmp_path_factory) as running:
        yield running


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLMServer]:
    """The "openai" planner's endpoint for a module's dashboard processes (the tests
    script it; a reply may wait for the test: Reply.gate)."""
    server = ScriptedLLMServer().start()
    yield server
    server.stop()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def ui_browser() -> AsyncIterator[Browser]:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=list(QUIET_CHROMIUM_ARGS))
        yield browser
        await browser.close()


@pytest_asyncio.fixture(loop_scope="session")
async def page(ui_browser: Browser, server: Server) -> AsyncIterator[Page]:
    context = await ui_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(UI_MS)
    page = await context.new_page()
    await page.add_init_script(SOCKET_SPY)
    yield page
    await context.close()
