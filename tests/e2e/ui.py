"""What the end-to-end tests share: the server they start, and the steps a person takes in
the dashboard (log in, start a run, save a screenshot for the reviewer)."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.async_api import Page, expect
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from automation.browser.config import default_chromium
from automation.browser.screencast import DEFAULT_MAX_SIZE
from tests.backoffice import PASSWORD as BO_PASSWORD
from tests.backoffice import SEED as BO_SEED
from tests.conftest import FIXTURES
from tests.daphne import daphne, sql
from tests.fakellm import ScriptedLLMServer

CHROMIUM = os.environ.get("TABWRIGHT_CHROMIUM_PATH") or default_chromium()
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
UPLOADS = FIXTURES / "uploads"
USERNAME = "e2e-user"
PASSWORD = "e2e-password-9f3k"
# A second person on the same server, for what one person must not see of another's.
OTHER_USERNAME = "e2e-other-user"
OTHER_PASSWORD = "e2e-other-password-5m2q"
SHOP_PASSWORD = "shop-password-77"
# Deadlines that bound a hang only (each wait ends as soon as its condition holds), so as
# long as a loaded machine may need: a page's answer or an element's change, and a whole
# run, including the runner's first Chromium launch.
UI_MS = 30_000
LIVE_MS = 60_000


@dataclass(frozen=True)
class Server:
    base_url: str
    log: Path
    llm: ScriptedLLMServer  # the "openai" planner's endpoint

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """``query`` on the server's own database (SQLite, beside its log), committed."""
        return sql(self.log.parent / "db.sqlite3", query, params)


@contextmanager
def e2e_server(tmp_path_factory: pytest.TempPathFactory, **settings: str) -> Iterator[Server]:
    """A module's dashboard: a daphne with its own database, the two people, the secrets
    its scenarios replay with (the shop's, the back office's) and a scripted LLM;
    ``settings``: TABWRIGHT_* besides."""
    llm = ScriptedLLMServer().start()
    environment = {
        "TABWRIGHT_DEBUG": "1",
        # DEBUG no longer opens private addresses, and the test pages are on 127.0.0.1.
        "TABWRIGHT_BLOCK_PRIVATE_ADDRESSES": "0",
        "TABWRIGHT_PLANNER": "rules",
        # A conversation keeps its tab this long after the work: longer than any test
        # (the conversation tests close it with the button).
        "TABWRIGHT_SESSION_IDLE_S": "900",
        "TABWRIGHT_CHROMIUM_PATH": CHROMIUM,
        "TABWRIGHT_ALLOW_EVALUATE": "1",
        "TABWRIGHT_LLM_BASE_URL": llm.base_url,
        "TABWRIGHT_LLM_MODEL": "test-model",
        "TABWRIGHT_SECRET_PASSWORD": SHOP_PASSWORD,  # what scenario replays fill in
        # The back office's (tests.backoffice): its password and its TOTP seed.
        "TABWRIGHT_SECRET_BO_PASSWORD": BO_PASSWORD,
        "TABWRIGHT_SECRET_BO": BO_SEED,
        "TABWRIGHT_UPLOAD_DIR": str(UPLOADS),  # the files upload steps attach
        **settings,
    }
    try:
        with daphne(
            tmp_path_factory.mktemp("e2e-var"),
            (USERNAME, PASSWORD),
            environment,
            more_users=[(OTHER_USERNAME, OTHER_PASSWORD)],
            # the secrets its scenarios replay with
            grants=[("PASSWORD", USERNAME), ("BO_PASSWORD", USERNAME), ("BO", USERNAME)],
        ) as (base_url, log):
            yield Server(base_url, log, llm)
    finally:
        llm.stop()


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


async def save_sign_in(page: Page, start_url: str, task: str, name: str) -> None:
    """From the home page: a conversation that signs in (``task``, which ends on a step
    that can't be done, so it pauses with its tab open), its tab's sign-in saved as the
    profile ``name``, then stopped."""
    await start_run(page, start_url, task)
    await expect(page.locator("#status")).to_have_text("paused", timeout=LIVE_MS)
    await page.get_by_label("Sign-in name").fill(name)
    await page.get_by_role("button", name="Save sign-in").click()
    await expect(page.locator(".messages .message.success")).to_contain_text(
        f"Sign-in saved as {name!r}"
    )
    await page.get_by_role("button", name="Stop").click()
    await expect(page.locator("#status")).to_have_text("stopped", timeout=LIVE_MS)


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


