"""Pages, forms, screenshots, the demo pages, the init command and the admin, over HTTP."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command
from django.db import connection
from django.http import HttpRequest
from django.test import AsyncClient, Client

from automation.events import ScreenshotTaken
from dashboard.models import Run, RunEvent, Step
from dashboard.runs import services
from dashboard.runs.sink import DashboardSink
from tests.dashboard.conftest import PASSWORD, Runs

JPEG = b"\xff\xd8\xff\xe0fake-but-served-as-is"


def make_run(owner: Any, *, task: str = "click OK", status: str = "succeeded") -> Run:
    run = services.run_create(owner=owner, task=task, start_url="", planner="rules")
    services.run_set_status(run_id=run.pk, status=status)
    return run


def add_screenshot(run: Run, media_root: Path, index: int = 0) -> Step:
    step = services.step_record(run_id=run.pk, data={"index": index, "action": "click"})
    relative = f"runs/{run.pk}/step-{index}.jpg"
    (media_root / relative).parent.mkdir(parents=True, exist_ok=True)
    (media_root / relative).write_bytes(JPEG)
    services.step_attach_screenshot(run_id=run.pk, index=index, path=relative)
    return step


def logged_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def initial_events(html: str) -> list[dict[str, Any]]:
    match = re.search(
        r'<script id="initial-events" type="application/json">(.*?)</script>', html, re.DOTALL
    )
    assert match, "no initial-events json_script on the page"
    return json.loads(match.group(1))


# -- who may see what ---------------------------------------------------------------------


@pytest.mark.django_db
def test_pages_and_screenshots_need_a_login(client: Client, owner: Any, media_root: Path) -> None:
    run = make_run(owner)
    add_screenshot(run, media_root)
    for url in ("/", f"/runs/{run.pk}/", f"/runs/{run.pk}/screenshots/0.jpg"):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"] == f"/accounts/login/?next={url}"


@pytest.mark.django_db
def test_new_run_without_a_login_goes_to_the_login_page(client: Client) -> None:
    response = client.post("/runs/new", {"task": "click OK", "planner": "rules"})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/"
    assert client.get(response["Location"]).status_code == 200
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_login_form_logs_in_and_lands_on_the_run_list(client: Client, owner: Any) -> None:
    response = client.post(
        "/accounts/login/", {"username": "olive", "password": PASSWORD}, follow=True
    )
    assert response.redirect_chain[-1] == ("/", 302)
    assert b"New conversation" in response.content
    bad = Client().post("/accounts/login/", {"username": "olive", "password": "wrong"})
    assert bad.status_code == 200 and b"didn't match" in bad.content


@pytest.mark.django_db
def test_users_see_only_their_own_runs_and_screenshots(
    owner: Any, stranger: Any, media_root: Path
) -> None:
    mine = make_run(owner, task="mine: click OK")
    theirs = make_run(stranger, task="theirs: click Cancel")
    add_screenshot(mine, media_root)
    add_screenshot(theirs, media_root)
    client = logged_in(owner)

    listing = client.get("/").content.decode()
    assert "mine: click OK" in listing and "theirs: click Cancel" not in listing
    assert client.get(f"/runs/{mine.pk}/").status_code == 200
    shot = client.get(f"/runs/{mine.pk}/screenshots/0.jpg")
    assert shot.status_code == 200
    assert shot["Content-Type"] == "image/jpeg"
    assert b"".join(shot.streaming_content) == JPEG

    assert client.get(f"/runs/{theirs.pk}/").status_code == 404
    assert client.get(f"/runs/{theirs.pk}/screenshots/0.jpg").status_code == 404
    assert client.get("/runs/999999/").status_code == 404


@pytest.mark.django_db
def test_staff_see_every_run_but_cannot_command_others(
    owner: Any, stranger: Any, staff: Any, media_root: Path
) -> None:
    runs = [make_run(owner, task="olive's task"), make_run(stranger, task="sam's task")]
    add_screenshot(runs[1], media_root)
    client = logged_in(staff)
    listing = client.get("/").content.decode()
    assert "olive&#x27;s task" in listing and "sam&#x27;s task" in listing
    detail = client.get(f"/runs/{runs[0].pk}/")
    assert detail.status_code == 200
    assert b'id="controls"' not in detail.content  # watching, not commanding
    assert b'id="reply"' not in detail.content
    assert client.get(f"/runs/{runs[1].pk}/screenshots/0.jpg").status_code == 200
    own = logged_in(owner).get(f"/runs/{runs[0].pk}/")
    assert b'id="controls"' in own.content and b'id="reply"' in own.content


@pytest.mark.django_db
def test_screenshot_404_for_missing_or_escaping_files(owner: Any, media_root: Path) -> None:
    run = make_run(owner)
    add_screenshot(run, media_root, index=0)
    services.step_record(run_id=run.pk, data={"index": 1, "action": "click"})  # none taken
    services.step_record(run_id=run.pk, data={"index": 2, "action": "click"})
    (media_root.parent / "secret.jpg").write_bytes(b"not yours")
    services.step_attach_screenshot(run_id=run.pk, index=2, path="../secret.jpg")
    Step.objects.filter(run=run, index=0).update(screenshot=f"runs/{run.pk}/gone.jpg")
    client = logged_in(owner)
    for index in (0, 1, 2, 3):
        assert client.get(f"/runs/{run.pk}/screenshots/{index}.jpg").status_code == 404, index


# -- the new-run form ---------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "data:text/html,<h1>hi</h1>",
        "chrome://settings",
        "JavaScript:alert(1)",
    ],
)
def test_new_run_refuses_non_web_start_urls(owner: Any, url: str) -> None:
    response = logged_in(owner).post(
        "/runs/new", {"start_url": url, "task": "click OK", "planner": "rules"}
    )
    assert response.status_code == 400
    scheme = url.split(":", 1)[0].lower()
    assert response.context["form"].errors["start_url"] == [
        f"refused URL {url!r}: {scheme}: is not allowed "
        "(only http:// and https:// URLs can be opened)"
    ]
    assert "only http:// and https:// URLs can be opened" in response.content.decode()
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_new_run_refuses_private_and_blocked_addresses(owner: Any, settings: Any) -> None:
    settings.TABWRIGHT = {
        **settings.TABWRIGHT,
        "BLOCK_PRIVATE_ADDRESSES": True,
        "BLOCKED_DOMAINS": ("evil.example",),
    }
    client = logged_in(owner)
    for url, reason in (
        ("http://169.254.169.254/latest/meta-data", "cloud metadata"),
        ("http://10.1.2.3/admin", "private"),
        ("https://shop.evil.example/", "blocked list"),
    ):
        response = client.post("/runs/new", {"start_url": url, "task": "look", "planner": "rules"})
        assert response.status_code == 400
        assert reason in response.context["form"].errors["start_url"][0]
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_new_run_needs_a_task_and_a_known_planner(owner: Any) -> None:
    client = logged_in(owner)
    response = client.post("/runs/new", {"start_url": "", "task": "", "planner": "rules"})
    assert response.status_code == 400 and "task" in response.context["form"].errors
    response = client.post("/runs/new", {"task": "click OK", "planner": "gpt-9"})
    assert response.status_code == 400 and "planner" in response.context["form"].errors
    assert not Run.objects.exists()


@pytest.mark.django_db(transaction=True)
async def test_new_run_form_creates_and_starts_a_run(
    runs: Runs, worker: Any, owner: Any, fixture_url: str
) -> None:
    client = AsyncClient()
    await client.aforce_login(owner)
    response = await client.post(
        "/runs/new",
        {
            "start_url": f"  {fixture_url}/demo/form.html ",
            "task": "wait for Sign up",
            "planner": "rules",
        },
    )
    run = await sync_to_async(Run.objects.get)(owner=owner)
    assert response.status_code == 302
    assert response["Location"] == f"/runs/{run.pk}/"
    assert run.start_url == f"{fixture_url}/demo/form.html"
    assert (run.task, run.planner) == ("wait for Sign up", "rules")
    await runs.claimed(run.pk)  # queued, then claimed by the worker the form woke
    await runs.manager.wait(run.pk)
    run = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert run.status == Run.Status.SUCCEEDED, run.status_reason


# -- the run page -------------------------------------------------------------------------


@pytest.mark.django_db
def test_run_page_embeds_the_stored_events(owner: Any) -> None:
    run = make_run(owner, status="paused")
    events = [
        (1, "run.started", {"type": "run.started", "task": "click OK"}),
        (2, "llm.message", {"type": "llm.message", "round": 1, "text": "</script><b>x</b>"}),
        (3, "run.paused", {"type": "run.paused", "reason": "need_help", "detail": "which?"}),
    ]
    for seq, kind, data in reversed(events):
        services.run_event_append(run_id=run.pk, seq=seq, type=kind, data=data)
    RunEvent.objects.create(run=make_run(owner), seq=1, type="run.started", data={})  # not ours

    response = logged_in(owner).get(f"/runs/{run.pk}/")
    html = response.content.decode()
    assert initial_events(html) == [{**data, "seq": seq} for seq, _, data in events]
    assert "</script><b>" not in html  # escaped inside the JSON
    assert f'id="run" data-run-id="{run.pk}"' in html and "<script>" not in html
    assert 'id="status"' in html and ">paused<" in html


# -- demo pages ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_demo_pages_only_with_debug(client: Client, settings: Any) -> None:
    settings.DEBUG = True
    page = client.get("/demo/form.html")
    assert page.status_code == 200
    assert b"<title>Sign up</title>" in b"".join(page.streaming_content)
    index = client.get("/demo/")
    assert index.status_code == 200
    assert b"Tabwright demo pages" in b"".join(index.streaming_content)
    for escape in ("/demo/../../manage.py", "/demo/%2e%2e/%2e%2e/manage.py"):
        assert client.get(escape).status_code in (400, 404), escape

    settings.DEBUG = False
    assert client.get("/demo/form.html").status_code == 404
    assert client.get("/demo/").status_code == 404


@pytest.mark.django_db
def test_the_favicon_is_an_icon_for_everyone(client: Client, owner: Any) -> None:
    """Browsers ask for /favicon.ico on every page (the admin's too), logged in or not."""
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200
    assert icon["Content-Type"].startswith("image/")
    assert b"".join(icon.streaming_content).startswith(b"\x00\x00\x01\x00")  # an ICO file
    assert "max-age=86400" in icon["Cache-Control"]
    assert client.post("/favicon.ico").status_code == 405
    page = logged_in(owner).get("/").content.decode()
    assert '<link rel="icon" href="/static/dashboard/favicon.ico">' in page


@pytest.mark.django_db
def test_run_list_offers_the_demo_only_with_debug(owner: Any, settings: Any) -> None:
    client = logged_in(owner)
    settings.DEBUG = True
    form = client.get("/").context["form"]
    assert form.initial["start_url"] == "http://testserver/demo/form.html"
    assert "click Sign up" in form.initial["task"]
    settings.DEBUG = False
    assert client.get("/").context["form"].initial == {}


# -- tabwright_init -----------------------------------------------------------------------


@pytest.mark.django_db
def test_tabwright_init_creates_the_admin_once(owner: Any) -> None:
    out = StringIO()
    call_command("tabwright_init", stdout=out)
    text = out.getvalue()
    match = re.search(r"password: (\S+)", text)
    assert match, text
    assert "username: admin" in text
    admin = authenticate(HttpRequest(), username="admin", password=match.group(1))
    assert admin is not None and admin.is_superuser and admin.is_staff

    again = StringIO()
    call_command("tabwright_init", stdout=again)
    assert "password" not in again.getvalue()
    assert get_user_model().objects.filter(is_superuser=True).count() == 1
    assert authenticate(HttpRequest(), username="admin", password=match.group(1)) is not None


@pytest.mark.django_db
@pytest.mark.skipif(
    connection.vendor != "sqlite",
    reason="a database server's runs are closed by their leases (runs/test_leases.py)",
)
def test_tabwright_init_closes_runs_that_were_live(owner: Any, django_user_model: Any) -> None:
    django_user_model.objects.create_superuser("root", password=PASSWORD)
    live = {s: make_run(owner, status=s) for s in ("pending", "running", "paused")}
    done = {s: make_run(owner, status=s) for s in ("succeeded", "failed", "stopped")}
    out = StringIO()
    call_command("tabwright_init", stdout=out)
    assert "Closed 3 run(s)" in out.getvalue()
    assert "password" not in out.getvalue()  # an admin existed already
    for status, run in live.items():
        run.refresh_from_db()
        if status == "pending":  # claimed, not started: nothing of it ran
            assert (run.status, run.finished_at) == ("queued", None)
            continue
        assert run.status == "failed"
        assert run.status_reason.startswith("interrupted")
        assert run.finished_at is not None
    for status, run in done.items():
        run.refresh_from_db()
        assert (run.status, run.status_reason) == (status, "")

    quiet = StringIO()
    call_command("tabwright_init", stdout=quiet)
    assert quiet.getvalue() == ""


# -- admin --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_admin_changelists_load(admin_client: Client, owner: Any) -> None:
    run = make_run(owner, task="admin sees this task")
    services.step_record(
        run_id=run.pk, data={"index": 0, "action": "click", "role": "button", "name": "OK"}
    )
    services.run_event_append(run_id=run.pk, seq=1, type="run.started", data={})
    for url, needle in [
        ("/admin/dashboard/run/", "admin sees this task"),
        ("/admin/dashboard/step/", "OK"),
        ("/admin/dashboard/runevent/", "run.started"),
        (f"/admin/dashboard/run/{run.pk}/change/", "admin sees this task"),
        ("/admin/dashboard/run/?q=admin+sees", "admin sees this task"),
        ("/admin/dashboard/step/?q=OK", "OK"),
    ]:
        response = admin_client.get(url)
        assert response.status_code == 200, url
        assert needle in response.content.decode(), url


@pytest.mark.django_db
def test_admin_is_closed_to_non_staff(owner: Any) -> None:
    response = logged_in(owner).get("/admin/dashboard/run/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


@pytest.mark.django_db
def test_new_run_form_defaults_to_the_configured_planner(client, owner, settings) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "PLANNER": "openai"}
    client.force_login(owner)
    page = client.get("/").content.decode()
    assert '<option value="openai" selected>' in page
    settings.TABWRIGHT = {**settings.TABWRIGHT, "PLANNER": "rules"}
    page = client.get("/").content.decode()
    assert '<option value="rules" selected>' in page


@pytest.mark.django_db(transaction=True)
def test_screenshots_go_to_and_come_from_the_configured_storage(
    owner: Any, media_root: Path, settings: Any, tmp_path: Path
) -> None:
    """STORAGES["default"] decides where pictures live (a folder every process shares, or
    any other backend); the run's writer and the screenshot view both go through it."""
    shared = tmp_path / "shared-files"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(shared)},
        },
    }
    run = make_run(owner)
    services.step_record(run_id=run.pk, data={"index": 0, "action": "click"})
    sink = DashboardSink(run.pk, 0)
    for picture in (b"first try", JPEG):  # the step tried again: its picture replaced
        async_to_sync(sink.emit)(ScreenshotTaken(0, picture))
    stored = Step.objects.get(run=run, index=0).screenshot
    assert stored == f"runs/{run.pk}/step-0.jpg"
    assert (shared / stored).read_bytes() == JPEG and not (media_root / stored).exists()
    shot = logged_in(owner).get(f"/runs/{run.pk}/screenshots/0.jpg")
    assert shot.status_code == 200 and b"".join(shot.streaming_content) == JPEG
