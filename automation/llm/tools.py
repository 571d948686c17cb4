"""Native tool calling: action specs as tool definitions, tool calls back as action tags.

Providers that support tool calls are offered a tool of its own for each action an agent
uses all the time (:data:`OWN_TOOLS`), one shared tool ``act`` for all the others (its
description lists them as the text-mode prompt does, its ``action`` parameter names the
one to run), and ``done``.  One tool per action would cost a schema each: measured on
this registry (bench/agent.py), tools mode then sent 1.3 to 2 times the characters of text
mode every request.

What the model calls is turned back into ``<action>{json}</action>`` text, so the agent
loop reads one format whichever way the model answered.  Provider modules convert the
neutral definitions from :func:`tool_definitions` into their own request shape.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from automation.actionspec import ActionSpec
from automation.limits import loads_finite
from automation.llm.base import OnToken

__all__ = [
    "DONE_TOOL",
    "OWN_TOOLS",
    "SHARED_TOOL",
    "action_tag",
    "append_tags",
    "call_tag",
    "tool_definitions",
]

DONE_TOOL: dict[str, Any] = {
    "name": "done",
    "description": "finish the task and say what was achieved",
    "parameters": {
        "type": "object",
        "properties": {"summary": {"type": "string"}},
        "required": ["summary"],
    },
}

# The actions of almost every round: a tool each, with its parameters as a schema.  A tool
# of its own costs about 160 characters more than its line in the shared tool; with ten of
# them, tools mode sent 1.3 times the characters of text mode every request.
OWN_TOOLS = frozenset({"click", "fill", "type"})
SHARED_TOOL = "act"


def tool_definitions(
    specs: Sequence[ActionSpec], *, output_schema: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """``{"name", "description", "parameters"}`` for each own tool, ``act`` for the other
    specs, then ``done``: compact, and the same for the same specs, so a request's tools are
    the same bytes every round."""
    tools = [_definition(spec) for spec in specs if spec.name in OWN_TOOLS]
    others = [spec for spec in specs if spec.name not in OWN_TOOLS]
    if others:
        tools.append(_shared(others))
    done = json.loads(json.dumps(DONE_TOOL))  # a copy callers may change
    if output_schema is not None:  # the run's output, in the shape the schema asks for
        done["parameters"]["properties"]["output"] = output_schema
        done["parameters"]["required"].append("output")
    tools.append(done)
    return tools


def _shared(specs: Sequence[ActionSpec]) -> dict[str, Any]:
    listing = "\n".join(f"{spec.signature()}: {spec.description}" for spec in specs)
    return {
        "name": SHARED_TOOL,
        "description": "run one of these actions: its name as action, its parameters "
        f"beside it (? optional; a string unless its type is given):\n{listing}",
        "parameters": {
            "type": "object",
            "properties": {"action": {"type": "string", "enum": [spec.name for spec in specs]}},
            "required": ["action"],
        },
    }


def _definition(spec: ActionSpec) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for param in spec.params:
        # Names and types only, as the text-mode prompt shows them: the action's description
        # says what the model needs (a per-parameter description doubled the tools' size).
        # timeout_ms is said once in the system prompt; extra properties stay allowed for it.
        properties[param.name] = param.json_schema()
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    required = [p.name for p in spec.params if p.required]
    if required:
        parameters["required"] = required
    return {"name": spec.name, "description": spec.description, "parameters": parameters}


def action_tag(name: str, args: dict[str, Any]) -> str:
    """``<action>{"action": name, ...args}</action>``, the text the action parser reads."""
    body = {"action": name, **{k: v for k, v in args.items() if k != "action"}}
    return f"<action>{json.dumps(body, ensure_ascii=False)}</action>"


def call_tag(name: str, arguments: str | dict[str, Any]) -> str:
    """The tag for one native tool call.

    Arguments that are not a JSON object are kept raw inside the tag, so the parser reports
    them to the model as a typed error instead of the call vanishing.
    """
    args: object = arguments
    if isinstance(arguments, str):
        try:
            args = loads_finite(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):  # NaN, or nested too deep: the parser tells
            args = None
    if not isinstance(args, dict):
        return f"<action>{arguments}</action>"
    if name != SHARED_TOOL:
        return action_tag(name, args)
    # act: the action is the one it names; without a name the parser says what is missing.
    if isinstance(args.get("action"), str):
        return action_tag(args["action"], args)
    return f"<action>{json.dumps(args, ensure_ascii=False)}</action>"


async def append_tags(text: str, tags: Sequence[str], on_token: OnToken | None) -> str:
    """``text`` followed by ``tags``, one a line; each tag also goes to ``on_token`` so the
    streamed pieces add up to the returned text."""
    for tag in tags:
        piece = f"\n{tag}" if text else tag
        text += piece
        if on_token is not None:
            await on_token(piece)
    return text
