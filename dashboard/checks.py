"""System checks of a deployment (``manage.py check --deploy``) that Django can't know of."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

__all__ = ["engine_settings", "private_files"]


@checks.register()
def engine_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Browser and alert settings read when a run starts or an alert is sent, checked when
    any command starts (migrate, runworker, check) so a typo is found before the first run
    or alert fails on it."""
    from dashboard.engineconf import cdp_urls, chromium_sandbox_setting
    from dashboard.jobs.alerts import public_url, webhook_policy

    found: list[checks.CheckMessage] = []
    for read in (cdp_urls, chromium_sandbox_setting, public_url, webhook_policy):
        try:
            read()
        except ImproperlyConfigured as exc:
            found.append(checks.Error(str(exc), id="tabwright.E001"))
    return found


def _open_to_others(path: Path) -> bool:
    try:
        return bool(path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO))
    except FileNotFoundError:
        return False


@checks.register(checks.Tags.security, deploy=True)
def private_files(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """var/ holds the database (sessions, password hashes), the secret key and the run
    screenshots: nobody but the server's user should read it.  Settings create it so; one
    made before (or by hand) is reported, not changed."""
    found: list[checks.CheckMessage] = []
    var = Path(settings.VAR_DIR)
    if _open_to_others(var):
        found.append(
            checks.Warning(
                f"{var} (database, secret key, screenshots) is open to other users",
                hint=f"chmod 700 {var}",
                id="tabwright.W001",
            )
        )
    name = str(connection.settings_dict["NAME"])
    if name and name != ":memory:" and not name.startswith("file:") and _open_to_others(Path(name)):
        found.append(
            checks.Warning(
                f"the database {name} is open to other users",
                hint=f"chmod 600 {name}",
                id="tabwright.W002",
            )
        )
    return found
