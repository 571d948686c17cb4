"""Telling someone that a scheduled replay or batch ended badly (failed, waits for a person,
or its time was missed while no worker was up): a signed webhook and/or e-mail.

A webhook is a JSON POST, signed so the receiver can tell it came from this dashboard::

    X-Tabwright-Event: firing.failed
    X-Tabwright-Delivery: 17
    X-Tabwright-Timestamp: 1795000000
    X-Tabwright-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" with the
                           schedule's webhook secret>

Each alert is a WebhookDelivery row, tried at once and again after each of
WEBHOOK_RETRY_S until a 2xx answer (or given up), every try logged on the row.  Workers
claim a try with a conditional update, so two never send the same try; a worker that dies
between sending and recording may send it once more (at-least-once: the Delivery id lets
the receiver drop the second).  E-mail goes through Django's mail settings (EMAIL_*).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from datetime import timedelta
from typing import Any

import httpx
from channels.db import database_sync_to_async
from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone

from dashboard.jobs import selectors
from dashboard.models import ScheduleFiring, WebhookDelivery

__all__ = ["alert", "deliver_due", "payload_of", "sign"]

log = logging.getLogger("tabwright.alerts")

CLAIM_S = 60  # a try in flight is another worker's for this long
SEND_TIMEOUT_S = 10.0


def retry_delays() -> list[float]:
    """Seconds before each try after the first (TABWRIGHT_WEBHOOK_RETRY_S)."""
    return [float(s) for s in settings.TABWRIGHT["WEBHOOK_RETRY_S"]]


def sign(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def payload_of(firing: ScheduleFiring) -> dict[str, Any]:
    """What the alert says: the schedule, the firing and the run or batch it started."""
    schedule = firing.schedule
    run = firing.run
    batch = firing.batch
    base = settings.TABWRIGHT["PUBLIC_URL"].rstrip("/")
    return {
        "event": f"firing.{firing.outcome}",
        "schedule": {"id": schedule.pk, "cron": schedule.cron, "timezone": schedule.timezone,
                     "scenario_id": schedule.scenario_id, "scenario": schedule.scenario.name},
        "firing": {"id": firing.pk, "due_at": firing.due_at.isoformat(),
                   "outcome": firing.outcome, "error": firing.error, "missed": firing.missed},
        "run": None if run is None else {
            "id": run.pk, "status": run.status, "reason": run.status_reason,
            "url": f"{base}/runs/{run.pk}/",
        },
        "batch": None if batch is None else {
            "id": batch.pk, "status": batch.status, "url": f"{base}/batches/{batch.pk}/",
            "progress": selectors.batch_progress(batch=batch,
                                                 rows=selectors.batch_rows(batch=batch)),
        },
    }  # fmt: skip


def alert(firing: ScheduleFiring) -> None:
    """Tell the schedule's webhook (a delivery, sent by :func:`deliver_due`) and e-mail
    addresses that ``firing`` ended badly.  Blocking: call it in a thread."""
    firing = ScheduleFiring.objects.select_related("schedule__scenario", "run", "batch").get(
        pk=firing.pk
    )
    schedule = firing.schedule
    payload = payload_of(firing)
    if schedule.webhook_url:
        WebhookDelivery.objects.create(firing=firing, url=schedule.webhook_url, payload=payload,
                                       next_attempt_at=timezone.now())  # fmt: skip
    emails = [e.strip() for e in schedule.emails.split(",") if e.strip()]
    if emails:
        what = {"failed": "failed", "needs_person": "waits for a person",
                "missed": "was missed"}.get(firing.outcome, firing.outcome)  # fmt: skip
        subject = f"Tabwright: {schedule.scenario.name} {what}"
        body = json.dumps(payload, indent=2, ensure_ascii=False)
        try:
            send_mail(subject, f"{subject}.\n\n{body}\n", None, emails)
        except Exception:  # the webhook (if any) still goes; the log says why
            log.exception("the alert e-mail of firing %s was not sent", firing.pk)


async def deliver_due() -> int:
    """Send every webhook try that is due (the workers' poll); how many were delivered."""
    now = timezone.now()
    due = await database_sync_to_async(
        lambda: list(WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now
        ).values_list("pk", flat=True)[:50])
    )()  # fmt: skip
    delivered = 0
    async with httpx.AsyncClient(timeout=SEND_TIMEOUT_S, follow_redirects=False) as client:
        for delivery_id in due:
            if await _try(client, delivery_id):
                delivered += 1
    return delivered


async def _try(client: httpx.AsyncClient, delivery_id: int) -> bool:
    now = timezone.now()
    claimed = await database_sync_to_async(
        lambda: WebhookDelivery.objects.filter(
            pk=delivery_id, status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now
        ).update(next_attempt_at=now + timedelta(seconds=CLAIM_S))
    )()  # fmt: skip
    if not claimed:
        return False  # another worker has this try
    delivery = await WebhookDelivery.objects.select_related("firing__schedule").aget(pk=delivery_id)
    body = json.dumps(delivery.payload, ensure_ascii=False).encode()
    stamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Tabwright-Webhook/1",
        "X-Tabwright-Event": str(delivery.payload.get("event", "")),
        "X-Tabwright-Delivery": str(delivery.pk),
        "X-Tabwright-Timestamp": stamp,
        "X-Tabwright-Signature": sign(delivery.firing.schedule.webhook_secret, stamp, body),
    }
    entry: dict[str, Any] = {"at": timezone.now().isoformat()}
    try:
        answer = await client.post(delivery.url, content=body, headers=headers)
        entry["status_code"] = answer.status_code
        ok = 200 <= answer.status_code < 300
    except httpx.HTTPError as exc:
        entry["error"] = f"{type(exc).__name__}: {exc}"[:300]
        ok = False
    await database_sync_to_async(_record)(delivery, entry, ok)
    return ok


def _record(delivery: WebhookDelivery, entry: dict[str, Any], ok: bool) -> None:
    delivery.attempts += 1
    delivery.log = [*delivery.log, entry]
    delays = retry_delays()
    if ok:
        delivery.status, delivery.delivered_at = WebhookDelivery.Status.DELIVERED, timezone.now()
    elif delivery.attempts > len(delays):
        delivery.status = WebhookDelivery.Status.FAILED
        log.warning("webhook delivery %s to %s given up after %s tries", delivery.pk,
                    delivery.url, delivery.attempts)  # fmt: skip
    else:
        wait = delays[delivery.attempts - 1]
        delivery.next_attempt_at = timezone.now() + timedelta(seconds=wait)
    delivery.save(update_fields=["attempts", "log", "status", "delivered_at", "next_attempt_at"])
