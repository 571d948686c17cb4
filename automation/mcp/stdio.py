"""Tabwright's MCP server over stdio, for a local MCP client: one browser context per
process.  The browser starts and the context opens as the server starts, while the client
initializes (``initialize`` and ``tools/list`` answer without waiting for it);
the first tool call waits only for what is left of that.  A context that failed to open
is opened again at the next call, which answers why it could not.

With ``scenario_out`` the session's recorded steps are written as a scenario file when
the client ends the session (the same file the dashboard imports and exports); steps that
failed or only read the page are left out, and the file's description says which.
SIGTERM, SIGHUP and SIGINT end the session as the client's closing stdin does, the
process then exiting with status 0.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import anyio
from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server

from automation.browser.config import BrowserConfig
from automation.errors import TabwrightError
from automation.events import ListSink, StepRecorded
from automation.mcp.ahead import TabAhead
from automation.mcp.server import build_server
from automation.mcp.session import Answer, McpSession
from automation.recording.fromrun import from_run_steps
from automation.secrets import Secrets

__all__ = ["StdioSession", "serve_stdio", "write_scenario"]

log = logging.getLogger("automation.mcp")


# How a client whose closing stdin did not end the server (the MCP spec's fallback), a
# process manager or a terminal stops it: each ends the session as closing stdin does.
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def write_scenario(sink: ListSink, path: Path, *, name: str) -> int:
    """The session's steps as a scenario file at ``path``, whole or not at all (written
    beside it, then renamed over it); how many steps it kept."""
    rows = [event.to_dict() for event in sink.of_type(StepRecorded)]
    scenario = from_run_steps(rows, name=name)
    text = json.dumps(scenario.to_dict(), indent=2, ensure_ascii=False)
    part = path.with_name(f".{path.name}.part")
    part.write_text(text + "\n", encoding="utf-8")
    part.replace(path)
    return len(scenario.steps)


class StdioSession:
    """One client's session over a line-per-message stream: its tab (from ``tabs``, taken
    at the first call), its recorded steps, and its scenario file written as it ends."""

    def __init__(
        self,
        config: BrowserConfig,
        tabs: TabAhead,
        *,
        secrets: Secrets,
        scenario_out: Path | None = None,
        scenario_name: str = "",
    ) -> None:
        self.config = config
        self.tabs = tabs
        self.secrets = secrets  # ${SECRET:NAME}: the client's own TABWRIGHT_SECRET_NAME
        self.scenario_out = scenario_out
        self.scenario_name = scenario_name
        self.sink = ListSink()
        self._opened: McpSession | None = None
        self._opening = asyncio.Lock()
        self._finished = False

    async def call(
        self, _ctx: ServerRequestContext[Any], name: str, args: dict[str, Any]
    ) -> Answer:
        async with self._opening:
            if self._opened is None:
                try:
                    tab = await self.tabs.tab()
                except TabwrightError as exc:
                    return Answer(False, f"error {exc.code}: {exc.message}")
                self._opened = McpSession(tab, sink=self.sink, secrets=self.secrets)
        return await self._opened.call(name, args)

    async def run(self, read: Any, write: Any) -> None:
        """Answer the client until its stream ends."""
        server = build_server(self.config, self.call)
        await server.run(read, write, server.create_initialization_options())

    async def finish(self) -> None:
        """The file first (it is kept if closing the tab is cut short), then the tab; once."""
        if self._finished:
            return
        self._finished = True
        try:
            if self.scenario_out is not None and self.sink.of_type(StepRecorded):
                name = self.scenario_name or "MCP session"
                kept = write_scenario(self.sink, self.scenario_out, name=name)
                log.info("wrote %s steps to %s", kept, self.scenario_out)
        finally:
            await self.tabs.close()


async def serve_stdio(
    config: BrowserConfig,
    *,
    scenario_out: Path | None = None,
    scenario_name: str = "",
    ahead: TabAhead | None = None,
) -> None:
    """Serve one client on stdin and stdout until it leaves (closes stdin) or the process
    is told to stop (SIGTERM, SIGHUP or SIGINT); ``ahead``: its tab, already opening (made
    here otherwise), closed here at the end.  Told to stop, it then ends the process, with
    status 0."""
    session = StdioSession(
        config,
        ahead or TabAhead(config),
        secrets=Secrets(),
        scenario_out=scenario_out,
        scenario_name=scenario_name,
    )
    stop = anyio.CancelScope()
    try:
        async with stdio_server() as (read, write):
            with _on_signals(_STOP_SIGNALS, stop.cancel), stop:
                await session.run(read, write)
            if stop.cancel_called:
                await _exit_after(session.finish)  # it does not return: no finish in the finally
    finally:
        await session.finish()


@contextmanager
def _on_signals(signums: tuple[int, ...], handler: Callable[[], object]) -> Iterator[None]:
    loop = asyncio.get_running_loop()
    for signum in signums:
        loop.add_signal_handler(signum, handler)
    try:
        yield
    finally:
        for signum in signums:
            loop.remove_signal_handler(signum)


async def _exit_after(finish: Callable[[], Awaitable[None]]) -> NoReturn:
    """Leaving ``stdio_server`` would wait for its stdin reader, a thread blocked in a read
    that only the client's closing stdin ends: ``finish``, then end the process here."""
    status = 0
    try:
        await finish()
    except BaseException:
        log.exception("the session did not finish")
        status = 1
    sys.stderr.flush()
    os._exit(status)
