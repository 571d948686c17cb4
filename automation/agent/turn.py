"""What one reply of the model asks the loop to do: the loop's step function, kept free of
I/O so that it can be read in one go and fuzzed.

:func:`read_reply` never raises on model output.  Every problem becomes a typed error that
goes back to the model, a note for the next round, or a pause for the person.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from automation.agent.parser import Action, parse_reply
from automation.errors import TabwrightError

__all__ = ["CLAIM_REMINDER", "NO_ACTION_NOTE", "Turn", "read_reply"]

NO_ACTION_NOTE = 'No action found in your reply. Send <action>{"action": ...}</action> tags.'
CLAIM_REMINDER = (
    "You wrote that the task is done but sent no done action, so the run goes on. If the "
    'task is complete, send <action>{"action": "done", "summary": "..."}</action>; if not, '
    "send the next action."
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
    pause: tuple[str, str] | None = None  # (reason, detail): after the actions, wait


def read_reply(text: str, *, last_signature: str = "") -> Turn:
    """The actions of ``text`` up to a ``done`` or a repeat of the action before it
    (``last_signature`` is the last action the loop ran): a repeat is not run, the run
    pauses for the person instead (stuck).  ``NEED_HELP`` pauses after the actions ran."""
    parsed = parse_reply(text)
    turn = Turn(errors=list(parsed.errors))
    turn.notes.extend(f"ERROR [{error.code}]: {error}" for error in parsed.errors)
    previous = last_signature
    for action in parsed.actions:
        if action.name == "done":
            turn.done = str(action.args.get("summary", ""))
            break
        if action.signature == previous:
            turn.pause = ("stuck", f"the same action again: {action.signature}")
            break
        turn.actions.append(action)
        previous = action.signature
    if parsed.need_help is not None and turn.pause is None and turn.done is None:
        turn.pause = ("need_help", parsed.need_help)
    if parsed.actions or turn.pause is not None or parsed.errors:
        return turn
    turn.notes.append(CLAIM_REMINDER if _CLAIM_RE.search(parsed.prose) else NO_ACTION_NOTE)
    return turn
