"""JavaScript dialogs in a pytest export (automation.recording.export), answered as replay
answers them (:class:`automation.browser.dialogs.DialogGuard`).

With no listener, Playwright dismisses every dialog by itself, and the test goes on: a
``confirm("Delete all orders?")`` the app now asks before it saves was dismissed, nothing
was saved, and the file passed where replay fails the step.  So the file has one listener
on its page (the header's fixture puts :meth:`Dialogs.answer` there), which answers a
dialog as the scenario's ``dialog`` step armed it (``DIALOGS.arm``: accepted, with the
prompt's text, or dismissed; for as many dialogs as the step says, in a later step too;
of the kind it names only, when it names one), and dismisses any other, keeping it: the
step it came in (or a later one, when it came as the page went on by itself) then fails,
naming it (``DIALOGS.none_unexpected``), in replay's words
(:func:`automation.browser.dialogs.unexpected_words`, written in as it is).  A
``beforeunload`` nobody armed is accepted and not kept: leaving the page was asked for.
Other pages of the browser (a popup) keep Playwright's own answers, as replay, which
acts in its tab only, leaves them.

The export writes the code below the marker into the file as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from playwright.sync_api import Error as PlaywrightError

from automation.browser.dialogs import unexpected_words

if TYPE_CHECKING:
    from playwright.sync_api import Dialog

__all__ = ["DIALOGS", "Dialogs"]


# -- written into an exported pytest file as it is
class Dialogs:
    """The page's dialogs, answered as Tabwright's replay answers them."""

    def __init__(self) -> None:
        self.accept, self.times = False, 0  # as the latest dialog step armed
        self.prompt_text: str | None = None
        self.kind: str | None = None  # the kind of dialog armed for (None: any)
        self.unexpected: list[tuple[str, str]] = []  # (type, message): nobody armed them

    def arm(
        self, accept: bool, prompt_text: str | None = None, times: int = 1, kind: str | None = None
    ) -> None:
        """A ``dialog`` step: the next ``times`` dialogs (of ``kind``, when given) get this
        answer (an earlier arming is replaced)."""
        self.accept, self.prompt_text, self.times = accept, prompt_text, times
        self.kind = kind

    def answer(self, dialog: Dialog) -> None:
        """The page's listener: as armed (when of the kind armed for), else dismissed and
        kept (a ``beforeunload`` accepted); a prompt accepted with no text keeps its
        prefilled value."""
        kind, text = dialog.type, None
        if self.times > 0 and self.kind in (None, kind):
            self.times -= 1
            accept, text = self.accept, self.prompt_text
        else:
            accept = kind == "beforeunload"
            if not accept:
                self.unexpected.append((kind, dialog.message[:500]))
        if accept and kind == "prompt" and text is None:
            text = dialog.default_value
        try:
            if accept:
                dialog.accept(*([text] if kind == "prompt" else []))
            else:
                dialog.dismiss()
        except PlaywrightError:
            pass  # the page went away, or its dialog with it

    def none_unexpected(self, what: str) -> None:
        """Fails, naming them, when dialogs nobody armed came since the last call."""
        found, self.unexpected = self.unexpected, []
        assert not found, unexpected_words(what, found)


DIALOGS = Dialogs()
