"""A heal holds no secret, nor what stands in for one: the element as replay found it,
where the page now shows a secret's value.

An app may show a secret a run types: the account it signed in as ("Signed in as
ada@corp.test" where that is ``${SECRET:USER}``), a token just saved ("Delete token
sk-…"), a row listing it.  Replay's results and events have every secret redacted (its
placeholder, or a mask for a password typed as it is), but an identity is what the next
replay looks for: one named "Signed in as ${SECRET:USER}" or "… ••••" is one no page shows,
and a scenario healed so would be worse after each heal.  A secret is never carried into
an identity (:mod:`automation.recording.params`: only declared parameters are
placeholders there), so :func:`heal_without_secrets` writes the heal without it:

- each text of the element (its name, label, text, row, id, where it leads…) that holds a
  secret keeps what the stored identity had there when that held none, else is left out
  (empty: replay does not compare a text it does not have);
- a selector, a look-alike's name or a word of its row that holds one is dropped; a test
  id that does keeps the stored one, or is dropped.

What changed (``changes``, shown to a person) stays as it was, redacted.  When the identity
so written says nothing the stored one did not, nothing is healed: the page showing the
secret is how the element already is known, and the next replay heals nothing either.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from automation.browser.identity import ElementIdentity
from automation.recording.resolved import REDACTED
from automation.secrets import SECRET_RE, Secrets

__all__ = ["heal_without_secrets", "holds_secret", "without_secrets"]

_TUPLES = ("selectors", "alike", "row_words")  # texts of which each one may go


def holds_secret(text: str, secrets: Secrets) -> bool:
    """Whether ``text`` holds a secret's value, its placeholder or a mask."""
    # (The run's MASK for a password typed as it is holds REDACTED.)
    return secrets.is_secret(text) or REDACTED in text or SECRET_RE.search(text) is not None


def without_secrets(
    stored: ElementIdentity | None, found: ElementIdentity, secrets: Secrets
) -> ElementIdentity:
    """``found`` with no text that holds a secret: where it has one, what ``stored`` had
    there when that held none, else nothing (its variants likewise)."""
    before = stored.plain() if stored is not None else ElementIdentity()

    def one(each: ElementIdentity) -> ElementIdentity:
        changes: dict[str, Any] = {}
        for f in fields(each):
            value = getattr(each, f.name)
            if isinstance(value, str) and holds_secret(value, secrets):
                kept = getattr(before, f.name)
                changes[f.name] = "" if holds_secret(kept, secrets) else kept
            elif f.name in _TUPLES:
                free = tuple(t for t in value if not holds_secret(t, secrets))
                if free != value:
                    changes[f.name] = free
        tests = {key: value for key, value in each.test_ids.items()
                 if not holds_secret(value, secrets)}  # fmt: skip
        for key in each.test_ids.keys() - tests.keys():
            kept = before.test_ids.get(key, "")
            if kept and not holds_secret(kept, secrets):
                tests[key] = kept
        if tests != each.test_ids:
            changes["test_ids"] = tests
        return replace(each, **changes) if changes else each

    return replace(one(found.plain()), variants=tuple(one(v) for v in found.variants))


def heal_without_secrets(
    stored: ElementIdentity | None, healed: dict[str, Any] | None, heal: str, secrets: Secrets
) -> tuple[dict[str, Any] | None, str]:
    """A step's heal (``healed``, the identity to write; ``heal``, how sure) as it may be
    written: without a secret, and none (``None, ""``) when what is left says nothing
    ``stored`` did not."""
    if healed is None:
        return None, heal
    free = without_secrets(stored, ElementIdentity.from_dict(healed), secrets)
    if stored is not None and stored.says_all_of(free):
        return None, ""
    return free.to_dict(), heal
