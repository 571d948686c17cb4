"""The JSON API with tokens (dashboard/api/): a token made on the person's page, shown
once and kept only as a hash, acts as its owner — starts a run that a worker drives,
reads it, its steps and events, stops one; imports, exports and replays scenarios — and
sees nothing of anyone else's; a revoked or unknown token gets 401; every refusal has one
error shape naming the fields at fault."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import CommandError, call_command
from django.test import AsyncClient, Client

from dashboard.accounts import services
from dashboard.models import ApiToken, Batch, Run, Schedule
from dashboard.runs import selectors as run_selectors
from dashboard.runs import services as services_runs
from dashboard.runs.runner import RunManager
from dashboard.scenarios import services as scenario_services
from tests.dashboard.conftest import Runs
from tests.dashboard.signup import sign_up
from tests.tasks import FORM_TASK

# Rollback transactions, but for the async tests: their database work runs in another
# thread (sync_to_async), which must see the rows.
pytestmark = pytest.mark.django_db


def page_client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def token_of(user: Any, name: str = "a script") -> str:
    return services.api_token_create(owner=user, name=name)[1]


class Api:
    """A script's calls with its token (Django's AsyncClient takes headers per call)."""

    def __init__(self, token: str) -> None:
        self.client, self.headers = AsyncClient(), {"Authorization": f"Bearer {token}"}

    async def get(self, path: str, query: dict[str, Any] | None = None) -> Any:
        return await self.client.get(path, query, headers=self.headers)

    async def post(self, path: str, body: Any = None) -> Any:
        if body is None:
            return await self.client.post(path, headers=self.headers)
        return await self.client.post(path, body, content_type="application/json",
                                      headers=self.headers)  # fmt: skip

    async def delete(self, path: str) -> Any:
        return await self.client.delete(path, headers=self.headers)


def api(token: str) -> Api:
    return Api(token)


def refused(answer: Any, status: int, code: str) -> dict[str, Any]:
    """The one error shape, with this status and code; its body."""
    assert answer.status_code == status, (answer.status_code, answer.content[:500])
    error = answer.json()["error"]
    assert error["code"] == code, error
    assert set(error) == {"code", "message", "hint", "fields"} and error["message"], error
    return error


async def finished(client: Api, run_id: int, timeout_s: float = 60) -> dict[str, Any]:
    async with asyncio.timeout(timeout_s):
        while True:
            run = (await client.get(f"/api/runs/{run_id}")).json()
            if run["status"] in Run.FINAL:
                return run
            await asyncio.sleep(0.1)


# -- tokens ------------------------------------------------------------------------------


def test_a_token_is_shown_once_kept_as_a_hash_and_revoked_from_the_page(owner: Any) -> None:
    page = page_client(owner)
    made = page.post("/account/tokens", {"name": "nightly export"})
    assert made.status_code == 200 and made["Cache-Control"] == "no-store"
    secret = re.search(r'<pre id="new-token">(tw_[\w-]+)</pre>', made.content.decode()).group(1)
    token = ApiToken.objects.get()
    assert (token.name, token.owner, token.last_used_at) == ("nightly export", owner, None)
    assert token.digest == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in str(list(ApiToken.objects.values()))  # only its hash is kept
    listed = page.get("/account/tokens").content.decode()
    assert "nightly export" in listed and token.prefix in listed and secret not in listed

    used = Client(headers={"Authorization": f"Bearer {secret}"}).get("/api/runs")
    assert used.status_code == 200 and used.json() == []
    token.refresh_from_db()
    assert token.last_used_at is not None

    assert page.post(f"/account/tokens/{token.pk}/revoke").status_code == 302
    again = Client(headers={"Authorization": f"Bearer {secret}"}).get("/api/runs")
    refused(again, 401, "unauthorized")
    assert page.post("/account/tokens", {"name": "  "}).status_code == 400  # named, always


def test_the_token_form_sent_again_makes_no_second_token(owner: Any) -> None:
    """Reloading the answer that showed the token (or going back to it) sent the form
    again, and made another token of the same name."""
    page = page_client(owner)
    form = page.get("/account/tokens").content.decode()
    once = re.search(r'name="once" value="([\w-]+)"', form).group(1)
    made = page.post("/account/tokens", {"name": "ci", "once": once})
    assert made.status_code == 200 and 'id="new-token"' in made.content.decode()
    again = page.post("/account/tokens", {"name": "ci", "once": once})
    assert again.status_code == 409 and "no second token was made" in again.content.decode()
    assert 'id="new-token"' not in again.content.decode()
    assert ApiToken.objects.filter(name="ci").count() == 1
    # The page it answered with makes the next one.
    fresh = re.search(r'name="once" value="([\w-]+)"', again.content.decode()).group(1)
    assert page.post("/account/tokens", {"name": "ci 2", "once": fresh}).status_code == 200


def test_no_unknown_or_another_persons_token_gets_in(owner: Any, stranger: Any) -> None:
    theirs = token_of(stranger)
    page = page_client(stranger)
    mine = ApiToken.objects.create(owner=owner, name="x", prefix="tw_x", digest="0" * 64)
    page.post(f"/account/tokens/{mine.pk}/revoke")  # not theirs to revoke
    assert ApiToken.objects.filter(pk=mine.pk).exists()
    for header in [None, "Bearer ", "Bearer tw_nope", f"Basic {theirs}", f"Bearer {theirs}x",
                   "Bearer " + "tw_" + "a" * 5000]:  # fmt: skip
        client = Client(headers={"Authorization": header} if header else {})
        refused(client.get("/api/runs"), 401, "unauthorized")
    owner.is_active = False
    owner.save()
    refused(Client(headers={"Authorization": f"Bearer {token_of(owner)}"}).get("/api/runs"),
            401, "unauthorized")  # fmt: skip


def test_an_operator_makes_a_token_for_a_script_with_a_command(owner: Any) -> None:
    out = io.StringIO()
    call_command("tabwright_token", owner.username, "--name", "nightly report", stdout=out)
    secret = out.getvalue().strip()
    assert re.fullmatch(r"tw_[\w-]+", secret)  # alone on its line: $(...) takes it whole
    token = ApiToken.objects.get()
    assert (token.name, token.owner) == ("nightly report", owner)
    assert token.digest == hashlib.sha256(secret.encode()).hexdigest()  # only its hash kept
    used = Client(headers={"Authorization": f"Bearer {secret}"}).get("/api/runs")
    assert used.status_code == 200
    # Listed on the person's page like one made there, and named by default.
    assert "nightly report" in page_client(owner).get("/account/tokens").content.decode()
    call_command("tabwright_token", owner.username, stdout=io.StringIO())
    assert ApiToken.objects.filter(name="command line").count() == 1


def test_a_token_command_for_nobody_or_without_a_name_makes_nothing(owner: Any) -> None:
    refusals = [
        (["nobody"], "no user 'nobody'"),
        ([owner.username, "--name", "  "], "name the token"),
        ([owner.username, "--name", "x" * 101], "at most 100 characters"),
    ]
    for args, says in refusals:
        with pytest.raises(CommandError, match=says):
            call_command("tabwright_token", *args, stdout=io.StringIO())
    owner.is_active = False
    owner.save()
    with pytest.raises(CommandError, match="not active"):
        call_command("tabwright_token", owner.username, stdout=io.StringIO())
    assert not ApiToken.objects.exists()


def test_a_run_says_which_worker_holds_it(owner: Any) -> None:
    script = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    run = Run.objects.create(owner=owner, task="t", start_url="")
    queued = script.get(f"/api/runs/{run.pk}").json()
    assert (queued["worker"], queued["held_until"]) == (None, None)  # no worker claimed it
    services_runs.run_claim(holder="specific.a1b2!web-2.worker4242", lease_s=30)
    held = script.get(f"/api/runs/{run.pk}").json()
    assert held["worker"] == "web-2.worker4242" and held["held_until"] is not None
    assert script.get("/api/runs").json()[0]["worker"] == "web-2.worker4242"
    services_runs.run_let_go(run_id=run.pk, holder="specific.a1b2!web-2.worker4242")
    ended = script.get(f"/api/runs/{run.pk}").json()
    assert (ended["worker"], ended["held_until"]) == ("web-2.worker4242", None)  # last held
    assert "worker web-2.worker4242" in page_client(owner).get(f"/runs/{run.pk}/").content.decode()


# -- runs --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_script_starts_a_run_reads_it_and_its_events(
    worker: RunManager, runs: Runs, owner: Any, stranger: Any, fixture_url: str
) -> None:
    client = api(await sync_to_async(token_of)(owner))
    made = await client.post("/api/runs", {
        "task": FORM_TASK, "start_url": f"{fixture_url}/demo/form.html", "planner": "rules",
    })  # fmt: skip
    assert made.status_code == 201, made.content
    run = made.json()
    runs.started.append(run["id"])
    assert (run["status"], run["kind"], run["url"]) == ("queued", "agent", f"/runs/{run['id']}/")

    done = await finished(client, run["id"])
    assert done["status"] == "succeeded", done
    assert [s["action"] for s in done["steps"]] == ["navigate", "type", "type", "click", "wait_for"]
    assert all(s["ok"] for s in done["steps"])
    assert done["steps"][1]["screenshot_url"] == f"/runs/{run['id']}/screenshots/1.jpg"

    await worker.wait_closed(run["id"])  # its session's end is an event too
    events = (await client.get(f"/api/runs/{run['id']}/events")).json()
    kinds = [e["type"] for e in events["events"]]
    assert kinds[0] == "run.started" and "run.finished" in kinds
    assert events["last_seq"] == events["events"][-1]["seq"]
    after = await client.get(f"/api/runs/{run['id']}/events", {"after": events["last_seq"]})
    assert after.json() == {"events": [], "last_seq": events["last_seq"]}
    listed = (await client.get("/api/runs", {"status": "succeeded"})).json()
    assert [r["id"] for r in listed] == [run["id"]] and listed[0]["steps"] is None

    # Another person's token sees none of it, and can't stop it.
    other = api(await sync_to_async(token_of)(stranger))
    assert (await other.get("/api/runs")).json() == []
    for path in [f"/api/runs/{run['id']}", f"/api/runs/{run['id']}/events"]:
        refused(await other.get(path), 404, "not_found")
    refused(await other.post(f"/api/runs/{run['id']}/stop"), 404, "not_found")


@pytest.mark.django_db(transaction=True)
async def test_a_queued_run_is_stopped_and_a_stopped_one_is_not_live(
    runs: Runs, owner: Any
) -> None:
    client = api(await sync_to_async(token_of)(owner))  # no worker: it stays queued
    made = (await client.post("/api/runs", {"task": "click OK", "planner": "rules"})).json()
    # A body sent to a call that takes none is refused, not ignored: the run goes on.
    for body in ({"reason": "done"}, [], '""', "0"):
        error = refused(await client.post(f"/api/runs/{made['id']}/stop", body), 400, "invalid")
        assert error["message"] == f"POST /api/runs/{made['id']}/stop takes no body", error
    assert (await client.get(f"/api/runs/{made['id']}")).json()["status"] == "queued"
    # Null or an empty object is no body.
    refused(await client.post(f"/api/runs/{made['id']}/pause", "null"), 409, "not_live")
    stopped = await client.post(f"/api/runs/{made['id']}/stop", {})
    assert stopped.status_code == 200 and stopped.json()["status"] == "stopped"
    refused(await client.post(f"/api/runs/{made['id']}/stop"), 409, "not_live")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "task"),
        ({"task": ""}, "task"),
        ({"task": 5}, "task"),
        ({"task": "t", "start_url": "javascript:alert(1)"}, "start_url"),
        ({"task": "t", "planner": "psychic"}, "planner"),
        ({"task": "t", "llm_profile": "nobody's"}, "llm_profile"),
        ({"task": "t", "planner": "rules", "output_schema": {"type": "object"}}, "output_schema"),
        ({"task": "t", "planner": "openai", "output_schema": {"type": 5}}, "output_schema"),
        ({"task": "t", "output_schema": [1]}, "output_schema"),
    ],
)
def test_a_run_asked_badly_is_refused_naming_the_field_and_nothing_is_made(
    owner: Any, body: dict[str, Any], field: str
) -> None:
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    answer = client.post("/api/runs", body, content_type="application/json")
    error = refused(answer, 400, "invalid")
    assert field in error["fields"], error
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({"$ref": "http://127.0.0.2:18734/schema.json"}, "does not point within the schema"),
        ({"properties": {"a": {"$ref": "file:///etc/passwd"}}}, "does not point within the schema"),
        ({"type": "string", "pattern": "^(?=x).*$"}, "can't be used: invalid perl operator"),
    ],
)
def test_an_output_schema_that_would_fetch_or_backtrack_is_refused(
    owner: Any, schema: dict[str, Any], says: str
) -> None:
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    body = {"task": "t", "planner": "openai", "output_schema": schema}
    error = refused(client.post("/api/runs", body, content_type="application/json"), 400, "invalid")
    assert says in error["fields"]["output_schema"], error
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("call", "given", "field"),
    [
        ("batches", {"concurrency": True}, "concurrency"),
        ("batches", {"concurrency": "3"}, "concurrency"),
        ("schedules", {"enabled": 0}, "enabled"),
        ("schedules", {"enabled": "false"}, "enabled"),
        ("schedules", {"concurrency": True}, "concurrency"),
    ],
)
def test_a_value_of_another_json_type_is_refused_not_taken_for_one(
    owner: Any, call: str, given: dict[str, Any], field: str
) -> None:
    """true for a number, 0 or "false" for false, "3" for 3: a mistake, answered as one
    (they were taken as 1, false and 3, and the batch or schedule made)."""
    scenario = scenario_services.scenario_import(owner=owner, data=sign_up("http://shop.test"))
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    body = {"csv": "name,greet\nAda,Ada\n"} if call == "batches" else {
        "cron": "0 7 * * *", "params": {"name": "Ada", "greet": "Ada"}}  # fmt: skip
    answer = client.post(f"/api/scenarios/{scenario.pk}/{call}", {**body, **given},
                         content_type="application/json")  # fmt: skip
    assert field in refused(answer, 400, "invalid")["fields"]
    assert not Batch.objects.exists() and not Schedule.objects.exists() and not Run.objects.exists()


@pytest.mark.parametrize(
    ("call", "given", "field"),
    [
        ("runs", {"task": "sign up\u0000"}, "task"),
        ("replays", {"params": {"name": "Ada\u0000", "greet": "Ada"}}, "params"),
        ("batches", {"rows": [{"name": "Ada", "greet": "\u0000"}]}, "rows"),
    ],
)
def test_a_text_holding_a_nul_is_refused_as_the_pages_forms_refuse_it(
    owner: Any, call: str, given: dict[str, Any], field: str
) -> None:
    """No text column of PostgreSQL keeps a NUL and no page's field can be given one: the
    pages' forms refuse it ("Null characters are not allowed"), and so does the API."""
    scenario = scenario_services.scenario_import(owner=owner, data=sign_up("http://shop.test"))
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    path = "/api/runs" if call == "runs" else f"/api/scenarios/{scenario.pk}/{call}"
    body = json.dumps({"planner": "rules", **given} if call == "runs" else given)
    error = refused(client.post(path, body, content_type="application/json"), 400, "invalid")
    assert f"holds a NUL character, U+0000 (in {field!r})" in error["fields"]["body"], error
    assert not Batch.objects.exists() and not Run.objects.exists()


