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
  one worker and with two;
- a Redis restart: 8 form runs queued on the two workers, Redis stopped once some are at
  work and started again RESTART_S later; how many of those runs ended failed (the goal is
  0: the layer only rings, runs go on without it).

Prints one line::

    RESULT scale event_ms_p50=… event_ms_p95=… redis_event_ms_p50=… redis_event_ms_p95=…
      command_ms_p50=… command_ms_p95=… redis_command_ms_p50=… redis_command_ms_p95=…
      runs_per_min_1=… runs_per_min_2=… two_over_one=… redis_restart_runs_failed=…

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
from tests.servers import RedisServer, postgres_server, restartable_redis
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


RESTART_S = 2.0  # how long Redis is down in the restart measure (an operator's restart)
FINAL = ("succeeded", "failed", "stopped")


class Dashboard:
    def __init__(self, base_url: str, redis: RedisServer | None = None) -> None:
        self.base_url = base_url
        self.client = log_in(base_url, USER)
        self.redis = redis  # the layer's server, when there is one

    def status(self, run_id: int) -> str:
        page = self.client.get(f"/runs/{run_id}/").text
        found = re.search(r'id="status"[^>]*>(\w+)<', page)
        assert found is not None, page[:500]
        return found.group(1)

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
    wait_ended(dash, ids)
    return count / ((time.monotonic() - start) / 60)


def wait_ended(dash: Dashboard, ids: list[int]) -> dict[int, str]:
    """Until every run of ``ids`` has ended; their statuses."""
    start = time.monotonic()
    ended: dict[int, str] = {}
    while len(ended) < len(ids):
        for run_id in set(ids) - set(ended):
            if (status := dash.status(run_id)) in FINAL:
                ended[run_id] = status
        time.sleep(0.25)
        assert time.monotonic() - start < 600, f"{len(ids) - len(ended)} runs never ended"
    return ended


def redis_restart_runs_failed(dash: Dashboard, count: int = 8) -> int:
    """``count`` form runs queued; Redis stopped once two are at work, started again
    RESTART_S later; how many of the runs ended failed."""
    assert dash.redis is not None
    ids = [dash.new_run("form.html", FORM_TASK) for _ in range(count)]
    start = time.monotonic()
    while sum(dash.status(run_id) == "running" for run_id in ids) < 2:
        assert time.monotonic() - start < 300, "no two runs at work"
        time.sleep(0.1)
    dash.redis.stop()
    time.sleep(RESTART_S)
    dash.redis.start()
    ended = wait_ended(dash, ids)
    return sum(status == "failed" for status in ended.values())


@contextmanager
def embedded(var: Path) -> Iterator[Dashboard]:
    with daphne(var / "web", USER, dict(COMMON)) as (base_url, _):
        yield Dashboard(base_url)


@contextmanager
def distributed(var: Path, workers: int) -> Iterator[Dashboard]:
    with ExitStack() as stack:
        database_url = stack.enter_context(postgres_server())
        redis = stack.enter_context(restartable_redis())
        settings = {**COMMON, "DATABASE_URL": database_url, "TABWRIGHT_REDIS_URL": redis.url,
                    "TABWRIGHT_EMBEDDED_WORKER": "0"}  # fmt: skip
        base_url, _ = stack.enter_context(daphne(var / "web", USER, settings))
        for n in range(workers):
            stack.enter_context(runworker(var / f"worker-{n}", settings))
        yield Dashboard(base_url, redis)


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
            restart_failed = redis_restart_runs_failed(dash)
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
        f"two_over_one={per_min_2 / per_min_1:.2f} "
        f"redis_restart_runs_failed={restart_failed}"
    )


if __name__ == "__main__":
    main()
