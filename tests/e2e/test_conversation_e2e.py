"""A conversation, as a person has it in the dashboard: a first message; a second one while
the agent works (it acts on it); a third after its answer (same tab, it goes on); a wait
"Close tab" (the tab is closed) and a fourth (the page is restored by replay, then
the agent goes on); the whole conversation saved as one scenario that replays.  Every
stage survives a reload, and another person sees none of it."""

from __future__ import annotations

import json
import re

import pytest
from playwright.async_api import Browser, Page, expect

from automation import BrowserSession
from tests.e2e.ui import (
    LIVE_MS,
    OTHER_PASSWORD,
    OTHER_USERNAME,
    Server,
    log_in,
    save,
    save_as_scenario,
    start_run,
)
from tests.fakellm import Reply
from tests.refs import fresh_snapshot, ref_of

pytestmark = pytest.mark.e2e


def tag(action: dict[str, object]) -> str:
    return "<action>" + json.dumps(action) + "</action>"


def prompt_of(request: dict[str, object]) -> str:
    """Everything the model was sent in one request, as text."""
    return json.dumps(request.get("messages"), ensure_ascii=False)


async def send(page: Page, text: str) -> None:
    await page.locator("#reply-text").fill(text)
    await page.get_by_role("button", name="Send", exact=True).click()


async def reload_and_check(page: Page, person_messages: int, steps: int) -> None:
    """After a reload the thread and the steps are all there (from the stored events)."""
    await page.reload()
    await expect(page.locator("body")).to_have_attribute("data-live", "1")
    await expect(page.locator("#chat .msg.person")).to_have_count(person_messages)
    await expect(page.locator("#steps > li.step")).to_have_count(steps)


