"""Whether a page shows a sign-in form: the one judgement a replay acts on.

A replay whose step failed on a page that asks to sign in says so (its run's sign-in
profile expired, or it had none), and one with a login scenario signs in again before a
step whose element is not on such a page.  A password field alone does not make a
sign-in form: a sign-up form has one (or two, with a confirmation), so has a page that
changes a password.  The judgement follows what browsers' password managers take for a
sign-in (signin.js, one evaluation on the page's main document, its open shadow roots
included, bounded by :data:`MAX_ELEMENTS`):

- a visible one-time code field (``autocomplete="one-time-code"``) is a sign-in step;
- otherwise a form (the formless fields of the page count as one form) is a sign-in form
  when it has exactly one visible password field, not marked
  ``autocomplete="new-password"``, beside at most a user name and one more field (a
  tenant, a language), none of them asking for a person's details (``autocomplete``
  ``name``, ``tel``, an address, a birthday…), and no submit button that signs up,
  registers, creates, changes, resets or saves (unless another one signs in).

Search boxes are left out.  Fields in iframes are not looked at.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.async_api import Page

from automation.budget import Budget

__all__ = ["MAX_ELEMENTS", "SIGN_IN_JS", "SignInForm", "sign_in_form"]

SIGN_IN_JS = Path(__file__).with_name("signin.js").read_text(encoding="utf-8")
MAX_ELEMENTS = 50_000  # elements walked at most (fields past them are not seen)


@dataclass(frozen=True)
class SignInForm:
    """Whether the page shows a sign-in form, and why (or why not) in a few words."""

    shown: bool
    why: str


async def sign_in_form(page: Page, budget: Budget) -> SignInForm:
    """Whether ``page`` shows a sign-in form now: one round trip, within ``budget``.
    Raises what the page's evaluation raises (a Playwright error, BudgetExceeded)."""
    found: Any = await budget.run(page.evaluate(SIGN_IN_JS, MAX_ELEMENTS))
    return SignInForm(bool(found["shown"]), str(found["why"]))
