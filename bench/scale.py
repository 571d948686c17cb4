"""Runs across processes: what the worker design costs and gives.

Two set-ups, each measured the same way:

- *embedded*: one daphne with SQLite and the in-memory layer, its own worker inside (the
  default of ``make run``);
- *redis*: one web process that drives nothing, and workers (``manage.py runworker``) on a
  real PostgreSQL and Redis (Debian's servers on loopback, as the tests start them).

Measured on a page's socket, as a browser's would be:

- event latency: a model round's ``llm.message`` carries the server's clock at the moment
  the engine emitted it (``at_ms``); the page's arrival time minus that, over the rounds of
  several rule-planner runs (same machine, same clock);
- command round trip: a command the worker answers (``extend`` by 0 rounds on a paused run:
  refused by the worker) sent from the page until its answer is back;
- runs per minute: 20 runs of the sign-up form queued at once, capacity 2 per worker, with
  one worker and with two.

Prints one line::

    RESULT scale event_ms_p50=… event_ms_p95=… redis_event_ms_p50=… redis_event_ms_p95=…
      command_ms_p50=… command_ms_p95=… redis_command_ms_p50=… redis_command_ms_p95=…
      runs_per_min_1=… runs_per_min_2=… two_over_one=…

``python -m bench.scale [--runs 20] [--commands 30]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from websockets.asyncio.client import connect

from bench.common import median, p95
from tests.daphne import daphne, log_in, new_run, runworker
from tests.e2e.ui import CHROMIUM
from tests.servers import postgres_server, redis_server
from tests.tasks import AMBIGUOUS_TASK, FORM_TASK

USER = ("bench", "bench-password-1234")
COMMON = {
    "TABWRIGHT_SECRET_KEY": "a-key-every-process-of-the-bench-shares-" + "x" * 16,
    "TABWRIGHT_DEBUG": "1",
    "TABWRIGHT_BLOCK_PRIVATE_ADDRESSES": "0",
    "TABWRIGHT_PLANNER": "rules",
    "TABWRIGHT_CHROMIUM_PATH": CHROMIUM,
    "TABWRIGHT_SESSION_IDLE_S": "0",
    "TABWRIGHT_WORKER_RUNS": "2",
}


class Dashboard:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.client = log_in(base_url, USER)

    def new_run(self, page: str, task: str) -> int:
        return new_run(self.client, task, f"{self.base_url}/demo/{page}")

    def socket(self, run_id: int):  # type: ignore[no-untyped-def]
        uri = self.base_url.replace("http://", "ws://") + f"/ws/runs/{run_id}/"
        cookie = f"sessionid={self.client.cookies['sessionid']}"
        return connect(uri, origin=self.base_url,  # type: ignore[arg-type]
                       additional_headers={"Cookie": cookie}, max_size=None)  # fmt: skip


async def until(socket, kind: str, timeout_s: float = 120) -> list[dict]:  # type: ignore[no-untyped-def]
    got = []
    async with asyncio.timeout(timeout_s):
        while True:
            message = json.loads(await socket.recv())
            message["_at"] = time.time() * 1000
            got.append(message)
            if message["type"] == kind:
                return got


async def event_latencies(dash: Dashboard, runs: int) -> list[float]:
    """``llm.message`` arrival minus its emit time, over ``runs`` form runs, one at a time."""
    out: list[float] = []
    for _ in range(runs):
        run_id = dash.new_run("form.html", FORM_TASK)
        async with dash.socket(run_id) as socket:
            for message in await until(socket, "run.finished"):
                if message["type"] == "llm.message" and "at_ms" in message:
                    out.append(message["_at"] - message["at_ms"])
    return out


async def command_trips(dash: Dashboard, count: int) -> list[float]:
    """Page → worker → page: ``extend`` by 0 rounds on a paused run, refused by the worker."""
    run_id = dash.new_run("list.html", AMBIGUOUS_TASK)
    trips: list[float] = []
    async with dash.socket(run_id) as socket:
        await until(socket, "run.paused")
        for _ in range(count):
            start = time.perf_counter()
            await socket.send(json.dumps({"command": "extend", "rounds": 0}))
            answer = await until(socket, "error", timeout_s=30)
            assert "extend by" in answer[-1]["message"], answer[-1]
            trips.append((time.perf_counter() - start) * 1000)
        await socket.send(json.dumps({"command": "stop"}))
        await until(socket, "run.finished")
    return trips


def runs_per_minute(dash: Dashboard, count: int) -> float:
    ids = [dash.new_run("form.html", FORM_TASK) for _ in range(count)]
    start = time.monotonic()
    pending = set(ids)
    while pending:
        for run_id in list(pending):
            page = dash.client.get(f"/runs/{run_id}/").text
            if re.search(r'id="status"[^>]*>(succeeded|failed|stopped)<', page):
                pending.discard(run_id)
        time.sleep(0.25)
        assert time.monotonic() - start < 600, f"{len(pending)} runs never ended"
    return count / ((time.monotonic() - start) / 60)


@contextmanager
def embedded(var: Path) -> Iterator[Dashboard]:
    with daphne(var / "web", USER, dict(COMMON)) as (base_url, _):
        yield Dashboard(base_url)


@contextmanager
def distributed(var: Path, workers: int) -> Iterator[Dashboard]:
    with ExitStack() as stack:
        database_url = stack.enter_context(postgres_server())
        redis_url = stack.enter_context(redis_server())
        settings = {**COMMON, "DATABASE_URL": database_url, "TABWRIGHT_REDIS_URL": redis_url,
                    "TABWRIGHT_EMBEDDED_WORKER": "0"}  # fmt: skip
        base_url, _ = stack.enter_context(daphne(var / "web", USER, settings))
        for n in range(workers):
            stack.enter_context(runworker(var / f"worker-{n}", settings))
        yield Dashboard(base_url)


async def measure(dash: Dashboard, rounds_runs: int, commands: int) -> tuple[list, list]:  # type: ignore[type-arg]
    return await event_latencies(dash, rounds_runs), await command_trips(dash, commands)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="runs queued for runs per minute")
    parser.add_argument("--commands", type=int, default=30, help="command round trips")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tabwright-scale-") as tmp:
        var = Path(tmp)
        with embedded(var / "embedded") as dash:
            events, commands = asyncio.run(measure(dash, 3, args.commands))
        with distributed(var / "one", 1) as dash:
            per_min_1 = runs_per_minute(dash, args.runs)
        with distributed(var / "two", 2) as dash:
            redis_events, redis_commands = asyncio.run(measure(dash, 3, args.commands))
            per_min_2 = runs_per_minute(dash, args.runs)
    print(f"embedded: events {len(events)}, commands {len(commands)}; redis: events "
          f"{len(redis_events)}, commands {len(redis_commands)}")  # fmt: skip
    print(
        "RESULT scale "
        f"event_ms_p50={median(events):.1f} event_ms_p95={p95(events):.1f} "
        f"redis_event_ms_p50={median(redis_events):.1f} redis_event_ms_p95={p95(redis_events):.1f} "
        f"command_ms_p50={median(commands):.1f} command_ms_p95={p95(commands):.1f} "
        f"redis_command_ms_p50={median(redis_commands):.1f} "
        f"redis_command_ms_p95={p95(redis_commands):.1f} "
        f"runs_per_min_1={per_min_1:.1f} runs_per_min_2={per_min_2:.1f} "
        f"two_over_one={per_min_2 / per_min_1:.2f}"
    )


if __name__ == "__main__":
    main()
