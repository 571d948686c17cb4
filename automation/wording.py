"""An action in words: the one place that says what a step or an action does, wherever a
person reads it (the run page's action lines and step list, the run's events, the
scenario page, the save page, an exported test's comments, the engine's own results).

Two words never meet: a ``check`` action *ticks* or *unticks* a box (or picks a radio),
and an ``expect`` step *expects* something of the page (``expect the checkbox in row
'Buy milk' is ticked``); "check" itself is never said of a box.  An element with no name
of its own is told by its row (``the checkbox in row 'Buy milk'``).

    >>> from automation.browser.identity import ElementIdentity
    >>> box = ElementIdentity(role="checkbox", row="Buy milk")
    >>> str(step_words("check", {"ref": "e5"}, box))
    "tick the checkbox in row 'Buy milk'"
    >>> str(step_words("expect", {"kind": "unchecked"}, box))
    "expect the checkbox in row 'Buy milk' is not ticked"

Each surface quotes texts its own way (``quote``): ``repr`` in Python's and a test file's
words, ``"…"`` on the run page, ``“…”`` on the scenario page.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from automation.browser.identity import ElementIdentity

__all__ = [
    "ROW_WORDS_CHARS",
    "Words",
    "call_words",
    "check_words",
    "curly_quoted",
    "double_quoted",
    "element_words",
    "named",
    "step_words",
    "verb",
]

Quote = Callable[[str], str]

ROW_WORDS_CHARS = 40  # a row's text, as far as the words about an element quote it

# The verbs a person reads, where they are not the action's own name.
_VERBS = {"expect": "expect", "select_option": "select", "fill_form": "fill a form"}
# The argument that holds what a step types or picks, told after the element.
_VALUE_ARGS = {"fill": "value", "type": "text", "select_option": "values", "press": "key"}
# Arguments the words already say (the element, the state of a tick).
_SAID = {"ref", "checked"}


def double_quoted(text: str) -> str:
    """The run page's quotes: ``"Buy milk"``."""
    return f'"{text}"'


def curly_quoted(text: str) -> str:
    """The scenario page's quotes: ``“Buy milk”``."""
    return f"“{text}”"


@dataclass(frozen=True)
class Words:
    """A step in words: its ``verb`` (``tick``), what it acts on or expects (``the
    checkbox in row 'Buy milk'``) and the values it was given (``= 'Ada'``, a URL)."""

    verb: str
    target: str = ""
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.verb} {self.target}" if self.target else self.verb

    @property
    def full(self) -> str:
        """With the values: ``fill textbox 'Name' = 'Ada'``, ``navigate https://…``."""
        return f"{self}{self.detail}"

    def to_dict(self) -> dict[str, str]:
        return {"verb": self.verb, "target": self.target, "detail": self.detail, "text": self.full}


def verb(action: str, args: Mapping[str, Any] | None = None) -> str:
    """The action as a person reads it: a ``check`` action ticks or unticks its box, so
    that "check" is never said of a box; an ``expect`` step expects."""
    if action == "check":
        return "untick" if (args or {}).get("checked", True) is False else "tick"
    return _VERBS.get(action, action)


def named(role: str, name: str, row: str = "", quote: Quote = repr) -> str:
    """``button 'Save'``; with no name, ``the checkbox``; with a ``row``, ``… in row
    'Buy milk'`` (its text cut to :data:`ROW_WORDS_CHARS`)."""
    if not role:
        return "the element"
    what = f"{role} {quote(name)}" if name else f"the {role}"
    row = " ".join(row.split())
    if row:
        if len(row) > ROW_WORDS_CHARS:
            row = row[: ROW_WORDS_CHARS - 1].rstrip() + "…"
        what += f" in row {quote(row)}"
    return what


def element_words(identity: ElementIdentity | None, quote: Quote = repr) -> str:
    """The element as a person tells it apart: ``button 'Save'``, ``checkbox 'Toggle'
    in row 'Buy milk'`` (its row, when its name is shared or it has none), ``the
    checkbox in row 'Buy milk'``."""
    if identity is None or not identity.role:
        return "the element"
    shared = not identity.name or identity.name_count != 1
    return named(identity.role, identity.name, identity.row if shared else "", quote)


def _download_words(args: Mapping[str, Any], quote: Quote) -> str:
    """``a download 'orders-*.csv' (csv) with 2 rows``."""
    parts = ["a download"]
    if args.get("name"):
        parts.append(quote(str(args["name"])))
    if args.get("type"):
        parts.append(f"({args['type']})")
    if "min_bytes" in args or "max_bytes" in args:
        parts.append(f"of {args.get('min_bytes', 0)} to {args.get('max_bytes', '…')} bytes")
    if args.get("header"):
        parts.append("with columns " + ", ".join(quote(str(h)) for h in args["header"]))
    if "rows" in args:
        parts.append(f"and {args['rows']} row(s)" if args.get("header") else
                     f"with {args['rows']} row(s)")  # fmt: skip
    if args.get("text"):
        parts.append(f"saying {quote(str(args['text']))}")
    return " ".join(parts)


