"""Actions on one element of a tab, addressed by ref: a click, a hover, a key, a drag, a
scroll, a highlight (those that write a field and read it back are in
:mod:`automation.browser.fieldops`).

Every action resolves its ref first (fail closed: see :meth:`Tab.resolve`; a click as it
takes the element, in its own first round trip: :func:`~automation.browser.refs.to_act`),
refuses at once what can't work (hidden, disabled, not editable) instead of waiting out
its budget, and names the action and the ref in every error.  Each takes a parent
``budget``; without one it gets the tab's default action timeout.

Each function takes the tab it acts in and uses only its public methods and its core
(:class:`~automation.browser.core.TabCore`); :class:`~automation.browser.tab.Tab` offers
them as its methods, and settles after those that can set something off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from automation.browser.effect import click_target, dispose
from automation.browser.frames import silent_focus, silent_note
from automation.browser.refs import REFUSED, refusal, to_act
from automation.budget import Budget
from automation.errors import (
    ActionFailed,
    ActionInvalid,
    TabwrightError,
)
from automation.wording import named

if TYPE_CHECKING:
    from automation.browser.snapshot import RefEntry
    from automation.browser.tab import Tab

__all__ = [
    "MODIFIERS",
    "MOUSE_BUTTONS",
    "click",
    "click_event",
    "drag",
    "highlight",
    "hover",
    "press_key",
    "scroll",
    "told",
]

MOUSE_BUTTONS = ("left", "right", "middle")
MODIFIERS = ("Alt", "Control", "ControlOrMeta", "Meta", "Shift")
# A short outline around the element, for a person watching the live view.
_HIGHLIGHT_JS = """(el, ms) => {
  const box = el.getBoundingClientRect();
  const mark = document.createElement("div");
  mark.setAttribute("aria-hidden", "true");
  mark.style.cssText = `position:fixed;left:${box.left - 3}px;top:${box.top - 3}px;` +
    `width:${box.width + 6}px;height:${box.height + 6}px;border:3px solid #e8590c;` +
    "border-radius:4px;pointer-events:none;z-index:2147483647";
  document.documentElement.appendChild(mark);
  setTimeout(() => mark.remove(), ms);
}"""


def click_event(tab: Tab, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str] | None:
    """The event a click by ref ends with, on the ref's element, for its settle to wait
    for (:func:`~automation.browser.settles.settles`); None when its element is not in the
    main document (the settle watches that one) or the ref is not known."""
    ref = args[0] if args else kwargs.get("ref")
    try:
        entry = tab.core.entry(ref)
    except TabwrightError:
        return None
    if entry.frame:
        return None
    if kwargs.get("double"):
        return "dblclick", entry.ref
    return ("click" if kwargs.get("button", "left") == "left" else "auxclick"), entry.ref


async def click(
    tab: Tab,
    ref: str,
    *,
    button: str = "left",
    modifiers: Sequence[str] = (),
    double: bool = False,
    budget: Budget | None = None,
) -> str:
    if button not in MOUSE_BUTTONS:
        raise ActionInvalid(f"click: button must be one of {', '.join(MOUSE_BUTTONS)}")
    keys = _modifiers(modifiers, "click")
    budget = tab.core.budget(budget, "click")
    name = "double-click" if double else "click"
    label = None
    if tab.core.entry(ref).role in ("checkbox", "radio") and not double and button == "left":
        # A box hidden behind a styled label is clicked through its label.
        locator, entry = await tab.resolve(ref, budget=budget, action="click")
        handle = await tab.handle_of(entry, budget=budget)
        target = await click_target(handle, budget)
        label = target if target is not handle else None
        await dispose(handle)
    else:
        # Proven as the click takes it: no round trip of its own before the click.
        locator, entry = to_act(tab.core, ref)
    timeout = budget.playwright_timeout()
    if label is not None:
        work = label.click(modifiers=keys, timeout=timeout)  # type: ignore[arg-type]
    elif double:
        work = locator.dblclick(button=button, modifiers=keys, timeout=timeout)  # type: ignore[arg-type]
    else:
        work = locator.click(button=button, modifiers=keys, timeout=timeout)  # type: ignore[arg-type]
    what = f"{name} {entry.describe()}"
    try:
        await tab.core.call(what, budget, work)
    except ActionFailed as exc:
        if REFUSED not in exc.message:
            raise
        raise await refusal(tab.core, ref, budget=budget, action=name) from None
    finally:
        if label is not None:
            await dispose(label)
    tab.dialogs_raise(what)
    extra = f" with {'+'.join(keys)}" if keys else ""
    how = f" ({button} button)" if button != "left" else ""
    return f"{name}ed {told(entry)}{how}{extra}"


async def hover(tab: Tab, ref: str, *, budget: Budget | None = None) -> str:
    budget = tab.core.budget(budget, "hover")
    locator, entry = await tab.resolve(ref, budget=budget, action="hover")
    await tab.core.call(
        f"hover {entry.describe()}", budget, locator.hover(timeout=budget.playwright_timeout())
    )
    return f"hovering over {told(entry)}"


async def press_key(tab: Tab, key: str, *, ref: str = "", budget: Budget | None = None) -> str:
    """Press a key (``Enter``, ``Control+A``) on the ref's element, or on whatever has
    the focus when no ref is given."""
    if isinstance(key, str) and key != " ":  # " " is the space bar's key, as Playwright's
        key = key.strip()
    if not isinstance(key, str) or not key or len(key) > 60:
        raise ActionInvalid("press needs a key, like Enter or Control+A")
    budget = tab.core.budget(budget, "press")
    if ref:
        locator, entry = await tab.resolve(ref, budget=budget, action="press")
        what = f"press {key} on {entry.describe()}"
        await tab.core.call(what, budget, locator.press(key, timeout=budget.playwright_timeout()))
    else:
        what = f"press {key}"
        # A key goes where the focus is; a frame there that hangs would never take it.
        if (silent := await silent_focus(tab.page, budget)) is not None:
            raise ActionFailed(
                f"{what}: the focus is where keys can't reach: {silent_note(silent)}",
                hint="press with a ref, on the element the key is for",
            )
        await tab.core.call(what, budget, tab.page.keyboard.press(key))
    tab.dialogs_raise(what)
    return f"pressed {key}"


async def drag(tab: Tab, source: str, target: str, *, budget: Budget | None = None) -> str:
    budget = tab.core.budget(budget, "drag")
    src, src_entry = await tab.resolve(source, budget=budget, action="drag")
    dst, dst_entry = await tab.resolve(target, budget=budget, action="drag")
    await tab.core.call(
        f"drag {src_entry.describe()} to {dst_entry.describe()}",
        budget,
        src.drag_to(dst, timeout=budget.playwright_timeout()),
    )
    return f"dragged {src_entry.role} {src_entry.name!r} onto {dst_entry.role} {dst_entry.name!r}"


async def scroll(
    tab: Tab,
    *,
    ref: str = "",
    dx: int = 0,
    dy: int = 0,
    budget: Budget | None = None,
) -> str:
    """Scroll the ref's element into view, or the page by ``dx``/``dy`` pixels."""
    budget = tab.core.budget(budget, "scroll")
    if ref:
        locator, entry = await tab.resolve(ref, budget=budget, action="scroll")
        await tab.core.call(
            f"scroll to {entry.describe()}",
            budget,
            locator.scroll_into_view_if_needed(timeout=budget.playwright_timeout()),
        )
        return f"scrolled {told(entry)} into view"
    if not isinstance(dx, int) or not isinstance(dy, int) or (dx == 0 and dy == 0):
        raise ActionInvalid("scroll needs a ref, or dx/dy in pixels (like dy=600)")
    await tab.core.call(
        "scroll the page",
        budget,
        tab.page.evaluate("([x, y]) => window.scrollBy(x, y)", [dx, dy]),
    )
    position = await tab.core.call(
        "scroll the page", budget, tab.page.evaluate("() => [scrollX, scrollY]")
    )
    return f"scrolled the page to x={position[0]:.0f}, y={position[1]:.0f}"


async def highlight(
    tab: Tab, ref: str, *, duration_ms: int = 1_500, budget: Budget | None = None
) -> str:
    budget = tab.core.budget(budget, "highlight")
    locator, entry = await tab.resolve(ref, budget=budget, action="highlight")
    await tab.core.call(
        f"highlight {entry.describe()}",
        budget,
        locator.evaluate(_HIGHLIGHT_JS, max(100, min(int(duration_ms), 10_000))),
    )
    return f"highlighted {told(entry)}"


def told(entry: RefEntry) -> str:
    """The element in a result's words: ``button 'Save'``, ``the checkbox``."""
    return named(entry.role, entry.name)


def _modifiers(modifiers: Sequence[str], action: str) -> list[str]:
    if isinstance(modifiers, str):
        modifiers = [m for m in modifiers.split("+") if m]
    keys = list(modifiers)
    for key in keys:
        if key not in MODIFIERS:
            raise ActionInvalid(f"{action}: unknown modifier {key!r}", hint=", ".join(MODIFIERS))
    return keys
