"""Steps in a popup window: where a scenario's steps happen, recorded and replayed.

A back office opens popups all the time: the "+" beside a select opens an "add related
record" window whose Save sets the new record in the opener's select and closes itself; a
"Details" link opens a page with ``target=_blank``.  A run's steps there are part of its
work, so a scenario says where its steps happen with a ``tabs`` step:

- ``{"op": "popup"}``: the steps after it act in the popup the steps before opened (the
  first one opened and not entered yet: by order of opening, never by a tab's number,
  which differs between runs);
- ``{"op": "opener"}``: back to the page that opened the popup; with ``"closed": true``
  the popup closed itself (its Save), which the replay waits for, and with
  ``"changed": true`` it changed its opener's form as it did when recorded (the select now
  holds the new record), which the replay waits for too;
- ``{"op": "first"}``: back to the replay's own tab.

A run records where each move went (:func:`moved_to`, the ``to`` of its ``tabs`` step);
:func:`automation.recording.fromrun.plan` keeps the moves into popups its own steps opened
and the steps done there.  :class:`Windows` follows them in a replay: a popup that does not
open, or does not close when its Save should have closed it, or closes without changing
its opener, fails the step, saying so.  Each page a replay acts in is a tab of its own
(its log, dialogs, settling), so every step is located and judged there as in the first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import ActionFailed, ScenarioInvalid

if TYPE_CHECKING:
    from automation.recording.replay import Replay

__all__ = [
    "FORM_STATE_JS",
    "TABS",
    "Windows",
    "form_state",
    "moved_to",
    "tab_args",
]

TABS = "tabs"
OPS = ("popup", "opener", "first")

# What a page's forms hold: every field's name and value (a box: ticked or not; a select:
# its options too, so a record added to it shows).  Compared before a popup was entered
# and after it closed, it says whether the popup changed its opener.
FORM_STATE_JS = """() => Array.from(document.querySelectorAll('input, select, textarea'))
  .filter((e) => !['hidden', 'submit', 'button'].includes(e.type))
  .map((e) => [e.name || e.id, e.type === 'checkbox' || e.type === 'radio' ? String(e.checked)
    : e.tagName === 'SELECT' ? e.value + '|' + Array.from(e.options).map((o) => o.value)
    : e.value]).map((pair) => pair.join('=')).join('\\n')"""


async def form_state(page: Page, budget: Budget) -> str | None:
    """What ``page``'s forms hold (:data:`FORM_STATE_JS`), or None when it can't be read."""
    try:
        return str(await budget.run(page.evaluate(FORM_STATE_JS)))
    except PlaywrightError:
        return None


async def moved_to(opener: Tab | None, before: Tab, after: Tab, first: Tab | None) -> str:
    """Where a run went from ``before`` to ``after``: into a popup ``before`` opened,
    back to ``before``'s opener (``opener``), to the run's first tab, or "" (another tab:
    its steps are not kept)."""
    if after.group is not None and await after.group.opener_of(after) is before:
        return "popup"
    if opener is not None and after is opener:
        return "opener"
    return "first" if after is first else ""


def tab_args(args: Mapping[str, Any], *, where: str, index: int) -> dict[str, Any]:
    """A scenario's ``tabs`` step's args, checked, or ScenarioInvalid naming the step."""
    op = args.get("op")
    if op not in OPS:
        raise ScenarioInvalid(f"{where}: a tabs step's op is one of {', '.join(OPS)}", index=index)
    out: dict[str, Any] = {"op": op}
    for key in ("closed", "changed"):
        if key in args:
            if op != "opener" or not isinstance(args[key], bool):
                raise ScenarioInvalid(
                    f"{where}: {key} is true or false, and only of a move back to the opener",
                    index=index,
                )
            out[key] = args[key]
    if len(out) != len(args):
        raise ScenarioInvalid(f"{where}: a tabs step has op, closed and changed only", index=index)
    return out


@dataclass
class _Entered:
    tab: Tab  # the popup
    opener: Tab
    opener_since: int  # the opener's log count as the popup was entered
    state: str | None  # what the opener's forms held then


@dataclass
class Windows:
    """The pages a replay acts in: its own tab, and the popups its steps entered."""

    first: Tab
    opened: dict[Page, list[Page]] = field(default_factory=dict)  # by opener, in order
    taken: set[Page] = field(default_factory=set)
    stack: list[_Entered] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.watch(self.first.page)

    def watch(self, page: Page) -> None:
        """Keep the popups ``page`` opens, in order."""
        self.opened.setdefault(page, [])
        page.on("popup", lambda popup: self.opened[page].append(popup))

    async def move(self, replay: Replay, args: Mapping[str, Any], budget: Budget) -> str:
        """A ``tabs`` step: the replay goes on in the page it names, or ActionFailed."""
        if args["op"] == "popup":
            return await self._into_popup(replay, budget)
        if not self.stack:
            raise ActionFailed("it goes back from a popup, but the replay is in no popup")
        if args["op"] == "first":
            while len(self.stack) > 1:
                self.stack.pop()
        entered = self.stack[-1]
        if args.get("closed"):
            await self._closed(entered, budget)
        self._leave(replay)
        if args.get("changed"):
            await self._changed(entered, budget)
        return f"back in {replay.tab.url}"

    async def follow(self, replay: Replay) -> None:
        """Before a step: out of a popup that closed itself meanwhile, into its opener."""
        while self.stack and self.stack[-1].tab.page.is_closed():
            self._leave(replay)

    def closed_itself(self, replay: Replay) -> bool:
        """Whether the page a step acted in was a popup that closed itself as it ran (its
        Save): the replay goes on in its opener, as it would after the step."""
        return bool(self.stack) and self.stack[-1].tab.page.is_closed()

    async def _into_popup(self, replay: Replay, budget: Budget) -> str:
        page = replay.tab.page
        if page not in self.opened:
            self.watch(page)  # a popup it opens from now on
        await _until(lambda: self._next(page) is not None, budget)
        popup = self._next(page)
        if popup is None:
            raise ActionFailed(
                "no popup window opened: the step before it opened one when recorded",
                hint="the link or button that opens it may have changed",
            )
        self.taken.add(popup)
        tab = await self._tab_of(replay, popup)
        try:
            await budget.run(popup.wait_for_load_state())
        except PlaywrightError:
            pass  # it closed at once: the next step says so
        state = await form_state(page, budget)
        self.stack.append(_Entered(tab, replay.tab, replay.log_since, state))
        self.watch(popup)
        tab.is_secret = replay.tab.is_secret  # a secret typed there is masked first
        replay.tab, replay.log_since = tab, 0  # the popup's requests are all its steps'
        return f"in the popup {tab.url}"

    def _next(self, page: Page) -> Page | None:
        return next((p for p in self.opened.get(page, []) if p not in self.taken), None)

    async def _tab_of(self, replay: Replay, popup: Page) -> Tab:
        group = self.first.group
        if group is not None:
            await group.sync()
            found = next((t for t in group.tabs if t.page is popup), None)
            if found is not None:
                return found
            return await group.adopt(popup)
        return Tab(popup, context=self.first.context, config=self.first.config)

    async def _closed(self, entered: _Entered, budget: Budget) -> None:
        """The popup has closed itself, or ActionFailed once the step's time is out."""
        page = entered.tab.page
        if not await _until(page.is_closed, budget):
            raise ActionFailed(
                f"the popup did not close ({page.url}): when recorded, the step before "
                "closed it (its Save went through)",
                hint="the popup may show why its Save was refused",
            )

    async def _changed(self, entered: _Entered, budget: Budget) -> None:
        """The opener's forms hold something else than when the popup was entered, or
        ActionFailed once the step's time is out."""

        async def changed() -> bool:
            now = await form_state(entered.opener.page, budget)
            return now is not None and now != entered.state

        if not await _until(changed, budget):
            raise ActionFailed(
                "the popup closed, but its opener's form did not change: what it set "
                "there when recorded (a new record in a select) is not there"
            )

    def _leave(self, replay: Replay) -> None:
        entered = self.stack.pop()
        replay.tab, replay.log_since = entered.opener, entered.opener_since


# Left of a step's budget for saying why it failed, when what it waits for does not come.
_RESERVE_MS = 500


async def _until(holds: Callable[[], bool | Awaitable[bool]], budget: Budget) -> bool:
    """Whether ``holds`` came true within ``budget`` (less a reserve), looked at as the
    page's events arrive (they come in Playwright's dispatch, between awaits)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(0, budget.remaining_ms() - _RESERVE_MS) / 1000
    while True:
        held = holds()
        if not isinstance(held, bool):
            held = await held
        if held:
            return True
        if loop.time() >= deadline:
            return False
        budget.check()  # a stopped replay stops waiting
        await asyncio.sleep(0.05)
