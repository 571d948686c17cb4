"""What a person looking at the page could see: one rule for every reader of the page.

An element is seen when it is drawn (no ``display: none``, ``visibility: hidden`` nor
``opacity: 0`` on it or an ancestor, and a box of its own), where scrolling can bring it
into view (below the fold is seen; ``left: -9999px``, past the document's top or left edge
where nothing scrolls, is not), not clipped to nothing (a box of 1 px or less hiding what
overflows it: a screen-reader-only line, a collapsed panel), with its ancestors seen; and
its frame is seen: the frame's element is seen by the same rule and has a size (a 0 x 0
frame shows nothing), and so is every frame element above it.

The rule is written once, in ``visible.js``; the ``wait_for`` action's text (here,
:func:`wait_text`), the outcome checks (:mod:`automation.recording.expect`, through
:func:`shows_text`, :func:`page_text`, :func:`count_rows`) and the snapshot's walk
(``snapshot.js``, which leaves out the text, and the frames, nobody sees) all follow it,
so a macro's ``wait_for "Saved"`` and a replay's ``text_visible "Saved"`` can't disagree
about a toast drawn transparent.

Playwright's "visible" (a non-empty box, no ``visibility: hidden``) is looser: it sees
``opacity: 0`` and ``left: -9999px`` text, and judges an element in its own document only,
so text in a hidden or 0 x 0 frame is "visible" to it.  Like it, the rule does not ask
whether something else is drawn over the text.
"""

from __future__ import annotations

import asyncio
import functools
import re
from typing import TYPE_CHECKING, Any

import re2
from playwright.async_api import ElementHandle, Frame
from playwright.async_api import Error as PlaywrightError

from automation.browser.frames import held_by, silent_note, unanswering
from automation.browser.jsparts import joined
from automation.browser.textmatch import WORD_CHARS, folded, words
from automation.budget import Budget
from automation.errors import BudgetExceeded

if TYPE_CHECKING:
    from automation.browser.tab import Tab

__all__ = [
    "ELEMENT_TEXT_JS",
    "ENTRIES_JS",
    "FIELD_MARKED",
    "SEEN_JS",
    "TYPED_JS",
    "count_rows",
    "element_seen",
    "errors_shown",
    "find_words",
    "fold",
    "page_text",
    "seen_frames",
    "shows_text",
    "wait_text",
]

SEEN_JS = f"(args) => ({joined('seen.js', ['visible.js'])})(args)"
# What seen.js's errors say of a field marked invalid (aria-invalid) that says nothing.
FIELD_MARKED = "a field marked invalid"
# The context's init script that remembers what was typed into each field (typed.js):
# a row's field still showing it shows no value the app wrote.
TYPED_JS = joined("typed.js", [])
_FRAME_JS = f"(element) => ({SEEN_JS})({{ op: 'frame', element }})"
_ELEMENT_JS = f"(element) => ({SEEN_JS})({{ op: 'element', element }})"
# A list's entries, and an element's text, as a person reads them (seen.js "entries", "row").
ENTRIES_JS = f"(element) => ({SEEN_JS})({{ op: 'entries', element }})"
ELEMENT_TEXT_JS = f"(element) => ({SEEN_JS})({{ op: 'row', element }})"
# wait_for reads the page again after each of these pauses, then every last one.
_POLL_S = (0.0, 0.05, 0.1, 0.15, 0.25)
# WORD_CHARS as RE2 writes a character's code (\x{00aa}, where re and RegExp take \u00aa).
_RE2_WORD = re.sub(r"\\u([0-9a-fA-F]{4})", r"\\x{\1}", WORD_CHARS)
_WORD = re.compile(f"[{WORD_CHARS}]")
_RE2 = re2.Options()
_RE2.case_sensitive = False
_RE2.log_errors = False


async def seen_frames(
    tab: Tab, budget: Budget, *, unread: list[Frame] | None = None
) -> list[Frame]:
    """The page's frames a person sees: the main frame, and each frame whose element, and
    every frame element above it, is seen.  A seen frame that does not answer
    (:mod:`automation.browser.frames`) is left out, not waited for, and added to
    ``unread``: what the page shows there can't be read (a "no" read without it is
    only a "no" where it could read)."""
    silent = await unanswering(tab.page.frames, budget)
    seen = []
    for frame in tab.page.frames:
        if held_by(frame, silent):
            continue  # its element is in a frame that does not answer: that one stands for it
        at: Frame | None = frame
        try:
            while at is not None and at.parent_frame is not None:
                element = await budget.run(at.frame_element())
                try:
                    if not await budget.run(element.evaluate(_FRAME_JS)):
                        break
                finally:
                    await _dispose(element)
                at = at.parent_frame
        except PlaywrightError:
            continue  # a frame that went away shows nothing
        if at is not None and at.parent_frame is not None:
            continue
        if frame not in silent:
            seen.append(frame)
        elif unread is not None:
            unread.append(frame)
    return seen


async def element_seen(tab: Tab, element: ElementHandle, budget: Budget) -> bool:
    """Whether a person sees ``element``: it and its ancestors, in a frame they see (a
    ``visible`` check; a transparent or 0 x 0 box clipping its content is not seen)."""
    try:
        frame = await budget.run(element.owner_frame())
        if frame is None or frame not in await seen_frames(tab, budget):
            return False
        return bool(await budget.run(element.evaluate(_ELEMENT_JS)))
    except PlaywrightError:
        return False  # it went away


