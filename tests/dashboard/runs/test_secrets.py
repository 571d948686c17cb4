"""Secrets in dashboard runs: granted per person, and never back in clear at any exit
(steps, events, page problems, screenshots' links, act answers, the JSON export)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from automation import Tab
from automation.errors import ScenarioInvalid
from automation.secrets import MASK
from dashboard.models import Run, Scenario, SecretGrant
from dashboard.runs import services as run_services
from dashboard.runs.runner import runner
from dashboard.scenarios import services
from tests.bounds import room
from tests.dashboard.conftest import Runs, ended

# Rollback transactions, but for the async tests: their database work runs in another
# thread (sync_to_async), which must see the rows.
pytestmark = pytest.mark.django_db

VALUE = "s3cr@t pw+1"  # a GET submit sends it as pw=s3cr%40t+pw%2B1
NEEDLE = "s3cr"  # in the value, however it is encoded

FORM = b"""<!doctype html><title>Login</title>
<form method="get" action="/done">
  <label>Password <input name="pw"></label> <button>Send</button>
</form>"""
# A sign-in whose form is sent by GET: what is typed into its password field reaches the
# address (some back offices do this), and from there every step, event and picture.
SIGN_IN = b"""<!doctype html><title>Sign in</title>
<form method="get" action="/done">
  <label>Password <input type="password" name="pw"></label> <button>Send</button>
</form>"""
DONE = b"""<!doctype html><title>Done</title><p id="out"></p>
<script>
  const pw = new URLSearchParams(location.search).get("pw");
  document.getElementById("out").textContent = "got " + pw;
  console.error("submitted " + location.search + " " + pw);
  fetch("/missing" + location.search);
</script>"""


class Site(BaseHTTPRequestHandler):
    hits: Counter[str] = Counter()

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        Site.hits[path] += 1
        body = {"/form": FORM, "/sign-in": SIGN_IN, "/done": DONE}.get(path)
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body or b"no")


@pytest.fixture
def site() -> Iterator[str]:
    Site.hits = Counter()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABWRIGHT_SECRET_PW", VALUE)


def grant(name: str, *users: Any) -> None:
    SecretGrant.objects.create(name=name).users.set(users)


def task(site: str) -> str:
    # The last line matches nothing: the run pauses there, with the submitted page open.
    return f"go to {site}/form\ntype ${{SECRET:PW}} into Password\nclick Send\nclick Nowhere"


async def status_of(run_id: int, wanted: set[str]) -> Run:
    while True:
        run = await sync_to_async(Run.objects.get)(pk=run_id)
        if run.status in wanted:
            return run
        await asyncio.sleep(0.1)


@pytest.mark.django_db(transaction=True)
async def test_a_granted_secret_never_comes_back_in_clear(
    runs: Runs, owner: Any, site: str, secret_env: None
) -> None:
    await sync_to_async(grant)("PW", owner)
    run = await runs.start(await runs.create(owner=owner, task=task(site)))
    await asyncio.wait_for(status_of(run.pk, {Run.Status.PAUSED}), 60)
    assert Site.hits["/done"] == 1  # the secret was submitted
    answer = await runner.act(run.pk, "read_page", {}, budget=room())
    text = json.dumps(answer)
    assert answer["ok"] and "got ${SECRET:PW}" in text and NEEDLE not in text
    await runner.command(run.pk, "stop")
    await runner.wait(run.pk)

    steps = await sync_to_async(list)(run.steps.order_by("index").values())
    assert NEEDLE not in json.dumps(steps, default=str)
    sent = next(s for s in steps if s["action"] == "click")
    assert "/done?pw=${SECRET:PW}" in sent["url"]
    events = await sync_to_async(list)(run.events.values_list("data", flat=True))
    assert NEEDLE not in json.dumps(events)
    problems = [e for e in events if e["type"] == "page.problem"]
    assert {"console", "request"} <= {p["kind"] for p in problems}
    shots = [e for e in events if e["type"] == "screenshot"]
    assert any("${SECRET:PW}" in s["url"] for s in shots)

    run = await Run.objects.aget(pk=run.pk)  # stopped
    scenario = await sync_to_async(services.scenario_from_run)(owner=owner, run=run, name="Login")
    client = AsyncClient()
    await client.aforce_login(owner)
    exported = await client.get(f"/scenarios/{scenario.pk}/export.json")
    assert exported.status_code == 200
    body = exported.content.decode()
    assert "${SECRET:PW}" in body and NEEDLE not in body


@pytest.mark.django_db(transaction=True)
async def test_a_run_naming_a_secret_not_granted_fails_before_any_page(
    runs: Runs, owner: Any, stranger: Any, site: str, secret_env: None
) -> None:
    await sync_to_async(grant)("PW", owner)
    run = await runs.start(await runs.create(owner=stranger, task=task(site)))
    await runner.wait(run.pk)
    run = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert run.status == Run.Status.FAILED
    assert "PW" in run.status_reason and "not granted" in run.status_reason
    assert NEEDLE not in run.status_reason
    assert sum(Site.hits.values()) == 0  # nothing reached the page, not even the form


@pytest.mark.django_db(transaction=True)
async def test_a_superuser_may_use_every_secret_and_groups_grant_too(
    django_user_model: Any, owner: Any
) -> None:
    from django.contrib.auth.models import Group

    root = await sync_to_async(django_user_model.objects.create_superuser)("root", password="x")
    assert await sync_to_async(SecretGrant.objects.names_for)(root) is None
    assert await sync_to_async(SecretGrant.objects.names_for)(owner) == frozenset()

    def by_group() -> frozenset[str] | None:
        team = Group.objects.create(name="shop")
        owner.groups.add(team)
        SecretGrant.objects.create(name="SHOP").groups.add(team)
        return SecretGrant.objects.names_for(owner)

    assert await sync_to_async(by_group)() == {"SHOP"}


async def paused_at_the_password(
    runs: Runs, owner: Any, task: str
) -> tuple[Run, Tab, dict[str, float]]:
    """The run of ``task`` (its last line matches nothing: it pauses for a person), its
    tab, and where the page's password field is on it."""
    run = await runs.start(await runs.create(owner=owner, task=task))
    await asyncio.wait_for(status_of(run.pk, {Run.Status.PAUSED}), 60)
    tab = runner._live[run.pk].current_tab()
    assert tab is not None
    box = await tab.page.locator("input[name=pw]").bounding_box()
    assert box is not None
    return run, tab, dict(box)


