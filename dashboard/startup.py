"""The server's start: it closes the runs a dead server left running or paused.

Runs live inside the server process (dashboard/runs/runner.py), so a run shown as live whose
process is gone will never move again.  Which process is alive is told, not guessed:

- With SQLite (one machine): each server holds an exclusive ``flock`` on a file beside the
  database for as long as it lives (the kernel drops it when the process dies, however it
  dies).  At start, a server that gets the lock knows no other live server drives runs of
  this database, and marks every running or paused run as failed ("interrupted: ..."); a
  pending one (claimed, not started: nothing of it ran) goes back to the queue.  A server
  that can't get it (another one still serves the same database) touches no run: those
  runs are the other's.
- With a database server (processes on several machines, which no file lock sees): by the
  runs' leases (dashboard/runs/leases.py): only runs whose process stopped renewing are closed.

Called once from dashboard/asgi.py when daphne's reactor starts (not when the module is
imported, so tests and other commands that import the application never close runs), and
by ``manage.py tabwright_init``, which takes the lock only for the moment it needs.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from django.conf import settings
from django.db import connection

from dashboard.runs import services

__all__ = ["close_interrupted_runs", "close_lost_runs", "close_stale_runs", "lock_path",
           "release", "serves_runs"]  # fmt: skip

log = logging.getLogger("tabwright.startup")

_held: dict[Path, int] = {}  # lock file -> the descriptor this process holds it with


def lock_path() -> Path:
    """The lock file of the configured SQLite database: beside it when it is a file, else
    in var/."""
    name = str(connection.settings_dict["NAME"])
    if name and name != ":memory:" and not name.startswith("file:"):
        return Path(f"{name}.server-lock")
    return Path(settings.VAR_DIR) / "server-lock"


def _claim(path: Path) -> bool:
    """Take the lock (without waiting) and keep it; False if another process holds it."""
    if path in _held:
        return True
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    _held[path] = fd
    return True


def release(path: Path | None = None) -> None:
    """Let the lock go (the server keeps it until it exits; tests and commands don't)."""
    fd = _held.pop(path or lock_path(), None)
    if fd is not None:
        os.close(fd)  # closing the only descriptor of the open file drops the flock


def close_interrupted_runs(*, path: Path | None = None, keep: bool = True) -> int | None:
    """Mark the runs a dead server left live as interrupted and return how many; None (and
    nothing touched) while another live server holds the database's lock.  ``keep``: hold
    the lock until this process ends (the server), else let it go at once (a command)."""
    path = path or lock_path()
    if not _claim(path):
        log.warning(
            "another server process holds %s: the runs it drives are left alone "
            "(serve one database from one process)",
            path,
        )
        return None
    try:
        closed = services.runs_mark_interrupted()
    finally:
        if not keep:
            release(path)
    if closed:
        log.info("closed %d run(s) interrupted by the last shutdown", closed)
    return closed


def close_lost_runs() -> int:
    """With a database server (shared by processes on several machines, which no file lock
    sees), runs are closed by their leases instead (dashboard.runs.leases): those whose lease
    ran out, and live ones nobody ever held (their process died before its first lease, or
    ran with leases off) once they are older than a lease.  Returns how many."""
    lost = len(services.runs_sweep_lost())
    lost += services.runs_mark_unheld(older_than_s=max(60, int(settings.TABWRIGHT["LEASE_S"])))
    if lost:
        log.info("closed %d run(s) whose server process is gone", lost)
    return lost


def close_stale_runs(*, keep: bool = True) -> int | None:
    """Close the runs a dead server left live: by the file lock with SQLite, by the leases
    with a database server.  None: another live server holds the SQLite lock."""
    if connection.vendor == "sqlite":
        return close_interrupted_runs(keep=keep)
    return close_lost_runs()


def serves_runs() -> bool:
    """Whether this server may drive runs: with SQLite, only the one holding the lock (a
    second server on the same file only serves pages); with a database server, any."""
    if connection.vendor != "sqlite":
        return True
    if lock_path() in _held:
        return True
    log.warning("another server drives the runs of this database: this one only serves pages")
    return False


def on_server_start() -> None:
    """Run when daphne's reactor starts, before it serves anything (no event loop runs yet,
    so the database is used synchronously).  A failure is logged, never fatal: the
    dashboard is still worth serving."""
    try:
        close_stale_runs()
    except Exception:
        log.exception("could not close the runs interrupted by the last shutdown")
