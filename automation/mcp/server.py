"""The MCP server: the official MCP Python SDK's low-level ``Server`` with two handlers,
``tools/list`` (:func:`tool_list`: :func:`automation.mcp.tools.tool_defs` as the SDK's
``Tool``) and ``tools/call`` (a session's :meth:`McpSession.call`).  Where the session
comes from is the transport's business: one browser per process over stdio
(:mod:`automation.mcp.stdio`), a dashboard run per MCP session over HTTP
(``dashboard.api.mcp``).
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext

from automation.browser.config import BrowserConfig
from automation.mcp.session import Answer
from automation.mcp.tools import tool_defs

__all__ = ["INSTRUCTIONS", "CallTool", "build_server", "result_of", "tool_list"]

INSTRUCTIONS = (
    "Tabwright drives a real Chromium. Take a snapshot: its first line is the page's title "
    "(left out when a heading says it) and URL (its path alone when on the origin of the "
    "last URL you were given); each element you can act on has a "
    "ref like e5 (f1e5 inside a frame); act by ref. A table row is one line, its cells "
    "between | ; a select's options follow its value. A ref from an older page, or whose "
    "element or row changed, is refused (stale_ref): take a new snapshot, never guess. "
    "Actions answer what they did; add delta=true for what changed on the page. steps runs "
    "click/fill/wait_for/navigate/read_page in one call. verify records a check the "
    "session's replay must pass. Typed values may name ${SECRET:NAME}. A person may pause "
    "the session (paused_by_person): wait, then go on."
)

# (the request's context, tool name, arguments) -> the answer
CallTool = Callable[[ServerRequestContext[Any], str, dict[str, Any]], Awaitable[Answer]]


def tool_list(config: BrowserConfig) -> list[types.Tool]:
    """Every tool, as ``tools/list`` answers it."""
    return [
        types.Tool(
            name=tool.name,
            description=tool.description,
            input_schema=tool.input_schema,
            annotations=types.ToolAnnotations(read_only_hint=True) if tool.read_only else None,
        )
        for tool in tool_defs(config)
    ]


def result_of(answer: Answer) -> types.CallToolResult:
    content: list[Any] = [types.TextContent(text=answer.text)]
    if answer.image is not None:
        data = base64.b64encode(answer.image).decode("ascii")
        content.append(types.ImageContent(data=data, mime_type="image/jpeg"))
    return types.CallToolResult(content=content, is_error=not answer.ok)


def build_server(config: BrowserConfig, call: CallTool, *, version: str = "") -> Server[Any]:
    tools = tool_list(config)

    async def list_tools(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return result_of(await call(ctx, params.name, dict(params.arguments or {})))

    return Server(
        "tabwright",
        version=version,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
