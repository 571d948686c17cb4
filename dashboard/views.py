from __future__ import annotations

from pathlib import Path

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django.views.static import serve

from dashboard import selectors, services
from dashboard.forms import NewRunForm
from dashboard.runner import runner

DEMO_TASK = """type Ada Lovelace into Name
type ada@example.org into Email
click Sign up
wait for Welcome, Ada Lovelace!"""


@login_required
def run_list(request: HttpRequest) -> HttpResponse:
    initial = {}
    if settings.DEBUG:
        initial = {"start_url": request.build_absolute_uri("/demo/form.html"), "task": DEMO_TASK}
    return _run_list_page(request, NewRunForm(initial=initial))


def _run_list_page(request: HttpRequest, form: NewRunForm, *, status: int = 200) -> HttpResponse:
    runs = selectors.run_list(user=request.user)[:200]
    return render(request, "runs/list.html", {"runs": runs, "form": form}, status=status)


@require_POST
async def run_new(request: HttpRequest) -> HttpResponse:
    user = await request.auser()
    if not user.is_authenticated:
        return redirect_to_login("/")
    form = NewRunForm(request.POST)
    if not form.is_valid():
        # Rendering reads request.user and the runs from the database: sync-only.
        return await sync_to_async(_run_list_page)(request, form, status=400)
    run = await sync_to_async(services.run_create)(owner=user, **form.cleaned_data)
    await runner.start(run.pk)
    return redirect("run_detail", run_id=run.pk)


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
        },
    )


@login_required
def run_screenshot(request: HttpRequest, run_id: int, index: int) -> FileResponse:
    run = selectors.run_get(user=request.user, id=run_id)
    step = run.steps.filter(index=index).first()
    if step is None or not step.screenshot:
        raise Http404("no screenshot")
    path = (Path(settings.MEDIA_ROOT) / step.screenshot).resolve()
    if not path.is_relative_to(Path(settings.MEDIA_ROOT).resolve()) or not path.is_file():
        raise Http404("no screenshot")
    return FileResponse(path.open("rb"), content_type="image/jpeg")


def demo(request: HttpRequest, path: str) -> HttpResponse:
    """The fixture pages, for the offline demo; only with DEBUG on."""
    if not settings.DEBUG:
        raise Http404("the demo pages are served only with DEBUG on")
    return serve(request, path or "index.html", document_root=settings.FIXTURES_DIR / "demo")
