"""What the journeys share: the todo app as the run's tab sees it, a gate that holds the
dashboard's browser, a webhook receiver, waits on the database and the API."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import Page, expect

from automation import BrowserSession
from automation.actions import execute
from tests.bounds import room
from tests.e2e.ui import CHROMIUM, LIVE_MS, Server
from tests.refs import ref_of
from tests.waiting import eventually

WAIT_S = 4 * LIVE_MS / 1000  # a wait on something a worker does: a batch, a firing

ITEMS = ["Buy milk", "Call mom", "Pay the rent", "Read a book", "Water the plants"]
FIELD = "What needs to be done?"
SECOND_BUILD = "rerender"  # the same todo app, its list drawn anew on every change


class Gate:
    """Chromium for the module's dashboard starts only once the gate is open: until then
    its worker's runs are claimed but can't start (``pending``)."""

    def __init__(self, folder: Path) -> None:
        self.flag = folder / "open"
        self.chromium = folder / "chromium"
        self.chromium.write_text(
            "#!/bin/sh\n"
            f'while [ ! -e "{self.flag}" ]; do sleep 0.05; done\n'
            f'exec "{CHROMIUM}" "$@"\n'
        )
        self.chromium.chmod(0o755)

    def open(self) -> None:
        self.flag.touch()


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


def wait_until(what: str, done: Callable[[], bool]) -> None:
    """Wait until ``done()``: a look at the database or the API, which ring no bell,
    taken again every 0.1 s."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"not yet: {what}"
        time.sleep(0.1)


async def until(what: str, done: Callable[[], bool]) -> None:
    """:func:`wait_until`, each look in a thread: the page's events go on meanwhile."""
    await eventually(lambda: asyncio.to_thread(done), WAIT_S, f"not yet: {what}", every_s=0.1)


@dataclass(frozen=True)
class Todos:
    """The refs the run's tab gives the field and the two boxes, and where the second
    box is drawn (for a click on the live view's picture)."""

    field: str
    milk: str
    dog: str
    dog_box: dict[str, float]
    viewport: dict[str, int]


async def todos_as_the_run_sees_them(browser: BrowserSession, url: str) -> Todos:
    """The same page, the same actions, a snapshot where the run takes one (before each
    of its rounds)."""
    probe = await browser.new_tab()
    try:
        await probe.navigate(url)
        field = ref_of(await probe.snapshot(), "textbox", FIELD)
        for title in ("Buy milk", "Walk the dog"):
            await execute(probe, "fill", {"ref": field, "value": title, "submit": True},
                          budget=room())  # fmt: skip
            snapshot = await probe.snapshot()
        box = await probe.page.locator("ul.todo-list > li input.toggle").nth(1).bounding_box()
        viewport = probe.page.viewport_size
        assert box is not None and viewport is not None
        milk, dog = ref_of(snapshot, "checkbox", "", 0), ref_of(snapshot, "checkbox", "", 1)
        return Todos(field, milk, dog, box, viewport)
    finally:
        await probe.close()


class Hook(BaseHTTPRequestHandler):
    """A webhook receiver: what it was sent, headers and body."""

    got: list[tuple[dict[str, str], bytes]] = []
    came = threading.Event()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Hook.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
        Hook.came.set()
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


# Each change of the run's header, as [status, session], from when it is installed.
HEADER_SPY = """() => {
  window.__headers = [];
  const look = () => window.__headers.push([
    document.getElementById("status").textContent,
    document.getElementById("session").textContent]);
  const spy = new MutationObserver(look);
  for (const id of ["status", "session"]) {
    spy.observe(document.getElementById(id), {childList: true, characterData: true,
                                              subtree: true});
  }
  look();
}"""


def signed_by(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """The webhook's signature checks out, as a receiver checks it (docs: alerts)."""
    stamp = headers["x-tabwright-timestamp"]
    signed = hmac.new(secret.encode(), stamp.encode() + b"." + body, hashlib.sha256)
    return hmac.compare_digest(headers["x-tabwright-signature"], "sha256=" + signed.hexdigest())


def script(server: Server, token: str) -> httpx.Client:
    """The JSON API of ``server`` as a script reaches it, with its token."""
    return httpx.Client(base_url=f"{server.base_url}/api", timeout=20,
                        headers={"Authorization": f"Bearer {token}"})  # fmt: skip


async def import_scenario(page: Page, server: Server, path: Path, data: dict[str, Any]) -> str:
    """Import ``data`` (written to ``path``) on the scenario list; the scenario's page URL."""
    await asyncio.to_thread(path.write_text, json.dumps(data))
    await page.goto(f"{server.base_url}/scenarios/")
    await page.get_by_label("Scenario file (.json)").set_input_files(path)
    await page.get_by_role("button", name="Import").click()
    await expect(page.get_by_role("heading", name=numbered(str(data["name"])))).to_be_visible()
    return page.url


def numbered(name: str) -> re.Pattern[str]:
    """A scenario's name as its page shows it: ``name``, or "name (2)"... when an earlier
    test of the module's dashboard imported one of that name (each has its own)."""
    return re.compile(rf"^{re.escape(name)}( \(\d+\))?$")


async def exported_pytest(page: Page) -> str:
    """The scenario page's pytest export, downloaded."""
    async with page.expect_download() as download_info:
        await page.get_by_role("link", name="Export pytest").click()
    path = await (await download_info.value).path()
    return await asyncio.to_thread(Path(path).read_text)


def scenario_step(
    action: str, args: dict[str, Any], role: str = "", name: str = ""
) -> dict[str, Any]:
    """A step of a scenario file, on the element of ``role`` named ``name`` (if any)."""
    return {"action": action, "args": args, **({"role": role, "name": name} if role else {})}
