"""Popup windows a recorded page opens (``window.open``, a link with ``target=_blank``).

A recording listens in the popups its tab opens too, and in theirs: what a person does
there (a related record created in the "+" window, whose Save sets the opener's select
and closes itself) is part of the scenario, said with the ``tabs`` steps a run's work in a
popup is saved with (:mod:`automation.recording.replaytabs`), so a replay and the pytest
export do it too:

- a step in another page than the step before is preceded by the moves there: ``{"op":
  "popup"}`` into a popup the page before opened, ``{"op": "opener"}`` back to the page
  that opened it (``{"op": "first"}`` back to the recorded tab from deeper), as the
  person went there (a visible browser: they clicked in the opener's window);
- a popup the person acted in that closes itself (its Save) is followed by ``{"op":
  "opener", "closed": true, "changed": …}``, ``changed`` saying whether its opener's
  forms hold something else than when the popup opened (the select now holds the new
  record), which the replay waits for.

While recording, a popup that opens becomes the tab group's current tab, so the live view
shows it and the person's input goes there; when it closes, its opener is current again.
Once the recording stops, the current tab is where the person's last step was.

A move into a popup is said by order of opening: a person who left a popup unvisited and
acted in one opened after it from the same page is replayed in the first one."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from playwright.async_api import Page

from automation.browser.tab import Tab
from automation.budget import Budget
from automation.recording.replaytabs import form_state

__all__ = ["Popups"]

log = logging.getLogger("automation.recording")

_FORM_STATE_MS = 5_000  # reading what an opener's forms hold
_SHOW_MS = 10_000  # making a popup (or its opener, once it closed) the current tab


class Popups:
    """The pages a recording of ``tab`` listens in (its page, the popups it opens and
    theirs) and where the person's last step was.  ``opened(popup)`` starts listening in a
    popup; ``closed(popup, opener)`` is called when the page of the last
    step, a popup, closes (its own Save, most often)."""

    def __init__(
        self,
        tab: Tab,
        *,
        opened: Callable[[Page], Awaitable[None]],
        closed: Callable[[Page, Page], None],
    ) -> None:
        self.tab = tab
        self.first = tab.page
        self.where = tab.page  # the page of the person's last step
        self._openers: dict[Page, Page | None] = {tab.page: None}
        # What each popup's opener's forms held as the popup opened.
        self._states: dict[Page, asyncio.Task[str | None]] = {}
        self._opened = opened
        self._closed = closed
        self._tasks: set[asyncio.Task[Any]] = set()
        self._listening: list[tuple[Page, str, Callable[..., None]]] = []
        self._stopped = False
        self._watch(tab.page)

    def knows(self, page: object) -> bool:
        """Whether ``page`` is one the recording listens in."""
        return isinstance(page, Page) and page in self._openers

    @property
    def pages(self) -> list[Page]:
        """The pages listened in that are still open."""
        return [page for page in self._openers if not page.is_closed()]

    def moves_to(self, page: Page) -> list[dict[str, Any]]:
        """The ``tabs`` steps' args that take a replay from the last step's page to
        ``page`` (none when it is the same), which becomes the last step's page."""
        if page is self.where or page not in self._openers:
            return []
        there, here = self._chain(page), self._chain(self.where)
        common = 0
        while common < min(len(there), len(here)) and there[common] is here[common]:
            common += 1
        ups, downs = len(here) - common, len(there) - common
        moves: list[dict[str, Any]] = []
        if ups >= 2 and common == 1:
            moves.append({"op": "first"})  # back to the recorded tab, from deeper
        else:
            moves += [{"op": "opener"}] * ups
        moves += [{"op": "popup"}] * downs
        self.where = page
        return moves

    async def changed(self, popup: Page, opener: Page) -> bool:
        """Whether ``opener``'s forms hold something else now than when ``popup``
        opened (False when either can't be read)."""
        then = await self._states[popup] if popup in self._states else None
        now = await form_state(opener, Budget(_FORM_STATE_MS, label="form state"))
        return then is not None and now is not None and now != then

    def opened_with(self, popup: Page) -> str | None:
        """What ``popup``'s opener's forms held as it opened (None: not read)."""
        task = self._states.get(popup)
        if task is None or not task.done() or task.cancelled() or task.exception():
            return None
        return task.result()

    def spawn(self, work: Any) -> None:
        """Run ``work`` (a coroutine) as a task :meth:`settle` waits for."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self, budget: Budget) -> None:
        """Wait for the work under way (form states, the tab shown) within ``budget``."""
        while self._tasks:
            pending = set(self._tasks)
            try:
                await budget.run(asyncio.gather(*pending, return_exceptions=True))
            except Exception:
                for task in pending:
                    task.cancel()
                return

    async def stop(self, budget: Budget) -> None:
        """Listen no more; the tab group's current tab is the last step's page."""
        self._stopped = True
        for page, event, handler in self._listening:
            page.remove_listener(event, handler)
        self._listening.clear()
        await self.settle(budget)
        await self._show(self._open_ancestor(self.where))

    # -- the pages' events -----------------------------------------------------------

    def _watch(self, page: Page) -> None:
        def popup(opened: Page) -> None:
            self._on_popup(page, opened)

        def close(_page: Page) -> None:
            self._on_close(page)

        for event, handler in (("popup", popup), ("close", close)):
            page.on(event, handler)
            self._listening.append((page, event, handler))

    def _on_popup(self, opener: Page, popup: Page) -> None:
        if self._stopped or popup in self._openers:
            return
        self._openers[popup] = opener
        self._watch(popup)
        state = asyncio.get_running_loop().create_task(
            form_state(opener, Budget(_FORM_STATE_MS, label="form state"))
        )
        self._states[popup] = state
        self._tasks.add(state)
        state.add_done_callback(self._tasks.discard)
        self.spawn(self._follow(popup))

    def _on_close(self, page: Page) -> None:
        opener = self._openers.get(page)
        if self._stopped or opener is None:
            return
        if page is self.where:
            self.where = opener
            self._closed(page, opener)
        group = self.tab.group
        if group is not None and group.current is not None and group.current.page is page:
            self.spawn(self._show(self._open_ancestor(opener)))

    async def _follow(self, popup: Page) -> None:
        """Listen in ``popup``, then show it: the live view shows it and the person's
        input goes there once what they do there is recorded."""
        await self._opened(popup)
        await self._show(popup)

    # -- helpers ---------------------------------------------------------------------

    def _chain(self, page: Page) -> list[Page]:
        """The recorded tab's page, ..., ``page``: each the opener of the next."""
        chain: list[Page] = []
        at: Page | None = page
        while at is not None:
            chain.append(at)
            at = self._openers.get(at)
        return chain[::-1]

    def _open_ancestor(self, page: Page) -> Page:
        at: Page | None = page
        while at is not None and at.is_closed():
            at = self._openers.get(at)
        return at or self.first

    async def _show(self, page: Page) -> None:
        """Make ``page``'s tab the group's current one (the live view follows it)."""
        group = self.tab.group
        if group is None or page.is_closed():
            return
        try:
            await Budget(_SHOW_MS, label="show a popup").run(group.sync())
        except Exception as exc:  # the browser may be going away: the view stays where it is
            log.warning("the live view could not follow a popup: %s", exc)
            return
        found = next((t for t in group.tabs if t.page is page), None)
        if found is not None:
            group.current = found
