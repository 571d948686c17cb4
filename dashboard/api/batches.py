"""The JSON API's batches: start one, read, stop, retry the failed rows, the results."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, HttpResponse
from ninja import Router, Schema
from pydantic import Field

from automation.errors import ActionInvalid, SecretNotGranted, UrlBlocked
from automation.recording.takes import replay_takes
from dashboard.api.common import ERRORS, ApiError, BodyIn
from dashboard.api.runs import heal_model_named, signin_of
from dashboard.engineconf import base_url_checked
from dashboard.jobs import batches, services
from dashboard.jobs import selectors as job_selectors
from dashboard.jobs.batch_views import results_csv
from dashboard.jobs.batchfile import BatchFileInvalid, read_rows
from dashboard.jobs.services import MAX_BATCH_CONCURRENCY
from dashboard.lib.urls import UrlInvalid
from dashboard.models import Batch
from dashboard.runs.services import stopped_by
from dashboard.scenarios import selectors as scenario_selectors

router = Router()


# -- batches ----------------------------------------------------------------------------


class BatchIn(BodyIn):
    rows: list[dict[str, Any]] | None = Field(
        None, description="a list of objects of parameter values, one per replay"
    )
    csv: str | None = Field(None, description="or the same as CSV text with a header row")
    base_url: str = Field("", max_length=2000, description="where it runs (default: recorded)")
    concurrency: int = Field(2, description=f"rows at once, 1 to {MAX_BATCH_CONCURRENCY}")
    signin_profile: str = Field("", max_length=100, description="a sign-in profile's name")
    llm_profile: str = Field(
        "", max_length=100, description="an LLM profile's name: the model for changed pages "
        "of every row's replay (none: a step whose element is gone needs a person)",
    )  # fmt: skip


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
    llm_profile: str  # the model for changed pages ("": none; "… (deleted)" since)
    created_at: str
    finished_at: str | None
    progress: BatchProgress
    rows: list[BatchRowOut]


@router.post(
    "/scenarios/{scenario_id}/batches", response={201: BatchOut, **ERRORS}, tags=["batches"]
)
async def start_batch(request: HttpRequest, scenario_id: int, body: BatchIn) -> HttpResponse:
    """Replay the scenario once per row (``rows``, or ``csv`` text), ``concurrency`` rows
    at once; the columns must be its parameters (a missing or unknown one is refused,
    naming it, before anything runs)."""
    batch = await sync_to_async(_batch_from_body)(request.user, scenario_id, body)
    await batches.advance(batch.pk)
    return await _state_now(batch, status=201)


def _batch_from_body(user: AbstractBaseUser, scenario_id: int, body: BatchIn) -> Batch:
    scenario = scenario_selectors.scenario_get(user=user, id=scenario_id)
    if scenario.owner_id != user.pk:
        raise ApiError(403, "forbidden", "only the scenario's owner can run a batch of it")
    document = scenario_selectors.scenario_document(scenario=scenario)
    try:  # else every row would fail at once, saying so
        scenario_selectors.secrets_granted(owner=user, document=document)
    except SecretNotGranted as exc:
        raise ApiError(400, exc.code, exc.message, exc.hint) from None
    takes = replay_takes(document)
    if (body.rows is None) == (body.csv is None):
        raise ApiError(400, "invalid", "give the rows either as rows or as csv",
                       fields={"rows": "one of rows or csv"})  # fmt: skip
    try:
        if body.rows is not None:
            data = json.dumps(body.rows).encode()
            rows = read_rows(data, name="rows.json", takes=takes)
        else:
            rows = read_rows((body.csv or "").encode(), name="rows.csv", takes=takes)
    except BatchFileInvalid as exc:
        field = "rows" if body.rows is not None else "csv"
        raise ApiError(400, exc.code, exc.message, exc.hint, fields={field: exc.message}) from None
    base_url = body.base_url.strip() or document.base_url
    try:
        base_url = base_url_checked(base_url) if base_url else ""
    except (UrlInvalid, UrlBlocked) as exc:
        raise ApiError(400, "invalid", str(exc), fields={"base_url": str(exc)}) from None
    profile = signin_of(user, body.signin_profile)
    heal_model = heal_model_named(body.llm_profile)
    try:
        return services.batch_create(owner=user, scenario=scenario, rows=rows, base_url=base_url,
                                     concurrency=body.concurrency, source="api",
                                     signin_profile_id=profile.pk if profile else None,
                                     llm_profile=heal_model)  # fmt: skip
    except ActionInvalid as exc:
        raise ApiError(400, "invalid", exc.message, fields={"concurrency": exc.message}) from None


@router.get("/batches/{batch_id}", response={200: BatchOut, **ERRORS}, tags=["batches"])
async def read_batch(request: HttpRequest, batch_id: int) -> HttpResponse:
    """The batch: its progress and each row's status, run, reason and output."""
    return await _answer(lambda: job_selectors.batch_get(user=request.user, id=batch_id))


@router.post("/batches/{batch_id}/stop", response={200: BatchOut, **ERRORS}, tags=["batches"])
async def stop_batch(request: HttpRequest, batch_id: int) -> HttpResponse:
    """No more rows start; the rows' replays still queued, at work or paused are stopped."""
    batch = await _own_batch(request, batch_id)
    await batches.stop(batch, stopped_by(request.user))
    return await _state_now(batch)


@router.post("/batches/{batch_id}/retry", response={200: BatchOut, **ERRORS}, tags=["batches"])
async def retry_batch(request: HttpRequest, batch_id: int) -> HttpResponse:
    """The rows that failed, were stopped or never started get a new replay."""
    batch = await _own_batch(request, batch_id)
    await sync_to_async(services.batch_retry_failed)(batch=batch)
    await batches.advance(batch.pk)
    return await _state_now(batch)


@router.get("/batches/{batch_id}/results.csv", response={200: str, **ERRORS}, tags=["batches"])
async def batch_results(request: HttpRequest, batch_id: int) -> HttpResponse:
    """The results as the batch page's download: a line per row."""

    def read() -> str:
        return results_csv(job_selectors.batch_get(user=request.user, id=batch_id))

    return HttpResponse(await sync_to_async(read)(), content_type="text/csv; charset=utf-8")


async def _state_now(batch: Batch, status: int = 200) -> HttpResponse:
    """The batch's state as it is now (read again: a stop or retry changed it)."""
    return await _answer(lambda: Batch.objects.select_related("scenario").get(pk=batch.pk), status)


async def _answer(read: Callable[[], Batch], status: int = 200) -> HttpResponse:
    """The state of the batch ``read`` gives, checked against BatchOut and written as JSON
    in a worker thread, not by Ninja on the event loop: a batch has up to 10,000 rows, and
    checking and writing them takes hundreds of milliseconds that would hold up every
    page, socket and run of the process."""

    def render() -> HttpResponse:
        state = BatchOut.model_validate(job_selectors.batch_state(batch=read()))
        return HttpResponse(state.model_dump_json(), status=status,
                            content_type="application/json; charset=utf-8")  # fmt: skip

    return await sync_to_async(render)()


async def _own_batch(request: HttpRequest, batch_id: int) -> Batch:
    batch = await sync_to_async(job_selectors.batch_get)(user=request.user, id=batch_id)
    if batch.owner_id != request.user.pk:
        raise ApiError(403, "forbidden", "only the batch's owner can do that")
    return batch
