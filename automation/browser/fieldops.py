"""Actions that write a field of a tab, addressed by ref, and read it back from the
field now: fill, type, tick, choose, a whole form at once (:func:`fill_form`), files given
to a file input.

They follow :mod:`automation.browser.interact`'s rules (the ref resolved first, fail
closed; what can't work refused at once; the action and the ref named in every error; a
parent ``budget``, else the tab's default action timeout).  A value is judged by the field
as the page left it: a field emptied after typing, a tick or a choice the page put back,
files the page refused fail their action.  :class:`~automation.browser.tab.Tab` offers
them as its methods.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from playwright.async_api import ElementHandle
from playwright.async_api import Error as PlaywrightError

from automation.browser.effect import TOGGLE_STATE_JS, Subject, click_target, dispose
from automation.browser.interact import told
from automation.browser.masking import mask_field
from automation.browser.seen import errors_shown
from automation.browser.settles import settles
from automation.browser.textmatch import last_key
from automation.browser.uploads import FILES_JS, refused_files, upload_paths
from automation.budget import Budget
from automation.errors import (
    ActionFailed,
    ActionInvalid,
    BrowserClosed,
    BudgetExceeded,
    Cancelled,
    RefError,
    TabwrightError,
)
from automation.wording import verb

if TYPE_CHECKING:
    from automation.browser.tab import Tab

__all__ = [
    "ANSWER_MET_MS",
    "MAX_KEY_DELAY_MS",
    "MAX_LENGTH_JS",
    "SELECTED_JS",
    "OnField",
    "check_key_delay",
    "files_given",
    "fill",
    "fill_form",
    "select_option",
    "set_checked",
    "set_input_files",
    "type_text",
]

MAX_KEY_DELAY_MS = 1_000  # type's pause between keys: a field that reacts to each key

# A field of fill_form, done or failed, as the step it is: index, action (fill, check or
# select_option), its args (with the ref), the error if it failed, its duration in ms.
OnField = Callable[[int, str, dict[str, Any], "TabwrightError | None", int], Awaitable[None]]
_SELECT_ROLES = ("combobox", "listbox")
_FORM_ARG = {"fill": "value", "check": "checked", "select_option": "values"}
MAX_TEXT_CHARS = 100_000  # a fill larger than this is a mistake, not a form value
MAX_FORM_FIELDS = 50
_READ_MS = 2_000  # a read of what the page shows around an action: at once, or not at all
_OPTIONS_JS = """(el) => el.tagName === "SELECT" ?
  Array.from(el.options, (o) => [o.label.trim(), o.value]) : null"""
SELECTED_JS = """(el) => el.tagName === "SELECT" ?
  Array.from(el.selectedOptions, (o) => o.value) : null"""
# Whether a <select> shows its placeholder, not a choice: a menu of actions shows it again
# once it acted.  A placeholder is an option with no value or one a person can't choose, or
# a first option that asks rather than answers, whatever its value ("none"): its value
# is -1, or its words prompt ("Select…", "Choose a status", "Bulk actions", "---").
PLACEHOLDER_JS = r"""(el) => {
  const prompts = (text) => /^[-\u2013\u2014_.*\s]+$|(?:\u2026|\.\.\.)$/.test(text) ||
    /^(?:please\s+)?(?:select|choose)\b/i.test(text) ||
    /\b(?:actions?|aktion(?:en)?|acciones|azioni)\b/i.test(text);
  const placeholder = (o) => o.value === "" || o.disabled || o.hidden ||
    (o.index === 0 && (o.value === "-1" || prompts(o.text.trim())));
  return el.tagName === "SELECT" && el.selectedOptions.length > 0 &&
    Array.from(el.selectedOptions).every(placeholder);
}"""
_VALUE_JS = "(el) => el.isContentEditable ? el.innerText : (el.value ?? null)"
# The longest timer a tick or a choice that asked the app's server waits for before it is
# read again: an app that meets the answer a moment later (it puts the old choice back
# after an animation, a notice); not a toast's hiding.  The export waits the same.
ANSWER_MET_MS = 1_000
# How many characters a field holds (-1: no limit); the export reads it the same way.
MAX_LENGTH_JS = "(el) => (typeof el.maxLength === 'number' ? el.maxLength : -1)"
_CARET_TO_END_JS = """(el) => {
  if (typeof el.setSelectionRange === "function" && typeof el.value === "string") {
    try { el.setSelectionRange(el.value.length, el.value.length); } catch (err) {}
  }
}"""


async def fill(
    tab: Tab, ref: str, value: str, *, submit: bool = False, budget: Budget | None = None
) -> str:
    """Replace the field's value at once (``input`` and ``change`` events fire), then
    read it back from the field now (an app may have replaced the field meanwhile)."""
    _check_text(value, "fill")
    budget = tab.core.budget(budget, "fill")
    subject = await Subject.hold(tab, ref, budget=budget, action="fill", identify=submit)
    try:
        return await _fill(tab, subject, value, submit, budget)
    finally:
        await subject.release()


def check_key_delay(delay_ms: object) -> None:
    """ActionInvalid unless ``delay_ms`` is a whole number of milliseconds from 0 to
    MAX_KEY_DELAY_MS.  Run when the action's args are read (a scenario file's at import,
    a model's before the call) and again when it runs."""
    whole = isinstance(delay_ms, int) and not isinstance(delay_ms, bool)
    if not whole or not 0 <= delay_ms <= MAX_KEY_DELAY_MS:
        raise ActionInvalid(f"type: delay_ms must be a whole number from 0 to "
                            f"{MAX_KEY_DELAY_MS}, not {delay_ms!r}")  # fmt: skip


