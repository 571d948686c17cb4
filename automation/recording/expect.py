"""Outcome checks: what the page must show once a scenario's steps are done.

A scenario says what it reaches with ``expect`` steps, each one check::

    {"action": "expect", "args": {"kind": "text_visible", "text": "Welcome, Ada"}}
    {"action": "expect", "args": {"kind": "rows", "text": "Buy milk", "count": 0}}
    {"action": "expect", "args": {"kind": "checked"}, "identity": {...}}

Page checks: ``text_visible`` / ``text_hidden`` (a text is, or is not, shown anywhere on
the page; case and spaces ignored), ``rows`` (how many visible table rows or list items
show a text: 0 says it is gone, or filtered out; with ``"at_least": true``, that many or
more), ``url`` (the address holds it: automation.browser.address's rule, moved
to the replay's base URL as navigations are), ``no_error`` (the page shows no error: an
error list, a field marked invalid, an alert that is no success banner).  Element checks
find their element by its identity, as any step does: ``visible``, ``checked``,
``unchecked``, ``value`` (a field's value, a select's chosen label) and ``items`` (texts
the element shows, in order: a list's entries).

:func:`check` evaluates one within its budget and keeps reading until it holds (the app
may still be drawing), so a check fails only when the page really does not show it: it
raises :class:`~automation.errors.CheckFailed` saying what was expected and what the page
shows.  A replay whose checks fail is failed (see :mod:`automation.recording.replay`).
Values may hold ``${params}``; secrets are refused (a check would show its value).

A text is found where it stands as words (:mod:`automation.browser.textmatch`): not
inside a longer word, so "Saved" is not found in "Unsaved changes", nor "Order 100" in
"Order 1001".  The same rule is the export's and the ``wait_for`` action's.  What a page
shows is what a person could see there (:mod:`automation.browser.seen`: not transparent,
off the page's edge nor in a frame nobody sees), the rule ``wait_for`` and the snapshot
follow too.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING, Any

from playwright.async_api import ElementHandle, Frame, JSHandle
from playwright.async_api import Error as PlaywrightError

from automation.browser.effect import TOGGLE_STATE_JS, dispose
from automation.browser.frames import silent_note
from automation.browser.identity import ElementIdentity, locate, still_parsing, wait_parsed
from automation.browser.seen import (
    ELEMENT_TEXT_JS,
    ENTRIES_JS,
    count_rows,
    element_seen,
    errors_shown,
    find_words,
    fold,
    page_text,
    shows_text,
)
from automation.browser.textmatch import listed_as, lists
from automation.budget import Budget
from automation.errors import BudgetExceeded, CheckFailed, ScenarioInvalid
from automation.recording import downloads
from automation.recording.params import address_holds
from automation.wording import check_words

if TYPE_CHECKING:
    from automation.browser.tab import Tab

__all__ = [
    "ELEMENT_KINDS",
    "KEPT_KINDS",
    "KINDS",
    "PLACES_JS",
    "PLACE_NOW_JS",
    "VALUE_JS",
    "check",
    "count_rows",
    "fold",
    "page_text",
    "places_of",
    "shown_where_it_was",
    "shows",
    "ticked_now",
    "validate",
    "value_now",
    "value_shown",
]


# kind -> the args it needs (besides "kind")
KINDS: dict[str, tuple[str, ...]] = {
    "text_visible": ("text",),
    "text_hidden": ("text",),
    "rows": ("text", "count"),
    "url": ("url",),
    # The page shows no error (automation.browser.seen.errors_shown): an error list, a
    # field marked invalid, an alert that is no success banner.
    "no_error": (),
    "visible": (),
    "checked": (),
    "unchecked": (),
    "value": ("value",),
    "items": ("items",),
    # The latest download's name, type, size, CSV header and rows, text: each optional
    # (automation.recording.downloads).
    "download": (),
}
# kind -> the args it may have besides: ``rows`` with ``"at_least": true`` holds when that
# many rows or more show the text (a list that grows with each replay: one more order);
# ``items`` with ``"among_others": true`` when each item is an entry, in order, other
# entries between (without it, the entries are the items, no more).
OPTIONAL: dict[str, tuple[str, ...]] = {"rows": ("at_least",), "items": ("among_others",)}
ELEMENT_KINDS = frozenset({"visible", "checked", "unchecked", "value", "items"})
# Checks of a state an app keeps until something changes it: read again once the page
# has done what the last steps left for later (replay's confirm, the export's end).
KEPT_KINDS = frozenset(
    {"checked", "unchecked", "value", "items", "rows", "text_hidden", "url", "no_error"}
)
MAX_ITEMS = 50
MAX_TEXT = 1_000
MAX_COUNT = 10_000
_SECRET = re.compile(r"\$\{(?:SECRET|TOTP):", re.IGNORECASE)
_POLL_S = (0.0, 0.1, 0.2, 0.3, 0.5)  # then every 0.5 s
# What a no_error check says of an error it reads: that fails it at once.  An error shown
# is no less an error for going by itself (a toast hides in 3 to 6 s): read until it had
# gone, the check passed on a save the app refused.
_SHOWS_ERROR = "it shows "
_LAST_READ_MS = 800  # a read and its answer fit in this much of the budget
VALUE_JS = """(e) => {
  if (e.tagName === "SELECT") return Array.from(e.selectedOptions, (o) => o.label).join(", ");
  if (e.isContentEditable) return e.innerText;
  return typeof e.value === "string" ? e.value : (e.textContent || "");
}"""
# The field and the places it stands in, up to its line (a table's row, a list's item) or
# three elements up: where an editor the app takes away once its edit is committed stood.
PLACES_JS = """(field) => {
  const places = [field];
  for (let at = field.parentElement; at && places.length < 4; at = at.parentElement) {
    places.push(at);
    if (at.matches("tr, li, [role=row], [role=listitem]")) break;
  }
  return places;
}"""
# The nearest of those places still on the page, once the field is not (else null).
PLACE_NOW_JS = """([field, ...places]) =>
  field.isConnected ? null : places.find((p) => p.isConnected) || null"""


def validate(args: object, *, has_element: bool, index: int = 0) -> dict[str, Any]:
    """The check's args, checked: ScenarioInvalid names the step and what is wrong."""
    where = f"step {index}"
    if not isinstance(args, dict):
        raise ScenarioInvalid(f"{where}: expect args must be an object", index=index)
    kind = args.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        raise ScenarioInvalid(
            f"{where}: unknown check {kind!r}", index=index, hint="checks: " + ", ".join(KINDS)
        )
    if kind == "download":
        if has_element:
            raise ScenarioInvalid(f"{where}: the check download is about the page", index=index)
        checked = downloads.validate(args, where=where, index=index)
        if _SECRET.search(json.dumps(checked)):
            raise ScenarioInvalid(
                f"{where}: a check can't hold a secret (it would show its value)", index=index
            )
        return checked
    clean: dict[str, Any] = {"kind": kind}
    for name in KINDS[kind]:
        value = args.get(name)
        if name == "items":
            if (
                not isinstance(value, list) or not 1 <= len(value) <= MAX_ITEMS
                or not all(isinstance(v, str) and v.strip() for v in value)
            ):  # fmt: skip
                raise ScenarioInvalid(
                    f"{where}: items needs a list of 1 to {MAX_ITEMS} texts", index=index
                )
            if any(_SECRET.search(v) or len(v) > MAX_TEXT for v in value):
                raise ScenarioInvalid(
                    f"{where}: an item is too long or holds a secret", index=index
                )
        elif name == "count":
            if not isinstance(value, int) or isinstance(value, bool):
                raise ScenarioInvalid(f"{where}: {kind} needs a whole number count", index=index)
            if not 0 <= value <= MAX_COUNT:
                raise ScenarioInvalid(f"{where}: count must be 0 to {MAX_COUNT}", index=index)
        else:
            if not isinstance(value, str) or (name != "value" and not value.strip()):
                raise ScenarioInvalid(f"{where}: {kind} needs {name} as text", index=index)
            if len(value) > MAX_TEXT:
                raise ScenarioInvalid(f"{where}: {name} is longer than {MAX_TEXT}", index=index)
            if _SECRET.search(value):
                raise ScenarioInvalid(
                    f"{where}: a check can't hold a secret (it would show its value)", index=index
                )
        clean[name] = value
    if kind == "rows" and args.get("at_least") is not None:
        if not isinstance(args["at_least"], bool) or (args["at_least"] and not clean["count"]):
            raise ScenarioInvalid(
                f"{where}: at_least is true or false, and true only with a count of 1 or more",
                index=index,
            )
        if args["at_least"]:
            clean["at_least"] = True
    if kind == "items" and args.get("among_others") is not None:
        if not isinstance(args["among_others"], bool):
            raise ScenarioInvalid(f"{where}: among_others is true or false", index=index)
        if args["among_others"]:
            clean["among_others"] = True
    unknown = set(args) - {"kind", *KINDS[kind], *OPTIONAL.get(kind, ())}
    if unknown:
        raise ScenarioInvalid(f"{where}: {kind} takes no {', '.join(sorted(unknown))}", index=index)
    if (kind in ELEMENT_KINDS) != has_element:
        need = "needs the element's identity" if kind in ELEMENT_KINDS else "is about the page"
        raise ScenarioInvalid(f"{where}: the check {kind} {need}", index=index)
    return clean


