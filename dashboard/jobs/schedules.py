"""Schedules at work: a scenario replayed, or run as a batch, at the times of a cron
expression in a time zone (:mod:`dashboard.jobs.cron`).

Every worker's queue poll fires what is due (:func:`fire_due`): each due time of a
schedule becomes one ScheduleFiring row — unique per schedule and time, and made in the
transaction that moves the schedule's next time on — so however many workers poll, a time
starts its replay (or batch) exactly once.  *Run now* (:func:`run_now`) makes the
schedule's next time now and rings the workers (:func:`ring_due`): the worker that hears
it fires it through the same :func:`fire_due`, a firing like any other (a lost ring waits
for the next poll); the regular times go on after it.  A time found more than
MISSED_AFTER_S late (no worker was up) is reported as missed, with how many times were,
and not run late.  The same poll judges the firings whose work ended
(:func:`judge_outcomes`), and a replay's firing is judged as soon as its run ends
(:func:`run_ended`): one that failed or waits for a person is told to the schedule's
webhook and e-mail (dashboard.jobs.alerts).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from channels.db import database_sync_to_async
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone as dj_timezone

from automation.errors import ActionInvalid, SecretNotGranted, UrlBlocked
from automation.recording.takes import Taken, replay_takes
from dashboard.engineconf import base_url_checked, heal_model_refusal
from dashboard.jobs import alerts, batches, outbox
from dashboard.jobs import selectors as job_selectors
from dashboard.jobs import services as job_services
from dashboard.jobs.batchfile import check_params, json_rows
from dashboard.jobs.cron import check_cron, check_timezone, next_times, times_after
from dashboard.lib.urls import UrlInvalid
from dashboard.models import (
    Batch,
    Run,
    Schedule,
    ScheduleFiring,
    signin_fields,
    signin_refusal,
)
from dashboard.runs.doorbell import RUNS_CHANNEL, ring, wake
from dashboard.runs.messages import schedules_due_message
from dashboard.runs.services import STOPPED_BY
from dashboard.scenarios import selectors as scenario_selectors
from dashboard.scenarios import services as scenario_services

__all__ = ["MISSED_AFTER_S", "ScheduleInvalid", "ScheduleOff", "check_schedule", "fire_due",
           "judge_outcomes", "ring_due", "run_ended", "run_now", "save", "stored_fields",
           "upcoming"]  # fmt: skip

log = logging.getLogger("tabwright.schedules")

MISSED_AFTER_S = 300
MAX_CATCH_UP = 10_000  # due times counted when reporting a long outage
MAX_EMAILS = 20  # addresses a schedule's failures are mailed to


# -- firing ---------------------------------------------------------------------------------


def fire(schedule_id: int, now: datetime) -> ScheduleFiring | None:
    """Fire the schedule if a time of it is due at ``now``; the firing, or None when
    nothing was due (or another worker fired it first)."""
    try:
        with transaction.atomic():
            schedule = (
                Schedule.objects.select_for_update()
                .filter(pk=schedule_id, enabled=True, next_fire_at__lte=now)
                .select_related("scenario", "owner")
                .first()
            )
            if schedule is None or schedule.next_fire_at is None:
                return None
            due = [schedule.next_fire_at]
            times = times_after(schedule.cron, schedule.timezone, schedule.next_fire_at)
            while len(due) < MAX_CATCH_UP:
                later = next(times)
                if later > now:
                    break
                due.append(later)
            latest = due[-1]
            late = (now - latest).total_seconds() > MISSED_AFTER_S
            firing = ScheduleFiring.objects.create(
                schedule=schedule, due_at=latest, missed=len(due) if late else len(due) - 1
            )
            schedule.next_fire_at = next_times(schedule.cron, schedule.timezone, now)[0]
            schedule.save(update_fields=["next_fire_at"])
            if late:
                firing.outcome = "missed"
                firing.error = f"missed {len(due)} time(s) while no worker was up; not run late"
                firing.save(update_fields=["outcome", "error"])
                return firing
            if len(due) > 1 and (now - due[0]).total_seconds() > MISSED_AFTER_S:
                # The latest time runs, the ones before it went by while no worker was
                # up: told as a missed firing of its own (judged, and alerted, as any).
                ScheduleFiring.objects.create(
                    schedule=schedule, due_at=due[-2], missed=len(due) - 1, outcome="missed",
                    error=f"missed {len(due) - 1} time(s) while no worker was up; "
                    f"the next one, {latest:%Y-%m-%d %H:%M}, ran",
                )  # fmt: skip
            _start(schedule, firing)
            return firing
    except IntegrityError:  # that time was fired already (another worker, a stale read)
        schedule = Schedule.objects.filter(pk=schedule_id, next_fire_at__lte=now).first()
        if schedule is not None:  # on to the next time, or every poll would stop here
            later = next_times(schedule.cron, schedule.timezone, now)[0]
            Schedule.objects.filter(pk=schedule_id, next_fire_at__lte=now).update(
                next_fire_at=later
            )
        return None


def _start(schedule: Schedule, firing: ScheduleFiring) -> None:
    """The firing's replay or batch, checked against the scenario as it is now (it may have
    changed since the schedule was made); a firing that can't start fails, saying why."""
    document = scenario_selectors.scenario_document(scenario=schedule.scenario)
    takes = replay_takes(document)
    base_url = schedule.base_url or document.base_url
    try:
        if refusal := heal_model_refusal(schedule.llm_profile, schedule.llm_profile_name):
            raise ActionInvalid(refusal)  # never a replay without the model it was given
        if refusal := signin_refusal(schedule):
            raise ActionInvalid(refusal)  # nor without its sign-in
        if schedule.rows is not None:
            rows = [check_params(row, takes=takes) for row in json_rows(schedule.rows)]
            firing.batch = job_services.batch_create(
                owner=schedule.owner, scenario=schedule.scenario, rows=rows, base_url=base_url,
                concurrency=schedule.concurrency, source=f"schedule {schedule.pk}",
                signin_profile_id=schedule.signin_profile_id, llm_profile=schedule.llm_profile,
            )  # fmt: skip
        else:
            params = check_params(schedule.params, takes=takes)
            firing.run = scenario_services.replay_run_create(
                owner=schedule.owner, scenario=schedule.scenario, base_url=base_url,
                params=params, signin_profile_id=schedule.signin_profile_id,
                llm_profile_id=schedule.llm_profile_id, unattended=True,
            )  # fmt: skip
    except ActionInvalid as exc:
        firing.outcome, firing.error = "failed", f"could not start: {exc.message}"
    firing.save(update_fields=["run", "batch", "outcome", "error"])


