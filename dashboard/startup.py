"""The server's start: it owns the live runs of its database, and closes those a dead server
left running or paused.

Runs live inside the server process (dashboard/runner.py), so a run shown as live whose
process is gone will never move again.  Which process is alive is told by a lock, not by a
guess: each server holds an exclusive ``flock`` on a file beside the database for as long as
it lives (the kernel drops it when the process dies, however it dies).  At start, a server
that gets the lock knows no other live server drives runs of this database, and marks every
pending, running or paused run as failed ("interrupted: ...").  A server that can't get it
(another one still serves the same database) touches no run: those runs are the other's.

Called once from dashboard/asgi.py when daphne's reactor starts (not when the module is
imported, so tests and other commands that import the application never close runs), and
by ``manage.py tabwright_init``, which takes the lock only for the moment it needs.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import tempfile
from pathlib import Path

from django.conf import settings
from django.db import connection

from dashboard import services

__all__ = ["close_interrupted_runs", "lock_path", "release"]

log = logging.getLogger("tabwright.startup")

_held: dict[Path, int] = {}  # lock file -> the descriptor this process holds it with


def lock_path() -> Path:
    """The lock file of the configured database: beside it when it is a file, in the temp
    folder for a database server, else in var/."""
    name = str(connection.settings_dict["NAME"])
    if connection.vendor != "sqlite":
        # A database server: one lock per database it names, shared by every server process
        # of this machine whatever its var/ (other machines are not seen: README).
        where = connection.settings_dict
        key = f"{where.get('HOST') or 'local'}-{where.get('PORT') or 'default'}-{name}"
        safe = re.sub(r"[^A-Za-z0-9.-]+", "_", key)
        return Path(tempfile.gettempdir()) / f"tabwright-server-lock-{safe}"
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


def on_server_start() -> None:
    """Run when daphne's reactor starts, before it serves anything (no event loop runs yet,
    so the database is used synchronously).  A failure is logged, never fatal: the
    dashboard is still worth serving."""
    try:
        close_interrupted_runs()
    except Exception:
        log.exception("could not close the runs interrupted by the last shutdown")
