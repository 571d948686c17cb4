"""A tab: its page, its refs, and the one path every action on it takes.

A :class:`Tab` is built on a small public core (:class:`~automation.browser.core.TabCore`:
the page, the ref table, frames, budgets, error translation, the tab's CDP session) and
hands each of its methods to one implementation that receives the tab and uses only public
calls:

- refs, resolved fail closed: :mod:`automation.browser.refs`;
- the snapshot that issues them: :mod:`automation.browser.pagewalk`;
- actions on an element: :mod:`automation.browser.interact`, and those that write a field:
  :mod:`automation.browser.fieldops`;
- actions on the page as a whole: :mod:`automation.browser.pageops`;
- scripts in the page: :mod:`automation.browser.evaluate`.

The actions that can set something off (a request, a navigation) settle before they return
(:func:`~automation.browser.settles.settles`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from playwright.async_api import BrowserContext, CDPSession, ElementHandle, Locator, Page
from playwright.async_api import Error as PlaywrightError

from automation.browser import choice, emulation, fieldops, interact, pageops, refs
from automation.browser.config import BrowserConfig
from automation.browser.core import RefState, TabCore
from automation.browser.dialogs import DialogGuard
from automation.browser.downloads import DownloadKeeper
from automation.browser.evaluate import Evaluation, PageRuntime, evaluate
from automation.browser.fieldops import OnField
from automation.browser.identity import ElementIdentity
from automation.browser.pagelog import PageLog
from automation.browser.pagewalk import take_snapshot
from automation.browser.refs import SELECTOR_ENGINE, Target
from automation.browser.settle import Settler, SettleReport
from automation.browser.settles import settles
from automation.browser.snapshot import RefEntry, Snapshot, SnapshotOptions
from automation.browser.watchdog import Watchdog, watched
from automation.budget import Budget
from automation.errors import UrlBlocked
from automation.events import ScreenshotTaken

if TYPE_CHECKING:
    from automation.browser.tabs import TabGroup

__all__ = ["SELECTOR_ENGINE", "RefState", "Tab", "Target"]


class Tab:
    def __init__(
        self,
        page: Page,
        *,
        context: BrowserContext | None = None,
        config: BrowserConfig | None = None,
        on_close: Callable[[Tab], None] | None = None,
        state: RefState | None = None,
        workspace: Path | None = None,
    ) -> None:
        self.core = TabCore(page, context=context, config=config, state=state)
        self.workspace = workspace
        self._on_close = on_close
        self.runtime: PageRuntime | None = None  # the evaluate engine's own session
        # Set by the session: a fresh evaluate session, should the connection drop.
        self.reattach_runtime: Callable[[], Awaitable[PageRuntime | None]] | None = None
        self.evaluations: deque[Evaluation] = deque(maxlen=200)
        self.group: TabGroup | None = None
        self.target_id = ""  # the page's CDP target, set by the session that made the tab
        # Why a host could not be reached, from the egress proxy the browser goes through.
        self.why_unreachable: Callable[[str], str | None] = lambda _url: None
        # Why it refused a URL (a navigation's hop, say), from the same proxy.
        self.why_refused: Callable[[str], str | None] = lambda _url: None
        # Set by the run (automation.secrets.Secrets.is_secret): a value it says is secret
        # is typed only into a field masked first (automation.browser.masking).
        self.is_secret: Callable[[str], bool] | None = None
        self.log = PageLog(page)  # console, page errors, network requests
        self.dialogs = DialogGuard(page)  # answers dialogs as armed, dismisses the rest
        # What each action set off (requests, navigations, DOM changes), waited for
        # before the action returns.
        self.settler = Settler(page)
        # A call that runs out of time on a page whose own script hangs stops that script
        # (automation.browser.watchdog): the tab is not stuck for good.
        self.watchdog = Watchdog(self.core)
        # Downloads land in the run's workspace; without one they are refused by Chromium.
        self.downloads = self._keeper(workspace) if workspace else None
        self._picturing = asyncio.Lock()  # one picture of the page at a time (one_picture)

    @contextlib.asynccontextmanager
    async def one_picture(self, budget: Budget) -> AsyncIterator[None]:
        """The turn to take a picture of the page, waited for within ``budget``.  Chromium
        draws the page at a scaled picture's size while it takes one; two taken at once (the
        live view's and a step's, say) leave the page laid out at that size for a moment:
        resize events to it, and a script or an action reading a layout 480 px wide."""
        try:
            async with asyncio.timeout(max(budget.remaining_ms(), 0) / 1000):
                await self._picturing.acquire()
        except TimeoutError:
            budget.check()
            raise budget.exceeded(" waiting for another picture of the page") from None
        try:
            yield
        finally:
            self._picturing.release()

    def _keeper(self, workspace: Path) -> DownloadKeeper:
        keeper = DownloadKeeper(
            self.page, workspace / "downloads", max_bytes=lambda: self.config.max_download_bytes
        )
        if self.core.cdp is not None:  # (else the session makes it listen: watch_downloads)
            keeper.listen(self.core.cdp)
        return keeper

    async def watch_downloads(self, session: CDPSession) -> None:
        """Follow this tab's downloads as they come on its CDP session (a download past
        ``max_download_bytes`` is cancelled)."""
        if self.downloads is not None:  # listening first: an enable answered late still counts
            self.downloads.listen(session)
        await session.send("Page.enable")  # its download events

    def use_workspace(self, workspace: Path) -> None:
        """Keep this tab's downloads (and the run's files) in ``workspace`` from now: for
        a tab opened ahead of the run that takes it, which had none."""
        if self.downloads is not None:
            self.downloads.detach()
        self.workspace = workspace
        self.downloads = self._keeper(workspace)

    # -- state: kept by the core, read and set through the tab -------------------------

    @property
    def page(self) -> Page:
        return self.core.page

    @property
    def context(self) -> BrowserContext:
        return self.core.context

    @property
    def config(self) -> BrowserConfig:
        return self.core.config

    @config.setter
    def config(self, config: BrowserConfig) -> None:
        self.core.config = config

    @property
    def state(self) -> RefState:
        return self.core.state

    @state.setter
    def state(self, state: RefState) -> None:
        self.core.state = state

    @property
    def crashed(self) -> bool:
        return self.core.crashed

    @property
    def alive(self) -> bool:
        """Neither crashed nor closed."""
        return self.core.alive

    @property
    def cdp(self) -> CDPSession | None:
        """The page's CDP session, once one is made (:meth:`TabCore.cdp_session`)."""
        return self.core.cdp

    @property
    def refs(self) -> dict[str, RefEntry]:
        return self.state.refs

    @property
    def url(self) -> str:
        return self.page.url

    @property
    def blocked_total(self) -> int:
        """How many navigations the URL guard (of a browser reached by CDP URL) has
        stopped in this tab's group."""
        return self.group.blocked_total if self.group is not None else 0

    def raise_if_blocked(self, what: str, *, since: int, hops: Iterable[str] = ()) -> None:
        """A navigation that failed because the URL guard stopped it, or the egress proxy
        refused one of its ``hops`` (a redirect to a refused address, say), is reported as
        UrlBlocked, not as a network error or the proxy's HTTP 403."""
        refused = [(url, reason) for url in hops if (reason := self.why_refused(url))]
        if self.group is not None and self.group.blocked_total > since:
            refused.append(self.group.blocked[-1])
        if refused:
            url, reason = refused[-1]
            raise UrlBlocked(f"{what}: the browser was sent to {url[:200]!r}, refused: {reason}")

    def dialogs_raise(self, what: str) -> None:
        """After an action: a dialog nobody armed was dismissed; say so as an error."""
        self.dialogs.raise_if_unexpected(what)

    # -- snapshot and refs (automation.browser.pagewalk, automation.browser.refs) -------

    @watched
    async def snapshot(
        self, options: SnapshotOptions | None = None, *, budget: Budget | None = None
    ) -> Snapshot:
        """The accessibility tree with refs; the tab's ref table is replaced by it."""
        budget = self.core.budget(budget, "snapshot")
        return await take_snapshot(self.core, options or SnapshotOptions(), budget)

    def locator(self, ref: str) -> tuple[Locator, RefEntry]:
        """The locator for a ref, without touching the page (see :meth:`resolve`)."""
        return self.core.locator(ref)

    @watched
    async def resolve(
        self, ref: str, *, budget: Budget | None = None, action: str = ""
    ) -> tuple[Locator, RefEntry]:
        """The locator for ``ref``, proven to be its element (:func:`refs.resolve`)."""
        return await refs.resolve(self.core, ref, budget=budget, action=action)

    @watched
    async def follow(self, ref: str, *, budget: Budget, action: str = "") -> ElementHandle:
        """The element of a ref whose node the page replaced (:func:`refs.follow`)."""
        return await refs.follow(self.core, ref, budget=budget, action=action)

    async def selector_for(self, ref: str, *, budget: Budget | None = None) -> str:
        """A CSS selector for the ref's element (test id > id > aria-label > name >
        placeholder > a path from the nearest ancestor with an id)."""
        return (await self.target(ref, budget=budget)).selector

    def known_target(self, ref: str) -> Target:
        """What the ref table says of the ref's element, without asking the page."""
        entry = self.refs.get(ref) if ref else None
        return Target(ref, entry.role, entry.name) if entry else Target(ref)

    @watched
    async def target(self, ref: str, *, budget: Budget | None = None) -> Target:
        """The ref's element as a recorded step keeps it (:func:`refs.target`)."""
        return await refs.target(self.core, ref, budget=budget)

    @watched
    async def handle_of(self, entry: RefEntry, *, budget: Budget) -> ElementHandle:
        """The element of a ref just resolved, or StaleRef (:func:`refs.handle_of`)."""
        return await refs.handle_of(self.core, entry, budget=budget)

    def remember_identity(self, ref: str, identity: ElementIdentity) -> None:
        """The identity of the ref's element, as the caller already knows it (replay's
        located element): an action uses it to find the element again after a re-render."""
        self.state.identities[self.core.entry(ref).ref] = identity

    @watched
    async def backend_node_id(self, ref: str, *, budget: Budget | None = None) -> int:
        """CDP's backend node id of the ref's element (:func:`refs.backend_node_id`)."""
        return await refs.backend_node_id(self.core, ref, budget=budget)

    def registry_path(self, ref: str) -> str:
        """A JS expression that gives the ref's element in the page's main world."""
        return self.core.registry_path(ref)

    # -- actions on an element (automation.browser.interact, fieldops) -----------------

    @watched
    async def click(
        self,
        ref: str,
        *,
        button: str = "left",
        modifiers: Sequence[str] = (),
        double: bool = False,
        budget: Budget | None = None,
    ) -> str:
        # An option of a combobox's list: what the combobox shows says if the choice took.
        picks = button == "left" and not double and not modifiers
        chose = await choice.before(self, ref, budget=budget) if picks else None
        done = await self._click(ref, button=button, modifiers=modifiers, double=double,
                                 budget=budget)  # fmt: skip
        if chose is not None:
            await choice.taken(chose, budget=self.core.budget(budget, "click"))
        return done

    @settles(early=interact.click_event, sends=lambda args, kwargs: True)
    async def _click(self, ref: str, **options: Any) -> str:
        """The click itself, settled (its options are :meth:`click`'s)."""
        return await interact.click(self, ref, **options)

    async def double_click(self, ref: str, *, budget: Budget | None = None) -> str:
        return await self.click(ref, double=True, budget=budget)

    @watched
    @settles
    async def hover(self, ref: str, *, budget: Budget | None = None) -> str:
        return await interact.hover(self, ref, budget=budget)

    @watched
    @settles(sends=lambda args, kwargs: bool(kwargs.get("submit")))
    async def fill(
        self, ref: str, value: str, *, submit: bool = False, budget: Budget | None = None
    ) -> str:
        return await fieldops.fill(self, ref, value, submit=submit, budget=budget)

    @watched
    @settles(sends=lambda args, kwargs: bool(kwargs.get("submit")))
    async def type(
        self,
        ref: str,
        text: str,
        *,
        submit: bool = False,
        delay_ms: int = 0,
        clear: bool = True,
        budget: Budget | None = None,
    ) -> str:
        return await fieldops.type_text(
            self, ref, text, submit=submit, delay_ms=delay_ms, clear=clear, budget=budget
        )

    @watched  # settled inside, then read again
    async def set_checked(
        self, ref: str, checked: bool = True, *, budget: Budget | None = None
    ) -> str:
        return await fieldops.set_checked(self, ref, checked, budget=budget)

    @watched  # settled inside, then read again
    async def select_option(
        self, ref: str, values: str | Sequence[str], *, budget: Budget | None = None
    ) -> str:
        return await fieldops.select_option(self, ref, values, budget=budget)

    @watched  # each field settles as its own action does (fieldops.fill_form)
    async def fill_form(
        self,
        fields: Sequence[dict[str, Any]],
        *,
        budget: Budget | None = None,
        on_field: OnField | None = None,
    ) -> str:
        return await fieldops.fill_form(self, fields, budget=budget, on_field=on_field)

    @watched
    @settles(sends=lambda args, kwargs: True)
    async def press_key(self, key: str, *, ref: str = "", budget: Budget | None = None) -> str:
        return await interact.press_key(self, key, ref=ref, budget=budget)

    async def press(self, key: str, *, budget: Budget | None = None) -> str:
        return await self.press_key(key, budget=budget)

    @watched
    @settles
    async def drag(self, source: str, target: str, *, budget: Budget | None = None) -> str:
        return await interact.drag(self, source, target, budget=budget)

    @watched
    @settles
    async def scroll(
        self, *, ref: str = "", dx: int = 0, dy: int = 0, budget: Budget | None = None
    ) -> str:
        return await interact.scroll(self, ref=ref, dx=dx, dy=dy, budget=budget)

    @watched
    async def highlight(
        self, ref: str, *, duration_ms: int = 1_500, budget: Budget | None = None
    ) -> str:
        return await interact.highlight(self, ref, duration_ms=duration_ms, budget=budget)

    @watched  # settled inside, before its effect is judged
    async def set_input_files(
        self, ref: str, files: Sequence[str], *, budget: Budget | None = None
    ) -> str:
        return await fieldops.set_input_files(self, ref, files, budget=budget)

    @watched  # settled inside, before its effect is judged
    async def drop_files(
        self, ref: str, files: Sequence[str], *, budget: Budget | None = None
    ) -> str:
        return await emulation.drop_files(self, ref, files, budget=budget)

    # -- actions on the page (automation.browser.pageops) ------------------------------

    @watched
    @settles
    async def navigate(self, url: str, *, budget: Budget | None = None) -> str:
        return await pageops.navigate(self, url, budget=budget)

    @watched
    async def settle(self, *, budget: Budget) -> SettleReport:
        """Wait for what the page started since the last action settled: a navigation
        still on its way, requests still unanswered (see :mod:`automation.browser.settle`).
        Actions settle before they return; this is for what came after them."""
        return await self.settler.settle(budget=budget)

    @watched
    @settles
    async def back(self, *, budget: Budget | None = None) -> str:
        return await pageops.history(self, "back", budget=budget)

    @watched
    @settles
    async def forward(self, *, budget: Budget | None = None) -> str:
        return await pageops.history(self, "forward", budget=budget)

    @watched
    @settles
    async def reload(self, *, budget: Budget | None = None) -> str:
        return await pageops.history(self, "reload", budget=budget)

    @watched
    async def wait_for(
        self,
        *,
        text: str = "",
        text_gone: str = "",
        ref: str = "",
        state: str = "visible",
        url: str = "",
        load_state: str = "",
        time_ms: int = 0,
        budget: Budget | None = None,
    ) -> str:
        return await pageops.wait_for(
            self, text=text, text_gone=text_gone, ref=ref, state=state, url=url,
            load_state=load_state, time_ms=time_ms, budget=budget,
        )  # fmt: skip

    @watched
    async def wait_for_text(self, text: str, *, budget: Budget | None = None) -> str:
        return await pageops.wait_for_text(self, text, budget=budget)

    @watched
    async def screenshot(
        self,
        *,
        ref: str = "",
        full_page: bool = False,
        format: Literal["png", "jpeg"] = "png",
        quality: int = 80,
        path: Path | None = None,
        budget: Budget | None = None,
    ) -> bytes:
        return await pageops.screenshot(
            self, ref=ref, full_page=full_page, format=format, quality=quality, path=path,
            budget=budget,
        )  # fmt: skip

    async def screenshot_jpeg(self, *, quality: int = 60, budget: Budget | None = None) -> bytes:
        return await self.screenshot(format="jpeg", quality=quality, budget=budget)

    @watched
    async def step_screenshot(self, index: int, *, budget: Budget) -> ScreenshotTaken | None:
        return await pageops.step_screenshot(self, index, budget=budget)

    @watched
    async def pdf(self, path: Path, *, budget: Budget | None = None) -> str:
        return await pageops.pdf(self, path, budget=budget)

    @watched
    async def resize(self, width: int, height: int, *, budget: Budget | None = None) -> str:
        return await pageops.resize(self, width, height, budget=budget)

    @watched
    async def read_text(self, *, budget: Budget | None = None) -> str:
        return await pageops.read_text(self, budget=budget)

    # -- evaluate ----------------------------------------------------------------------

    @watched
    async def evaluate(
        self, expression: str, arg: Any = None, *, ref: str = "", budget: Budget | None = None
    ) -> Any:
        """Run a script in the page (or, given a ref, a function of that element) within the
        budget; see :mod:`automation.browser.evaluate`.  Off unless the config allows it."""
        return await evaluate(
            self, expression, arg, ref=ref, budget=self.core.budget(budget, "evaluate")
        )

    def take_evaluations(self) -> list[Evaluation]:
        """The evaluations since the last call, for the run's events."""
        taken = list(self.evaluations)
        self.evaluations.clear()
        return taken

    # -- lifetime ----------------------------------------------------------------------

    async def close(self) -> None:
        """Close this tab; the run's last tab takes its browser context with it."""
        # The page's CDP session ends with the page; detaching it from a crashed page would
        # wait forever for an answer.  The evaluate session is told, not waited on.
        if self.runtime is not None:
            await self.runtime.close()
        if self.group is not None and len(self.group.tabs) <= 1:
            await self.group.close()
        else:
            if self.group is not None and self in self.group.tabs:
                self.group.tabs.remove(self)
                if self.group.current is self:
                    self.group.current = self.group.tabs[-1]
            try:
                if not self.page.is_closed():
                    await self.page.close()
            except PlaywrightError:
                pass  # the browser is already gone
        if self._on_close is not None:
            self._on_close(self)
