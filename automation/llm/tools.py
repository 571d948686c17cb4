"""Native tool calling: action specs as tool definitions, tool calls back as action tags.

Providers that support tool calls are offered one tool per action plus ``done``.  What the
model calls is turned back into ``<action>{json}</action>`` text, so the agent loop reads
one format whichever way the model answered.  Provider modules convert the neutral
definitions from :func:`tool_definitions` into their own request shape.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from automation.actionspec import ActionSpec
from automation.budget import MAX_TIMEOUT_MS
from automation.llm.base import OnToken

__all__ = ["DONE_TOOL", "action_tag", "append_tags", "call_tag", "tool_definitions"]

_JSON_TYPE_NAMES: dict[type, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}

DONE_TOOL: dict[str, Any] = {
    "name": "done",
    "description": "finish the task and say what was achieved",
    "parameters": {
        "type": "object",
        "properties": {"summary": {"type": "string", "description": "what was achieved"}},
        "required": ["summary"],
    },
}

_TIMEOUT_PROPERTY: dict[str, Any] = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_TIMEOUT_MS,
    "description": "the most time this action may take, in ms (it is stopped then)",
}


def tool_definitions(specs: Sequence[ActionSpec]) -> list[dict[str, Any]]:
    """``{"name", "description", "parameters"}`` for each spec, then ``done``."""
    tools = [_definition(spec) for spec in specs]
    tools.append(json.loads(json.dumps(DONE_TOOL)))  # a copy callers may change
    return tools


def _definition(spec: ActionSpec) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for param in spec.params:
        properties[param.name] = {**_schema_of(param.type), "description": param.description}
    # Every action takes timeout_ms; extra properties stay allowed for the same reason.
    properties.setdefault("timeout_ms", dict(_TIMEOUT_PROPERTY))
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    required = [p.name for p in spec.params if p.required]
    if required:
        parameters["required"] = required
    return {"name": spec.name, "description": spec.description, "parameters": parameters}


def _schema_of(kind: type | tuple[type, ...]) -> dict[str, Any]:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = list(dict.fromkeys(_JSON_TYPE_NAMES[k] for k in kinds if k in _JSON_TYPE_NAMES))
    if not names or set(_JSON_TYPE_NAMES.values()) <= set(names):
        return {}  # any JSON value
    return {"type": names[0] if len(names) == 1 else names}


def action_tag(name: str, args: dict[str, Any]) -> str:
    """``<action>{"action": name, ...args}</action>``, the text the action parser reads."""
    body = {"action": name, **{k: v for k, v in args.items() if k != "action"}}
    return f"<action>{json.dumps(body, ensure_ascii=False)}</action>"


def call_tag(name: str, arguments: str | dict[str, Any]) -> str:
    """The tag for one native tool call.

    Arguments that are not a JSON object are kept raw inside the tag, so the parser reports
    them to the model as a typed error instead of the call vanishing.
    """
    if isinstance(arguments, dict):
        return action_tag(name, arguments)
    if not arguments.strip():
        return action_tag(name, {})
    try:
        args = json.loads(arguments)
    except ValueError:
        args = None
    if isinstance(args, dict):
        return action_tag(name, args)
    return f"<action>{arguments}</action>"


async def append_tags(text: str, tags: Sequence[str], on_token: OnToken | None) -> str:
    """``text`` followed by ``tags``, one a line; each tag also goes to ``on_token`` so the
    streamed pieces add up to the returned text."""
    for tag in tags:
        piece = f"\n{tag}" if text else tag
        text += piece
        if on_token is not None:
            await on_token(piece)
    return text
