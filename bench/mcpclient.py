"""The two MCP servers that bench.mcp compares, each launched over stdio and driven by the
official MCP SDK's client (``mcp.Client``), every call timed on the client side.

- Tabwright: ``python -m automation.mcp --allow-private --allow-evaluate``.
- Playwright MCP: ``@playwright/mcp`` at :data:`PW_MCP_VERSION`, installed with npm into
  ``var/bench-npm`` when missing, run on the system Chromium (it downloads no browser);
  ``playwright-settle0``: the same with ``--timeout-settle 0`` (no wait after an action
  for the work it set off to settle; 500 ms by default).

:class:`Tabwright` and :class:`PlaywrightMcp` say the same things (navigate, snapshot, click
a ref, evaluate, the click → wait → read loop) in each server's own tool calls.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

from automation.browser.config import default_chromium
from bench.common import ROOT, descendants, process_stats

__all__ = [
    "PW_MCP_VERSION",
    "Answer",
    "Driver",
    "PlaywrightMcp",
    "Tabwright",
    "ensure_playwright_mcp",
    "open_driver",
    "ref_after",
]

PW_MCP_VERSION = "0.0.83"  # pinned so that a run compares against a known release
NPM_DIR = ROOT / "var" / "bench-npm"  # var/ is gitignored
PW_CLI = NPM_DIR / "node_modules" / "@playwright" / "mcp" / "cli.js"
LOGS = ROOT / "var" / "bench-mcp"  # the servers' stderr
CHROMIUM = os.environ.get("TABWRIGHT_CHROMIUM_PATH") or default_chromium()
CALL_TIMEOUT_S = 60.0  # a call past this is a hang of the server, not a slow answer
# Tabwright writes `[e12]`, Playwright MCP `[ref=e12]`; both prefix frames (or, for
# Playwright, later pages) with f<n>.
REF = r"\[(?:ref=)?((?:f\d+)?e\d+)\]"


def ensure_playwright_mcp() -> str:
    """Install the pinned Playwright MCP unless it is there; its version."""
    package = PW_CLI.parent / "package.json"
    if not package.is_file() or json.loads(package.read_text())["version"] != PW_MCP_VERSION:
        NPM_DIR.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"}  # we bring Chromium
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(NPM_DIR),
             f"@playwright/mcp@{PW_MCP_VERSION}"],
            check=True, env=env, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    return json.loads(package.read_text())["version"]


def ref_after(text: str, anchor: str, element: str) -> str | None:
    """The ref of the first line matching ``element`` (a regex such as ``button "Delete"``)
    after the first occurrence of ``anchor`` in a snapshot."""
    start = text.find(anchor)
    if start < 0:
        return None
    found = re.search(element + r"[^\n]*?" + REF, text[start:])
    return found[1] if found else None


@dataclass(frozen=True)
class Answer:
    tool: str
    ms: float
    text: str  # the text contents, joined
    is_error: bool
    timed_out: bool = False

    @property
    def chars(self) -> int:
        return len(self.text)


def _children_of(pid: int, *, deep: bool = True) -> set[int]:
    """The live children of ``pid`` (from /proc), and theirs when ``deep``."""
    stats = {p: fields for p, fields in process_stats().items() if fields[0] != "Z"}
    return descendants(pid, stats, deep=deep)


@dataclass
class Driver:
    """One MCP server: its client, and the processes it started (to see that none outlive
    it: Playwright launches Chromium in a process group of its own, out of reach of the
    SDK's kill of the server's group)."""

    name: str
    client: Client
    pids: set[int] = field(default_factory=set)
    server_pid: int = 0

    async def call(
        self, tool: str, args: dict[str, Any], *, timeout_s: float = CALL_TIMEOUT_S
    ) -> Answer:
        started = time.perf_counter()
        try:
            with anyio.fail_after(timeout_s):
                result = await self.client.call_tool(tool, args)
        except TimeoutError:
            return Answer(tool, (time.perf_counter() - started) * 1000, "", True, timed_out=True)
        ms = (time.perf_counter() - started) * 1000
        text = "\n".join(part.text for part in result.content if part.type == "text")
        return Answer(tool, ms, text, bool(result.is_error))

    def note_processes(self) -> None:
        if self.server_pid:
            self.pids |= {self.server_pid, *_children_of(self.server_pid)}

    async def tools_list(self) -> tuple[int, int]:
        """(how many tools, JSON bytes of the tools/list result)."""
        tools, cursor = [], None
        while True:
            page = await self.client.list_tools(cursor=cursor)
            tools += [
                t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools
            ]
            cursor = page.next_cursor
            if cursor is None:
                break
        data = json.dumps({"tools": tools}, separators=(",", ":"), ensure_ascii=False)
        return len(tools), len(data.encode())

    # What each server calls these things; see the subclasses.
    async def navigate(self, url: str) -> Answer:
        raise NotImplementedError

    async def snapshot(self) -> Answer:
        raise NotImplementedError

    async def click(self, ref: str, what: str, *, timeout_s: float = CALL_TIMEOUT_S) -> Answer:
        raise NotImplementedError

    async def evaluate(self, expression: str, *, timeout_s: float = CALL_TIMEOUT_S) -> Answer:
        raise NotImplementedError

    async def spin(self, timeout_s: float) -> Answer:
        raise NotImplementedError

    async def loop(self, ref: str, what: str, text: str) -> list[Answer]:
        raise NotImplementedError


class Tabwright(Driver):
    async def navigate(self, url: str) -> Answer:
        return await self.call("navigate", {"url": url})

    async def snapshot(self) -> Answer:
        return await self.call("snapshot", {})

    async def click(self, ref: str, what: str, *, timeout_s: float = CALL_TIMEOUT_S) -> Answer:
        return await self.call("click", {"ref": ref}, timeout_s=timeout_s)

    async def evaluate(self, expression: str, *, timeout_s: float = CALL_TIMEOUT_S) -> Answer:
        return await self.call("evaluate", {"expression": expression}, timeout_s=timeout_s)

    async def spin(self, timeout_s: float) -> Answer:
        args = {"expression": "while(true){}", "timeout_ms": 2000}
        return await self.call("evaluate", args, timeout_s=timeout_s)

    async def loop(self, ref: str, what: str, text: str) -> list[Answer]:
        steps = [
            {"type": "click", "ref": ref},
            {"type": "wait_for", "text": text},
            {"type": "read_page"},
        ]
        return [await self.call("steps", {"steps": steps})]


class PlaywrightMcp(Driver):
    async def navigate(self, url: str) -> Answer:
        return await self.call("browser_navigate", {"url": url})

    async def snapshot(self) -> Answer:
        return await self.call("browser_snapshot", {})

    async def click(self, ref: str, what: str, *, timeout_s: float = CALL_TIMEOUT_S) -> Answer:
        # `element` is the human-readable description its schema asks a model for.
        args = {"element": what, "target": ref}
        return await self.call("browser_click", args, timeout_s=timeout_s)

    async def evaluate(self, expression: str, *, timeout_s: float = CALL_TIMEOUT_S) -> Answer:
        args = {"function": f"() => ({expression})"}
        return await self.call("browser_evaluate", args, timeout_s=timeout_s)

    async def spin(self, timeout_s: float) -> Answer:
        args = {"function": "() => { while(true){} }"}
        return await self.call("browser_evaluate", args, timeout_s=timeout_s)

    async def loop(self, ref: str, what: str, text: str) -> list[Answer]:
        """As few calls as its answers allow: each later call only if the answers so far
        do not already show the page with ``text`` inline (its actions write their page
        snapshot to a file and answer a link to it, so a model must ask again)."""
        answers = [await self.click(ref, what)]
        if answers[-1].is_error or _shows(answers[-1], text):
            return answers
        answers.append(await self.call("browser_wait_for", {"text": text}))
        if answers[-1].is_error or _shows(answers[-1], text):
            return answers
        answers.append(await self.snapshot())
        return answers


def _shows(answer: Answer, text: str) -> bool:
    return "```yaml" in answer.text and text in answer.text.split("```yaml", 1)[1]


def _params(name: str, workdir: Path, runtime: Path | None) -> StdioServerParameters:
    if name == "tabwright":
        # A server of its own (not the user's warm one): its processes are the server's.
        # With ``runtime``, the warm server of that folder (started if none runs) serves it.
        args = ["-m", "automation.mcp", "--allow-private", "--allow-evaluate"]
        args += ["--chromium", CHROMIUM, *(["--warm-for", "0"] if runtime is None else [])]
        env = (
            None
            if runtime is None
            else {**get_default_environment(), "XDG_RUNTIME_DIR": str(runtime)}
        )
        return StdioServerParameters(
            command=str(ROOT / ".venv/bin/python"), args=args, cwd=ROOT, env=env
        )
    args = [
        str(PW_CLI), "--headless", "--browser", "chromium", "--executable-path", CHROMIUM,
        "--isolated", "--no-sandbox",
    ]  # fmt: skip
    if name == "playwright-settle0":
        args += ["--timeout-settle", "0"]
    # Its cwd is its workspace: it writes the snapshots and logs it links to there.
    return StdioServerParameters(command="node", args=args, cwd=workdir)


@asynccontextmanager
async def open_driver(name: str, *, runtime: Path | None = None) -> AsyncIterator[Driver]:
    """A fresh server ("tabwright", "playwright" or "playwright-settle0"); when it closes,
    any process it started that is still alive is killed (by pid) and said so.  A
    Tabwright given ``runtime`` is a session of the warm server there (see _params)."""
    kind = Tabwright if name == "tabwright" else PlaywrightMcp
    LOGS.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="bench-mcp-") as workdir,
        (LOGS / f"{name}.stderr.log").open("a") as errlog,
    ):
        before = _children_of(os.getpid(), deep=False)
        # Client(params) would let the servers' logs through to our stderr: the same stdio
        # transport with errlog keeps them in var/bench-mcp/ instead.
        transport = stdio_client(_params(name, Path(workdir), runtime), errlog=errlog)
        async with Client(transport) as client:
            driver = kind(name, client)
            new = _children_of(os.getpid(), deep=False) - before
            driver.server_pid = min(new) if new else 0
            try:
                yield driver
            finally:
                if runtime is None:  # (a warm server's processes outlive its sessions)
                    driver.note_processes()
        await anyio.sleep(0.5)  # let a browser that is closing finish on its own
        left = {pid for pid in driver.pids if _alive(pid)}
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        if left:
            print(f"[{name}: {len(left)} processes outlived the server; killed]", flush=True)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
