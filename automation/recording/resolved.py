"""The values one replay fills into a scenario's placeholders (:meth:`Scenario.resolve
<automation.recording.scenario.Scenario.resolve>` checks and gathers them): its
parameters', its secrets' (from the environment) and the one-time codes typed."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from automation.browser.identity import ElementIdentity
from automation.recording import params as carried
from automation.recording.placeholders import PLACEHOLDER
from automation.secrets import totp_code

if TYPE_CHECKING:
    from automation.recording.scenario import ScenarioStep

__all__ = ["REDACTED", "Resolved"]

REDACTED = "•••"  # what a replay's texts show of a secret's value (Resolved.redact)


@dataclass(frozen=True)
class Resolved:
    """Placeholder values for one replay.  ``fill`` gives the args a step runs with (a
    ``${TOTP:NAME}`` its code of that moment, passed to ``on_code`` first); ``redact``
    takes secret values, and the codes typed, out of any text that is reported."""

    params: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict, repr=False)
    on_code: Callable[[str, str, str], None] | None = field(default=None, repr=False)
    codes: list[str] = field(default_factory=list, repr=False)
    # The values the scenario types as they are (a search's): a row or card that showed
    # one when recorded shows it at replay too (params.typed_shown).
    typed: tuple[str, ...] = ()

    def fill(self, args: dict[str, Any], action: str = "") -> dict[str, Any]:
        """``args`` as ``action``'s step runs with them: in an address (a ``navigate``'s, a
        wait's or a URL check's ``url``), a parameter's value past the ``?`` URL-encoded
        (:func:`~automation.recording.params.fill_query`)."""
        filled = {k: self._value(v) for k, v in args.items()}
        url = args.get("url")
        if isinstance(url, str) and carried.holds_address(action, args):
            filled["url"] = self._value(carried.fill_query(url, self.params))
        return filled

    def identity(self, identity: ElementIdentity | None) -> ElementIdentity | None:
        """The identity with its parameters' values in (never a secret's), and what it
        must show of them and of the values the scenario types."""
        if identity is None:
            return None
        return carried.typed_shown(carried.fill(identity, self.params), self.typed)

    def target(self, step: ScenarioStep) -> ElementIdentity | None:
        """How replay finds ``step``'s element with these values (its identity's, or its
        role and name's, when a file gives only those)."""
        return self.identity(step.target())

    def _value(self, value: Any) -> Any:
        if isinstance(value, str):
            return PLACEHOLDER.sub(self._one, value)
        if isinstance(value, list):
            return [self._value(v) for v in value]
        return value

    def _one(self, match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        if match.group(1) == "TOTP":
            name = match.group(2)
            code = totp_code(self.secrets[name], name)
            self.codes.append(code)
            if self.on_code is not None:
                self.on_code(name, self.secrets[name], code)
            return code
        if match.group(1):
            return self.secrets[match.group(2)]
        return self.params[match.group(2)]

    def redact(self, text: str) -> str:
        for value in sorted([*self.secrets.values(), *self.codes], key=len, reverse=True):
            if value:
                text = text.replace(value, REDACTED)
        return text
