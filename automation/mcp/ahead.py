"""The stdio server's one tab, opened ahead: made as the server process starts, it starts
the browser and opens the tab's context at once, while the rest of the server (the MCP
SDK) loads and the client initializes; the first tool call then waits only for what is
left.  It imports no MCP SDK, so the server's entry point can make it first."""

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
    """Make it in the running event loop; :meth:`close` it at the end."""

    def __init__(self, config: BrowserConfig) -> None:
        self.config = config
        self.browser = BrowserSession(config)
        self._folder = tempfile.TemporaryDirectory(prefix="tabwright-mcp-")
        self.workspace = Path(self._folder.name)  # downloads and the session's files
        self._opening: asyncio.Task[Tab] | None = asyncio.get_running_loop().create_task(
            self._open()
        )

    async def _open(self) -> Tab:
        budget = Budget(self.config.launch_timeout_ms, label="open the browser")
        return await self.browser.new_tab(workspace=self.workspace, budget=budget)

    async def tab(self) -> Tab:
        """The tab opened ahead, once open; if that failed (TabwrightError, raised here),
        the next call opens one anew."""
        opening, self._opening = self._opening, None
        return await (opening if opening is not None else self._open())

    async def close(self) -> None:
        if self._opening is not None:  # the client left before its first call
            self._opening.cancel()
            await asyncio.gather(self._opening, return_exceptions=True)
        await self.browser.close()
        self._folder.cleanup()
