"""Values of a scenario as Python source in its pytest export (automation.recording.export):
each a literal made by ``repr()`` or ``int()``, or a name this module checked; anything
else refuses the export with ScenarioInvalid."""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Iterator
from typing import Any

from automation.errors import ScenarioInvalid
from automation.recording.exportplaces import KEPT
from automation.recording.scenario import PLACEHOLDER, SECRET_ENV_PREFIX, Scenario

__all__ = [
    "PARAM_ENV_PREFIX",
    "address",
    "arg",
    "holds_param",
    "ident",
    "identifier",
    "literal",
    "needed",
    "param",
    "params_shown",
    "placeholders",
    "plain",
    "query_value",
    "quote",
    "row_pattern",
    "signs_in_with",
    "text",
    "url",
    "used",
    "value",
    "whole",
]


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


def row_pattern(row: str, params: dict[str, dict[str, Any]], own: str = "") -> str:
    """A regular expression (as Python source) for the text of the element's row (each
    cell's on a line of its own: rows_showing): its first words, apart by any space
    (cells' texts may touch: "#1002Grace Hopper"); a parameter carried into it is read
    from the environment and escaped at run time, whole, and where the row began (or
    ended) with it, beginning (ending) its cell: the row of "Ann" is not Jo Ann's (nor
    Ann Lee's), as replay tells it.  ``own``: the element's name, which replay reads
    apart from its row (an "Edit" link after the name, in its cell)."""
    if not isinstance(row, str):
        raise ScenarioInvalid(f"row must be text, not {type(row).__name__}")
    pieces: list[tuple[str, str]] = []  # ("word", escaped) or ("param", its expression)
    last = 0
    for match in _IDENTITY_PARAM.finditer(row):
        if match.group(1) not in params:
            continue
        pieces += [("word", re.escape(w)) for w in row[last : match.start()].split()]
        # (whole: the row of "Ann Lee" is not Ann Leeds's, nor "Ann"'s JoAnn's)
        escaped = f"re.escape({param(match.group(1), params)})"
        first = CELL_BEGINS if not pieces else r"(?<!\w)"
        after = r"(?!\w)"
        if not row[match.end() :].split() and len(row) < KEPT:  # (not cut short)
            named = own.strip() and not _IDENTITY_PARAM.search(own)
            mine = rf"(?!{re.escape(own)}(?!\w))" if named else ""
            after = rf"(?![^\S\n]*{mine}\w)"  # no word after it on its line, but its own
        pieces.append(("param", rf"r'{first}' + {escaped} + r'{after}'"))
        last = match.end()
    pieces = (pieces + [("word", re.escape(w)) for w in row[last:].split()])[:8]
    # A row that begins with a number begins with all of it: invoice 100's row is not
    # invoice 1100's (a letter may touch it: cells' texts do).
    if pieces and pieces[0][0] == "word" and pieces[0][1][:1].isdigit():
        pieces[0] = ("word", NOT_AFTER_A_DIGIT + pieces[0][1])
    # One that begins with a word begins its cell with it: "New Globex" of York is not
    # Globex's row, as replay tells it (the cell that told it apart gained a word).
    elif pieces and pieces[0][0] == "word" and re.match(r"\w", pieces[0][1]):
        pieces[0] = ("word", CELL_BEGINS + pieces[0][1])
    if all(kind == "word" for kind, _ in pieces):
        return text(r"\s*".join(p for _, p in pieces), "row")
    source = [p if kind == "param" else text(p, "row") for kind, p in pieces]
    return (" + " + text(r"\s*", "row") + " + ").join(source)


NOT_AFTER_A_DIGIT = r"(?<![0-9])"
CELL_BEGINS = r"(?<!\w[^\S\n]*)"  # no word before it on its line (in its cell)


def holds_param(shown: str, params: dict[str, dict[str, Any]]) -> bool:
    """Whether a text of an identity holds a declared parameter's ``${name}``."""
    return any(m.group(1) in params for m in _IDENTITY_PARAM.finditer(shown))


def params_shown(shown: str, params: dict[str, dict[str, Any]]) -> list[str]:
    """The values (Python expressions) of the declared parameters a text of an identity
    holds, each once."""
    names = dict.fromkeys(m.group(1) for m in _IDENTITY_PARAM.finditer(shown))
    return [param(name, params) for name in names if name in params]


def number_pattern(number: str) -> str:
    """A regular expression (as Python source) for a number standing whole in a row's
    text: 1002 in "Order 1002", not in "Order 10021" nor "Order 11002"."""
    return text(rf"{NOT_AFTER_A_DIGIT}{re.escape(number)}(?![0-9])", "row")


def ident(shown: Any, params: dict[str, dict[str, Any]], what: str) -> str:
    """A text of an identity as a Python expression: a literal, with the declared
    parameters carried into it read from the environment (any other ``${…}`` is the
    page's own text)."""
    if not isinstance(shown, str):
        raise ScenarioInvalid(f"{what} must be text, not {type(shown).__name__}")
    parts: list[str] = []
    last = 0
    for match in _IDENTITY_PARAM.finditer(shown):
        if match.group(1) not in params:
            continue
        if match.start() > last:
            parts.append(text(shown[last : match.start()], what))
        parts.append(param(match.group(1), params))
        last = match.end()
    if last < len(shown) or not parts:
        parts.append(text(shown[last:], what))
    return " + ".join(parts)


_IDENTITY_PARAM = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


# A parameter's environment variable in an exported file: its own, never one the machine
# has for something else (LANG, HOME, BASE_URL).
PARAM_ENV_PREFIX = "TABWRIGHT_PARAM_"


