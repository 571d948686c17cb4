"""The passwords a run typed, found again in a text without being kept.

A password the run typed literally is masked in everything it stores (automation.secrets),
but the person's own words keep it: "Sign in as ada with password hunter22 and archive
order 1003" is the run's task, and its first line the name a scenario saved from the run
is offered.  So the run keeps a :class:`PasswordMark` of each: its length, a random salt
and the HMAC-SHA256 of the password under that salt, which tells a text holding the
password (:class:`TypedPasswords`) from one that doesn't, and can't be read back.

A value shorter than :data:`MIN_MARKED_CHARS` is not marked (two characters are in too
many words to tell), one shorter than :data:`SHORT_CHARS` is found only where it stands
by itself (not inside a longer word), as the run's redaction does.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from automation.errors import ScenarioInvalid
from automation.secrets import MASK, SHORT_CHARS

__all__ = ["MIN_MARKED_CHARS", "PasswordMark", "TypedPasswords", "marks_of"]

MIN_MARKED_CHARS = 3
# A password is typed into one field: anything longer is no password to look for.
MAX_MARKED_CHARS = 200


@dataclass(frozen=True)
class PasswordMark:
    """One password: its length in characters, a salt, and its HMAC under the salt."""

    chars: int
    salt: str  # hex
    digest: str  # hex

    @classmethod
    def of(cls, value: str) -> PasswordMark:
        salt = secrets.token_hex(16)
        return cls(len(value), salt, _digest(salt, value))

    def matches(self, value: str) -> bool:
        return len(value) == self.chars and hmac.compare_digest(
            _digest(self.salt, value), self.digest
        )

    def to_dict(self) -> dict[str, Any]:
        return {"chars": self.chars, "salt": self.salt, "digest": self.digest}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PasswordMark:
        """ValueError, KeyError or TypeError for a mark that can't be read."""
        mark = cls(int(data["chars"]), str(data["salt"]), str(data["digest"]))
        bytes.fromhex(mark.salt)
        return mark


def marks_of(values: Iterable[str]) -> list[PasswordMark]:
    """A mark of each value long enough to be told in a text."""
    return [
        PasswordMark.of(value)
        for value in dict.fromkeys(values)
        if MIN_MARKED_CHARS <= len(value) <= MAX_MARKED_CHARS
    ]


@dataclass(frozen=True)
class TypedPasswords:
    """The passwords a run typed, as marks: found again in a text (the person's words, a
    name for the scenario), masked there, or refused in a name."""

    marks: tuple[PasswordMark, ...] = ()

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where ``text`` holds one: (start, end) of each, in order, none overlapping
        (the longer password first where two start together)."""
        found: list[tuple[int, int]] = []
        for mark in sorted(self.marks, key=lambda m: m.chars, reverse=True):
            for start in range(len(text) - mark.chars + 1):
                end = start + mark.chars
                if any(start < e and s < end for s, e in found):
                    continue
                if mark.chars < SHORT_CHARS and not _alone(text, start, end):
                    continue
                if mark.matches(text[start:end]):
                    found.append((start, end))
        return sorted(found)

    def held_in(self, text: str) -> bool:
        return bool(self.spans(text))

    def mask(self, text: str) -> str:
        """``text`` with each of them in it shown as the run shows a password it masked."""
        out, at = [], 0
        for start, end in self.spans(text):
            out += [text[at:start], MASK]
            at = end
        return "".join([*out, text[at:]])

    def found_in(self, texts: Iterable[str]) -> list[str]:
        """The passwords themselves, as ``texts`` spell them (to keep them out of the
        steps that show them)."""
        found = (text[s:e] for text in texts for s, e in self.spans(text))
        return list(dict.fromkeys(found))

    def check_name(self, name: str) -> None:
        """ScenarioInvalid when ``name`` holds one: a scenario's name shows in its list,
        its exports and the API's answers."""
        if self.held_in(name):
            raise ScenarioInvalid(
                "the name holds a password the run typed",
                hint="write the name without it: a scenario's name shows in the list, "
                "its exports and the API's answers",
            )


def _alone(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start else ""
    after = text[end] if end < len(text) else ""
    return not (before.isalnum() or after.isalnum())


def _digest(salt: str, value: str) -> str:
    return hmac.new(bytes.fromhex(salt), value.encode("utf-8"), hashlib.sha256).hexdigest()
