"""Each call of the JSON API takes a body up to its own documented limit (docs/api.md),
and past it answers the API's JSON error before reading it: a batch's whole CSV file fits
in its call, a run's call takes no megabytes; a batch of many rows is answered off the
event loop."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from django.test import Client
from django.urls import resolve

from dashboard.api.bodylimit import BODY_LIMITS, MAX_BODY_BYTES, MAX_ROWS_BODY_BYTES
from dashboard.jobs import selectors as job_selectors
from dashboard.jobs.batchfile import MAX_BATCH_BYTES
from dashboard.models import Batch, Run, Scenario
from dashboard.scenarios import services as scenario_services
from dashboard.scenarios.forms import MAX_SCENARIO_BYTES
from tests.dashboard.api.test_api import refused, token_of
from tests.dashboard.signup import sign_up

pytestmark = pytest.mark.django_db

MiB = 1024 * 1024


def script(owner: Any) -> Client:
    return Client(headers={"Authorization": f"Bearer {token_of(owner)}"})


def test_a_body_past_the_call_s_limit_is_refused_in_json(owner: Any) -> None:
    """3 MiB: past the 1 MiB of a run's call (and past the 2.5 MiB Django reads alone)."""
    body = json.dumps({"task": "t", "planner": "rules", "padding": "x" * (3 * MiB)})
    error = refused(script(owner).post("/api/runs", body, content_type="application/json"),
                    413, "too_large")  # fmt: skip
    assert f"at most {MAX_BODY_BYTES} (1 MiB)" in error["message"]
    assert error["fields"] == {"body": error["message"]}
    assert not Run.objects.exists()
    # A scenario file past 20 MiB, the import page's limit too.
    big = json.dumps({**sign_up("http://shop.test"), "description": "x" * MAX_SCENARIO_BYTES})
    error = refused(script(owner).post("/api/scenarios", big, content_type="application/json"),
                    413, "too_large")  # fmt: skip
    assert f"at most {MAX_SCENARIO_BYTES} (20 MiB)" in error["message"]
    assert not Scenario.objects.exists()


def test_a_batch_s_whole_csv_file_fits_in_its_call(owner: Any) -> None:
    """A CSV as big as the upload takes (5 MiB), sent as JSON text with its escapes: 6 MiB
    of body, which Django alone would refuse."""
    scenario = scenario_services.scenario_import(owner=owner, data=sign_up("http://shop.test"))
    line = 'Ada "the first",' + "x" * 600 + "\n"
    rows = MAX_BATCH_BYTES // len(line.encode())
    csv = "name,greet\n" + line * rows
    assert len(csv.encode()) <= MAX_BATCH_BYTES
    body = json.dumps({"csv": csv, "base_url": "http://shop.test"})
    assert 2.5 * MiB < len(body) <= MAX_ROWS_BODY_BYTES
    made = script(owner).post(f"/api/scenarios/{scenario.pk}/batches", body,
                              content_type="application/json")  # fmt: skip
    assert made.status_code == 201, made.content[:500]
    batch = Batch.objects.get()
    assert batch.rows.count() == rows
    assert batch.rows.first().params["name"] == 'Ada "the first"'


def test_every_call_with_a_limit_of_its_own_is_a_call_of_the_api() -> None:
    for (_method, route), limit in BODY_LIMITS.items():
        path = "/api/" + route.replace("<scenario_id>", "1").replace("<schedule_id>", "1")
        assert resolve(path).route == f"api/{route}"
        assert limit > MAX_BODY_BYTES


class _Row(dict):  # type: ignore[type-arg]
    """A batch's row that notes, each time it is read, whether an event loop runs there."""

    on_a_loop: list[bool] = []

    def __getitem__(self, key: str) -> Any:
        try:
            asyncio.get_running_loop()
            _Row.on_a_loop.append(True)
        except RuntimeError:
            _Row.on_a_loop.append(False)
        return super().__getitem__(key)


