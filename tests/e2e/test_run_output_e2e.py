"""A run given an output schema on the new-run form: the page shows the data it ended in
as it arrives, and offers it as a JSON file."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from tests.e2e.ui import LIVE_MS, Server, log_in, save

pytestmark = pytest.mark.e2e

SCHEMA = {"type": "object", "properties": {"button": {"type": "string"}}, "required": ["button"]}


async def test_the_output_shows_when_the_run_ends_and_downloads(page: Page, server: Server) -> None:
    bad = {"action": "done", "summary": "read", "output": {"label": "Sign up"}}
    good = {"action": "done", "summary": "read", "output": {"button": "Sign up <now>"}}
    server.llm.script(
        "<action>" + json.dumps(bad) + "</action>", "<action>" + json.dumps(good) + "</action>"
    )
    await log_in(page, server)
    await page.get_by_label("Start URL").fill(f"{server.base_url}/demo/form.html")
    await page.get_by_label("Message").fill("Read the sign-up button's label")
    await page.get_by_label("Model").select_option("openai")
    await page.get_by_text("Output schema (optional)").click()
    await page.get_by_label("JSON Schema of the data the run ends in").fill(json.dumps(SCHEMA))
    await page.get_by_role("button", name="Start").click()
    await expect(page).to_have_url(re.compile(r"/runs/\d+/$"))

    output = page.get_by_test_id("output")
    await expect(output.locator("#output")).to_have_text(
        json.dumps(good["output"], indent=2), timeout=LIVE_MS
    )
    # The first done's output did not match: the model was told, in the conversation.
    await expect(page.locator("#chat")).to_contain_text("'button' is a required property")
    await save(page, "run-output.png")
    async with page.expect_download() as caught:
        await output.get_by_role("link", name="Download as JSON").click()
    download = await caught.value
    text = await asyncio.to_thread(Path(await download.path()).read_text, encoding="utf-8")
    assert json.loads(text) == good["output"]
