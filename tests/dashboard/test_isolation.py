"""Who may reach what: every URL of dashboard/urls.py, tried by nobody, by another person
and by staff against one person's run, scenario and healed identity; CSRF on every POST;
and the run socket through the whole ASGI application (origin, session, owner)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.urls import URLPattern, reverse

from dashboard import urls as dashboard_urls
from dashboard.accounts import services as token_services
from dashboard.asgi import application
from dashboard.jobs import schedules
from dashboard.jobs import services as job_services
from dashboard.models import (
    ApiToken,
    Batch,
    IdentityHeal,
    Run,
    Scenario,
    ScenarioStep,
    Schedule,
    Step,
)
from dashboard.runs import services as run_services
from dashboard.runs.consumers import CLOSE_FORBIDDEN
from dashboard.runs.runner import runner
from dashboard.scenarios import services as scenario_services
from tests.dashboard.conftest import Socket, ended
from tests.dashboard.sockets import ANSWER_S

SECRET_TASK = "type olive-secret-4711 into Notes"
SECRET_SCENARIO = "olive's private checkout"
GOOD_ORIGIN = "http://127.0.0.1:8000"

# Pages that hold no one's data: the demo fixture pages (only with DEBUG on), the icon.
PUBLIC = {"demo", "demo_index", "favicon"}
# Each URL parameter, and the value that points it at the owner's objects.
OBJECT_PARAMS = {"run_id", "scenario_id", "heal_id", "batch_id", "schedule_id", "token_id"}
# The object URLs this file must find in urls.py (a renamed one must be looked at again).
EXPECTED = {
    "run_detail", "run_screenshot", "run_act", "run_save_scenario", "scenario_detail",
    "scenario_export", "scenario_replay", "scenario_step_param", "heal_decide",
    "run_download", "run_trace", "batch_new", "batch_detail", "batch_state", "batch_stop",
    "batch_retry", "batch_results", "schedule_new", "schedule_toggle", "schedule_delete",
    "api_token_revoke",
}  # fmt: skip
# The URLs that change a scenario (any edit URL urls.py has now is one of these).
CHANGES = ("scenario_edit", "scenario_step_", "scenario_param_", "heal_decide", "batch_new",
           "batch_stop", "batch_retry", "schedule_")  # fmt: skip
# What a form of the owner's pages would send: enough for each view to act, were it allowed.
FORM = {
    "name": "stolen",
    "description": "",
    "step_id": "",
    "direction": "down",
    "approve": "1",
    "base_url": "https://example.org/",
    "param-email-default": "x",
    "enabled": "0",
}


class World:
    """The owner's run (with a screenshot), scenario (two steps, a parameter) and heal."""

    def __init__(self, owner: Any, media_root: Path) -> None:
        self.owner = owner
        self.run = run_services.run_create(owner=owner, task=SECRET_TASK, start_url="",
                                       planner="rules")  # fmt: skip
        run_services.run_set_status(run_id=self.run.pk, status="succeeded")
        for index, (action, args) in enumerate(
            [("type", {"text": "olive@example.org"}), ("click", {})]
        ):
            run_services.step_record(
                run_id=self.run.pk,
                data={"index": index, "action": action, "args": args, "role": "textbox",
                      "name": "Email"},
            )  # fmt: skip
        shot = media_root / f"runs/{self.run.pk}/step-0.jpg"
        shot.parent.mkdir(parents=True, exist_ok=True)
        shot.write_bytes(b"\xff\xd8\xff\xe0jpeg")
        run_services.step_attach_screenshot(
            run_id=self.run.pk, index=0, path=f"runs/{self.run.pk}/step-0.jpg"
        )
        ended(self.run)
        self.scenario = scenario_services.scenario_from_run(
            owner=owner, run=self.run, name=SECRET_SCENARIO
        )
        scenario_services.scenario_step_make_param(scenario=self.scenario, index=0, name="email")
        self.heal = IdentityHeal.objects.create(
            step=self.scenario.steps.get(index=1), run=self.run,
            status=IdentityHeal.Status.PROPOSED, strategy="aria_label", score=0.7,
            before={"role": "button", "name": "Send"}, after={"role": "button", "name": "Submit"},
        )  # fmt: skip
        self.batch = job_services.batch_create(owner=owner, scenario=self.scenario,
                                           rows=[{"email": "olive-secret@example.org"}],
                                           base_url="", concurrency=1)  # fmt: skip
        checked = schedules.check_schedule(
            scenario=self.scenario, cron="0 7 * * 1-5", timezone="Europe/Paris",
            params={"email": "olive-secret@example.org"},
        )  # fmt: skip
        self.schedule = schedules.save(Schedule(owner=owner, scenario=self.scenario), **checked)
        self.token, _ = token_services.api_token_create(owner=owner, name="olive-secret script")

    def values(self) -> dict[str, Any]:
        return {
            "run_id": self.run.pk,
            "scenario_id": self.scenario.pk,
            "heal_id": self.heal.pk,
            "batch_id": self.batch.pk,
            "schedule_id": self.schedule.pk,
            "token_id": self.token.pk,
            "index": 0,
            "format": "json",
            "name": "email",
        }

    def state(self) -> tuple[Any, ...]:
        """What another person's requests must never change."""
        scenario = Scenario.objects.get(pk=self.scenario.pk)
        steps = list(
            ScenarioStep.objects.filter(scenario=scenario).values_list("index", "action", "args")
        )
        heal = IdentityHeal.objects.get(pk=self.heal.pk)
        batch = Batch.objects.get(pk=self.batch.pk)
        schedule = Schedule.objects.filter(pk=self.schedule.pk).values().first()
        return (
            scenario.name, scenario.description, scenario.params, steps, heal.status,
            Run.objects.count(), Scenario.objects.count(), Step.objects.count(),
            batch.status, list(batch.rows.values_list("run_id", "attempts")), schedule,
            list(ApiToken.objects.values_list("pk", flat=True)),
        )  # fmt: skip


