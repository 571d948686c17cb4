"""What the model clients' tests share: a request, a key that must never leak, a sink
for streamed tokens, and a transport that hands bodies on in tiny slices."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx

from automation.actions import ACTIONS
from automation.llm.base import ChatMessage, PlannerRequest

SECRET_KEY = "sk-test-DO-NOT-LEAK-0123456789"
REPLY_TEXT = 'I will open the search box. <action>{"action": "click", "ref": "e5"}</action>'


def make_request(*, actions: bool = False) -> PlannerRequest:
    """A round's request; ``actions``: with two actions offered (click and fill)."""
    return PlannerRequest(
        task="find the docs",
        start_url="http://127.0.0.1/",
        round=1,
        messages=[
            ChatMessage("system", "You drive a browser."),
            ChatMessage("user", "Find the docs page."),
        ],
        actions=[ACTIONS["click"], ACTIONS["fill"]] if actions else [],
    )


class TokenSink:
    """Collects on_token pieces; ``first`` is set once any text has arrived."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.first = asyncio.Event()

    async def __call__(self, piece: str) -> None:
        self.pieces.append(piece)
        self.first.set()


class RechunkingTransport(httpx.AsyncBaseTransport):
    """The real HTTP transport, with response bodies handed on in tiny slices.

    The bytes still come from the scripted server; slicing them makes every SSE line and
    several UTF-8 characters straddle network chunks, which loopback never does by itself.
    """

    def __init__(self, slice_bytes: int) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self._slice_bytes = slice_bytes

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Sliced(response, self._slice_bytes),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Sliced(httpx.AsyncByteStream):
    def __init__(self, response: httpx.Response, slice_bytes: int) -> None:
        self._response = response
        self._slice_bytes = slice_bytes

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.aiter_raw():
            for i in range(0, len(chunk), self._slice_bytes):
                yield chunk[i : i + self._slice_bytes]

    async def aclose(self) -> None:
        await self._response.aclose()
