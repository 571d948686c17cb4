"""The system prompt: the rules, and in text mode the action list, generated from the action
registry (an action added there is offered here, unless the operator has it switched off).

Two forms, each the same bytes every round of a run, so that a provider's prompt caching
applies to it:

- text mode (``native=False``): the actions are listed here, and the model writes them as
  ``<action>{json}</action>`` tags;
- native tools (``native=True``): the actions go as tool definitions
  (:mod:`automation.llm.tools`), so this prompt does not list them again.
"""

from __future__ import annotations

from automation.actions import ACTIONS
from automation.actionspec import ActionSpec

__all__ = ["system_prompt"]

_RULES = """You are Tabwright, an agent that operates a web browser for a person.
Each turn you get the page as an accessibility snapshot: one element per line, with a ref
like [e5] for the elements you can act on. Read the snapshot first, then act.
- Act only by ref, with refs from the snapshots you were given; never invent refs, and
  never write CSS selectors or XPath.
- Stay on the task's site; don't open other sites unless the task asks for them.
- After the first round you may get only what changed ("# changes since the last
  snapshot"); the rest of the page is as in the last full snapshot.
- A secret is written as ${SECRET:NAME} (as the task gives it); put the placeholder
  itself in your action, it is filled in when the action runs. Never ask for its value.
  ${TOTP:NAME} is typed as the current one-time code of that secret, the same way.
- Several actions in one reply run in order and stop at the first error. Any action may
  also carry "timeout_ms": the most time it may take (it is stopped then).
- For click → wait → read loops, use one "steps" action instead of several rounds: it runs
  them on this tab in one go and answers with one line a step and only the page you ask
  for (return_mode "delta": only what changed).
"""

_TEXT_FORMAT = """
Write each action as a JSON object inside <action></action> tags: its name as "action",
its parameters beside it, for example <action>{"action": "click", "ref": "e5"}</action>
Actions (? marks an optional parameter; one is a string unless its type is given):
"""

_TEXT_END = """
When the task is complete, send <action>{"action": "done", "summary": "what was achieved"}</action>;
saying so in words does not end the task.
If you cannot go on without the person (a login, a choice only they can make), write
NEED_HELP: followed by what you need."""

_NATIVE_END = """
Act by calling your tools; a ref parameter is a ref from the latest snapshot, like e5.
When the task is complete, call done with a summary of what was achieved; saying so in
words does not end the task.
If you cannot go on without the person (a login, a choice only they can make), write
NEED_HELP: followed by what you need."""


def system_prompt(
    actions: list[ActionSpec] | None = None,
    *,
    shell_programs: tuple[str, ...] = (),
    native: bool = False,
) -> str:
    """The rules, and with ``native=False`` the action list; ``actions`` defaults to every
    action there is, and ``shell_programs`` are the programs the shell action may run."""
    offered = list(ACTIONS.values()) if actions is None else actions
    shell = ""
    if shell_programs and any(spec.name == "shell" for spec in offered):
        shell = f"shell programs allowed: {', '.join(shell_programs)}"
    if native:
        return _RULES + (f"- The {shell}.\n" if shell else "") + _NATIVE_END
    lines = [f"- {spec.signature()}: {spec.description}" for spec in offered]
    if shell:
        lines.append(f"  ({shell})")
    lines.append("- done(summary): finish the task")
    return _RULES + _TEXT_FORMAT + "\n".join(lines) + "\n" + _TEXT_END
