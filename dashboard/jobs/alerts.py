"""Telling someone that a scheduled replay or batch ended badly (failed, was stopped, waits
for a person, or its time was missed while no worker was up): a signed webhook and/or e-mail.

A webhook is a JSON POST, signed so the receiver can tell it came from this dashboard::

    X-Tabwright-Event: firing.failed
    X-Tabwright-Delivery: 17
    X-Tabwright-Timestamp: 1795000000
    X-Tabwright-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" with the
                           schedule's webhook secret>

:func:`alert` only writes the alert into the outbox, a Delivery row per webhook and per
e-mail; the workers send them apart from their schedules' poll (dashboard.jobs.outbox), so
a slow receiver never holds up a firing.

Where webhooks may go is its own set of rules (TABWRIGHT_WEBHOOK_*), apart from where the
agent may browse (TABWRIGHT_ALLOWED_DOMAINS and the admin's URL rules): an allow list for
browsing does not limit alerts, nor the reverse.  A webhook's URL is checked when it is
saved (:func:`check_webhook_url`) and again, with every address its name resolves to,
when a delivery connects.

The links in an alert point at the dashboard as people reach it: TABWRIGHT_PUBLIC_URL
when the operator set it (behind a proxy that changes the Host header, set it), else the
origin of the request that made or last changed the schedule (:func:`request_origin`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import DisallowedHost, ImproperlyConfigured
from django.http import HttpRequest
from django.utils import timezone

from automation.browser.url_policy import UrlPolicy
from automation.errors import UrlBlocked
from dashboard.jobs import selectors
from dashboard.lib.urls import UrlInvalid, origin_of, plain_url
from dashboard.models import Delivery, Schedule, ScheduleFiring

__all__ = ["alert", "check_webhook_url", "links_origin", "mail_of", "payload_of",
           "public_url", "request_origin", "sign", "webhook_policy"]  # fmt: skip

log = logging.getLogger("tabwright.alerts")


def webhook_policy() -> UrlPolicy:
    """Where webhooks may be sent (TABWRIGHT_WEBHOOK_*), apart from where runs may go."""
    conf = settings.TABWRIGHT
    try:
        return UrlPolicy(
            allowed_domains=tuple(conf["WEBHOOK_ALLOWED_DOMAINS"]),
            blocked_domains=tuple(conf["WEBHOOK_BLOCKED_DOMAINS"]),
            block_private=bool(conf["WEBHOOK_BLOCK_PRIVATE_ADDRESSES"]),
        )
    except UrlBlocked as exc:
        raise ImproperlyConfigured(f"TABWRIGHT_WEBHOOK_*_DOMAINS: {exc}") from None


def check_webhook_url(url: str) -> str:
    """``url`` trimmed if a webhook may be sent there (a plain http(s) URL, the webhook
    rules; no DNS here: names are checked when a delivery connects); UrlInvalid or
    UrlBlocked saying why."""
    url = plain_url(url)
    webhook_policy().check(url)
    return url


def public_url() -> str:
    """TABWRIGHT_PUBLIC_URL as an origin (no trailing slash), '' when not set."""
    configured = settings.TABWRIGHT["PUBLIC_URL"]
    if not configured:
        return ""
    try:
        return origin_of(configured)
    except UrlInvalid as exc:
        raise ImproperlyConfigured(f"TABWRIGHT_PUBLIC_URL {configured!r}: {exc.message} "
                                   "(e.g. https://tabwright.example.com)") from None  # fmt: skip


def request_origin(request: HttpRequest) -> str:
    """The dashboard's origin as ``request`` reached it: its scheme (https behind a TLS
    proxy with SECURE_PROXY_SSL_HEADER) and its Host (checked against ALLOWED_HOSTS); ''
    when the host is not one of them."""
    try:
        return f"{request.scheme}://{request.get_host()}"
    except DisallowedHost:
        return ""


def links_origin(schedule: Schedule) -> str:
    """Where the links of the schedule's alerts point: TABWRIGHT_PUBLIC_URL, else the
    schedule's origin; '' (links from the root) when neither is known."""
    try:
        configured = public_url()
    except ImproperlyConfigured:  # the system check says so at start; the alert still goes
        log.exception("the links of an alert of schedule %s", schedule.pk)
        configured = ""
    return configured or schedule.origin.rstrip("/")


