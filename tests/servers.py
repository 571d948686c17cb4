"""Real Redis and PostgreSQL for tests: Debian's servers (installed by ``make test`` like
Chromium), each on a free loopback port with its data in a temporary folder, stopped and
removed when the test is done.  Nothing is mocked: the dashboard talks to them as it would
in production."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from automation.browser.config import default_chromium
from tests.net import free_port

__all__ = ["POSTGRES_BIN", "REDIS_SERVER", "Cluster", "RedisServer", "debian_postgres",
           "postgres_server", "psql", "redis_server", "restartable_redis",
           "shared_settings"]  # fmt: skip

REDIS_SERVER = os.environ.get("TABWRIGHT_REDIS_SERVER", "/usr/bin/redis-server")


def _postgres_bin() -> Path:
    """Debian's newest installed PostgreSQL (15 on Debian 12), unless set."""
    if os.environ.get("TABWRIGHT_POSTGRES_BIN"):
        return Path(os.environ["TABWRIGHT_POSTGRES_BIN"])
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"),
                   key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)  # fmt: skip
    return found[-1].parent if found else Path("/usr/lib/postgresql/15/bin")


POSTGRES_BIN = _postgres_bin()
# Bounds a hang only: the waits end when the server listens (or exits); a busy machine
# (tests beside other test runs) starts a cluster in a minute or more.
START_TIMEOUT_S = 180
_PORT_TRIES = 5  # a port free when asked may be taken before the server binds it


def _wait_for_log(log: Path, ready: str, proc: subprocess.Popen[bytes]) -> None:
    """Until ``log`` holds ``ready``; RuntimeError with the log's end when the server
    exited first."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if ready in _tail(log, 1_000_000):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited ({proc.returncode}):\n{_tail(log)}")
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"the server was not ready in {START_TIMEOUT_S} s:\n{_tail(log)}")


def _tail(log: Path, most: int = 2000) -> str:
    try:
        return log.read_text(errors="replace")[-most:]
    except FileNotFoundError:
        return "(no log)"


class RedisServer:
    """A Redis on 127.0.0.1 that keeps nothing on disk, on a port of its own: a test may
    stop it and start it again on the same port (an operator restarting it), which loses
    all it held (channels, groups), as a restart of a Redis that saves nothing does."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="tabwright-redis-"))
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.log = self.folder / "redis.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._started = False  # once: its port is its own

    def start(self) -> None:
        """Started, and ready: its log says so (a port that answers may be another
        server's).  A first start whose port was taken between asking and binding
        (another test process asked too) starts again on another port; a start again
        keeps its port."""
        for tries_left in reversed(range(_PORT_TRIES)):
            self.log.unlink(missing_ok=True)
            args = [REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(self.port), "--save",
                    "", "--appendonly", "no", "--dir", str(self.folder),
                    "--logfile", str(self.log)]  # fmt: skip
            proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
            try:
                _wait_for_log(self.log, "Ready to accept connections", proc)
            except RuntimeError as exc:
                if self._started or not tries_left or "Address already in use" not in str(exc):
                    raise
                self.port = free_port()
                self.url = f"redis://127.0.0.1:{self.port}/0"
                continue
            self._proc, self._started = proc, True
            return

    @property
    def running(self) -> bool:
        return self._proc is not None

    def stop(self) -> None:
        """Stopped, and waited for: nothing listens on its port any more."""
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None


@contextmanager
def restartable_redis() -> Iterator[RedisServer]:
    """A :class:`RedisServer`, started; stopped and removed when the test is done."""
    server = RedisServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)


@contextmanager
def redis_server() -> Iterator[str]:
    """A Redis on 127.0.0.1 that keeps nothing on disk; yields its URL."""
    with restartable_redis() as server:
        yield server.url


@dataclass(frozen=True)
class Cluster:
    """A PostgreSQL cluster of a test's own: its socket folder and loopback port."""

    folder: Path
    port: int


