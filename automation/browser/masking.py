"""Keeping secrets out of pictures: screenshots and the live view.

A field about to be filled with a secret (or a password the model typed) is marked first:
an attribute, inline styles that draw its text as nothing (``-webkit-text-security`` with
a transparent colour and caret), and spellcheck off: a misspelt word's underline would
show where the value's words are, and the browser's spelling service would read it. The
marks stay on the element while it lives, so the live view's screencast never draws the
value, not even when a person types more into the field. Screenshots also cover every
marked field with Playwright's ``mask`` (a grey box in place of the element), in every
frame of the page, and draw every password field with its text in no colour (a stylesheet
applied for the picture only, into frames and shadow roots): a password a person typed or
a page filled in shows neither its value nor its length, and an empty one looks as the
page draws it, not as a box.

Which values are secret is the run's business (:class:`automation.secrets.Secrets`): it
sets :attr:`Tab.is_secret`; the browser layer only asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from playwright.async_api import ElementHandle, Locator
from playwright.async_api import Error as PlaywrightError

from automation.budget import Budget
from automation.errors import ActionFailed

if TYPE_CHECKING:
    from automation.browser.tab import Tab

__all__ = [
    "MASK_ATTR",
    "MASK_COLOR",
    "MASK_SELECTOR",
    "PICTURE_CSS",
    "mask_field",
    "mask_locators",
]

MASK_ATTR = "data-tabwright-secret"
MASK_SELECTOR = f"[{MASK_ATTR}]"
MASK_COLOR = "#dee2e6"  # a quiet grey: the box says "hidden here" without shouting
# A placeholder still shows (an empty field has nothing to hide).
PICTURE_CSS = (
    "input[type=password]:not(:placeholder-shown) { -webkit-text-security: disc !important;"
    " color: transparent !important; -webkit-text-fill-color: transparent !important;"
    " caret-color: transparent !important; text-shadow: none !important; }"
)

# Inline and "important": an app's stylesheet can't undo it.  The caret too: its place
# would tell the length, and its blinking would make frames differ.
_MARK_JS = """(el) => {
  el.setAttribute("data-tabwright-secret", "");
  el.spellcheck = false;
  for (const [name, value] of [["-webkit-text-security", "disc"], ["color", "transparent"],
      ["caret-color", "transparent"], ["text-shadow", "none"],
      ["-webkit-text-fill-color", "transparent"]]) {
    el.style.setProperty(name, value, "important");
  }
}"""


async def mask_field(tab: Tab, handle: ElementHandle, value: str, budget: Budget) -> None:
    """Mark the field ``handle`` before ``value`` is typed into it, when the run says the
    value is secret.  A field that can't be marked is not filled: the secret would show."""
    if tab.is_secret is None or not tab.is_secret(value):
        return
    try:
        await budget.run(handle.evaluate(_MARK_JS))
    except PlaywrightError as exc:
        raise ActionFailed(
            f"the field could not be masked before a secret was typed: {exc.message}"
        ) from None


def mask_locators(tab: Tab) -> list[Locator]:
    """What a screenshot of the tab covers with a box: the marked fields, in every frame."""
    return [frame.locator(MASK_SELECTOR) for frame in tab.page.frames]
