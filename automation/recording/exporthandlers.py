"""Interruption handlers in a pytest export (automation.recording.export), in force where
replay's are (:mod:`automation.recording.replayhandlers`): the test's own for all its
steps; a called scenario's while its function runs (with its caller's, those of another
name), gone when it returns.

Playwright's ``page.remove_locator_handler`` removes every handler of a locator: taking a
called scenario's away would take its caller's on the same element with it.  So each
locator gets one Playwright handler, which runs the handler in force for it (the innermost
scenario's first), and is taken away only when no handler in force is left for it.  The
export writes the code below the marker into the file as it is; each handler it adds is
known by a key, its locator's code as a literal.

Signing in again runs inside Playwright's handler of the sign-in page, and Playwright runs
no other handler while one runs: a cookie wall over the sign-in page would stay over its
"Sign in".  So while it signs in (:meth:`Interruptions.by_hand`), the login scenario's
function clears them itself before each step (:meth:`Interruptions.uncover`), as replay's
sign-in is given the replay's handlers (automation.recording.relogin).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

__all__ = ["Interruptions"]


# -- written into an exported pytest file as it is
class Interruptions:
    """The interruption handlers in force, a scope for each scenario running (the test's,
    then each called scenario's, innermost last)."""

    def __init__(self) -> None:
        self.scopes: list[list[tuple[str, str, Callable[[], None]]]] = [[]]  # (name, key, run)
        self.wired: dict[str, Locator] = {}  # key: the locator Playwright's handler is on
        self.held = 0  # signing in again, inside a Playwright handler: uncover runs them

    def add(self, page: Page, name: str, key: str, when: Locator, run: Callable[[], None]) -> None:
        """A handler of the scenario now running: ``run`` when ``when`` shows."""
        self.scopes[-1].append((name, key, run))
        if key not in self.wired:
            self.wired[key] = when
            page.add_locator_handler(when, lambda _shown: self.clear(key))

    def in_force(self) -> list[tuple[str, str, Callable[[], None]]]:
        """The innermost scenario's handlers first, then its callers' of other names."""
        handlers: list[tuple[str, str, Callable[[], None]]] = []
        names: set[str] = set()
        for scope in reversed(self.scopes):
            handlers += [handler for handler in scope if handler[0] not in names]
            names |= {name for name, _, _ in scope}
        return handlers

    def clear(self, key: str) -> None:
        """The interruption known by ``key`` shows: the first handler in force for it runs."""
        for _, at, run in self.in_force():
            if at == key:
                run()
                return

    @contextmanager
    def by_hand(self) -> Iterator[None]:
        """Signing in again, inside Playwright's handler of the sign-in page, where
        Playwright runs no other: the handlers in force are run by :meth:`uncover`."""
        self.held += 1
        try:
            yield
        finally:
            self.held -= 1

    def uncover(self) -> None:
        """Before a step of signing in again: each interruption in force that shows is
        cleared by its handler, then awaited gone, as Playwright does before an action
        (nothing at other times: Playwright's own handlers run then)."""
        if not self.held:
            return
        for key, when in list(self.wired.items()):
            if when.is_visible():
                self.clear(key)
                when.wait_for(state="hidden")

    def enter(self) -> None:
        """A called scenario starts: its handlers go into a scope of their own."""
        self.scopes.append([])

    def leave(self, page: Page) -> None:
        """The called scenario returned: its handlers are no longer in force."""
        self.scopes.pop()
        left = {key for _, key, _ in self.in_force()}
        for key in [key for key in self.wired if key not in left]:
            page.remove_locator_handler(self.wired.pop(key))


INTERRUPTIONS = Interruptions()
