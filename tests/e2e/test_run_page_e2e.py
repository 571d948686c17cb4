"""The run page while a model works, as a person sees it: the wait counted live, retries
with their reason, a reply cut off mid-stream marked discarded, actions drawn as chips,
token totals that add up live; and the new-run form that follows the planner chosen."""

from __future__ import annotations

import json
import re
import threading

import pytest
from playwright.async_api import Page, expect

from automation import BrowserSession
from tests.e2e.ui import LIVE_MS, Server, log_in, save, start_run
from tests.fakellm import Reply
from tests.refs import fresh_snapshot, ref_of

pytestmark = pytest.mark.e2e


def tag(action: dict[str, object]) -> str:
    return "<action>" + json.dumps(action) + "</action>"


async def usage_shown(page: Page) -> tuple[int, int]:
    prompt = await page.locator("#prompt-tokens").text_content()
    completion = await page.locator("#completion-tokens").text_content()
    return int(prompt or "0"), int(completion or "0")


async def test_the_page_shows_the_wait_the_retries_and_the_reply_as_it_happens(
    page: Page, server: Server, browser: BrowserSession
) -> None:
    form = f"{server.base_url}/demo/form.html"
    snap = await fresh_snapshot(browser, form)  # refs as the run's tab will number them
    name, email = ref_of(snap, "textbox", "Name"), ref_of(snap, "textbox", "Email")
    answer = (
        "I fill in the name and the email, <b>then</b> sign up.\n"
        + tag({"action": "fill", "ref": name, "value": "Ada"})
        + tag({"action": "fill", "ref": email, "value": "ada@example.org"})
    )
    cut_off = "A first try that the connection drops mid-reply.\n" + tag(
        {"action": "click", "ref": "e1"}
    )
    held = threading.Event()  # the third try answers once the page has counted its wait
    server.llm.script(
        Reply(status=500, text="scripted outage", retry_after=1.3),
        Reply(text=cut_off, drop_after_chars=24),
        Reply(text=answer, gate=held),
        "The form is filled.\n" + tag({"action": "done", "summary": "filled in"}),
    )
    await log_in(page, server)
    run_id = await start_run(page, form, "Fill in the sign-up form for Ada", planner="openai")

    chat = page.locator("#chat")
    # The third try: the model takes its time, and the page counts it.
    waiting = chat.locator(".msg.model.waiting")
    await expect(waiting).to_have_text(
        re.compile(r"waiting for the model \(try 3\) · [2-9] s"), timeout=LIVE_MS
    )
    retries = chat.locator(".msg.model.retry .body")
    await expect(retries).to_have_count(2)
    await expect(retries.nth(0)).to_have_text("HTTP 500, retry 1 of 3 in 1.3 s")
    await expect(retries.nth(1)).to_have_text(
        re.compile(
            r"^connection dropped mid-reply, retry 2 of 3 in \d\.\d s "
            r"\(24 characters already shown are discarded\)$"
        )
    )
    discarded = chat.locator(".msg.agent.discarded")
    await expect(discarded).to_have_count(1)
    await expect(discarded.locator(".body")).to_have_text(cut_off[:24].strip())
    await expect(discarded.locator(".discarded-why")).to_contain_text("the retry starts over")
    await save(page, "run-page-waiting.png")
    held.set()

    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    await expect(chat.locator(".msg.model.waiting")).to_have_count(0)  # nothing counts on
    answered = chat.locator(".msg.model.answered .body")
    await expect(answered).to_have_count(2)
    await expect(answered.nth(0)).to_have_text(
        re.compile(r"^the model answered in ([2-9]|\d\d+)\.\d s \(try 3\)$")
    )
    # The kept reply streamed afresh: its own message, with its actions as chips.
    replies = chat.locator(".msg.agent:not(.discarded)")
    await expect(replies).to_have_count(2)
    first = replies.nth(0)
    await expect(first.locator(".said")).to_have_text(
        "I fill in the name and the email, <b>then</b> sign up."
    )
    await expect(first.locator("b")).to_have_count(0)  # the model's text is never HTML
    await expect(first.locator(".chip")).to_have_text(
        [f'fill {name} "Ada"', f'fill {email} "ada@example.org"']
    )
    await expect(replies.nth(1).locator(".chip")).to_have_text(['done "filled in"'])
    await expect(first).not_to_contain_text("<action>")

    # Token totals added up live, from the two answers that came over the socket.
    live_messages = await page.evaluate(
        "() => window.__socketEvents.filter((e) => e.type === 'llm.message')"
    )
    assert len(live_messages) == 2
    summed = (
        sum(m["usage"]["prompt_tokens"] for m in live_messages),
        sum(m["usage"]["completion_tokens"] for m in live_messages),
    )
    assert summed[0] > 0 and summed[1] > 0
    assert await usage_shown(page) == summed
    await save(page, "run-page-answered.png")

    # A reload draws the stored events the same way, without a live counter.
    retry_lines = await retries.all_text_contents()
    answered_line = await answered.nth(0).text_content()
    await page.reload()
    await expect(page.locator("#status")).to_have_text("succeeded")
    assert await usage_shown(page) == summed
    await expect(chat.locator(".msg.model.waiting")).to_have_count(0)
    await expect(chat.locator(".msg.model.retry .body")).to_have_text(retry_lines)
    await expect(chat.locator(".msg.model.answered .body").nth(0)).to_have_text(answered_line or "")
    await expect(chat.locator(".msg.agent .chip")).to_have_text(
        [f'fill {name} "Ada"', f'fill {email} "ada@example.org"', 'done "filled in"']
    )
    await save(page, "run-page-reloaded.png")

    # The run list shows the same total the page added up.
    await page.get_by_role("link", name="Conversations", exact=True).click()
    row = (
        page.get_by_test_id("run-table")
        .locator("tbody tr")
        .filter(has=page.get_by_role("link", name=str(run_id), exact=True))
    )
    await expect(row.locator("td").nth(6)).to_have_text(str(sum(summed)))