async def fire_due() -> list[ScheduleFiring]:
    """Every schedule due now, fired (the workers' poll); a failure is logged."""
    fired: list[ScheduleFiring] = []
    try:
        now = dj_timezone.now()
        due = await database_sync_to_async(
            lambda: list(Schedule.objects.filter(enabled=True, next_fire_at__lte=now)
                         .values_list("pk", flat=True))
        )()  # fmt: skip
        for schedule_id in due:
            firing = await database_sync_to_async(fire)(schedule_id, now)
            if firing is not None:
                fired.append(firing)
        if any(f.run_id or f.batch_id for f in fired):
            for firing in fired:
                if firing.batch_id:
                    await batches.advance(firing.batch_id)
            await wake()
    except Exception:
        log.exception("firing the due schedules failed")
    return fired


class ScheduleOff(ActionInvalid):
    code = "schedule_off"


def run_now(schedule: Schedule) -> Schedule:
    """Make the schedule due now (a time already due stays as it is): the next poll, or
    the worker :func:`ring_due` rings, fires it as any time of it; ScheduleOff while it
    is turned off."""
    if not schedule.enabled:
        raise ScheduleOff("the schedule is turned off", hint="turn it on to run it now")
    now = dj_timezone.now()
    later = Q(next_fire_at__gt=now) | Q(next_fire_at__isnull=True)
    Schedule.objects.filter(later, pk=schedule.pk, enabled=True).update(next_fire_at=now)
    schedule.refresh_from_db()
    return schedule


async def ring_due() -> bool:
    """Ring the workers: a schedule is due now (:func:`run_now`); False when the ring was
    dropped (their next poll fires it)."""
    return await ring(RUNS_CHANNEL, schedules_due_message())


# -- outcomes -------------------------------------------------------------------------------

# A replay's firing reads as its run does: "stopped" as the run page says it.
RUN_OUTCOME = {Run.Status.SUCCEEDED: "ok", Run.Status.FAILED: "failed",
               Run.Status.STOPPED: "stopped", Run.Status.PAUSED: "needs_person"}  # fmt: skip
BAD = ("failed", "stopped", "needs_person", "missed")
UNSETTLED = ("", "needs_person")  # what the firing's work may still change
# A pause a person asked for (to watch it, or take over), as its run's reason begins
# (automation's RunPaused "requested"): nobody is waited for, the firing's work goes on.
ASKED = "requested:"


