"""The JSON API's schedules: list, make, read, change, run now, delete."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest
from ninja import Router, Schema, Status
from pydantic import Field

from dashboard.api.common import ERRORS, ApiError, BodyIn, ErrorOut, ParamValues
from dashboard.api.runs import heal_model_named, signin_of
from dashboard.jobs import alerts, cron, schedules
from dashboard.jobs import selectors as job_selectors
from dashboard.jobs.services import heal_model_fields
from dashboard.models import Schedule, signin_label
from dashboard.scenarios import selectors

router = Router()


# -- schedules ---------------------------------------------------------------------------


class ScheduleIn(BodyIn):
    cron: str = Field(description="minute hour day month weekday, e.g. 0 7 * * 1-5")
    timezone: str = Field("UTC", description="an IANA time zone, e.g. Europe/Paris")
    params: ParamValues | None = Field(None, description="a replay's parameter values")
    rows: list[dict[str, Any]] | None = Field(None, description="or a batch's rows")
    concurrency: int = 2
    base_url: str = ""
    webhook_url: str = ""
    emails: str = Field("", description="addresses told when a firing ends badly, comma-separated")
    enabled: bool = True
    signin_profile: str = Field("", max_length=100, description="a sign-in profile's name")
    llm_profile: str = Field(
        "", max_length=100, description="an LLM profile's name: the model for changed pages "
        "of its replays (none: a step whose element is gone needs a person)",
    )  # fmt: skip


class SchedulePatch(BodyIn):
    cron: str | None = None
    timezone: str | None = None
    params: ParamValues | None = None
    rows: list[dict[str, Any]] | None = None
    concurrency: int | None = None
    base_url: str | None = None
    webhook_url: str | None = None
    emails: str | None = None
    enabled: bool | None = None
    signin_profile: str | None = Field(None, max_length=100, description='"" for none')
    llm_profile: str | None = Field(None, max_length=100, description='"" for none')


class DeliveryOut(Schema):
    id: int
    kind: str  # webhook or email
    to: str  # the webhook's URL, or the e-mail addresses
    status: str  # pending, sent, failed (given up)
    attempts: int
    last_error: str
    next_attempt_at: datetime | None  # while pending
    sent_at: datetime | None
    created_at: datetime
    log: list[dict[str, Any]]  # each try: at, seconds, status_code and/or error


class FiringOut(Schema):
    id: int
    due_at: datetime
    outcome: str  # "" while it runs; ok, failed, stopped, needs_person, missed
    error: str
    missed: int
    run_id: int | None
    batch_id: int | None
    deliveries: list[DeliveryOut]  # its alerts in the outbox


class PendingAlertsOut(Schema):
    count: int  # alerts of its firings still to send (turned off, it still sends them)
    next_attempt_at: datetime | None  # the next try of one of them


class ScheduleOut(Schema):
    id: int
    scenario_id: int
    cron: str
    description: str
    timezone: str
    enabled: bool
    params: dict[str, str]
    rows: list[dict[str, str]] | None
    concurrency: int
    base_url: str
    webhook_url: str
    webhook_secret: str  # verifies the X-Tabwright-Signature of its webhooks
    emails: str
    signin_profile: str  # the sign-in profile its firings start with ("": none; "… (deleted)")
    llm_profile: str  # the model for changed pages ("": none; "… (deleted)" since)
    next: list[datetime]
    pending_alerts: PendingAlertsOut  # over all its firings, not only those listed
    firings: list[FiringOut]


def _schedule_out(schedule: Schedule) -> dict[str, Any]:
    firings = schedule.firings.select_related("run", "batch").prefetch_related("deliveries")[:20]
    return {
        "id": schedule.pk, "scenario_id": schedule.scenario_id, "cron": schedule.cron,
        "description": cron.describe(schedule.cron), "timezone": schedule.timezone,
        "enabled": schedule.enabled, "params": schedule.params, "rows": schedule.rows,
        "concurrency": schedule.concurrency, "base_url": schedule.base_url,
        "webhook_url": schedule.webhook_url, "webhook_secret": schedule.webhook_secret,
        "emails": schedule.emails, "llm_profile": schedule.heal_model_label,
        "signin_profile": signin_label(schedule),
        "next": schedules.upcoming(schedule),
        "pending_alerts": job_selectors.schedule_pending_alerts(schedule=schedule),
        "firings": [{
            "id": f.pk, "due_at": f.due_at, "outcome": f.outcome, "error": f.error,
            "missed": f.missed, "run_id": f.run_id, "batch_id": f.batch_id,
            "deliveries": [job_selectors.delivery_state(delivery=d) for d in f.deliveries.all()],
        } for f in firings],
    }  # fmt: skip


def _checked_schedule(
    scenario: Any, fields: dict[str, Any], kept: Collection[str] = ()
) -> dict[str, Any]:
    enabled = fields.pop("enabled", True)
    try:
        checked = schedules.check_schedule(scenario=scenario, kept=kept, **fields)
    except schedules.ScheduleInvalid as exc:
        raise ApiError(400, exc.code, exc.message, exc.hint,
                       fields={exc.field: exc.message}) from None  # fmt: skip
    return {**checked, "enabled": enabled}


@router.get("/schedules", response={200: list[ScheduleOut], **ERRORS}, tags=["schedules"])
async def list_schedules(request: HttpRequest) -> list[dict[str, Any]]:
    """The token's owner's schedules."""

    def read() -> list[dict[str, Any]]:
        return [_schedule_out(s) for s in Schedule.objects.filter(owner=request.user)]

    return await sync_to_async(read)()


@router.post("/scenarios/{scenario_id}/schedules", response={201: ScheduleOut, **ERRORS},
          tags=["schedules"])  # fmt: skip
async def create_schedule(request: HttpRequest, scenario_id: int, body: ScheduleIn) -> Any:
    """Replay the scenario (``params``) or run a batch of it (``rows``) at the times of
    ``cron`` in ``timezone``; ``webhook_url`` and ``emails`` are told when one ends badly."""

    def make() -> dict[str, Any]:
        scenario = selectors.scenario_get(user=request.user, id=scenario_id)
        if scenario.owner_id != request.user.pk:
            raise ApiError(403, "forbidden", "only the scenario's owner can schedule it")
        given = body.model_dump()
        profile = signin_of(request.user, given.pop("signin_profile"))
        heal_model = heal_model_named(given.pop("llm_profile"))
        fields = _checked_schedule(scenario, given)
        schedule = schedules.save(Schedule(owner=request.user, scenario=scenario),
                                  origin=alerts.request_origin(request),
                                  signin_profile_id=profile.pk if profile else None,
                                  **heal_model_fields(heal_model), **fields)  # fmt: skip
        return _schedule_out(schedule)

    return Status(201, await sync_to_async(make)())


@router.get("/schedules/{schedule_id}", response={200: ScheduleOut, **ERRORS}, tags=["schedules"])
async def read_schedule(request: HttpRequest, schedule_id: int) -> Any:
    """The schedule, its next times and its latest firings with their alerts' deliveries."""
    return await sync_to_async(lambda: _schedule_out(_own_schedule(request, schedule_id)))()


