"""Reaching a step's intent another way when its recorded path is gone.

A redesign may take a step's element away while the step's purpose stays within reach:
the "Add" link of the start page's Customers row is, in the new design, in a menu group
that starts collapsed, or a tab of a shell.  Before a replay asks a person, it may reach
the step's intent (:meth:`~automation.recording.scenario.ScenarioStep.purpose`) another
way, bounded and checked, in this order:

1. :func:`go_directly`: a link step whose target is known, on the replay's own origin, goes
   there (what the click would have done); it counts only when the page that follows holds
   the next step's element (or, when no step follows, is at the link's address);
2. an :class:`IntentAgent` (an LLM profile configured for replays,
   :mod:`automation.agent.intent`) gets the intent and the current page and a few actions
   at most, and must leave the page where the next step's element is found.  What it did
   is shown in the step's outcome and proposed as the step's identity for a person to
   confirm (an agent that only navigated: where it went, as the link step's target),
   counted as a heal, never as a silent pass.

Neither applies: the step needs a person, as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError

from automation.actions import execute
from automation.browser.identity import MAX_URL_CHARS, ElementIdentity, Located
from automation.browser.seen import find_words, fold, page_text
from automation.browser.served import address_shape
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.recording.placeholders import PARAM
from automation.recording.scenario import ScenarioStep

__all__ = ["AgentAttempt", "IntentAgent", "Reached", "go_directly"]

# Finds the next step's element in the page now (None: it is not there).
FindNext = Callable[[Budget], Awaitable[Located | None]]


@dataclass(frozen=True)
class Reached:
    """How the step's intent was reached: ``strategy`` direct or agent, what it did."""

    strategy: str
    result: str
    changes: list[str]
    healed: ElementIdentity | None = None  # agent: the element it acted on, proposed


@dataclass(frozen=True)
class AgentAttempt:
    """What an agent did for a step: its actions in words, and the identities of the
    elements it acted on (in order, with the action done on each)."""

    done: list[str] = field(default_factory=list)
    acted_on: list[tuple[str, ElementIdentity]] = field(default_factory=list)
    finished: str = ""  # how its run ended ("succeeded", "failed: …")
    went_to: list[str] = field(default_factory=list)  # the addresses it navigated to, in order


class IntentAgent(Protocol):
    """An agent that tries to reach ``intent`` on the tab's page in a few actions, so that
    the page shows ``goal``; bounded by ``budget``."""

    async def __call__(
        self, tab: Tab, *, intent: str, goal: str, budget: Budget
    ) -> AgentAttempt: ...


# What a page's fields hold (an edit form shows its record's name in one).
_FIELD_VALUES_JS = (
    "() => [...document.querySelectorAll('input:not([type=password]), textarea, select')]"
    ".map((e) => e.value).join(' ').slice(0, 100000)"
)


async def go_directly(
    tab: Tab, step: ScenarioStep, target: ElementIdentity, base_url: str, budget: Budget,
    find_next: FindNext | None,
) -> Reached | None:  # fmt: skip
    """Follow a link step's link to where it led (``target`` moved to the replay's base
    URL), verified; None when the step is no such link or the page that follows does not
    hold what comes next (the tab is then at that page).

    A link told by a parameter's value (its row, card or section shows it: ``target``'s
    ``shows``) whose address does not hold that value is never followed: it led to the
    record of the value it was recorded with (``/edit/12``), and is gone because no row
    shows this replay's value (a search that found nothing): going there would change
    another record, with the next step's element (an edit form's field) there all the
    same."""
    url = target.target
    base = urlsplit(base_url or tab.url)
    if step.action != "click" or not url or target.method or urlsplit(url)[:2] != base[:2]:
        return None  # not a link, or one that leaves the app: never followed blind
    stored = step.target()
    if target.shows and not (stored is not None and PARAM.search(stored.target)):
        return None  # another record's address: the value's row is not on the page
    await execute(tab, "navigate", {"url": url}, budget=budget)
    await tab.settle(budget=budget)
    if not await _shows_record(tab, target, budget):
        return None  # its address names another record now (the list's ids moved on)
    how = f"went to {url} directly ({step.purpose()}): the link is not on the page"
    if find_next is None:
        if urlsplit(tab.url).path.rstrip("/") != urlsplit(url).path.rstrip("/"):
            return None
        return Reached("direct", f"went to {url}", [how])
    found = await find_next(budget)
    if found is None:
        return None
    return Reached("direct", f"went to {url}; what the next step needs is there", [how])