def _rows(batch: Batch) -> list[dict[str, Any]]:
    """The batch's rows as its firing reads them: one paused by a person who asked, at work."""
    return [{**row, "status": "running"}
            if row["status"] == "needs_person" and row["reason"].startswith(ASKED) else row
            for row in job_selectors.batch_rows(batch=batch)]  # fmt: skip


def outcome_of(firing: ScheduleFiring) -> str:
    """ok, failed, stopped or needs_person once the firing's work says so; "" while it
    runs (a stopped batch: until its rows have stopped), a pause a person asked for
    included."""
    if (run := firing.run) is not None:
        if run.status == Run.Status.PAUSED and run.status_reason.startswith(ASKED):
            return ""
        return RUN_OUTCOME.get(Run.Status(run.status), "")
    if firing.batch is not None:
        rows = _rows(firing.batch)
        statuses = {row["status"] for row in rows}
        if firing.batch.status == Batch.Status.STOPPED:  # by its owner: once its rows are
            return "" if statuses & {"queued", "running", "needs_person"} else "stopped"
        if firing.batch.status == Batch.Status.RUNNING:  # until its last row has ended
            return "needs_person" if "needs_person" in statuses else ""
        return "failed" if statuses & {"failed", "stopped", "skipped"} else "ok"
    return ""


def _stopped_why(firing: ScheduleFiring) -> str:
    """Who stopped the firing's replay, or its batch (as its stopped rows say)."""
    if firing.run is not None:
        return firing.run.status_reason
    assert firing.batch is not None
    said = [row["reason"] for row in job_selectors.batch_rows(batch=firing.batch)
            if row["status"] == "stopped" and row["reason"].startswith(STOPPED_BY)]  # fmt: skip
    return said[0] if said else "the batch was stopped"


def _why(firing: ScheduleFiring, outcome: str) -> str:
    """Why the firing's replay failed or waits for a person, as its run says; for a
    batch, how many rows did so, and the first one's reason."""
    if firing.run is not None:
        return firing.run.status_reason
    if firing.batch is None:
        return ""
    rows = _rows(firing.batch)
    kinds = ("needs_person",) if outcome == "needs_person" else ("failed", "stopped", "skipped")
    bad = [row for row in rows if row["status"] in kinds]
    if not bad:
        return ""
    first = bad[0]
    said = f"row {first['index']}" + (f": {first['reason']}" if first["reason"] else "")
    return f"{len(bad)} of {len(rows)} rows {outcome.replace('_', ' ')}; {said}"


def judge(firing_id: int) -> ScheduleFiring | None:
    """Record the firing's outcome once its work says it (one that waited for a person
    is judged again when its run or batch ends); the firing when it is bad and nobody was
    told yet, or one told it waited that now failed (a conditional update: of two
    workers judging it, one tells), its alerts put into the
    outbox in the same transaction (told, and queued, or neither).  A stopped replay's
    firing says why, as its run does ("stopped by ada while it waited for a person")."""
    firing = ScheduleFiring.objects.select_related("run", "batch", "schedule").get(pk=firing_id)
    from_work = firing.outcome in UNSETTLED  # else settled when it fired (missed, not started)
    outcome = outcome_of(firing) if from_work else firing.outcome
    if not outcome:
        return None
    # Why, as the work says it now: a person's reply may have moved it on since it waited.
    error = "" if from_work else firing.error
    if outcome == "stopped":
        error = _stopped_why(firing)
    elif outcome in ("failed", "needs_person") and not error:
        error = _why(firing, outcome)
    mine = ScheduleFiring.objects.filter(pk=firing.pk)
    settle = mine.filter(outcome__in=UNSETTLED)  # told it waited: now what became of it
    if outcome not in BAD:
        settle.update(outcome=outcome, error=error)
        return None
    # Told once; a replay or batch told it waited for a person is told again when it
    # ends failed (a later step, the row no one came to, a worker's restart, other rows):
    # else the receiver's last word would be that it waits.
    untold = Q(alerted_at__isnull=True)
    if outcome == "failed":
        untold |= Q(outcome="needs_person")
    with transaction.atomic():
        if not mine.filter(untold).update(
            outcome=outcome, error=error, alerted_at=dj_timezone.now()
        ):
            settle.update(outcome=outcome, error=error)
            return None
        firing.outcome, firing.error = outcome, error
        alerts.alert(firing)
    return firing


