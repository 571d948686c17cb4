"""The system prompt and the per-round observation text the model reads."""

from __future__ import annotations

from automation.browser.actions import ACTIONS, ActionSpec
from automation.browser.snapshot import Snapshot
from automation.llm.base import ActionOutcome

__all__ = ["observation_text", "system_prompt"]

_RULES = """You are Tabwright, an agent that operates a web browser for a person.
Each turn you get the page as an accessibility snapshot: one element per line, with a ref
like [e5] for the elements you can act on. Act only by ref, with refs from the latest
snapshot; never invent refs or CSS selectors. Stay on the task's site.

Write each action as a JSON object inside <action></action> tags, for example
<action>{"action": "click", "ref": "e5"}</action>
You may send several actions in one reply; they run in order and stop at the first error.
Any action may also carry "timeout_ms": the most time it may take (it is stopped then).
When you already know what comes next (click, then wait for the result, then look),
send one "steps" action instead of several rounds: it runs them on this tab in one go and
answers with one line a step and only the page you ask for (return_mode "delta": only
what changed).
Actions:
"""

_END = """
When the task is complete, send <action>{"action": "done", "summary": "what was achieved"}</action>.
If you cannot go on without the person (a login, a choice only they can make), write
NEED_HELP: followed by what you need."""


def system_prompt(actions: list[ActionSpec] | None = None) -> str:
    """The rules and the tool list; ``actions`` defaults to every action there is."""
    offered = list(ACTIONS.values()) if actions is None else actions
    lines = [f"- {spec.signature()}: {spec.description}" for spec in offered]
    lines.append('- {"action": "done", "summary": str}: finish the task')
    return _RULES + "\n".join(lines) + "\n" + _END


def observation_text(
    *, outcomes: list[ActionOutcome], notes: list[str], snapshot: Snapshot | None
) -> str:
    parts: list[str] = []
    for o in outcomes:
        if o.ok:
            parts.append(f"OK {o.action}: {o.result}")
        else:
            parts.append(f"ERROR {o.action} [{o.error_code}]: {o.error}")
    parts.extend(notes)
    if snapshot is not None:
        parts.append(f"Page: {snapshot.title!r} {snapshot.url}\n{snapshot.text}")
    return "\n".join(parts)