@contextmanager
def _cluster(*initdb: str, copy_of: Path | None = None, keep: bool = False) -> Iterator[Cluster]:
    """A cluster made with ``initdb``'s options (its superuser, its authentication), or a
    copy of the stopped cluster whose data folder is ``copy_of``, serving on 127.0.0.1 and
    on a socket in its folder, stopped and removed at the end (``keep``: stopped only; its
    data is in the folder's ``data``).

    PostgreSQL refuses to run as root, so as root the cluster belongs to Debian's
    ``postgres`` user."""
    folder = Path(tempfile.mkdtemp(prefix="tabwright-pg-"))
    as_user: list[str] = []
    if os.getuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, log = folder / "data", folder / "postgres.log"

    def run(*args: str) -> None:
        done = subprocess.run(
            [*as_user, *args], capture_output=True, text=True, timeout=START_TIMEOUT_S
        )
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed:\n{done.stdout}\n{done.stderr}\n{_tail(log)}")

    if copy_of is not None:  # (as root: its owner kept)
        subprocess.run(["cp", "-a", str(copy_of), str(data)], check=True, timeout=START_TIMEOUT_S)
    else:
        run(str(POSTGRES_BIN / "initdb"), "-D", str(data), *initdb, "-E", "UTF8",
            "--locale=C.UTF-8")  # fmt: skip
    for tries_left in reversed(range(_PORT_TRIES)):
        # A port free when asked may be taken before the server binds it (another test
        # process asked too): then it starts again on another.
        port = free_port()
        log.unlink(missing_ok=True)
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        try:
            run(str(POSTGRES_BIN / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log),
                "-w", "-t", str(START_TIMEOUT_S), "start")  # fmt: skip
            break
        except RuntimeError as exc:
            if not tries_left or "Address already in use" not in str(exc):
                raise
    try:
        yield Cluster(folder, port)
    finally:
        run(str(POSTGRES_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def postgres_server(copy_of: Path | None = None, *, keep: bool = False) -> Iterator[str]:
    """A PostgreSQL cluster of its own on 127.0.0.1 with a database ``tabwright`` owned by
    the user ``tabwright`` (trusted on loopback: a throwaway cluster); yields its URL.
    ``copy_of``: the data folder of such a cluster, stopped, whose copy it runs (its
    database as that one left it); ``keep``: its data folder is kept when it stops, at
    ``postgres_data(url)`` (the caller removes it)."""
    made = "-U", "tabwright", "--auth=trust"
    with _cluster(*made, copy_of=copy_of, keep=keep) as cluster:
        if copy_of is None:
            done = subprocess.run(
                [str(POSTGRES_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(cluster.port),
                 "-U", "tabwright", "tabwright"],
                capture_output=True, text=True, timeout=START_TIMEOUT_S,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
        url = f"postgres://tabwright@127.0.0.1:{cluster.port}/tabwright"
        _folders[url] = cluster.folder
        try:
            yield url
        finally:
            _forget(url)
            _folders.pop(url, None)


_folders: dict[str, Path] = {}  # each running postgres_server()'s folder, by its URL


def postgres_data(database_url: str) -> Path:
    """The data folder of the running postgres_server() at ``database_url``."""
    return _folders[database_url] / "data"


@contextmanager
def debian_postgres() -> Iterator[Cluster]:
    """A cluster that lets people in as Debian's does: its superuser ``postgres`` over the
    local socket (Debian: by peer; here, trusted) and anyone over TCP only with a password
    (``scram-sha-256``, Debian's pg_hba.conf for 127.0.0.1)."""
    with _cluster("-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256") as c:
        yield c


# One connection per database for psql(): the tests poll a table every 0.1-0.2 s while
# they wait, and a psql process per poll (with the server backend it forks) cost ~40 ms
# of CPU each, a few CPU-seconds a minute of waiting; a query on an open connection, nothing.
_connections: dict[str, psycopg.Connection[Any]] = {}
_connections_lock = threading.Lock()


def _connection(database_url: str) -> psycopg.Connection[Any]:
    with _connections_lock:
        conn = _connections.get(database_url)
        if conn is None or conn.broken or conn.closed:
            conn = psycopg.connect(database_url, autocommit=True, connect_timeout=30)
            _connections[database_url] = conn
        return conn


def _forget(database_url: str) -> None:
    """Close psql()'s connection to a database (before its server stops)."""
    with _connections_lock:
        conn = _connections.pop(database_url, None)
    if conn is not None:
        conn.close()


def psql(database_url: str, query: str) -> str:
    """``query``'s rows as psql prints them unaligned (``a|b`` per row, each value in
    PostgreSQL's text form, NULL empty; a statement without rows: empty), each query
    committed on its own as psql's."""
    with _connection(database_url).cursor() as cursor:
        cursor.execute(query)  # type: ignore[arg-type]  (the tests' own queries)
        result = cursor.pgresult
        if result is None or cursor.description is None:
            return ""
        rows = (
            "|".join((result.get_value(row, col) or b"").decode() for col in range(result.nfields))
            for row in range(result.ntuples)
        )
        return "\n".join(rows).strip()


def shared_settings(database_url: str, redis_url: str, media: Path, **more: str) -> dict[str, str]:
    """What every process of one dashboard on these servers is started with (one media
    folder for the step screenshots, as docs/deploying.md "Scaling out" says; the tests' rule
    planner, loopback pages allowed, leases of 10 s: a lost process shows within a test's
    wait, and a process starved a few seconds on a busy machine is not taken for lost);
    ``more``: TABWRIGHT_* settings on top."""
    return {
        "DATABASE_URL": database_url,
        "TABWRIGHT_REDIS_URL": redis_url,
        "TABWRIGHT_MEDIA_DIR": str(media),
        "TABWRIGHT_SECRET_KEY": "a-key-every-process-shares-" + "x" * 24,
        "TABWRIGHT_DEBUG": "1",
        "TABWRIGHT_BLOCK_PRIVATE_ADDRESSES": "0",
        "TABWRIGHT_PLANNER": "rules",
        "TABWRIGHT_ACTION_TIMEOUT_MS": "5000",
        "TABWRIGHT_CHROMIUM_PATH": os.environ.get("TABWRIGHT_CHROMIUM_PATH") or default_chromium(),
        "TABWRIGHT_SESSION_IDLE_S": "0",
        "TABWRIGHT_LEASE_S": "10",
        **{f"TABWRIGHT_{name}": value for name, value in more.items()},
    }
