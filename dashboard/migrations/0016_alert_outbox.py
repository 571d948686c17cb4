# The alerts' outbox: the webhook deliveries become deliveries of either kind (webhook or
# e-mail) with their last error, "delivered" becomes "sent"; a schedule keeps the origin
# its alerts' links use.

from django.db import migrations, models


def delivered_is_sent(apps, schema_editor):
    Delivery = apps.get_model("dashboard", "Delivery")
    Delivery.objects.filter(status="delivered").update(status="sent")
    for delivery in Delivery.objects.exclude(log=[]).only("pk", "log"):
        last = delivery.log[-1] if isinstance(delivery.log, list) else {}
        if isinstance(last, dict) and last.get("error"):
            Delivery.objects.filter(pk=delivery.pk).update(last_error=str(last["error"]))


def sent_is_delivered(apps, schema_editor):
    Delivery = apps.get_model("dashboard", "Delivery")
    Delivery.objects.filter(status="sent").update(status="delivered")


class Migration(migrations.Migration):

    dependencies = [
        ("dashboard", "0015_run_kind_mcp"),
    ]

    operations = [
        migrations.RenameModel(old_name="WebhookDelivery", new_name="Delivery"),
        migrations.AlterModelOptions(
            name="delivery",
            options={"ordering": ["-created_at", "-pk"], "verbose_name_plural": "deliveries"},
        ),
        migrations.RenameField(model_name="delivery", old_name="url", new_name="to"),
        migrations.AlterField(
            model_name="delivery", name="to", field=models.CharField(max_length=2000),
        ),
        migrations.RenameField(model_name="delivery", old_name="delivered_at", new_name="sent_at"),
        migrations.AddField(
            model_name="delivery",
            name="kind",
            field=models.CharField(
                choices=[("webhook", "Webhook"), ("email", "e-mail")], default="webhook",
                max_length=10,
            ),
        ),
        migrations.AddField(
            model_name="delivery", name="last_error", field=models.TextField(blank=True),
        ),
        migrations.AlterField(
            model_name="delivery",
            name="status",
            field=models.CharField(
                choices=[("pending", "Pending"), ("sent", "Sent"), ("failed", "Failed")],
                default="pending", max_length=10,
            ),
        ),
        migrations.RunPython(delivered_is_sent, sent_is_delivered),
        migrations.AddField(
            model_name="schedule",
            name="origin",
            field=models.CharField(blank=True, editable=False, max_length=300),
        ),
    ]
