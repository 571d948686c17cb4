"""Read a scenario file (the versioned JSON of scenario_export) into the database, whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from automation.errors import ScenarioInvalid
from dashboard.lib import jsonin
from dashboard.lib.jsonin import JsonRefused
from dashboard.scenarios import services
from dashboard.scenarios.forms import MAX_SCENARIO_BYTES


class Command(BaseCommand):
    help = "Import a scenario from a JSON file; nothing is stored unless all of it can be read."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("file", help="a scenario .json file")
        parser.add_argument("--owner", default="", help="username (default: the only admin)")

    def handle(self, *args: Any, file: str, owner: str, **options: Any) -> None:
        data = read_scenario_file(file)
        user = owner_named(owner)
        try:
            scenario = services.scenario_import(owner=user, data=data)
        except ScenarioInvalid as exc:
            raise CommandError(f"{file}: {exc}", returncode=3) from None
        self.stdout.write(
            f"imported scenario {scenario.pk}: {scenario.name} ({scenario.steps.count()} steps)"
        )


def read_scenario_file(file: str) -> object:
    """The JSON in ``file``, or CommandError (exit status 3) saying what is wrong with it."""
    path = Path(file)
    try:
        if path.stat().st_size > MAX_SCENARIO_BYTES:
            raise CommandError(f"{file}: larger than {MAX_SCENARIO_BYTES} bytes", returncode=3)
        data = path.read_bytes()
        return jsonin.loads(data, max_bytes=MAX_SCENARIO_BYTES, what="it", no_nul=True)
    except OSError as exc:
        raise CommandError(f"{file}: {exc.strerror or exc}", returncode=3) from None
    except JsonRefused as exc:
        raise CommandError(f"{file}: {exc.message.removeprefix('it ')}", returncode=3) from None


def owner_named(username: str) -> Any:
    """The user ``username``, or the only admin when no name is given (CommandError, exit
    status 3, otherwise)."""
    users = get_user_model()
    if username:
        user = users.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}", returncode=3)
        return user
    admins = list(users.objects.filter(is_superuser=True)[:2])
    if len(admins) != 1:
        raise CommandError("say whose scenario it is: --owner USERNAME", returncode=3)
    return admins[0]
