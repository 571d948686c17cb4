"""What a person could see, in a pytest export (automation.recording.export): its checks of
a text (``text_visible``, ``text_hidden``, ``rows``), its ``no_error`` check and its
``wait_for`` of a text read the page by Tabwright's one rule (:mod:`automation.browser.seen`,
``visible.js``), not by Playwright's looser "visible" (which sees a transparent toast, text
off the page's edge and text in a frame nobody sees), so the export and the replay can't
disagree there: a row's fields count with the values the app wrote, an item of a message
or of an error is no row, and an error is what replay reads as one.

The export writes the rule's script (:data:`automation.browser.seen.SEEN_JS`, as it is)
into the file as ``SEEN_JS``, then the code below the marker, as it is: the frames a
person sees found as :func:`automation.browser.seen.seen_frames` finds them, in
Playwright's sync API, and a check read until it holds or ``TIMEOUT_MS`` is out.  A child
frame that does not answer (a widget of another site whose script hangs) is left out as
replay leaves it out (:mod:`automation.browser.frames`, whose bounds the file keeps): each
child frame is asked a constant once the page's main frame has answered one, and one
that does not answer within ``FRAME_ANSWER_MS`` is not read (a read of it waited for
good: Playwright's ``evaluate`` has no timeout), so a check that holds on finding nothing
there (``text_hidden``, ``no_error``, an exact ``rows`` count) fails saying it can't be
told, naming the frame, as replay fails it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from automation.browser.address import address_holds
from automation.browser.effect import LABEL_INSTEAD_JS, TOGGLE_STATE_JS
from automation.browser.fieldops import MAX_LENGTH_JS, PLACEHOLDER_JS, SELECTED_JS
from automation.browser.frames import FOCUS_ON_FRAME_JS, HOLDS_FOCUS_JS
from automation.browser.seen import SEEN_JS
from automation.browser.textmatch import folded, last_key, listed_as, lists, shows_again, words
from automation.recording.expect import PLACE_NOW_JS, PLACES_JS, VALUE_JS

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from playwright.sync_api import Frame, Locator, Page

__all__ = [
    "FRAME_ANSWER_MS",
    "FRAME_RECHECK_MS",
    "count_rows",
    "errors_shown",
    "expect_items",
    "expect_no_error",
    "expect_rows",
    "expect_seen",
    "expect_text",
    "expect_ticked",
    "expect_url",
    "field_state",
    "fits",
    "kept_change",
    "kept_value",
    "left_ticked",
    "left_value",
    "press_key",
    "read_until",
    "released",
    "seen_frames",
    "shows_text",
    "tick",
    "unanswering",
    "value_shown",
    "written",
]

# -- written into an exported pytest file as it is
SEEN_FRAME_JS = f"(element) => ({SEEN_JS})({{ op: 'frame', element }})"
SEEN_ELEMENT_JS = f"(element) => ({SEEN_JS})({{ op: 'element', element }})"
SEEN_ENTRIES_JS = f"(element) => ({SEEN_JS})({{ op: 'entries', element }})"
SEEN_TEXT_JS = f"(element) => ({SEEN_JS})({{ op: 'row', element }})"
# A child frame's answer after its page's, as Tabwright's replay bounds it (300 ms for one
# that did not answer the last time).
FRAME_ANSWER_MS = 3_000
FRAME_RECHECK_MS = 300
SILENT: set[Frame] = set()  # the frames that did not answer their last question


def unanswering(page: Page) -> list[Frame]:
    """The page's child frames that do not answer a constant within FRAME_ANSWER_MS, each
    asked once the page's main frame has answered it; one inside such a frame is not
    asked (its element is that frame's to show: see held_by)."""
    page.main_frame.evaluate("0")
    silent: list[Frame] = []
    for frame in page.frames:
        if frame.parent_frame is None:
            continue
        if held_by(frame, silent):
            continue
        limit = FRAME_RECHECK_MS if frame in SILENT else FRAME_ANSWER_MS
        try:
            frame.wait_for_function("() => true", timeout=limit)
            SILENT.discard(frame)
        except PlaywrightTimeout:
            silent.append(frame)
            SILENT.add(frame)
        except PlaywrightError:
            continue  # gone, or going: not a frame that hangs
    return silent


def held_by(frame: Frame, silent: list[Frame]) -> bool:
    """Whether a frame above ``frame`` is in ``silent``."""
    at = frame.parent_frame
    while at is not None and at not in silent:
        at = at.parent_frame
    return at is not None


def silent_note(frame: Frame) -> str:
    """What a check says of a frame it could not read, in replay's words."""
    return (
        f"the frame {frame.url[:200]} did not answer within {FRAME_ANSWER_MS} ms of the "
        "page around it (its page is loading, busy or hung)"
    )


# The element that holds the focus in a frame (inside shadow roots too), if not the page.
FOCUSED_JS = """() => {
  let at = document.activeElement;
  while (at && at.shadowRoot && at.shadowRoot.activeElement) at = at.shadowRoot.activeElement;
  return at && at !== document.body && at !== document.documentElement ? at : null;
}"""


def press_key(page: Page, key: str) -> None:
    """A key pressed where the focus is, as replay presses it: where the focus is inside a
    frame that does not answer, the step fails saying so (the key waited for it for good:
    Playwright's keyboard has no timeout).  Pressed on the element that holds the focus,
    the key waits for a page it sends the frame to, as a click does (the keyboard's own
    press returns before a form its Enter sent is even asked for)."""
    frame = page.main_frame
    silent: list[Frame] | None = None
    while frame.child_frames and frame.evaluate(FOCUS_ON_FRAME_JS):
        silent = unanswering(page) if silent is None else silent
        inner = next((f for f in frame.child_frames if _holds_focus(f)), None)
        if inner is None:
            break
        if inner in silent:
            raise AssertionError(f"press {key}: the focus is where keys can't reach: "
                                 f"{silent_note(inner)}")  # fmt: skip
        frame = inner
    focused = frame.evaluate_handle(FOCUSED_JS).as_element()
    if focused is None:
        page.keyboard.press(key)
    else:
        focused.press(key)


def fits(element: Locator, value: str) -> None:
    """The field typed into took the whole value, as replay judges typing: one that holds
    fewer characters (maxlength) cut it, and the app would keep another value."""
    try:
        limit = element.evaluate(MAX_LENGTH_JS, timeout=1_000)
        cut = 0 <= limit < len(value) and len(element.input_value(timeout=1_000)) < len(value)
    except PlaywrightError:
        return  # gone since (a page it sent away): nothing to judge it by, as in replay
    if cut:
        raise AssertionError(f"the field holds at most {limit} characters, fewer than the value's")


def _holds_focus(frame: Frame) -> bool:
    try:
        return bool(frame.frame_element().evaluate(HOLDS_FOCUS_JS))
    except PlaywrightError:
        return False  # gone meanwhile


def seen_frames(page: Page, unread: list[Frame] | None = None) -> list[Frame]:
    """The page's frames a person sees: the main frame, and each frame whose element, and
    every frame element above it, is seen (Tabwright's rule: SEEN_JS).  A seen frame that
    does not answer is left out, and added to ``unread``."""
    silent = unanswering(page)
    seen = []
    for frame in page.frames:
        if held_by(frame, silent):
            continue  # its element is in a frame that does not answer: that one stands for it
        at: Frame | None = frame
        try:
            while at is not None and at.parent_frame is not None:
                element = at.frame_element()
                try:
                    if not element.evaluate(SEEN_FRAME_JS):
                        break
                finally:
                    element.dispose()
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


def shows_text(page: Page, text: str, unread: list[Frame] | None = None) -> bool:
    """Whether a frame a person sees shows ``text`` as words (case and spaces ignored)."""
    for frame in seen_frames(page, unread):
        try:
            if frame.evaluate(SEEN_JS, {"op": "finds", "pattern": words(text)}):
                return True
        except PlaywrightError:
            continue  # a frame that went away shows nothing
    return False


def count_rows(page: Page, text: str, unread: list[Frame] | None = None) -> int:
    """How many seen rows (innermost table rows or list items) show ``text`` as words:
    rows of the app's data, not the items of a message or an error."""
    total = 0
    for frame in seen_frames(page, unread):
        try:
            total += int(frame.evaluate(SEEN_JS, {"op": "rows", "pattern": words(text)}))
        except PlaywrightError:
            continue
    return total


def errors_shown(
    page: Page, unread: list[Frame] | None = None, *, named: bool = False, hidden: bool = False
) -> list[str]:
    """What a person reads as "it refused" on the page and its seen frames, a few of them
    (as :func:`automation.browser.seen.errors_shown` reads them; ``named``: not an alert
    that says words alone, unless they say it refused; ``hidden``: the marks in the parts
    of a form nobody sees too)."""
    found: list[str] = []
    args = {"op": "errors", "named": named, "hidden": hidden}
    for frame in seen_frames(page, unread):
        try:
            found += [str(t) for t in frame.evaluate(SEEN_JS, args)]
        except PlaywrightError:
            continue
    return found


def read_until(page: Page, holds: Callable[[], tuple[bool, str]], expected: str) -> None:
    """Read the page until ``holds()`` (whether it holds, and what the page shows) does,
    for up to TIMEOUT_MS, as replay reads a check; then fail, saying what it shows."""
    timeout_ms = float(os.environ.get("TIMEOUT_MS", "15000"))
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        held, seen = holds()
        if held:
            return
        assert time.monotonic() < deadline, (
            f"expected {expected} (waited {timeout_ms:.0f} ms), but {seen}"
        )
        page.wait_for_timeout(100)


def words_given(text: str, expected: str, *, what: str = "text") -> None:
    """A check of a text (an address: ``what``) its parameters left empty fails at once,
    as replay fails it."""
    assert text.strip(), (
        f"expected {expected}, but its {what} is empty with the values it was given: "
        "it would hold on any page"
    )


def expect_url(page: Page, expected: str) -> None:
    """The page's address holds ``expected`` (:func:`address_holds`), read until it does
    for up to TIMEOUT_MS, as replay reads a URL check."""
    read_until(page, lambda: (address_holds(expected, page.url), f"the address is {page.url!r}"),
               f"the address to hold {expected!r}")  # fmt: skip


def address_given(address: str) -> str:
    """A ``url`` check's address as its values made it, before it moves to BASE_URL: one
    they left empty fails at once, as replay fails it (else it holds on any page)."""
    words_given(address, "the page's address to hold the one given", what="url")
    return address


def expect_text(page: Page, text: str, *, shown: bool = True) -> None:
    """A text seen (or, not ``shown``, seen nowhere) where a person looks at the page; a
    text not shown where the page could be read is not known to be gone."""

    def holds() -> tuple[bool, str]:
        unread: list[Frame] = []
        now = shows_text(page, text, unread)
        if shown:
            return now, where_read("it is not shown", unread)
        if now:
            return False, "it is shown"
        return not unread, cant_tell(unread)

    expected = f"the page to {'show' if shown else 'not show'} {text!r}"
    words_given(text, expected)
    read_until(page, holds, expected)


def cant_tell(unread: list[Frame]) -> str:
    return f"it can't be told: {silent_note(unread[0])}" if unread else ""


def where_read(seen: str, unread: list[Frame]) -> str:
    return f"{seen} where the page could be read ({silent_note(unread[0])})" if unread else seen


def expect_rows(page: Page, text: str, count: int, *, at_least: bool = False) -> None:
    """``count`` seen rows (``at_least``: that many or more) showing ``text``."""

    def holds() -> tuple[bool, str]:
        unread: list[Frame] = []
        now = count_rows(page, text, unread)
        said = where_read(f"{now} row(s) show it", unread)
        return (now >= count if at_least else now == count and not unread), said

    expected = f"{'at least ' if at_least else ''}{count} row(s) to show {text!r}"
    words_given(text, expected)
    read_until(page, holds, expected)


# Whether the page's document is the server's answer to a form posted (not a redirect
# after it): a form drawn again, read for the marks in its parts nobody sees too.  Kept by
# the file's listener of the page's answers.
DRAWN: list = []


def expect_no_error(page: Page) -> None:
    """As replay's ``no_error`` check: the page shows no error (an error list, a field
    marked invalid, an alert that is no success banner; in a form the server drew again
    as its answer to it, a mark in a part nobody sees too)."""

    def holds() -> tuple[bool, str]:
        unread: list[Frame] = []
        errors = errors_shown(page, unread, hidden=DRAWN == [True])
        if errors:
            return False, f"it shows {errors[0][:200]!r}"
        return not unread, cant_tell(unread)

    # An error shown fails at once, as in replay: one that goes by itself (a toast hidden
    # after 3 s) is an error all the same.
    held, seen = holds()
    said = f"expected the page to show no error, but {seen}"
    assert held or not seen.startswith("it shows "), said
    read_until(page, holds, "the page to show no error")


def expect_seen(page: Page, element: Locator) -> None:
    """As replay's ``visible`` check: a person sees the element (it and its ancestors, in
    a frame they see), by the rule of SEEN_JS: not drawn transparent, nor a 0 x 0 box
    clipping what it holds, where Playwright's ``to_be_visible`` differs."""

    def holds() -> tuple[bool, str]:
        try:
            handle = element.element_handle(timeout=1_000)
        except PlaywrightError:
            return False, "the element is not found"
        try:
            frame = handle.owner_frame()
            seen = frame in seen_frames(page) and bool(handle.evaluate(SEEN_ELEMENT_JS))
        except PlaywrightError:
            return False, "the element went away while it was read"
        finally:
            handle.dispose()
        return seen, "it is not seen (transparent, hidden, of no size, or off the page)"

    read_until(page, holds, "the element to be seen")


LEFT_TICKED: list = []  # whether the box the last step clicks is to be left ticked


def left_ticked(element: Locator) -> None:
    """As replay reads the box (not a radio button) the last step clicks, before the click:
    the click is to leave it the other way, read again at the end (kept_tick)."""
    try:
        LEFT_TICKED.append(not element.is_checked(timeout=1_000))
    except PlaywrightError:
        LEFT_TICKED.append(None)  # gone, or no box now: nothing to read again


def kept_tick(element: Locator, ticked: bool | None = None) -> None:
    """As replay reads the box the last step ticked (or clicked: ``ticked`` None, as the
    click was to leave it) again, once the page is done: where it still is, and can be
    ticked, it is as the step left it."""
    if ticked is None:
        ticked = LEFT_TICKED[-1] if LEFT_TICKED else None
    if ticked is None or element.count() != 1:
        return  # gone, or not one to tell
    try:
        element.is_checked(timeout=1_000)
    except PlaywrightError:
        return  # no box now (a filter link found for the recorded radio button)
    expect(element).to_be_checked(checked=ticked)


LEFT_VALUE: list = []  # what the field the last step writes showed before it, after it
LEFT_PLACES: list = []  # that field and the places it stands in (PLACES_JS)
SAID_BEFORE: list = []  # what the page said was wrong before an edit a key commits


def released(page: Page, typed: str) -> None:
    """As Tabwright's fill ends: the key that typed the last character released (a list
    that filters on keyup)."""
    key = last_key(typed)
    if key:
        page.keyboard.up(key)


def written(unchanged: dict, index: int, was: object, now: object) -> None:
    """As Tabwright's replay notes of step ``index`` that writes a field a later step
    sends: whether what it holds ``now`` is what it held before (``was``), read both."""
    unchanged[index] = was is not None and was == now


def field_state(element: Locator, ticks: bool) -> object:
    """What the field ``element`` holds, as replay reads it before and after a step that
    writes it: whether it is ticked (``ticks``), else its value; None when unread."""
    try:
        return element.evaluate(TOGGLE_STATE_JS if ticks else VALUE_JS, timeout=1_000)
    except PlaywrightError:
        return None


def value_shown(element: Locator) -> str | None:
    """What the field shows, as replay's value check reads it (VALUE_JS); None when it
    can't be read."""
    try:
        value = element.evaluate(VALUE_JS, timeout=1_000)
    except PlaywrightError:
        return None
    return value if isinstance(value, str) else None


def left_value(element: Locator, said: bool = False) -> None:
    """As replay reads the field the last step writes (types into, picks an option of),
    before it and after it: read again at the end (kept_value); with ``said``, what the
    page says is wrong too (before an edit a key commits)."""
    LEFT_VALUE.append(value_shown(element))
    try:
        LEFT_PLACES.append(element.evaluate_handle(PLACES_JS, timeout=1_000))
    except PlaywrightError:
        pass
    if said:
        SAID_BEFORE[:] = errors_shown(element.page)


def kept_value(element: Locator, committed: bool = False) -> None:
    """As replay reads the field the last step wrote again, once the page is done: where
    it still is, it does not show the value from before the step again (the app put it
    back) when the step had changed it.  One a key ``committed`` (an edit in place) was
    read before the key, and is put back only where the page says why (a line added
    and its form drawn anew says nothing is wrong); an entry field it had found empty may
    be emptied again (the app took what was entered)."""
    before, after = LEFT_VALUE[-2:] if len(LEFT_VALUE) >= 2 else (None, None)
    if before is None or after is None or before == after or element.count() > 1:
        return  # nothing new shown (its step tells), or not one to tell
    if committed and not before:
        return
    if element.count() == 0:  # gone: an editor the app took away as the edit was committed
        put_back_where_it_stood(element.page, before, after)
        return
    now = value_shown(element)
    said = ""
    if committed and now == before:  # a line added, its form drawn anew, says nothing
        new = [e for e in errors_shown(element.page) if e not in SAID_BEFORE]
        if not new:
            return
        said = f", saying {new[0][:200]!r}"
    assert now != before, (
        f"it shows {now[:200]!r} again, as before the step: the app put it back{said}"
    )


def put_back_where_it_stood(page: Page, before: str, after: str) -> None:
    """As replay reads the place the field stood in once it is gone from the page (an
    editor in a table's cell): showing the value from before the edit again, not the one
    typed, it is the app that put it back, said or not."""
    try:
        place = LEFT_PLACES[-1].evaluate_handle(PLACE_NOW_JS).as_element() if LEFT_PLACES else None
        shown = place.evaluate(SEEN_TEXT_JS) if place is not None else None
    except PlaywrightError:
        return
    if isinstance(shown, str) and shows_again(shown, before, after):
        new = [e for e in errors_shown(page) if e not in SAID_BEFORE]
        said = f", saying {new[0][:200]!r}" if new else ""
        raise AssertionError(
            f"the field is gone, and where it stood shows {before[:200]!r} "
            f"again, not {after[:200]!r}: the app put it back{said}"
        )


def expect_items(
    page: Page, element: Locator, items: list[str], *, among_others: bool = False
) -> None:
    """As replay's ``items`` check: the element's entries as a person reads them are the
    items, each whole (``among_others``: in order, other entries between); an element
    without entries shows each as words, each after the one before."""

    def holds() -> tuple[bool, str]:
        try:
            entries = element.evaluate(SEEN_ENTRIES_JS, timeout=1_000)
            text = "" if entries is not None else element.evaluate(SEEN_TEXT_JS, timeout=1_000)
        except PlaywrightError:
            return False, "the element is not found"
        if entries is not None:
            return lists(entries, items, among_others), listed_as(entries)
        shown, at = folded(str(text)), 0
        for item in items:
            found = re.compile(words(folded(item)), re.I).search(shown, at)
            if found is None:
                return False, f"it reads {shown[:200]!r}"
            at = found.end()
        return True, ""

    others = ", among others" if among_others else ""
    read_until(page, holds, f"the element to list {items!r} in that order{others}")


def tick(field: Locator, ticked: bool) -> None:
    """As Tabwright's replay ticks a box: its state read as replay reads it (a checkbox's
    or a radio button's, aria-checked, aria-pressed: a button pressed in is ticked), and
    clicked where it is not so, on its label where the box is hidden behind a styled one
    (a switch drawn over a checkbox nobody sees)."""
    if field.evaluate(TOGGLE_STATE_JS) == ticked:
        return
    label = field.evaluate_handle(LABEL_INSTEAD_JS).as_element()
    if label is not None:
        label.click()
    else:
        field.click()


def expect_ticked(element: Locator, ticked: bool) -> None:
    """The element is ticked (``ticked``) or not, read as replay reads a box (a button
    pressed in is ticked), until it is."""
    expected = "ticked" if ticked else "not ticked"

    def holds() -> tuple[bool, str]:
        state = element.evaluate(TOGGLE_STATE_JS)
        return state == ticked, f"it is {'ticked' if state else 'not ticked'}"

    read_until(element.page, holds, f"it to be {expected}")


def kept_change(
    field: Locator,
    change: str,
    value: object,
    settled: Callable[[Page], AbstractContextManager[None]],
) -> None:
    """As Tabwright's replay ticks a box (``change`` "check", ``value`` the state) or
    chooses options ("select", the labels): once the page settled after it (``settled``:
    the header's checks_answered), a field showing the state from before it again (an
    app that asked its server whether Express reaches the address and, told no, shows
    Standard again) or another of the app's own (Pickup) fails the step, saying what
    the page says; a select put back to its placeholder saying no error is a menu of
    actions that acted."""
    js = TOGGLE_STATE_JS if change == "check" else SELECTED_JS
    before = field.evaluate(js)
    menu = change == "select" and field.evaluate(PLACEHOLDER_JS)  # "Bulk actions…"
    said_before = errors_shown(field.page) if menu else []
    with settled(field.page):
        # What the step left, as it asked for it: read after it, an answer the app met
        # first (a fast server, a busy machine) would show the state from before again.
        if change == "check":
            tick(field, bool(value))
            left = bool(value) if before is not None else field.evaluate(js)
        else:
            left = field.select_option(label=value)
    if menu and field.count() == 1 and field.evaluate(js) == before:  # its placeholder again
        new = [e for e in errors_shown(field.page) if e not in said_before]
        if new:
            raise AssertionError(f"the page put the choice back as it was, saying {new[0][:200]!r}")
        return  # a menu of actions that acted
    if left == before or field.count() != 1:
        return
    now = field.evaluate(js)
    if now == left:
        return
    shown = errors_shown(field.page)
    said = f", saying {shown[0][:200]!r}" if shown else ""
    what = "tick" if change == "check" else "choice"
    if now != before:  # the app's own choice instead
        raise AssertionError(f"the page changed the {what} to {now!r}{said}")
    raise AssertionError(f"the page put the {what} back as it was{said}")
