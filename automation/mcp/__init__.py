"""Tabwright as an MCP server: the action registry as MCP tools, over stdio
(``python -m automation.mcp``) or streamable HTTP in the dashboard (``/mcp``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from automation.lazy import lazy_names

if TYPE_CHECKING:  # what type checkers and editors see; at run time each name loads on first use
    from automation.mcp.server import INSTRUCTIONS, build_server, tool_list
    from automation.mcp.session import Answer, McpSession, PausedByPerson

# Each public name and the module that defines it, imported when the name is first asked for
# (PEP 562): importing one module of this package loads only what that module needs.
_MODULE_OF: dict[str, str] = {
    "INSTRUCTIONS": "automation.mcp.server",
    "build_server": "automation.mcp.server",
    "Answer": "automation.mcp.session",
    "McpSession": "automation.mcp.session",
    "PausedByPerson": "automation.mcp.session",
    "tool_list": "automation.mcp.server",
}

__all__ = ["INSTRUCTIONS", "Answer", "McpSession", "PausedByPerson", "build_server", "tool_list"]


__getattr__, __dir__ = lazy_names(__name__, _MODULE_OF, globals())