def words_given(args: dict[str, Any]) -> None:
    """A check whose text or address its parameters' values left empty would hold on any
    page (its file can't hold an empty one): CheckFailed, saying so."""
    for name in ("text", "url"):
        if isinstance(args.get(name), str) and not args[name].strip():
            raise CheckFailed(
                f"expected {check_words(args, None)}, but its {name} is empty with the values "
                "it was given: it would hold on any page",
                hint="give the parameter it reads a value (none given: its default)",
            )


async def check(
    tab: Tab, args: dict[str, Any], identity: ElementIdentity | None, *, budget: Budget
) -> str:
    """Read the page until the check holds (within ``budget``): what was seen, or
    CheckFailed with what the page shows instead (at once for an error a no_error check
    reads)."""
    polls = iter(_POLL_S)
    seen: str | None = None
    waited = False  # for a document to be parsed
    while True:
        try:
            await budget.run(asyncio.sleep(next(polls, _POLL_S[-1])))
            ok, seen = await _once(tab, args, identity, budget)
            if ok and not waited and await still_parsing(tab.page.main_frame, budget):
                # Read half-way: the rest of the page, and its scripts, may undo it.
                waited = True
                await wait_parsed(tab.page.main_frame, budget)
                ok, seen = await _once(tab, args, identity, budget)
        except BudgetExceeded:
            if seen is None:  # never read: the budget, not the page, decided
                raise
            # A read that outlasts the budget's end (a busy machine) leaves the last one
            # to decide: the check did not hold then.
            ok = False
        if ok:
            return f"{check_words(args, identity)}: yes"
        error = args["kind"] == "no_error" and (seen or "").startswith(_SHOWS_ERROR)
        if error or budget.remaining_ms() < _LAST_READ_MS:
            assert seen is not None
            raise CheckFailed(
                f"expected {check_words(args, identity)}, but {seen}",
                hint="the replay did not reach what the scenario expects",
            )


