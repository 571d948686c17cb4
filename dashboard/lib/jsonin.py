"""JSON from the outside (an HTTP body, a socket message, an uploaded scenario), bounded.

Python's parser recurses once per level of nesting, so ``[[[[…]]]]`` 100,000 deep ends in a
RecursionError: a 500 or a dropped socket instead of an answer.  And it is one call in C
that holds the interpreter until it is done, in whatever thread it runs: 20 MiB of
``[[],[],…]`` (7 million values) held every other request of the server for seconds.
Every entry point parses through :func:`loads`, which refuses a text over its size, then
one of more than ``max_values`` arrays, objects and values, then one nested deeper than
``max_depth``, all before the parse (each count is a few scans in C, each once over the
text: milliseconds), one with a
number JSON has none for (``NaN``, ``Infinity``, ``1e400``: Python reads them) in it, and a
text with half of a UTF-16 pair (``"\ud800"``: JSON, but no text a database or a page can
hold) after it; every failure is a :class:`JsonRefused`: a ValueError (as
``json.JSONDecodeError`` is), with a stable ``code`` and a message for the person who sent
it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from automation.limits import MAX_JSON_DEPTH, loads_finite

__all__ = ["MAX_COMMAND_BYTES", "MAX_COMMAND_VALUES", "MAX_DEPTH", "MAX_VALUES", "JsonRefused",
           "as_text", "loads", "nesting_depth"]  # fmt: skip

MAX_DEPTH = MAX_JSON_DEPTH  # (automation.limits: a scenario is held to it too)
# One act request or socket command: an action and its args, never a document.
MAX_COMMAND_BYTES = 256 * 1024
# Arrays, objects and values in one text: a batch's 10,000 rows of a few dozen values, a
# scenario of thousands of steps; a command's args (a form of a few thousand fields).
MAX_VALUES = 1_000_000
MAX_COMMAND_VALUES = 50_000

_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
# A string's escape of half of a UTF-16 pair (where the text says so at all).
_HALF = re.compile(r"\\u[dD][89a-fA-F]")


class JsonRefused(ValueError):
    """JSON that is not read: ``code`` is ``too_large``, ``too_deep``, ``bad_json`` or
    ``bad_text`` (half of a UTF-16 pair)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "hint": ""}


def nesting_depth(text: str) -> int:
    """How deep the arrays and objects of ``text`` nest (0 for a scalar), without parsing.

    Strings are taken out first (:func:`_unquoted`)."""
    return _depth(_unquoted(text))


def _unquoted(text: str) -> str:
    """``text`` with each string literal written ``""``, its text gone (brackets and commas
    inside one are text, not nesting or values); an unclosed one is gone to the end (the
    text is no JSON then).  In steps that each run once over the text in C (replace, split,
    join): a regular expression matching a literal starts again at each quote of an unclosed
    one, and 32 KB of ``"\\"\\"…`` took ten seconds, holding the interpreter (every other
    request of the server) all along.  Escaped backslashes go first, then escaped quotes:
    what remains of a literal holds no quote, so the quotes split the text into what is
    outside literals and what is inside."""
    bare = text.replace("\\\\", "").replace('\\"', "") if "\\" in text else text
    return '""'.join(bare.split('"')[0::2])


def _depth(unquoted: str) -> int:
    brackets = _NOT_BRACKET.sub("", unquoted)
    if not brackets:
        return 0
    # accumulate/max run in C: a 20 MB scenario is scanned in milliseconds.
    return max(0, max(accumulate(map(_STEP.__getitem__, brackets))))


def loads(
    data: str | bytes | bytearray,
    *,
    max_bytes: int,
    max_depth: int = MAX_DEPTH,
    max_values: int = MAX_VALUES,
    what: str = "the body",
    no_nul: bool = False,
) -> Any:
    """The value of the JSON text ``data``; JsonRefused when it is over ``max_bytes``, holds
    more than ``max_values`` arrays, objects and values, nests deeper than ``max_depth``,
    is not UTF-8, not JSON (NaN is not), or holds half of a UTF-16 pair; with ``no_nul``,
    a text (a key too) holding a NUL as well."""
    size = len(data.encode("utf-8", "surrogatepass")) if isinstance(data, str) else len(data)
    if size > max_bytes:
        raise JsonRefused("too_large", f"{what} is over {max_bytes} bytes")
    if isinstance(data, bytes | bytearray):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise JsonRefused("bad_json", f"{what} is not UTF-8 text") from None
    else:
        text = data
    unquoted = _unquoted(text)  # each string one value, its text gone
    values = unquoted.count(",") + unquoted.count("[") + unquoted.count("{") + 1
    if values > max_values:
        raise JsonRefused("too_large", f"{what} holds about {values} values; at most {max_values}")
    depth = _depth(unquoted)
    if depth > max_depth:
        raise JsonRefused(
            "too_deep", f"{what} nests arrays and objects {depth} deep; at most {max_depth}"
        )
    try:
        value = loads_finite(text)
    except json.JSONDecodeError as exc:
        raise JsonRefused(
            "bad_json", f"{what} is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except ValueError as exc:  # NaN, Infinity, 1e400: Python reads them, JSON has no such
        raise JsonRefused("bad_json", f"{what} is not JSON: {exc}") from None
    except RecursionError:  # a limit above the interpreter's: still an answer, not a crash
        raise JsonRefused("too_deep", f"{what} nests too deep to read") from None
    if _HALF.search(text) and _text_at(value, _half_pair) is not None:
        raise JsonRefused(
            "bad_text", f"{what} holds half of a UTF-16 pair (\\ud800 to \\udfff alone): no text"
        )
    if no_nul and "\\u0000" in text and (where := _text_at(value, _nul)) is not None:
        at = f" (in {where})" if where else ""
        raise JsonRefused("bad_text", f"{what} holds a NUL character, U+0000{at}: no text")
    return value


def _text_at(value: Any, bad: Callable[[str], bool]) -> str | None:
    """Where a string in ``value`` (a key too) is ``bad``: the top-level key it is under
    ("" for the value itself), or None.  Python code, a step at a time, so other threads
    run meanwhile."""
    todo: list[tuple[Any, str]] = [(value, "")]
    if isinstance(value, dict):
        todo = [(part, repr(key)) for key, inner in value.items() for part in (key, inner)]
    while todo:
        item, where = todo.pop()
        if isinstance(item, str):
            if bad(item):
                return where
        elif isinstance(item, dict):
            todo += [(part, where) for pair in item.items() for part in pair]
        elif isinstance(item, list):
            todo += [(inner, where) for inner in item]
    return None


def _half_pair(text: str) -> bool:
    """Whether ``text`` holds a surrogate of its own (no UTF-8 for it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _nul(text: str) -> bool:
    return "\x00" in text


def as_text(value: object) -> object:
    """A JSON value given where a text is wanted (a replay's parameter), as a spreadsheet
    would write it: a number or true/false as its text, null as empty; anything else as
    it is (a text, or to be refused as not one)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return str(value)  # (1e999 reads as infinity: no number a text says, refused)
    return "" if value is None else value