# The firings a poll judges: those whose replay or batch may still change what they say
# (however long it runs), and those judged bad but not told yet (by the index on
# outcome and alerted_at, however many firings are kept).
PENDING = Q(outcome__in=UNSETTLED) | Q(outcome__in=BAD, alerted_at__isnull=True)


def judge_all() -> list[ScheduleFiring]:
    """Firings not judged yet, or whose work may still change what they say, or judged
    bad and not told yet, judged; the bad ones told now (their alerts in the outbox)."""
    pending = ScheduleFiring.objects.filter(PENDING).exclude(
        Q(outcome__in=UNSETTLED, run__isnull=True, batch__isnull=True)  # nothing to follow
    )
    told = []
    for firing_id in pending.order_by("pk").values_list("pk", flat=True):
        bad = judge(firing_id)
        if bad is not None:
            told.append(bad)
    return told


async def run_ended(run: Run) -> None:
    """A run ended (dashboard.runs.live.on_ended): the firing it replays is judged now,
    not at the next poll, its alerts sent at once when it went badly."""
    firing_id = await database_sync_to_async(
        lambda: ScheduleFiring.objects.filter(run_id=run.pk).values_list("pk", flat=True).first()
    )()
    if firing_id is not None and await database_sync_to_async(judge)(firing_id) is not None:
        outbox.kick()


async def judge_outcomes() -> None:
    """The workers' poll: firings that ended badly are told, their alerts put into the
    outbox (dashboard.jobs.alerts); the workers' outbox sends them, apart from this poll."""
    try:
        if await database_sync_to_async(judge_all)():
            outbox.kick()
    except Exception:
        log.exception("judging the schedules' firings failed")


# -- making and changing schedules ------------------------------------------------------------


