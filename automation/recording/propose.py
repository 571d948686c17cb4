"""Checks proposed for a run's outcome, read from its final page.

When a run ends with ``done``, the page shows what it reached.  Before the tab goes, the
run proposes ``expect`` checks a person can tick when saving it as a scenario (see
:mod:`automation.recording.expect`), most telling first:

- that the page shows no error (an error list, a field marked invalid, an alert that is
  no success banner), when the run acted on the page and none shows now: ticked.  An app
  that refuses a save often shows the same page again, with what was typed in its fields;
- the state each box, select and field the run changed shows now (found again by its
  identity): ticked, but for a field that still holds what the run typed (the app did not
  write it: no page loaded since), which shows it whether or not the app took it; and a
  field that shows what the run typed, written again by the app (a page re-rendered with
  what was posted: a refusal does that too), is ticked only beside the check that no
  error shows;
- each text the run typed: how many rows show it now (0 says it is gone or filtered
  out), or that it is shown: ticked;
- phrases the ``done`` summary quotes that the page shows: ticked;
- the page's status and alert messages, its main heading and its address: offered.

Passwords, secrets and placeholders are never proposed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame

from automation.browser.effect import TOGGLE_STATE_JS
from automation.browser.identity import ElementIdentity, locate
from automation.browser.seen import errors_shown
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import BudgetExceeded, ScenarioInvalid, TabwrightError
from automation.recording import downloads, expect
from automation.recording.scenario import (
    BOX_ROLES,
    ELEMENT_ACTIONS,
    PLACEHOLDER,
    TYPED_ARG,
    ScenarioStep,
    literal,
    plain_click,
)
from automation.secrets import MASK

__all__ = ["Proposal", "propose_checks"]

MAX_PROPOSALS = 12
# A phrase in quotes: straight or typographic, double or single.
_QUOTED = re.compile("[\"\u201c'\u2018]([^\"\u201d'\u2019]{3,80})[\"\u201d'\u2019]")
_MESSAGES_JS = """() => {
  const seen = (e) => e.checkVisibility({ visibilityProperty: true }) &&
    e.getClientRects().length > 0;
  const text = (e) => (e.innerText || "").replace(/\\s+/g, " ").trim();
  const messages = Array.from(document.querySelectorAll(
    "[role=status], [role=alert], [aria-live=polite], [aria-live=assertive], output"))
    .filter(seen).map(text).filter((t) => t && t.length <= 120);
  const heading = Array.from(document.querySelectorAll("h1")).filter(seen).map(text)[0] || "";
  return { messages, heading: heading.length <= 120 ? heading : "" };
}"""


# Whether a field shows a value the app wrote (its value attribute, a selected option's
# own selected attribute: a page loaded again, or drawn by the app), not only one typed
# into it since.
_WRITTEN_JS = """(e) => {
  if (e.tagName === "SELECT") {
    const chosen = Array.from(e.selectedOptions);
    return chosen.length > 0 && chosen.every((o) => o.defaultSelected);
  }
  // (what was typed, still shown, is no value the app wrote: typed.js)
  if (window.__tabwrightTyped && window.__tabwrightTyped.shows(e)) return false;
  if (e.isContentEditable) return true;
  return typeof e.value === "string" && e.value === e.defaultValue;
}"""


@dataclass(frozen=True)
class Proposal:
    check: ScenarioStep  # an expect step
    why: str  # where it comes from, for the person
    picked: bool  # ticked unless the person says otherwise

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check.to_dict(), "why": self.why, "picked": self.picked}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Proposal:
        return cls(ScenarioStep.from_dict(data["check"]), str(data["why"]), bool(data["picked"]))


async def propose_checks(
    tab: Tab, steps: Sequence[Mapping[str, Any]], *, summary: str = "", budget: Budget
) -> list[Proposal]:
    """Checks for the page as it is now, after ``steps`` (StepRecorded as dicts)."""
    out: list[Proposal] = await _downloaded(tab)
    try:
        clean = await _no_error(tab, steps, budget)
        out += clean
        out += await _element_states(tab, steps, budget, clean=bool(clean))
        text = await expect.page_text(tab, budget)
        out += await _typed_texts(tab, steps, text, budget)
        out += _quoted(summary, text)
        out += await _page_messages(tab, text, budget)
    except BudgetExceeded:
        pass  # what was found in time is proposed
    unique: dict[tuple[Any, ...], Proposal] = {}
    texts: set[str] = set()  # one check a text: the first (most telling) one
    for found in out:
        # What the page shows is looked for as it is (a "${" in an address is no parameter).
        # The page it was proposed on, kept: a replay that ends on the server's answer to
        # a form at another address (one it refused) fails the check there.
        check = replace(found.check, args=literal(found.check.args), url=tab.page.url)
        proposal = replace(found, check=check)
        text = proposal.check.args.get("text")
        if isinstance(text, str):
            if expect.fold(text) in texts:
                continue
            texts.add(expect.fold(text))
        # One check an element and state: every box a run ticked has its own, also when
        # the words about two of them read alike.
        target = proposal.check.target()
        key = (proposal.check.describe(), target.sameness() if target else None)
        unique.setdefault(key, proposal)
    return list(unique.values())[:MAX_PROPOSALS]


async def _no_error(tab: Tab, steps: Sequence[Mapping[str, Any]], budget: Budget) -> list[Proposal]:
    """That the page shows no error, when the run acted on it (a form sent, a box ticked)
    and none shows now: a replay whose write the app refuses on the same page (what was
    typed shown again, an error list above it) fails it.  One shown now says nothing, nor
    does a page with a frame that does not answer (a widget that hangs): what it shows
    can't be read, now or in a replay, which would fail the check every time."""
    acted = any(row.get("ok", True) and row.get("action") in _ACTS for row in steps)
    unread: list[Frame] = []
    if not acted or await errors_shown(tab, budget, unread=unread) or unread:
        return []
    check = ScenarioStep("expect", {"kind": "no_error"})
    return [Proposal(check, "the page showed no error when the run was done", True)]