async def type_text(
    tab: Tab,
    ref: str,
    text: str,
    *,
    submit: bool = False,
    delay_ms: int = 0,
    clear: bool = True,
    budget: Budget | None = None,
) -> str:
    """Type key by key, as a person would (for fields that react to each key); the
    field is cleared first unless ``clear`` is false.  Keys go to the field now: a
    field the app replaced while it was cleared keeps them coming, and one the app
    replaces between keys does too when the app moves the focus to the new one, as
    apps do for a person typing."""
    _check_text(text, "type")
    check_key_delay(delay_ms)
    budget = tab.core.budget(budget, "type")
    subject = await Subject.hold(tab, ref, budget=budget, action="type", identify=True)
    entry = subject.entry
    what = f"type into {entry.describe()}"
    timeout = _ms(budget)
    try:
        await mask_field(tab, subject.handle, text, budget)  # before a key is drawn
        if clear and not delay_ms:
            await tab.core.call(what, budget, subject.handle.fill(text, timeout=timeout))
        else:
            if clear:
                await tab.core.call(what, budget, subject.handle.fill("", timeout=timeout))
            field = await _field_now(subject, what, budget)
            await tab.core.call(what, budget, field.focus())
            if not clear:  # add at the end, as a person clicking after the text would
                await tab.core.call(what, budget, field.evaluate(_CARET_TO_END_JS))
            await tab.core.call(what, budget, tab.page.keyboard.type(text, delay=delay_ms))
        shown = await _typed_value(subject, text, what, budget, whole=clear)
        if submit:
            await _press_enter(tab, subject, what, budget)
    finally:
        await subject.release()
    return (
        f"typed {_how_long(tab, text)} into {told(entry)}"
        + (" and pressed Enter" if submit else "")
        + shown
    )


async def set_checked(
    tab: Tab, ref: str, checked: bool = True, *, budget: Budget | None = None
) -> str:
    """Click a checkbox, radio or switch until it has the state asked for, judged on
    the element now: the app may replace it (its whole row) as it changes."""
    budget = tab.core.budget(budget, "check")
    subject = await Subject.hold(tab, ref, budget=budget, action="check", identify=True)
    try:
        return await _kept(tab, subject, TOGGLE_STATE_JS, budget,
                           lambda: _set_checked(tab, subject, checked, budget))  # fmt: skip
    finally:
        await subject.release()


