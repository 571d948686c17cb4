"""Batch pages: start a batch from a scenario's page, follow it (the page polls its state),
stop it, retry its failed rows, download its results as CSV."""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from automation.errors import ScenarioInvalid
from dashboard.jobs import batches, services
from dashboard.jobs import selectors as job_selectors
from dashboard.jobs.forms import BatchForm
from dashboard.models import Batch
from dashboard.runs.services import stopped_by
from dashboard.scenarios import selectors as scenario_selectors
from dashboard.scenarios.detail import detail_page  # the page the form is on


@require_POST
async def batch_new(request: HttpRequest, scenario_id: int) -> HttpResponse:
    user = await request.auser()
    if not user.is_authenticated:
        return redirect_to_login(request.path)
    batch = await sync_to_async(_batch_from_form)(request, user, scenario_id)
    if isinstance(batch, HttpResponse):  # refused: the scenario page says why
        return batch
    await batches.advance(batch.pk)
    return redirect("batch_detail", batch_id=batch.pk)


def _batch_from_form(request: HttpRequest, user: Any, scenario_id: int) -> Batch | HttpResponse:
    scenario = scenario_selectors.scenario_get(user=user, id=scenario_id)
    if scenario.owner_id != user.pk:
        raise Http404("no such scenario of yours")
    document = scenario_selectors.scenario_document(scenario=scenario)
    form = BatchForm(request.POST, request.FILES, document=document, user=user)
    if not form.is_valid():
        request.user = user
        return detail_page(request, scenario, bound={"batch": form}, status=400)
    upload = request.FILES["file"]
    return services.batch_create(
        owner=user, scenario=scenario, rows=form.cleaned_data["file"],
        base_url=form.cleaned_data["base_url"], concurrency=form.cleaned_data["concurrency"],
        source=upload.name or "", signin_profile_id=_profile_id(form),
        llm_profile=form.cleaned_data.get("llm_profile"),
    )  # fmt: skip


def _profile_id(form: BatchForm) -> int | None:
    profile = form.cleaned_data.get("signin_profile")
    return profile.pk if profile is not None else None


@login_required
@require_safe
def batch_detail(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = job_selectors.batch_get(user=request.user, id=batch_id)
    state = job_selectors.batch_state(batch=batch)
    params = sorted({name for row in state["rows"] for name in row["params"]})
    is_owner = batch.owner_id == request.user.pk
    counts = state["progress"]["counts"]
    can_retry = bool(counts["failed"] or counts["stopped"] or counts["skipped"])
    context = {"batch": batch, "state": state, "is_owner": is_owner, "params": params,
               "can_retry": can_retry}  # fmt: skip
    return render(request, "batches/detail.html", context)


@login_required
@require_safe
def batch_state_json(request: HttpRequest, batch_id: int) -> JsonResponse:
    batch = job_selectors.batch_get(user=request.user, id=batch_id)
    return JsonResponse(job_selectors.batch_state(batch=batch))


@require_POST
async def batch_stop(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = await _owned(request, batch_id)
    await batches.stop(batch, stopped_by(await request.auser()))
    return redirect("batch_detail", batch_id=batch.pk)


@require_POST
async def batch_retry(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = await _owned(request, batch_id)
    if await sync_to_async(_retry)(request, batch):
        await batches.advance(batch.pk)
    return redirect("batch_detail", batch_id=batch.pk)


def _retry(request: HttpRequest, batch: Batch) -> bool:
    """Its failed rows wait again; else the batch page says why not."""
    try:
        services.batch_retry_failed(batch=batch)
    except ScenarioInvalid as exc:
        messages.error(request, f"The failed rows were not tried again: {exc}")
        return False
    return True


async def _owned(request: HttpRequest, batch_id: int) -> Batch:
    user = await request.auser()
    if not user.is_authenticated:
        raise Http404("log in first")
    batch = await sync_to_async(job_selectors.batch_get)(user=user, id=batch_id)
    if batch.owner_id != user.pk:
        raise Http404("no such batch of yours")
    return batch


@login_required
@require_safe
def batch_results(request: HttpRequest, batch_id: int) -> HttpResponse:
    """One line per row: its values, status, attempts, run, reason and output (JSON)."""
    batch = job_selectors.batch_get(user=request.user, id=batch_id)
    response = HttpResponse(results_csv(batch), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="batch-{batch.pk}-results.csv"'
    return response


RESULT_COLUMNS = ("status", "attempts", "run", "seconds", "reason", "output")


def results_csv(batch: Batch) -> str:
    """A line per row: its number, its values (a column for each parameter), then the columns of
    :data:`RESULT_COLUMNS`.  A column of the row's own whose name a parameter has is written
    ``result <name>``: two columns of one name would be read as one (a ``status``
    parameter's value taken for the row's status)."""
    rows = job_selectors.batch_rows(batch=batch)
    params = sorted({name for row in rows for name in row["params"]})
    taken = set(params)
    ours = [f"result {name}" if name in taken else name for name in ("row", *RESULT_COLUMNS)]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([ours[0], *params, *ours[1:]])
    for row in rows:
        output = "" if row["output"] is None else json.dumps(row["output"], ensure_ascii=False)
        writer.writerow([
            row["index"], *(_cell(row["params"].get(name, "")) for name in params),
            row["status"], row["attempts"], row["run_id"] or "", row["seconds"] or "",
            _cell(row["reason"]), _cell(output),
        ])  # fmt: skip
    return out.getvalue()


# What a spreadsheet may read as the start of a formula (CSV injection).  A cell's first
# character is compared in its NFKC form: the fullwidth equals, plus, minus and at signs
# (U+FF1D, U+FF0B, U+FF0D, U+FF20) and the small ones (U+FE66, U+FE62, U+FE63, U+FE6B),
# formula starts in some locales' spreadsheets, fold to these.
FORMULA_STARTS = frozenset("=+-@\t\r")


def _cell(value: str) -> str:
    """A value a spreadsheet will not run as a formula: one that starts like a formula is
    prefixed with an apostrophe, which spreadsheets read as "this is text"."""
    first = unicodedata.normalize("NFKC", value[:1])[:1]
    return "'" + value if first in FORMULA_STARTS else value
