"""Values of a scenario as Python source in its pytest export (automation.recording.export):
each a literal made by ``repr()`` or ``int()``, or a name this module checked; anything
else refuses the export with ScenarioInvalid."""

from __future__ import annotations

import keyword
import math
import re
from typing import Any

from automation.errors import ScenarioInvalid

__all__ = ["arg", "identifier", "literal", "quote", "text", "whole"]


def quote(text: str) -> str:
    """A text as a literal on one line, for a comment (whatever a subclass would say)."""
    return str.__repr__(str.__str__(text))


def arg(args: dict[str, Any], key: str) -> Any:
    """A step's arg (ScenarioInvalid when it is missing)."""
    if key not in args:
        raise ScenarioInvalid(f"{key} is missing")
    return args[key]


def literal(value: Any) -> str:
    """A value that is not text as a Python literal: a bool, None, a finite number, or a
    list of those (what JSON can hold, less NaN and infinities, whose repr is no literal)."""
    # Converted first: a subclass's own __repr__ is not trusted to write a literal.
    if value is None or isinstance(value, bool):
        return repr(None if value is None else bool(value))
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float) and math.isfinite(value):
        return repr(float(value))
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    raise ScenarioInvalid(f"a value of type {type(value).__name__} can't be exported")


def text(value: Any, what: str) -> str:
    """A text as a Python literal: quoted, every line break and control character escaped
    (str's own repr, whatever a subclass would say)."""
    if not isinstance(value, str):
        raise ScenarioInvalid(f"{what} must be text, not {type(value).__name__}")
    return str.__repr__(value)


def whole(value: Any, what: str) -> str:
    """A whole number as Python source: ints, and floats that are whole; nothing else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioInvalid(f"{what} must be a whole number, not {type(value).__name__}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise ScenarioInvalid(f"{what} must be a whole number, not {value!r}")
    return str(int(value))


def identifier(name: str) -> str:
    """The test function's name: ASCII letters, digits and _ only (a Unicode letter may
    not be one Python takes in a name), never a keyword."""
    ident = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")[:60].strip("_")
    if not ident or ident[0].isdigit() or keyword.iskeyword(ident):
        ident = f"scenario_{ident}".rstrip("_")
    return ident