def param(name: str, params: dict[str, dict[str, Any]]) -> str:
    """A parameter's value at run time: its environment variable (a called scenario's:
    the value its caller gives), else its default."""
    if not _NAME.fullmatch(name):
        raise ScenarioInvalid(f"{name!r} is not a parameter name")
    default = params.get(name, {}).get("default")
    if getattr(params, "base", None) is not None:
        if default is None:
            return f"params[{text(name, 'a parameter')}]"
        return f"params.get({text(name, 'a parameter')}, {text(str(default), 'a default')})"
    if default is None:
        return f"os.environ[{PARAM_ENV_PREFIX + name!r}]"
    return f"os.environ.get({PARAM_ENV_PREFIX + name!r}, {text(str(default), 'a default')})"


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # fullmatch: "$" would let a name end in "\n"


def needed(scenario: Scenario, login: Scenario | None) -> list[str]:
    """The test's first line when it reads a parameter with no default from the
    environment (its own, or one its login scenario signs in with): each has a value, or
    the test fails before its first step naming each that has none, as a replay checks
    its parameters before its first step (never a KeyError, nor a sign-in that can't
    run).  A name both have is the scenario's: its default counts."""
    read = {name: scenario.params for name in used(scenario)}
    if login is not None:
        read = {**{name: login.params for name in used(login)}, **read}
    names = sorted(name for name, params in read.items()
                   if (params.get(name) or {}).get("default") is None)  # fmt: skip
    for name in names:
        param(name, {})  # a parameter's name, or ScenarioInvalid
    if not names:
        return []
    return [f"    check_params([{', '.join(text(name, 'a parameter') for name in names)}])"]


def signs_in_with(scenario: Scenario, login: Scenario) -> dict[str, dict[str, Any]]:
    """The parameters ``login`` signs in with in ``scenario``'s test: its own, but for a
    name ``scenario`` has too, whose value (given, or its default) is the one used, as a
    replay's sign-in again does (:mod:`automation.recording.takes`)."""
    own = set(scenario.placeholders()[0]) | set(scenario.params)
    return {**login.params, **{name: dict(scenario.params.get(name) or {})
                               for name in used(login) if name in own}}  # fmt: skip


def used(scenario: Scenario) -> list[str]:
    """The parameters ``scenario``'s steps read, its declared ones first, in order."""
    found = scenario.placeholders()[0]
    return [name for name in scenario.params if name in found] + sorted(
        found - set(scenario.params)
    )


def url(recorded: str, params: dict[str, dict[str, Any]]) -> str:
    """``url(…)`` of a recorded address (the expression ``recorded``): moved from where
    its scenario was recorded (a called scenario's own base URL) to BASE_URL."""
    base = getattr(params, "base", None)
    return f"url({recorded})" if base is None else f"url({recorded}, {text(base, 'base_url')})"


def address(recorded: str, params: dict[str, dict[str, Any]]) -> str:
    """A recorded address as an expression: each ``${name}`` of a parameter its value
    URL-encoded at run time, as replay fills it (automation.recording.params.fill_url)."""
    text(recorded, "an address")  # text, or ScenarioInvalid
    pieces = re.split(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", recorded)
    parts = [
        f"quote_plus({param(piece, params)})" if i % 2 and piece in params
        else text("${" + piece + "}" if i % 2 else piece, "an address")
        for i, piece in enumerate(pieces)
    ]  # fmt: skip
    return " + ".join(part for part in parts if part != "''") or "''"


def plain(given: Any, params: dict[str, dict[str, Any]]) -> str:
    """A check's arg as Python source: text through :func:`value`, a list of them."""
    if isinstance(given, list):
        return "[" + ", ".join(plain(v, params) for v in given) + "]"
    return value(given, params)


def query_value(recorded: Any, params: dict[str, dict[str, Any]]) -> str:
    """:func:`value` of an address a step goes to or checks (a ``navigate``'s, a URL
    check's): a parameter's value past its ``?`` URL-encoded at run time, as replay fills
    it (automation.recording.params.fill_query)."""
    cut = recorded.find("?") if isinstance(recorded, str) else -1
    return value(recorded, params, encoded_after=cut if cut >= 0 else None)


def value(
    recorded: Any, params: dict[str, dict[str, Any]], *, encoded_after: int | None = None
) -> str:
    """A Python expression for a recorded value: a literal, or its placeholders read from
    the environment at run time (a parameter's URL-encoded past ``encoded_after``)."""
    if not isinstance(recorded, str):
        return literal(recorded)
    parts: list[str] = []
    last = 0
    for match in PLACEHOLDER.finditer(recorded):
        if match.start() > last:
            parts.append(repr(recorded[last : match.start()]))
        if match.group(0) == "$${":
            parts.append(repr("${"))
        elif match.group(1) == "TOTP":
            seed = f"os.environ[{SECRET_ENV_PREFIX + match.group(2)!r}]"
            parts.append(f"pyotp.TOTP({seed}).now()")
        elif match.group(1):
            parts.append(f"os.environ[{SECRET_ENV_PREFIX + match.group(2)!r}]")
        elif encoded_after is not None and match.start() > encoded_after:
            parts.append(f"quote_plus({param(match.group(2), params)})")
        else:
            parts.append(param(match.group(2), params))
        last = match.end()
    if last < len(recorded) or not parts:
        parts.append(repr(recorded[last:]))
    return " + ".join(parts)


def placeholders(value: Any) -> Iterator[re.Match[str]]:
    if isinstance(value, str):
        yield from PLACEHOLDER.finditer(value)
    elif isinstance(value, list | dict):
        for item in value.values() if isinstance(value, dict) else value:
            yield from placeholders(item)
