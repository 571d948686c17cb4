from __future__ import annotations

import hmac
import json
import time
from datetime import timedelta

from asgiref.sync import sync_to_async
from csp.decorators import csp_exempt
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import SuspiciousFileOperation
from django.core.files.storage import storages
from django.core.paginator import Paginator
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    QueryDict,
)
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST, require_safe
from django.views.static import serve

from automation import Budget
from automation.errors import ActionInvalid
from automation.metrics import REGISTRY
from dashboard.lib import jsonin, looplag
from dashboard.lib.jsonin import JsonRefused
from dashboard.models import Run
from dashboard.runs import files as runfiles
from dashboard.runs import selectors, services
from dashboard.runs.carry import COMMAND_ANSWER_MS, carry
from dashboard.runs.doorbell import wake
from dashboard.runs.forms import NewRunForm, RunFilterForm, act_request
from dashboard.runs.messages import act_message, signin_message
from dashboard.runs.runner import runner

DEMO_TASK = """type Ada Lovelace into Name
type ada@example.org into Email
click Sign up
wait for Welcome, Ada Lovelace!"""
# The same demo for a model: in plain words, not the rule planner's commands.
DEMO_TASK_LLM = (
    "Sign up as Ada Lovelace with the email ada@example.org, "
    "then check that the page welcomes her by name."
)


@login_required
@require_safe
def run_list(request: HttpRequest) -> HttpResponse:
    form = NewRunForm(initial={}, user=request.user)
    if settings.DEBUG:
        form.initial["start_url"] = request.build_absolute_uri("/demo/form.html")
        form.follow_planner(demo={"rules": DEMO_TASK, "llm": DEMO_TASK_LLM})
    else:
        form.follow_planner()
    return _run_list_page(request, form)


RUNS_PER_PAGE = 25


def _run_list_page(request: HttpRequest, form: NewRunForm, *, status: int = 200) -> HttpResponse:
    """The new-run form and the run history.  The history's filters come from the query
    string: a bad value is shown as a form error and left out, never a failed page."""
    filters = RunFilterForm(request.GET, user=request.user)
    filters.is_valid()
    chosen = filters.filters()
    runs = selectors.run_list(user=request.user, **chosen)
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    for run in page:
        run.duration_label = duration_label(run.duration)
    hidden = 0  # the empty MCP sessions left out, said under the list with a link to them
    if chosen["hide_empty_mcp"]:
        every = selectors.run_list(user=request.user, **{**chosen, "hide_empty_mcp": False})
        hidden = every.count() - page.paginator.count
    context = {
        "form": form,
        "filters": filters,
        "page": page,
        "page_links": page.paginator.get_elided_page_range(page.number, on_each_side=2),
        "runs": page.object_list,
        "hidden_mcp": hidden,
        "show_owner": request.user.is_staff,
    }
    return render(request, "runs/list.html", context, status=status)


