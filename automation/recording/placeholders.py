"""The ``${…}`` of a scenario's values: ``${name}`` a parameter, ``${SECRET:NAME}`` and
``${TOTP:NAME}`` a secret, ``$${`` a literal ``${`` (:mod:`automation.recording.scenario`).

A typed value made a secret must end up nowhere else in the scenario: :func:`hide` writes
the secret wherever a text types the value (what is typed stays the same), and
:func:`spells` tells a text that still spells it out (a check, an address, an element's
name), where no secret can stand.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "PARAM",
    "PLACEHOLDER",
    "hide",
    "literal",
    "map_texts",
    "spells",
    "texts_in",
    "unliteral",
]

# ${name}, ${SECRET:NAME}, ${TOTP:NAME}, or $${ for a literal "${".
PLACEHOLDER = re.compile(r"\$\$\{|\$\{(?:(SECRET|TOTP):)?([A-Za-z_][A-Za-z0-9_]*)\}")
# One parameter's ${name}: its name.
PARAM = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def literal(value: Any) -> Any:
    """``value`` (a text, or args: lists and objects of texts) written so that a replay
    types or looks for each text as it is: each ``${`` as ``$${``, else it would read as
    a parameter or a secret."""
    return map_texts(value, lambda text: text.replace("${", "$${"))


def map_texts(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` with ``change`` made to each text in it (in lists and objects too)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [map_texts(item, change) for item in value]
    if isinstance(value, dict):
        return {key: map_texts(item, change) for key, item in value.items()}
    return value


def unliteral(text: str) -> str:
    """What a text written by :func:`literal` stands for: each ``$${`` as ``${``."""
    return PLACEHOLDER.sub(lambda m: "${" if m.group(0) == "$${" else m.group(0), text)


def texts_in(value: Any) -> list[str]:
    """Every text in ``value`` (in lists and objects too)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in texts_in(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in texts_in(v)]
    return []


def hide(text: str, value: str, secret: str) -> str:
    """``text`` (as the format writes it) with ``secret`` wherever it types ``value``; its
    own placeholders stay as they are."""
    out, at = [], 0
    for match in [*(m for m in PLACEHOLDER.finditer(text) if m.group(0) != "$${"), None]:
        plain = unliteral(text[at : match.start() if match else len(text)])
        out.append(secret.join(literal(part) for part in plain.split(value)))
        if match:
            out.append(match.group(0))
            at = match.end()
    return "".join(out)


def spells(data: Any, value: str) -> bool:
    """Whether a text in ``data`` spells ``value`` out (as it is, or written literally)."""
    held = {value, literal(value)}
    return any(each in text for text in texts_in(data) for each in held)
