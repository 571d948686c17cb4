"""The MCP tools: the action registry (:data:`automation.actions.ACTIONS`) as MCP tool
definitions, so an MCP client, the agent and the act API call the same actions with the
same parameters and get the same validation.  Plain data here (the MCP SDK's ``Tool``
objects are made of them in :mod:`automation.mcp.server`): a run that serves an MCP
session loads no MCP SDK.

Left out: the agent's own workspace tools (files, shell; an MCP client has its own) and
``read_page`` (``snapshot`` is the same with options).  Added: ``screenshot``, which
answers an image.  Every tool takes ``timeout_ms`` (the budget of the whole call); a tool
that acts takes ``delta`` (answer what changed on the page after it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from automation.actions import ACTIONS, MAX_TIMEOUT_MS
from automation.actionspec import ActionSpec, Param
from automation.browser.config import BrowserConfig
from automation.tools.files import FILE_ACTIONS
from automation.tools.shell import SHELL_ACTIONS

__all__ = ["READ_ONLY", "SCREENSHOT", "ToolDef", "offered", "tool_defs"]

_LEFT_OUT = frozenset({"read_page", *(s.name for s in (*FILE_ACTIONS, *SHELL_ACTIONS))})
# Tools that only read: no delta to ask for, and nothing to undo.
READ_ONLY = frozenset(
    {"snapshot", "find", "page_log", "network_request", "verify", "downloads", "screenshot"}
)
SCREENSHOT = "screenshot"


def offered(config: BrowserConfig) -> list[ActionSpec]:
    """The registry's actions an MCP client may call with this browser config (evaluate
    only when the operator turned it on)."""
    return [s for s in ACTIONS.values() if s.name not in _LEFT_OUT and s.enabled(config)]


def _schema_of(param: Param) -> dict[str, Any]:
    schema = param.json_schema()
    if param.name != "ref":  # said once, in the server's instructions
        schema["description"] = param.description
    return schema


def _input_schema(params: tuple[Param, ...], *, acts: bool) -> dict[str, Any]:
    properties = {p.name: _schema_of(p) for p in params}
    if acts:
        properties["delta"] = {"type": "boolean", "description": "answer what changed too"}
    properties["timeout_ms"] = {"type": "number", "minimum": 1, "maximum": MAX_TIMEOUT_MS}
    # Every argument is named: one the tool doesn't take is refused (the session's check).
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    required = [p.name for p in params if p.required]
    if required:
        schema["required"] = required
    return schema


@dataclass(frozen=True)
class ToolDef:
    """One tool as ``tools/list`` answers it; ``read_only``: it only reads the page."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


def tool_defs(config: BrowserConfig) -> list[ToolDef]:
    """Every tool."""
    tools = [
        ToolDef(
            spec.name,
            spec.description,
            _input_schema(spec.params, acts=spec.name not in READ_ONLY),
            spec.name in READ_ONLY,
        )
        for spec in offered(config)
    ]
    screenshot_params = (
        Param("ref", str, "", required=False),
        Param("full_page", bool, "the whole page, not the viewport", False),
    )
    tools.append(
        ToolDef(
            SCREENSHOT,
            "a picture of the page (or of one element) as JPEG",
            _input_schema(screenshot_params, acts=False),
            SCREENSHOT in READ_ONLY,
        )
    )
    return tools