def duration_label(duration: timedelta | None) -> str:
    """``850 ms``, ``42 s``, ``3 min 05 s``, ``2 h 07 min``; empty while a run goes on."""
    if duration is None:
        return ""
    total_s = int(duration.total_seconds())
    if total_s < 1:
        return f"{max(0, int(duration.total_seconds() * 1000))} ms"
    if total_s < 60:
        return f"{total_s} s"
    minutes, seconds = divmod(total_s, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


@require_POST
async def run_new(request: HttpRequest) -> HttpResponse:
    user = await request.auser()
    if not user.is_authenticated:
        return redirect_to_login("/")
    # The form reads the LLM profiles, and rendering reads the runs: sync-only.
    form, run = await sync_to_async(_run_from_form)(request.POST, user)
    if run is None:
        return await sync_to_async(_run_list_page)(request, form, status=400)
    await wake()  # a worker claims it (dashboard/worker.py)
    return redirect("run_detail", run_id=run.pk)


def _run_from_form(data: QueryDict, user: AbstractBaseUser) -> tuple[NewRunForm, Run | None]:
    form = NewRunForm(data, user=user)
    if not form.is_valid():
        form.follow_planner()
        return form, None
    return form, services.run_create(owner=user, **form.cleaned_data)


@login_required
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_get(user=request.user, id=run_id)
    events = selectors.run_events(run_id=run.pk)
    return render(
        request,
        "runs/detail.html",
        {
            "run": run,
            "steps": run.steps.all(),
            "events": events,
            "is_owner": run.owner_id == request.user.pk,
            "output_json": json.dumps(run.output, ensure_ascii=False, indent=2),
            "files": [file.to_dict(run.pk) for file in runfiles.files_of(run.pk)],
            # The page counts a wait on the model from the server's clock, not its own.
            "server_now_ms": int(time.time() * 1000),
            # Interruption handlers its scenario keeps (the run page's proposals say so).
            "kept_handlers_json": json.dumps(
                [h.get("name") for h in run.scenario.handlers] if run.scenario else []
            ),
        },
    )


@login_required
def run_screenshot(request: HttpRequest, run_id: int, index: int) -> FileResponse:
    run = selectors.run_get(user=request.user, id=run_id)
    step = run.steps.filter(index=index).first()
    if step is None or not step.screenshot:
        raise Http404("no screenshot")
    try:  # wherever the storage keeps it (MEDIA_ROOT unless configured)
        handle = storages["default"].open(step.screenshot, "rb")
    except (OSError, SuspiciousFileOperation):
        raise Http404("no screenshot") from None
    return FileResponse(handle, content_type="image/jpeg")


@require_safe
@login_required
def run_file(request: HttpRequest, run_id: int, kind: str, name: str = "") -> FileResponse:
    """A download of the run's tabs, or its trace: always as an attachment of an opaque
    type (a page chose the name and the bytes), from storage wherever a worker kept it."""
    run = selectors.run_get(user=request.user, id=run_id)
    name = name or runfiles.TRACE_NAME
    try:
        handle = runfiles.open_file(run.pk, kind, name)
    except OSError:
        raise Http404("no such file of this run") from None
    return FileResponse(
        handle, as_attachment=True, filename=name, content_type="application/octet-stream"
    )


@require_safe
@login_required
def run_output(request: HttpRequest, run_id: int) -> HttpResponse:
    """The data the run ended in, as a JSON file to download."""
    run = selectors.run_get(user=request.user, id=run_id)
    if run.output is None:
        raise Http404("this run has no output")
    body = json.dumps(run.output, ensure_ascii=False, indent=2) + "\n"
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-output.json"'
    return response


MAX_ACT_BODY_BYTES = jsonin.MAX_COMMAND_BYTES


@require_POST
async def run_act(request: HttpRequest, run_id: int) -> JsonResponse:
    """One action on a paused run's tab: ``{"action", "args", "timeout_ms"}`` in, and
    ``{"ok": true, "result"}`` or ``{"ok": false, "error": {code, message, hint}}`` out.
    A ``{"steps": [...]}`` macro also gets each step's outcome (``steps``) and, when one
    failed, ``"ok": false`` with ``failed_index`` and that step's error.

    ``timeout_ms`` is the budget of the whole request, down to the script in the page; a
    client that hangs up cancels the action (Django cancels the view).
    """
    asker = await sync_to_async(_asker)(request, run_id)
    if asker == "anonymous":
        return _act_error(401, "login_required", "log in first")
    if asker == "stranger":
        return _act_error(404, "not_found", "no such run of yours")
    try:
        body = jsonin.loads(
            request.body or b"null",
            max_bytes=MAX_ACT_BODY_BYTES,
            max_values=jsonin.MAX_COMMAND_VALUES,
        )
        action, args, timeout_ms = act_request(body)
    except JsonRefused as exc:
        return _act_error(413 if exc.code == "too_large" else 400, exc.code, exc.message)
    except ActionInvalid as exc:
        return JsonResponse({"ok": False, "error": exc.to_dict()}, status=400)
    budget = Budget(timeout_ms, label=action)
    # Here, or at the worker in another process that holds the run.
    got = await carry(act_message(run_id, action, args), budget)
    error = got.get("error")
    if error is None:
        return JsonResponse(got["answer"])
    if error["kind"] == "lookup":
        return _act_error(409, "not_live", "the run is not live")
    # A bad action, or not now (the agent has the tab): the request's fault, 400.
    status = 400 if error["kind"] in ("invalid", "value") else 200
    body = {key: error.get(key, "") for key in ("code", "message", "hint")}
    return JsonResponse({"ok": False, "error": body}, status=status)


@require_POST
async def run_save_signin(request: HttpRequest, run_id: int) -> HttpResponse:
    """Save the signed-in state of the run's tab as the person's sign-in profile named in
    the form (dashboard.runs.signins), wherever the run lives; back to the run's page,
    which says what was saved or why not."""
    user = await request.auser()
    if not user.is_authenticated:
        return redirect_to_login(request.path)
    if not await Run.objects.filter(pk=run_id, owner=user).aexists():
        raise Http404("no such run of yours")
    name = str(request.POST.get("name", ""))
    got = await carry(signin_message(run_id, name), Budget(COMMAND_ANSWER_MS, label="saving"))
    error = got.get("error")
    if error is None:
        saved = got["answer"]
        messages.success(request, f"Sign-in saved as {saved['name']!r} ({saved['cookies']} "
                         f"cookies, {saved['origins']} origins with storage).")  # fmt: skip
    elif error["kind"] == "lookup":
        messages.error(request, "The sign-in can't be saved: the run's tab is not open.")
    else:
        messages.error(request, f"The sign-in was not saved: {error['message']}")
    return redirect("run_detail", run_id=run_id)


def _asker(request: HttpRequest, run_id: int) -> str:
    """Who asks about run ``run_id``: "anonymous", "stranger" or "owner".  The session,
    its user and the run are read here at once, on the request's thread: one trip there
    and back rather than one per query, the fixed cost of every act call."""
    user = request.user
    if not user.is_authenticated:
        return "anonymous"
    return "owner" if Run.objects.filter(pk=run_id, owner=user).exists() else "stranger"


def _act_error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse(
        {"ok": False, "error": {"code": code, "message": message, "hint": ""}}, status=status
    )


@csp_exempt()  # test pages for the agent, with inline scripts: not the dashboard's own
def demo(request: HttpRequest, path: str) -> HttpResponse:
    """The fixture pages, for the offline demo; only with DEBUG on."""
    if not settings.DEBUG:
        raise Http404("the demo pages are served only with DEBUG on")
    return serve(request, path or "index.html", document_root=settings.FIXTURES_DIR / "demo")


METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@require_GET
@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    """The engine's counters and a few dashboard gauges, in the Prometheus text format."""
    if not (request.user.is_authenticated or _metrics_token_ok(request)):
        # A 401, not the login redirect the pages use: a scraper can't follow a login.
        response = HttpResponse(
            "log in, or send Authorization: Bearer <token>\n",
            status=401,
            content_type="text/plain; charset=utf-8",
        )
        response["WWW-Authenticate"] = 'Bearer realm="tabwright metrics"'
        return response
    return HttpResponse(REGISTRY.render() + _dashboard_gauges(), content_type=METRICS_CONTENT_TYPE)


def _metrics_token_ok(request: HttpRequest) -> bool:
    expected = settings.TABWRIGHT["METRICS_TOKEN"]
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    # Both must be non-empty: an unset token must never match a blank bearer.
    if not expected or not token or scheme.lower() != "bearer":
        return False
    # Bytes, so a non-ASCII token is simply wrong rather than a TypeError; constant time, so
    # the response time doesn't reveal how much of the token matched.
    return hmac.compare_digest(token.encode(), expected.encode())


def _dashboard_gauges() -> str:
    evaluate_enabled = int(bool(settings.TABWRIGHT["ALLOW_EVALUATE"]))
    watch = looplag.watching()
    lag = watch.stats() if watch is not None else looplag.Stats(0.0, 0.0, 0)
    return (
        "# HELP tabwright_runs_live Runs this dashboard process is driving now.\n"
        "# TYPE tabwright_runs_live gauge\n"
        f"tabwright_runs_live {runner.live_count}\n"
        "# HELP tabwright_runs_queued Runs waiting for a worker with room (all workers).\n"
        "# TYPE tabwright_runs_queued gauge\n"
        f"tabwright_runs_queued {Run.objects.filter(status=Run.Status.QUEUED).count()}\n"
        "# HELP tabwright_sessions_idle Conversations whose tab is kept open for the next "
        "message.\n"
        "# TYPE tabwright_sessions_idle gauge\n"
        f"tabwright_sessions_idle {runner.idle_count}\n"
        "# HELP tabwright_browser_restarts_total Times the shared browser was started again.\n"
        "# TYPE tabwright_browser_restarts_total counter\n"
        f"tabwright_browser_restarts_total {runner.browser_restarts}\n"
        "# HELP tabwright_evaluate_enabled Whether the operator turned evaluate on (1) or not.\n"
        "# TYPE tabwright_evaluate_enabled gauge\n"
        f"tabwright_evaluate_enabled {evaluate_enabled}\n"
        "# HELP tabwright_loop_lag_p99_seconds How late this process's event loop ran, 99th "
        "percentile of the latest minute.\n"
        "# TYPE tabwright_loop_lag_p99_seconds gauge\n"
        f"tabwright_loop_lag_p99_seconds {lag.p99_ms / 1000:.4f}\n"
        "# HELP tabwright_loop_lag_max_seconds The latest the event loop ever ran.\n"
        "# TYPE tabwright_loop_lag_max_seconds gauge\n"
        f"tabwright_loop_lag_max_seconds {lag.max_ms / 1000:.4f}\n"
        "# HELP tabwright_loop_stalls_total Times the event loop was held past 250 ms "
        "(each logged with the code that held it).\n"
        "# TYPE tabwright_loop_stalls_total counter\n"
        f"tabwright_loop_stalls_total {lag.stalls}\n"
    )