def sign(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def payload_of(firing: ScheduleFiring) -> dict[str, Any]:
    """What the alert says: the schedule, the firing and the run or batch it started."""
    schedule = firing.schedule
    run = firing.run
    batch = firing.batch
    base = links_origin(schedule)
    return {
        "event": f"firing.{firing.outcome}",
        "schedule": {"id": schedule.pk, "cron": schedule.cron, "timezone": schedule.timezone,
                     "scenario_id": schedule.scenario_id, "scenario": schedule.scenario.name,
                     "url": f"{base}/scenarios/{schedule.scenario_id}/#schedules"},
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


_SAYS = {"failed": "failed", "stopped": "was stopped", "needs_person": "waits for a person",
         "missed": "was missed"}  # fmt: skip


def mail_of(payload: dict[str, Any]) -> tuple[str, str]:
    """The subject and text of the alert e-mail of ``payload``."""
    outcome = str(payload.get("firing", {}).get("outcome", ""))
    name = " ".join(str(payload["schedule"]["scenario"]).split())  # a header is one line
    subject = f"Tabwright: {name} {_SAYS.get(outcome, outcome)}"
    lines = [f"{subject}."]
    for what in ("run", "batch"):
        if payload.get(what):
            lines.append(f"The {what}: {payload[what]['url']}")
    lines.append(f"The schedule: {payload['schedule']['url']}")
    if payload["firing"].get("error"):
        lines.append(f"Why: {payload['firing']['error']}")
    lines += ["", json.dumps(payload, indent=2, ensure_ascii=False)]
    return subject, "\n".join(lines) + "\n"


WEBHOOK_REMOVED = "the schedule's webhook was removed before this alert was sent"
EMAILS_REMOVED = "the schedule's e-mail addresses were removed before this alert was sent"


def addresses_of(schedule: Schedule) -> str:
    """The schedule's e-mail addresses as a delivery is sent to them ("" for none)."""
    return ", ".join(e.strip() for e in schedule.emails.split(",") if e.strip())


def follow(schedule: Schedule) -> None:
    """The alerts of ``schedule`` still to send go where it says now: to its webhook and
    addresses as changed; none where it has none any more (given up, saying why).  A try
    already under way ends as it began."""
    pending = selectors.pending_deliveries(schedule=schedule)
    ways = ((Delivery.Kind.WEBHOOK, schedule.webhook_url, WEBHOOK_REMOVED),
            (Delivery.Kind.EMAIL, addresses_of(schedule), EMAILS_REMOVED))  # fmt: skip
    for kind, to, removed in ways:
        these = pending.filter(kind=kind)
        if to:
            these.exclude(to=to).update(to=to)
        else:
            these.update(status=Delivery.Status.FAILED, last_error=removed)


def alert(firing: ScheduleFiring) -> list[Delivery]:
    """Put the alert that ``firing`` ended badly into the outbox: a delivery to the
    schedule's webhook and one to its e-mail addresses (the workers send them).  Called as
    the firing is judged bad (dashboard.jobs.schedules.judge), in its transaction."""
    firing = ScheduleFiring.objects.select_related("schedule__scenario", "run", "batch").get(
        pk=firing.pk
    )
    schedule = firing.schedule
    payload = payload_of(firing)
    now = timezone.now()
    made = []
    if schedule.webhook_url:
        made.append(Delivery(firing=firing, kind=Delivery.Kind.WEBHOOK, to=schedule.webhook_url,
                             payload=payload, next_attempt_at=now))  # fmt: skip
    addresses = addresses_of(schedule)
    if addresses:
        made.append(Delivery(firing=firing, kind=Delivery.Kind.EMAIL, to=addresses,
                             payload=payload, next_attempt_at=now))  # fmt: skip
    return Delivery.objects.bulk_create(made)
