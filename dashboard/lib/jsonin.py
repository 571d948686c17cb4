"""JSON from the outside (an HTTP body, a socket message, an uploaded scenario), bounded.

Python's parser recurses once per level of nesting, so ``[[[[…]]]]`` 100,000 deep ends in a
RecursionError: a 500 or a dropped socket instead of an answer.  Every entry point parses
through :func:`loads`, which refuses a text over its size, then a text nested deeper than
``max_depth``, both before the recursive parse, and turns every failure into
:class:`JsonRefused`: a ValueError (as ``json.JSONDecodeError`` is), with a stable ``code``
and a message for the person who sent it.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

__all__ = ["MAX_COMMAND_BYTES", "MAX_DEPTH", "JsonRefused", "loads", "nesting_depth"]

# Tabwright's own documents nest about 8 deep (a scenario's step's identity's variants);
# 64 leaves room for any args a person sends and is far below the parser's recursion limit.
MAX_DEPTH = 64
# One act request or socket command: an action and its args, never a document.
MAX_COMMAND_BYTES = 256 * 1024

# A whole string literal (escapes included): brackets inside one are text, not nesting.
# The unrolled form has no nested alternation, so it runs in linear time.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class JsonRefused(ValueError):
    """JSON that is not read: ``code`` is ``too_large``, ``too_deep`` or ``bad_json``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "hint": ""}


def nesting_depth(text: str) -> int:
    """How deep the arrays and objects of ``text`` nest (0 for a scalar), without parsing.

    Strings are taken out first; an unclosed one leaves its brackets counted, which can only
    make invalid JSON look deeper than it is."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if not brackets:
        return 0
    # accumulate/max run in C: a 20 MB scenario is scanned in milliseconds.
    return max(0, max(accumulate(map(_STEP.__getitem__, brackets))))


def loads(
    data: str | bytes | bytearray,
    *,
    max_bytes: int,
    max_depth: int = MAX_DEPTH,
    what: str = "the body",
) -> Any:
    """The value of the JSON text ``data``; JsonRefused when it is over ``max_bytes``,
    nested deeper than ``max_depth``, not UTF-8 or not JSON."""
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
    depth = nesting_depth(text)
    if depth > max_depth:
        raise JsonRefused(
            "too_deep", f"{what} nests arrays and objects {depth} deep; at most {max_depth}"
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonRefused(
            "bad_json", f"{what} is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:  # a limit above the interpreter's: still an answer, not a crash
        raise JsonRefused("too_deep", f"{what} nests too deep to read") from None
