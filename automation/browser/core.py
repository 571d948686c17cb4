"""What every operation on a tab shares: its page, its ref table, its frames, the budget of a
call and the one way a Playwright call is awaited.

:class:`TabCore` is the small public core a :class:`~automation.browser.tab.Tab` is built
on.  The tab's actions (:mod:`automation.browser.interact`, :mod:`automation.browser.fieldops`,
:mod:`automation.browser.pageops`), its snapshot walk (:mod:`automation.browser.pagewalk`),
its refs (:mod:`automation.browser.refs`) and its scripts (:mod:`automation.browser.evaluate`)
all go through these few public calls, so none of them needs to know how the tab keeps its
state.  The tab's own CDP session is made here and only here (:meth:`TabCore.cdp_session`).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Awaitable
from typing import TypeVar

from playwright.async_api import BrowserContext, CDPSession, Frame, Locator, Page

from automation.browser.config import BrowserConfig
from automation.browser.identity import ElementIdentity
from automation.browser.listen import listener
from automation.browser.pwcall import call
from automation.browser.snapshot import REF_RE, RefEntry, next_seed
from automation.budget import Budget, close_unawaited
from automation.errors import BrowserClosed, RefNotFound, StaleRef

__all__ = ["RefState", "TabCore"]

T = TypeVar("T")

_RETIRED_CAP = 5_000


class RefState:
    """What a tab knows about its refs; kept per browser target, so a new ``Page`` object
    for the same tab (after reconnecting over CDP) carries on with the same refs."""

    def __init__(self) -> None:
        self.refs: dict[str, RefEntry] = {}
        self.retired: OrderedDict[str, RefEntry] = OrderedDict()  # issued, since gone
        self.seed = 1  # the next ref number; numbers are never reused within a tab
        self.backend_ids: dict[str, int] = {}
        # Identities taken of refs' elements (by Tab.target, or given by replay): how an
        # action finds its element again when the page replaced it (effect.Subject).
        self.identities: dict[str, ElementIdentity] = {}

    def moved(self, reported: object) -> None:
        """Refs a walk moved to an element the page re-created in the place of theirs
        (snapshot_changes.js, adopt): the CDP id of the old element no longer names them.
        Page data, so only ever used to forget an id, which is asked for again when needed."""
        for ref in reported if isinstance(reported, list) else []:
            if isinstance(ref, str):
                self.backend_ids.pop(ref, None)

    def replace(self, refs: dict[str, RefEntry], *, seed: int | None = None) -> None:
        """The refs of a new snapshot; ``seed``, when given, is :func:`next_seed` of them
        (worked out off the event loop for a big page)."""
        for ref, entry in self.refs.items():
            if ref not in refs:
                self.retired[ref] = entry
                self.identities.pop(ref, None)
        while len(self.retired) > _RETIRED_CAP:
            self.retired.popitem(last=False)
        self.refs = refs
        for ref in refs:
            self.retired.pop(ref, None)
        self.seed = max(self.seed, next_seed(refs) if seed is None else seed)


class TabCore:
    """One tab's page and ref table, and the operations every part of the tab uses."""

    def __init__(
        self,
        page: Page,
        *,
        context: BrowserContext | None = None,
        config: BrowserConfig | None = None,
        state: RefState | None = None,
    ) -> None:
        self.page = page
        self.context = context or page.context
        self.config = config or BrowserConfig()
        self.state = state or RefState()
        self.crashed = False
        self.cdp: CDPSession | None = None  # the page's CDP session, once one is made
        # Ref prefixes of the page's frames: "" is the main frame, f1, f2 ... the others in
        # the order the snapshot walks first met them.
        self._frames: dict[str, Frame] = {"": page.main_frame}
        self._prefixes: dict[Frame, str] = {page.main_frame: ""}
        self._next_frame = 1
        page.on("crash", listener(self._on_crash))
        page.on("framedetached", listener(self._on_frame_detached))

    def _on_crash(self, _page: Page) -> None:
        self.crashed = True

    def _on_frame_detached(self, frame: Frame) -> None:
        prefix = self._prefixes.pop(frame, None)
        if prefix:
            self._frames.pop(prefix, None)

    # -- calls -------------------------------------------------------------------------

    def budget(self, given: Budget | None, label: str) -> Budget:
        """The budget of one call: a child of the caller's, else the config's action timeout."""
        if given is None:
            return Budget(self.config.action_timeout_ms, label=label)
        return given.child(label=label)

    @property
    def alive(self) -> bool:
        return not self.crashed and not self.page.is_closed()

    def check_alive(self) -> None:
        """BrowserClosed when the tab crashed or was closed: nothing can be done in it."""
        if self.crashed:
            raise BrowserClosed("the tab crashed", hint="start a new run or open a new tab")
        if self.page.is_closed():
            raise BrowserClosed("the tab is closed")

    async def call(self, what: str, budget: Budget, work: Awaitable[T]) -> T:
        """Await one Playwright call inside the budget; turn its errors into ours."""
        try:
            self.check_alive()
        except BrowserClosed:
            close_unawaited(work)
            raise
        return await call(what, budget, work, gone=lambda: not self.alive)

    async def cdp_session(self, budget: Budget | None = None) -> CDPSession:
        """The page's own CDP session, made on first use and kept for the tab's life (it
        ends with the page).  Playwright's errors pass through: a page that is not a CDP
        target has none, and each caller decides what that means for it."""
        if self.cdp is None:
            made = self.context.new_cdp_session(self.page)
            self.cdp = await (budget.run(made) if budget is not None else made)
        return self.cdp

    # -- refs and frames ---------------------------------------------------------------

    def entry(self, ref: object) -> RefEntry:
        """The ref table's entry of ``ref``; RefNotFound or StaleRef (an earlier
        snapshot's ref) when it has none."""
        if not isinstance(ref, str) or not ref.strip():
            raise RefNotFound("no ref given", hint="act by a ref from the snapshot, like e5")
        ref = ref.strip().strip("[]")
        if not REF_RE.match(ref):
            raise RefNotFound(
                f"{ref[:40]!r} is not a ref",
                hint="refs look like e5 (or f1e5 inside a frame); take them from the snapshot",
            )
        entry = self.state.refs.get(ref)
        if entry is not None:
            return entry
        old = self.state.retired.get(ref)
        if old is not None:
            raise StaleRef(
                f"ref {old.describe()} is from an earlier snapshot and is gone now",
                hint="take a new snapshot",
            )
        raise RefNotFound(
            f"unknown ref {ref!r}: it is not in the latest snapshot of this tab",
            hint="use a ref from the latest snapshot",
        )

    def frame_of(self, entry: RefEntry) -> Frame:
        frame = self._frames.get(entry.frame)
        if frame is None or frame.is_detached():
            raise StaleRef(f"the frame holding {entry.ref} is gone", hint="take a new snapshot")
        return frame

    def prefix_of(self, frame: Frame) -> str:
        """The ref prefix of ``frame``, given to it the first time it is asked for."""
        prefix = self._prefixes.get(frame)
        if prefix is None:
            prefix = f"f{self._next_frame}"
            self._next_frame += 1
            self._prefixes[frame] = prefix
            self._frames[prefix] = frame
        return prefix

    def locator(self, ref: str) -> tuple[Locator, RefEntry]:
        """The locator for a ref, without touching the page (see :meth:`Tab.resolve`)."""
        entry = self.entry(ref)
        return self.frame_of(entry).locator(f"tabwright={entry.ref}"), entry

    def registry_path(self, ref: str) -> str:
        """A JS expression that gives the ref's element in the page's main world, through
        the registries of the <iframe> chain (it throws across an out-of-process hop)."""
        chain = []
        host = self.entry(ref).host
        while host:
            chain.insert(0, host)
            host = self.entry(host).host
        path = "window"
        for hop in chain:
            path = f"{path}.__tabwright.resolve({json.dumps(hop)}).contentWindow"
        return f"{path}.__tabwright.resolve({json.dumps(ref)})"
