"""A stdio session's one tab, opened ahead: made as the server process starts, it starts
the browser and opens the tab's context at once, while the rest of the server (the MCP
SDK) loads and the client initializes; the first tool call then waits only for what is
left.  In the warm server (:mod:`automation.mcp.warmserver`) each session's is made as
its client connects, in the browser the sessions share.  It imports no MCP SDK, so the
server's entry point can make it first."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from automation.browser.config import BrowserConfig
from automation.browser.session import BrowserSession
from automation.browser.tab import Tab
from automation.budget import Budget

__all__ = ["TabAhead"]


class TabAhead:
    """Make it in the running event loop; :meth:`close` it at the end.  ``browser``: a
    browser shared with other sessions (closing closes this session's tabs only), else
    one of its own (closed with it)."""

    def __init__(self, config: BrowserConfig, browser: BrowserSession | None = None) -> None:
        self.config = config
        self._own = browser is None
        self.browser = browser if browser is not None else BrowserSession(config)
        self._folder = tempfile.TemporaryDirectory(prefix="tabwright-mcp-")
        self.workspace = Path(self._folder.name)  # downloads and the session's files
        self._tab: Tab | None = None  # the one opened, to close in a shared browser
        self._opening: asyncio.Task[Tab] | None = asyncio.get_running_loop().create_task(
            self._open()
        )

    async def _open(self) -> Tab:
        budget = Budget(self.config.launch_timeout_ms, label="open the browser")
        self._tab = await self.browser.new_tab(workspace=self.workspace, budget=budget)
        return self._tab

    async def tab(self) -> Tab:
        """The tab opened ahead, once open; if that failed (TabwrightError, raised here),
        the next call opens one anew."""
        opening, self._opening = self._opening, None
        return await (opening if opening is not None else self._open())

    async def close(self) -> None:
        if self._opening is not None:  # the client left before its first call
            self._opening.cancel()
            await asyncio.gather(self._opening, return_exceptions=True)
        if self._own:
            await self.browser.close()
        elif self._tab is not None:
            tab = self._tab
            await (tab.group.close() if tab.group is not None else tab.close())
        self._folder.cleanup()
