"""First-run set-up, safe to repeat: an admin login (printed once) and stale live runs closed."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from dashboard import startup


class Command(BaseCommand):
    help = "Create the first admin user (printing its password once) and close interrupted runs."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--username", default="admin")

    def handle(self, *args: Any, username: str, **options: Any) -> None:
        users = get_user_model()
        if not users.objects.filter(is_superuser=True).exists():
            password = secrets.token_urlsafe(12)
            users.objects.create_superuser(username=username, email="", password=password)
            bar = "=" * 60
            self.stdout.write(
                f"{bar}\nFirst run: created the admin login (shown only this once)\n"
                f"  username: {username}\n  password: {password}\n{bar}"
            )
        # The same guarded close as the server's start: never the runs of a live server.
        closed = startup.close_stale_runs(keep=False)
        if closed is None:
            self.stdout.write("A server is running on this database: its live runs are kept.")
        elif closed:
            self.stdout.write(
                f"Closed {closed} run(s) interrupted by the last shutdown "
                "(those not started yet are queued again)."
            )