@pytest.mark.django_db(transaction=True)
async def test_a_persons_key_appended_to_a_secret_field_is_stored_as_the_secret(
    runs: Runs, owner: Any, site: str, secret_env: None
) -> None:
    await sync_to_async(grant)("PW", owner)
    typed = f"go to {site}/form\ntype ${{SECRET:PW}} into Password\nclick Nowhere"
    run, tab, box = await paused_at_the_password(runs, owner, typed)
    budget = room()
    end = {"kind": "click", "x": box["x"] + box["width"] - 4, "y": box["y"] + box["height"] / 2}
    await runner.person_input(run.pk, end, budget=budget)
    await runner.person_input(run.pk, {"kind": "key", "key": "End"}, budget=budget)
    await runner.person_input(run.pk, {"kind": "type", "text": "k"}, budget=budget)
    assert await tab.page.input_value("input[name=pw]") == VALUE + "k"
    await runner.command(run.pk, "stop")
    await runner.wait(run.pk)
    steps = await sync_to_async(list)(run.steps.order_by("index").values())
    assert NEEDLE not in json.dumps(steps, default=str)
    by_person = [s for s in steps if s["by"] == "person"]
    assert any("${SECRET:PW}k" in json.dumps(s["args"]) for s in by_person), by_person


@pytest.mark.django_db(transaction=True)
async def test_a_password_a_person_types_on_the_live_view_never_comes_back_in_clear(
    runs: Runs, owner: Any, site: str
) -> None:
    """The person signs in for the run (a password of their own, no secret of the
    server's) on a form sent by GET: the step names ${SECRET:PW}, and the password the
    address then carries is hidden everywhere the run shows it (it was in every step's
    address, the events, the pictures' links, the saved scenario's identities)."""
    typed = "Hand-Typed-Pw-4417"
    task = f"go to {site}/sign-in\nclick Nowhere"
    run, tab, box = await paused_at_the_password(runs, owner, task)
    budget = room()
    field = {"kind": "click", "x": box["x"] + 5, "y": box["y"] + box["height"] / 2}
    await runner.person_input(run.pk, field, budget=budget)
    for chunk in ("Hand-", "Typed-Pw", "-4417"):  # as the live view sends typing: in pieces
        await runner.person_input(run.pk, {"kind": "type", "text": chunk}, budget=budget)
    await runner.person_input(run.pk, {"kind": "key", "key": "Enter"}, budget=budget)
    await tab.page.wait_for_url("**/done?pw=*")
    assert typed in tab.page.url  # the page did put it in its address
    await runner.command(run.pk, "stop")
    await runner.wait(run.pk)
    steps = await sync_to_async(list)(run.steps.order_by("index").values())
    by_person = [s for s in steps if s["by"] == "person"]
    fills = [s["args"] for s in by_person if s["action"] == "fill"]
    assert fills == [{"value": "${SECRET:PW}"}], by_person
    events = await sync_to_async(list)(run.events.values_list("data", flat=True))
    for kept in (steps, events):
        text = json.dumps(kept, default=str)
        assert typed not in text and "Hand-Typed" not in text
    assert any("/done?pw=" in json.dumps(e) for e in events)  # the address, without it
    run = await Run.objects.aget(pk=run.pk)  # stopped
    scenario = await sync_to_async(services.scenario_from_run)(owner=owner, run=run, name="In")
    client = AsyncClient()
    await client.aforce_login(owner)
    exported = (await client.get(f"/scenarios/{scenario.pk}/export.json")).content.decode()
    assert "${SECRET:PW}" in exported and typed not in exported


