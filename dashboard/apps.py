from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.backends.signals import connection_created

from automation.loading import resume_gc


class DashboardConfig(AppConfig):
    name = "dashboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from dashboard import checks  # registers the deploy checks

        checks.know_our_middleware()

        resume_gc()  # paused while a command loads (manage.py)
        connection_created.connect(_no_nul_on_postgresql, dispatch_uid="dashboard.pgtext")
        connection_created.connect(_write_ahead_on_sqlite, dispatch_uid="dashboard.sqlite")


def _no_nul_on_postgresql(sender: Any, connection: Any, **kwargs: Any) -> None:
    if connection.vendor == "postgresql":
        from dashboard.lib import pgtext  # psycopg: only where PostgreSQL is used

        pgtext.register(connection.connection)


def _write_ahead_on_sqlite(sender: Any, connection: Any, **kwargs: Any) -> None:
    """A SQLite file writes ahead to a log beside it and syncs the disk at its checkpoints,
    not at every commit (settings.py says why).  An in-memory database has no file to log
    beside."""
    if connection.vendor == "sqlite" and not connection.is_in_memory_db():
        with connection.connection:
            connection.connection.execute("PRAGMA journal_mode=WAL")
            connection.connection.execute("PRAGMA synchronous=NORMAL")
