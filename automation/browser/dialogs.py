"""JavaScript dialogs (alert, confirm, prompt, beforeunload), handled on purpose or not at all.

A dialog blocks the page's JavaScript until someone answers it, so leaving one open freezes
every later action.  :class:`DialogGuard` answers each dialog at once: as armed, when the
caller said beforehand what the next dialog should get (``arm("accept", prompt_text=...)``),
otherwise by dismissing it and keeping it as *unexpected*, so the action that caused it can
report it (:meth:`DialogGuard.raise_if_unexpected`) instead of carrying on as if a "Delete
order?" question had never been asked.  An arming may name the kind of dialog it answers
(``kind="confirm"``; a scenario's dialog step names the kind its run answered): a dialog of
another kind is then unexpected, and the arming waits for its own.  Else an
``alert("Order 12 can't be deleted")`` where the app used to ask ``confirm("Delete order
12?")`` took the answer meant for the question, and a replay of the delete passed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any, Literal

from playwright.async_api import Dialog, Page
from playwright.async_api import Error as PlaywrightError

from automation.errors import ActionInvalid, UnexpectedDialog

__all__ = [
    "DIALOG_KINDS",
    "DialogAction",
    "DialogGuard",
    "DialogRecord",
    "check_arming",
    "unexpected_words",
]

log = logging.getLogger("automation.browser")

DialogAction = Literal["accept", "dismiss"]
DIALOG_KINDS = ("alert", "confirm", "prompt", "beforeunload")
_MAX_TIMES = 100
_MAX_MESSAGE_CHARS = 500


@dataclass(frozen=True)
class DialogRecord:
    type: str  # alert | confirm | prompt | beforeunload
    message: str
    default_value: str  # what a prompt was prefilled with
    handled: str  # "accepted" | "dismissed"
    armed: bool  # answered as armed, rather than by the guard's default
    prompt_text: str | None  # what a prompt was answered with
    url: str  # the page's url when the dialog opened
    time: float

    @property
    def unexpected(self) -> bool:
        """Nobody armed it; a beforeunload is the expected side effect of leaving a page."""
        return not self.armed and self.type != "beforeunload"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "unexpected": self.unexpected}


class DialogGuard:
    """Answers every dialog of one page at once: as armed, or dismissed and kept as unexpected."""

    def __init__(self, page: Page, *, history_size: int = 100) -> None:
        self.page = page
        self._action: DialogAction | None = None
        self._prompt_text: str | None = None
        self._times = 0
        self._kind: str | None = None  # the kind of dialog the arming answers (None: any)
        self._history: deque[DialogRecord] = deque(maxlen=history_size)
        self._unexpected: list[DialogRecord] = []
        self._answered: list[DialogRecord] = []  # answered as armed, not taken yet
        self._tasks: set[asyncio.Task[None]] = set()
        self._attached = True
        page.on("dialog", self._on_dialog)

    def detach(self) -> None:
        """Stop answering; Playwright then dismisses dialogs itself."""
        if self._attached:
            self._attached = False
            self.page.remove_listener("dialog", self._on_dialog)

    # -- arming -------------------------------------------------------------------------

    def arm(
        self,
        action: DialogAction,
        *,
        prompt_text: str | None = None,
        times: int = 1,
        kind: str | None = None,
    ) -> None:
        """Answer the next ``times`` dialogs (of ``kind`` only, when given) with
        ``action``; replaces any earlier arming."""
        check_arming(action, prompt_text, times, kind)
        self._action, self._prompt_text, self._times = action, prompt_text, times
        self._kind = kind

    def disarm(self) -> None:
        """Forget the arming: the next dialog is unexpected again."""
        self._action, self._prompt_text, self._times, self._kind = None, None, 0, None

    @property
    def armed(self) -> DialogAction | None:
        """The action the next dialog will get, or None when it would be unexpected."""
        return self._action if self._times > 0 else None

    # -- reading ------------------------------------------------------------------------

    def history(self, limit: int = 20) -> list[DialogRecord]:
        """The latest dialogs of the page, expected or not; newest last."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ActionInvalid(f"limit must be a positive whole number, not {limit!r}")
        return list(self._history)[-limit:]

    def take_answered(self) -> list[DialogRecord]:
        """The dialogs answered as armed since the last call: what a recorded step keeps
        of them (their kind makes the scenario's dialog step answer that kind only)."""
        taken, self._answered = self._answered, []
        return taken

    def take_unexpected(self) -> list[DialogRecord]:
        """The unexpected dialogs since the last call (each is reported once)."""
        taken, self._unexpected = self._unexpected, []
        return taken

    def raise_if_unexpected(self, what: str) -> None:
        """Raise UnexpectedDialog for dialogs nobody armed since the last check."""
        taken = self.take_unexpected()
        if not taken:
            return
        raise UnexpectedDialog(
            unexpected_words(what, [(r.type, r.message) for r in taken]),
            hint="arm the dialog first (accept or dismiss, with prompt_text for a prompt), "
            "then repeat the action",
        )

    # -- the listener -------------------------------------------------------------------

    def _on_dialog(self, dialog: Dialog) -> None:
        # Decide and record synchronously, so the record exists before the action that
        # opened the dialog returns; only the answer itself needs the event loop.
        try:
            record = self._decide(dialog)
        except Exception:
            log.debug("dialog not recorded", exc_info=True)
            record = None
        accept = record is not None and record.handled == "accepted"
        prompt_text = record.prompt_text if record is not None else None
        task = asyncio.ensure_future(self._answer(dialog, accept, prompt_text))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _decide(self, dialog: Dialog) -> DialogRecord:
        kind, armed = dialog.type, self.armed
        if self._kind not in (None, kind):
            armed = None  # another kind than armed for: as if none were armed
        if armed is not None:
            self._times -= 1
            accept = armed == "accept"
        else:
            # An unarmed beforeunload is accepted: it only appears because the agent (or a
            # person) asked to leave or close the page, and dismissing it would silently
            # cancel that navigation and leave the run on the old page.  Any other unarmed
            # dialog is dismissed, the safe answer to a question nobody read.
            accept = kind == "beforeunload"
        prompt_text = None
        if accept and kind == "prompt":
            # Accepting without a text keeps the prefilled value, like pressing OK.
            prompt_text = self._prompt_text if armed else None
            if prompt_text is None:
                prompt_text = dialog.default_value
        record = DialogRecord(
            type=kind,
            message=dialog.message[:_MAX_MESSAGE_CHARS],
            default_value=dialog.default_value,
            handled="accepted" if accept else "dismissed",
            armed=armed is not None,
            prompt_text=prompt_text,
            url=self.page.url,
            time=time.time(),
        )
        if self._times == 0:
            self.disarm()
        self._history.append(record)
        if record.unexpected:
            self._unexpected.append(record)
        if record.armed:
            self._answered.append(record)
        return record

    async def _answer(self, dialog: Dialog, accept: bool, prompt_text: str | None) -> None:
        try:
            if accept:
                await dialog.accept(prompt_text)
            else:
                await dialog.dismiss()
        except PlaywrightError:
            log.debug("dialog already closed (page gone or answered elsewhere)", exc_info=True)
        except Exception:
            log.warning("could not answer a %s dialog", dialog.type, exc_info=True)