async def select_option(
    tab: Tab, ref: str, values: str | Sequence[str], *, budget: Budget | None = None
) -> str:
    """Choose options of a <select> by their label (or, failing that, their value),
    then read the choice back from the select now."""
    wanted = _labels(values)
    budget = tab.core.budget(budget, "select_option")
    subject = await Subject.hold(tab, ref, budget=budget, action="select_option", identify=True)
    try:
        return await _kept(tab, subject, SELECTED_JS, budget,
                           lambda: _select(tab, subject, wanted, budget))  # fmt: skip
    finally:
        await subject.release()


async def _kept(
    tab: Tab, subject: Subject, js: str, budget: Budget, act: Callable[[], Awaitable[str]]
) -> str:
    """What ``act`` (a tick, a choice) says, once the page settled after it still showing
    what it left: ActionFailed where the page put back the state from before it (an app
    that asks its server whether Express shipping is available, and on a no shows
    Standard again and says why: read at once, the choice held, and the order went with
    Standard) or changed it to another of its own (Pickup instead).  When it asked the
    server, the page is held first (the timers of up to :data:`ANSWER_MET_MS` it set as
    the answer came run: an app that puts it back a moment later).  ``js`` reads the
    state on the element now.  A select shown with its placeholder ("Bulk actions…") again,
    saying no new error, is a menu of actions that acted, not a choice refused."""
    before, _ = await subject.read(js, budget)
    menu = js == SELECTED_JS and (await subject.read(PLACEHOLDER_JS, budget))[0] is True
    said_before = await errors_shown(tab, budget.child(_READ_MS)) if menu else []

    async def acted() -> tuple[str, Any]:
        said = await act()
        return said, (await subject.read(js, budget))[0]  # as the action left it

    said, left = await _given(tab, acted, budget=budget)
    now, where = await subject.read(js, budget)
    if menu and where is not None and now == before:  # its placeholder again
        new = [e for e in await errors_shown(tab, budget.child(_READ_MS)) if e not in said_before]
        if new:
            raise ActionFailed(
                f"{said}, but the page put it back as it was, saying {new[0][:200]!r}",
                hint="the page refused it: read what it says",
            )
        return f"{said}; the select then showed its placeholder again (a menu of actions)"
    asked = tab.settler.last is not None and (tab.settler.last.requests or tab.settler.last.pending)
    if where is not None and left != before and now != before and asked:
        # It asked the app's server: what the page does with the answer may come a
        # moment later (a timer set as the answer came), which a person waits to see.
        await tab.settler.hold(budget.child(label="the answer met"), timer_ms=ANSWER_MET_MS)
        now, where = await subject.read(js, budget)
    if where is None or left == before or now == left:
        return said
    shown = await errors_shown(tab, budget.child(_READ_MS))
    saying = f", saying {shown[0][:200]!r}" if shown else ""
    if now != before:  # not the step's choice: the app's own (Pickup when Express can't go)
        raise ActionFailed(
            f"{said}, but the page changed it to {_shown_state(now)}{saying}",
            hint="the page chose otherwise: read what it says, choose another or wait",
        )
    raise ActionFailed(
        f"{said}, but the page put it back as it was{saying}",
        hint="the page refused the change: read what it says, choose another or wait",
    )


def _shown_state(state: Any) -> str:
    """A select's options (their values) or a box's state, as a verdict says it."""
    if isinstance(state, list):
        return ", ".join(repr(str(value)[:100]) for value in state[:5]) or "no option"
    return repr(state)