def test_a_field_the_call_does_not_take_is_refused_and_nothing_changes(owner: Any) -> None:
    """A misspelt field was dropped and the call went on without it: the login scenario
    forgotten, a run started elsewhere than asked, a schedule answered as changed."""
    login = scenario_services.scenario_import(
        owner=owner, data={**sign_up("http://shop.test"), "name": "Sign in"}
    )
    scenario = scenario_services.scenario_import(owner=owner, data=sign_up("http://shop.test"))
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    login_url = f"/api/scenarios/{scenario.pk}/login"
    set_login = client.put(login_url, {"login_scenario": login.name},
                           content_type="application/json")  # fmt: skip
    assert set_login.status_code == 200, set_login.content
    error = refused(client.put(login_url, {"login_senario": login.name},
                               content_type="application/json"), 400, "invalid")  # fmt: skip
    assert error["fields"] == {"login_senario": "no such field"}, error
    assert client.get(f"/api/scenarios/{scenario.pk}").json()["login_scenario"] == "Sign in"
    body = {"task": "t", "planner": "rules", "start_ulr": "http://shop.test"}
    error = refused(client.post("/api/runs", body, content_type="application/json"),
                    400, "invalid")  # fmt: skip
    assert "start_ulr" in error["fields"], error
    assert not Run.objects.exists()


