"""A recorded native control that a redesign hid behind a widget, set and verified.

Back-office themes hide a ``<select>`` (1 by 1 px, ``aria-hidden``) behind a searchable
dropdown, and a checkbox under the label that draws its box.  Replay finds the native
element by its identity, but it is no longer in the page's snapshot, so the action code
an agent uses can't act on it.  :func:`set_behind_widget` does the step on it instead:

1. **through the native element**, as the page's own widget does: the options are chosen
   (or the box clicked) and ``input`` and ``change`` dispatched; it counts only when what
   the person sees shows it (the chosen option's label now shows beside the select, where
   it did not; the box's state is the one asked for);
2. otherwise **by role**: the visible ``combobox`` next to the select is clicked and the
   ``option`` of that label picked (a box's visible label is clicked), verified the same way;
3. otherwise ActionFailed: never a step reported done without its effect.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from playwright.async_api import ElementHandle
from playwright.async_api import Error as PlaywrightError

from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import ActionFailed

__all__ = ["WIDGET_ACTIONS", "FindAgain", "set_behind_widget"]

# The control found again on the page now (None: it is not there).
FindAgain = Callable[[Budget], Awaitable[ElementHandle | None]]

WIDGET_ACTIONS = frozenset({"select_option", "check"})

# What the person sees around the control: the visible text of its nearest container
# that shows any (up to 3 levels), the control's own text left out; the control's state.
_SEEN_JS = """(el) => {
  const shown = (n) => n.checkVisibility({ opacityProperty: true, visibilityProperty: true })
    && n.getBoundingClientRect().width > 2 && n.getBoundingClientRect().height > 2;
  const text = (root) => {
    const out = [];
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let t = walk.nextNode(); t; t = walk.nextNode()) {
      const p = t.parentElement;
      if (!p || el.contains(p) || !shown(p) || !t.data.trim()) continue;
      out.push(t.data.trim());
    }
    return out.join(" ").replace(/\\s+/g, " ");
  };
  let box = el.parentElement;
  let seen = "";
  for (let i = 0; box && i < 3; i++, box = box.parentElement) {
    seen = text(box);
    if (seen) break;
  }
  const chosen = el.tagName === "SELECT"
    ? Array.from(el.selectedOptions, (o) => o.label.trim()) : [];
  return { seen, chosen, checked: !!el.checked, tag: el.tagName.toLowerCase() };
}"""

# Choose the options (by label, else value) the way a widget sets its select.
_CHOOSE_JS = """(el, wanted) => {
  const picked = Array.from(el.options).filter((o) =>
    wanted.includes(o.label.trim()) || wanted.includes(o.value));
  if (!picked.length) return false;
  for (const o of el.options) o.selected = picked.includes(o);
  el.dispatchEvent(new Event("input", { bubbles: true }));
  el.dispatchEvent(new Event("change", { bubbles: true }));
  return true;
}"""

# The visible combobox standing for the select: beside it, in its nearest container.
_COMBOBOX_JS = """(el) => {
  const shown = (n) => n.checkVisibility({ opacityProperty: true, visibilityProperty: true })
    && n.getBoundingClientRect().width > 2;
  for (let box = el.parentElement, i = 0; box && i < 3; box = box.parentElement, i++) {
    const found = Array.from(box.querySelectorAll("[role=combobox], [aria-haspopup=listbox]"))
      .filter((c) => c !== el && shown(c));
    if (found.length === 1) return found[0];
    if (found.length > 1) return null;
  }
  return null;
}"""

# The box's visible label (what a person clicks when the box is drawn over).
_LABEL_JS = """(el) => Array.from(el.labels || []).find((l) =>
  l.checkVisibility() && l.getBoundingClientRect().width > 2) || null"""


async def set_behind_widget(
    tab: Tab, element: ElementHandle, action: str, args: dict[str, Any], budget: Budget,
    find_again: FindAgain | None = None,
) -> str:  # fmt: skip
    """Do ``action`` (select_option or check) on a native control hidden behind a widget,
    verified on what the person sees; ActionFailed saying what was tried.  A choice that
    sends its form (a filter) is verified on the page it leads to, on the control
    ``find_again`` finds there."""
    try:
        if action == "select_option":
            return await _select(tab, element, _wanted(args), budget, find_again)
        return await _check(tab, element, args.get("checked", True) is not False, budget)
    except PlaywrightError as exc:
        raise ActionFailed(f"the widget could not be operated: {exc.message}") from None


def _wanted(args: dict[str, Any]) -> list[str]:
    values = args.get("values")
    wanted = [values] if isinstance(values, str) else list(values or [])
    if not wanted or not all(isinstance(v, str) for v in wanted):
        raise ActionFailed("select_option needs one option label or a list of labels")
    return [v.strip() for v in wanted]


async def _seen(element: ElementHandle, budget: Budget) -> dict[str, Any]:
    return dict(await budget.run(element.evaluate(_SEEN_JS)))


def _shows(now: dict[str, Any], before: dict[str, Any], wanted: list[str]) -> bool:
    """The select holds the options asked for, and the page shows the first of them
    beside it (and did not before, unless it was already chosen)."""
    if sorted(now["chosen"]) != sorted(wanted) and not set(wanted) & set(now["chosen"]):
        return False
    label = now["chosen"][0] if now["chosen"] else wanted[0]
    already = sorted(before["chosen"]) == sorted(now["chosen"])
    return label in now["seen"] and (already or label not in before["seen"] or
                                     now["seen"] != before["seen"])  # fmt: skip


async def _select(
    tab: Tab, element: ElementHandle, wanted: list[str], budget: Budget,
    find_again: FindAgain | None,
) -> str:  # fmt: skip
    before = await _seen(element, budget)
    if before["tag"] != "select":
        raise ActionFailed("the element behind the widget is not a <select>")
    if not await budget.run(element.evaluate(_CHOOSE_JS, wanted)):
        raise ActionFailed(f"the select behind the widget has no option {wanted[0]!r}")
    await tab.settle(budget=budget)
    try:
        now = await _seen(element, budget)
    except PlaywrightError:  # the choice sent its form: the page it led to must show it
        again = await find_again(budget) if find_again is not None else None
        if again is None:
            raise ActionFailed(
                f"selected {wanted} in the hidden select; the page changed and the select "
                "is not on the page it led to"
            ) from None
        element, now = again, await _seen(again, budget)
    if _shows(now, before, wanted):
        return f"selected {wanted} through the select the page's widget listens to"
    # The widget does not follow its select: operate it as a person would.
    combobox = (await budget.run(element.evaluate_handle(_COMBOBOX_JS))).as_element()
    if combobox is None:
        raise ActionFailed(
            f"selected {wanted} in the hidden select, but the page does not show it, and "
            "no single widget stands for the select"
        )
    await budget.run(combobox.click(timeout=budget.remaining_ms()))
    option = tab.page.get_by_role("option", name=wanted[0], exact=True)
    await budget.run(option.first.click(timeout=budget.remaining_ms()))
    await tab.settle(budget=budget)
    if _shows(await _seen(element, budget), before, wanted):
        return f"selected {wanted} in the widget standing for the select"
    raise ActionFailed(f"chose {wanted[0]!r} in the widget, but the page does not show it")


async def _check(tab: Tab, element: ElementHandle, checked: bool, budget: Budget) -> str:
    before = await _seen(element, budget)
    if before["checked"] == checked:
        return f"already {'ticked' if checked else 'unticked'}"
    label = (await budget.run(element.evaluate_handle(_LABEL_JS))).as_element()
    if label is not None:  # the person's way: a click on what draws the box
        await budget.run(label.click(timeout=budget.remaining_ms()))
    else:
        await budget.run(element.evaluate("(el) => el.click()"))
    await tab.settle(budget=budget)
    if (await _seen(element, budget))["checked"] == checked:
        how = "its label" if label is not None else "the box the page draws over"
        return f"{'ticked' if checked else 'unticked'} the box through {how}"
    raise ActionFailed("clicked the box behind the widget, but its state did not change")