async def fill_form(
    tab: Tab,
    fields: Sequence[dict[str, Any]],
    *,
    budget: Budget | None = None,
    on_field: OnField | None = None,
) -> str:
    """Several fields in one call: text is filled, a bool checks or unchecks, a
    <select> takes a label or a list of labels.  Stops at the first field that fails,
    saying which one.  Every field's identity is taken first: when filling one field
    re-renders the form, the next fields are found again by their identities (their
    refs then point at nodes that are gone).  A tick or a choice settles as its own action
    does, and one the page puts back fails it (:func:`_field`); text fields in a row
    settle once after the last of them.  ``on_field``
    hears of each field done or failed as the step it is (fill, check or select_option,
    with its args)."""
    if not isinstance(fields, list | tuple) or not fields:
        raise ActionInvalid('fill_form needs "fields": [{"ref": "e5", "value": "..."}]')
    if len(fields) > MAX_FORM_FIELDS:
        raise ActionInvalid(f"fill_form takes at most {MAX_FORM_FIELDS} fields")
    for i, field in enumerate(fields):
        if not isinstance(field, dict) or "ref" not in field or "value" not in field:
            raise ActionInvalid(f"fill_form: field {i} needs a ref and a value")
        if not isinstance(field["value"], str | bool | list):
            raise ActionInvalid(f"fill_form: field {i} value must be text, true/false or a list")
        if isinstance(field["value"], list):
            _labels(field["value"])
        elif isinstance(field["value"], str):
            _check_text(field["value"], "fill_form")
    budget = tab.core.budget(budget, "fill_form")
    if len(fields) > 1:
        for i, field in enumerate(fields):
            try:
                if tab.core.entry(field["ref"]).ref not in tab.state.identities:
                    await tab.target(field["ref"], budget=budget)
            except (ActionFailed, RefError) as exc:
                raise type(exc)(
                    f"fill_form: field {i} ({field['ref']}): {exc.message}; nothing was filled",
                    hint=exc.hint,
                ) from None
    done: list[str] = []

    async def one(i: int, alone: bool = False) -> None:
        """Field ``i``, told to ``on_field``; its error raised once told.  ``alone``: not
        in a run of text fields (text typed into it settles on its own)."""
        ref, value = fields[i]["ref"], fields[i]["value"]
        action = {bool: "check", list: "select_option"}.get(type(value), "fill")
        started = time.monotonic()
        error: TabwrightError | None = None
        try:
            # A combobox may be a <select>, which takes the text as an option's label.
            maybe_select = action == "fill" and tab.core.entry(ref).role in _SELECT_ROLES
            subject = await Subject.hold(
                tab, ref, budget=budget, action="select_option" if maybe_select else action,
                identify=True, follow=True,
            )  # fmt: skip
            try:
                if maybe_select and await _is_select(tab, subject, budget):
                    action, value = "select_option", [value]
                await _field(tab, subject, action, value, budget, alone=alone)
            finally:
                await subject.release()
        except (Cancelled, BrowserClosed):
            raise
        except (ActionFailed, RefError, BudgetExceeded) as exc:
            error = exc
            if isinstance(exc, ActionFailed | RefError):  # say which field, keep the kind
                error = type(exc)(
                    f"fill_form stopped at field {i} ({ref}) after {len(done)} done: {exc.message}",
                    hint=exc.hint,
                )
        if on_field is not None:
            args = {"ref": ref, _FORM_ARG[action]: value}
            await on_field(i, action, args, error, int((time.monotonic() - started) * 1000))
        if error is not None:
            raise error
        done.append(str(ref))

    async def typed(first: int, end: int) -> None:
        for i in range(first, end):
            await one(i)

    i = 0
    while i < len(fields):
        end = i
        while end < len(fields) and _typed_only(tab, fields[end]):
            end += 1
        if end > i:  # text fields in a row: settled once after the last of them
            await _given(tab, functools.partial(typed, i, end), budget=budget)
            i = end
        else:  # a tick or a choice (settled, then read again), or a combobox (_field)
            await one(i, alone=True)
            i += 1
    return f"filled {len(done)} fields: {', '.join(done)}"


