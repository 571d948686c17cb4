"""/metrics: who may read it, what it says, and the evaluate switch the operator controls."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from automation.metrics import EVALUATIONS
from dashboard.engineconf import browser_config
from dashboard.runs import services
from tests.dashboard.test_views import logged_in

TOKEN = "s3cret-scraper-token"


@pytest.fixture
def metrics_token(settings: Any) -> str:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "METRICS_TOKEN": TOKEN}
    return TOKEN


def assert_refused(response: Any) -> None:
    # A scraper gets a 401 it can act on, never the login page's redirect.
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "Location" not in response
    assert b"tabwright_" not in response.content


def sample(body: str, line_start: str) -> float:
    match = re.search(rf"^{re.escape(line_start)} (\S+)$", body, re.MULTILINE)
    assert match, f"no sample {line_start!r} in:\n{body}"
    return float(match.group(1))


# -- who may read it ----------------------------------------------------------------------


@pytest.mark.django_db
def test_anonymous_gets_401_with_a_bearer_challenge(client: Client) -> None:
    assert_refused(client.get("/metrics"))


@pytest.mark.django_db
def test_wrong_or_malformed_token_gets_401(client: Client, metrics_token: str) -> None:
    for header in (
        "Bearer wrong",
        f"Bearer {metrics_token}x",
        f"Basic {metrics_token}",
        metrics_token,
        "Bearer ",
        "Bearer ünïcode",
    ):
        assert_refused(client.get("/metrics", HTTP_AUTHORIZATION=header))


@pytest.mark.django_db
def test_right_token_reads_the_metrics(client: Client, metrics_token: str) -> None:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {metrics_token}")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    body = response.content.decode()
    assert "# TYPE tabwright_evaluations_total counter" in body
    assert "# TYPE tabwright_evaluate_duration_seconds histogram" in body
    assert "# TYPE tabwright_runs_live gauge" in body
    assert body.endswith("\n")


@pytest.mark.django_db
def test_an_empty_configured_token_never_matches_a_blank_bearer(
    client: Client, settings: Any
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "METRICS_TOKEN": ""}
    for header in ("Bearer ", "Bearer", ""):
        assert_refused(client.get("/metrics", HTTP_AUTHORIZATION=header))


@pytest.mark.django_db
def test_a_logged_in_user_reads_the_metrics_without_a_token(owner: Any) -> None:
    response = logged_in(owner).get("/metrics")
    assert response.status_code == 200
    assert b"# TYPE tabwright_evaluations_total counter" in response.content


@pytest.mark.django_db
def test_only_get(owner: Any, client: Client, metrics_token: str) -> None:
    assert logged_in(owner).post("/metrics").status_code == 405
    authorized = {"HTTP_AUTHORIZATION": f"Bearer {metrics_token}"}
    assert client.post("/metrics", **authorized).status_code == 405
    assert client.put("/metrics", **authorized).status_code == 405


# -- what it says -------------------------------------------------------------------------


@pytest.mark.django_db
def test_engine_counters_show_up_incremented(owner: Any) -> None:
    # The registry is process-wide: other tests may have counted already.
    before = EVALUATIONS.value(route="cdp", outcome="timeout")
    EVALUATIONS.inc(route="cdp", outcome="timeout")
    body = logged_in(owner).get("/metrics").content.decode()
    line = 'tabwright_evaluations_total{route="cdp",outcome="timeout"}'
    assert sample(body, line) == before + 1


@pytest.mark.django_db
def test_runs_live_counts_only_runs_this_process_drives(owner: Any, settings: Any) -> None:
    # Unfinished in the database but not started here (say, left over from a crash): not live.
    run = services.run_create(owner=owner, task="click OK", start_url="", planner="rules")
    services.run_set_status(run_id=run.pk, status="running")
    body = logged_in(owner).get("/metrics").content.decode()
    assert sample(body, "tabwright_runs_live") == 0
    assert sample(body, "tabwright_evaluate_enabled") == 0
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALLOW_EVALUATE": True}
    body = logged_in(owner).get("/metrics").content.decode()
    assert sample(body, "tabwright_evaluate_enabled") == 1


# -- the evaluate switch ------------------------------------------------------------------


@pytest.mark.django_db
def test_evaluate_is_off_unless_the_operator_turns_it_on(settings: Any) -> None:
    assert settings.TABWRIGHT["ALLOW_EVALUATE"] is False
    assert browser_config().evaluate_enabled is False
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALLOW_EVALUATE": True}
    assert browser_config().evaluate_enabled is True
