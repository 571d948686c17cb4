"""/mcp as the server mounts it (dashboard.api.mcpmount): the endpoint loads at the first
request, once however many come together, and a load that failed is tried again at the
next request."""

from __future__ import annotations

import asyncio
import sys
import types
from typing import Any

import pytest

from dashboard.api import mcpmount
from dashboard.api.mcpmount import McpMount

pytestmark = pytest.mark.asyncio(loop_scope="session")

ENDPOINT = "tests.dashboard.api.an_endpoint"  # made here, in sys.modules only


class Endpoint:
    made: list[Endpoint] = []

    def __init__(self) -> None:
        Endpoint.made.append(self)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "answered", "by": self, "path": scope["path"]})


async def test_the_endpoint_loads_at_the_first_requests_once_and_again_after_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    Endpoint.made.clear()
    monkeypatch.setattr(mcpmount, "ENDPOINT", ENDPOINT)  # not there yet: it fails to load
    mount = McpMount()
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    with pytest.raises(ModuleNotFoundError):
        await mount({"path": "/mcp"}, None, send)
    assert not mount.loaded and sent == []

    module = types.ModuleType(ENDPOINT)
    module.McpApp = Endpoint  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, ENDPOINT, module)
    async with asyncio.timeout(30):
        await asyncio.gather(*(mount({"path": "/mcp"}, None, send) for _ in range(3)))
    assert mount.loaded
    assert len(Endpoint.made) == 1
    assert [m["by"] for m in sent] == Endpoint.made * 3
