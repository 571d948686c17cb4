"""Each of a person's scenarios has a name of its own: the ones stored under a name an
earlier one of theirs has (a file imported twice, a run saved again) are renamed
"name (2)", "name (3)"... first, as a save now names them."""

from django.db import migrations, models


def rename_repeats(apps, schema_editor):  # noqa: ANN001, ANN201 (a migration's signature)
    Scenario = apps.get_model("dashboard", "Scenario")
    most = Scenario._meta.get_field("name").max_length
    seen: dict[int, set[str]] = {}
    for scenario in Scenario.objects.order_by("pk").only("pk", "owner_id", "name"):
        names = seen.setdefault(scenario.owner_id, set())
        if scenario.name in names:
            number = 1
            free = scenario.name
            while free in names:
                number += 1
                suffix = f" ({number})"
                free = scenario.name[: most - len(suffix)] + suffix
            Scenario.objects.filter(pk=scenario.pk).update(name=free)
            scenario.name = free
        names.add(scenario.name)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0028_run_password_marks"),
    ]

    operations = [
        migrations.RunPython(rename_repeats, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="scenario",
            constraint=models.UniqueConstraint(
                fields=("owner", "name"), name="scenario_unique_name"
            ),
        ),
    ]
