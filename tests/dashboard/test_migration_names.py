"""The migration that gives each of a person's scenarios a name of its own, on a database
that holds repeats (stored before it: a file imported twice)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("dashboard", "0028_run_password_marks")]
AFTER = [("dashboard", "0029_scenario_unique_name")]


@pytest.mark.django_db(transaction=True)
def test_repeated_names_are_numbered_before_each_name_is_held_one_a_person() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        Scenario = old.get_model("dashboard", "Scenario")
        User = old.get_model(*get_user_model()._meta.label.split("."))
        ada, bob = (User.objects.create(username=n) for n in ("ada", "bob"))
        stored = [(ada, "Orders"), (ada, "Orders"), (ada, "Orders (2)"), (ada, "Orders"),
                  (bob, "Orders"), (ada, "N" * 200), (ada, "N" * 200)]  # fmt: skip
        pks = [Scenario.objects.create(owner_id=u.pk, name=n).pk for u, n in stored]
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps.get_model("dashboard", "Scenario")
        names = [new.objects.get(pk=pk).name for pk in pks]
        assert names == ["Orders", "Orders (2)", "Orders (2) (2)", "Orders (3)", "Orders",
                         "N" * 200, "N" * 196 + " (2)"]  # fmt: skip
    finally:
        MigrationExecutor(connection).migrate(executor.loader.graph.leaf_nodes())