class ScheduleInvalid(ActionInvalid):
    """A schedule that can't be kept as asked; ``field`` names what is wrong."""

    code = "schedule_invalid"

    def __init__(self, message: str, *, field: str, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.field = field


class SecretsRefused(ScheduleInvalid):
    """The scenario types a secret the schedule's owner was not granted."""

    code = "secret_not_granted"


def check_signin(schedule: Schedule) -> None:
    """ScheduleInvalid when the sign-in profile chosen for ``schedule`` was deleted since:
    turned on, each of its firings would fail saying so."""
    if refusal := signin_refusal(schedule):
        raise ScheduleInvalid(refusal, field="signin_profile")


def check_schedule(
    *, scenario: Any, cron: str, timezone: str, params: dict[str, str] | None = None,
    rows: list[dict[str, str]] | None = None, concurrency: int = 2, base_url: str = "",
    webhook_url: str = "", emails: str = "", kept: Collection[str] = (),
) -> dict[str, Any]:  # fmt: skip
    """The schedule's fields, checked (the scenario's parameters as they are now, the cron
    expression, the time zone, the URLs, the addresses, each within what its column
    holds); ScheduleInvalid naming the field.  The fields named in ``kept`` are the
    schedule's own, checked when they were stored, and are taken as they are: turning it
    off or changing where its alerts go works after its scenario renamed a parameter
    ("params" or "rows" names both)."""
    for field, text in (("cron", cron), ("timezone", timezone), ("base_url", base_url),
                        ("webhook_url", webhook_url), ("emails", emails)):  # fmt: skip
        most = Schedule._meta.get_field(field).max_length
        if field not in kept and most is not None and len(text.strip()) > most:
            raise ScheduleInvalid(f"{field} is over {most} characters", field=field)
    try:
        cron = cron if "cron" in kept else check_cron(cron)
    except ActionInvalid as exc:
        raise ScheduleInvalid(exc.message, field="cron", hint=exc.hint) from None
    try:
        zone = timezone if "timezone" in kept else check_timezone(timezone).key
    except ActionInvalid as exc:
        raise ScheduleInvalid(exc.message, field="timezone", hint=exc.hint) from None
    if params and rows is not None:  # one of them would be dropped without a word
        raise ScheduleInvalid(
            "give the parameters' values (a replay at each time) or rows (a batch), not both",
            field="params", hint="values a batch's rows all share go in each row",
        )  # fmt: skip
    document = scenario_selectors.scenario_document(scenario=scenario)
    if not {"params", "rows"} & set(kept):  # else each firing would fail at once, saying so
        try:
            scenario_selectors.secrets_granted(owner=scenario.owner, document=document)
        except SecretNotGranted as exc:
            raise SecretsRefused(exc.message, field="scenario", hint=exc.hint) from None
    takes = replay_takes(document)
    try:
        # Only the values given are kept: one not given takes the scenario's default of
        # the day it fires (a default changed since is the one used).
        if {"params", "rows"} & set(kept):
            params = params or {}
        elif rows is not None:
            rows = [_given(row, takes) for row in json_rows(rows)]
            if not rows:
                raise ActionInvalid("a scheduled batch has at least one row")
        else:
            params = _given(params or {}, takes)
    except ActionInvalid as exc:
        field = "rows" if rows is not None else "params"
        raise ScheduleInvalid(exc.message, field=field, hint=exc.hint) from None
    most = job_services.MAX_BATCH_CONCURRENCY
    if "concurrency" not in kept and (
        isinstance(concurrency, bool) or not 1 <= concurrency <= most
    ):
        raise ScheduleInvalid(f"concurrency is 1 to {most}", field="concurrency")
    # Where runs may go and where alerts may be sent are two sets of rules.
    urls = {"base_url": base_url.strip(), "webhook_url": webhook_url.strip()}
    for field, url in urls.items():
        if url and field not in kept:
            try:
                if field == "webhook_url":
                    urls[field] = alerts.check_webhook_url(url)
                else:
                    urls[field] = base_url_checked(url)
            except (UrlInvalid, UrlBlocked) as exc:
                raise ScheduleInvalid(exc.message, field=field, hint=exc.hint) from None
    addresses = [e.strip() for e in emails.split(",") if e.strip()]
    if len(addresses) > MAX_EMAILS and "emails" not in kept:
        raise ScheduleInvalid(f"at most {MAX_EMAILS} addresses are told", field="emails")
    for address in [] if "emails" in kept else addresses:
        try:
            validate_email(address)
        except ValidationError:
            raise ScheduleInvalid(f"{address!r} is not an e-mail address", field="emails") from None
    return {"cron": cron, "timezone": zone, "params": {} if rows is not None else params,
            "rows": rows, "concurrency": concurrency, **urls,
            "emails": ", ".join(addresses)}  # fmt: skip


def _given(params: dict[str, str], takes: Mapping[str, Taken]) -> dict[str, str]:
    """The values of ``params`` that were given (not empty), checked against the
    scenario's parameters as they are now (ParamsInvalid)."""
    checked = check_params(params, takes=takes)
    return {name: checked[name] for name in params if str(params[name] or "")}


def stored_fields(schedule: Schedule) -> dict[str, Any]:
    """The schedule's fields as :func:`check_schedule` takes them (a replay's params, or a
    batch's rows): to check them again, as when it is turned on."""
    return {
        "cron": schedule.cron, "timezone": schedule.timezone,
        "params": schedule.params if schedule.rows is None else None, "rows": schedule.rows,
        "concurrency": schedule.concurrency, "base_url": schedule.base_url,
        "webhook_url": schedule.webhook_url, "emails": schedule.emails,
    }  # fmt: skip


def save(schedule: Schedule, **fields: Any) -> Schedule:
    """Store ``fields`` (from :func:`check_schedule`) on ``schedule``, and set its next time
    from now when it is new, turned on, or given another cron or zone (a change of what
    it replays or where its alerts go keeps the time due, even one the poll has not fired
    yet); a webhook secret is made the first time it has a webhook.  Its alerts still to
    send follow its webhook and addresses (alerts.follow)."""
    if "signin_profile_id" in fields:
        fields = {**fields, **signin_fields(fields["signin_profile_id"])}
    when = (schedule.cron, schedule.timezone, schedule.enabled)
    for name, value in fields.items():
        setattr(schedule, name, value)
    if schedule.webhook_url and not schedule.webhook_secret:
        schedule.webhook_secret = secrets.token_hex(32)
    same_times = schedule.pk is not None and when == (schedule.cron, schedule.timezone, True)
    if not (same_times and schedule.enabled and schedule.next_fire_at is not None):
        schedule.next_fire_at = (
            next_times(schedule.cron, schedule.timezone, dj_timezone.now())[0]
            if schedule.enabled else None
        )  # fmt: skip
    with transaction.atomic():
        schedule.save()
        alerts.follow(schedule)
    return schedule


def upcoming(schedule: Schedule, count: int = 3) -> list[datetime]:
    """The schedule's next times, in its zone (none while it is off)."""
    if not schedule.enabled:
        return []
    return next_times(schedule.cron, schedule.timezone, dj_timezone.now(), count)
