"""The steps a replay recorded say so (by "replay"): their args are their scenario's own,
placeholders and all, where a conversation's are text as typed
(automation.recording.fromrun)."""

from django.db import migrations


def forwards(apps, schema_editor):
    Step = apps.get_model("dashboard", "Step")
    Step.objects.filter(run__kind="replay", by="agent").update(by="replay")


def backwards(apps, schema_editor):
    Step = apps.get_model("dashboard", "Step")
    Step.objects.filter(by="replay").update(by="agent")


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0022_login_scenario_kept_while_used"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
