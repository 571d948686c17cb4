"""One Playwright connection per browser; each run gets a group of tabs in its own context.

``BrowserSession`` launches Debian's Chromium through Playwright (path from the config) or
connects to a running Chrome by CDP URL.  If the browser died, the next call that needs
it starts (or reconnects to) a fresh one, counts it in ``restarts`` and logs it.

Every context gets the snapshot registry as an init script (so it exists before a page's
own scripts run) and a rate on its pages' consoles (:mod:`automation.browser.consolelimit`);
the ``tabwright=`` selector engine that resolves refs is registered once per Playwright
connection.

A Chromium the session launches reaches the network only through the session's egress
proxy (:mod:`automation.browser.egress`), which holds every connection of every page,
frame and worker to the URL policy, documents included; WebRTC may not send UDP around
it.  A browser reached by CDP URL was launched by someone else: its connections are not
ours to route (it may not even be on this machine), so there each context gets the URL
guard instead, for documents (:mod:`automation.browser.url_guard` says why a launched
browser has none).  How
Chromium is launched (its switches, its sandbox) is :mod:`automation.browser.launch`.

A session that is kept warm (:meth:`BrowserSession.warm`: a worker, an MCP server) starts
its browser before anyone asks, starts a new one at once when it crashes, and holds one
fresh context with its first tab open ahead of the next caller, so a run's first action
does not wait for a browser or a context.  Every caller still gets a context nobody used
before: the one opened ahead is taken once, then another is opened.  A launched browser is
replaced after ``contexts_per_browser`` contexts (the old one closes once its last context
has), so what a long-lived Chromium accumulates does not outlive that many runs.

With evaluate on, the session also keeps a CDP connection of its own to the browser
(:mod:`automation.browser.cdp`) and attaches every page to it as the page is created: the
session the evaluate engine runs scripts on and stops them through.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, BrowserContext, Page, Playwright
from playwright.async_api import Error as PlaywrightError

from automation.browser.cdp import CdpConnection, endpoint_of_launched, endpoint_of_url
from automation.browser.config import BrowserConfig, default_chromium
from automation.browser.consolelimit import limit_console
from automation.browser.driver import acquire_driver, release_driver
from automation.browser.egress import EgressProxy
from automation.browser.evaluate import PageRuntime
from automation.browser.launch import (
    ISOLATION_ARGS,
    KEPT_LIMITS,
    SANDBOX_HINT,
    chromium_sandbox,
    proxy_args,
)
from automation.browser.pwcall import brief
from automation.browser.seen import TYPED_JS
from automation.browser.settle import PENDING_JS
from automation.browser.snapshot import SNAPSHOT_JS
from automation.browser.tab import SELECTOR_ENGINE, RefState, Tab
from automation.browser.tabs import WINDOW_LIMIT_JS, TabGroup
from automation.browser.url_guard import install_url_guard
from automation.budget import Budget
from automation.errors import ActionInvalid, BrowserError, TabwrightError

__all__ = ["CONTEXT_OPTIONS", "BrowserSession"]

log = logging.getLogger("automation.browser")

_KEEP_MS = 5_000  # a new tab's own CDP session and its first commands


# What a caller may set on the fresh context it gets (Playwright's new_context options),
# besides storage_state: how the site sees the browser.  Nothing that would take a context
# around the egress proxy (proxy), its downloads (accept_downloads) or the URL guard.
CONTEXT_OPTIONS = frozenset(
    {
        "locale",
        "timezone_id",
        "user_agent",
        "extra_http_headers",
        "http_credentials",
        "geolocation",
        "permissions",
        "color_scheme",
        "reduced_motion",
        "device_scale_factor",
        "is_mobile",
        "has_touch",
        "java_script_enabled",
        "ignore_https_errors",
        "bypass_csp",
        "offline",
        "base_url",
        "service_workers",
    }
)
SPARE_TIMEOUT_MS = 30_000  # opening the context held ahead, in the background


class BrowserSession:
    def __init__(
        self, config: BrowserConfig | None = None, *, ref_states: dict[str, RefState] | None = None
    ) -> None:
        self.config = config or BrowserConfig()
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._lock = asyncio.Lock()
        self._groups: set[TabGroup] = set()
        self._workspaces: dict[TabGroup, Path | None] = {}  # each group's run folder
        # Each group's tab settings (TAB_SETTINGS of new_group's ``config``), where they
        # are not the session's.
        self._tab_configs: dict[TabGroup, BrowserConfig] = {}
        # Per browser target: a new Page object for the same tab keeps its refs.
        self.ref_states: dict[str, RefState] = ref_states if ref_states is not None else {}
        self.restarts = 0
        self._taught: weakref.WeakSet[BrowserContext] = weakref.WeakSet()
        self._cdp: CdpConnection | None = None  # the evaluate engine's connection
        self._cdp_endpoint = ""
        self.egress: EgressProxy | None = None  # for a browser we launch
        self._warm = False  # kept warm: started ahead, again after a crash, a spare context
        self._spare: asyncio.Task[TabGroup] | None = None
        # Contexts opened ahead and not handed out (the spare, one still opening, one whose
        # browser was replaced meanwhile and that closes as it opens): none is in use.
        self._ahead: set[TabGroup] = set()
        self._background: set[asyncio.Task[Any]] = set()
        self._made = 0  # contexts made in the current browser
        self.replaced = 0  # browsers replaced after contexts_per_browser contexts
        # Browsers replaced while contexts of theirs were open: closed after their last one.
        self._retired: dict[Browser, CdpConnection | None] = {}
        self._closed = False

    @property
    def connected(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    @property
    def executable_path(self) -> str:
        """The Chromium this session launches (the configured one, else the default)."""
        return self.config.executable_path or default_chromium(headless=self.config.headless)

    @property
    def contexts_open(self) -> int:
        """Contexts this session opened that are not closed yet (the spare included)."""
        return len(self._groups)

    @property
    def contexts_in_browser(self) -> int:
        """Contexts the current browser has open, as it says (0 when it is not up)."""
        return len(self._browser.contexts) if self._browser is not None and self.connected else 0

    @property
    def in_use(self) -> int:
        """Contexts handed out and not closed yet (those opened ahead are not, also while
        they are still opening)."""
        return len(self._groups - self._ahead)

    async def warm(self, *, budget: Budget | None = None) -> None:
        """Keep this session warm from now: start the browser now, open a context ahead of
        the next caller, and start a new browser as soon as one crashes.  Returns once the
        browser is up (the spare context opens in the background)."""
        if self._closed:
            return
        self._warm = True
        await self.start(budget=budget, reopen=False)
        self._refill()

    async def start(self, *, budget: Budget | None = None, reopen: bool = True) -> None:
        """Start (or reach) the browser unless it is up; a closed session opens again,
        unless ``reopen`` is false (then nothing happens)."""
        if self._closed and not reopen:
            return
        budget = budget or Budget(self.config.launch_timeout_ms, label="browser start")
        self._closed = False
        async with self._lock:
            if self._closed and not reopen:
                return  # closed while this waited for the lock
            if self.connected:
                return
            if self._browser is not None:
                self.restarts += 1
                how = "reconnecting to" if self.config.cdp_url else "starting"
                log.warning("the browser was gone; %s a new one (restart %d)", how, self.restarts)
                self._spare = None  # its context went with the browser
                for group in [g for g in self._groups if g.context.browser is self._browser]:
                    self._groups.discard(group)
                    self._ahead.discard(group)
                    self._workspaces.pop(group, None)
                    self._tab_configs.pop(group, None)
                await self._drop_cdp()
                await self._drop_browser()
            await budget.run(self._start_browser(budget))
            self._made = 0
            assert self._browser is not None
            self._browser.on("disconnected", self._on_disconnected)

    def _on_disconnected(self, browser: Browser) -> None:
        """The current browser went away (a crash: a browser we close is no longer
        current by then): a warm session starts the next one now, not when a run asks."""
        if browser is not self._browser or self._closed or not self._warm:
            return
        log.warning("the browser went away; starting a new one ahead of the next run")
        self._spawn(self._rewarm())

    async def _rewarm(self) -> None:
        try:
            await self.warm()
        except TabwrightError as exc:  # the next caller tries again, and is told why
            log.warning("could not start the browser again: %s", exc)

    def _spawn(self, work: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def _refill(self) -> None:
        """Open the next spare context in the background, unless one is (being) opened."""
        if self._warm and not self._closed and self._spare is None and self.connected:
            budget = Budget(SPARE_TIMEOUT_MS, label="open a context ahead")
            self._spare = self._spawn(self._open_group(None, {}, None, budget, ahead=True))
            self._spare.add_done_callback(_quiet)

    async def _take_spare(self, budget: Budget) -> TabGroup | None:
        """The context opened ahead, if there is a usable one; the next is opened."""
        spare, self._spare = self._spare, None
        if spare is None:
            return None
        try:
            group = await budget.run(asyncio.shield(spare))
        except TabwrightError:
            return None  # it failed to open: the caller opens a fresh one, and says why
        if group.context.browser is not self._browser or not self.connected:
            await group.close()  # opened in a browser since replaced or gone
            return None
        self._ahead.discard(group)  # handed out from now
        return group

    async def _start_browser(self, budget: Budget) -> None:
        if self._playwright is None:
            self._playwright = await acquire_driver()
        chromium = self._playwright.chromium
        try:
            if self.config.cdp_url:
                self._browser = await chromium.connect_over_cdp(
                    self.config.cdp_url, timeout=budget.playwright_timeout()
                )
            else:
                if self.egress is None:
                    self.egress = EgressProxy(self.config.url_policy)
                await self.egress.start()  # kept across browser restarts, closed with us
                args = [*self.config.args, *proxy_args(self.egress.url), *ISOLATION_ARGS]
                if self.config.evaluate_enabled:
                    args.append("--remote-debugging-port=0")  # loopback; the port is looked up
                self._browser = await chromium.launch(
                    executable_path=self.executable_path,
                    headless=self.config.headless,
                    args=args,
                    ignore_default_args=list(KEPT_LIMITS),
                    chromium_sandbox=chromium_sandbox(self.config.chromium_sandbox),
                    timeout=budget.playwright_timeout(),
                )
        except PlaywrightError as exc:
            where = self.config.cdp_url or self.executable_path
            hint = "check TABWRIGHT_CHROMIUM_PATH or TABWRIGHT_CDP_URL"
            if not self.config.cdp_url and "sandbox" in str(exc).lower():
                hint = SANDBOX_HINT
            raise BrowserError(
                f"could not start or reach the browser at {where}: {brief(exc)}", hint=hint
            ) from None
        if self.config.evaluate_enabled:
            await self._find_cdp_endpoint(budget)

    async def _find_cdp_endpoint(self, budget: Budget) -> None:
        """Without an endpoint, evaluate still works, on the bounded Playwright path."""
        assert self._browser is not None
        try:
            if self.config.cdp_url:
                self._cdp_endpoint = await endpoint_of_url(self.config.cdp_url, budget=budget)
            else:
                self._cdp_endpoint = await endpoint_of_launched(self._browser, budget=budget)
        except TabwrightError as exc:
            self._cdp_endpoint = ""
            log.warning("no debugging endpoint for the evaluate engine: %s", exc)

    async def _page_runtime(self, target_id: str) -> PageRuntime | None:
        """A session of our own on the page, attached now, before any script of ours runs;
        also how a tab gets a new one after the connection dropped (between scripts)."""
        if not self._cdp_endpoint:
            return None
        budget = Budget(5_000, label="attach evaluate session")
        try:
            if self._cdp is None or self._cdp.closed:
                self._cdp = await CdpConnection.open(self._cdp_endpoint, budget=budget)
            session_id = await self._cdp.attach(target_id, budget=budget)
        except Exception as exc:  # CdpError, BrowserError, out of time: fall back, don't fail
            log.warning("evaluate will take the Playwright path for this tab: %s", exc)
            return None
        runtime = PageRuntime(self._cdp, session_id, target_id)
        try:
            await runtime.watch_frames(budget=budget)
        except Exception as exc:  # the page's own session still works
            log.warning("scripts in this tab's out-of-process frames can't be stopped: %s", exc)
        return runtime

    async def new_group(
        self,
        *,
        storage_state: str | Path | dict | None = None,
        workspace: Path | None = None,
        budget: Budget | None = None,
        context_options: Mapping[str, Any] | None = None,
        config: BrowserConfig | None = None,
    ) -> TabGroup:
        """A fresh browser context (own cookies, storage, downloads) with one tab open.
        ``storage_state`` (a saved sign-in, say) and ``context_options`` (any of
        :data:`CONTEXT_OPTIONS`, passed to Playwright's ``new_context``) shape it; without
        them, a warm session hands over the context it opened ahead.  ``config``: its
        tabs' own settings (:data:`TAB_SETTINGS`: their action timeout, uploads, shell,
        tab limit), the session's otherwise; its launch settings must be the session's."""
        options = dict(context_options or {})
        if config is not None and config.launch_settings() != self.config.launch_settings():
            raise ActionInvalid(
                "a tab's settings differ from its browser's in more than a tab's own",
                hint="open it in a browser session of these launch settings",
            )
        unknown = sorted(set(options) - CONTEXT_OPTIONS)
        if unknown:
            raise ActionInvalid(
                f"context options not allowed: {', '.join(unknown)}",
                hint="allowed: " + ", ".join(sorted(CONTEXT_OPTIONS)),
            )
        budget = budget or Budget(self.config.launch_timeout_ms, label="new tab")
        await self._replace_if_due()
        if storage_state is None and not options and self._warm:
            group = await self._take_spare(budget)
            self._refill()
            if group is not None:
                self._use_settings(group, config)
                for tab in group.tabs:
                    if workspace is not None:
                        tab.use_workspace(workspace)
                self._workspaces[group] = workspace
                return group
        group = await self._open_group(storage_state, options, workspace, budget, config=config)
        self._refill()
        return group

    async def _open_group(
        self,
        storage_state: str | Path | dict | None,
        options: dict[str, Any],
        workspace: Path | None,
        budget: Budget,
        *,
        config: BrowserConfig | None = None,
        ahead: bool = False,
    ) -> TabGroup:
        await self.start(budget=budget)
        assert self._browser is not None
        self._made += 1
        try:
            context = await budget.run(
                self._browser.new_context(
                    **options,
                    viewport={
                        "width": self.config.viewport_width,
                        "height": self.config.viewport_height,
                    },
                    accept_downloads=True,
                    storage_state=storage_state,  # type: ignore[arg-type]
                )
            )
            await budget.run(context.add_init_script(script=SNAPSHOT_JS))
            await budget.run(context.add_init_script(script=PENDING_JS))
            await budget.run(context.add_init_script(script=TYPED_JS))
            await budget.run(context.add_init_script(script=WINDOW_LIMIT_JS))
            console_limit = await budget.run(limit_console(context))
        except PlaywrightError as exc:
            raise BrowserError(f"could not open a tab: {brief(exc)}") from None

        async def make_tab(page: Page, group: TabGroup) -> Tab:
            where = self._workspaces.get(group, workspace)
            settings = self._tab_configs.get(group, self.config)
            tab = Tab(page, context=context, config=settings, workspace=where)
            tab.group = group
            if self.egress is not None:
                tab.why_unreachable = self.egress.why_unreachable
                tab.why_refused = self.egress.why_refused
            await self._keep_state(tab)
            return tab

        group = TabGroup(
            context,
            make_tab=make_tab,
            on_close=self._group_closed,
            max_tabs=self.config.max_tabs,
            console_limit=console_limit,
        )
        self._use_settings(group, config)
        self._workspaces[group] = workspace
        self._groups.add(group)
        if ahead:
            self._ahead.add(group)
        try:
            if self.egress is None:  # behind the proxy, it holds documents too (no Fetch)
                guard = install_url_guard(
                    context, self.config.url_policy, on_block=group.note_blocked
                )
                await budget.run(guard)
            await group.open(budget=budget)
        except BaseException:
            await group.close()
            raise
        return group

    def _use_settings(self, group: TabGroup, config: BrowserConfig | None) -> None:
        """``config``'s tab settings for the group's tabs, those open and those to come."""
        if config is None or config == self.config:
            return
        self._tab_configs[group] = config
        group.max_tabs = config.max_tabs
        for tab in group.tabs:
            tab.config = config

    def _group_closed(self, group: TabGroup) -> None:
        self._groups.discard(group)
        self._ahead.discard(group)
        self._workspaces.pop(group, None)
        self._tab_configs.pop(group, None)
        browser = group.context.browser
        if browser in self._retired and not any(
            other.context.browser is browser for other in self._groups
        ):
            self._spawn(self._close_retired(browser))

    async def _replace_if_due(self) -> None:
        """After contexts_per_browser contexts, the next opens in a new browser; the old
        one closes once its last context has (now, when none is open)."""
        limit = self.config.contexts_per_browser
        if not limit or self.config.cdp_url or self._made < limit or not self.connected:
            return
        async with self._lock:
            if self._made < limit or not self.connected:
                return
            browser, cdp = self._browser, self._cdp
            assert browser is not None
            self._browser, self._cdp, self._cdp_endpoint = None, None, ""
            self._retired[browser] = cdp
            self.replaced += 1
            log.info("replacing the browser after %d contexts", self._made)
        spare, self._spare = self._spare, None
        if spare is not None:
            spare.add_done_callback(lambda done: self._spawn(_close_group(done)))
        if not any(group.context.browser is browser for group in self._groups):
            await self._close_retired(browser)

    async def _close_retired(self, browser: Browser) -> None:
        if browser not in self._retired:
            return
        cdp = self._retired.pop(browser)
        if cdp is not None:
            await cdp.close()
        try:
            await browser.close()
        except PlaywrightError:
            pass  # already gone

    async def new_tab(
        self,
        *,
        storage_state: str | Path | dict | None = None,
        workspace: Path | None = None,
        budget: Budget | None = None,
        context_options: Mapping[str, Any] | None = None,
        config: BrowserConfig | None = None,
    ) -> Tab:
        """A fresh page in a fresh browser context (own cookies and storage); its group
        (``tab.group``) holds the tabs the run opens later.  ``config``: as for
        :meth:`new_group`."""
        group = await self.new_group(
            storage_state=storage_state,
            workspace=workspace,
            budget=budget,
            context_options=context_options,
            config=config,
        )
        assert group.current is not None
        return group.current

    async def adopt(self, page: Page) -> Tab:
        """A Tab for a page of this browser made elsewhere (another connection, say); if
        this session knew the page's target, its refs carry on."""
        await self._teach_selector_engine(page.context)
        tab = Tab(page, config=self.config)
        await self._keep_state(tab)
        return tab

    async def _teach_selector_engine(self, context: BrowserContext) -> None:
        """Playwright hands registered selector engines only to contexts it creates; a
        context found on connecting over CDP must be told about ours explicitly.  The
        public API has no call for it, so this goes through the context's channel."""
        if context in self._taught:
            return
        channel = context._impl_obj._channel  # type: ignore[attr-defined]
        try:
            await channel.registerSelectorEngine(
                {"name": "tabwright", "source": SELECTOR_ENGINE, "contentScript": True},
                timeout=10_000,
            )
        except PlaywrightError as exc:
            if "already registered" not in str(exc):
                raise BrowserError(f"could not prepare the tab: {brief(exc)}") from None
        self._taught.add(context)

    async def _keep_state(self, tab: Tab) -> None:
        """The tab's own CDP session, its target, its downloads followed, its evaluate
        engine and its refs' state.  Each within its time: a page whose own script spins
        (a hostile popup) answers none of its domains' commands, and a tab made for it must
        not wait for it forever, nor keep every look at the run's tabs waiting."""
        budget = Budget(_KEEP_MS, label="a new tab's own CDP session")
        try:
            # The tab's own session, made now and kept for its CDP calls (backend node ids).
            session = await tab.core.cdp_session(budget)
            info = await budget.run(session.send("Target.getTargetInfo"))
        except PlaywrightError:
            return  # not a CDP browser target: refs live with this Tab only
        except TabwrightError as exc:  # out of time: the tab goes on without them
            log.warning("a new tab's own CDP session did not answer: %s", exc)
            return
        target = tab.target_id = info["targetInfo"]["targetId"]
        try:  # Page.enable is answered by the page's renderer, which may be busy for good
            await budget.run(tab.watch_downloads(session))
        except (PlaywrightError, TabwrightError) as exc:
            log.warning("a new tab's downloads are not followed: %s", exc)
        if self.config.evaluate_enabled:
            tab.runtime = await self._page_runtime(target)

            async def reattach() -> PageRuntime | None:
                return await self._page_runtime(target)

            tab.reattach_runtime = reattach
        known = self.ref_states.get(target)
        if known is not None:
            tab.state = known
        else:
            self.ref_states[target] = tab.state

    async def close(self) -> None:
        self._closed, self._warm = True, False
        spare, self._spare = self._spare, None
        if spare is not None:  # no need to finish opening it: it closes on its way out
            spare.cancel()
            await asyncio.gather(spare, return_exceptions=True)
        async with self._lock:
            for group in list(self._groups):
                await group.close()
            for task in list(self._background):
                task.cancel()
            await asyncio.gather(*self._background, return_exceptions=True)
            for browser in list(self._retired):
                await self._close_retired(browser)
            await self._drop_cdp()
            await self._drop_browser()
            if self._playwright is not None:
                playwright, self._playwright = self._playwright, None
                await release_driver(playwright)
            if self.egress is not None:
                await self.egress.close()

    async def _drop_cdp(self) -> None:
        cdp, self._cdp, self._cdp_endpoint = self._cdp, None, ""
        if cdp is not None:
            await cdp.close()

    async def _drop_browser(self) -> None:
        browser, self._browser = self._browser, None
        if browser is not None:
            try:
                await browser.close()
            except PlaywrightError:
                pass  # already gone: nothing to close

    async def __aenter__(self) -> BrowserSession:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _quiet(task: asyncio.Task[Any]) -> None:
    """A spare context that failed to open is said by whoever takes it; the loop need not."""
    if not task.cancelled():
        task.exception()


async def _close_group(task: asyncio.Task[TabGroup]) -> None:
    if not task.cancelled() and task.exception() is None:
        await task.result().close()