def unexpected_words(what: str, found: list[tuple[str, str]]) -> str:
    """``click button 'Save': an unexpected dialog appeared and was dismissed: confirm
    'Delete all orders?'``: what ``what`` brought, each dialog (its type, its message) of
    ``found``, the first three.  (A pytest export writes this function into its file as
    it is: nothing but built-ins.)"""
    shown = "; ".join(f"{kind} {message!r}" for kind, message in found[:3])
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    subject = "an unexpected dialog" if len(found) == 1 else f"{len(found)} unexpected dialogs"
    return f"{what}: {subject} appeared and was dismissed: {shown}{more}"


def check_arming(action: str, prompt_text: object, times: object, kind: object = None) -> None:
    """ActionInvalid unless ``action`` is accept or dismiss, ``prompt_text`` a text given
    only when accepting, ``times`` a whole number from 1 to the most one arming answers,
    and ``kind``, when given, a kind of dialog."""
    if kind is not None and kind not in DIALOG_KINDS:
        raise ActionInvalid(
            f"unknown kind of dialog {kind!r}",
            hint="use " + ", ".join(DIALOG_KINDS[:-1]) + f" or {DIALOG_KINDS[-1]}",
        )
    if action not in ("accept", "dismiss"):
        raise ActionInvalid(f"unknown dialog action {action!r}", hint="use 'accept' or 'dismiss'")
    if prompt_text is not None:
        if not isinstance(prompt_text, str):
            raise ActionInvalid("prompt_text must be a text")
        if action == "dismiss":
            raise ActionInvalid(
                "prompt_text only applies when accepting",
                hint="a dismissed prompt returns null; arm 'accept' to answer it",
            )
    if isinstance(times, bool) or not isinstance(times, int) or not 1 <= times <= _MAX_TIMES:
        raise ActionInvalid(f"times must be a whole number from 1 to {_MAX_TIMES}")
