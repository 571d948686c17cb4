"""The JSON API's runs: list, start, read, follow the events; the run page's commands
(stop, message, pause, resume, reply, extend, close)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest
from ninja import Router, Schema, Status
from pydantic import Field

from automation import Budget
from automation.errors import BudgetExceeded
from dashboard.api.common import ERRORS, MAX_EVENTS, MAX_LIST, ApiError, BodyIn, ErrorOut
from dashboard.engineconf import heal_model_problem
from dashboard.models import LLMProfile, Run, SigninProfile, Step
from dashboard.runs import selectors, services
from dashboard.runs.carry import COMMAND_ANSWER_MS, carry, command_where_it_runs
from dashboard.runs.doorbell import wake
from dashboard.runs.forms import PROFILE_PREFIX, NewRunForm
from dashboard.runs.messages import signin_message
from dashboard.runs.runner import MAX_EXTEND_ROUNDS, runner
from dashboard.runs.signins import SigninRefused, signin_by_name

router = Router()


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
    signin_profile_id: int | None  # the sign-in profile it starts with
    params: dict[str, Any]
    summary: str
    output: Any
    prompt_tokens: int
    completion_tokens: int
    created_at: datetime
    finished_at: datetime | None
    # The worker that holds the run (its name, as its log says it), or last held it: null
    # before a worker claimed it; held_until: while one vouches for it (its lease).
    worker: str | None
    held_until: datetime | None
    # A conversation's tab: open (kept between messages), closed (a message restores it);
    # "" for other runs.
    session: str
    url: str  # the run's page
    steps: list[StepOut] | None = None  # in GET /runs/{id} only


class RunIn(BodyIn):
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
    signin_profile: str = Field(
        "", max_length=100, description="a sign-in profile's name: the run starts signed in"
    )


class EventsOut(Schema):
    events: list[dict[str, Any]]
    last_seq: int  # ask again with after=last_seq for what came since


def run_out(run: Run, steps: list[Step] | None = None) -> dict[str, Any]:
    return {
        "id": run.pk, "kind": run.kind, "status": run.status,
        "status_reason": run.status_reason, "task": run.task, "start_url": run.start_url,
        "planner": run.planner, "scenario_id": run.scenario_id, "params": run.params,
        "signin_profile_id": run.signin_profile_id,
        "summary": run.summary, "output": run.output, "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens, "created_at": run.created_at,
        "finished_at": run.finished_at, "worker": run.worker_name or None,
        "held_until": run.lease_until, "session": run.session, "url": f"/runs/{run.pk}/",
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


# -- runs -------------------------------------------------------------------------------


@router.get("/runs", response={200: list[RunOut], **ERRORS}, tags=["runs"])
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
        return [run_out(run) for run in runs]

    return await sync_to_async(read)()


@router.post("/runs", response={201: RunOut, **ERRORS}, tags=["runs"])
async def start_run(request: HttpRequest, body: RunIn) -> Status[dict[str, Any]]:
    """Start a run (queued until a worker claims it), as the new-run form does."""
    run = await sync_to_async(_run_from_body)(request.user, body)
    await wake()
    return Status(201, run_out(run))


def _run_from_body(user: AbstractBaseUser, body: RunIn) -> Run:
    """The same checks as the page's form (dashboard.runs.forms.NewRunForm), field by field."""
    planner = body.planner
    if profile := llm_profile_named(body.llm_profile):
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
    profile = signin_of(user, body.signin_profile)
    return services.run_create(owner=user, signin_profile=profile, **form.cleaned_data)


def llm_profile_named(name: str) -> LLMProfile | None:
    """The LLM profile ``name``, or a 400 naming those there are; None for no name."""
    if not name:
        return None
    profile = LLMProfile.objects.filter(name=name).first()
    if profile is None:
        names = list(LLMProfile.objects.order_by("name").values_list("name", flat=True))
        there = ", ".join(map(repr, names)) if names else "none (an admin adds them)"
        raise ApiError(400, "invalid", f"no LLM profile {name!r}",
                       hint=f"the profiles there are: {there}",
                       fields={"llm_profile": "no such profile"})  # fmt: skip
    return profile


def heal_model_named(name: str) -> LLMProfile | None:
    """The LLM profile ``name`` as the model for changed pages of a replay, a batch or a
    schedule: a 400 naming those there are when there is none of that name, or saying why
    its key can't be read on this server; None for no name."""
    profile = llm_profile_named(name)
    if problem := heal_model_problem(profile):
        raise ApiError(400, "invalid", problem,
                       hint="choose another model, or none, or ask an admin to fix the profile",
                       fields={"llm_profile": problem})  # fmt: skip
    return profile


