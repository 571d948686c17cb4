"""What one reply of the model asks the loop to do: the loop's step function, kept free of
I/O so that it can be read in one go and fuzzed.

:func:`read_reply` never raises on model output.  Every problem becomes a typed error that
goes back to the model, a note for the next round, or a pause for the person.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from automation.agent.parser import Action, parse_reply
from automation.errors import TabwrightError

__all__ = ["CLAIM_REMINDER", "NO_ACTION_NOTE", "REPEAT_NOTE", "Turn", "read_reply"]

# Said the same in both tool modes: a model with native tools calls them, one without
# writes the tags.
NO_ACTION_NOTE = "No action found in your reply: call an action (or done) to go on."
CLAIM_REMINDER = (
    "You wrote that the task is done but sent no done action, so the run goes on. If the "
    'task is complete, send done with a summary ({"action": "done", "summary": "..."}); '
    "if not, send the next action."
)
REPEAT_NOTE = (
    "You sent {} twice in a row: it ran once. Look at the page; if it must run again, "
    "send it again."
)
# "I have completed the task", "Done!", "The form was submitted successfully", ...
_CLAIM_RE = re.compile(
    r"\b(done|finished|complete[d]?|accomplished|succeeded|successfully|all set)\b", re.IGNORECASE
)


@dataclass
class Turn:
    actions: list[Action] = field(default_factory=list)  # to run, in order
    errors: list[TabwrightError] = field(default_factory=list)  # bad tags: told to the model
    notes: list[str] = field(default_factory=list)  # told to the model next round
    done: str | None = None  # the summary, if the task ends once the actions ran well
    output: Any = None  # the data done carried, if any
    pause: tuple[str, str] | None = None  # (reason, detail): after the actions, wait


def read_reply(
    text: str,
    *,
    last_signature: str = "",
    page_changed: bool = False,
    offered: Collection[str] | None = None,
) -> Turn:
    """The actions of ``text`` up to a ``done`` or a repeat.

    Stuck is a repeat with no effect: the first action repeating the last one the loop ran
    (``last_signature``) pauses the run for the person, unrun, unless the page changed
    since that one ran (``page_changed``: adding the same item twice is work, not a loop).
    An action repeating the one before it in the same reply is not run either: whether
    the first had an effect is not known yet, so the model is asked to send it again once
    it has seen the page.  ``NEED_HELP`` pauses after the actions ran.  ``offered``: the
    actions of this run (any other is an error that lists them)."""
    parsed = parse_reply(text, offered=offered)
    turn = Turn(errors=list(parsed.errors))
    turn.notes.extend(f"ERROR [{error.code}]: {error}" for error in parsed.errors)
    for i, action in enumerate(parsed.actions):
        if action.name == "done":
            turn.done = str(action.args.get("summary", ""))
            turn.output = action.args.get("output")
            break
        if i == 0 and action.signature == last_signature and not page_changed:
            detail = f"the same action again, and the page did not change: {action.signature}"
            turn.pause = ("stuck", detail)
            break
        if i > 0 and action.signature == parsed.actions[i - 1].signature:
            turn.notes.append(REPEAT_NOTE.format(action.signature))
            break
        turn.actions.append(action)
    if parsed.need_help is not None and turn.pause is None and turn.done is None:
        turn.pause = ("need_help", parsed.need_help)
    if parsed.actions or turn.pause is not None or parsed.errors:
        return turn
    turn.notes.append(CLAIM_REMINDER if _CLAIM_RE.search(parsed.prose) else NO_ACTION_NOTE)
    return turn
