"""The JSON API's interruption handlers (dashboard.scenarios.handlers): a scenario's, read
and replaced whole; those a replay proposed, listed and kept."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest
from ninja import Router, Schema, Status
from pydantic import Field

from automation.errors import ScenarioInvalid
from dashboard.api.common import ERRORS, ApiError, BodyIn, ErrorOut
from dashboard.models import Scenario
from dashboard.runs import selectors as run_selectors
from dashboard.scenarios import handlers, selectors

router = Router()


class HandlersIn(BodyIn):
    handlers: list[Any] = Field(
        description="each {name, when: an element identity, steps: [scenario steps]}"
    )


class LearnIn(BodyIn):
    seq: int = Field(description="the proposal's event (GET /api/runs/{id}/handlers)")
    name: str = Field("", max_length=100, description="its name (default: the proposed one)")


class ProposalOut(Schema):
    seq: int
    index: int
    name: str
    steps: list[str]
    kept: bool


def _owned(user: AbstractBaseUser, scenario_id: int) -> Scenario:
    scenario = selectors.scenario_get(user=user, id=scenario_id)
    if scenario.owner_id != user.pk:
        raise ApiError(403, "forbidden", "only the scenario's owner can change its handlers")
    return scenario


@router.get("/scenarios/{scenario_id}/handlers", response={200: list[dict[str, Any]], **ERRORS},
            tags=["scenarios"])  # fmt: skip
async def list_handlers(request: HttpRequest, scenario_id: int) -> list[dict[str, Any]]:
    """The scenario's interruption handlers, as its file format writes them."""

    def read() -> list[dict[str, Any]]:
        scenario = selectors.scenario_get(user=request.user, id=scenario_id)
        return [h.to_dict() for h in handlers.scenario_handlers(scenario=scenario)]

    return await sync_to_async(read)()


@router.put(
    "/scenarios/{scenario_id}/handlers",
    response={200: list[dict[str, Any]], **ERRORS, 403: ErrorOut},
    tags=["scenarios"],
)
async def set_handlers(
    request: HttpRequest, scenario_id: int, body: HandlersIn
) -> list[dict[str, Any]]:
    """Replace the scenario's handlers; one that can't be used refuses them all
    (``handler_invalid``, naming it) and nothing changes."""

    def write() -> list[dict[str, Any]]:
        scenario = _owned(request.user, scenario_id)
        try:
            kept = handlers.scenario_handlers_set(scenario=scenario, handlers=body.handlers)
        except ScenarioInvalid as exc:
            raise ApiError(400, exc.code, exc.message, exc.hint) from None
        return [h.to_dict() for h in kept]

    return await sync_to_async(write)()


@router.get("/runs/{run_id}/handlers", response={200: list[ProposalOut], **ERRORS},
            tags=["scenarios"])  # fmt: skip
async def run_proposed_handlers(request: HttpRequest, run_id: int) -> list[dict[str, Any]]:
    """The handlers a replay proposed where a person cleared an interruption."""

    def read() -> list[dict[str, Any]]:
        run = run_selectors.run_get(user=request.user, id=run_id)
        return [vars(p) for p in handlers.run_handler_proposals(run=run)]

    return await sync_to_async(read)()


@router.post("/runs/{run_id}/handlers", response={201: dict[str, Any], **ERRORS, 403: ErrorOut},
             tags=["scenarios"])  # fmt: skip
async def keep_proposed_handler(request: HttpRequest, run_id: int, body: LearnIn) -> Status[Any]:
    """Keep a proposed handler on the run's scenario ("handle this from now on")."""

    def write() -> dict[str, Any]:
        run = run_selectors.run_get(user=request.user, id=run_id)
        if run.scenario_id is None:
            raise ApiError(400, "invalid", f"run {run.pk} replays no scenario")
        _owned(request.user, run.scenario_id)
        try:
            _, handler = handlers.scenario_handler_learn(run=run, seq=body.seq, name=body.name)
        except ScenarioInvalid as exc:
            raise ApiError(400, exc.code, exc.message, exc.hint) from None
        return handler.to_dict()

    return Status(201, await sync_to_async(write)())
