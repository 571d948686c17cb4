"""Judge an action by its effect: the element found again after acting, and its state.

Apps re-render what they change.  Ticking a todo replaces its row, choosing a size redraws
the form, typing into a field of a keyed list may swap the field for a new one that keeps
the focus.  The node an action acted on can be gone a moment later while the page shows
exactly the state that was asked for.  So an action that checks its result never waits on
that node: it asks for *the element now* (:meth:`Subject.now`): the same node while it is
in the page, else the element its identity finds (:func:`~automation.browser.identity.locate`:
the re-rendered row's checkbox), and reads the state there, polling for a short while as
the app settles (:meth:`Subject.settle`).  An action that needs the element after its first
operation (Enter after a fill, keys after clearing a field) uses the element now as well.

The identity is the one the caller already took (:meth:`Tab.target` remembers it per ref;
replay passes the one it located), or it is taken here before acting.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from playwright.async_api import ElementHandle, JSHandle
from playwright.async_api import Error as PlaywrightError

from automation.browser.identity import ElementIdentity, capture, locate
from automation.browser.snapshot import RefEntry
from automation.budget import Budget
from automation.errors import ActionFailed, StaleRef

if TYPE_CHECKING:
    from automation.browser.tab import Tab

__all__ = ["LABEL_INSTEAD_JS", "SETTLE_MS", "TOGGLE_STATE_JS", "Subject", "click_target", "dispose"]

SETTLE_MS = 1_500  # how long an app may take to show the state an action asked for
_POLL_MS = (0, 30, 60, 100, 150, 250)  # then every 250 ms

# A toggle's state: a checkbox's or radio's `checked`, else aria-checked / aria-pressed /
# aria-selected ("mixed" counts as not checked); null when it has none.
TOGGLE_STATE_JS = """(e) => {
  if (e.tagName === "INPUT" && (e.type === "checkbox" || e.type === "radio")) return e.checked;
  for (const a of ["aria-checked", "aria-pressed", "aria-selected"]) {
    const v = e.getAttribute(a);
    if (v !== null) return v === "true";
  }
  return null;
}"""

_GONE = "__tabwright_gone__"


def _if_connected(js: str) -> str:
    """``js`` (a function of the element) run only while the node is in its document."""
    return f"(e) => e.isConnected ? ({js})(e) : {_GONE!r}"


@dataclass
class Subject:
    """The element an action works on, followed across re-renders."""

    tab: Tab
    entry: RefEntry
    handle: ElementHandle
    identity: ElementIdentity | None = None
    replaced: bool = False  # the node acted on left the page; `now` found its successor
    _others: list[ElementHandle] = field(default_factory=list)

    @classmethod
    async def hold(
        cls,
        tab: Tab,
        ref: str,
        *,
        budget: Budget,
        action: str,
        identify: bool,
        follow: bool = False,
    ) -> Subject:
        """The ref's element, proven (see :meth:`Tab.resolve`), with its identity when
        ``identify`` (the one remembered for the ref, else taken now).  With ``follow``, a
        ref whose node the page replaced is found again by its identity
        (:meth:`Tab.follow`)."""
        try:
            _, entry = await tab.resolve(ref, budget=budget, action=action)
        except StaleRef:
            if not follow:
                raise
            entry = tab.core.entry(ref)
            handle = await tab.follow(ref, budget=budget, action=action)
            return cls(tab, entry, handle, tab.state.identities.get(entry.ref), replaced=True)
        handle = await tab.handle_of(entry, budget=budget)
        identity = tab.state.identities.get(entry.ref)
        if identity is None and identify:
            identity = await capture(handle, budget=budget)
        return cls(tab, entry, handle, identity)

    async def read(self, js: str, budget: Budget) -> tuple[Any, ElementHandle | None]:
        """``js`` run on the element now, and that element (None when it is gone and its
        identity finds nothing, or there is no identity to look with)."""
        value = await self._read_on(self.handle, js, budget)
        if value != _GONE:
            return value, self.handle
        if self.identity is None:
            return None, None
        found = await locate(self.tab.page, self.identity, budget=budget)
        if found.element is None:
            return None, None
        self._others.append(found.element)
        self.replaced = True
        value = await self._read_on(found.element, js, budget)
        return (None, None) if value == _GONE else (value, found.element)

    async def now(self, budget: Budget) -> ElementHandle | None:
        """The element now: the node acted on while it is in the page, else the one its
        identity finds."""
        _, element = await self.read("(e) => true", budget)
        return element

    async def settle(
        self, js: str, wanted: Callable[[Any], bool], budget: Budget, *, window_ms: int = SETTLE_MS
    ) -> tuple[Any, ElementHandle | None]:
        """Read ``js`` on the element now until ``wanted`` holds, for at most ``window_ms``
        (and the budget): the last value and where it was read (None: not found)."""
        started = time.monotonic()
        polls = iter(_POLL_MS)
        value: Any = None
        element: ElementHandle | None = None
        while True:
            await budget.run(asyncio.sleep(next(polls, _POLL_MS[-1]) / 1000))
            value, element = await self.read(js, budget)
            if element is not None and wanted(value):
                return value, element
            spent_ms = (time.monotonic() - started) * 1000
            if spent_ms >= window_ms or budget.remaining_ms() < 2 * _POLL_MS[-1]:
                return value, element

    async def _read_on(self, element: ElementHandle, js: str, budget: Budget) -> Any:
        try:
            return await budget.run(element.evaluate(_if_connected(js)))
        except PlaywrightError:
            return _GONE  # its document went away (a navigation): as good as gone

    async def click(self, what: str, budget: Budget) -> None:
        """Click the element as a person would: on its label when the box itself takes no
        click (a hidden or clipped input behind a styled label), and once more on the
        element found again when the page replaced it just before the click."""
        for attempt in range(2):
            element = self.handle if attempt == 0 else await self.now(budget)
            if element is None:
                raise ActionFailed(f"{what}: the page replaced it and it was not found again")
            target = await click_target(element, budget)
            try:
                click = target.click(timeout=budget.playwright_timeout())
                await self.tab.core.call(what, budget, click)
                return
            except ActionFailed as exc:
                if attempt or "not attached" not in exc.message:
                    raise
            finally:
                if target is not element:
                    await dispose(target)

    async def release(self) -> None:
        for handle in (self.handle, *self._others):
            await dispose(handle)


# A checkbox or radio that can't take a click itself (zero-sized, clipped, invisible or
# without pointer events, as styled controls hide the real input): its first visible label.
LABEL_INSTEAD_JS = """(e) => {
  if (e.tagName !== "INPUT" || (e.type !== "checkbox" && e.type !== "radio")) return null;
  const r = e.getBoundingClientRect();
  const s = getComputedStyle(e);
  const clickable = r.width >= 4 && r.height >= 4 && s.pointerEvents !== "none" &&
    s.visibility === "visible" && Number(s.opacity) > 0.05;
  if (clickable) return null;
  for (const label of e.labels || []) {
    const b = label.getBoundingClientRect();
    if (b.width >= 4 && b.height >= 4 && label.checkVisibility()) return label;
  }
  return null;
}"""


async def click_target(element: ElementHandle, budget: Budget) -> ElementHandle:
    """What a person clicks to click ``element``: itself, or the label of a box hidden
    behind a styled one."""
    try:
        label = (await budget.run(element.evaluate_handle(LABEL_INSTEAD_JS))).as_element()
    except PlaywrightError:
        return element  # gone: the click says so
    return label if label is not None else element


async def dispose(handle: JSHandle) -> None:
    """Let the page forget a handle (a page or context that is gone forgot it already)."""
    try:
        await handle.dispose()
    except PlaywrightError:
        pass  # its page or context is gone: so is the handle