async def test_a_conversation_goes_on_across_messages_a_closed_tab_and_becomes_a_scenario(
    page: Page, server: Server, browser: BrowserSession, ui_browser: Browser
) -> None:
    form = f"{server.base_url}/demo/form.html"
    snap = await fresh_snapshot(browser, form)  # refs as the conversation's tab numbers them
    name = ref_of(snap, "textbox", "Name")
    email = ref_of(snap, "textbox", "Email")
    sign_up = ref_of(snap, "button", "Sign up")
    server.llm.requests.clear()
    server.llm.script(
        # 1: the first message; the model takes its time, so the person writes meanwhile.
        Reply(text="Her name first.\n" + tag({"action": "fill", "ref": name,
                                              "value": "Ada Lovelace"}), delay_s=4),
        "The email you gave.\n"
        + tag({"action": "fill", "ref": email, "value": "ada@example.org"})
        + tag({"action": "done", "summary": "Filled in Ada's name and email."}),
        # 3: after the answer, on the same tab.
        "Signing up.\n" + tag({"action": "click", "ref": sign_up}),
        tag({"action": "done", "summary": "Signed up: the page says Welcome, Ada Lovelace!"}),
        # 4: after the tab was closed and the page restored.
        tag({"action": "done", "summary": "Still signed up: Welcome, Ada Lovelace!"}),
    )  # fmt: skip
    await log_in(page, server)
    run_id = await start_run(page, form, "Sign Ada Lovelace up on this form", planner="openai")
    chat = page.locator("#chat")
    status = page.locator("#status")

    # 2: while the model works on its first answer.
    await expect(chat.locator(".msg.model.waiting")).to_have_count(1, timeout=LIVE_MS)
    await send(page, "Her email is ada@example.org")
    second = chat.locator(".msg.person").nth(1)
    await expect(second).to_have_class(re.compile(r"\bwaiting\b"))  # shown at once, unread
    await expect(second).to_contain_text("not read yet")
    await save(page, "conversation-message-while-working.png")
    await expect(status).to_have_text("succeeded", timeout=LIVE_MS)
    await expect(second).not_to_have_class(re.compile(r"\bwaiting\b"))  # the model read it
    assert "Her email is ada@example.org" in prompt_of(server.llm.requests[1])
    await expect(page.locator("#session")).to_have_text("tab open")
    await expect(chat).to_contain_text("The tab stays open")
    await reload_and_check(page, person_messages=2, steps=3)  # navigate, name, email

    # 3: after the answer: the same tab, with what the first stretch typed.
    await send(page, "Now sign her up")
    await expect(chat.locator(".stretch-divider")).to_have_text(["request 2"], timeout=LIVE_MS)
    await expect(chat.locator(".msg.succeeded")).to_have_count(2, timeout=LIVE_MS)
    await expect(chat).to_contain_text("Signed up: the page says Welcome, Ada Lovelace!")
    third_prompt = prompt_of(server.llm.requests[2])
    assert "Now sign her up" in third_prompt and "Sign Ada Lovelace up" in third_prompt
    await expect(page.locator("#steps > li.step .step-action")).to_have_text(
        ["navigate", "fill", "fill", "click"]
    )
    # The thread opens with the first request; the Browser card still names the page.
    await expect(chat.locator("li.msg").first).to_contain_text("Sign Ada Lovelace up")
    await expect(page.locator("#live-url")).to_have_text(form)
    await save(page, "conversation-after-done.png")
    await reload_and_check(page, person_messages=3, steps=4)

    # The person closes the tab (the idle time would too: test_conversations), and the
    # conversation says so.
    await page.get_by_role("button", name="Close tab").click()
    await expect(page.locator("#session")).to_have_text("tab closed", timeout=LIVE_MS)
    await expect(chat).to_contain_text("closed by the person")
    await expect(page.get_by_role("button", name="Close tab")).to_be_hidden()
    await reload_and_check(page, person_messages=3, steps=4)
    await expect(page.locator("#reply-label")).to_have_text("Continue (the page is restored first)")

    # 4: the page comes back by replay, then the agent goes on from it.
    await send(page, "Is she still signed up?")
    await expect(chat).to_contain_text("Page restored (4 steps replayed).", timeout=LIVE_MS)
    await expect(chat.locator(".msg.restore.ok")).to_have_count(4)
    await expect(chat).to_contain_text("Still signed up: Welcome, Ada Lovelace!", timeout=LIVE_MS)
    await expect(status).to_have_text("succeeded")
    await expect(page.locator("#session")).to_have_text("tab open")
    restored_prompt = prompt_of(server.llm.requests[4])
    assert "restored by replaying the 4 steps" in restored_prompt
    assert "Is she still signed up?" in restored_prompt and "Now sign her up" in restored_prompt
    assert "Welcome, Ada Lovelace!" in restored_prompt  # the restored page, as the model saw it
    await expect(page.locator("#live-url")).to_have_text(form)
    await save(page, "conversation-restored.png")
    await reload_and_check(page, person_messages=4, steps=4)  # the restore added no step

    # The whole conversation as one scenario: every request's steps (the message sent
    # while the agent worked was part of the first), the checks placed where each ended.
    await page.get_by_role("link", name="Save as scenario…").click()
    stretches = page.get_by_test_id("stretches").get_by_role("checkbox")
    await expect(stretches).to_have_count(3)
    for box in await stretches.all():
        await expect(box).to_be_checked()
    await save(page, "conversation-save.png")
    await page.go_back()
    await save_as_scenario(page, "Ada signs up, by conversation")
    scenario_url = page.url
    await page.get_by_role("button", name="Replay").click()
    await expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    await expect(status).to_have_text("succeeded", timeout=LIVE_MS)
    await page.goto(scenario_url)
    await expect(page.get_by_test_id("last-replay-status")).to_have_text("succeeded")

    # Another person sees none of it.
    context = await ui_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    try:
        other = await context.new_page()
        await log_in(other, server, OTHER_USERNAME, OTHER_PASSWORD)
        await expect(other.get_by_text("Sign Ada Lovelace up")).to_have_count(0)
        for url in (f"{server.base_url}/runs/{run_id}/", scenario_url):
            response = await other.goto(url)
            assert response is not None and response.status == 404, url
    finally:
        await context.close()
