"""Actions out of model text: ``<action>{"action": "click", "ref": "e5"}</action>`` tags.

The parser never raises on model output.  It returns the valid actions and, for each bad
tag, a typed error that goes back to the model as an observation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from automation.actions import ACTIONS, validate
from automation.errors import ActionInvalid, TabwrightError
from automation.limits import loads_finite, whole_text

__all__ = ["AGENT_ACTIONS", "MAX_ACTIONS_PER_REPLY", "Action", "ParseResult", "parse_reply"]

# Actions the loop handles itself rather than the browser.
AGENT_ACTIONS = frozenset({"done"})
MAX_ACTIONS_PER_REPLY = 10
# An escape of half of a UTF-16 pair, which JSON reads as a character of its own.
_HALF_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_TAG_RE = re.compile(r"<action>(.*?)(?:</action>|$)", re.DOTALL | re.IGNORECASE)
NEED_HELP_RE = re.compile(r"\bNEED_HELP\b[:\s]*(.*)", re.DOTALL)


@dataclass(frozen=True)
class Action:
    name: str
    args: dict[str, Any]

    @property
    def signature(self) -> str:
        """Identity of the action for stuck detection: name plus sorted args."""
        return self.name + json.dumps(self.args, sort_keys=True, ensure_ascii=False)


@dataclass
class ParseResult:
    actions: list[Action] = field(default_factory=list)
    errors: list[TabwrightError] = field(default_factory=list)
    need_help: str | None = None  # the model asked the person for help, with its reason
    prose: str = ""  # the text outside the tags


def parse_reply(text: str, *, offered: Collection[str] | None = None) -> ParseResult:
    """The actions and errors of ``text``; with ``offered`` (the actions this run offers),
    any other action is an error that lists those."""
    result = ParseResult()
    if not isinstance(text, str):
        result.errors.append(ActionInvalid("the reply was not text"))
        return result
    text = whole_text(text)  # (a server's JSON may hold a half of a UTF-16 pair alone)
    result.prose = _TAG_RE.sub("", text).strip()
    help_m = NEED_HELP_RE.search(result.prose)
    if help_m:
        result.need_help = help_m.group(1).strip() or "the agent asked for help"
    for n, match in enumerate(_TAG_RE.finditer(text), start=1):
        if n > MAX_ACTIONS_PER_REPLY:
            result.errors.append(
                ActionInvalid(
                    f"more than {MAX_ACTIONS_PER_REPLY} actions in one reply; rest ignored"
                )
            )
            break
        try:
            result.actions.append(_parse_one(match.group(1), n, offered))
        except ActionInvalid as exc:
            result.errors.append(exc)
    return result


def _parse_one(body: str, n: int, offered: Collection[str] | None) -> Action:
    body = body.strip()
    if body.startswith("```"):  # models like to fence JSON even inside tags
        body = body.strip("`").removeprefix("json").strip()
    try:
        data = loads_finite(body)
    except json.JSONDecodeError as exc:
        raise ActionInvalid(
            f"action {n}: not valid JSON ({exc.msg} at char {exc.pos}): {body[:120]!r}",
            hint='write <action>{"action": "click", "ref": "e5"}</action>',
        ) from None
    except ValueError as exc:  # NaN, 1e400: Python reads them, nothing can store them
        raise ActionInvalid(f"action {n}: {exc}: {body[:120]!r}") from None
    except RecursionError:  # arrays in arrays a thousand deep: told, not a crashed run
        raise ActionInvalid(
            f"action {n}: its JSON nests too deep to read: {body[:120]!r}",
            hint='write <action>{"action": "click", "ref": "e5"}</action>',
        ) from None
    if _HALF_ESCAPE.search(body) and not _whole(data):
        raise ActionInvalid(
            f"action {n}: a text holds half of a UTF-16 pair alone: no character a page or "
            f"a database holds: {body[:120]!r}",
            hint="write the character itself, or both halves of its pair",
        )
    if not isinstance(data, dict):
        raise ActionInvalid(f"action {n}: expected a JSON object, got {type(data).__name__}")
    name = data.get("action")
    if not isinstance(name, str) or not name:
        raise ActionInvalid(f'action {n}: missing "action" name')
    args = {k: v for k, v in data.items() if k != "action"}
    if name in AGENT_ACTIONS:
        summary = args.get("summary", "")
        done = {"summary": summary if isinstance(summary, str) else str(summary)}
        if "output" in args:  # checked against the run's output schema, if it has one
            done["output"] = args["output"]
        return Action(name, done)
    known = ACTIONS if offered is None else offered
    if name not in known:
        what = "unknown action" if name not in ACTIONS else "an action this run does not offer:"
        raise ActionInvalid(
            f"action {n}: {what} {name!r}",
            hint="the actions you have: " + ", ".join(sorted([*known, *AGENT_ACTIONS])),
        )
    return Action(name, validate(name, args))


def _whole(data: object) -> bool:
    """Whether every text in ``data`` is whole characters (UTF-8 has bytes for each)."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
