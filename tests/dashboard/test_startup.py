"""Runs a dead server left running or paused are closed when a server starts (those it
had claimed but not started go back to the queue), never those a live server holds (its
lock on the database)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from dashboard import startup
from dashboard.models import Run
from dashboard.runs.runner import INTERRUPTED
from dashboard.runs.services import REQUEUED
from tests.daphne import ROOT, daphne, log_in, log_tail, new_run, sql
from tests.tasks import AMBIGUOUS_TASK

LIVE = ("pending", "running", "paused")
STARTED = ("running", "paused")


def make_runs(owner: Any) -> dict[str, int]:
    ids = {}
    for status in (*LIVE, "succeeded", "queued"):
        run = Run.objects.create(owner=owner, task=status, start_url="", status=status)
        ids[status] = run.pk
    # A conversation waiting for its next message, its tab open in the server that died.
    Run.objects.filter(pk=ids["succeeded"]).update(session=Run.Session.OPEN)
    return ids


def statuses() -> dict[str, tuple[str, str]]:
    return {r.task: (r.status, r.status_reason) for r in Run.objects.all()}


def hold_lock(path: Path) -> subprocess.Popen[str]:
    """Another live server: a process that holds the lock until it is killed."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         f"fd = os.open({str(path)!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('locked', flush=True)\n"
         "time.sleep(300)"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
    return holder


@pytest.mark.django_db
def test_a_starting_server_closes_the_runs_left_live(owner: Any, tmp_path: Path) -> None:
    make_runs(owner)
    # An MCP session's claimed run: its client went with the server, nobody would call it.
    Run.objects.create(owner=owner, task="mcp", kind=Run.Kind.MCP, status="pending")
    lock = tmp_path / "db.sqlite3.server-lock"
    try:
        assert startup.close_interrupted_runs(path=lock) == 4
        after = statuses()
        for status in STARTED:
            assert after[status][0] == "failed"
            assert after[status][1].startswith("interrupted: ")
        assert after["pending"] == ("queued", REQUEUED)  # nothing of it ran: a worker will
        requeued = Run.objects.get(task="pending").events.get(type="run.requeued")
        assert requeued.data["reason"] == REQUEUED  # its page says so
        assert after["succeeded"] == ("succeeded", "")
        assert after["queued"] == ("queued", "")  # no process had it: a worker will
        assert statuses()["mcp"][0] == "failed"
        assert Run.objects.filter(finished_at__isnull=False).count() == 3
        # Its tab is gone with the server: a message restores the page by replay.
        idle = Run.objects.get(task="succeeded")
        assert (idle.session, idle.session_reason) == ("closed", "the server stopped")
        # The server keeps the lock: a second server on the same database stays off them.
        assert lock.stat().st_mode & 0o777 == 0o600
        assert subprocess.run(
            [sys.executable, "-c", "import fcntl, os\n"
             f"fcntl.flock(os.open({str(lock)!r}, os.O_RDWR), fcntl.LOCK_EX | fcntl.LOCK_NB)"],
            capture_output=True, text=True,
        ).returncode != 0  # fmt: skip
    finally:
        startup.release(lock)


@pytest.mark.django_db
def test_the_runs_of_a_live_server_are_left_alone(owner: Any, tmp_path: Path) -> None:
    make_runs(owner)
    before = statuses()
    lock = tmp_path / "db.sqlite3.server-lock"
    holder = hold_lock(lock)
    try:
        assert startup.close_interrupted_runs(path=lock) is None
        assert statuses() == before
        assert Run.objects.get(task="succeeded").session == "open"  # the other server's tab
    finally:
        holder.kill()
        holder.wait()
    # That server died (the kernel dropped its lock): the next start closes its runs.
    assert startup.close_interrupted_runs(path=lock, keep=False) == 3
    assert {s for s, _ in statuses().values()} == {"failed", "succeeded", "queued"}


def manage_shell(env: dict[str, str], code: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def runs_in(db: Path) -> dict[str, tuple[str, str]]:
    """Each run's task -> (status, reason), read from a server's SQLite file as it runs."""
    rows = sql(db, "SELECT task, status, status_reason FROM dashboard_run")
    return {task: (status, reason) for task, status, reason in rows}


def test_daphne_closes_them_at_start_unless_a_live_daphne_holds_them(tmp_path: Path) -> None:
    var = tmp_path / "var"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "TABWRIGHT_VAR_DIR": str(var),
        "TABWRIGHT_DB_PATH": str(var / "db.sqlite3"),
        "TABWRIGHT_MEDIA_DIR": str(var / "media"),
    }
    db = var / "db.sqlite3"
    with daphne(var, ("first", "pw-first-1"), {}) as (_url, _log):
        # Runs this live server drives (as far as the database can tell).
        manage_shell(env, (
            "from django.contrib.auth import get_user_model\nfrom dashboard.models import Run\n"
            "owner = get_user_model().objects.get(username='first')\n"
            "for status in ('running', 'paused', 'succeeded'):\n"
            "    Run.objects.create(owner=owner, task=status, start_url='', status=status)"
        ))  # fmt: skip
        with daphne(var, ("second", "pw-second-2"), {}) as (url, log):
            # The second server answers (so it has started) and left the first's runs alone.
            urllib.request.urlopen(f"{url}/accounts/login/", timeout=60).read()
            runs = runs_in(db)
            assert runs["running"] == ("running", "") and runs["paused"] == ("paused", "")
            assert "another server process holds" in log.read_text()
    with daphne(var, ("third", "pw-third-3"), {}) as (url, _log):
        urllib.request.urlopen(f"{url}/accounts/login/", timeout=60).read()
        runs = runs_in(db)
    assert runs["running"][0] == runs["paused"][0] == "failed"
    assert runs["running"][1].startswith("interrupted: ")
    assert runs["succeeded"] == ("succeeded", "")


def test_a_stopped_daphne_drains_its_worker_then_ends_its_runs_interrupted(
    tmp_path: Path,
) -> None:
    var = tmp_path / "var"
    settings = {"TABWRIGHT_DEBUG": "1", "TABWRIGHT_BLOCK_PRIVATE_ADDRESSES": "0",
                "TABWRIGHT_WORKER_GRACE_S": "2"}  # fmt: skip
    user = ("olive", "pw-olive-1234")
    db = var / "db.sqlite3"
    with daphne(var, user, settings) as (url, log), closing(log_in(url, user)) as client:
        new_run(client, AMBIGUOUS_TASK, f"{url}/demo/list.html")
        deadline = time.monotonic() + 60
        while [status for status, _ in runs_in(db).values()] != ["paused"]:  # which Delete?
            assert time.monotonic() < deadline, log_tail(log)
            time.sleep(0.2)
    # The with-block sent SIGTERM and waited: the drain ended the run, not a later start.
    assert list(runs_in(db).values()) == [("failed", INTERRUPTED)]
    assert "the runs worker stops: 1 run at work gets 2.0 s to end" in log.read_text()


def test_a_stopped_web_process_that_drives_no_runs_says_nothing_of_runs(tmp_path: Path) -> None:
    settings = {"TABWRIGHT_EMBEDDED_WORKER": "0"}  # pages only: runworker processes drive
    with daphne(tmp_path / "var", ("wanda", "pw-wanda-1234"), settings) as (url, log):
        assert httpx.get(f"{url}/accounts/login/").status_code == 200
    # The with-block sent SIGTERM and waited: daphne stopped, saying only what is true.
    said = log.read_text()
    assert "Listening on TCP address" in said
    assert "runs worker" not in said and " s to end" not in said, said