# What acts on a page (a hover or a scroll only looks).
_ACTS = ELEMENT_ACTIONS - {"hover"} | {"press"}


async def _element_states(
    tab: Tab, steps: Sequence[Mapping[str, Any]], budget: Budget, *, clean: bool
) -> list[Proposal]:
    """The state each changed element shows now: the last step on each counts.  A field
    showing what its step typed is ticked only when the page is ``clean`` (the check that
    no error shows is proposed): an app that refused it shows it again as well."""
    last: dict[tuple[Any, ...], tuple[int, Mapping[str, Any], ElementIdentity]] = {}
    for index, row in enumerate(steps):
        action = row.get("action")
        if not row.get("ok", True) or action not in ("check", "click", "select_option", "fill"):
            continue
        try:
            identity = ElementIdentity.from_dict(row.get("identity"))
        except TabwrightError:
            continue
        if identity.holds_password() or (action == "click" and not _ticks(row, identity)):
            continue
        last[identity.sameness()] = (index, row, identity)
    out = []
    changed = list(last.values())
    for position, (index, row, identity) in enumerate(changed):
        written = True
        # Each element is looked for in its share of what is left (the texts read after
        # them count as one more): one that takes all of it is left out, not every check
        # after it.  A share, not a fixed time: on a busy machine or page a search that
        # takes a few ms alone takes seconds.
        share = budget.remaining_ms() / (len(changed) - position + 1)
        try:
            located = await locate(
                tab.page, identity, budget=budget.child(share, label="finding a changed element")
            )
        except BudgetExceeded:
            if budget.expired:
                raise
            continue
        if located.element is None or located.found is None:
            continue
        try:
            if row["action"] in ("check", "click"):
                state = await budget.run(located.element.evaluate(TOGGLE_STATE_JS))
                if not isinstance(state, bool):
                    continue  # (a box that holds no state now)
                kind = "checked" if state else "unchecked"
                args: dict[str, Any] = {"kind": kind}
            else:
                value = await budget.run(located.element.evaluate(expect.VALUE_JS))
                if not isinstance(value, str) or not value.strip() or _private(value):
                    continue  # a field the app emptied (it took the value) says nothing
                args = {"kind": "value", "value": value}
                written = await budget.run(located.element.evaluate(_WRITTEN_JS))
        except PlaywrightError:
            continue
        check = ScenarioStep("expect", args, located.found)
        if row["action"] in ("check", "click") or (written and (clean or not _echoes(row, args))):
            out.append(Proposal(check, f"what step {index} left on the page", True))
        elif written:  # shown again as typed, an error beside it: it says nothing alone
            why = f"what step {index} typed, shown again in its field (an error page does so too)"
            out.append(Proposal(check, why, False))
        else:  # what the run typed, still in its field: it says nothing of the app
            why = f"what step {index} typed, still in its field (the app did not write it)"
            out.append(Proposal(check, why, False))
    return out


