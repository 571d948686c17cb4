"""What the end-to-end tests share: the server they start, and the steps a person takes in
the dashboard (log in, start a run, save a screenshot for the reviewer)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from playwright.async_api import Page, expect

from tests.fakellm import ScriptedLLMServer

CHROMIUM = os.environ.get("TABWRIGHT_CHROMIUM_PATH", "/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
USERNAME = "e2e-user"
PASSWORD = "e2e-password-9f3k"
# A second person on the same server, for what one person must not see of another's.
OTHER_USERNAME = "e2e-other-user"
OTHER_PASSWORD = "e2e-other-password-5m2q"
SHOP_PASSWORD = "shop-password-77"
LIVE_MS = 20_000  # a whole run, including the runner's first Chromium launch


@dataclass(frozen=True)
class Server:
    base_url: str
    log: Path
    llm: ScriptedLLMServer  # the "openai" planner's endpoint


async def log_in(
    page: Page, server: Server | str, username: str = USERNAME, password: str = PASSWORD
) -> None:
    """Log in on ``server`` (or the dashboard at that base URL) from its home page."""
    base_url = server if isinstance(server, str) else server.base_url
    await page.goto(f"{base_url}/")
    await expect(page).to_have_url(f"{base_url}/accounts/login/?next=/")
    await page.get_by_label("Username").fill(username)
    await page.get_by_label("Password").fill(password)
    await page.get_by_role("button", name="Log in").click()
    await expect(page).to_have_url(f"{base_url}/")
    await expect(page.get_by_role("heading", name="New conversation")).to_be_visible()


async def start_run(page: Page, start_url: str, task: str, planner: str = "rules") -> int:
    await page.get_by_label("Start URL").fill(start_url)
    await page.get_by_label("Message").fill(task)
    await page.get_by_label("Model").select_option(planner)
    await page.get_by_role("button", name="Start").click()
    await expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    return int(re.search(r"/runs/(\d+)/$", page.url).group(1))


async def initial_step_count(page: Page) -> int:
    events = json.loads(await page.locator("#initial-events").text_content())
    return sum(1 for e in events if e["type"] == "step.recorded")


async def socket_step_count(page: Page) -> int:
    return await page.evaluate(
        "() => window.__socketEvents.filter((e) => e.type === 'step.recorded').length"
    )


async def save(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    await page.screenshot(path=str(SCREENSHOTS / name), full_page=True)


async def save_as_scenario(page: Page, name: str, *, screenshot: str = "") -> None:
    """From a finished run's page: open Save as scenario, name it, save it."""
    await page.get_by_role("link", name="Save as scenario…").click()
    heading = page.get_by_role("heading", name=re.compile(r"^Save “.+” as a scenario"))
    await expect(heading).to_be_visible()
    await page.get_by_label("Name", exact=True).fill(name)
    if screenshot:
        await save(page, screenshot)
    await page.get_by_role("button", name="Save as scenario").click()
    await expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