@pytest.mark.django_db(transaction=True)
async def test_a_live_view_frame_carries_the_address_redacted(secret_env: None) -> None:
    from automation.browser.screencast import Frame
    from automation.secrets import Secrets
    from dashboard.runs.liveview import LiveView

    secrets = Secrets()
    secrets.fill("${SECRET:PW}")
    view = LiveView("run_0", lambda: None, redact=secrets.redact)
    await view._send(Frame(b"\xff\xd8", 10, 10, "http://x/done?pw=s3cr%40t+pw%2B1"))
    assert view.last_frame is not None and view.last_frame["url"] == "http://x/done?pw=${SECRET:PW}"


def test_an_admin_grants_a_secret_without_ever_entering_its_value(
    staff: Any, owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.contrib.auth.models import Permission
    from django.test import Client

    monkeypatch.setenv("TABWRIGHT_SECRET_PW", VALUE)
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="dashboard"))
    client = Client()
    client.force_login(staff)
    added = client.post(
        "/admin/dashboard/secretgrant/add/", {"name": "PW", "users": [owner.pk], "note": "shop"}
    )
    assert added.status_code == 302
    assert SecretGrant.objects.names_for(owner) == {"PW"}
    listing = client.get("/admin/dashboard/secretgrant/").content.decode()
    assert "TABWRIGHT_SECRET_PW" in listing and 'alt="True"' in listing and NEEDLE not in listing
    refused = client.post("/admin/dashboard/secretgrant/add/", {"name": "s3cr@t pw"})
    assert refused.status_code == 200 and "secret&#x27;s name" in refused.content.decode()
    assert NEEDLE not in refused.content.decode()  # a value typed by mistake is not echoed


TYPED = "Ada-Pw-7781"


@pytest.mark.django_db(transaction=True)
async def test_a_password_in_the_task_stays_out_of_the_scenario_saved_with_the_suggested_name(
    runs: Runs, owner: Any, fixture_url: str
) -> None:
    """The run types the password its task spells out: the run keeps a mark of it (not
    the password), so the save page shows the task and the suggested name with it
    masked, refuses a name that holds it, and saves the suggested one."""
    task = (f'type "{TYPED}" into Password\ntype ada@example.org into Email\n'
            "click Sign in\nwait for Signed in as")  # fmt: skip
    login = f"{fixture_url}/replay/v1/login.html"
    run = await runs.start(await runs.create(owner=owner, task=task, start_url=login))
    await runs.manager.wait(run.pk)
    run = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert run.status == Run.Status.SUCCEEDED, run.status_reason
    assert len(run.password_marks) == 1 and TYPED not in json.dumps(run.password_marks)
    client = AsyncClient()
    await client.aforce_login(owner)
    page = (await client.get(f"/runs/{run.pk}/save")).content.decode()
    suggested = f'type "{MASK}" into Password'
    assert TYPED not in page and page.count(MASK) >= 3  # the title, the task, the name
    refused = await client.post(f"/runs/{run.pk}/save", {"name": f"Sign in with {TYPED}"})
    assert refused.status_code == 400
    assert "The name holds a password the run typed" in refused.content.decode()
    assert not await sync_to_async(Scenario.objects.exists)()
    saved = await client.post(f"/runs/{run.pk}/save", {"name": suggested})
    assert saved.status_code == 302
    scenario = await sync_to_async(Scenario.objects.get)(owner=owner)
    assert scenario.name == suggested
    for kind in ("json", "py"):  # the file format and the pytest export
        exported = await client.get(f"/scenarios/{scenario.pk}/export.{kind}")
        assert exported.status_code == 200 and TYPED not in exported.content.decode()


@pytest.mark.django_db
def test_a_scenario_saved_with_no_name_takes_the_run_s_title_with_its_password_masked(
    owner: Any,
) -> None:
    task = "Sign in with password hunter22\nthen archive order 1003"
    run = run_services.run_create(owner=owner, task=task, start_url="", planner="rules")
    for _ in range(2):  # a restored conversation masks it again: marked once
        run_services.run_passwords_mark(run_id=run.pk, values=["hunter22", "ab"])
    password = {"role": "textbox", "name": "Password", "tag": "input", "type": "password"}
    rows = [
        {"action": "navigate", "args": {"url": "http://shop.test/login?pw=hunter22"}},
        {"action": "fill", "args": {"value": MASK}, "identity": password},
    ]
    for index, row in enumerate(rows):
        run_services.step_record(run_id=run.pk, data={"index": index, **row})
    run.refresh_from_db()
    assert len(run.password_marks) == 1
    ended(run)
    with pytest.raises(ScenarioInvalid, match="holds a password the run typed"):
        services.scenario_from_run(owner=owner, run=run, name="hunter22 sign-in")
    scenario = services.scenario_from_run(owner=owner, run=run, name="")
    assert scenario.name == f"Sign in with password {MASK}"
    stored = json.dumps(list(scenario.steps.values("args", "url", "led_to")))
    assert "hunter22" not in stored + scenario.description
    assert "spells out the password typed at step 1" in scenario.description