async def _typed_texts(
    tab: Tab, steps: Sequence[Mapping[str, Any]], text: str, budget: Budget
) -> list[Proposal]:
    typed: list[str] = []
    for row in steps:
        key = TYPED_ARG.get(str(row.get("action")))
        value = (row.get("args") or {}).get(key) if key else None
        if row.get("ok", True) and isinstance(value, str) and not _password(row):
            value = value.strip()
            if 3 <= len(value) <= 200 and not _private(value) and value not in typed:
                typed.append(value)
    out = []
    # A typed text shown only in a message ("Could not add 'Acme Ltd'") says nothing of
    # what the app kept: it would show as well when the app refused it.
    told = await expect.page_text(tab, budget, messages=False) if typed else ""
    for value in typed:
        rows = await expect.count_rows(tab, value, budget)
        if rows:  # one row or more: the list may grow with each replay (one more order)
            args = {"kind": "rows", "text": value, "count": 1, "at_least": True}
            check = ScenarioStep("expect", args)
            out.append(Proposal(check, "a text the run typed, as rows now show it", True))
        elif expect.shows(told, value):
            check = ScenarioStep("expect", {"kind": "text_visible", "text": value})
            out.append(Proposal(check, "a text the run typed, shown on the page", True))
        elif expect.shows(text, value):
            check = ScenarioStep("expect", {"kind": "text_visible", "text": value})
            why = "a text the run typed, shown only in a message (an error may repeat it)"
            out.append(Proposal(check, why, False))
        else:
            check = ScenarioStep("expect", {"kind": "rows", "text": value, "count": 0})
            out.append(Proposal(check, "a text the run typed: no row shows it now", False))
    return out


def _quoted(summary: str, text: str) -> list[Proposal]:
    out = []
    for match in _QUOTED.finditer(summary or ""):
        phrase = match.group(1).strip()
        if not _private(phrase) and expect.shows(text, phrase):
            check = ScenarioStep("expect", {"kind": "text_visible", "text": phrase})
            out.append(Proposal(check, "quoted in the run's summary", True))
    return out


async def _page_messages(tab: Tab, text: str, budget: Budget) -> list[Proposal]:
    try:
        found = await budget.run(tab.page.evaluate(_MESSAGES_JS))
    except PlaywrightError:
        return []
    out = []
    for message in found.get("messages", [])[:3]:
        if message and not _private(message):
            check = ScenarioStep("expect", {"kind": "text_visible", "text": message})
            out.append(Proposal(check, "a message the page shows", False))
    heading = found.get("heading", "")
    if heading and not _private(heading):
        check = ScenarioStep("expect", {"kind": "text_visible", "text": heading})
        out.append(Proposal(check, "the page's heading", False))
    parts = urlsplit(tab.page.url)
    if parts.scheme in ("http", "https"):
        where = (
            parts.path
            + (f"?{parts.query}" if parts.query else "")
            + (f"#{parts.fragment}" if parts.fragment else "")
        )
        if where not in ("", "/"):
            check = ScenarioStep("expect", {"kind": "url", "url": tab.page.url})
            out.append(Proposal(check, "the page's address", False))
    return out


async def _downloaded(tab: Tab) -> list[Proposal]:
    """A check of the run's latest download (name, type, size; a CSV's header and rows):
    an export is often what the run was for."""
    records = [r for r in (tab.downloads.records() if tab.downloads else []) if r.path]
    if not records:
        return []
    last = records[-1]
    assert last.path is not None
    try:
        args = await downloads.proposed(last.path, last.name)
        check = ScenarioStep("expect", expect.validate(args, has_element=False))
    except (OSError, ScenarioInvalid):
        return []
    return [Proposal(check, f"the run downloaded {last.name}", True)]


def _ticks(row: Mapping[str, Any], identity: ElementIdentity) -> bool:
    """Whether a click step ticked a box (a checkbox, a switch, a radio button, a button
    pressed in or out: what an agent or an MCP client clicks where a person's recording
    says check): the state it left is what the run did, and a click another day, on a
    box already so, would undo it."""
    plain = plain_click(row.get("args") or {})
    return plain and (identity.role in BOX_ROLES or identity.kind == "toggle")


def _echoes(row: Mapping[str, Any], args: Mapping[str, Any]) -> bool:
    """Whether a field's value is what its step typed."""
    typed = (row.get("args") or {}).get(TYPED_ARG.get(str(row.get("action")), "values"))
    if isinstance(typed, list):
        typed = ", ".join(str(t) for t in typed)
    return isinstance(typed, str) and expect.fold(typed) == expect.fold(str(args.get("value")))


def _password(row: Mapping[str, Any]) -> bool:
    """Whether a recorded step typed into a password field."""
    try:
        return ElementIdentity.from_dict(row.get("identity")).holds_password()
    except TabwrightError:
        return False


def _private(text: str) -> bool:
    """A secret, a placeholder or a masked password: never proposed."""
    return MASK in text or bool(PLACEHOLDER.search(text))