def url_names() -> list[tuple[str, set[str]]]:
    """(name, parameters) of every URL in dashboard/urls.py (not the admin's or auth's)."""
    return [
        (p.name, set(p.pattern.converters))
        for p in dashboard_urls.urlpatterns
        if isinstance(p, URLPattern) and p.name not in PUBLIC
    ]


def urls_for(world: World) -> list[tuple[str, str, bool]]:
    """(name, path, is one of the owner's objects) for every URL; export once per format."""
    values = world.values()
    found = []
    for name, params in url_names():
        unknown = params - values.keys()
        assert not unknown, f"{name}: give the URL parameters {unknown} a value in World.values"
        kwargs = {key: values[key] for key in params}
        owned = bool(params & OBJECT_PARAMS)
        found.append((name, reverse(name, kwargs=kwargs), owned))
        if name == "scenario_export":
            found.append((name, reverse(name, kwargs={**kwargs, "format": "py"}), owned))
    return found


def logged_in(user: Any, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


@pytest.fixture
def world(owner: Any, media_root: Path) -> World:
    return World(owner, media_root)


@pytest.fixture
def no_live_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Whatever would start or drive a run, recorded instead of done."""
    calls: list[Any] = []

    async def start(run_id: int) -> None:
        calls.append(("start", run_id))

    monkeypatch.setattr(runner, "start", start)
    yield calls


# -- HTTP -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_object_url_is_covered(world: World) -> None:
    names = {name for name, _path, owned in urls_for(world) if owned}
    assert EXPECTED <= names, EXPECTED - names


@pytest.mark.django_db
def test_nobody_logged_in_gets_no_data_from_any_url(world: World, no_live_runs: list) -> None:
    client = Client()
    before = world.state()
    for name, path, _owned in urls_for(world):
        for method in (client.get, client.post):
            response = method(path)
            where = f"{method.__name__.upper()} {path} ({name})"
            assert response.status_code in (302, 401, 403, 404, 405), where
            if response.status_code == 302:
                assert response["Location"].startswith("/accounts/login/"), where
            body = b"" if response.streaming else response.content
            assert SECRET_TASK.encode() not in body and b"olive-secret" not in body, where
    assert world.state() == before
    assert no_live_runs == []


@pytest.mark.django_db
def test_another_person_gets_404_for_every_one_of_the_owners_objects(
    world: World, stranger: Any, no_live_runs: list
) -> None:
    client = logged_in(stranger)
    before = world.state()
    for name, path, owned in urls_for(world):
        if not owned:
            continue
        response = client.get(path)
        if response.status_code == 405:  # POST only: post what the owner's form would
            response = client.post(path, FORM)
        assert response.status_code == 404, f"{path} ({name}): {response.status_code}"
        assert b"olive-secret" not in response.content, path
    # run_act speaks JSON.
    act = client.post(
        reverse("run_act", args=[world.run.pk]),
        '{"action": "click", "args": {"ref": "e1"}}',
        content_type="application/json",
    )
    assert act.status_code == 404 and act.json()["error"]["code"] == "not_found"
    assert world.state() == before
    assert no_live_runs == []


@pytest.mark.django_db
def test_another_persons_lists_show_none_of_the_owners(world: World, stranger: Any) -> None:
    client = logged_in(stranger)
    for path in (
        "/",
        f"/?owner={world.owner.pk}",
        f"/?scenario={world.scenario.pk}",
        "/scenarios/",
        "/scenarios/?q=olive",
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        html = response.content.decode()
        assert "olive-secret" not in html and "private checkout" not in html, path
    assert list(client.get("/").context["runs"]) == []
    assert list(client.get("/scenarios/").context["scenarios"]) == []


@pytest.mark.django_db
def test_staff_see_the_owners_run_and_scenario(world: World, staff: Any) -> None:
    client = logged_in(staff)
    assert "olive-secret" in client.get("/").content.decode()
    assert client.get(f"/?owner={world.owner.pk}").context["runs"][0].pk == world.run.pk
    assert client.get(reverse("run_detail", args=[world.run.pk])).status_code == 200
    page = client.get(reverse("scenario_detail", args=[world.scenario.pk]))
    assert page.status_code == 200 and "private checkout" in page.content.decode()
    assert "private checkout" in client.get("/scenarios/").content.decode()
    shot = client.get(reverse("run_screenshot", args=[world.run.pk, 0]))
    assert shot.status_code == 200


@pytest.mark.django_db
def test_staff_may_look_but_not_change_the_owners_scenario(
    world: World, staff: Any, no_live_runs: list
) -> None:
    client = logged_in(staff)
    before = world.state()
    changes = [(name, path) for name, path, _owned in urls_for(world) if name.startswith(CHANGES)]
    assert {"scenario_step_param", "heal_decide"} <= {name for name, _path in changes}
    for name, path in changes:
        assert client.post(path, FORM).status_code == 404, f"{path} ({name})"
    assert world.state() == before


@pytest.mark.django_db
def test_every_post_needs_the_csrf_token(world: World, no_live_runs: list) -> None:
    client = logged_in(world.owner, enforce_csrf_checks=True)
    paths = [path for _name, path, _owned in urls_for(world)]
    paths += ["/accounts/logout/", "/admin/logout/", "/admin/dashboard/urlrule/add/"]
    before = world.state()
    for path in paths:
        response = client.post(path, FORM)
        assert response.status_code == 403, f"{path}: {response.status_code}"
        assert b"CSRF" in response.content, path
    assert world.state() == before
    assert no_live_runs == []

    # The same form with its token goes through: the 403s above were the token's.
    client.get("/")
    token = client.cookies["csrftoken"].value
    response = client.post(
        reverse("run_save_scenario", args=[world.run.pk]),
        {"name": "kept", "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    assert Scenario.objects.filter(name="kept", owner=world.owner).exists()


@pytest.mark.django_db
def test_the_pages_carry_a_csrf_token_in_every_post_form(world: World) -> None:
    client = logged_in(world.owner)
    for path in ("/", "/scenarios/", f"/runs/{world.run.pk}/", f"/scenarios/{world.scenario.pk}/"):
        html = client.get(path).content.decode()
        forms = html.count('method="post"')
        assert forms, path
        assert html.count('name="csrfmiddlewaretoken"') >= forms, path


# -- the run socket, through dashboard.asgi.application ------------------------------------


class Sockets:
    """Opens sockets on the whole ASGI app (origin check, session auth, routing) and
    disconnects every one at the end."""

    def __init__(self) -> None:
        self.opened: list[WebsocketCommunicator] = []

    async def open(
        self, run_id: int, *, session: str | None = None, origin: str | None = GOOD_ORIGIN
    ) -> tuple[WebsocketCommunicator, bool, Any]:
        headers = [(b"host", b"127.0.0.1:8000")]  # the dashboard as the browser reached it
        if origin is not None:
            headers.append((b"origin", origin.encode()))
        if session is not None:
            headers.append((b"cookie", f"sessionid={session}".encode()))
        comm = Socket(application, f"/ws/runs/{run_id}/", headers=headers)
        self.opened.append(comm)
        connected, detail = await comm.connect()
        return comm, connected, detail

    async def close_all(self) -> None:
        for comm in self.opened:
            await comm.disconnect()


@pytest_asyncio.fixture(loop_scope="session")
async def sockets() -> AsyncIterator[Sockets]:
    opened = Sockets()
    yield opened
    await opened.close_all()


@pytest.fixture
def spied_runner(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every command, act and live-view input that reaches the runner, by run id."""
    reached: list[tuple[str, int]] = []

    async def command(run_id: int, command: str, text: str = "", rounds: int = 0) -> None:
        reached.append((command, run_id))

    async def act(run_id: int, action: str, args: dict, *, budget: Any) -> dict:
        reached.append(("act", run_id))
        return {"ok": True, "result": {}}

    async def person_input(run_id: int, event: dict, *, budget: Any) -> str:
        reached.append(("input", run_id))
        return "clicked"

    monkeypatch.setattr(runner, "command", command)
    monkeypatch.setattr(runner, "act", act)
    monkeypatch.setattr(runner, "person_input", person_input)
    return reached


async def session_of(user: Any) -> str:
    client = Client()
    await sync_to_async(client.force_login)(user)
    return client.cookies["sessionid"].value


async def make_run(owner: Any) -> Run:
    return await sync_to_async(run_services.run_create)(
        owner=owner, task=SECRET_TASK, start_url="", planner="rules"
    )


COMMANDS = [
    {"command": "pause"},
    {"command": "resume"},
    {"command": "stop"},
    {"command": "reply", "text": "do something else"},
    {"command": "extend", "rounds": 3},
    {"command": "act", "id": 1, "action": "click", "args": {"ref": "e1"}},
    {"command": "input", "id": 2, "kind": "click", "x": 10, "y": 10},
]


@pytest.mark.django_db(transaction=True)
async def test_a_socket_from_another_origin_is_refused(sockets: Sockets, owner: Any) -> None:
    run = await make_run(owner)
    session = await session_of(owner)
    for origin in ("http://evil.example", "https://127.0.0.1.evil.example", "null", None):
        _comm, connected, _code = await sockets.open(run.pk, session=session, origin=origin)
        assert not connected, origin
    comm, connected, _ = await sockets.open(run.pk, session=session)
    assert connected  # the same session from the dashboard's own origin
    assert (await comm.receive_json_from(timeout=ANSWER_S))["type"] == "state"


@pytest.mark.django_db(transaction=True)
async def test_a_socket_without_a_session_is_closed_4403(sockets: Sockets, owner: Any) -> None:
    run = await make_run(owner)
    for session in (None, "not-a-session-key"):
        _comm, connected, code = await sockets.open(run.pk, session=session)
        assert (connected, code) == (False, CLOSE_FORBIDDEN), session


@pytest.mark.django_db(transaction=True)
async def test_another_persons_session_is_closed_4403_and_reaches_nothing(
    sockets: Sockets, owner: Any, stranger: Any, spied_runner: list
) -> None:
    run = await make_run(owner)
    _comm, connected, code = await sockets.open(run.pk, session=await session_of(stranger))
    assert (connected, code) == (False, CLOSE_FORBIDDEN)
    _comm, connected, code = await sockets.open(999_999, session=await session_of(owner))
    assert (connected, code) == (False, CLOSE_FORBIDDEN)  # no such run: the same answer
    assert spied_runner == []


@pytest.mark.django_db(transaction=True)
async def test_only_the_owners_commands_reach_the_run(
    sockets: Sockets, owner: Any, staff: Any, spied_runner: list
) -> None:
    run = await make_run(owner)
    # Staff may watch another person's run, and nothing they send reaches it.
    watcher, connected, _ = await sockets.open(run.pk, session=await session_of(staff))
    assert connected
    assert (await watcher.receive_json_from(timeout=ANSWER_S))["type"] == "state"
    for command in COMMANDS:
        await watcher.send_json_to(command)
        answer = await watcher.receive_json_from(timeout=ANSWER_S)
        assert answer == {"type": "error", "message": "only the run's owner can do that"}, command
    assert spied_runner == []

    own, connected, _ = await sockets.open(run.pk, session=await session_of(owner))
    assert connected
    assert (await own.receive_json_from(timeout=ANSWER_S))["type"] == "state"
    await own.send_json_to({"command": "pause"})
    await own.send_json_to({"command": "act", "id": 1, "action": "click", "args": {"ref": "e1"}})
    assert (await own.receive_json_from(timeout=ANSWER_S)) == {
        "type": "pausing"
    }  # the page is told
    assert (await own.receive_json_from(timeout=ANSWER_S))["type"] == "act.result"
    assert spied_runner == [("pause", run.pk), ("act", run.pk)]


@pytest.mark.django_db(transaction=True)
async def test_every_page_on_the_run_is_told_it_is_pausing(
    sockets: Sockets, owner: Any, staff: Any, spied_runner: list
) -> None:
    """The owner pauses in one tab: their other tab, and a watcher, say "pausing" too (only
    the tab that asked was told, the others showed "running" until the run paused)."""
    run = await make_run(owner)
    pages = []
    for who in (owner, owner, staff):
        page, connected, _ = await sockets.open(run.pk, session=await session_of(who))
        assert connected
        assert (await page.receive_json_from(timeout=ANSWER_S))["type"] == "state"
        pages.append(page)
    await pages[0].send_json_to({"command": "pause"})
    for page in pages:
        assert await page.receive_json_from(timeout=ANSWER_S) == {"type": "pausing"}
    await pages[0].send_json_to({"command": "act", "id": 1, "action": "click", "args": {}})
    answer = await pages[0].receive_json_from(timeout=ANSWER_S)
    assert answer["type"] == "act.result"  # told once, not a second time
    assert spied_runner == [("pause", run.pk), ("act", run.pk)]
