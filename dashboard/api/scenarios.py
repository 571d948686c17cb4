"""The JSON API's scenarios: list, export, import, save a run as one, replay, set the
login scenario, delete."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest
from ninja import Router, Schema, Status
from pydantic import BaseModel, ConfigDict, Field

from automation.errors import ScenarioInvalid
from automation.recording import fromrun
from automation.recording.takes import replay_takes
from dashboard.api.common import ERRORS, ApiError, BodyIn, ErrorOut, ParamValues
from dashboard.api.runs import RunOut, heal_model_named, run_out, signin_of
from dashboard.jobs import batches
from dashboard.models import Run
from dashboard.runs import selectors as run_selectors
from dashboard.runs.doorbell import wake
from dashboard.scenarios import call_services, selectors, services
from dashboard.scenarios.forms import ReplayForm

router = Router()


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


class ReplayIn(BodyIn):
    base_url: str = Field("", max_length=2000, description="where it runs (default: recorded)")
    params: ParamValues = {}
    signin_profile: str = Field(
        "", max_length=100, description="a sign-in profile's name: the replay starts signed in"
    )
    llm_profile: str = Field(
        "", max_length=100, description="an LLM profile's name: the model that may reach a "
        "step's intent when its recorded element is gone (none: such a step needs a person)",
    )  # fmt: skip


# -- scenarios --------------------------------------------------------------------------


def _scenario_out(scenario: Any) -> dict[str, Any]:
    return {
        "id": scenario.pk, "name": scenario.name, "description": scenario.description,
        "base_url": scenario.base_url, "step_count": getattr(scenario, "step_count", 0),
        "created_at": scenario.created_at, "updated_at": scenario.updated_at,
    }  # fmt: skip


@router.get("/scenarios", response={200: list[ScenarioOut], **ERRORS}, tags=["scenarios"])
async def list_scenarios(request: HttpRequest, q: str = "") -> list[dict[str, Any]]:
    """The scenarios the token's owner may see (``q``: in the name, description or URL)."""

    def read() -> list[dict[str, Any]]:
        return [_scenario_out(s) for s in selectors.scenario_list(user=request.user, q=q)]

    return await sync_to_async(read)()


@router.get(
    "/scenarios/{scenario_id}", response={200: dict[str, Any], **ERRORS}, tags=["scenarios"]
)
async def export_scenario(request: HttpRequest, scenario_id: int) -> dict[str, Any]:
    """The scenario in its file format (what the page's JSON export writes)."""

    def read() -> dict[str, Any]:
        scenario = selectors.scenario_get(user=request.user, id=scenario_id)
        return selectors.scenario_document(scenario=scenario).to_dict()

    return await sync_to_async(read)()


class SaveRunIn(BodyIn):
    name: str = Field(
        "", max_length=200, description="the scenario's name (default: the run's title, each "
        "password the run typed masked; a name holding one is refused)"
    )  # fmt: skip
    keep: list[int] = Field([], description="failed steps to keep, by index (their effect seen)")
    checks: list[int] | None = Field(
        None, description="the proposed checks to add, by position (default: those the save "
        "page ticks); GET /api/runs/{id}/proposals lists them"
    )  # fmt: skip
    stretches: list[int] = Field(
        [], description="a conversation's requests to save, by number from 1 (default: all)"
    )


class ProposalOut(Schema):
    position: int
    check: str  # the check in words
    why: str
    picked: bool  # ticked on the save page to begin with


@router.get(
    "/runs/{run_id}/proposals", response={200: list[ProposalOut], **ERRORS}, tags=["scenarios"]
)
async def run_proposals(request: HttpRequest, run_id: int) -> list[dict[str, Any]]:
    """The checks the run proposes for a scenario saved from it, as its save page lists them."""

    def read() -> list[dict[str, Any]]:
        run = run_selectors.run_get(user=request.user, id=run_id)
        return [
            {"position": i, "check": p.check.describe(), "why": p.why, "picked": p.picked}
            for i, (_, p) in enumerate(run_selectors.run_proposed_checks(run=run))
        ]

    return await sync_to_async(read)()