def signin_of(user: AbstractBaseUser, name: str) -> SigninProfile | None:
    """The sign-in profile ``name`` that ``user`` may start runs with (their own first),
    or a 400 naming those there are; None for no name."""
    try:
        return signin_by_name(user, name)
    except SigninRefused as exc:
        raise ApiError(400, "invalid", exc.message, hint=exc.hint,
                       fields={"signin_profile": "no such profile"}) from None  # fmt: skip


class SigninIn(BodyIn):
    name: str = Field(min_length=1, max_length=100, description="the profile's name")


class SigninOut(Schema):
    profile: int
    name: str
    site: str
    cookies: int
    origins: int


@router.post("/runs/{run_id}/signin", response={201: SigninOut, **ERRORS, 403: ErrorOut,
             409: ErrorOut, 503: ErrorOut}, tags=["runs"])  # fmt: skip
async def save_signin(request: HttpRequest, run_id: int, body: SigninIn) -> Status[Any]:
    """Save the signed-in state of the live run's tab (cookies and each origin's storage)
    as the owner's sign-in profile ``name``, encrypted; saved again over one of that
    name.  Only its name, site and counts come back, never the state."""
    run = await sync_to_async(selectors.run_get)(user=request.user, id=run_id)
    if run.owner_id != request.user.pk:
        raise ApiError(403, "forbidden", "only the run's owner can save its sign-in")
    wait = Budget(COMMAND_ANSWER_MS, label="saving the sign-in")
    got = await carry(signin_message(run_id, body.name), wait)
    error = got.get("error")
    if error is None:
        return Status(201, got["answer"])
    if error["kind"] == "lookup":
        raise ApiError(409, "not_live", "the run's tab is not open")
    code = str(error.get("code", "refused"))
    status = 400 if error["kind"] == "invalid" else 503 if code == "unreachable" else 409
    raise ApiError(status, code, str(error.get("message", "")), str(error.get("hint", "")))