def _unread(unread: list[Frame]) -> str:
    return f"it can't be told: {silent_note(unread[0])}"


def _where_read(seen: str, unread: list[Frame]) -> str:
    return f"{seen} where the page could be read ({silent_note(unread[0])})" if unread else seen


async def click_leaves(element: ElementHandle, role: str, budget: Budget) -> bool | None:
    """Whether a click on the box ``element`` (of ``role``) is to leave it ticked: a radio
    button on, another box the other way than it is now; None when it can't be read."""
    if role in ("radio", "menuitemradio"):
        return True
    try:
        state = await budget.run(element.evaluate(TOGGLE_STATE_JS))
    except PlaywrightError:
        return None
    return not state if isinstance(state, bool) else None


async def ticked_now(tab: Tab, identity: ElementIdentity, budget: Budget) -> bool | None:
    """Whether the element of ``identity`` is ticked now, read once; None when it is not
    there (a list that hides a done item) or can't be ticked (a filter link found for the
    recorded radio button): then it says nothing."""
    located = await locate(tab.page, identity, budget=budget)
    if not located.ok or located.element is None:
        return None
    try:
        state = await budget.run(located.element.evaluate(TOGGLE_STATE_JS))
    except PlaywrightError:
        return None
    finally:
        await _dispose(located.element)
    return state if isinstance(state, bool) else None


async def value_shown(element: ElementHandle, budget: Budget) -> str | None:
    """What the field ``element`` shows (as a value check reads it), read once; None when
    it can't be read (gone)."""
    try:
        value = await budget.run(element.evaluate(VALUE_JS))
    except PlaywrightError:
        return None
    return value if isinstance(value, str) else None


async def places_of(element: ElementHandle, budget: Budget) -> JSHandle | None:
    """The field ``element`` and the places it stands in (:data:`PLACES_JS`), kept to read
    where it stood should the app take it away; None when they can't be read."""
    try:
        return await budget.run(element.evaluate_handle(PLACES_JS))
    except PlaywrightError:
        return None


async def shown_where_it_was(places: JSHandle, budget: Budget) -> str | None:
    """What the nearest place the field of ``places`` stood in (:func:`places_of`) shows
    now, as a person reads it, once the field is gone from the page; None while the field
    is on it, or when none of its places is."""
    try:
        place = await budget.run(places.evaluate_handle(PLACE_NOW_JS))
    except PlaywrightError:
        return None
    try:
        element = place.as_element()
        text = None if element is None else await budget.run(element.evaluate(ELEMENT_TEXT_JS))
    except PlaywrightError:
        return None
    finally:
        await dispose(place)
    return text if isinstance(text, str) else None


async def value_now(tab: Tab, identity: ElementIdentity, budget: Budget) -> str | None:
    """What the field of ``identity`` shows now, read once; None when it is not there."""
    located = await locate(tab.page, identity, budget=budget)
    if not located.ok or located.element is None:
        return None
    try:
        return await value_shown(located.element, budget)
    finally:
        await _dispose(located.element)


