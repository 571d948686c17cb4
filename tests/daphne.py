"""The dashboard as it runs for real: a migrated database in a fresh folder, a user, and
daphne on a free loopback port (for the end-to-end tests and the benchmarks)."""

from __future__ import annotations

import atexit
import fcntl
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
from django.contrib.auth.hashers import MD5PasswordHasher

from tests.net import free_port
from tests.servers import postgres_data, postgres_server

__all__ = ["ROOT", "api_token", "daphne", "log_in", "log_tail", "migrated_postgres", "new_run",
           "runworker", "sql"]  # fmt: skip

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
# How long a manage.py command or a daphne's start may take before the test says so: the
# wait ends as soon as it is done (or the process exits); this only bounds a hang.  A
# Python process importing Django, Channels and Playwright takes ~2 s on a quiet machine
# and a minute or more on a busy one (tests beside other test runs).
START_TIMEOUT_S = 180
# The processes' settings: production's, with a fast password hash.
SETTINGS = "tests.server_settings"


def log_tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace")[-3000:]
    except FileNotFoundError:
        return "(no log)"


def sql(db: Path, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """``query`` on a server's SQLite file as it runs, committed: its rows (a Python process
    that imports Django to ask costs seconds of CPU; this, nothing)."""
    with closing(sqlite3.connect(db, timeout=30)) as conn, conn:
        return conn.execute(query, params).fetchall()


def _manage(env: dict[str, str], *args: str) -> None:
    done = subprocess.run(
        [str(BIN / "python"), "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
    )
    assert done.returncode == 0, f"manage.py {args[0]} failed:\n{done.stdout}\n{done.stderr}"


# A migrated SQLite database, made once per test process: a new server's database is a
# copy of it (a migration costs seconds, a copy nothing).
_migrated: Path | None = None


def _migrations(db: Path) -> set[tuple[str, str]]:
    """The migrations applied to a SQLite database (none where it has no such table)."""
    try:
        return set(sql(db, "SELECT app, name FROM django_migrations"))
    except sqlite3.DatabaseError:
        return set()


def _migrated_copy(env: dict[str, str]) -> bool:
    """Copy the migrated database to the server's, unless the server uses another
    database (DATABASE_URL); True when the server's database is then migrated.  A database
    the server has already (another server of the same folder made it) is kept: migrated
    when it holds the migrations the copy holds."""
    global _migrated
    db = Path(env["TABWRIGHT_DB_PATH"])
    if env.get("DATABASE_URL"):
        return False
    if db.exists():
        return _migrated is not None and _migrations(db) == _migrations(_migrated)
    if _migrated is None:
        folder = Path(tempfile.mkdtemp(prefix="tabwright-migrated-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        made = {**env, "TABWRIGHT_VAR_DIR": str(folder), "TABWRIGHT_DB_PATH": str(folder / "db")}
        _manage(made, "migrate", "--noinput", "-v", "0")
        _migrated = folder / "db"
    db.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_migrated, db)
    return True


# Where the processes of one test run share what each would make alike (tests/conftest.py
# names a folder for the run), else this process's own folder.
def _shared() -> Path:
    named = os.environ.get("TABWRIGHT_TESTS_SHARED")
    if named:
        return Path(named)
    folder = Path(tempfile.mkdtemp(prefix="tabwright-shared-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["TABWRIGHT_TESTS_SHARED"] = str(folder)
    return folder


_postgres_template: Path | None = None
_migrated_postgres: set[str] = set()  # the URLs of migrated_postgres()'s running servers


def _migrated_postgres_data() -> Path:
    """The data folder of a stopped PostgreSQL cluster (tests.servers.postgres_server's)
    whose database is migrated: made once per test run, by the first of its processes to
    ask (the others wait for it)."""
    global _postgres_template
    if _postgres_template is None:
        shared = _shared()
        with (shared / "postgres-template.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            template = shared / "postgres-template"
            if not template.exists():
                with postgres_server(keep=True) as url:
                    env = {**os.environ, "DJANGO_SETTINGS_MODULE": SETTINGS, "DATABASE_URL": url,
                           "TABWRIGHT_VAR_DIR": str(shared / "migrate-var")}  # fmt: skip
                    _manage(env, "migrate", "--noinput", "-v", "0")
                    data = postgres_data(url)
                shutil.move(data, shared / "postgres-template.making")  # (stopped now)
                shutil.rmtree(data.parent, ignore_errors=True)
                (shared / "postgres-template.making").rename(template)
        _postgres_template = template
    return _postgres_template


@contextmanager
def migrated_postgres() -> Iterator[str]:
    """A PostgreSQL of its own (tests.servers.postgres_server) whose database is migrated:
    a copy of a cluster migrated once per test run (a migration on PostgreSQL costs a
    Django process's seconds of CPU, and half a minute on a busy machine; a copy, nothing).
    A daphne() on it makes only its people.  Yields its URL."""
    with postgres_server(copy_of=_migrated_postgres_data()) as url:
        _migrated_postgres.add(url)
        try:
            yield url
        finally:
            _migrated_postgres.discard(url)


def _setup(
    env: dict[str, str], people: list[tuple[str, str]], grants: Sequence[tuple[str, str]]
) -> None:
    """The database's tables, the people and their secret grants."""
    if env.get("DATABASE_URL") in _migrated_postgres:
        with closing(psycopg.connect(env["DATABASE_URL"])) as conn, conn:
            _people(conn, "%s", people, grants)
        return
    if _migrated_copy(env):  # (a Python process that imports Django costs seconds of CPU)
        _people_in_sqlite(Path(env["TABWRIGHT_DB_PATH"]), people, grants)
        return
    _manage(env, "migrate", "--noinput", "-v", "0")
    if not env.get("DATABASE_URL"):
        _people_in_sqlite(Path(env["TABWRIGHT_DB_PATH"]), people, grants)
        return
    with closing(psycopg.connect(env["DATABASE_URL"])) as conn, conn:
        _people(conn, "%s", people, grants)


def _people_in_sqlite(
    db: Path, people: list[tuple[str, str]], grants: Sequence[tuple[str, str]]
) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        _people(conn, "?", people, grants)


def _people(
    conn: Any, mark: str, people: list[tuple[str, str]], grants: Sequence[tuple[str, str]]
) -> None:
    """The rows ``manage.py shell`` would make (people who are not staff, and their secret
    grants), written into a new server's database (SQLite or PostgreSQL: ``mark`` is its
    driver's placeholder) here: a Python process that imports Django costs seconds of CPU,
    these rows nothing.  The passwords are hashed as the servers' settings hash them first
    (tests/server_settings.py)."""
    hasher = MD5PasswordHasher()
    now = datetime.now(UTC).isoformat(" ")
    for name, password in people:
        conn.execute(
            "INSERT INTO auth_user (password, is_superuser, username, first_name,"
            " last_name, email, is_staff, is_active, date_joined)"
            f" VALUES ({mark}, FALSE, {mark}, '', '', '', FALSE, TRUE, {mark})",
            (hasher.encode(password, hasher.salt()), name, now),
        )
    for secret, name in grants:  # (secret name, user name) granted as an admin would
        conn.execute(
            "INSERT INTO dashboard_secretgrant (name, note, created_at)"
            f" VALUES ({mark}, '', {mark}) ON CONFLICT DO NOTHING",
            (secret, now),
        )
        conn.execute(
            "INSERT INTO dashboard_secretgrant_users (secretgrant_id, user_id)"
            " SELECT g.id, u.id FROM dashboard_secretgrant g, auth_user u"
            f" WHERE g.name = {mark} AND u.username = {mark} ON CONFLICT DO NOTHING",
            (secret, name),
        )


@contextmanager
def daphne(
    var: Path,
    user: tuple[str, str],
    settings: dict[str, str],
    *,
    more_users: Sequence[tuple[str, str]] = (),
    grants: Sequence[tuple[str, str]] = (),
    setup: bool = True,
    port: int = 0,
) -> Iterator[tuple[str, Path]]:
    """Yields the base URL and the server's log; ``settings`` are TABWRIGHT_* variables
    (and DATABASE_URL).  ``user`` and each of ``more_users`` is a (name, password) of a
    person (not staff).  ``setup=False``: the database is ready (another server of the
    same database made it): no migration, no users.  ``port``: this one (a server started
    again where pages expect it), else a free one."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "TABWRIGHT_VAR_DIR": str(var),
        "TABWRIGHT_DB_PATH": str(var / "db.sqlite3"),
        "TABWRIGHT_MEDIA_DIR": str(var / "media"),
        "TABWRIGHT_WORKER_GRACE_S": "1",  # a stopped server's live runs: not worth waiting
        **settings,
    }
    if setup:
        _setup(env, [user, *more_users], grants)
    port = port or free_port()
    log = var / "daphne.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port), "dashboard.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert proc.poll() is None, f"daphne exited early:\n{log_tail(log)}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"daphne never answered:\n{log_tail(log)}"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}", log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)  # daphne takes ~2 s to wind down
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@contextmanager
def runworker(
    var: Path, settings: dict[str, str]
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A worker process of the dashboard (``manage.py runworker tabwright.runs``) on the
    database and layer that ``settings`` name; yields the process and its log.  Stopped
    with SIGTERM (and waited for: it drains) at the end, unless it ended already."""
    var.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "TABWRIGHT_VAR_DIR": str(var),
        "TABWRIGHT_MEDIA_DIR": str(var / "media"),
        **settings,
    }
    log = var / "worker.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(BIN / "python"), "manage.py", "runworker", "tabwright.runs"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield proc, log
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


def log_in(base_url: str, user: tuple[str, str]) -> httpx.Client:
    """An HTTP client logged in to the dashboard at ``base_url`` as ``user``."""
    client = httpx.Client(base_url=base_url, timeout=20)
    client.get("/accounts/login/")
    client.post("/accounts/login/", data={
        "username": user[0], "password": user[1],
        "csrfmiddlewaretoken": client.cookies["csrftoken"],
    })  # fmt: skip
    return client


def new_run(client: httpx.Client, task: str, start_url: str = "", planner: str = "rules") -> int:
    """Start a run through the home page's form; its id."""
    made = client.post("/runs/new", data={
        "start_url": start_url, "task": task, "planner": planner,
        "csrfmiddlewaretoken": client.cookies["csrftoken"],  # a new one with the session
    })  # fmt: skip
    found = re.search(r"/runs/(\d+)/", str(made.headers.get("location")))
    assert made.status_code == 302 and found is not None, made.text[:500]
    return int(found.group(1))


def api_token(page: httpx.Client, name: str) -> str:
    """What a person does on the API tokens page (``page``: logged in): the new token, as
    shown that once."""
    made = page.post("/account/tokens", data={
        "name": name, "csrfmiddlewaretoken": page.cookies["csrftoken"],
    })  # fmt: skip
    assert made.status_code == 200, made.text[:500]
    found = re.search(r'<pre id="new-token">(tw_[\w-]+)</pre>', made.text)
    assert found is not None, made.text[:2000]
    return found.group(1)
