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


def _no_nul_on_postgresql(sender: Any, connection: Any, **kwargs: Any) -> None:
    if connection.vendor == "postgresql":
        from dashboard.lib import pgtext  # psycopg: only where PostgreSQL is used

        pgtext.register(connection.connection)