@router.post(
    "/runs/{run_id}/scenario",
    response={201: ScenarioOut, **ERRORS, 403: ErrorOut, 409: ErrorOut},
    tags=["scenarios"],
)
async def save_run_as_scenario(request: HttpRequest, run_id: int, body: SaveRunIn) -> Status[Any]:
    """Save the run as a scenario, as its "Save as scenario" page does: the steps that ran,
    the failed ones in ``keep``, the proposed ``checks``; nothing is stored if it can't be
    (409 ``refused`` while the run has not ended)."""

    def save() -> dict[str, Any]:
        run = run_selectors.run_get(user=request.user, id=run_id)
        if run.owner_id != request.user.pk:
            raise ApiError(403, "forbidden", "only the run's owner can save it as a scenario")
        _keepable(run, body.keep)
        requests = len(run_selectors.run_requests(run=run))
        unknown = [n for n in body.stretches if not 1 <= n <= requests]
        if unknown:
            raise ApiError(400, "invalid", f"no request {unknown[0]} in this run (its "
                           f"requests are 1 to {requests})",
                           fields={"stretches": "out of range"})  # fmt: skip
        proposals = run_selectors.run_proposed_checks(run=run)
        checks = body.checks
        if checks is None:  # the picked ones, of the requests saved
            saved = set(body.stretches)
            checks = [i for i, (stretch, p) in enumerate(proposals)
                      if p.picked and (not saved or stretch in saved)]  # fmt: skip
        wrong = [i for i in checks if not 0 <= i < len(proposals)]
        if wrong:
            raise ApiError(400, "invalid", f"no proposed check {wrong[0]} (there are "
                           f"{len(proposals)})", fields={"checks": "out of range"})  # fmt: skip
        try:
            scenario = services.scenario_from_run(
                owner=request.user, run=run, name=body.name,
                keep=body.keep, checks=checks, stretches=body.stretches,
            )  # fmt: skip
        except services.RunAtWork as exc:  # not now: a command that does not apply yet
            raise ApiError(409, "refused", exc.message, exc.hint) from None
        except ScenarioInvalid as exc:
            raise ApiError(400, exc.code, exc.message, exc.hint) from None
        return _scenario_out(selectors.scenario_list(user=request.user).get(pk=scenario.pk))

    return Status(201, await sync_to_async(save)())


def _keepable(run: Run, keep: list[int]) -> None:
    """Each step ``keep`` names is one the save page offers to keep (a failed step whose
    element is known); ApiError naming the first that is not."""
    if not keep:
        return
    rows = run_selectors.run_step_rows(run=run)
    typed = run_selectors.run_typed_passwords(run=run, rows=rows)
    words = typed.found_in([run.task, *run_selectors.run_requests(run=run)])
    keepable = sorted(p.index for p in fromrun.plan(rows, passwords=words) if p.keepable)
    wrong = [index for index in keep if index not in keepable]
    if wrong:
        raise ApiError(400, "invalid", f"step {wrong[0]} is not a failed step to keep",
                       "failed steps it may keep: " + (", ".join(map(str, keepable)) or "none"),
                       {"keep": f"step {wrong[0]} can't be kept"})  # fmt: skip


@router.post("/scenarios", response={201: ScenarioOut, **ERRORS, 409: ErrorOut}, tags=["scenarios"])
async def import_scenario(request: HttpRequest, body: ScenarioFileIn) -> Status[Any]:
    """A scenario from its file format (as exported), with the scenarios it calls that it
    brings; nothing is stored if it can't be read, 409 ``callee_clash`` when one of those
    has the name of another scenario of yours."""

    def save() -> dict[str, Any]:
        try:
            scenario = services.scenario_import(owner=request.user, data=body.model_extra)
        except call_services.CalleeClash as exc:
            raise ApiError(409, exc.code, exc.message, exc.hint) from None
        except ScenarioInvalid as exc:
            raise ApiError(400, exc.code, exc.message, exc.hint) from None
        return _scenario_out(selectors.scenario_list(user=request.user).get(pk=scenario.pk))

    return Status(201, await sync_to_async(save)())