async def shows_text(
    tab: Tab, text: str, budget: Budget, *, unread: list[Frame] | None = None
) -> bool:
    """Whether a frame a person sees shows ``text`` as words (case and spaces ignored);
    seen frames that do not answer are added to ``unread`` (see :func:`seen_frames`)."""
    finds = {"op": "finds", "pattern": words(text)}
    for frame in await seen_frames(tab, budget, unread=unread):
        try:
            if await budget.run(frame.evaluate(SEEN_JS, finds)):
                return True
        except PlaywrightError:
            continue  # a frame that went away (or moved to another page) shows nothing
    return False


async def wait_text(tab: Tab, text: str, *, shown: bool, budget: Budget) -> None:
    """Read the page until ``text`` is seen (or, not ``shown``, seen nowhere); the
    budget's BudgetExceeded when it never is."""
    polls = iter(_POLL_S)
    unread: list[Frame] = []  # at the last read
    try:
        while True:
            await budget.run(asyncio.sleep(next(polls, _POLL_S[-1])))
            tab.core.check_alive()
            now: list[Frame] = []
            found = await shows_text(tab, text, budget, unread=now)
            unread = now
            if found is shown and (shown or not unread):  # not gone from frames not read
                return
    except BudgetExceeded:
        if shown or not unread:
            raise
        raise budget.exceeded(f"; it can't be told gone: {silent_note(unread[0])}") from None


async def page_text(tab: Tab, budget: Budget, *, messages: bool = True) -> str:
    """The text a person sees on the page and its frames, case and spaces folded (without
    its status and alert messages and its errors (:func:`errors_shown`), unless
    ``messages``)."""
    parts = []
    for frame in await seen_frames(tab, budget):
        try:
            args = {"op": "text", "messages": messages}
            parts.append(str(await budget.run(frame.evaluate(SEEN_JS, args))))
        except PlaywrightError:
            continue  # a frame that went away shows nothing
    return fold(" ".join(parts))


async def count_rows(
    tab: Tab, text: str, budget: Budget, *, unread: list[Frame] | None = None
) -> int:
    """How many seen rows (innermost table rows or list items) show ``text`` as words:
    rows of the app's data, not the items of a message or an error ("Customer Zeta Corp
    was added")."""
    total = 0
    for frame in await seen_frames(tab, budget, unread=unread):
        try:
            rows = {"op": "rows", "pattern": words(text)}
            total += int(await budget.run(frame.evaluate(SEEN_JS, rows)))
        except PlaywrightError:
            continue
    return total


async def errors_shown(
    tab: Tab,
    budget: Budget,
    *,
    unread: list[Frame] | None = None,
    named: bool = False,
    hidden: bool = False,
) -> list[str]:
    """What a person reads as "it refused" on the page and its seen frames, a few of them:
    a field marked invalid (``aria-invalid``), an element whose class or id names an error
    (``errorlist``, ``is-invalid``, ``alert-danger``) or an alert (``role=alert``) that is
    not marked a success (``alert-success``), each saying words.  ``named``: not an alert
    that says words alone (a toast "Saved" may be one) unless they say it refused
    ("Email is required") and none that it went through.  ``hidden``: the marks in the
    parts of a form nobody sees too (a field marked invalid in a panel of tabs not shown),
    read in a form the server drew again as its answer to it."""
    found: list[str] = []
    args = {"op": "errors", "named": named, "hidden": hidden}
    for frame in await seen_frames(tab, budget, unread=unread):
        try:
            found += [str(t) for t in await budget.run(frame.evaluate(SEEN_JS, args))]
        except PlaywrightError:
            continue
    return found


def find_words(text: str, wanted: str, pos: int = 0) -> tuple[int, int] | None:
    """Where ``text`` shows ``wanted`` as words (textmatch.words: case and runs of spaces
    ignored, not inside a longer word), from ``pos`` on; None if nowhere.

    Matched with RE2, in time linear in the text: Python's ``re`` tries the pattern at
    each place in turn, so a page of a million characters of "a a a …" and a check of 500
    words "a … b" held the event loop for seconds at each read.  RE2 has no lookaround:
    the character before and after is matched, and the words' own place told."""
    wanted = " ".join(wanted.split())
    start = max(pos - 1, 0) if _WORD.match(wanted[:1]) else pos  # (the character before)
    found = _words_pattern(wanted, pos > 0).search(text, start)
    return None if found is None else found.span(1)


@functools.lru_cache(maxsize=256)
def _words_pattern(wanted: str, inside: bool) -> Any:
    """find_words' pattern for ``wanted`` (spaces squeezed), searched from inside the text
    (``inside``) or from its start; made once for the reads that wait for it."""
    core = r"\s+".join(re.escape(part) for part in wanted.split(" "))
    before = after = ""
    if _WORD.match(wanted[:1]):  # the character before, from pos - 1 on, is no letter
        before = f"[^{_RE2_WORD}]" if inside else f"(?:^|[^{_RE2_WORD}])"
    if _WORD.match(wanted[-1:]):
        after = f"(?:[^{_RE2_WORD}]|$)"
    return re2.compile(f"{before}({core}){after}", _RE2)


fold = folded  # text as checks compare it (spaces, case and Unicode form: textmatch)


async def _dispose(element: Any) -> None:
    try:
        await element.dispose()
    except PlaywrightError:
        pass
