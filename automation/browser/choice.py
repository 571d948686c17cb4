"""A click on an option of a list a combobox opened (a custom select, an autocomplete's
suggestions, a tag picker), judged by what the combobox shows after it.

The option's click is taken whenever the list closes; an app that closes the list and
keeps the old choice (its handler broke, the option is refused) left "Silver" where
"Gold" was clicked, and the click passed, the form saved with Silver, in replay and its
export alike.  So before a click on an option (``role=option``, not a native ``<option>``),
the combobox its list belongs to is found (the one whose ``aria-controls`` or
``aria-owns`` names the list, else the one combobox the page has open) and what it shows
is read; after it, the choice took when
the option is selected (``aria-selected``, a list that stays open), the combobox shows
the option's name (its value or its text: "Gold"; or the option's name holds what it
shows now, changed: "Gold" for "Gold, $10 a month"), or the text around it does (a tag
picker's chip beside its emptied field).  Else the click fails saying what the combobox
still shows.  Where no combobox names the list, or the page went away, nothing is judged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import JSHandle

from automation.browser.effect import dispose
from automation.browser.seen import find_words, fold
from automation.budget import Budget
from automation.errors import ActionFailed, BudgetExceeded
from automation.limits import cut_text

if TYPE_CHECKING:
    from playwright.async_api import ElementHandle

    from automation.browser.tab import Tab

__all__ = ["BOX_JS", "SELECTED_JS", "SHOWN_JS", "Choice", "before", "taken"]

# The combobox whose list holds the option: its aria-controls or aria-owns names the list.
BOX_JS = """(option) => {
  if (!option || option.tagName === "OPTION" || option.getAttribute("role") !== "option") {
    return null;
  }
  const list = option.closest("[role=listbox]");
  if (!list) return null;
  // (Read, not matched by a selector: a page may hide the browser's CSS.escape.)
  const id = list.id;
  const names = (e, a) => (e.getAttribute(a) || "").split(/\\s+/).includes(id);
  const named = id && [...document.querySelectorAll("[aria-controls], [aria-owns]")]
    .find((e) => names(e, "aria-controls") || names(e, "aria-owns"));
  if (named) return named;
  // Else the one combobox open now (one that opened a list without naming it).
  const open = document.querySelectorAll(
    "[role=combobox][aria-expanded=true], [aria-haspopup=listbox][aria-expanded=true]");
  return open.length === 1 && !open[0].contains(option) ? open[0] : null;
}"""
# What a combobox shows: its value (a field's) and its text, and the text around it (three
# levels up: a tag picker's chips) but for its list's, each cut short; null once it left
# the page.  Called on the combobox with the option.
SHOWN_JS = """(box, option) => {
  if (!box || !box.isConnected) return null;
  const cut = (t) => String(t || "").replace(/\\s+/g, " ").trim().slice(0, 2000);
  let around = box;
  for (let i = 0; i < 3 && around.parentElement; i++) around = around.parentElement;
  const list = option && option.isConnected ? option.closest("[role=listbox]") : null;
  // Its text as drawn, apart where a box or a control stands beside another (a chip
  // "Urgent" and a Save button written with nothing between them are two words).
  // (Read up to what is kept, and a bounded number of elements: a page's whole body.)
  const drawn = (n) => {
    const parts = [];
    let length = 0;
    let elements = 0;
    const walk = (x) => {
      for (const c of x.childNodes) {
        if (length > 4000 || elements > 3000) return;
        if (c.nodeType === 3) {
          parts.push(c.data);
          length += c.data.length;
        }
        if (c.nodeType !== 1 || c === list) continue;
        elements++;
        const style = getComputedStyle(c);
        if (style.display === "none" || style.visibility === "hidden") continue;
        const apart = style.display !== "inline" ||
          ["BUTTON", "INPUT", "SELECT", "TEXTAREA", "IMG", "BR"].includes(c.tagName);
        if (apart) parts.push(" ");
        walk(c);
        if (apart) parts.push(" ");
      }
    };
    walk(n);
    return parts.join("");
  };
  const value = typeof box.value === "string" ? box.value : "";
  return { box: cut(value + " " + (box.innerText || "")), around: cut(drawn(around)) };
}"""
# Whether the option is selected now (a list that stays open says so).
SELECTED_JS = "(o) => o.isConnected && o.getAttribute('aria-selected') === 'true'"


@dataclass
class Choice:
    """An option about to be clicked, the combobox it is chosen for and what it showed."""

    name: str
    option: ElementHandle
    box: JSHandle
    shown: str


async def before(tab: Tab, ref: str, *, budget: Budget | None) -> Choice | None:
    """The choice a click on the ref's element makes, when it is an option a combobox's
    list holds; None otherwise (or when the page can't say), at once for any other."""
    entry = tab.core.entry(ref)
    if entry.role != "option" or entry.frame:
        return None
    budget = tab.core.budget(budget, "click")
    handles: list[JSHandle] = []
    try:
        option = await tab.handle_of(entry, budget=budget)
        handles.append(option)
        box = await budget.run(option.evaluate_handle(BOX_JS))
        handles.append(box)
        shown = await budget.run(box.evaluate(SHOWN_JS, option)) if box.as_element() else None
    except (PlaywrightError, BudgetExceeded, ActionFailed):
        shown = None
    if not isinstance(shown, dict):
        for handle in handles:
            await dispose(handle)
        return None
    return Choice(entry.name, option, box, str(shown.get("box", "")))


async def taken(choice: Choice, *, budget: Budget) -> None:
    """ActionFailed when the combobox does not show the choice (see the module)."""
    try:
        if await budget.run(choice.option.evaluate(SELECTED_JS)):
            return
        now = await budget.run(choice.box.evaluate(SHOWN_JS, choice.option))
    except (PlaywrightError, BudgetExceeded):
        return  # the page went away (a choice that navigates), or can't say
    finally:
        await dispose(choice.option)
        await dispose(choice.box)
    if not isinstance(now, dict) or not choice.name.strip():
        return
    shows, around = fold(str(now.get("box", ""))), fold(str(now.get("around", "")))
    name = fold(choice.name)
    if find_words(shows, name) or find_words(around, name):
        return
    if shows and shows != fold(choice.shown) and find_words(name, shows):
        return
    raise ActionFailed(
        f"click option {cut_text(choice.name, 80)!r}: the choice did not take, the "
        f"combobox shows {cut_text(str(now.get('box', '')), 80)!r}",
        hint="the app closed the list without taking the option: choose it again, or see "
        "why the app refuses it",
    )
