"""Secrets in an agent run: ``${SECRET:NAME}`` placeholders, filled only when an action runs.

The task and the person's replies may name a secret as ``${SECRET:NAME}``; its value is the
environment variable ``TABWRIGHT_SECRET_NAME`` (a placeholder can't reach any other
variable).  The model writes the placeholder into its action; :meth:`Secrets.fill` puts the
value in just before the browser gets the args, and everything else (the model's prompt,
events, stored steps) keeps the placeholder.  :meth:`Secrets.redact` takes every value that
was filled, and every password typed literally, back out of any text shown or sent on
(results, errors, snapshots, where a page echoes what was typed).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from automation.errors import ActionInvalid

__all__ = ["MASK", "SECRET_ENV_PREFIX", "SECRET_RE", "Secrets"]

SECRET_ENV_PREFIX = "TABWRIGHT_SECRET_"
SECRET_RE = re.compile(r"\$\{SECRET:([A-Za-z_][A-Za-z0-9_]*)\}")
MASK = "••••••••"


class Secrets:
    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = os.environ if env is None else env
        self._shown: dict[str, str] = {}  # value -> what stands in for it in text

    def __repr__(self) -> str:
        return f"<Secrets {len(self._shown)} in use>"

    def fill(self, value: Any) -> Any:
        """``value`` (args: a dict, list or string) with each placeholder replaced by its
        secret; ActionInvalid names a placeholder whose variable is not set."""
        if isinstance(value, str):
            return SECRET_RE.sub(self._one, value)
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        return value

    def _one(self, match: re.Match[str]) -> str:
        name = match.group(1)
        secret = self._env.get(SECRET_ENV_PREFIX + name)
        if secret is None:
            raise ActionInvalid(
                f"no secret {name}: the environment variable {SECRET_ENV_PREFIX}{name} is not set",
                hint="ask the person to set it, or write NEED_HELP",
            )
        if secret:
            self._shown[secret] = match.group(0)
        return secret

    def hide(self, value: str) -> None:
        """Mask ``value`` (a password the model typed literally) wherever it shows later."""
        if value and value not in self._shown:
            self._shown[value] = MASK

    def redact(self, text: str) -> str:
        """``text`` with every secret value used so far replaced by its placeholder."""
        for value in sorted(self._shown, key=len, reverse=True):
            text = text.replace(value, self._shown[value])
        return text

    def redact_any(self, value: Any) -> Any:
        """:meth:`redact` through dicts, lists and strings."""
        if isinstance(value, str):
            return self.redact(value) if self._shown else value
        if isinstance(value, list):
            return [self.redact_any(v) for v in value]
        if isinstance(value, dict):
            return {k: self.redact_any(v) for k, v in value.items()}
        return value
