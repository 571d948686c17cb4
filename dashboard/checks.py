"""System checks of a deployment (``manage.py check --deploy``) that Django can't know of."""

from __future__ import annotations

import functools
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

__all__ = ["engine_settings", "know_our_middleware", "private_files"]


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


def know_our_middleware() -> None:
    """Django's deployment checks of its security, session, CSRF and frame-options
    middleware look for them by Django's names in MIDDLEWARE: they would miss ours (the
    same classes, their hooks run on the event loop: dashboard/lib/middleware.py), say
    they are missing and skip the checks of their settings (HSTS, secure cookies...).
    Each of Django's security deployment checks is run instead with ours named as
    Django's; what they find is as if Django's own were there."""
    registry = checks.registry.registry
    for check in list(registry.deployment_checks):
        if check.__module__.startswith("django.core.checks.security."):
            registry.deployment_checks.discard(check)
            registry.deployment_checks.add(_as_django(check))


def _as_django(check: Callable[..., list[checks.CheckMessage]]) -> Any:
    @functools.wraps(check)  # its name and its tags
    def checked(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
        with _named_as_django():
            return check(app_configs, **kwargs)

    return checked


@contextmanager
def _named_as_django() -> Iterator[None]:
    from dashboard.lib.middleware import AS_DJANGO

    ours = settings.MIDDLEWARE
    settings.MIDDLEWARE = [AS_DJANGO.get(path, path) for path in ours]
    try:
        yield
    finally:
        settings.MIDDLEWARE = ours
