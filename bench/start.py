"""How fast work starts: a dashboard run from its claim to its first action, and an MCP
server over stdio from its spawn to its first ``navigate`` answered, beside Playwright MCP.

Runs: a dashboard as it runs for real (daphne with its embedded worker, a fresh database,
a user and an API token, the rule planner) is started, then RUNS runs are made one after
another through the API, each once the one before has ended: task ``wait for Ready`` on a
page of a loopback server that notes when each run's page is asked for (its first action,
the navigate to its start URL).  The worker is idle when each run is made, so it claims
the run on the wake-up that comes with it: the time from the API's answer (the run made,
queued) to the page's request holds the claim and bounds the claim → first action time
from above.  The first run is made as soon as the server answers, as after a deploy.

MCP: each round spawns, by the official MCP SDK's client (bench.mcpclient), Tabwright
with its warm server running (how a user's client starts it from its second session on:
``mcp_spawn_to_navigate_ms``), Tabwright with none running (a user's first start: the
relay starts the warm server, which serves it; stopped after), and Playwright MCP; each
from the spawn, through ``initialize``, to the first ``navigate`` of a small page
answered.

    .venv/bin/python -m bench.start [--runs 10] [--rounds 5] [--mcp-only]

Last line:
    RESULT start run_first_action_p50_ms=… run_first_action_max_ms=…
      mcp_spawn_to_navigate_ms=… mcp_first_start_ms=… pw_spawn_to_navigate_ms=…
      mcp_over_pw=… first_over_pw=…
(with --mcp-only no runs are made, and the line has only the MCP figures).
Goals: run_first_action_p50_ms ≤ 1000; mcp_spawn_to_navigate_ms ≤ 1500 and
mcp_over_pw ≤ 1 (medians over the rounds, same machine, same run).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

from automation.browser.config import default_chromium
from bench.common import median, serve
from bench.mcpclient import ensure_playwright_mcp, open_driver
from tests.automation.mcp.warmth import stop_servers
from tests.daphne import api_token, daphne, log_in

USER = ("bench", "bench-password-7w3e")
PAGE = b"<!doctype html><title>Start</title><main><h1>Ready</h1></main>"
RUN_TIMEOUT_S = 60.0  # a run past this is stuck, not slow


class _Pages(BaseHTTPRequestHandler):
    """Serves PAGE and notes, per ``?run=N``, when it was first asked for."""

    asked: dict[str, float]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        run = parse_qs(urlsplit(self.path).query).get("run", [""])[0]
        self.asked.setdefault(run, time.time())
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


@contextmanager
def noting_server() -> Iterator[tuple[str, dict[str, float]]]:
    asked: dict[str, float] = {}
    handler = type("Pages", (_Pages,), {"asked": asked})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


def _ended(api: httpx.Client, run_id: int) -> dict[str, object]:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        run = api.get(f"/api/runs/{run_id}").json()
        if run["status"] in ("succeeded", "failed", "stopped", "lost"):
            return run
        assert time.monotonic() < deadline, f"run {run_id} is still {run['status']}"
        time.sleep(0.5)  # seldom: each look takes the server's time the runs need


def runs_to_first_action(count: int) -> list[float]:
    """Milliseconds from each run made (queued, on an idle worker) to its first action."""
    settings = {
        "TABWRIGHT_PLANNER": "rules",
        "TABWRIGHT_BLOCK_PRIVATE_ADDRESSES": "0",  # the page is on 127.0.0.1
        "TABWRIGHT_CHROMIUM_PATH": os.environ.get("TABWRIGHT_CHROMIUM_PATH") or default_chromium(),
        "TABWRIGHT_LOG": "WARNING",
        "TABWRIGHT_SESSION_IDLE_S": "0",  # a run's tab closes when its work ends
    }
    took = []
    with (
        noting_server() as (pages, asked),
        tempfile.TemporaryDirectory() as var,
        daphne(Path(var), USER, settings) as (base_url, _log),
    ):
        page = log_in(base_url, USER)
        token = api_token(page, "bench")
        api = httpx.Client(
            base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=20
        )
        for n in range(count):
            body = {"task": "wait for Ready", "start_url": f"{pages}/start?run={n}",
                    "planner": "rules"}  # fmt: skip
            made = api.post("/api/runs", json=body)
            queued_at = time.time()
            assert made.status_code == 201, made.text[:300]
            run = _ended(api, made.json()["id"])
            assert run["status"] == "succeeded", run
            took.append((asked[str(n)] - queued_at) * 1000)
            print(f"  run {n + 1}: first action {took[-1]:.0f} ms after it was queued")
    return took


async def spawn_to_navigate(name: str, url: str, *, runtime: Path | None = None) -> float:
    """Milliseconds from spawning the server to its first navigate answered."""
    started = time.perf_counter()
    async with open_driver(name, runtime=runtime) as driver:
        answer = await driver.navigate(url)
        took = (time.perf_counter() - started) * 1000
    assert not answer.is_error, answer.text[:300]
    return took


async def mcp_starts(rounds: int) -> tuple[list[float], list[float], list[float]]:
    """Per round: Tabwright's start with a warm server running (as every start after a
    user's first), its first start (none running: the relay starts one, which serves
    it), and Playwright MCP's."""
    ensure_playwright_mcp()
    warm, first, theirs = [], [], []
    with serve() as base, tempfile.TemporaryDirectory(prefix="bench-warm-") as folder:
        url = f"{base}/demo/form.html"
        runtime = Path(folder) / "warm"
        runtime.mkdir(mode=0o700)
        await spawn_to_navigate("tabwright", url, runtime=runtime)  # the warm server starts
        try:
            for n in range(rounds):
                warm.append(await spawn_to_navigate("tabwright", url, runtime=runtime))
                cold = Path(folder) / f"first-{n}"
                cold.mkdir(mode=0o700)
                try:
                    first.append(await spawn_to_navigate("tabwright", url, runtime=cold))
                finally:
                    stop_servers(cold)
                theirs.append(await spawn_to_navigate("playwright", url))
                print(
                    f"  round {n + 1}: Tabwright {warm[-1]:.0f} ms (a first start "
                    f"{first[-1]:.0f} ms), Playwright MCP {theirs[-1]:.0f} ms"
                )
        finally:
            stop_servers(runtime)
    return warm, first, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs made one after another")
    parser.add_argument("--rounds", type=int, default=5, help="spawns of each MCP server")
    parser.add_argument("--mcp-only", action="store_true", help="only the MCP servers' start")
    options = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}")
    took: list[float] = []
    if not options.mcp_only:
        print("dashboard runs: made through the API, first action noted by the page's server")
        took = runs_to_first_action(options.runs)
    print("MCP over stdio: spawn -> initialize -> first navigate answered")
    ours, first, theirs = asyncio.run(mcp_starts(options.rounds))
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    ours_ms, first_ms, theirs_ms = median(ours), median(first), median(theirs)
    runs = (
        f"run_first_action_p50_ms={median(took):.0f} run_first_action_max_ms={max(took):.0f} "
        if took
        else ""
    )
    print(
        f"RESULT start {runs}mcp_spawn_to_navigate_ms={ours_ms:.0f} "
        f"mcp_first_start_ms={first_ms:.0f} pw_spawn_to_navigate_ms={theirs_ms:.0f} "
        f"mcp_over_pw={ours_ms / theirs_ms:.2f} first_over_pw={first_ms / theirs_ms:.2f}"
    )


if __name__ == "__main__":
    main()