@router.get("/runs/{run_id}", response={200: RunOut, **ERRORS}, tags=["runs"])
async def read_run(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """The run, with its recorded steps."""

    def read() -> dict[str, Any]:
        run = selectors.run_get(user=request.user, id=run_id)
        return run_out(run, list(run.steps.all()))

    return await sync_to_async(read)()


@router.get("/runs/{run_id}/events", response={200: EventsOut, **ERRORS}, tags=["runs"])
async def run_events(request: HttpRequest, run_id: int, after: int = 0) -> Any:
    """The run's stored events after the sequence number ``after`` (at most 1,000 a call),
    as its page gets them."""
    if not 0 <= after < 2**63:  # (past 64 bits no database takes it)
        raise ApiError(400, "invalid", "after is a sequence number, 0 to 2**63 - 1",
                       fields={"after": "negative" if after < 0 else "too large"})  # fmt: skip

    def read() -> dict[str, Any]:
        run = selectors.run_get(user=request.user, id=run_id)
        events = selectors.run_events(run_id=run.pk, after_seq=after, limit=MAX_EVENTS)
        return {"events": events, "last_seq": events[-1]["seq"] if events else after}

    return await sync_to_async(read)()


class TextIn(BodyIn):
    text: str = Field(min_length=1, max_length=20_000, description="what the person writes")


class ExtendIn(BodyIn):
    rounds: int = Field(ge=1, le=MAX_EXTEND_ROUNDS,
                       description="how many more rounds past the round cap")  # fmt: skip


async def _command(request: HttpRequest, run_id: int, command: str, text: str = "",
                   rounds: int = 0, *, wait: Budget | None = None) -> None:  # fmt: skip
    """Carry a command of the run page's to the run, wherever it runs, as its owner
    (within ``wait``, else COMMAND_ANSWER_MS): 409 ``not_live`` when nothing holds it, 409
    ``refused`` (saying why) when it does not apply now, 400 for a bad request, 503
    ``unreachable`` when the worker holding it can't be reached (the channel layer is
    down)."""
    run = await sync_to_async(selectors.run_get)(user=request.user, id=run_id)
    if run.owner_id != request.user.pk:
        raise ApiError(403, "forbidden", f"only the run's owner can {command} it")
    got = await command_where_it_runs(run_id, command, text, rounds, wait=wait)
    error = got.get("error")
    if error is None:
        return
    message = str(error.get("message", ""))
    if error["kind"] == "lookup":
        raise ApiError(409, "not_live", "the run is not live any more")
    if error["kind"] == "value":
        raise ApiError(409, "refused", message)
    if error["kind"] == "invalid":
        raise ApiError(400, str(error.get("code", "invalid")), message, str(error.get("hint", "")))
    code = str(error.get("code", "refused"))
    if code == "unreachable":  # the channel layer is down (Redis restarting)
        raise ApiError(503, code, message, str(error.get("hint", "")))
    raise ApiError(409, code, message, str(error.get("hint", "")))


async def _now(run_id: int) -> dict[str, Any]:
    return run_out(await sync_to_async(Run.objects.get)(pk=run_id))


async def _within(wait: Budget, done: Awaitable[None]) -> None:
    """Await ``done`` (the run's work ended, its tab closed: here; elsewhere the answer
    came once the command was asked) for what is left of ``wait``, and no longer: the
    answer is then the run as it is (a work that ignores its stop, a browser that does
    not answer its close, must not hold the request)."""
    with contextlib.suppress(BudgetExceeded):
        await wait.run(done)


COMMAND_ERRORS = {**ERRORS, 403: ErrorOut, 409: ErrorOut, 503: ErrorOut}


@router.post("/runs/{run_id}/stop", response={200: RunOut, **COMMAND_ERRORS}, tags=["runs"])
async def stop_run(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """Stop the run's work (queued or live) and answer it as it is then: ended, or, when
    its work has not ended within COMMAND_ANSWER_MS of the request (the stop carried to
    it included), still live (the stop goes on); 409 when it is not live, or when
    nothing is at work (a conversation waiting for its next message)."""
    wait = Budget(COMMAND_ANSWER_MS, label="stop")
    await _command(request, run_id, "stop", services.stopped_by(request.user), wait=wait)
    await _within(wait, runner.wait(run_id))
    return await _now(run_id)


@router.post("/runs/{run_id}/messages", response={200: RunOut, **COMMAND_ERRORS}, tags=["runs"])
async def message_run(request: HttpRequest, run_id: int, body: TextIn) -> dict[str, Any]:
    """Write to a conversation, as the page's composer does: while it works, the model
    reads it next; while it waits, its work goes on with it; when its tab was closed, the
    page is restored first.  A paused run takes it as the answer to its question."""
    await _command(request, run_id, "message", body.text)
    return await _now(run_id)


@router.post("/runs/{run_id}/pause", response={200: RunOut, **COMMAND_ERRORS}, tags=["runs"])
async def pause_run(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """Pause the run's work at its next step (409 ``refused`` when nothing is at work)."""
    await _command(request, run_id, "pause")
    return await _now(run_id)


@router.post("/runs/{run_id}/resume", response={200: RunOut, **COMMAND_ERRORS}, tags=["runs"])
async def resume_run(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """Resume a paused run."""
    await _command(request, run_id, "resume")
    return await _now(run_id)


@router.post("/runs/{run_id}/reply", response={200: RunOut, **COMMAND_ERRORS}, tags=["runs"])
async def reply_run(request: HttpRequest, run_id: int, body: TextIn) -> dict[str, Any]:
    """Answer a paused run's question (for a replay: ``retry`` or ``skip``) and resume it."""
    await _command(request, run_id, "reply", body.text)
    return await _now(run_id)


@router.post("/runs/{run_id}/extend", response={200: RunOut, **COMMAND_ERRORS}, tags=["runs"])
async def extend_run(request: HttpRequest, run_id: int, body: ExtendIn) -> dict[str, Any]:
    """Give a run stopped at its round cap ``rounds`` more rounds, and resume it."""
    await _command(request, run_id, "extend", rounds=body.rounds)
    return await _now(run_id)


@router.post("/runs/{run_id}/close", response={200: RunOut, **COMMAND_ERRORS}, tags=["runs"])
async def close_run(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """Close a conversation's tab (a later message restores the page) and answer the run
    as it is then: its tab closed (``session`` closed), or, when it has not closed within
    COMMAND_ANSWER_MS of the request, still open (the close goes on).  An MCP session
    closed so ends stopped, saying by whom (its client is told the same)."""
    wait = Budget(COMMAND_ANSWER_MS, label="close")
    await _command(request, run_id, "close", services.stopped_by(request.user), wait=wait)
    await _within(wait, runner.wait_closed(run_id))
    return await _now(run_id)