async def test_a_page_opened_mid_wait_counts_from_when_the_wait_began(
    page: Page, server: Server
) -> None:
    # The model thinks until the page was reloaded and looked at.
    thought = threading.Event()
    server.llm.script(Reply(text=tag({"action": "done", "summary": "nothing to do"}), gate=thought))
    await log_in(page, server)
    await start_run(page, f"{server.base_url}/demo/form.html", "Look at the form", planner="openai")
    waiting = page.locator("#chat .msg.model.waiting")
    try:
        await expect(waiting).to_have_text(
            re.compile(r"waiting for the model · [1-9]\d* s"), timeout=LIVE_MS
        )
        await page.reload()  # the wait now comes from the stored event, stamped by the server
        await expect(waiting).to_have_count(1)
        shown = await waiting.locator(".body").text_content()
        assert re.fullmatch(r"waiting for the model · [1-9]\d* s", shown or ""), shown
    finally:
        thought.set()
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    await expect(waiting).to_have_count(0)
    await expect(page.locator("#chat .msg.model.answered")).to_have_count(1)


# The select as drawn, and as wide as it is when nothing constrains it (its longest choice).
SELECT_WIDTHS_JS = """(select) => {
  const probe = select.cloneNode(true);
  Object.assign(probe.style, {width: "auto", maxWidth: "none", position: "absolute",
                              visibility: "hidden"});
  select.parentElement.appendChild(probe);
  const needed = probe.getBoundingClientRect().width;
  probe.remove();
  return {drawn: select.getBoundingClientRect().width, needed: needed};
}"""


async def test_the_new_run_form_follows_the_planner(page: Page, server: Server) -> None:
    await log_in(page, server)
    model = page.get_by_label("Model")
    await expect(model).to_have_value("rules")
    widths = await model.evaluate(SELECT_WIDTHS_JS)
    assert widths["drawn"] >= widths["needed"] - 0.5, widths  # the choice is not cut
    await save(page, "new-run-rules.png")
    task = page.get_by_label("Message")
    rules_hint = page.locator("#task-hint-rules")
    llm_hint = page.locator("#task-hint-llm")
    await expect(task).to_have_attribute("placeholder", re.compile("^One command per line"))
    await expect(task).to_have_value(re.compile("^type Ada Lovelace into Name"))  # the demo
    await expect(rules_hint).to_be_visible()
    await expect(llm_hint).to_be_hidden()

    await page.get_by_label("Model").select_option("openai")
    await expect(task).to_have_attribute("placeholder", re.compile("In plain words"))
    await expect(task).to_have_attribute("aria-describedby", "task-hint-llm")
    await expect(task).to_have_value(re.compile("^Sign up as Ada Lovelace"))  # untouched demo
    await expect(llm_hint).to_be_visible()
    await expect(rules_hint).to_be_hidden()
    await save(page, "new-run-llm.png")

    await task.fill("my own words")
    await page.get_by_label("Model").select_option("rules")
    await expect(task).to_have_attribute("placeholder", re.compile("^One command per line"))
    await expect(task).to_have_value("my own words")  # what the person wrote is kept
    await expect(rules_hint).to_be_visible()


