"""``manage.py tabwright_token <username> [--name NAME]``: an API token for a script, made
by the operator for an active person; printed once, alone on its line, so that a shell can
take it (``TOKEN=$(manage.py tabwright_token ada)``).  The same token as one made on the
person's API tokens page: only its SHA-256 is kept, and it is listed and revoked there."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from automation.errors import ActionInvalid
from dashboard.accounts import services

DEFAULT_NAME = "command line"


class Command(BaseCommand):
    help = "Make an API token for a person and print it (shown only this once)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username", help="the person the token acts as")
        parser.add_argument(
            "--name", default=DEFAULT_NAME, help="what the token is for (on the tokens page)"
        )

    def handle(self, *args: Any, username: str, name: str, **options: Any) -> None:
        owner = get_user_model().objects.filter(username=username).first()
        if owner is None:
            raise CommandError(f"no user {username!r}")
        if not owner.is_active:
            raise CommandError(f"the user {username!r} is not active: a token would not work")
        try:
            _, secret = services.api_token_create(owner=owner, name=name)
        except ActionInvalid as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(secret)
