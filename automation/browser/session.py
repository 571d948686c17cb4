"""One Playwright connection per browser; each run gets a group of tabs in its own context.

``BrowserSession`` launches Debian's Chromium through Playwright (path from the config) or
connects to a running Chrome by CDP URL.  If the browser died, the next call that needs
it starts (or reconnects to) a fresh one, counts it in ``restarts`` and logs it.

Every context gets the snapshot registry as an init script (so it exists before a page's
own scripts run) and the URL guard; the ``tabwright=`` selector engine that resolves refs
is registered once per Playwright connection.

A Chromium the session launches reaches the network only through the session's egress
proxy (:mod:`automation.browser.egress`), which holds every connection of every page,
frame and worker to the URL policy; WebRTC may not send UDP around it.  A browser reached
by CDP URL was launched by someone else: its connections are not ours to route (it may
not even be on this machine), so there only the URL guard holds, for documents.
Chromium's sandbox is on unless this process is root (see :func:`chromium_sandbox`).

With evaluate on, the session also keeps a CDP connection of its own to the browser
(:mod:`automation.browser.cdp`) and attaches every page to it as the page is created: the
session the evaluate engine runs scripts on and stops them through.
"""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from pathlib import Path

from playwright.async_api import Browser, BrowserContext, Page, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from automation.browser.cdp import CdpConnection, endpoint_of_launched, endpoint_of_url
from automation.browser.config import BrowserConfig
from automation.browser.egress import EgressProxy
from automation.browser.evaluate import PageRuntime
from automation.browser.pwcall import brief
from automation.browser.settle import PENDING_JS
from automation.browser.snapshot import SNAPSHOT_JS
from automation.browser.tab import SELECTOR_ENGINE, RefState, Tab
from automation.browser.tabs import TabGroup
from automation.browser.url_guard import install_url_guard
from automation.budget import Budget
from automation.errors import BrowserError, TabwrightError

__all__ = ["BrowserSession", "chromium_sandbox", "proxy_args"]

log = logging.getLogger("automation.browser")

_SANDBOX_HINT = (
    "Chromium's sandbox could not start: run the server as a user other than root with "
    "unprivileged user namespaces allowed (sysctl kernel.unprivileged_userns_clone=1; on "
    "Ubuntu also kernel.apparmor_restrict_unprivileged_userns=0), or turn the sandbox off "
    "with TABWRIGHT_CHROMIUM_SANDBOX=0"
)


def chromium_sandbox(forced: bool | None, *, euid: int | None = None) -> bool:
    """Whether Chromium runs sandboxed: as forced, else whenever we are not root, where
    Chromium refuses to start sandboxed (it wants an unprivileged user to drop to)."""
    if forced is not None:
        return forced
    return (os.geteuid() if euid is None else euid) != 0


def proxy_args(proxy_url: str) -> list[str]:
    """Chromium's switches that send every connection through the egress proxy."""
    return [
        f"--proxy-server={proxy_url}",
        # Chromium sends loopback hosts around any proxy unless told not to: <-loopback>
        # takes that implicit exception away, so 127.0.0.1 and localhost are judged too.
        "--proxy-bypass-list=<-loopback>",
        # WebRTC would otherwise send UDP (STUN, media) straight to any address a page
        # names.  Measured on Chromium 156: this switch stops it; the documented
        # --force-webrtc-ip-handling-policy is ignored.
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    ]


class BrowserSession:
    def __init__(
        self, config: BrowserConfig | None = None, *, ref_states: dict[str, RefState] | None = None
    ) -> None:
        self.config = config or BrowserConfig()
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._lock = asyncio.Lock()
        self._groups: set[TabGroup] = set()
        # Per browser target: a new Page object for the same tab keeps its refs.
        self.ref_states: dict[str, RefState] = ref_states if ref_states is not None else {}
        self.restarts = 0
        self._taught: weakref.WeakSet[BrowserContext] = weakref.WeakSet()
        self._cdp: CdpConnection | None = None  # the evaluate engine's connection
        self._cdp_endpoint = ""
        self.egress: EgressProxy | None = None  # for a browser we launch

    @property
    def connected(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    async def start(self, *, budget: Budget | None = None) -> None:
        budget = budget or Budget(self.config.launch_timeout_ms, label="browser start")
        async with self._lock:
            if self.connected:
                return
            if self._browser is not None:
                self.restarts += 1
                how = "reconnecting to" if self.config.cdp_url else "starting"
                log.warning("the browser was gone; %s a new one (restart %d)", how, self.restarts)
                self._groups.clear()
                await self._drop_cdp()
                await self._drop_browser()
            await budget.run(self._start_browser(budget))

    async def _start_browser(self, budget: Budget) -> None:
        if self._playwright is None:
            self._playwright = await async_playwright().start()
            await self._playwright.selectors.register(
                "tabwright", SELECTOR_ENGINE, content_script=True
            )
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
                args = [*self.config.args, *proxy_args(self.egress.url)]
                if self.config.evaluate_enabled:
                    args.append("--remote-debugging-port=0")  # loopback; the port is looked up
                self._browser = await chromium.launch(
                    executable_path=self.config.executable_path or None,
                    headless=self.config.headless,
                    args=args,
                    chromium_sandbox=chromium_sandbox(self.config.chromium_sandbox),
                    timeout=budget.playwright_timeout(),
                )
        except PlaywrightError as exc:
            where = self.config.cdp_url or self.config.executable_path
            hint = "check TABWRIGHT_CHROMIUM_PATH or TABWRIGHT_CDP_URL"
            if not self.config.cdp_url and "sandbox" in str(exc).lower():
                hint = _SANDBOX_HINT
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
    ) -> TabGroup:
        """A fresh browser context (own cookies and storage) with one tab open."""
        budget = budget or Budget(self.config.launch_timeout_ms, label="new tab")
        await self.start(budget=budget)
        assert self._browser is not None
        try:
            context = await budget.run(
                self._browser.new_context(
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
        except PlaywrightError as exc:
            raise BrowserError(f"could not open a tab: {brief(exc)}") from None

        async def make_tab(page: Page, group: TabGroup) -> Tab:
            tab = Tab(page, context=context, config=self.config, workspace=workspace)
            tab.group = group
            if self.egress is not None:
                tab.why_unreachable = self.egress.why_unreachable
            await self._keep_state(tab)
            return tab

        group = TabGroup(
            context, make_tab=make_tab, on_close=self._groups.discard, max_tabs=self.config.max_tabs
        )
        await budget.run(
            install_url_guard(context, self.config.url_policy, on_block=group.note_blocked)
        )
        self._groups.add(group)
        try:
            await group.open(budget=budget)
        except BaseException:
            await group.close()
            raise
        return group

    async def new_tab(
        self,
        *,
        storage_state: str | Path | dict | None = None,
        workspace: Path | None = None,
        budget: Budget | None = None,
    ) -> Tab:
        """A fresh page in a fresh browser context (own cookies and storage); its group
        (``tab.group``) holds the tabs the run opens later."""
        group = await self.new_group(
            storage_state=storage_state, workspace=workspace, budget=budget
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
        try:
            # The tab's own session, made now and kept for its CDP calls (backend node ids).
            session = await tab.core.cdp_session()
            info = await session.send("Target.getTargetInfo")
        except PlaywrightError:
            return  # not a CDP browser target: refs live with this Tab only
        target = info["targetInfo"]["targetId"]
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
        async with self._lock:
            for group in list(self._groups):
                await group.close()
            await self._drop_cdp()
            await self._drop_browser()
            if self._playwright is not None:
                await self._playwright.stop()
                self._playwright = None
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
