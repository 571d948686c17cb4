"""Tabwright's MCP server over stdio, for a local MCP client: one browser context per
process.  The browser starts and the context opens as the server starts, while the client
initializes (``initialize`` and ``tools/list`` answer without waiting for it);
the first tool call waits only for what is left of that.  A context that failed to open
is opened again at the next call, which answers why it could not.

With ``scenario_out`` the session's recorded steps are written as a scenario file when
the client ends the session (the same file the dashboard imports and exports); steps that
failed or only read the page are left out, and the file's description says which.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

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

__all__ = ["serve_stdio", "write_scenario"]

log = logging.getLogger("automation.mcp")


def write_scenario(sink: ListSink, path: Path, *, name: str) -> int:
    """The session's steps as a scenario file at ``path``; how many steps it kept."""
    rows = [event.to_dict() for event in sink.of_type(StepRecorded)]
    scenario = from_run_steps(rows, name=name)
    text = json.dumps(scenario.to_dict(), indent=2, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")
    return len(scenario.steps)


async def serve_stdio(
    config: BrowserConfig,
    *,
    scenario_out: Path | None = None,
    scenario_name: str = "",
    ahead: TabAhead | None = None,
) -> None:
    """Serve one client on stdin and stdout until it leaves; ``ahead``: its tab, already
    opening (made here otherwise), closed here at the end."""
    ahead = ahead or TabAhead(config)
    sink = ListSink()
    secrets = Secrets()  # ${SECRET:NAME}: the operator's own TABWRIGHT_SECRET_NAME
    opened: McpSession | None = None
    opening = asyncio.Lock()

    async def call(_ctx: ServerRequestContext[Any], name: str, args: dict[str, Any]) -> Answer:
        nonlocal opened
        async with opening:
            if opened is None:
                try:
                    tab = await ahead.tab()
                except TabwrightError as exc:
                    return Answer(False, f"error {exc.code}: {exc.message}")
                opened = McpSession(tab, sink=sink, secrets=secrets)
        return await opened.call(name, args)

    server = build_server(config, call)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        if scenario_out is not None and sink.of_type(StepRecorded):
            kept = write_scenario(sink, scenario_out, name=scenario_name or "MCP session")
            log.info("wrote %s steps to %s", kept, scenario_out)
        await ahead.close()