async def replay_heals(page: Page, scenario_url: str, base_url: str) -> None:
    """From a scenario's page: replay it on ``base_url`` (another build of its app); it
    passes, and its page's healing report says something healed, nothing failed and
    nothing waits for a person.  Back on the scenario's page."""
    await page.locator("#replay").get_by_label("Base URL").fill(base_url)
    await page.get_by_role("button", name="Replay").click()
    await expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    await page.get_by_role("link", name="Scenario", exact=True).click()
    await expect(page).to_have_url(scenario_url)
    await expect(page.get_by_test_id("last-replay-status")).to_have_text("succeeded")
    report = page.get_by_test_id("healing-report")
    healed = report.locator('[data-outcome="healed"] .count')
    assert int(await healed.text_content() or 0) >= 1, f"on {base_url}: something healed"
    for outcome in ("failed", "needs_person"):
        await expect(report.locator(f'[data-outcome="{outcome}"] .count')).to_have_text("0")


async def run_batch(page: Page, rows: Path, at_once: int) -> None:
    """From a scenario's page: run a batch of the rows in the file ``rows``, ``at_once``
    at a time, and wait on its page until it is done."""
    form = page.get_by_test_id("batch-form")
    await form.get_by_label("Rows (.csv or .json)").set_input_files(rows)
    await form.get_by_label("Rows at once").fill(str(at_once))
    await form.get_by_role("button", name="Run the batch").click()
    await expect(page.get_by_test_id("batch-status")).to_have_text("done", timeout=4 * LIVE_MS)


async def live_picture(page: Page) -> None:
    """The live view shows a drawn picture of the run's tab."""
    frame = page.locator("#live-frame")
    await expect(frame).to_be_visible(timeout=LIVE_MS)
    await page.wait_for_function(
        "() => { const i = document.getElementById('live-frame');"
        " return i.complete && i.naturalWidth > 0; }"
    )


# The frames are as wide as the picture is shown (in 160s), in the largest frame's shape: a
# tab taller than that shape (a popup window) has frames as high as that shape allows.
_SIZED = f"""(tab) => {{
  const img = document.getElementById("live-frame");
  const shown = Math.ceil((img.clientWidth * devicePixelRatio) / 160) * 160;
  const high = Math.floor((shown * {DEFAULT_MAX_SIZE[1]}) / {DEFAULT_MAX_SIZE[0]});
  return img.complete && (img.naturalWidth >= Math.min(shown, tab * devicePixelRatio) - 1
    || img.naturalHeight >= high - 1);
}}"""
_HOLDS_POINT = """([x, y, tab]) => {
  const img = document.getElementById("live-frame");
  const scale = img.clientWidth / tab;
  return x * scale < img.clientWidth && y * scale < img.clientHeight;
}"""
_DRAWN = """(img) => ({natural: [img.naturalWidth, img.naturalHeight],
  shown: [img.clientWidth, img.clientHeight]})"""
# How many frames the page received, and the tab's size in the last ones.
_FRAMES = """() => { const f = window.__socketEvents.filter((e) => e.type === 'frame');
  return {count: f.length, last: f.slice(-4).map((e) => [e.width, e.height])}; }"""
# What the page told the server of the picture: its widths said, frames acked, closes.
_TOLD = """() => ({views: window.__socketSent.filter((m) => m.command === 'view'),
  acks: window.__socketSent.filter((m) => m.command === 'frame.ack').length,
  closes: window.__socketCloses})"""
_IS_RESULT = "(e) => e.type === 'input.result'"
_INPUT_RESULTS = f"() => window.__socketEvents.filter({_IS_RESULT}).length"


