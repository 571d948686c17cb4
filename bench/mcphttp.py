"""MCP sessions over HTTP, for bench.mcp: a real dashboard (daphne on loopback, its own
worker driving two runs at once) and the MCP SDK's client with an API token, as a coding
agent connects.

- Twenty sessions in a row: each opens, makes its first call (``navigate``, which waits
  for the session's browser to open) and ends.
- Three sessions at once, five times: each makes two first calls together (``navigate``
  and ``snapshot``) and ends; the third waits for a slot.
- Then the runs: one per session, and how many are still live (holding a slot, or
  queued for one) once every session has ended and the runs had up to SETTLE_S to end.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from automation.browser.config import default_chromium
from bench.common import median
from tests.daphne import api_token, daphne, log_in

__all__ = ["HttpSessions", "http_sessions"]

USER = ("bench", "bench-password-5k2q")
IN_A_ROW = 20
TOGETHER, ROUNDS = 3, 5
SLOTS = 2
SETTLE_S = 30.0  # the most the runs of ended sessions are given to end
LIVE = {"queued", "pending", "running", "paused"}


@dataclass(frozen=True)
class HttpSessions:
    first_ok: int  # of IN_A_ROW sessions in a row, first calls answered ok
    first_ms: list[float]
    together_ok: int  # of TOGETHER * ROUNDS * 2 first calls made together
    sessions: int
    runs: int
    left: int  # runs still live once every session ended and SETTLE_S passed


@asynccontextmanager
async def _client(base_url: str, token: str) -> AsyncIterator[Client]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    try:
        async with Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client:
            yield client
    finally:
        await http.aclose()


async def _ok(client: Client, name: str, args: dict[str, object]) -> bool:
    result = await client.call_tool(name, args)
    if result.is_error:
        print(f"  {name}: {result.content[0].text[:200]}")
    return not result.is_error


async def http_sessions(pages: str) -> HttpSessions:
    """The measures, against a dashboard started here; ``pages``: where the demo pages
    are served (fixtures/ on loopback)."""
    settings = {
        "TABWRIGHT_PLANNER": "rules",
        "TABWRIGHT_BLOCK_PRIVATE_ADDRESSES": "0",  # the pages are on 127.0.0.1
        "TABWRIGHT_CHROMIUM_PATH": os.environ.get("TABWRIGHT_CHROMIUM_PATH") or default_chromium(),
        "TABWRIGHT_LOG": "WARNING",
        "TABWRIGHT_WORKER_RUNS": str(SLOTS),
        "TABWRIGHT_SESSION_IDLE_S": "900",  # sessions end because their clients do
    }
    form = f"{pages}/demo/form.html"
    with (
        tempfile.TemporaryDirectory() as var,
        daphne(Path(var), USER, settings) as (base_url, _log),
    ):
        page = log_in(base_url, USER)
        token = api_token(page, "bench")
        first_ok, first_ms = 0, []
        for _ in range(IN_A_ROW):
            async with _client(base_url, token) as client:
                started = time.perf_counter()
                first_ok += await _ok(client, "navigate", {"url": form})
                first_ms.append((time.perf_counter() - started) * 1000)

        async def together() -> int:
            async with _client(base_url, token) as client:
                answers = await asyncio.gather(
                    _ok(client, "navigate", {"url": form}), _ok(client, "snapshot", {})
                )
                return sum(answers)

        together_ok = 0
        for _ in range(ROUNDS):
            together_ok += sum(await asyncio.gather(*(together() for _ in range(TOGETHER))))
        runs, left = await asyncio.to_thread(_settled, page, token)
    return HttpSessions(first_ok, first_ms, together_ok, IN_A_ROW + TOGETHER * ROUNDS, runs, left)


def _settled(page: httpx.Client, token: str) -> tuple[int, int]:
    """(MCP runs made, those still live once they settled or SETTLE_S passed)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        listed = page.get(
            "/api/runs?kind=mcp&limit=500", headers={"Authorization": f"Bearer {token}"}
        ).json()
        live = sum(run["status"] in LIVE for run in listed)
        if not live or time.monotonic() > deadline:
            return len(listed), live
        time.sleep(0.2)


def report(result: HttpSessions) -> None:
    calls = TOGETHER * ROUNDS * 2
    print(f"\nMCP over HTTP (a dashboard with {SLOTS} worker slots, the SDK's client)")
    print(
        f"  {IN_A_ROW} sessions in a row: first call ok {result.first_ok}/{IN_A_ROW}, "
        f"median {median(result.first_ms):.0f} ms (the browser opening included)"
    )
    print(f"  {TOGETHER} sessions at once x{ROUNDS}: first calls ok {result.together_ok}/{calls}")
    print(
        f"  runs: {result.runs} for {result.sessions} sessions; "
        f"{result.left} still live after the sessions ended"
    )