async def _once(
    tab: Tab, args: dict[str, Any], identity: ElementIdentity | None, budget: Budget
) -> tuple[bool, str]:
    kind = args["kind"]
    if kind == "download":
        return await _download(tab, args)
    if kind == "url":
        url = tab.page.url
        return address_holds(args["url"], url), f"the address is {url!r}"
    # A seen frame that does not answer can't be read: a "no" read without it is no "no".
    unread: list[Frame] = []
    if kind in ("text_visible", "text_hidden"):
        shown = await shows_text(tab, args["text"], budget, unread=unread)
        if kind == "text_visible":
            return shown, _where_read("it is not shown", unread)
        if shown:
            return False, "it is shown"
        return not unread, _unread(unread) if unread else ""
    if kind == "no_error":  # (in a form the server drew again, its hidden parts' marks too)
        drawn = tab.log.document_method == "POST"
        errors = await errors_shown(tab, budget, unread=unread, hidden=drawn)
        if errors:
            return False, f"{_SHOWS_ERROR}{errors[0][:200]!r}"
        return not unread, _unread(unread) if unread else ""
    if kind == "rows":
        count = await count_rows(tab, args["text"], budget, unread=unread)
        said = _where_read(f"{count} row(s) show it", unread)
        if args.get("at_least"):
            return count >= args["count"], said
        return count == args["count"] and not unread, said
    assert identity is not None
    located = await locate(tab.page, identity, budget=budget)
    if located.element is None:
        return False, f"the element is not found ({located.reason or 'not on the page'})"
    try:
        if kind == "visible":  # by the one rule of what a person sees (visible.js)
            seen = await element_seen(tab, located.element, budget)
            return seen, "it is not seen (transparent, hidden, of no size, or off the page)"
        if kind in ("checked", "unchecked"):
            state = await budget.run(located.element.evaluate(TOGGLE_STATE_JS))
            if state is None:
                return False, "it can't be ticked"
            return state == (kind == "checked"), "it is " + ("ticked" if state else "not ticked")
        if kind == "items":
            return await _listed(located.element, args, budget)
        value = await budget.run(located.element.evaluate(VALUE_JS))
        return _norm(str(value)) == _norm(args["value"]), f"it shows {str(value)[:200]!r}"
    except PlaywrightError:
        return False, "the element went away while it was read"
    finally:
        await _dispose(located.element)


async def _download(tab: Tab, args: dict[str, Any]) -> tuple[bool, str]:
    """The tab's latest download against a download check: the latest begun since the
    step after an earlier check of one (:meth:`DownloadKeeper.latest_to_check`), once it
    has ended."""
    keeper = tab.downloads
    latest = keeper.latest_to_check() if keeper is not None else None
    if keeper is None or latest is None:
        since = " since the download checked before" if keeper and keeper.mark() else ""
        return False, f"nothing was downloaded{since}"
    seq, last = latest
    if last is None:
        return False, "the download has not ended"
    keeper.judged(seq)
    if last.path is None:
        return False, f"the download {last.suggested_name!r} failed ({last.failure})"
    try:
        return await downloads.holds(last.path, last.name, args)
    except OSError as exc:
        return False, f"the download {last.name!r} can't be read: {exc.strerror or exc}"


async def _dispose(element: Any) -> None:
    try:
        await element.dispose()
    except PlaywrightError:
        pass


async def _listed(element: ElementHandle, args: dict[str, Any], budget: Budget) -> tuple[bool, str]:
    """An ``items`` check of ``element``: its entries as a person reads them (seen.js) are
    the items, each entry a whole item, all of them or (``among_others``) in order among
    others (textmatch.lists).  An element without entries (no list items, rows nor
    options) shows the items as words, in order."""
    entries = await budget.run(element.evaluate(ENTRIES_JS))
    if entries is None:
        shown = fold(str(await budget.run(element.evaluate(ELEMENT_TEXT_JS))))
        return _in_order(shown, args["items"]), f"it reads {shown[:200]!r}"
    return lists(entries, args["items"], bool(args.get("among_others"))), listed_as(entries)


def _in_order(text: str, items: list[str]) -> bool:
    """Whether each item is in ``text`` (folded) as words, each after the one before."""
    at = 0
    for item in items:
        found = find_words(text, fold(item), at)
        if found is None:
            return False
        at = found[1]
    return True


def shows(text: str, wanted: str) -> bool:
    """Whether ``text`` (folded) shows ``wanted`` as words (in time linear in the text)."""
    return find_words(text, fold(wanted)) is not None


def _norm(text: str) -> str:
    return " ".join(text.split())
