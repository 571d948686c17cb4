"""The live view as a person uses it: watching the run's tab, taking over a paused run with
a click on the picture enlarged to the page's width (recorded as the person's step), and a
dropped socket that loses nothing."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Page, expect

from automation import BrowserSession
from tests.e2e.ui import LIVE_MS, Server, live_picture, log_in, save, start_run
from tests.tasks import AMBIGUOUS_TASK

pytestmark = pytest.mark.e2e


async def test_a_person_takes_over_with_a_click_on_the_live_view(
    page: Page, server: Server, browser: BrowserSession
) -> None:
    orders = f"{server.base_url}/demo/list.html"
    # Where the third "Delete" is in the run's tab: the same page at the same viewport.
    probe = await browser.new_tab()
    await probe.page.goto(orders)
    target = await probe.page.locator('[data-testid="order-1003"] button.delete').bounding_box()
    viewport = probe.page.viewport_size
    await probe.close()
    assert target is not None and viewport is not None

    await log_in(page, server)
    await start_run(page, orders, AMBIGUOUS_TASK)
    await expect(page.locator("#status")).to_have_text("paused", timeout=LIVE_MS)
    await expect(page.locator("#status-reason")).to_contain_text("need_help")
    await live_picture(page)
    live = page.get_by_test_id("live-view")
    await expect(live).to_have_class(re.compile(r"\btakeover\b"))
    await expect(page.locator("#live-hint")).to_be_visible()
    await expect(page.locator("#live-url")).to_have_text(orders)
    await save(page, "run-takeover.png")
    small = await drawn(page)
    assert small["width"] < viewport["width"] / 2  # beside the conversation: too small

    # Enlarged, the picture is as wide as the page allows, the tab's own size at most,
    # with the tab's shape; the click on it lands on the button under the pointer.
    await page.get_by_role("button", name="Enlarge").click()
    await expect(page.get_by_role("button", name="Smaller")).to_have_attribute(
        "aria-pressed", "true"
    )
    picture = await drawn(page)
    assert picture["width"] > 2 * small["width"]
    assert picture["width"] <= viewport["width"]
    assert abs(picture["height"] / picture["width"] - small["height"] / small["width"]) < 0.01
    await save(page, "run-takeover-enlarged.png")
    scale = picture["width"] / viewport["width"]
    await page.mouse.click(
        picture["x"] + (target["x"] + target["width"] / 2) * scale,
        picture["y"] + (target["y"] + target["height"] / 2) * scale,
    )
    # The run's tab changed: the next frames say so (the page text is in the picture only,
    # so wait for the click's answer on the socket).
    await page.wait_for_function(
        "() => window.__socketEvents.some((e) => e.type === 'input.result' && e.ok)"
    )
    await page.locator("#reply-text").fill("skip")
    await page.get_by_role("button", name="Send", exact=True).click()
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)

    steps = page.locator("#steps > li")
    await expect(steps.locator(".step-action")).to_have_text(["navigate", "click", "wait_for"])
    await expect(steps.nth(1).locator(".step-by")).to_have_text("by the person")
    # Five buttons are named "Delete": the row tells which one.
    await expect(steps.nth(1).locator(".step-target")).to_have_text(
        re.compile(r'^button "Delete" in row "#1003\s+Alan Turing')
    )
    await expect(page.locator("#chat")).to_contain_text("Order #1003 deleted")
    # The person's step has the picture of the page as they left it.
    await expect(steps.nth(1).locator("img.thumb")).to_have_count(1)
    await save(page, "run-after-takeover.png")


async def drawn(page: Page) -> dict[str, float]:
    """Where the live view draws the tab: the picture inside its border, in page px."""
    return await page.locator("#live-frame").evaluate(
        "(img) => { const r = img.getBoundingClientRect();"
        " return {x: r.left + img.clientLeft, y: r.top + img.clientTop,"
        " width: img.clientWidth, height: img.clientHeight}; }"
    )


async def test_a_dropped_socket_reconnects_and_misses_nothing(page: Page, server: Server) -> None:
    await log_in(page, server)
    run_id = await start_run(page, f"{server.base_url}/demo/list.html", AMBIGUOUS_TASK)
    await expect(page.locator("#status")).to_have_text("paused", timeout=LIVE_MS)
    await expect(page.locator("#steps > li")).to_have_count(1)

    # The reply goes out, then the network drops and stays down while the run finishes.
    await page.locator("#reply-text").fill("click Delete #3")
    await page.get_by_role("button", name="Send", exact=True).click()
    await page.evaluate("() => { window.__holdSockets = true; window.__sockets.at(-1).close(); }")
    await expect(page.locator("#conn")).to_have_text("reconnecting…")
    status = re.compile(r'data-testid="status">(\w+)<')
    for _ in range(100):
        html = await (await page.request.get(f"{server.base_url}/runs/{run_id}/")).text()
        if status.search(html).group(1) == "succeeded":
            break
        await page.wait_for_timeout(100)
    else:
        raise AssertionError("the run did not finish while the page was away")
    assert await page.locator("#status").text_content() == "paused"  # it heard nothing yet

    await page.evaluate("() => { window.__holdSockets = false; }")
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    await expect(page.locator("#conn")).to_have_text("")
    steps = page.locator("#steps > li")
    await expect(steps.locator(".step-action")).to_have_text(["navigate", "click", "wait_for"])
    await expect(page.locator("#chat .msg.succeeded")).to_have_count(1)  # once, not twice
    urls = await page.evaluate("() => window.__sockets.map((s) => s.url)")
    resumed = [u for u in urls if "/ws/runs/" in u][-1]
    assert re.search(r"after=[1-9]\d*$", resumed), urls  # asked only for what it missed
    await save(page, "run-reconnected.png")
