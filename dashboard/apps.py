from __future__ import annotations

from django.apps import AppConfig

from automation.loading import resume_gc


class DashboardConfig(AppConfig):
    name = "dashboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from dashboard import checks  # noqa: F401  (registers the deploy checks)

        resume_gc()  # paused while a command loads (manage.py)
