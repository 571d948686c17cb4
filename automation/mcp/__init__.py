"""Tabwright as an MCP server: the action registry as MCP tools, over stdio
(``python -m automation.mcp``) or streamable HTTP in the dashboard (``/mcp``)."""

from __future__ import annotations

from automation.mcp.server import INSTRUCTIONS, build_server
from automation.mcp.session import Answer, McpSession, PausedByPerson
from automation.mcp.tools import tool_list

__all__ = ["INSTRUCTIONS", "Answer", "McpSession", "PausedByPerson", "build_server", "tool_list"]