@router.post(
    "/scenarios/{scenario_id}/replays", response={201: RunOut, **ERRORS}, tags=["scenarios"]
)
async def replay_scenario(
    request: HttpRequest, scenario_id: int, body: ReplayIn
) -> Status[dict[str, Any]]:
    """Replay the scenario (a run of kind ``replay``, queued until a worker claims it) with
    its parameters (its login scenario's too, used if it signs in again); a parameter it
    does not take, or one of its own without a default left out, is refused before
    anything runs."""
    run = await sync_to_async(_replay_from_body)(request.user, scenario_id, body)
    await wake()
    return Status(201, run_out(run))


def _replay_from_body(user: AbstractBaseUser, scenario_id: int, body: ReplayIn) -> Run:
    scenario = selectors.scenario_get(user=user, id=scenario_id)
    document = selectors.scenario_document(scenario=scenario)
    takes = replay_takes(document)  # its login scenario's too, needed if it signs in again
    known = set(takes)
    unknown = sorted(set(body.params) - known)
    if unknown:
        raise ApiError(400, "invalid", f"the scenario has no parameter {unknown[0]}",
                       f"its parameters: {', '.join(sorted(known)) or 'none'}",
                       {f"params.{name}": "unknown parameter" for name in unknown})  # fmt: skip
    data = {"base_url": body.base_url or document.base_url}
    if heal_model := heal_model_named(body.llm_profile):
        data["llm_profile"] = str(heal_model.pk)
    for name, taken in takes.items():
        # As a batch's row takes it: a value given empty (or null) takes the default.
        value = body.params.get(name) or (None if taken.login else taken.default)
        if value is not None:
            data[f"param_{name}"] = value
    form = ReplayForm(data, document=document)
    if not form.is_valid():
        fields = {("params." + n.removeprefix("param_") if n.startswith("param_") else n):
                  " ".join(errors) for n, errors in form.errors.items()}  # fmt: skip
        raise ApiError(400, "invalid", "the replay can't start as asked", fields=fields)
    profile = signin_of(user, body.signin_profile)
    return services.replay_run_create(
        owner=user, scenario=scenario, base_url=form.cleaned_data["base_url"],
        params=form.params(), signin_profile_id=profile.pk if profile else None,
        llm_profile_id=form.llm_profile_id(),
    )  # fmt: skip


class LoginIn(BodyIn):
    login_scenario: str = Field(
        "", max_length=200, description="the name of another scenario of yours that signs "
        "in again when a replay meets a sign-in page; empty: none",
    )  # fmt: skip


@router.put(
    "/scenarios/{scenario_id}/login", response={200: dict[str, Any], **ERRORS, 403: ErrorOut},
    tags=["scenarios"],
)  # fmt: skip
async def set_login(request: HttpRequest, scenario_id: int, body: LoginIn) -> dict[str, Any]:
    """Name (or, empty, forget) the scenario's login scenario; answers the scenario file."""

    def save() -> dict[str, Any]:
        scenario = _own_scenario(request.user, scenario_id)
        try:
            call_services.login_set(scenario=scenario, name=body.login_scenario.strip())
        except ScenarioInvalid as exc:
            raise ApiError(400, exc.code, exc.message, exc.hint,
                           {"login_scenario": exc.message}) from None  # fmt: skip
        scenario.refresh_from_db()
        return selectors.scenario_document(scenario=scenario).to_dict()

    return await sync_to_async(save)()


@router.delete(
    "/scenarios/{scenario_id}", response={204: None, **ERRORS, 403: ErrorOut, 409: ErrorOut},
    tags=["scenarios"],
)  # fmt: skip
async def delete_scenario(request: HttpRequest, scenario_id: int) -> Any:
    """Delete the scenario (its runs stay; its batches' replays still at work are
    stopped); 409 ``scenario_called`` naming the scenarios that call it or sign in with
    it (their login scenario), while any does."""

    def delete() -> list[int]:
        scenario = _own_scenario(request.user, scenario_id)
        try:
            return services.scenario_delete(scenario=scenario)
        except call_services.ScenarioCalled as exc:
            raise ApiError(409, exc.code, exc.message, exc.hint) from None

    await batches.scenario_deleted(await sync_to_async(delete)(), request.user)
    return Status(204, None)


def _own_scenario(user: AbstractBaseUser, scenario_id: int) -> Any:
    scenario = selectors.scenario_get(user=user, id=scenario_id)
    if scenario.owner_id != user.pk:
        raise ApiError(403, "forbidden", "only the scenario's owner can change it")
    return scenario
