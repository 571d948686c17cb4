"""Runs in worker processes of their own (``manage.py runworker tabwright.runs``) on a real
PostgreSQL and Redis, beside a web process that drives none: ten runs queued at once,
two workers of capacity 2, every run completes exactly once and both workers work; a
SIGTERM to a worker lets its run go on for the grace period, then ends it interrupted
with its steps kept, and the worker exits, while the other goes on taking runs; a worker
killed mid-batch: the rows it held are reported lost, the rest pass on the other, and no
row's replay starts twice; a schedule due while two workers poll fires once (and once more
on Run now, asked of the web process), and a firing that fails is told to its webhook
once, however many workers send the outbox."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.daphne import api_token, daphne, log_in, log_tail, migrated_postgres, new_run, runworker
from tests.dashboard.signup import sign_up
from tests.e2e.ui import PASSWORD, USERNAME
from tests.servers import psql, redis_server, shared_settings
from tests.tasks import AMBIGUOUS_TASK, FORM_TASK

pytestmark = [pytest.mark.e2e, pytest.mark.multiprocess]

GRACE_S = 3


class Cluster:
    def __init__(
        self, web: str, database_url: str, workers: list[tuple[Any, Path]], redis_url: str,
        media: Path,
    ) -> None:  # fmt: skip
        self.web, self.database_url, self.workers = web, database_url, workers
        self.redis_url, self.media = redis_url, media

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
    with migrated_postgres() as database_url, redis_server() as redis_url:
        media = tmp_path_factory.mktemp("media")
        settings = shared_settings(
            database_url, redis_url, media,
            WORKER_RUNS="2", WORKER_GRACE_S=str(GRACE_S),
            EMBEDDED_WORKER="0",  # the web process drives nothing
            WEBHOOK_ALLOWED_DOMAINS="127.0.0.1",  # the tests' receiver, a private address
        )  # fmt: skip
        user = (USERNAME, PASSWORD)
        with (
            daphne(tmp_path_factory.mktemp("web"), user, settings) as (web, _),
            runworker(tmp_path_factory.mktemp("worker-1"), settings) as one,
            runworker(tmp_path_factory.mktemp("worker-2"), settings) as two,
        ):
            yield Cluster(web, database_url, [one, two], redis_url, media)


def wait_until(cluster: Cluster, what: str, done: Any, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"{what}; the workers said:\n{cluster.logs()}"
        time.sleep(0.2)


# Queued at once on 4 slots: more than two rounds of claims, each worker full at times.
RUNS = 10


def test_ten_queued_runs_on_two_workers_of_two_each_run_exactly_once(cluster: Cluster) -> None:
    with closing(log_in(cluster.web, (USERNAME, PASSWORD))) as client:
        ids = [new_run(client, FORM_TASK, f"{cluster.web}/demo/form.html") for _ in range(RUNS)]
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
        return cluster.sql(
            f"select count(*) from dashboard_run where id in ({listed}) and {ended}"
        ) == str(RUNS)

    wait_until(cluster, "the runs ended", all_ended, timeout_s=240)
    statuses = cluster.sql(
        f"select status, count(*) from dashboard_run where id in ({listed}) group by status"
    )
    assert statuses == f"succeeded|{RUNS}", statuses
    starts = cluster.sql(
        "select run_id, count(*) from dashboard_runevent "
        f"where type = 'run.started' and run_id in ({listed}) group by run_id"
    ).splitlines()
    assert sorted(int(line.split("|")[0]) for line in starts) == sorted(ids)
    assert {line.split("|")[1] for line in starts} == {"1"}  # each exactly once
    pids = {cluster.holder_pid(run_id) for run_id in ids}
    assert pids == {proc.pid for proc, _ in cluster.workers}  # both worked
    assert peak and max(peak.values()) <= 2, peak  # never past a worker's capacity


def _due_schedule(cluster: Cluster, **fields: Any) -> tuple[httpx.Client, int, int]:
    """A scenario of the demo form scheduled over the API (with ``fields``) and due now:
    both workers find it at their next poll (every 5 s).  The API client, the scenario,
    the schedule."""
    with closing(log_in(cluster.web, (USERNAME, PASSWORD))) as page:
        token = api_token(page, "schedule script")
    api = httpx.Client(base_url=cluster.web, timeout=20,
                       headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    scenario = api.post("/api/scenarios", json=sign_up(cluster.web)).json()["id"]
    made = api.post(f"/api/scenarios/{scenario}/schedules", json={
        "cron": "0 7 * * 1-5", "timezone": "Europe/Paris",
        "params": {"name": "Ada", "greet": "Ada"}, **fields,
    })  # fmt: skip
    assert made.status_code == 201, made.text
    schedule = made.json()["id"]
    cluster.sql(f"update dashboard_schedule set next_fire_at = now() where id = {schedule}")
    return api, scenario, schedule


def test_a_due_schedule_fires_once_however_many_workers_poll(cluster: Cluster) -> None:
    api, scenario, schedule = _due_schedule(cluster)

    def fired() -> bool:
        firings = api.get(f"/api/schedules/{schedule}").json()["firings"]
        return bool(firings) and firings[0]["outcome"] == "ok"

    # By now each worker has polled more than once while the time was due.
    wait_until(cluster, "the schedule fired and its replay passed", fired, timeout_s=60)
    firings = api.get(f"/api/schedules/{schedule}").json()["firings"]
    assert len(firings) == 1, firings
    replays = cluster.sql(
        f"select count(*) from dashboard_run where kind = 'replay' and scenario_id = {scenario}"
    )
    assert replays == "1"
    assert (
        cluster.sql(f"select next_fire_at > now() from dashboard_schedule where id = {schedule}")
        == "t"
    )
    # Run now, asked of the web process (which drives nothing): a worker fires it, once.
    assert api.post(f"/api/schedules/{schedule}/fire").status_code == 202

    def fired_again() -> bool:
        firings = api.get(f"/api/schedules/{schedule}").json()["firings"]
        return [f["outcome"] for f in firings] == ["ok", "ok"]

    wait_until(cluster, "run now fired and its replay passed", fired_again, timeout_s=60)
    assert (
        cluster.sql(
            f"select count(*) from dashboard_run where kind = 'replay' and scenario_id = {scenario}"
        )
        == "2"
    )


class _Hook(BaseHTTPRequestHandler):
    got: list[bytes] = []

    def do_POST(self) -> None:
        _Hook.got.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_failed_firing_is_told_once_however_many_workers_send(cluster: Cluster) -> None:
    hook = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    try:
        # Ada is greeted as Ada, never as "Someone else": the replay fails.
        api, _, schedule = _due_schedule(
            cluster, params={"name": "Ada", "greet": "Someone else"},
            webhook_url=f"http://127.0.0.1:{hook.server_address[1]}/hook",
        )  # fmt: skip

        def sent() -> bool:
            firings = api.get(f"/api/schedules/{schedule}").json()["firings"]
            deliveries = firings[0]["deliveries"] if firings else []
            return [d["status"] for d in deliveries] == ["sent"]

        wait_until(cluster, "the failed firing's alert was sent", sent, timeout_s=90)
        assert len(_Hook.got) == 1, _Hook.got
        payload = json.loads(_Hook.got[0])
        assert payload["event"] == "firing.failed"
        # Its link is the dashboard's origin as the schedule's maker reached it.
        assert payload["run"]["url"] == f"{cluster.web}/runs/{payload['run']['id']}/"
    finally:
        hook.shutdown()
        hook.server_close()


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


def test_a_worker_killed_mid_batch_its_rows_are_reported_lost_and_none_runs_twice(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Another worker beside whichever is still up: the batch's rows spread over them.
    settings = shared_settings(cluster.database_url, cluster.redis_url, cluster.media,
                               WORKER_RUNS="2", EMBEDDED_WORKER="0")  # fmt: skip
    with runworker(tmp_path_factory.mktemp("worker-3"), settings):
        with closing(log_in(cluster.web, (USERNAME, PASSWORD))) as page:
            token = api_token(page, "batch script")
        api = httpx.Client(base_url=cluster.web, timeout=20,
                           headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        scenario = api.post("/api/scenarios", json=sign_up(cluster.web)).json()["id"]
        # Rows 1-2 wait for a person (list.html has no Name field), rows 3-6 pass.
        rows = [{"name": f"P{n}", "greet": f"P{n}", "page": "list.html"} for n in range(2)]
        rows += [{"name": f"Q{n}", "greet": f"Q{n}"} for n in range(4)]
        made = api.post(f"/api/scenarios/{scenario}/batches",
                        json={"rows": rows, "concurrency": 4})  # fmt: skip
        assert made.status_code == 201, made.text
        batch = made.json()["id"]

        def rows_now() -> list[dict[str, Any]]:
            return list(api.get(f"/api/batches/{batch}").json()["rows"])

        def statuses() -> list[str]:
            return [row["status"] for row in rows_now()]

        waiting = ["needs_person"] * 2 + ["passed"] * 4
        wait_until(cluster, "two rows waiting, four passed", lambda: statuses() == waiting)
        victim = cluster.holder_pid(rows_now()[0]["run_id"])
        on_victim = [row["index"] for row in rows_now()[:2]
                     if cluster.holder_pid(row["run_id"]) == victim]  # fmt: skip
        os.kill(victim, signal.SIGKILL)

        # The rows it held are reported lost within the lease, not left waiting for ever.
        def lost_reported() -> bool:
            return [r["index"] for r in rows_now() if r["status"] == "failed"] == on_victim

        wait_until(cluster, "the killed worker's rows reported", lost_reported, timeout_s=60)
        for row in rows_now():
            assert row["attempts"] == 1, row
            if row["index"] in on_victim:
                assert row["reason"].startswith("lost"), row
        ids = ",".join(str(row["run_id"]) for row in rows_now())
        starts = cluster.sql(
            "select count(*), count(distinct run_id) from dashboard_runevent "
            f"where type = 'run.started' and run_id in ({ids})"
        )
        assert starts == "6|6"  # every row's replay started, and only once

        # Retried, the lost rows run again on a worker that is up.
        assert api.post(f"/api/batches/{batch}/retry").status_code == 200
        wait_until(cluster, "the retried rows waiting again",
                   lambda: statuses() == waiting)  # fmt: skip
        for row in rows_now():
            if row["index"] in on_victim:
                assert row["attempts"] == 2 and cluster.holder_pid(row["run_id"]) != victim
        assert api.post(f"/api/batches/{batch}/stop").json()["status"] == "stopped"