def _typed_only(tab: Tab, field: dict[str, Any]) -> bool:
    """Whether a form's field takes text only (no tick, no choice: not a combobox,
    which may be a <select>)."""
    if not isinstance(field["value"], str):
        return False
    try:
        return tab.core.entry(field["ref"]).role not in _SELECT_ROLES
    except RefError:
        return False  # (its own turn says why)


async def _field(
    tab: Tab, subject: Subject, action: str, value: Any, budget: Budget, *, alone: bool
) -> None:
    """One field of a form.  A tick or a choice is settled after as its own action is,
    and read again then, as :func:`set_checked` and :func:`select_option` read theirs (a
    replay takes each field as a step of its own, and judges it so); text is settled
    with the text fields around it (fill_form), or on its own when ``alone`` (a combobox
    that turned out no <select>)."""
    if action == "check":
        await _kept(tab, subject, TOGGLE_STATE_JS, budget,
                    lambda: _set_checked(tab, subject, value, budget))  # fmt: skip
    elif action == "select_option":
        await _kept(tab, subject, SELECTED_JS, budget,
                    lambda: _select(tab, subject, value, budget))  # fmt: skip
    elif alone:
        await _given(tab, lambda: _fill(tab, subject, value, False, budget), budget=budget)
    else:
        await _fill(tab, subject, value, False, budget)


async def set_input_files(
    tab: Tab, ref: str, files: Sequence[str], *, budget: Budget | None = None
) -> str:
    """Attach files to a file input; only files inside the configured upload folder,
    judged by what the page did with them (:func:`files_given`)."""
    paths = upload_paths(tab.config.upload_dir, files)
    budget = tab.core.budget(budget, "set_input_files")
    locator, entry = await tab.resolve(ref, budget=budget, action="set_input_files")
    what = f"attach files to {entry.describe()}"
    handle = await tab.core.call(what, budget, locator.element_handle(timeout=_ms(budget)))
    try:

        def attach() -> Awaitable[None]:
            return tab.core.call(what, budget, handle.set_input_files(paths, timeout=_ms(budget)))

        await files_given(tab, what, paths, attach, field=handle, budget=budget)
    finally:
        await dispose(handle)
    return f"attached {', '.join(p.name for p in paths) or 'nothing (cleared)'} to {told(entry)}"


async def files_given(
    tab: Tab, what: str, paths: Sequence[Path], give: Callable[[], Awaitable[Any]],
    *, field: ElementHandle | None, budget: Budget,
) -> Any:  # fmt: skip
    """What ``give`` (attaching files to a file input ``field``, or dropping them where
    there is none) returns, once the page is done with the files; ActionFailed where it
    refused them (:func:`~automation.browser.uploads.refused_files`): an app that empties
    the input and says "Only PDF receipts are accepted" (the form would go on without the
    file)."""
    before = await _files_held(field, budget)
    said_before = await errors_shown(tab, budget.child(_READ_MS))
    given = await _given(tab, give, budget=budget)
    after = await _files_held(field, budget)
    said = [e for e in await errors_shown(tab, budget.child(_READ_MS)) if e not in said_before]
    names = [p.name for p in paths]
    refused = refused_files(names, before, after, said)
    if refused:
        raise ActionFailed(
            f"{what}: the page refused {', '.join(names)}: {refused[:300]!r}",
            hint="give a file the page takes (its type and size), or change the file",
        )
    return given


@settles
async def _given(tab: Tab, give: Callable[[], Awaitable[Any]], *, budget: Budget) -> Any:
    """What ``give`` returns, the page settled after what it set off (its checks)."""
    return await give()


async def _files_held(handle: ElementHandle | None, budget: Budget) -> dict[str, Any] | None:
    """The file input as FILES_JS reads it; None when it is out of the page or not read."""
    if handle is None:
        return None
    try:
        state = await budget.child(_READ_MS).run(handle.evaluate(FILES_JS))
    except (PlaywrightError, BudgetExceeded):
        return None
    return state if isinstance(state, dict) else None


