"""The live view as a person uses it: watching the run's tab, taking over a paused run with
a click on the picture enlarged to the page's width (recorded as the person's step), a
dropped socket that loses nothing, a page that never stops drawing shown as it moves and
as it stands once it stops by itself, and an interruption cleared there once and handled by
every replay after; then the day with no person: a schedule that signs in again and
clears a new release's interruptions by itself, firing after firing."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, closing, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from playwright.async_api import Page, expect

from automation import BrowserSession
from tests.backoffice import (
    COOKIES,
    WHATS_NEW,
    back_office,
    order_scenario,
    sign_in_scenario,
    sign_in_task,
)
from tests.daphne import api_token
from tests.daphne import log_in as daphne_log_in
from tests.e2e.ui import (
    LIVE_MS,
    PASSWORD,
    USERNAME,
    Server,
    click_picture,
    live_picture,
    log_in,
    save,
    slow_sockets,
    start_run,
)
from tests.tasks import AMBIGUOUS_TASK

pytestmark = pytest.mark.e2e

T = TypeVar("T")


# Keys pressed on the live view as the browser reports them: each (key, what is held).
KEYS_JS = """(keys) => {
  const ws = window.__sockets[window.__sockets.length - 1];
  const send = ws.send.bind(ws);
  window.__sent = [];
  ws.send = (data) => { window.__sent.push(JSON.parse(data)); return send(data); };
  const live = document.getElementById("live");
  live.focus();
  for (const [key, held] of keys) {
    live.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true,
      ctrlKey: held.includes("Control"), altKey: held.includes("Alt"),
      modifierAltGraph: held.includes("AltGraph") }));
  }
}"""


async def test_a_character_made_with_altgr_or_option_is_typed_and_a_shortcut_pressed(
    page: Page, server: Server
) -> None:
    """On the live view of a paused run: "@" as Windows reports AltGr+Q on a German layout
    (Ctrl+Alt), "€" as macOS reports Option+2 (Alt), "ą" with AltGr held are text for the
    run's tab; Ctrl+A and Alt+Q are shortcuts.  "@" and "€" were pressed as Ctrl+Alt+@
    and Alt+€ chords: an e-mail address typed there lost its "@".  What is typed just
    before Resume goes before it."""
    await log_in(page, server)
    await start_run(page, f"{server.base_url}/demo/form.html", "click Nowhere at all")
    await expect(page.locator("#status")).to_have_text("paused", timeout=LIVE_MS)
    await live_picture(page)
    keys = [["@", ["Control", "Alt"]], ["€", ["Alt"]], ["ą", ["AltGraph"]],
            ["a", ["Control"]], ["q", ["Alt"]]]  # fmt: skip
    await page.evaluate(KEYS_JS, keys)
    await page.wait_for_function("() => window.__sent.filter((m) => m.kind).length === 3")
    sent = await page.evaluate("() => window.__sent.filter((m) => m.kind)")
    assert [(m["kind"], m.get("text") or m.get("key"), m.get("modifiers")) for m in sent] == [
        ("type", "@€ą", None), ("key", "a", ["Control"]), ("key", "q", ["Alt"])
    ], sent  # fmt: skip
    # Keys typed just before Resume (held a moment to go as one text) go first: the run
    # must not take the tab back before them.
    await page.evaluate("""() => {
      const live = document.getElementById("live");
      live.dispatchEvent(new KeyboardEvent("keydown", { key: "x", bubbles: true }));
      document.querySelector('[data-command="resume"]').click();
    }""")
    await page.wait_for_function("() => window.__sent.some((m) => m.text === 'x')")
    last = await page.evaluate(
        "() => window.__sent.filter((m) => m.kind || m.command === 'resume').slice(-2)"
    )
    assert [m.get("kind") or m["command"] for m in last] == ["type", "resume"], last
    await page.get_by_role("button", name="Stop").click()
    await expect(page.locator("#status")).to_have_text("stopped", timeout=LIVE_MS)


# The run page's socket hears a frame whose JPEG is not one; what the page sends on the
# socket from then on is kept in window.__sent.
BROKEN_FRAME = """() => {
  const socket = window.__sockets.at(-1);
  window.__sent = [];
  const send = socket.send;
  socket.send = function (data) {
    window.__sent.push(JSON.parse(data));
    return send.call(this, data);
  };
  // The server's own frames are held back meanwhile: what is asked for is asked by the
  // broken one.
  const hear = socket.onmessage;
  window.__heldFrames = [];
  window.__hearAgain = () => {
    socket.onmessage = hear;
    for (const m of window.__heldFrames) hear.call(socket, m);
  };
  socket.onmessage = (m) => {
    if (JSON.parse(m.data).type === "frame") window.__heldFrames.push(m);
    else hear.call(socket, m);
  };
  const img = document.getElementById("live-frame");
  window.__pictureBefore = img.src;
  window.__shapeBefore = img.style.getPropertyValue("--tab-ratio");
  // Of another shape and address (a popup's): neither is the picture's while it shows none.
  const last = window.__socketEvents.filter((e) => e.type === "frame").at(-1);
  const broken = { ...last, jpeg: btoa("not a picture"), height: last.height * 2,
                   url: "http://broken.invalid/" };
  hear.call(socket, new MessageEvent("message", { data: JSON.stringify(broken) }));
}"""
PICTURE_BACK = """() => {
  const img = document.getElementById("live-frame");
  return img.src === window.__pictureBefore && img.complete && img.naturalWidth > 0;
}"""
SHAPE_KEPT = """() => document.getElementById("live-frame").style.getPropertyValue("--tab-ratio")
  === window.__shapeBefore"""


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
    # A frame whose picture does not decode (broken on its way): the picture drawn last
    # stays, and the next frame is asked for (else the view stood on a broken image, a
    # strip of its alt text a click on it missed, and no frame came after it).  The
    # address and shape shown stay the picture's, and a click maps by them (a frame's
    # size taken before its picture drew sent a click on an opener's picture, just after
    # its popup's, to a point 1.6 times too low).
    await page.evaluate(BROKEN_FRAME)
    await page.wait_for_function("() => window.__sent.some((m) => m.command === 'frame.ack')")
    await page.wait_for_function(PICTURE_BACK)
    await expect(page.locator("#live-url")).to_have_text(orders)
    assert await page.evaluate(SHAPE_KEPT)
    await page.evaluate("() => window.__hearAgain()")
    small = await drawn(page)
    assert small["width"] < viewport["width"] / 2  # beside the conversation: too small
    # Shown small, the picture is sent small: no wider than the page shows it.
    small_px = await shown_px(page, small)
    await page.wait_for_function(f"() => ({NATURAL_WIDTH})() <= {small_px}")

    # Enlarged, the picture is as wide as the page allows, the tab's own size at most,
    # with the tab's shape; the click on it lands on the button under the pointer.
    await page.get_by_role("button", name="Enlarge").click()
    await expect(page.get_by_role("button", name="Smaller")).to_have_attribute(
        "aria-pressed", "true"
    )
    picture = await drawn(page)
    assert picture["width"] > 2 * small["width"]
    assert picture["width"] <= viewport["width"]
    # Enlarged, the frames come larger (as large as shown, the tab's own size at most).
    await page.wait_for_function(f"() => ({NATURAL_WIDTH})() > {small_px}")
    assert await page.evaluate(NATURAL_WIDTH) <= await shown_px(page, picture)
    assert abs(picture["height"] / picture["width"] - small["height"] / small["width"]) < 0.01
    await save(page, "run-takeover-enlarged.png")
    await click_picture(
        page,
        target["x"] + target["width"] / 2,
        target["y"] + target["height"] / 2,
        viewport["width"],
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


async def test_a_person_watches_a_page_that_never_stops_until_it_stands_by_itself(
    page: Page, server: Server
) -> None:
    """The run pauses on a page whose progress bars move on every frame it draws: the
    live view keeps showing them move.  Then the import ends by itself (the page hears it
    from its server): the page turns green and never draws again, and the person's
    picture shows it so, with no input of theirs to make Chromium draw."""
    with import_page() as imports:
        await log_in(page, server)
        await start_run(page, imports.url, "click Finish\nwait for Import complete")
        await expect(page.locator("#status")).to_have_text("paused", timeout=LIVE_MS)
        await expect(page.locator("#status-reason")).to_contain_text("matches 2 elements")
        await live_picture(page)
        # The bars move: picture after picture comes, each a new one.
        await page.wait_for_function(f"() => new Set(({FRAMES})()).size >= 4", timeout=LIVE_MS)
        assert not await page.evaluate(IS_GREEN)
        await save(page, "run-live-moving.png")

        imports.done.set()
        await page.wait_for_function(IS_GREEN, timeout=LIVE_MS)
        await save(page, "run-live-stood-still.png")
        await page.locator("#reply-text").fill("skip")
        await page.get_by_role("button", name="Send", exact=True).click()
        await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)


# Two imports whose bars move on every frame the page draws, until the page's server says
# they are done (the page asks it every 100 ms; its answer changes nothing drawn): then
# the page is green, with "Import complete", and stands still.
IMPORTS = b"""<!doctype html><title>Imports</title>
<style>body { font: 16px system-ui, sans-serif; margin: 0; padding: 2rem; background: #fff; }
body.done { background: #127a3d; color: #fff; } .job { display: flex; gap: 1rem; }</style>
<h1>Imports</h1><p role="status" id="status">Two imports are running.</p>
<div class="job">Customers <canvas width="360" height="40"></canvas><button>Finish</button></div>
<div class="job">Invoices <canvas width="360" height="40"></canvas><button>Finish</button></div>
<script>
let tick = 0, running = true;
const bars = [...document.querySelectorAll("canvas")];
(function draw() {
  if (!running) return;
  tick++;
  bars.forEach((canvas, n) => {
    const g = canvas.getContext("2d");
    for (let x = -60; x < canvas.width; x += 30) {
      g.fillStyle = (Math.floor(x / 30) + n) % 2 ? "#2456c7" : "#9fb3e6";
      g.fillRect(x + (tick * 3) % 60, 0, 30, canvas.height);
    }
  });
  requestAnimationFrame(draw);
})();
const ask = setInterval(async () => {
  let done = false;
  try {
    done = (await (await fetch("/state")).json()).done;
  } catch (e) {
    clearInterval(ask);  // its server is gone: the test is over
  }
  if (!done) return;
  clearInterval(ask);
  running = false;
  document.body.className = "done";
  document.getElementById("status").textContent = "Import complete";
}, 100);
</script>"""


class Imports:
    url = ""

    def __init__(self) -> None:
        self.done = threading.Event()


@contextmanager
def import_page() -> Iterator[Imports]:
    """:data:`IMPORTS` at ``url`` on a loopback port; ``done.set()`` ends the imports."""
    imports = Imports()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"done": %s}' % (b"true" if imports.done.is_set() else b"false")
            kind = "application/json"
            if self.path != "/state":
                body, kind = IMPORTS, "text/html"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    imports.url = f"http://127.0.0.1:{http.server_address[1]}/imports"
    try:
        yield imports
    finally:
        http.shutdown()
        http.server_close()


FRAMES = "() => window.__socketEvents.filter((e) => e.type === 'frame').map((e) => e.jpeg)"
# The live picture, drawn to a canvas: is the middle of its lower half the finished
# imports' green (a JPEG's: near it), not the white page with moving bars?
IS_GREEN = """() => {
  const img = document.getElementById('live-frame');
  if (!img.complete || !img.naturalWidth) return false;
  const canvas = document.createElement('canvas');
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const g = canvas.getContext('2d');
  g.drawImage(img, 0, 0);
  const [r, gr, b] = g.getImageData(canvas.width >> 1, (canvas.height * 3) >> 2, 1, 1).data;
  return r < 60 && gr > 90 && gr < 160 && b < 100;
}"""


NATURAL_WIDTH = "() => document.getElementById('live-frame').naturalWidth"


async def shown_px(page: Page, box: dict[str, float]) -> int:
    """The device pixels a picture ``box`` wide takes, as the run page rounds them up."""
    ratio = await page.evaluate("devicePixelRatio")
    return max(160, -(-round(box["width"] * ratio) // 160) * 160)


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
    deadline = asyncio.get_running_loop().time() + LIVE_MS / 1000
    while True:
        html = await (await page.request.get(f"{server.base_url}/runs/{run_id}/")).text()
        if status.search(html).group(1) == "succeeded":
            break
        assert asyncio.get_running_loop().time() < deadline, "the run did not finish meanwhile"
        await page.wait_for_timeout(100)
    # It heard nothing of the end yet (the run's resuming may have come before the drop).
    assert await page.locator("#status").text_content() in ("paused", "running")

    await page.evaluate("() => { window.__holdSockets = false; }")
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    await expect(page.locator("#conn")).to_have_text("")
    steps = page.locator("#steps > li")
    await expect(steps.locator(".step-action")).to_have_text(["navigate", "click", "wait_for"])
    await expect(page.locator("#chat .msg.succeeded")).to_have_count(1)  # once, not twice
    urls = await page.evaluate("() => window.__sockets.map((s) => s.url)")
    resumed = [u for u in urls if "/ws/runs/" in u][-1]
    assert re.search(r"[?&]after=[1-9]\d*(&|$)", resumed), urls  # asked only for what it missed
    await save(page, "run-reconnected.png")


async def test_a_reply_written_before_the_page_has_connected_is_sent_once_it_has(
    page: Page, server: Server
) -> None:
    await log_in(page, server)
    run_id = await start_run(page, f"{server.base_url}/demo/list.html", AMBIGUOUS_TASK)
    await expect(page.locator("#status")).to_have_text("paused", timeout=LIVE_MS)

    # The person opens the paused run's page again on a network slow to open its socket,
    # and answers before it has: the page waits for the socket, it does not drop the reply.
    async with slow_sockets(server.base_url) as (slow, through):
        await page.goto(f"{slow}/runs/{run_id}/")
        await page.locator("#reply-text").fill("click Delete #3")
        send = page.get_by_role("button", name="Send", exact=True)
        await expect(send).to_be_disabled()
        await expect(page.locator("#conn")).to_have_text("connecting…")
        await expect(page.locator("[data-command=stop]")).to_be_disabled()
        await expect(page.locator("#live-hint")).to_be_hidden()  # no input goes yet
        await save(page, "run-connecting.png")
        through.set()
        await expect(page.locator("#live-hint")).to_be_visible()  # the tab is the person's
        await send.click()
        await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
        await expect(page.locator("#conn")).to_have_text("")
    await expect(page.locator("#chat .msg.person")).to_contain_text(["click Delete #3"])
    await expect(page.locator("#chat")).not_to_contain_text("not connected")
    await expect(page.locator("#reply-text")).to_have_value("")


async def test_an_interruption_cleared_on_the_live_view_is_handled_from_then_on(
    page: Page, server: Server, browser: BrowserSession, tmp_path: Path
) -> None:
    """A new release puts a "What's new" dialog over a cookie wall at the scenario's
    second page: the replay stops there for a person, who clears both on the live view
    and resumes; the run page offers to keep what they did, and the next release's
    replay clears both by itself, saying so."""
    with back_office(sign_in=False) as office:
        office.switch_release("2026.12")
        probe = await browser.new_tab()  # where the buttons are, in a tab of the same size
        await probe.page.goto(f"{office.url}/orders/1001")
        got_it = await probe.page.get_by_role("button", name="Got it").bounding_box()
        accept = await probe.page.get_by_role("button", name="Accept all").bounding_box()
        viewport = probe.page.viewport_size
        await probe.close()
        assert got_it is not None and accept is not None and viewport is not None
        office.switch_release("2026.12", after_views=1)  # the order list first, uncovered

        scenario = tmp_path / "order.json"
        scenario.write_text(json.dumps(order_scenario(office.url)))
        await log_in(page, server)
        await page.goto(f"{server.base_url}/scenarios/")
        await page.get_by_label("Scenario file (.json)").set_input_files(scenario)
        await page.get_by_role("button", name="Import").click()
        await expect(page.get_by_test_id("no-handlers")).to_be_visible()
        scenario_url = page.url
        await page.get_by_role("button", name="Replay").click()
        await expect(page.locator("#status")).to_have_text("paused", timeout=LIVE_MS)
        await expect(page.locator("#status-reason")).to_contain_text(
            "covered by dialog 'What's new' (and 1 more). Clear it in the live view, then resume"
        )
        await live_picture(page)
        await page.get_by_role("button", name="Enlarge").click()
        for box in (got_it, accept):  # the dialog, then the wall beneath it
            answered = await page.evaluate(INPUT_RESULTS)
            x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
            await click_picture(page, x, y, viewport["width"])
            await page.wait_for_function(f"() => ({INPUT_RESULTS})() > {answered}")
        await page.get_by_role("button", name="Resume").click()
        await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)

        offers = page.locator("#chat li.handler-proposed")
        await expect(offers).to_have_count(2)
        first = "'What's new' covered step 3 and you cleared it (click button \"Got it\")"
        await expect(offers.nth(0)).to_contain_text(first)
        await expect(offers.nth(1)).to_contain_text('(click button "Accept all")')
        await save(page, "run-handler-proposed.png")
        for name in ("What's new", "Cookie consent"):
            offer = page.locator(f'#chat li[data-handler="{name}"]')
            await offer.get_by_role("button", name="Handle this from now on").click()
            await expect(page.locator(f'#chat li[data-handler="{name}"]')).to_contain_text(
                "Kept: replays of the scenario handle it from now on."
            )

        await page.goto(scenario_url)
        handlers = page.get_by_test_id("handlers")
        await expect(handlers.locator("li")).to_have_count(2)
        await expect(handlers).to_contain_text("when dialog 'What's new' covers a step, click "
                                               "button 'Got it'")  # fmt: skip
        office.switch_release("2027.01")  # a newer release: both show again
        await page.get_by_role("button", name="Replay").click()
        await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
        # Both cover the list as well: each handler ran before the first click went on,
        # and its note comes before that click, though the step had started.
        said = await page.locator("#chat > li").evaluate_all(
            "(lis) => lis.map((li) => li.textContent)"
        )
        at = next(i for i, text in enumerate(said) if text.startswith('actionclick link "1001"'))
        assert said[at - 2 : at] == [f"note{text}" for text in HANDLED], said
        await expect(page.locator("#chat li.handler-proposed")).to_have_count(0)


INPUT_RESULTS = (
    "() => window.__socketEvents.filter((e) => e.type === 'input.result' && e.ok).length"
)


RELOGIN = ("signed in again with the login scenario 'Sign in'; the sign-in profile "
           "'back office' was saved again")  # fmt: skip
HANDLED = ["handled 'What's new' dialog", "handled 'Cookie consent' banner"]


async def test_a_daily_schedule_signs_in_again_and_clears_a_new_release_with_no_person(
    page: Page, server: Server
) -> None:
    """The back office's order scenario, scheduled with a sign-in profile, its login
    scenario and the release's handlers, fires six times with nobody there (Run now
    stands for the days): the site ends every session before the third firing, a new
    release covers the order's page before the fifth.  Every firing passes; the run of
    the third signs in again (once, the profile saved again for the next), those of the
    fifth and sixth clear the dialog and the cookie wall, and their pages say so."""
    with back_office() as office:
        async with script(server) as api:
            login = await api.post("/scenarios", json=sign_in_scenario(office.url).to_dict())
            assert login.status_code == 201, login.text
            orders = order_scenario(office.url, WHATS_NEW, COOKIES)
            made = await api.post("/scenarios", json=orders)
            assert made.status_code == 201, made.text
            named = await api.put(f"/scenarios/{made.json()['id']}/login",
                                  json={"login_scenario": "Sign in"})  # fmt: skip
            assert named.status_code == 200 and named.json()["login_scenario"] == "Sign in"
            # Signed in once in a conversation, its tab's sign-in saved as a profile.
            run = await api.post("/runs", json={"task": sign_in_task(office.url),
                                                "planner": "rules"})  # fmt: skip
            assert run.status_code == 201, run.text
            await ended(api, run.json()["id"], "paused")
            saved = await api.post(f"/runs/{run.json()['id']}/signin", json={"name": "back office"})
            assert saved.status_code == 201, saved.text
            assert (await api.post(f"/runs/{run.json()['id']}/stop")).status_code == 200
            schedule = await api.post(f"/scenarios/{made.json()['id']}/schedules", json={
                "cron": "0 7 * * 1-5", "timezone": "Europe/Paris", "signin_profile": "back office",
            })  # fmt: skip
            assert schedule.status_code == 201, schedule.text
            schedule_id = schedule.json()["id"]

            runs = []
            for day in range(6):
                if day == 2:
                    office.expire_sessions()
                if day == 4:
                    office.switch_release("2026.12", after_views=1)
                fired = await api.post(f"/schedules/{schedule_id}/fire")
                assert fired.status_code == 202, fired.text
                runs.append(await fired_run(api, schedule_id, day + 1))
                assert await ended(api, runs[-1]) == "succeeded", f"day {day}"
            notes = [await observations(api, run_id) for run_id in runs]
            assert notes == [[], [], [RELOGIN], [], HANDLED, HANDLED], notes
            firings = await judged(api, schedule_id)
            assert [f["outcome"] for f in firings] == ["ok"] * 6, firings
            assert sorted(f["run_id"] for f in firings) == runs
            assert all(f["missed"] == 0 and not f["deliveries"] for f in firings), firings
            upcoming = (await api.get(f"/schedules/{schedule_id}")).json()["next"]
            assert all(at.endswith(("T07:00:00+01:00", "T07:00:00+02:00")) for at in upcoming)

        # The back office saw two sign-ins (the conversation's, the login scenario's) and
        # each firing open the order once.
        assert office.sign_ins == 2
        assert office.views["/orders/1001"] == 6
        await log_in(page, server)
        for run_id, said in ((runs[2], [RELOGIN]), (runs[4], HANDLED)):
            await page.goto(f"{server.base_url}/runs/{run_id}/")
            await expect(page.locator("#status")).to_have_text("succeeded")
            for text in said:
                await expect(page.locator("#chat")).to_contain_text(text)
        await save(page, "schedule-handled-release.png")


@asynccontextmanager
async def script(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    """A script with a token of the e2e user's, on the dashboard's JSON API."""
    with closing(daphne_log_in(server.base_url, (USERNAME, PASSWORD))) as logged_in:
        token = api_token(logged_in, "daily")
    async with httpx.AsyncClient(base_url=f"{server.base_url}/api", timeout=20,
                                 headers={"Authorization": f"Bearer {token}"}) as api:  # fmt: skip
        yield api


async def polled(what: str, read: Callable[[], Awaitable[T | None]], timeout_s: float = 60) -> T:
    """What ``read()`` gives once it gives something, read again every 0.1 s (the API
    rings no bell); ``timeout_s`` bounds a hang only."""
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                if (got := await read()) is not None:
                    return got
                await asyncio.sleep(0.1)
    except TimeoutError:
        raise AssertionError(f"not yet: {what}") from None


async def ended(api: httpx.AsyncClient, run_id: int, *statuses: str) -> str:
    """The run's status once it is one of ``statuses`` (by default: any it ends with)."""
    statuses = statuses or ("succeeded", "failed", "stopped", "paused")

    async def status() -> str | None:
        now = (await api.get(f"/runs/{run_id}")).json()["status"]
        return now if now in statuses else None

    return await polled(f"run {run_id} is {' or '.join(statuses)}", status)


async def fired_run(api: httpx.AsyncClient, schedule_id: int, count: int) -> int:
    """The run of the schedule's ``count``-th firing, once a worker fired it (rung at
    once; the workers' poll every 5 s would fire it too)."""

    async def run() -> int | None:
        firings = (await api.get(f"/schedules/{schedule_id}")).json()["firings"]
        if len(firings) == count and all(f["run_id"] for f in firings):
            return max(f["run_id"] for f in firings)
        return None

    return await polled(f"firing {count} has its run", run)


async def judged(api: httpx.AsyncClient, schedule_id: int) -> list[dict[str, Any]]:
    """The schedule's firings once each is judged (the workers' poll does it)."""

    async def firings() -> list[dict[str, Any]] | None:
        got = (await api.get(f"/schedules/{schedule_id}")).json()["firings"]
        return got if all(f["outcome"] for f in got) else None

    return await polled("the firings are judged", firings)


async def observations(api: httpx.AsyncClient, run_id: int) -> list[Any]:
    events = (await api.get(f"/runs/{run_id}/events")).json()["events"]
    return [e["text"] for e in events if e["type"] == "observation"]
