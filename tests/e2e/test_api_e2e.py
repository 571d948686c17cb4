"""The JSON API over real HTTP against a real daphne: a person makes a token on the API
tokens page, a script starts a run with it, follows it to the end and reads its steps and
events; another person's token sees none of it; the revoked token is refused."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from tests.daphne import api_token, log_in
from tests.e2e.ui import OTHER_PASSWORD, OTHER_USERNAME, PASSWORD, USERNAME, Server
from tests.tasks import FORM_TASK

pytestmark = pytest.mark.e2e


def script(base_url: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=20, headers={"Authorization": f"Bearer {token}"})


def test_a_script_with_a_token_runs_the_dashboard_and_nobody_else_s_token_sees_it(
    server: Server,
) -> None:
    page = log_in(server.base_url, (USERNAME, PASSWORD))
    token = api_token(page, "nightly sign-up check")
    mine = script(server.base_url, token)

    made = mine.post("/api/runs", json={
        "task": FORM_TASK, "start_url": f"{server.base_url}/demo/form.html", "planner": "rules",
    })  # fmt: skip
    assert made.status_code == 201, made.text
    run_id = made.json()["id"]
    deadline = time.monotonic() + 60
    while (run := mine.get(f"/api/runs/{run_id}").json())["status"] not in (
        "succeeded", "failed", "stopped",
    ):  # fmt: skip
        assert time.monotonic() < deadline, run
        time.sleep(0.2)
    assert run["status"] == "succeeded", run
    assert [s["action"] for s in run["steps"]] == ["navigate", "type", "type", "click", "wait_for"]
    shot = mine.get(run["steps"][0]["screenshot_url"])
    assert shot.status_code == 302  # a picture is the page's: the token is not a login
    events = mine.get(f"/api/runs/{run_id}/events").json()["events"]
    assert events[0]["type"] == "run.started"
    assert "run.finished" in [event["type"] for event in events]
    assert page.get(f"/runs/{run_id}/").status_code == 200  # the same run on the pages

    other_page = log_in(server.base_url, (OTHER_USERNAME, OTHER_PASSWORD))
    theirs = script(server.base_url, api_token(other_page, "theirs"))
    assert all(r["id"] != run_id for r in theirs.get("/api/runs").json())
    for path in (f"/api/runs/{run_id}", f"/api/runs/{run_id}/events"):
        answer = theirs.get(path)
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"
    assert theirs.post(f"/api/runs/{run_id}/stop").status_code == 404

    listed = page.get("/account/tokens").text
    token_id = re.search(r"/account/tokens/(\d+)/revoke", listed).group(1)
    page.post(f"/account/tokens/{token_id}/revoke",
              data={"csrfmiddlewaretoken": page.cookies["csrftoken"]})  # fmt: skip
    gone = mine.get("/api/runs")
    assert gone.status_code == 401 and gone.json()["error"]["code"] == "unauthorized"
    assert theirs.get("/api/runs").status_code == 200  # only that token
    assert mine.get("/api/openapi.json").status_code == 200  # the schema is public