async def _shows_record(tab: Tab, target: ElementIdentity, budget: Budget) -> bool:
    """Whether the page a record's link led to shows that record: a link in a row (an
    Edit beside each customer) whose address holds the record's id (``/edit/1``) leads
    to whichever record has that id where the replay runs.  The page (its text and what
    its fields hold) shows one of the words that told its row from the one most like it,
    and each number among them, as replay tells the row itself (identity_compare.js); a
    row that was its list's only one, its first word.  True for a link in no row, or
    whose address names no record by an id (a menu's "Add" beside "Customers")."""
    if "#" not in address_shape(target.target):
        return True
    told = list(target.row_words) or target.row_beside_name()[:1]
    if not told:
        return True
    try:
        shown = (
            await page_text(tab, budget)
            + " "
            + fold(str(await budget.run(tab.page.evaluate(_FIELD_VALUES_JS))))
        )
    except PlaywrightError:
        return False
    numbers = [w for w in told if w.isdigit()]
    return any(find_words(shown, fold(w)) for w in told) and all(
        find_words(shown, w) for w in numbers
    )


async def by_agent(
    tab: Tab, agent: IntentAgent, step: ScenarioStep, target: ElementIdentity, base_url: str,
    goal: str, budget: Budget, find_next: FindNext,
) -> Reached | None:  # fmt: skip
    """Let ``agent`` reach the step's intent; it counts when the next step's element is
    found after it.  The element it acted on last, doing what the step does, is proposed
    as the step's identity; a link step's agent that only navigated proposes where it went
    as the step's link evidence (``target``'s address: with it, a replay goes there
    directly when the link is gone, :func:`go_directly`)."""
    attempt = await agent(tab, intent=step.purpose(), goal=goal, budget=budget)
    if await find_next(budget) is None:
        return None
    said = "; ".join(attempt.done) or "nothing"
    changes = [f"done by the agent ({step.purpose()}): {said}", "needs a person's confirmation"]
    healed = next((identity for action, identity in reversed(attempt.acted_on)
                   if action == step.action), None)  # fmt: skip
    if healed is None and (url := _link_evidence(step, attempt, target, base_url)):
        healed = replace(target, target=url)
        changes.insert(1, f"proposed as where the link leads: {url} (once confirmed, a "
                       "replay goes there directly when the link is gone)")  # fmt: skip
    return Reached("agent", f"the agent reached it: {said}", changes, healed)


def _link_evidence(
    step: ScenarioStep, attempt: AgentAttempt, target: ElementIdentity, base_url: str
) -> str:
    """Where an agent that did nothing but navigate went, for a link step: its last address
    on the replay's origin ("" when it acted on the page, the step is no link, or that
    address is already the link's)."""
    if step.action != "click" or target.method or attempt.acted_on or not attempt.went_to:
        return ""
    url = attempt.went_to[-1]
    if urlsplit(url)[:2] != urlsplit(base_url)[:2] or len(url) > MAX_URL_CHARS:
        return ""
    return "" if url == target.target else url


def agent_goal(following: ScenarioStep | None, words: Callable[[Any], str]) -> str:
    """What the page must show once the agent is done: the next step's element."""
    if following is None or following.target() is None:
        return "the page the step leads to"
    return f"a page with {words(following.target())}"