def test_a_batch_s_rows_are_checked_and_written_off_the_event_loop(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checking and writing the answer of a batch of 10,000 rows takes hundreds of
    milliseconds: never on the event loop that every page and run of the process shares."""
    monkeypatch.setattr(_Row, "on_a_loop", [])
    rows_of = job_selectors.batch_rows
    monkeypatch.setattr(job_selectors, "batch_rows",
                        lambda **kw: [_Row(row) for row in rows_of(**kw)])  # fmt: skip
    scenario = scenario_services.scenario_import(owner=owner, data=sign_up("http://shop.test"))
    client = script(owner)
    made = client.post(f"/api/scenarios/{scenario.pk}/batches", content_type="application/json",
                       data={"csv": "name,greet\nAda,Ada\nGrace,Grace\n"})  # fmt: skip
    assert made.status_code == 201, made.content[:500]
    assert made["Content-Type"] == "application/json; charset=utf-8"
    batch = made.json()
    assert [row["params"]["name"] for row in batch["rows"]] == ["Ada", "Grace"]
    assert batch["progress"]["total"] == 2
    for answer in (
        client.get(f"/api/batches/{batch['id']}"),
        client.post(f"/api/batches/{batch['id']}/stop"),
        client.post(f"/api/batches/{batch['id']}/retry"),
    ):
        assert answer.status_code == 200, answer.content[:500]
        assert [row["index"] for row in answer.json()["rows"]] == [1, 2]
    assert _Row.on_a_loop and not any(_Row.on_a_loop), _Row.on_a_loop


def test_a_body_without_a_valid_token_is_answered_before_it_is_read(owner: Any) -> None:
    """A stranger's body is never parsed (20 MiB of nested arrays held the server's other
    requests for seconds, and 1 GiB of memory, before the 401): a body that is not even
    JSON gets the 401, not a 400 about its JSON."""
    for headers in ({}, {"Authorization": "Bearer tw_not-a-token"}, {"Authorization": "Basic x"}):
        answer = Client(headers=headers).post("/api/scenarios", "[[[[ not json",
                                              content_type="application/json")  # fmt: skip
        error = refused(answer, 401, "unauthorized")
        assert "Bearer" in error["hint"]
    assert not Scenario.objects.exists()
    # With a token, the same body is read, and refused for what it is.
    refused(script(owner).post("/api/scenarios", "[[[[ not json",
                               content_type="application/json"), 400, "invalid")  # fmt: skip


def test_a_body_of_millions_of_values_is_refused_before_the_parse(owner: Any) -> None:
    scenario = scenario_services.scenario_import(owner=owner, data=sign_up("http://shop.test"))
    rows = '{"base_url": "http://shop.test", "rows": [' + ",".join(["{}"] * 1_500_000) + "]}"
    assert len(rows) < MAX_ROWS_BODY_BYTES
    answer = script(owner).post(f"/api/scenarios/{scenario.pk}/batches", rows,
                                content_type="application/json")  # fmt: skip
    error = refused(answer, 413, "too_large")
    assert "values; at most 1000000" in error["message"]
    assert not Batch.objects.exists()


@pytest.mark.parametrize("body", ["1", '"Login"', "[]", "null"])
def test_a_body_that_is_not_an_object_changes_nothing(owner: Any, body: str) -> None:
    """Once read as {} (every field its default): a PUT of the login scenario with 1 forgot
    the scenario's login, a replay's call with [] started a replay."""
    login = scenario_services.scenario_import(
        owner=owner, data={**sign_up("http://shop.test"), "name": "Sign in"}
    )
    scenario = scenario_services.scenario_import(owner=owner, data=sign_up("http://shop.test"))
    client = script(owner)
    set_login = client.put(f"/api/scenarios/{scenario.pk}/login", {"login_scenario": login.name},
                           content_type="application/json")  # fmt: skip
    assert set_login.status_code == 200, set_login.content
    error = refused(client.put(f"/api/scenarios/{scenario.pk}/login", body,
                               content_type="application/json"), 400, "invalid")  # fmt: skip
    assert error["message"] == "the body must be a JSON object"
    kept = client.get(f"/api/scenarios/{scenario.pk}").json()
    assert kept["login_scenario"] == "Sign in", kept
    refused(client.post(f"/api/scenarios/{scenario.pk}/replays", body,
                        content_type="application/json"), 400, "invalid")  # fmt: skip
    assert not Run.objects.exists()


def test_half_of_a_utf16_pair_is_refused_and_nothing_is_made(owner: Any) -> None:
    """JSON allows "\\ud800"; SQLite could not store it (a 500), and a batch was made and
    started before its rows failed to save (then every read of it was a 500)."""
    client = script(owner)
    named = json.dumps(sign_up("http://shop.test"))[:-1] + ', "description": "x\\ud800"}'
    error = refused(client.post("/api/scenarios", named, content_type="application/json"),
                    400, "invalid")  # fmt: skip
    assert "half of a UTF-16 pair" in error["message"]
    assert not Scenario.objects.exists()
    scenario = scenario_services.scenario_import(owner=owner, data=sign_up("http://shop.test"))
    rows = '{"base_url": "http://shop.test", "rows": [{"name": "Ada \\udc00", "greet": "x"}]}'
    refused(client.post(f"/api/scenarios/{scenario.pk}/batches", rows,
                        content_type="application/json"), 400, "invalid")  # fmt: skip
    assert not Batch.objects.exists() and not Run.objects.exists()
