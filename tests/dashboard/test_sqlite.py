"""The dashboard's SQLite file: each commit is cheap (a write-ahead log, synced at its
checkpoints), and what one connection commits another reads at once."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from django.db.backends.sqlite3.base import DatabaseWrapper

from dashboard.settings import SQLITE_OPTIONS


def _connect(path: Path, blocker: Any) -> sqlite3.Connection:
    """A connection as the dashboard's server opens it on ``path``."""
    wrapper = DatabaseWrapper({
        "ENGINE": "django.db.backends.sqlite3", "NAME": str(path), "OPTIONS": SQLITE_OPTIONS,
        "TIME_ZONE": None, "CONN_MAX_AGE": 0, "CONN_HEALTH_CHECKS": False,
        "AUTOCOMMIT": True, "ATOMIC_REQUESTS": False,
    })  # fmt: skip
    with blocker.unblock():  # a file of the test's own, not the test database
        wrapper.ensure_connection()  # as Django opens it: connection_created is sent
    return wrapper.connection


def test_a_commit_goes_to_the_write_ahead_log_and_syncs_at_its_checkpoints(
    tmp_path: Path, django_db_blocker: Any
) -> None:
    db = tmp_path / "db.sqlite3"
    with (
        closing(_connect(db, django_db_blocker)) as writer,
        closing(_connect(db, django_db_blocker)) as reader,
    ):
        assert writer.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert writer.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
        writer.execute("CREATE TABLE event (seq INTEGER)")
        writer.execute("INSERT INTO event VALUES (1)")
        assert (tmp_path / "db.sqlite3-wal").exists()
        assert reader.execute("SELECT seq FROM event").fetchall() == [(1,)]