def check_words(
    args: Mapping[str, Any], identity: ElementIdentity | None = None, quote: Quote = repr
) -> str:
    """What an ``expect`` step expects: ``text 'Saved' is visible``, ``the checkbox in
    row 'Buy milk' is ticked``."""
    kind = args.get("kind", "")
    if kind == "download":
        return _download_words(args, quote)
    what = element_words(identity, quote)
    return {
        "text_visible": f"text {quote(str(args.get('text')))} is visible",
        "text_hidden": f"text {quote(str(args.get('text')))} is not visible",
        "rows": f"{'at least ' if args.get('at_least') else ''}{args.get('count')} row(s) show "
        f"{quote(str(args.get('text')))}",
        "url": f"the address holds {quote(str(args.get('url')))}",
        "no_error": "the page shows no error",
        "visible": f"{what} is on the page",
        "checked": f"{what} is ticked",
        "unchecked": f"{what} is not ticked",
        "value": f"{what} shows {quote(str(args.get('value')))}",
        "items": f"{what} lists {', '.join(quote(str(i)) for i in args.get('items') or [])} "
        f"in order{', among others' if args.get('among_others') else ''}",
    }.get(kind, f"{kind} holds")


def call_words(args: Mapping[str, Any], quote: Quote = repr) -> str:
    """``call 'Sign in' with user = '${email}'``."""
    text = f"call {quote(str(args.get('scenario', '')))}"
    params = args.get("params") or {}
    if isinstance(params, Mapping) and params:
        text += " with " + ", ".join(f"{k} = {quote(str(v))}" for k, v in params.items())
    return text


def _shown(value: Any, quote: Quote) -> str:
    if isinstance(value, str):
        return quote(value)
    return json.dumps(value, ensure_ascii=False, default=str)


_MOVES = ("popup", "opener", "first")  # where a tabs step goes (replaytabs)


def _tab_words(args: Mapping[str, Any]) -> str:
    """Where a scenario's ``tabs`` step goes (automation.recording.replaytabs)."""
    if args.get("op") == "popup":
        return "the popup the steps before opened"
    if args.get("op") == "first":
        return "the first tab"
    if not args.get("closed"):
        return "the opener"
    changed = ", having changed its form" if args.get("changed") else ""
    return f"the opener (the popup closed itself{changed})"


def step_words(
    action: str,
    args: Mapping[str, Any] | None = None,
    identity: ElementIdentity | None = None,
    *,
    quote: Quote = repr,
) -> Words:
    """A step or an action in words, from its action, its args as recorded (placeholders
    and masks as they are) and its element's identity (None: it has none, or it is not
    known).  Its ``target`` says the element (or what is expected), its ``detail`` the
    values: a URL, what was typed, the args that no element explains."""
    args = args or {}
    if action == "expect":
        return Words("expect", check_words(args, identity, quote))
    if action == "call":
        return Words("call", call_words(args, quote).removeprefix("call "))
    if action == "tabs" and args.get("op") in _MOVES:  # a scenario's
        return Words("go to", _tab_words(args))
    if action == "tabs" and args.get("to") in _MOVES:  # a run's, where it went (its detail)
        closed = bool(args.get("closed")) or args.get("op") == "closed"
        return Words("go to", _tab_words({**args, "op": args["to"], "closed": closed}))
    if action == "steps":
        steps = args.get("steps")
        steps = steps if isinstance(steps, list) else []
        kinds = " → ".join(str(s.get("type", "?")) if isinstance(s, dict) else "?" for s in steps)
        return Words("steps", f"({len(steps)})", f": {kinds}" if steps else "")
    if action == "fill_form":
        fields = args.get("fields")
        return Words(verb(action), f"of {len(fields) if isinstance(fields, list) else 0} fields")
    target = element_words(identity, quote) if identity is not None and identity.role else ""
    if action == "navigate":
        return Words(verb(action), target, f" {args.get('url', '')}")
    detail = ""
    value_arg = _VALUE_ARGS.get(action, "")
    if target and value_arg in args:
        value = args[value_arg]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            detail = " = " + ", ".join(quote(v) for v in value)
        else:
            detail = f" = {_shown(value, quote)}"
    elif not target:
        detail = "".join(f" {k}={_shown(v, quote)}" for k, v in args.items() if k not in _SAID)
        if args.get("ref"):
            target = str(args["ref"])  # an element no longer known but by its ref
    return Words(verb(action, args), target, detail)