def _how_long(tab: Tab, value: str) -> str:
    """How much was typed, as the step's answer says it: a secret's length is none of its
    reader's business (a password's length narrows a guess)."""
    if tab.is_secret is not None and tab.is_secret(value):
        return "a secret"
    return f"{len(value)} characters"


async def _fill(tab: Tab, subject: Subject, value: str, submit: bool, budget: Budget) -> str:
    entry = subject.entry
    what = f"fill {entry.describe()}"
    await mask_field(tab, subject.handle, value, budget)  # before the value is drawn
    await tab.core.call(what, budget, subject.handle.fill(value, timeout=_ms(budget)))
    if key := last_key(value):  # released, as a person's last key is (a keyup filter)
        await tab.core.call(what, budget, tab.page.keyboard.up(key))
    shown = await _typed_value(subject, value, what, budget)
    if submit:
        await _press_enter(tab, subject, what, budget)
    return (
        f"filled {told(entry)} with {_how_long(tab, value)}"
        + (" and pressed Enter" if submit else "")
        + shown
    )


async def _set_checked(tab: Tab, subject: Subject, checked: bool, budget: Budget) -> str:
    entry = subject.entry
    word = verb("check", {"checked": checked})  # tick or untick: "check" is for checks
    what = f"{word} {entry.describe()}"
    state, _ = await subject.read(TOGGLE_STATE_JS, budget)
    if state is None:
        raise ActionFailed(
            f"{what}: it is not a checkbox, radio or switch", hint="click it instead"
        )
    if state == checked:
        return f"{told(entry)} was already {word}ed"
    if not checked and entry.role in ("radio", "menuitemradio"):
        raise ActionFailed(f"{what}: a radio button can't be unticked", hint="tick another one")
    await subject.click(what, budget)
    tab.dialogs_raise(what)
    state, where = await subject.settle(TOGGLE_STATE_JS, lambda s: s == checked, budget)
    if where is not None and state != checked and where is not subject.handle:
        # The page replaced the box while it was clicked (leaving a field redraws the
        # form on mousedown): the click landed on no box.  A person clicks again.
        target = await click_target(where, budget)
        await tab.core.call(what, budget, target.click(timeout=_ms(budget)))
        tab.dialogs_raise(what)
        state, where = await subject.settle(TOGGLE_STATE_JS, lambda s: s == checked, budget)
    if where is None:
        return (
            f"clicked {told(entry)} to {word} it; the page then removed it, "
            "so its state could not be read"
        )
    if state != checked:
        raise ActionFailed(
            f"{what}: clicking it did not {word} it (it is still "
            f"{'ticked' if state else 'unticked'})",
            hint="the page may need something else first; look at it again",
        )
    return f"{word}ed {told(entry)}" + (" (the page re-rendered it)" if subject.replaced else "")


def _labels(values: object) -> list[str]:
    wanted = [values] if isinstance(values, str) else values
    if not isinstance(wanted, list | tuple) or not wanted:
        raise ActionInvalid("select_option needs one option label or a list of labels")
    if not all(isinstance(v, str) for v in wanted):
        raise ActionInvalid("select_option needs one option label or a list of labels")
    return list(wanted)


