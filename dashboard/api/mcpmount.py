"""``/mcp`` as the server mounts it (dashboard.asgi): the endpoint (:mod:`dashboard.api.mcp`)
and the MCP SDK behind it load at the first request to ``/mcp``, in a thread (the event
loop serves everything else meanwhile), not when the server starts: a server whose people
never reach it over MCP, and a test's server, never pay for the SDK (~0.5 s of CPU)."""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

__all__ = ["PATH", "McpMount"]

PATH = "/mcp"
ENDPOINT = "dashboard.api.mcp"


class McpMount:
    """An ASGI app: the endpoint's ``McpApp``, made at the first request (one, however
    many requests come at once); a load that failed is tried again at the next."""

    def __init__(self) -> None:
        self._app: Any = None
        self._loading: asyncio.Future[Any] | None = None

    @property
    def loaded(self) -> bool:
        return self._app is not None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        app = self._app if self._app is not None else await self._load()
        await app(scope, receive, send)

    async def _load(self) -> Any:
        if self._loading is None:
            self._loading = asyncio.ensure_future(asyncio.to_thread(_endpoint))
        loading = self._loading
        try:
            app = await asyncio.shield(loading)
        except BaseException:
            if loading.done() and self._loading is loading:
                self._loading = None  # it failed: the next request tries again
            raise
        if self._app is None:
            self._app = app
        return self._app


def _endpoint() -> Any:
    return importlib.import_module(ENDPOINT).McpApp()
