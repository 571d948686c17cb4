"""Runs in worker processes of their own (``manage.py runworker tabwright.runs``) on a real
PostgreSQL and Redis, beside a web process that drives none: twenty runs queued at once,
two workers of capacity 2, every run completes exactly once and both workers work; a
SIGTERM to a worker lets its run go on for the grace period, then ends it interrupted
with its steps kept, and the worker exits, while the other goes on taking runs."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.daphne import daphne, log_in, log_tail, new_run, runworker
from tests.e2e.ui import PASSWORD, USERNAME
from tests.servers import postgres_server, psql, redis_server, shared_settings
from tests.tasks import AMBIGUOUS_TASK, FORM_TASK

pytestmark = [pytest.mark.e2e, pytest.mark.multiprocess]

GRACE_S = 3


class Cluster:
    def __init__(self, web: str, database_url: str, workers: list[tuple[Any, Path]]) -> None:
        self.web, self.database_url, self.workers = web, database_url, workers

    def sql(self, query: str) -> str:
        return psql(self.database_url, query)

    def status(self, run_id: int) -> str:
        return self.sql(f"select status from dashboard_run where id = {run_id}")

    def holder_pid(self, run_id: int) -> int:
        holder = self.sql(f"select holder from dashboard_run where id = {run_id}")
        found = re.search(r"\.worker(\d+)$", holder)
        assert found, holder
        return int(found.group(1))

    def logs(self) -> str:
        return "\n".join(log_tail(log) for _, log in self.workers)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with postgres_server() as database_url, redis_server() as redis_url:
        settings = shared_settings(
            database_url, redis_url, tmp_path_factory.mktemp("media"),
            WORKER_RUNS="2", WORKER_GRACE_S=str(GRACE_S),
            EMBEDDED_WORKER="0",  # the web process drives nothing
        )  # fmt: skip
        user = (USERNAME, PASSWORD)
        with (
            daphne(tmp_path_factory.mktemp("web"), user, settings) as (web, _),
            runworker(tmp_path_factory.mktemp("worker-1"), settings) as one,
            runworker(tmp_path_factory.mktemp("worker-2"), settings) as two,
        ):
            yield Cluster(web, database_url, [one, two])


def wait_until(cluster: Cluster, what: str, done: Any, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"{what}; the workers said:\n{cluster.logs()}"
        time.sleep(0.2)


def test_twenty_queued_runs_on_two_workers_of_two_each_run_exactly_once(cluster: Cluster) -> None:
    with closing(log_in(cluster.web, (USERNAME, PASSWORD))) as client:
        ids = [new_run(client, FORM_TASK, f"{cluster.web}/demo/form.html") for _ in range(20)]
    listed = ",".join(map(str, ids))
    peak: dict[str, int] = {}

    def all_ended() -> bool:
        for line in cluster.sql(
            "select holder, count(*) from dashboard_run "
            "where status in ('pending', 'running', 'paused') group by holder"
        ).splitlines():
            holder, count = line.rsplit("|", 1)
            peak[holder] = max(peak.get(holder, 0), int(count))
        ended = "status in ('succeeded', 'failed', 'stopped')"
        return (
            cluster.sql(f"select count(*) from dashboard_run where id in ({listed}) and {ended}")
            == "20"
        )

    wait_until(cluster, "twenty runs ended", all_ended, timeout_s=240)
    statuses = cluster.sql(
        f"select status, count(*) from dashboard_run where id in ({listed}) group by status"
    )
    assert statuses == "succeeded|20", statuses
    starts = cluster.sql(
        "select run_id, count(*) from dashboard_runevent "
        f"where type = 'run.started' and run_id in ({listed}) group by run_id"
    ).splitlines()
    assert sorted(int(line.split("|")[0]) for line in starts) == sorted(ids)
    assert {line.split("|")[1] for line in starts} == {"1"}  # each exactly once
    pids = {cluster.holder_pid(run_id) for run_id in ids}
    assert pids == {proc.pid for proc, _ in cluster.workers}  # both worked
    assert peak and max(peak.values()) <= 2, peak  # never past a worker's capacity


def test_sigterm_drains_a_worker_its_run_ends_interrupted_and_the_other_goes_on(
    cluster: Cluster,
) -> None:
    with closing(log_in(cluster.web, (USERNAME, PASSWORD))) as client:
        paused = new_run(client, AMBIGUOUS_TASK, f"{cluster.web}/demo/list.html")
        wait_until(cluster, "the run paused", lambda: cluster.status(paused) == "paused", 60)
        pid = cluster.holder_pid(paused)
        (stopping, _), (other, _) = sorted(cluster.workers, key=lambda w: w[0].pid != pid)
        assert stopping.pid == pid

        stopping.send_signal(signal.SIGTERM)
        time.sleep(GRACE_S / 2)
        assert stopping.poll() is None  # within the grace period, still serving its run
        assert cluster.status(paused) == "paused"
        assert stopping.wait(timeout=GRACE_S + 30) == 0, cluster.logs()
        row = cluster.sql(f"select status, status_reason from dashboard_run where id = {paused}")
        assert row.startswith("failed|interrupted"), row
        steps = cluster.sql(f"select count(*) from dashboard_step where run_id = {paused}")
        assert steps == "1"  # its navigate step, kept

        after = new_run(client, FORM_TASK, f"{cluster.web}/demo/form.html")
        wait_until(cluster, "a run after the drain", lambda: cluster.status(after) == "succeeded")
        assert cluster.holder_pid(after) == other.pid
