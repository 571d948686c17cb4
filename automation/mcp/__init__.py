"""Tabwright as an MCP server: the action registry as MCP tools, over stdio
(``python -m automation.mcp``) or streamable HTTP in the dashboard (``/mcp``)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and editors see; at run time each name loads on first use
    from automation.mcp.server import INSTRUCTIONS, build_server
    from automation.mcp.session import Answer, McpSession, PausedByPerson
    from automation.mcp.tools import tool_list

# Each public name and the module that defines it, imported when the name is first asked for
# (PEP 562): importing one module of this package loads only what that module needs.
_MODULE_OF: dict[str, str] = {
    "INSTRUCTIONS": "automation.mcp.server",
    "build_server": "automation.mcp.server",
    "Answer": "automation.mcp.session",
    "McpSession": "automation.mcp.session",
    "PausedByPerson": "automation.mcp.session",
    "tool_list": "automation.mcp.tools",
}

__all__ = ["INSTRUCTIONS", "Answer", "McpSession", "PausedByPerson", "build_server", "tool_list"]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # found once; later lookups don't come back here
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
