"""The JSON API under /api/: what a script does with the dashboard (runs, scenarios,
replays, batches, schedules), with a person's token.

Built on Django Ninja: async views like the rest of the run paths, request and answer
schemas (pydantic) that are also the OpenAPI schema (``/api/openapi.json``) and the
interactive docs (``/api/docs``).  Every call sends ``Authorization: Bearer tw_…``, a token
its owner made on the tokens page (dashboard/token_views.py); the token acts as its owner
and sees exactly what the owner sees on the pages (the same selectors), no more.

Every error has one shape, whatever went wrong::

    {"error": {"code": "not_found", "message": "no such run", "hint": "", "fields": {}}}

``code`` is one of API_CODES or an engine error's code (automation.errors); ``fields``
names the request's fields at fault, when it is about them.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI, Schema, Status
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.parser import Parser
from ninja.security import HttpBearer
from pydantic import BaseModel, ConfigDict, Field

from automation.errors import ActionInvalid, ScenarioInvalid, TabwrightError, UrlBlocked
from dashboard import batches, jsonin, schedules, selectors, services
from dashboard.batch_views import results_csv
from dashboard.batchfile import BatchFileInvalid, read_rows
from dashboard.engineconf import url_policy
from dashboard.forms import MAX_SCENARIO_BYTES, PROFILE_PREFIX, NewRunForm, ReplayForm
from dashboard.jsonin import JsonRefused
from dashboard.models import Batch, LLMProfile, Run, Schedule, Step
from dashboard.runner import runner
from dashboard.services import MAX_BATCH_CONCURRENCY
from dashboard.worker import command_where_it_runs, wake

__all__ = ["api"]

API_CODES = ("unauthorized", "not_found", "forbidden", "invalid", "not_live", "http_error")
MAX_EVENTS = 1_000  # per call; ask again with ``after`` for more
MAX_LIST = 500
MAX_BODY_BYTES = MAX_SCENARIO_BYTES  # the largest body: a scenario file, as on the page


class ApiError(Exception):
    """An answer in the one error shape; ``fields``: the request's fields at fault."""

    def __init__(
        self, status: int, code: str, message: str, hint: str = "",
        fields: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.status, self.code, self.message, self.hint, self.fields = (
            status, code, message, hint, fields or {},
        )  # fmt: skip


class TokenAuth(HttpBearer):
    """``Authorization: Bearer <token>``: the token's owner, if the token is known."""

    def authenticate(self, request: HttpRequest, token: str) -> AbstractBaseUser | None:
        user = services.api_token_user(secret=token)
        if user is not None:
            request.user = user  # type: ignore[assignment]  # what the selectors are given
        return user


class BoundedParser(Parser):
    """Request bodies through dashboard.jsonin: bounded in size and nesting, so no body
    can exhaust the parser (the page's commands and the act API are read the same way)."""

    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        return jsonin.loads(request.body, max_bytes=MAX_BODY_BYTES)  # type: ignore[no-any-return]


api = NinjaAPI(
    title="Tabwright",
    parser=BoundedParser(),
    version="1",
    description="Runs, replays and scenarios of a Tabwright dashboard. Authenticate with "
    "`Authorization: Bearer <token>` (make a token on the dashboard's API tokens page).",
    auth=TokenAuth(),
    urls_namespace="api",
)


# -- one error shape --------------------------------------------------------------------


def _error(
    request: HttpRequest, status: int, code: str, message: str, hint: str = "",
    fields: dict[str, str] | None = None,
) -> HttpResponse:  # fmt: skip
    body = {"error": {"code": code, "message": message, "hint": hint, "fields": fields or {}}}
    return api.create_response(request, body, status=status)


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    return _error(request, exc.status, exc.code, exc.message, exc.hint, exc.fields)


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    hint = "send Authorization: Bearer <token>; make one on the API tokens page"
    return _error(request, 401, "unauthorized", "a valid API token is needed", hint)


@api.exception_handler(NinjaValidationError)
def _invalid(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    fields = {}
    for error in exc.errors:
        loc = [str(part) for part in error.get("loc", ())]
        # ("query", "limit"), or ("body", <the body parameter>, "task"): name the field.
        parts = loc[2:] if loc[:1] == ["body"] and len(loc) > 2 else loc[1:]
        fields[".".join(parts) or "body"] = str(error.get("msg", "invalid"))
    return _error(request, 400, "invalid", "the request is not valid", fields=fields)


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return _error(request, 404, "not_found", str(exc) or "not found")


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    cause = exc.__cause__
    if isinstance(cause, JsonRefused):  # the body, read by BoundedParser
        status = 413 if cause.code == "too_large" else 400
        return _error(request, status, "invalid", cause.message, fields={"body": cause.message})
    return _error(request, exc.status_code, "http_error", str(exc))


@api.exception_handler(TabwrightError)
def _engine_error(request: HttpRequest, exc: TabwrightError) -> HttpResponse:
    return _error(request, 400, exc.code, exc.message, exc.hint)


# -- schemas ----------------------------------------------------------------------------


class ErrorBody(Schema):
    code: str
    message: str
    hint: str = ""
    fields: dict[str, str] = {}


class ErrorOut(Schema):
    error: ErrorBody


class StepOut(Schema):
    index: int
    action: str
    args: dict[str, Any]
    role: str
    name: str
    url: str
    ok: bool
    error: dict[str, Any] | None
    duration_ms: int
    by: str
    screenshot_url: str | None


class RunOut(Schema):
    id: int
    kind: str
    status: str
    status_reason: str
    task: str
    start_url: str
    planner: str
    scenario_id: int | None
    params: dict[str, Any]
    summary: str
    output: Any
    prompt_tokens: int
    completion_tokens: int
    created_at: datetime
    finished_at: datetime | None
    url: str  # the run's page
    steps: list[StepOut] | None = None  # in GET /runs/{id} only


class RunIn(Schema):
    task: str = Field(min_length=1, max_length=20_000, description="what the agent does")
    start_url: str = Field("", max_length=2000)
    planner: str = Field(
        "", description="rules, openai or anthropic; empty: the default LLM profile, else "
        "the server's planner"
    )  # fmt: skip
    llm_profile: str = Field("", description="an LLM profile's name (instead of planner)")
    output_schema: dict[str, Any] | None = Field(
        None, description="a JSON Schema the run's output must match"
    )


class EventsOut(Schema):
    events: list[dict[str, Any]]
    last_seq: int  # ask again with after=last_seq for what came since


class ScenarioOut(Schema):
    id: int
    name: str
    description: str
    base_url: str
    step_count: int
    created_at: datetime
    updated_at: datetime


class ScenarioFileIn(BaseModel):
    """A scenario in its file format (``{"format": "tabwright.scenario", "version": 1,
    "name", "steps": [...]}``), as exported; checked whole when imported."""

    model_config = ConfigDict(extra="allow")


class ReplayIn(Schema):
    base_url: str = Field("", max_length=2000, description="where it runs (default: recorded)")
    params: dict[str, str] = {}


def _run_out(run: Run, steps: list[Step] | None = None) -> dict[str, Any]:
    return {
        "id": run.pk, "kind": run.kind, "status": run.status,
        "status_reason": run.status_reason, "task": run.task, "start_url": run.start_url,
        "planner": run.planner, "scenario_id": run.scenario_id, "params": run.params,
        "summary": run.summary, "output": run.output, "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens, "created_at": run.created_at,
        "finished_at": run.finished_at, "url": f"/runs/{run.pk}/",
        "steps": None if steps is None else [_step_out(run, step) for step in steps],
    }  # fmt: skip


def _step_out(run: Run, step: Step) -> dict[str, Any]:
    return {
        "index": step.index, "action": step.action, "args": step.args, "role": step.role,
        "name": step.name, "url": step.url, "ok": step.ok, "error": step.error,
        "duration_ms": step.duration_ms, "by": step.by,
        "screenshot_url": f"/runs/{run.pk}/screenshots/{step.index}.jpg"
        if step.screenshot else None,
    }  # fmt: skip


ERRORS: dict[int, type[Schema]] = {400: ErrorOut, 401: ErrorOut, 404: ErrorOut}


# -- runs -------------------------------------------------------------------------------


@api.get("/runs", response={200: list[RunOut], **ERRORS}, tags=["runs"])
async def list_runs(
    request: HttpRequest, status: str = "", kind: str = "", limit: int = 50
) -> list[dict[str, Any]]:
    """The runs the token's owner may see, newest first (``limit``: 1 to 500)."""
    if not 1 <= limit <= MAX_LIST:
        bounds = f"1 to {MAX_LIST}"
        raise ApiError(400, "invalid", f"limit is {bounds}", fields={"limit": bounds})
    if status and status not in Run.Status.values:
        choices = {"status": f"one of {', '.join(Run.Status.values)}"}
        raise ApiError(400, "invalid", f"no status {status!r}", fields=choices)
    if kind and kind not in Run.Kind.values:
        choices = {"kind": f"one of {', '.join(Run.Kind.values)}"}
        raise ApiError(400, "invalid", f"no kind {kind!r}", fields=choices)

    def read() -> list[dict[str, Any]]:
        runs = selectors.run_list(user=request.user, status=status, kind=kind)[:limit]
        return [_run_out(run) for run in runs]

    return await sync_to_async(read)()


@api.post("/runs", response={201: RunOut, **ERRORS}, tags=["runs"])
async def start_run(request: HttpRequest, body: RunIn) -> Status[dict[str, Any]]:
    """Start a run (queued until a worker claims it), as the new-run form does."""
    run = await sync_to_async(_run_from_body)(request.user, body)
    await wake()
    return Status(201, _run_out(run))


def _run_from_body(user: AbstractBaseUser, body: RunIn) -> Run:
    """The same checks as the page's form (dashboard.forms.NewRunForm), field by field."""
    planner = body.planner
    if body.llm_profile:
        profile = LLMProfile.objects.filter(name=body.llm_profile).first()
        if profile is None:
            raise ApiError(400, "invalid", f"no LLM profile {body.llm_profile!r}",
                           fields={"llm_profile": "no such profile"})  # fmt: skip
        planner = f"{PROFILE_PREFIX}{profile.pk}"
    form = NewRunForm({
        "task": body.task, "start_url": body.start_url, "planner": planner,
        "output_schema": json.dumps(body.output_schema) if body.output_schema else "",
    })  # fmt: skip
    if not planner:  # as the page preselects: the default profile, else the first choice
        form.data = {**form.data, "planner": form.fields["planner"].initial or
                     form.fields["planner"].choices[0][0]}  # fmt: skip
    if not form.is_valid():
        fields = {name: " ".join(errors) for name, errors in form.errors.items()}
        raise ApiError(400, "invalid", "the run can't start as asked", fields=fields)
    return services.run_create(owner=user, **form.cleaned_data)


@api.get("/runs/{run_id}", response={200: RunOut, **ERRORS}, tags=["runs"])
async def read_run(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """The run, with its recorded steps."""

    def read() -> dict[str, Any]:
        run = selectors.run_get(user=request.user, id=run_id)
        return _run_out(run, list(run.steps.all()))

    return await sync_to_async(read)()


@api.get("/runs/{run_id}/events", response={200: EventsOut, **ERRORS}, tags=["runs"])
async def run_events(request: HttpRequest, run_id: int, after: int = 0) -> Any:
    """The run's stored events after the sequence number ``after`` (at most 1,000 a call),
    as its page gets them."""
    if after < 0:
        raise ApiError(400, "invalid", "after is a sequence number, 0 or more",
                       fields={"after": "negative"})  # fmt: skip

    def read() -> dict[str, Any]:
        run = selectors.run_get(user=request.user, id=run_id)
        events = selectors.run_events(run_id=run.pk, after_seq=after)[:MAX_EVENTS]
        return {"events": events, "last_seq": events[-1]["seq"] if events else after}

    return await sync_to_async(read)()


@api.post("/runs/{run_id}/stop", response={200: RunOut, **ERRORS, 409: ErrorOut}, tags=["runs"])
async def stop_run(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """Stop the run (queued or live) and answer it as it is then; 409 when it is not live."""
    run = await sync_to_async(selectors.run_get)(user=request.user, id=run_id)
    if run.owner_id != request.user.pk:
        raise ApiError(403, "forbidden", "only the run's owner can stop it")
    got = await command_where_it_runs(run_id, "stop")
    error = got.get("error")
    if error is not None:
        if error["kind"] == "lookup":
            raise ApiError(409, "not_live", "the run is not live any more")
        raise ApiError(409, str(error.get("code", "refused")), str(error.get("message", "")))
    await runner.wait(run_id)  # here; elsewhere the answer came once the stop was asked
    return _run_out(await sync_to_async(Run.objects.get)(pk=run_id))


# -- scenarios --------------------------------------------------------------------------


def _scenario_out(scenario: Any) -> dict[str, Any]:
    return {
        "id": scenario.pk, "name": scenario.name, "description": scenario.description,
        "base_url": scenario.base_url, "step_count": getattr(scenario, "step_count", 0),
        "created_at": scenario.created_at, "updated_at": scenario.updated_at,
    }  # fmt: skip


@api.get("/scenarios", response={200: list[ScenarioOut], **ERRORS}, tags=["scenarios"])
async def list_scenarios(request: HttpRequest, q: str = "") -> list[dict[str, Any]]:
    """The scenarios the token's owner may see (``q``: in the name, description or URL)."""

    def read() -> list[dict[str, Any]]:
        return [_scenario_out(s) for s in selectors.scenario_list(user=request.user, q=q)]

    return await sync_to_async(read)()


@api.get("/scenarios/{scenario_id}", response={200: dict[str, Any], **ERRORS}, tags=["scenarios"])
async def export_scenario(request: HttpRequest, scenario_id: int) -> dict[str, Any]:
    """The scenario in its file format (what the page's JSON export writes)."""

    def read() -> dict[str, Any]:
        scenario = selectors.scenario_get(user=request.user, id=scenario_id)
        return selectors.scenario_document(scenario=scenario).to_dict()

    return await sync_to_async(read)()


@api.post("/scenarios", response={201: ScenarioOut, **ERRORS}, tags=["scenarios"])
async def import_scenario(request: HttpRequest, body: ScenarioFileIn) -> Status[Any]:
    """A scenario from its file format (as exported); nothing is stored if it can't be read."""

    def save() -> dict[str, Any]:
        try:
            scenario = services.scenario_import(owner=request.user, data=body.model_extra)
        except ScenarioInvalid as exc:
            raise ApiError(400, exc.code, exc.message, exc.hint) from None
        return _scenario_out(selectors.scenario_list(user=request.user).get(pk=scenario.pk))

    return Status(201, await sync_to_async(save)())


@api.post("/scenarios/{scenario_id}/replays", response={201: RunOut, **ERRORS}, tags=["scenarios"])
async def replay_scenario(
    request: HttpRequest, scenario_id: int, body: ReplayIn
) -> Status[dict[str, Any]]:
    """Replay the scenario (a run of kind ``replay``, queued until a worker claims it) with
    its parameters; a parameter it does not have, or one without a default left out, is
    refused before anything runs."""
    run = await sync_to_async(_replay_from_body)(request.user, scenario_id, body)
    await wake()
    return Status(201, _run_out(run))


def _replay_from_body(user: AbstractBaseUser, scenario_id: int, body: ReplayIn) -> Run:
    scenario = selectors.scenario_get(user=user, id=scenario_id)
    document = selectors.scenario_document(scenario=scenario)
    form = ReplayForm(document=document)
    known = {key.removeprefix("param_") for key in form.fields if key.startswith("param_")}
    unknown = sorted(set(body.params) - known)
    if unknown:
        raise ApiError(400, "invalid", f"the scenario has no parameter {unknown[0]}",
                       f"its parameters: {', '.join(sorted(known)) or 'none'}",
                       {f"params.{name}": "unknown parameter" for name in unknown})  # fmt: skip
    data = {"base_url": body.base_url or document.base_url}
    for name in known:
        default = (document.params.get(name) or {}).get("default")
        value = body.params.get(name, default)
        if value is not None:
            data[f"param_{name}"] = value
    form = ReplayForm(data, document=document)
    if not form.is_valid():
        fields = {("params." + n.removeprefix("param_") if n.startswith("param_") else n):
                  " ".join(errors) for n, errors in form.errors.items()}  # fmt: skip
        raise ApiError(400, "invalid", "the replay can't start as asked", fields=fields)
    return services.replay_run_create(
        owner=user, scenario=scenario, base_url=form.cleaned_data["base_url"],
        params=form.params(),
    )  # fmt: skip


# -- batches ----------------------------------------------------------------------------


class BatchIn(Schema):
    rows: list[dict[str, Any]] | None = Field(
        None, description="a list of objects of parameter values, one per replay"
    )
    csv: str | None = Field(None, description="or the same as CSV text with a header row")
    base_url: str = Field("", max_length=2000, description="where it runs (default: recorded)")
    concurrency: int = Field(2, description=f"rows at once, 1 to {MAX_BATCH_CONCURRENCY}")


class BatchCounts(Schema):
    queued: int
    running: int
    needs_person: int
    passed: int
    failed: int
    stopped: int
    skipped: int


class BatchProgress(Schema):
    total: int
    done: int
    counts: BatchCounts
    seconds_left: int | None


class BatchRowOut(Schema):
    index: int
    params: dict[str, str]
    status: str  # queued, running, needs_person, passed, failed, stopped, skipped
    attempts: int
    run_id: int | None
    reason: str
    output: Any
    seconds: float | None


class BatchOut(Schema):
    id: int
    scenario_id: int
    scenario: str
    status: str  # running, stopped, done
    base_url: str
    concurrency: int
    source: str
    created_at: str
    finished_at: str | None
    progress: BatchProgress
    rows: list[BatchRowOut]


@api.post("/scenarios/{scenario_id}/batches", response={201: BatchOut, **ERRORS}, tags=["batches"])
async def start_batch(request: HttpRequest, scenario_id: int, body: BatchIn) -> Status[Any]:
    """Replay the scenario once per row (``rows``, or ``csv`` text), ``concurrency`` rows
    at once; the columns must be its parameters (a missing or unknown one is refused,
    naming it, before anything runs)."""
    batch = await sync_to_async(_batch_from_body)(request.user, scenario_id, body)
    await batches.advance(batch.pk)
    return Status(201, await _state_now(batch))


def _batch_from_body(user: AbstractBaseUser, scenario_id: int, body: BatchIn) -> Batch:
    scenario = selectors.scenario_get(user=user, id=scenario_id)
    if scenario.owner_id != user.pk:
        raise ApiError(403, "forbidden", "only the scenario's owner can run a batch of it")
    document = selectors.scenario_document(scenario=scenario)
    defaults = selectors.scenario_param_defaults(document=document)
    if (body.rows is None) == (body.csv is None):
        raise ApiError(400, "invalid", "give the rows either as rows or as csv",
                       fields={"rows": "one of rows or csv"})  # fmt: skip
    try:
        if body.rows is not None:
            data = json.dumps(body.rows).encode()
            rows = read_rows(data, name="rows.json", defaults=defaults)
        else:
            rows = read_rows((body.csv or "").encode(), name="rows.csv", defaults=defaults)
    except BatchFileInvalid as exc:
        field = "rows" if body.rows is not None else "csv"
        raise ApiError(400, exc.code, exc.message, exc.hint, fields={field: exc.message}) from None
    base_url = body.base_url.strip() or document.base_url
    try:
        base_url = url_policy().check(base_url) if base_url else ""
    except UrlBlocked as exc:
        raise ApiError(400, "invalid", str(exc), fields={"base_url": str(exc)}) from None
    try:
        return services.batch_create(owner=user, scenario=scenario, rows=rows, base_url=base_url,
                                     concurrency=body.concurrency, source="api")  # fmt: skip
    except ActionInvalid as exc:
        raise ApiError(400, "invalid", exc.message, fields={"concurrency": exc.message}) from None


@api.get("/batches/{batch_id}", response={200: BatchOut, **ERRORS}, tags=["batches"])
async def read_batch(request: HttpRequest, batch_id: int) -> Any:
    """The batch: its progress and each row's status, run, reason and output."""

    def read() -> dict[str, Any]:
        return selectors.batch_state(batch=selectors.batch_get(user=request.user, id=batch_id))

    return await sync_to_async(read)()


@api.post("/batches/{batch_id}/stop", response={200: BatchOut, **ERRORS}, tags=["batches"])
async def stop_batch(request: HttpRequest, batch_id: int) -> Any:
    """No more rows start; the rows' replays still queued, at work or paused are stopped."""
    batch = await _own_batch(request, batch_id)
    await batches.stop(batch)
    return await _state_now(batch)


@api.post("/batches/{batch_id}/retry", response={200: BatchOut, **ERRORS}, tags=["batches"])
async def retry_batch(request: HttpRequest, batch_id: int) -> Any:
    """The rows that failed, were stopped or never started get a new replay."""
    batch = await _own_batch(request, batch_id)
    await sync_to_async(services.batch_retry_failed)(batch=batch)
    await batches.advance(batch.pk)
    return await _state_now(batch)


@api.get("/batches/{batch_id}/results.csv", response={200: str, **ERRORS}, tags=["batches"])
async def batch_results(request: HttpRequest, batch_id: int) -> HttpResponse:
    """The results as the batch page's download: a line per row."""

    def read() -> str:
        return results_csv(selectors.batch_get(user=request.user, id=batch_id))

    return HttpResponse(await sync_to_async(read)(), content_type="text/csv; charset=utf-8")


async def _state_now(batch: Batch) -> dict[str, Any]:
    """The batch's state as it is now (read again: a stop or retry changed it)."""
    fresh = await Batch.objects.select_related("scenario").aget(pk=batch.pk)
    return await sync_to_async(selectors.batch_state)(batch=fresh)


async def _own_batch(request: HttpRequest, batch_id: int) -> Batch:
    batch = await sync_to_async(selectors.batch_get)(user=request.user, id=batch_id)
    if batch.owner_id != request.user.pk:
        raise ApiError(403, "forbidden", "only the batch's owner can do that")
    return batch


# -- schedules ---------------------------------------------------------------------------


class ScheduleIn(Schema):
    cron: str = Field(description="minute hour day month weekday, e.g. 0 7 * * 1-5")
    timezone: str = Field("UTC", description="an IANA time zone, e.g. Europe/Paris")
    params: dict[str, str] | None = Field(None, description="a replay's parameter values")
    rows: list[dict[str, Any]] | None = Field(None, description="or a batch's rows")
    concurrency: int = 2
    base_url: str = ""
    webhook_url: str = ""
    emails: str = Field("", description="addresses told when a firing ends badly, comma-separated")
    enabled: bool = True


class SchedulePatch(Schema):
    cron: str | None = None
    timezone: str | None = None
    params: dict[str, str] | None = None
    rows: list[dict[str, Any]] | None = None
    concurrency: int | None = None
    base_url: str | None = None
    webhook_url: str | None = None
    emails: str | None = None
    enabled: bool | None = None


class FiringOut(Schema):
    id: int
    due_at: datetime
    outcome: str  # "" while it runs; ok, failed, needs_person, missed
    error: str
    missed: int
    run_id: int | None
    batch_id: int | None
    deliveries: list[dict[str, Any]]


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
    next: list[datetime]
    firings: list[FiringOut]


def _schedule_out(schedule: Schedule) -> dict[str, Any]:
    firings = schedule.firings.select_related("run", "batch").prefetch_related("deliveries")[:20]
    return {
        "id": schedule.pk, "scenario_id": schedule.scenario_id, "cron": schedule.cron,
        "description": schedules.describe(schedule.cron), "timezone": schedule.timezone,
        "enabled": schedule.enabled, "params": schedule.params, "rows": schedule.rows,
        "concurrency": schedule.concurrency, "base_url": schedule.base_url,
        "webhook_url": schedule.webhook_url, "webhook_secret": schedule.webhook_secret,
        "emails": schedule.emails, "next": schedules.upcoming(schedule),
        "firings": [{
            "id": f.pk, "due_at": f.due_at, "outcome": f.outcome, "error": f.error,
            "missed": f.missed, "run_id": f.run_id, "batch_id": f.batch_id,
            "deliveries": [{"id": d.pk, "url": d.url, "status": d.status,
                            "attempts": d.attempts, "log": d.log}
                           for d in f.deliveries.all()],
        } for f in firings],
    }  # fmt: skip


def _checked_schedule(scenario: Any, fields: dict[str, Any]) -> dict[str, Any]:
    enabled = fields.pop("enabled", True)
    try:
        checked = schedules.check_schedule(scenario=scenario, **fields)
    except schedules.ScheduleInvalid as exc:
        raise ApiError(400, exc.code, exc.message, exc.hint,
                       fields={exc.field: exc.message}) from None  # fmt: skip
    return {**checked, "enabled": enabled}


@api.get("/schedules", response={200: list[ScheduleOut], **ERRORS}, tags=["schedules"])
async def list_schedules(request: HttpRequest) -> list[dict[str, Any]]:
    """The token's owner's schedules."""

    def read() -> list[dict[str, Any]]:
        return [_schedule_out(s) for s in Schedule.objects.filter(owner=request.user)]

    return await sync_to_async(read)()


@api.post("/scenarios/{scenario_id}/schedules", response={201: ScheduleOut, **ERRORS},
          tags=["schedules"])  # fmt: skip
async def create_schedule(request: HttpRequest, scenario_id: int, body: ScheduleIn) -> Any:
    """Replay the scenario (``params``) or run a batch of it (``rows``) at the times of
    ``cron`` in ``timezone``; ``webhook_url`` and ``emails`` are told when one ends badly."""

    def make() -> dict[str, Any]:
        scenario = selectors.scenario_get(user=request.user, id=scenario_id)
        if scenario.owner_id != request.user.pk:
            raise ApiError(403, "forbidden", "only the scenario's owner can schedule it")
        fields = _checked_schedule(scenario, body.model_dump())
        schedule = schedules.save(Schedule(owner=request.user, scenario=scenario), **fields)
        return _schedule_out(schedule)

    return Status(201, await sync_to_async(make)())


@api.get("/schedules/{schedule_id}", response={200: ScheduleOut, **ERRORS}, tags=["schedules"])
async def read_schedule(request: HttpRequest, schedule_id: int) -> Any:
    """The schedule, its next times and its latest firings with their webhook deliveries."""
    return await sync_to_async(lambda: _schedule_out(_own_schedule(request, schedule_id)))()


@api.patch("/schedules/{schedule_id}", response={200: ScheduleOut, **ERRORS}, tags=["schedules"])
async def edit_schedule(request: HttpRequest, schedule_id: int, body: SchedulePatch) -> Any:
    """Change what is given; the rest stays. Giving ``params`` makes it a replay again,
    ``rows`` a batch."""

    def edit() -> dict[str, Any]:
        schedule = _own_schedule(request, schedule_id)
        given = body.model_dump(exclude_unset=True)
        fields = {
            "cron": schedule.cron, "timezone": schedule.timezone,
            "params": schedule.params if schedule.rows is None else None,
            "rows": schedule.rows, "concurrency": schedule.concurrency,
            "base_url": schedule.base_url, "webhook_url": schedule.webhook_url,
            "emails": schedule.emails, "enabled": schedule.enabled,
        }  # fmt: skip
        fields.update({key: value for key, value in given.items() if value is not None})
        if given.get("params") is not None:  # a replay again
            fields["rows"] = None
        if given.get("rows") is not None:  # a batch
            fields["params"] = None
        return _schedule_out(schedules.save(schedule, **_checked_schedule(schedule.scenario,
                                                                            fields)))  # fmt: skip

    return await sync_to_async(edit)()


@api.delete("/schedules/{schedule_id}", response={204: None, **ERRORS}, tags=["schedules"])
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