@router.patch("/schedules/{schedule_id}", response={200: ScheduleOut, **ERRORS}, tags=["schedules"])
async def edit_schedule(request: HttpRequest, schedule_id: int, body: SchedulePatch) -> Any:
    """Change what is given; the rest stays, as it is (turned off, or its alerts sent
    elsewhere, after its scenario changed its parameters). Giving ``params`` makes it a
    replay again, ``rows`` a batch; turning it on checks it all again, as it will fire."""

    def edit() -> dict[str, Any]:
        schedule = _own_schedule(request, schedule_id)
        given = body.model_dump(exclude_unset=True)
        heal_model = given.pop("llm_profile", None)
        signin = given.pop("signin_profile", None)
        fields = {**schedules.stored_fields(schedule), "enabled": schedule.enabled}
        fields.update({key: value for key, value in given.items() if value is not None})
        if given.get("rows") is None and given.get("params") is not None:  # a replay again
            fields["rows"] = None
        if given.get("params") is None and given.get("rows") is not None:  # a batch
            fields["params"] = None
        changed = {key for key, value in given.items() if value is not None}
        if changed & {"params", "rows"}:
            changed |= {"params", "rows"}
        turned_on = given.get("enabled") is True and not schedule.enabled
        kept = () if turned_on else fields.keys() - changed
        checked = _checked_schedule(schedule.scenario, fields, kept)
        if turned_on and signin is None:  # (a profile given now is checked below)
            try:
                schedules.check_signin(schedule)
            except schedules.ScheduleInvalid as exc:
                raise ApiError(400, exc.code, exc.message, exc.hint,
                               fields={exc.field: exc.message}) from None  # fmt: skip
        if heal_model is not None:  # "": none any more
            checked.update(heal_model_fields(heal_model_named(heal_model)))
        if signin is not None:  # "": none any more
            profile = signin_of(request.user, signin)
            checked["signin_profile_id"] = profile.pk if profile is not None else None
        return _schedule_out(schedules.save(schedule, origin=alerts.request_origin(request),
                                            **checked))  # fmt: skip

    return await sync_to_async(edit)()


@router.post("/schedules/{schedule_id}/fire", response={202: ScheduleOut, **ERRORS, 409: ErrorOut},
             tags=["schedules"])  # fmt: skip
async def fire_schedule(request: HttpRequest, schedule_id: int) -> Any:
    """Run it now: its next time is made now and a worker fires it at once, a firing like
    any other (its run or batch, judged and told the same way); the regular times go on
    after it.  202 with the schedule (its firings show it once fired); 409
    ``schedule_off`` while it is turned off."""

    def make_due() -> None:
        try:
            schedules.run_now(_own_schedule(request, schedule_id))
        except schedules.ScheduleOff as exc:
            raise ApiError(409, exc.code, exc.message, exc.hint) from None

    await sync_to_async(make_due)()
    await schedules.ring_due()
    out = await sync_to_async(lambda: _schedule_out(_own_schedule(request, schedule_id)))()
    return Status(202, out)


@router.delete("/schedules/{schedule_id}", response={204: None, **ERRORS}, tags=["schedules"])
async def delete_schedule(request: HttpRequest, schedule_id: int) -> Any:
    """The schedule and its firings' history are deleted (the runs it started are kept)."""
    await sync_to_async(lambda: _own_schedule(request, schedule_id).delete())()
    return Status(204, None)


def _own_schedule(request: HttpRequest, schedule_id: int) -> Schedule:
    schedule = (
        Schedule.objects.select_related("scenario")
        .filter(pk=schedule_id, owner=request.user)
        .first()
    )
    if schedule is None:
        raise Http404("no such schedule of yours")
    return schedule
