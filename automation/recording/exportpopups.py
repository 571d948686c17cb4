"""A scenario's ``tabs`` steps in a pytest export (automation.recording.export), followed as
replay follows them (:mod:`automation.recording.replaytabs`).

The popups each page opens are kept in order, the test's own page's from its start (the
``page`` fixture's listener); a move into a popup takes the first one its page opened and
no move took yet, waited for within ``TIMEOUT_MS``, as replay takes it (so the step that
opened it needs not be the one just before: the steps between act in the opener).  The
popup's page is then the ``page`` the steps after it use, with the same listeners as the
first page (dialogs answered as armed, writes refused by the server told), and its own
popups kept too.  A move back to
the opener waits, when the popup closed itself when recorded (its Save), for it to close,
and, when it changed its opener's form then, for the form to change (the select holds the
new record): either that does not come fails the test, in replay's words.

The export writes the code below the marker into the file as it is; the form's rule
(``FORM_STATE_JS``) is replay's, written in by the export.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from playwright.sync_api import Error as PlaywrightError

if TYPE_CHECKING:
    from playwright.sync_api import Page

__all__ = ["WINDOWS", "Windows"]

FORM_STATE_JS = ""  # the export writes replay's own above this code


# The file's own listeners (automation.recording.exporthead), put on a popup too.
def listen(page: Page) -> None:
    pass


# -- written into an exported pytest file as it is
class Windows:
    """The pages the test acts in: its own, and the popups its steps entered."""

    def __init__(self) -> None:
        self.opened: dict[Page, list[Page]] = {}  # the popups each page opened, in order
        self.taken: set[Page] = set()
        self.entered: list[tuple[Page, str]] = []  # (opener, what its forms held)

    def watch(self, page: Page) -> None:
        """Keep the popups ``page`` opens, in order (the test's page: from its start)."""
        self.opened.setdefault(page, [])
        page.on("popup", lambda popup: self.opened[page].append(popup))

    def into(self, opener: Page) -> Page:
        """A move into the popup the steps before opened (the first one not entered yet,
        by order of opening, as replay takes it), waited for: its page, listened to as
        the first page is."""
        if opener not in self.opened:
            self.watch(opener)  # a popup it opens from now on
        popup = self._next(opener)
        if popup is None:
            try:
                opener.wait_for_event("popup", timeout=float(os.environ.get("TIMEOUT_MS", "15000")))
            except PlaywrightError:
                pass
            popup = self._next(opener)
        assert popup is not None, (
            "no popup window opened: the step before it opened one when recorded"
        )
        self.taken.add(popup)
        listen(popup)
        try:
            popup.wait_for_load_state()
        except PlaywrightError:
            pass  # it closed at once: the next step says so
        self.entered.append((opener, opener.evaluate(FORM_STATE_JS)))
        self.watch(popup)
        return popup

    def _next(self, opener: Page) -> Page | None:
        return next((p for p in self.opened.get(opener, []) if p not in self.taken), None)

    def back(self, popup: Page, closed: bool = False, changed: bool = False) -> Page:
        """A move back to the opener: when recorded, the popup closed itself (``closed``),
        having changed the opener's form (``changed``)."""
        assert self.entered, "it goes back from a popup, but the test is in no popup"
        opener, state = self.entered.pop()
        timeout_ms = float(os.environ.get("TIMEOUT_MS", "15000"))
        if closed and not popup.is_closed():
            try:
                popup.wait_for_event("close", timeout=timeout_ms)
            except PlaywrightError:
                pass
            assert popup.is_closed(), (
                f"the popup did not close ({popup.url}): when recorded, the step before "
                "closed it (its Save went through)"
            )
        if changed:
            now = state
            for _ in range(int(timeout_ms / 50)):
                now = opener.evaluate(FORM_STATE_JS)
                if now != state:
                    break
                opener.wait_for_timeout(50)
            assert now != state, (
                "the popup closed, but its opener's form did not change: what it set there "
                "when recorded (a new record in a select) is not there"
            )
        opener.bring_to_front()
        return opener

    def first(self, page: Page) -> Page:
        """A move back to the test's own page."""
        while len(self.entered) > 1:
            self.entered.pop()
        return self.back(page)


WINDOWS = Windows()
