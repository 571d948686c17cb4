"""A write answered with the sign-in page, in a pytest export (automation.recording.export):
the step fails as replay fails it (:func:`automation.recording.relogin.sent_to_sign_in`):
the session ended, and nothing it sent was kept, whatever a later check finds there.

The export writes the sign-in judgement's script (:data:`automation.browser.signin.
SIGN_IN_JS`, as it is), its bound and the words of a control that signs out into the file
as constants, then the code below the marker, as it is.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from playwright.sync_api import Error as PlaywrightError

from automation.browser.signin import MAX_ELEMENTS, SIGN_IN_JS
from automation.recording.relogin import SIGNS_OUT

if TYPE_CHECKING:
    from playwright.sync_api import Page

__all__ = ["asks_sign_in", "constants", "sent_to_sign_in"]

WROTE: list[str] = []  # (the exported file's: every write the page sent, the latest last)


def constants() -> str:
    """The constants the code below the marker reads, as Python source."""
    pattern = str.__repr__(SIGNS_OUT.pattern)
    assert SIGNS_OUT.flags & re.I
    return (
        f"\n\n# Tabwright's judgement of a sign-in page (automation/browser/signin.js)\n"
        f"SIGN_IN_JS = {str.__repr__(SIGN_IN_JS)}\nSIGN_IN_MAX_ELEMENTS = {int(MAX_ELEMENTS)}\n"
        f"SIGNS_OUT = re.compile({pattern}, re.I)  # a control that signs out"
    )


SIGN_IN_MAX_ELEMENTS = MAX_ELEMENTS


# -- written into an exported pytest file as it is
def asks_sign_in(page: Page) -> bool:
    """Whether the page shows a sign-in form now (not a sign-up's, nor a change of
    password's), as Tabwright's replay judges it."""
    try:
        return bool(page.evaluate(SIGN_IN_JS, SIGN_IN_MAX_ELEMENTS)["shown"])
    except PlaywrightError:
        return False


def sent_to_sign_in(page: Page, sent: int, asked: bool, name: str) -> None:
    """As Tabwright's replay judges a step that sends a form (a click, a key) on the
    control named ``name`` (the page's writes were ``sent`` before it; ``asked``: the page
    asked to sign in before it, so the step signs in): its write answered with the
    sign-in page fails it; nothing it sent was kept (the session ended).  Not a control
    that signs out, nor a page that closed itself (a popup's Save: where the steps go on
    says whether it should have)."""
    if asked or SIGNS_OUT.search(name):
        return
    try:
        page.wait_for_load_state()
    except PlaywrightError:
        if page.is_closed():
            return
        raise
    if len(WROTE) == sent:
        return
    assert not asks_sign_in(page), (
        "it sent what it did, and the server answered with its sign-in page: nothing it "
        "sent was kept (the session ended)"
    )
