"""Runs, batches and schedules keep the name of the sign-in profile chosen for them, so that
one deleted since is told (dashboard.models.signin_refusal) rather than left out."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def names(apps, schema_editor):
    profiles = apps.get_model("dashboard", "SigninProfile").objects
    for model in ("Run", "Batch", "Schedule"):
        name = Subquery(profiles.filter(pk=OuterRef("signin_profile_id")).values("name")[:1])
        apps.get_model("dashboard", model).objects.filter(signin_profile__isnull=False).update(
            signin_profile_name=name
        )


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0023_replay_steps_by_replay"),
    ]

    operations = [
        *(
            migrations.AddField(
                model_name=model,
                name="signin_profile_name",
                field=models.CharField(blank=True, max_length=100),
            )
            for model in ("batch", "run", "schedule")
        ),
        migrations.RunPython(names, migrations.RunPython.noop),
    ]