async def _select(tab: Tab, subject: Subject, wanted: list[str], budget: Budget) -> str:
    entry = subject.entry
    what = f"select {wanted} in {entry.describe()}"
    options = await tab.core.call(what, budget, subject.handle.evaluate(_OPTIONS_JS))
    if options is None:
        raise ActionFailed(f"{what}: the element is not a <select>", hint="click it instead")
    picked = []
    for value in wanted:
        match = next((v for label, v in options if label == value.strip()), None)
        if match is None:
            match = next((v for _, v in options if v == value), None)
        if match is None:
            labels = ", ".join(repr(label) for label, _ in options[:20])
            raise ActionFailed(f"{what}: no option {value!r}", hint=f"options: {labels}")
        picked.append(match)
    await tab.core.call(what, budget, subject.handle.select_option(picked, timeout=_ms(budget)))
    chosen, where = await subject.settle(
        SELECTED_JS, lambda now: sorted(now or []) == sorted(picked), budget
    )
    if (
        where is not None
        and sorted(chosen or []) != sorted(picked)
        and not (await subject.read(PLACEHOLDER_JS, budget))[0]
    ):  # (a menu of actions showing its placeholder again: judged by _kept)
        raise ActionFailed(
            f"{what}: the page changed the choice to {chosen}",
            hint="the option may not be allowed now; look at the page again",
        )
    return f"selected {', '.join(repr(v) for v in wanted)} in {told(entry)}"


async def _is_select(tab: Tab, subject: Subject, budget: Budget) -> bool:
    return bool(
        await tab.core.call(
            "inspect", budget, subject.handle.evaluate("el => el.tagName === 'SELECT'")
        )
    )


def _ms(budget: Budget) -> float:
    return budget.playwright_timeout()


async def _field_now(subject: Subject, what: str, budget: Budget) -> Any:
    field = await subject.now(budget)
    if field is None:
        raise ActionFailed(
            f"{what}: the page replaced the field and it could not be found again",
            hint="take a new snapshot and act on the field there",
        )
    return field


async def _press_enter(tab: Tab, subject: Subject, what: str, budget: Budget) -> None:
    field = await _field_now(subject, what, budget)
    await tab.core.call(what, budget, field.press("Enter", timeout=_ms(budget)))
    tab.dialogs_raise(what)


_BREAKS = frozenset("\r\n")


def _plain(text: str) -> str:
    """Letters and digits only: what a mask or a formatter keeps of what was typed."""
    return "".join(c for c in text.casefold() if c.isalnum())


async def _typed_value(
    subject: Subject, text: str, what: str, budget: Budget, *, whole: bool = True
) -> str:
    """Judge typing by the field now: an empty field after typing something failed; a
    field showing other text (a mask, a formatter, a length limit) is said in the result."""
    shown, field = await subject.settle(
        _VALUE_JS, lambda v: isinstance(v, str) and (v == text if whole else text in v), budget,
        window_ms=300,
    )  # fmt: skip
    if field is None or not isinstance(shown, str):
        return ""  # gone, or a field without a value to read: nothing to judge it by
    if text and not shown and _plain(text):
        raise ActionFailed(
            f"{what}: the field is empty after typing",
            hint="the page may have moved the focus or refused the text; look at it again",
        )
    if shown == text if whole else text in shown:
        return ""
    if whole and len(shown) < len(text):
        # A field that holds fewer characters (maxlength) cut the value: the app would keep
        # another one than asked for (a customer's name cut short).
        limit, _ = await subject.read(MAX_LENGTH_JS, budget)
        if isinstance(limit, int) and 0 <= limit < len(text):
            raise ActionFailed(
                f"{what}: the field holds at most {limit} characters, fewer than the value's",
                hint="give a value that fits, or look at what the field asks for",
            )
    # A mask or a formatter keeps the letters and digits; a line break a one-line field
    # can't hold (it shows a space) is a change of the text all the same: said.
    breaks_kept = not _BREAKS.intersection(text) or _BREAKS.intersection(shown)
    if _plain(text) in _plain(shown) and breaks_kept:
        return ""
    return f" (the field shows {shown[:80]!r})"


def _check_text(text: object, action: str) -> None:
    if not isinstance(text, str):
        raise ActionInvalid(f"{action} needs text as a string")
    if len(text) > MAX_TEXT_CHARS:
        raise ActionInvalid(f"{action}: {len(text)} characters is more than {MAX_TEXT_CHARS}")