# Each drawn node: ["said", its text], or ["chips", the text of each chip in the row].
CHIPS_JS = """(texts) => texts.map(([text, final]) =>
  window.tabwrightChips.reply(text, final).map((node) => node.className === "chips"
    ? ["chips", [...node.children].map((chip) => chip.className + ": " + chip.textContent)]
    : [node.className, node.textContent]))"""


async def test_action_tags_become_chips_and_everything_else_stays_text(
    page: Page, server: Server
) -> None:
    await log_in(page, server)
    await start_run(page, f"{server.base_url}/demo/form.html", "wait for Sign up")
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    # The rule planner's own reply, drawn with its action as a chip.
    await expect(page.locator("#chat .msg.agent .chip").first).to_have_text('wait_for "Sign up"')
    steps = {"action": "steps", "steps": [{"type": "click", "ref": "e1"}, {"type": "read_page"}]}
    cases = [
        ('Go.\n<action>{"action": "navigate", "url": "https://shop.test/a"}</action>', True),
        ('<ACTION>```json\n{"action": "press", "key": "Enter"}\n```</ACTION> done', True),
        ('<action>{"action": "scroll", "dy": 300}</action><action>' + json.dumps(steps), True),
        ('<action>{"action": "type", "ref": "e3", "text": "<img src=x onerror=alert(1)>"', False),
        ("<action>{not json}</action><script>alert(1)</script>", True),
    ]
    drawn = await page.evaluate(CHIPS_JS, [list(case) for case in cases])
    assert drawn == [
        [["said", "Go."], ["chips", ["chip: navigate https://shop.test/a"]]],
        [["chips", ["chip: press Enter"]], ["said", "done"]],
        [["chips", ["chip: scroll dy=300", "chip: steps (2): click → read_page"]]],
        [["chips", ["chip pending: type …"]]],  # still streaming: never half an argument
        [["chips", ["chip bad: unreadable action"]], ["said", "<script>alert(1)</script>"]],
    ]


# What the run page does as it draws its stored events: the pictures #shot was given
# (window.__shots) and how often the page was asked to bring something into view.
WATCH_DRAWING = """(() => {
  window.__shots = [];
  window.__scrolls = 0;
  const scroll = Element.prototype.scrollIntoView;
  Element.prototype.scrollIntoView = function (...args) {
    window.__scrolls += 1;
    return scroll.apply(this, args);
  };
  new MutationObserver((changes) => changes.forEach((c) => {
    if (c.target.id === "shot") window.__shots.push(c.target.getAttribute("src"));
  })).observe(document, { subtree: true, attributes: true, attributeFilter: ["src"] });
})();"""


async def test_a_finished_run_opens_on_its_last_picture_without_fetching_each_steps(
    page: Page, server: Server
) -> None:
    """Opened again, a finished run's page shows the picture after its last step and its
    latest message in view; it gave the picture no other step's (each fetched and decoded
    for nothing, forty on a run of forty steps) and brought the conversation into view
    once, not once a message (each a layout of the whole page)."""
    await log_in(page, server)
    task = "\n".join(f"type Ada {i} into Name" for i in range(4))
    run_id = await start_run(page, f"{server.base_url}/demo/form.html", task)
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    await page.add_init_script(WATCH_DRAWING)
    await page.reload()
    shot = page.locator("#shot")
    await expect(shot).to_be_visible()
    await expect(shot).to_have_attribute("src", f"/runs/{run_id}/screenshots/4.jpg")
    await expect(page.locator("#steps img.thumb")).to_have_count(5)
    assert await page.evaluate("() => window.__shots") == [f"/runs/{run_id}/screenshots/4.jpg"]
    assert await page.evaluate("() => window.__scrolls") == 1
    await expect(page.locator("#chat > li").last).to_be_in_viewport()