def test_a_call_the_api_does_not_have_is_answered_in_its_error_shape(owner: Any) -> None:
    """A path under /api/ that is no call (a typo, a trailing slash) got Django's HTML
    page, a method its path does not take Ninja's "Method not allowed" in plain text."""
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    for path in ["/api/nope", "/api/runs/", "/api/runs/1/nope", "/api/"]:
        error = refused(client.get(path), 404, "not_found")
        assert error["message"] == f"GET {path} is no call of the API", error
        assert "/api/docs" in error["hint"]
    # Before its token or body is looked at.
    refused(Client().post("/api/runs/", "{", content_type="text/plain"), 404, "not_found")
    answer = client.delete("/api/runs")
    error = refused(answer, 405, "method_not_allowed")
    assert set(answer["Allow"].split(", ")) == {"GET", "POST"}
    assert error["message"].startswith("DELETE /api/runs: this path takes "), error
    refused(client.put("/api/runs/1/stop", "{}", content_type="application/json"), 405,
            "method_not_allowed")  # fmt: skip


def test_a_call_the_server_fails_on_is_answered_in_its_error_shape(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug of ours met by a call: the script still reads the API's error JSON (Django's
    own page was HTML, and with DEBUG it shows the traceback)."""

    def broken(**_kwargs: Any) -> Any:
        raise RuntimeError("the words of a bug")

    monkeypatch.setattr(run_selectors, "run_list", broken)
    client = Client(
        headers={"Authorization": f"Bearer {token_of(owner)}"}, raise_request_exception=False
    )
    answer = client.get("/api/runs")
    error = refused(answer, 500, "server_error")
    assert error["message"] == "GET /api/runs: the server failed on this call", error
    assert b"the words of a bug" not in answer.content and b"Traceback" not in answer.content


def test_a_body_that_is_not_json_and_bad_queries_are_refused(owner: Any) -> None:
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    error = refused(client.post("/api/runs", "{not json", content_type="application/json"),
                    400, "invalid")  # fmt: skip
    assert "body" in error["fields"]
    deep = "[" * 100_000 + "]" * 100_000  # no RecursionError, no 500
    refused(client.post("/api/runs", deep, content_type="application/json"), 400, "invalid")
    assert (
        "status" in refused(client.get("/api/runs", {"status": "done"}), 400, "invalid")["fields"]
    )
    assert "limit" in refused(client.get("/api/runs", {"limit": 0}), 400, "invalid")["fields"]
    refused(client.get("/api/runs", {"limit": "many"}), 400, "invalid")
    refused(client.get("/api/runs/999999"), 404, "not_found")
    refused(client.get("/api/runs/1/events", {"after": -1}), 400, "invalid")
    past = refused(client.get("/api/runs/1/events", {"after": 10**20}), 400, "invalid")
    assert past["fields"] == {"after": "too large"}  # it was answered as the last seq seen


# -- scenarios ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_script_imports_exports_and_replays_a_scenario(
    worker: RunManager, runs: Runs, owner: Any, stranger: Any, fixture_url: str
) -> None:
    client = api(await sync_to_async(token_of)(owner))
    made = await client.post("/api/scenarios", sign_up(fixture_url))
    assert made.status_code == 201, made.content
    scenario = made.json()
    assert (scenario["name"], scenario["step_count"]) == ("Sign up people", 5)
    exported = (await client.get(f"/api/scenarios/{scenario['id']}")).json()
    assert exported["steps"][1]["args"] == {"value": "${name}"}
    assert [s["id"] for s in (await client.get("/api/scenarios")).json()] == [scenario["id"]]

    replays = f"/api/scenarios/{scenario['id']}/replays"
    asked = await client.post(replays, {"params": {"name": "Ada", "greet": "Ada", "colour": "red"}})
    error = refused(asked, 400, "invalid")
    assert "params.colour" in error["fields"] and "name" in error["hint"]
    error = refused(await client.post(replays, {}), 400, "invalid")
    assert {"params.name", "params.greet"} <= set(error["fields"])  # no default: needed
    asked = await client.post(
        replays, {"params": {"name": "A", "greet": "A"}, "base_url": "ftp://x"}
    )
    error = refused(asked, 400, "invalid")
    assert "base_url" in error["fields"]
    # A value that is no text, nor a number or true/false (taken as their text, as a batch
    # file's JSON takes them), is refused naming it.
    error = refused(await client.post(replays, {"params": {"name": ["A"], "greet": "A"}}),
                    400, "invalid")  # fmt: skip
    assert any(field.startswith("params.name") for field in error["fields"]), error
    assert not await Run.objects.aexists()  # nothing ran
    numbers = await client.post(replays, {"params": {"name": 1906, "greet": True}})
    assert numbers.status_code == 201, numbers.content
    assert numbers.json()["params"] == {"name": "1906", "greet": "true", "page": "form.html"}
    runs.started.append(numbers.json()["id"])
    await finished(client, numbers.json()["id"])

    replay = await client.post(replays, {"params": {"name": "Ada L", "greet": "Ada L"}})
    assert replay.status_code == 201, replay.content
    run = replay.json()
    runs.started.append(run["id"])
    assert (run["kind"], run["params"]) == (
        "replay",
        {"name": "Ada L", "greet": "Ada L", "page": "form.html"},
    )
    done = await finished(client, run["id"])
    assert done["status"] == "succeeded", done
    # Saved as a scenario, the replay keeps the parameters its steps use, each with the
    # value it had as its default (it declared none, and would not replay without values).
    saved = await client.post(f"/api/runs/{run['id']}/scenario", {"name": "Ada L signs up"})
    assert saved.status_code == 201, saved.content
    kept = (await client.get(f"/api/scenarios/{saved.json()['id']}")).json()
    assert kept["params"] and {name: spec["default"] for name, spec in kept["params"].items()} == {
        name: value for name, value in run["params"].items() if name in kept["params"]
    }
    again = await client.post(f"/api/scenarios/{saved.json()['id']}/replays", {})
    assert again.status_code == 201, again.content
    runs.started.append(again.json()["id"])
    assert (await finished(client, again.json()["id"]))["status"] == "succeeded"

    other = api(await sync_to_async(token_of)(stranger))
    assert (await other.get("/api/scenarios")).json() == []
    refused(await other.get(f"/api/scenarios/{scenario['id']}"), 404, "not_found")
    refused(await other.post(replays, {"params": {"name": "x"}}), 404, "not_found")
    bad = await client.post("/api/scenarios", {"format": "tabwright.scenario", "version": 99})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "scenario_invalid"
    # A scenario, or a scenario it calls, of no steps: its replay would prove nothing.
    empty = {"version": 1, "name": "Nothing", "steps": []}
    error = refused(await client.post("/api/scenarios", empty), 400, "scenario_invalid")
    assert "the scenario has no steps" in error["message"]
    calling = {"version": 1, "name": "Caller", "callees": {"Nothing": empty},
               "steps": [{"action": "call", "args": {"scenario": "Nothing"}}]}  # fmt: skip
    error = refused(await client.post("/api/scenarios", calling), 400, "scenario_invalid")
    assert "callee 'Nothing' has no steps" in error["message"]
    listed = {s["id"] for s in (await client.get("/api/scenarios")).json()}
    assert listed == {scenario["id"], saved.json()["id"]}  # neither empty one stored


def test_the_schema_and_its_docs_page_are_served(owner: Any) -> None:
    schema = Client().get("/api/openapi.json").json()
    assert {"/api/runs", "/api/runs/{run_id}", "/api/runs/{run_id}/stop",
            "/api/scenarios/{scenario_id}/replays"} <= set(schema["paths"])  # fmt: skip
    assert schema["components"]["securitySchemes"]["TokenAuth"]["scheme"] == "bearer"
    docs = Client().get("/api/docs")
    assert docs.status_code == 200
    body = docs.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in body and "cdn" not in body.lower()


@pytest.mark.parametrize(
    ("call", "body"),
    [
        ("runs", '{"task": "t", "planner": "openai", "output_schema": {"maximum": NaN}}'),
        ("runs", '{"task": "t", "planner": "openai", "output_schema": {"maximum": 1e400}}'),
        ("replays", '{"params": {"name": "Ada", "greet": Infinity}}'),
        ("batches", '{"rows": [{"name": "Ada", "greet": -Infinity}]}'),
        ("schedules", '{"cron": "0 7 * * *", "params": {"name": NaN, "greet": "Ada"}}'),
    ],
)
def test_a_number_json_has_none_for_is_refused_and_nothing_is_made(
    owner: Any, call: str, body: str
) -> None:
    """Python's parser reads NaN, Infinity and 1e400; a schema's maximum of NaN was stored
    (every check against it false) or the write failed with a 500."""
    scenario = scenario_services.scenario_import(owner=owner, data=sign_up("http://shop.test"))
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    path = "/api/runs" if call == "runs" else f"/api/scenarios/{scenario.pk}/{call}"
    error = refused(client.post(path, body, content_type="application/json"), 400, "invalid")
    assert "the body is not JSON: " in error["fields"]["body"], error
    assert "is no JSON number" in error["fields"]["body"], error
    assert not Batch.objects.exists() and not Run.objects.exists()
    assert not Schedule.objects.exists()