def _live_view_lines(log: Path) -> list[str]:
    """The server log's lines about the live view."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return [line for line in text.splitlines() if "live view" in line or "live-view" in line]


async def click_picture(
    page: Page, x: float, y: float, tab_width: float, *, log: Path | None = None,
    refused: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """A person's click on the live view's picture, on the point (x, y) of the run's tab
    (CSS px of a tab ``tab_width`` wide).  Playwright finds the picture where it is when it
    clicks (the run page grows as messages, steps and their pictures come) and waits for
    it to stand still; the point is inside its border, at the size it is drawn.  ``log``:
    the server's, whose live-view lines a failure shows.  The live view's answer; with
    ``refused``, one that says the click was not done."""
    picture = page.locator("#live-frame")
    # The frames are as large as the picture is shown (Enlarge asks for larger ones): the
    # picture is measured as it will be when clicked.
    try:
        await page.wait_for_function(_SIZED, arg=tab_width)
    except PlaywrightTimeoutError as exc:
        drawn = await picture.evaluate(_DRAWN)
        frames = await page.evaluate(_FRAMES)
        told = await page.evaluate(_TOLD)
        said = await asyncio.to_thread(_live_view_lines, log) if log is not None else []
        raise AssertionError(
            f"no frame as large as the picture is shown (a {tab_width} px tab): {drawn}; "
            f"frames received, latest last: {frames}; the page told the server: {told}; "
            f"the server's live-view lines: {said[-20:]}"
        ) from exc
    await picture.click(trial=True)  # drawn, still, not covered
    # The point is on the picture as drawn (a frame of another shape would put it off).
    try:
        await page.wait_for_function(_HOLDS_POINT, arg=[x, y, tab_width])
    except PlaywrightTimeoutError as exc:
        drawn = await picture.evaluate(_DRAWN)
        raise AssertionError(
            f"({x}, {y}) of a {tab_width} px tab is off the picture: {drawn}"
        ) from exc
    scale = await picture.evaluate("(img) => img.clientWidth") / tab_width
    answered = await page.evaluate(_INPUT_RESULTS)
    await picture.click(position={"x": x * scale, "y": y * scale})
    # The run's tab was clicked where the person pointed (give or take the rounding of a
    # point of a picture drawn smaller than the tab).
    await page.wait_for_function(
        f"() => window.__socketEvents.filter({_IS_RESULT}).length > {answered}"
    )
    result = await page.evaluate(f"() => window.__socketEvents.filter({_IS_RESULT})[{answered}]")
    if refused:
        assert not result["ok"], result
        return result
    assert result["ok"], result
    clicked = re.search(r"click at \((\S+), (\S+)\)", result["done"])
    assert clicked, result
    slack = 1 + 1 / scale
    assert abs(float(clicked[1]) - x) <= slack and abs(float(clicked[2]) - y) <= slack, (
        x,
        y,
        result,
    )
    return result


# A fetch of the act API from the logged-in page; ``abort_after_ms`` hangs up mid-request.
ACT_JS = """async ([runId, body, abortAfterMs]) => {
  const csrf = document.cookie.split('; ').find((c) => c.startsWith('csrftoken='));
  const abort = new AbortController();
  if (abortAfterMs) setTimeout(() => abort.abort(), abortAfterMs);
  const started = performance.now();
  try {
    const reply = await fetch(`/runs/${runId}/act`, {
      method: 'POST', signal: abort.signal, body: JSON.stringify(body),
      headers: {'Content-Type': 'application/json', 'X-CSRFToken': csrf.split('=')[1]},
    });
    return {status: reply.status, body: await reply.json(), ms: performance.now() - started};
  } catch (e) {
    return {aborted: true, ms: performance.now() - started};
  }
}"""


# Everything a page hears on its sockets (window.__socketEvents), to tell live events from
# the backlog; the sockets themselves (window.__sockets: a test drops one); the codes the
# server closed them with (window.__socketCloses); and
# window.__holdSockets, which makes the page's reconnects fail until it is cleared (a
# network that is down for a while).  For a page's or a context's add_init_script.
SOCKET_SPY = """(() => {
  window.__socketEvents = [];
  window.__sockets = [];
  window.__socketCloses = [];
  window.__holdSockets = false;
  window.__socketSent = []; // the commands the page sent (their name and width), latest 200
  const Native = window.WebSocket;
  window.WebSocket = function (url, ...rest) {
    const target = window.__holdSockets ? url.replace("/ws/runs/", "/ws/held/") : url;
    const ws = new Native(target, ...rest);
    ws.addEventListener("message", (m) => window.__socketEvents.push(JSON.parse(m.data)));
    ws.addEventListener("close", (c) => window.__socketCloses.push(c.code));
    window.__sockets.push(ws);
    const send = ws.send.bind(ws);
    ws.send = (data) => {
      try {
        const sent = JSON.parse(data);
        window.__socketSent.push({ command: sent.command, width: sent.width });
        if (window.__socketSent.length > 200) window.__socketSent.shift();
      } catch (e) {
        // Not JSON: not one of the page's commands.
      }
      return send(data);
    };
    return ws;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, { OPEN: 1, CLOSED: 3, CONNECTING: 0, CLOSING: 2 });
})();"""


@asynccontextmanager
async def slow_sockets(base_url: str) -> AsyncIterator[tuple[str, asyncio.Event]]:
    """A relay on 127.0.0.1 to the server at ``base_url`` that passes its pages at once
    but holds every WebSocket's opening unanswered until its event is set: a network on
    which a page's socket takes its time to open.  Yields the relay's base URL (a page
    opened there is the server's, on another port) and the event."""
    through = asyncio.Event()
    where = urlsplit(base_url)
    handlers: set[asyncio.Task[None]] = set()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.add(asyncio.current_task())  # type: ignore[arg-type]
        try:
            first = await reader.readline()
            if first.startswith(b"GET /ws/"):
                await through.wait()
            up_reader, up_writer = await asyncio.open_connection(where.hostname, where.port)
        except ConnectionError:  # the page went away, or the server is down
            writer.close()
            return
        up_writer.write(first)
        await asyncio.gather(
            pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True
        )

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", through
    finally:
        server.close()
        for task in handlers:
            task.cancel()
        with suppress(asyncio.CancelledError):
            await asyncio.gather(*handlers, return_exceptions=True)
