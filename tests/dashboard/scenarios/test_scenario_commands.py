"""scenario_export, scenario_import and scenario_replay as CI uses them: files in and out,
per-step results, and an exit status for every way a replay can end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from dashboard.models import IdentityHeal, Scenario, ScenarioStep
from dashboard.scenarios import services
from tests.daphne import ROOT
from tests.net import free_port

pytestmark = [pytest.mark.django_db, pytest.mark.long]

EMAIL = {"role": "textbox", "name": "Email", "tag": "input", "type": "email", "id": "email",
         "selectors": ["#email"]}  # fmt: skip
SIGN_IN = {"role": "button", "name": "Sign in", "tag": "button", "id": "signin",
           "selectors": ["#signin"]}  # fmt: skip


def sign_in(base: str) -> dict[str, Any]:
    return {
        "format": "tabwright.scenario", "version": 1, "name": "Sign in",
        "base_url": f"{base}/replay/v1",
        "params": {"email": {"default": "ada@example.org"}},
        "steps": [
            {"action": "navigate", "args": {"url": f"{base}/replay/v1/login.html"}},
            {"action": "fill", "args": {"value": "${email}"}, "identity": EMAIL},
            {"action": "fill", "args": {"value": "${SECRET:SHOP_PW}"},
             "identity": {"role": "textbox", "name": "Password", "tag": "input",
                          "type": "password", "name_attr": "password"}},
            {"action": "click", "args": {}, "identity": SIGN_IN},
            {"action": "wait_for", "args": {"text": "Signed in as"}},
        ],
    }  # fmt: skip


def run(*args: str) -> tuple[str, int]:
    out = StringIO()
    try:
        call_command(*args, stdout=out, stderr=StringIO())
    except CommandError as exc:
        return out.getvalue() + f"\nERROR {exc}", exc.returncode
    return out.getvalue(), 0


def test_export_and_import_carry_a_scenario_whole(
    owner: Any, tmp_path: Path, fixture_url: str
) -> None:
    scenario = services.scenario_import(owner=owner, data=sign_in(fixture_url))
    path = tmp_path / "sign-in.json"
    out, code = run("scenario_export", str(scenario.pk), "--output", str(path))
    assert code == 0 and json.loads(path.read_text())["steps"][1]["args"] == {"value": "${email}"}
    out, code = run("scenario_import", str(path), "--owner", owner.username)
    assert code == 0 and "imported scenario" in out and "(5 steps)" in out
    copy = Scenario.objects.exclude(pk=scenario.pk).get()
    assert list(copy.steps.values_list("action", flat=True)) == [
        "navigate",
        "fill",
        "fill",
        "click",
        "wait_for",
    ]
    code_text, code = run("scenario_export", str(scenario.pk), "--format", "pytest")
    assert code == 0 and "def test_sign_in(page: Page) -> None:" in code_text
    compile(code_text, "exported.py", "exec")  # valid Python


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not JSON (line 1"),
        (json.dumps({"format": "tabwright.scenario", "version": 7, "name": "x", "steps": []}),
         "newer than this Tabwright reads"),
        (json.dumps({"version": 1, "name": "x", "steps": [{"action": "navigate", "args": {}},
                     {"action": "warp"}]}), "step 0: navigate needs 'url'"),
        (json.dumps({"version": 1, "name": "x", "steps": [{"action": "type",
                     "args": {"text": "Ada\u0000"}}]}), "NUL character, U+0000 (in 'steps')"),
    ],
)  # fmt: skip
def test_import_refuses_corrupt_and_future_files_and_stores_nothing(
    owner: Any, tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    out, code = run("scenario_import", str(path), "--owner", owner.username)
    assert code == 3 and message in out
    assert not Scenario.objects.exists() and not ScenarioStep.objects.exists()
    out, code = run("scenario_import", str(tmp_path / "missing.json"), "--owner", owner.username)
    assert code == 3 and "No such file" in out


def test_replay_from_a_file_prints_each_step_and_passes(
    tmp_path: Path, fixture_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABWRIGHT_SECRET_SHOP_PW", "s3cret-value")
    path = tmp_path / "sign-in.json"
    path.write_text(json.dumps(sign_in(fixture_url)))
    out, code = run("scenario_replay", str(path), "--base-url", f"{fixture_url}/replay/v1",
                    "--allow-private", "--json", "--param", "email=grace@example.org")  # fmt: skip
    assert code == 0, out
    result = json.loads(out)
    assert result["status"] == "passed" and [s["status"] for s in result["steps"]] == ["passed"] * 5
    assert result["steps"][3]["strategy"] == "role_name"
    assert "s3cret-value" not in out


def test_a_failed_replay_s_heals_are_saved_only_as_proposals(
    owner: Any, fixture_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--save-heals after a replay that failed (a check after the sign-in finds nothing):
    what it found changed on v2 waits for a person, proposed; no step is rewritten."""
    monkeypatch.setenv("TABWRIGHT_SECRET_SHOP_PW", "s3cret-value")
    data = sign_in(fixture_url)
    data["steps"].append(
        {"action": "expect", "args": {"kind": "text_visible", "text": "Nothing like this"}}
    )
    scenario = services.scenario_import(owner=owner, data=data)
    out, code = run("scenario_replay", str(scenario.pk), "--allow-private", "--step-timeout-ms",
                    "3000", "--base-url", f"{fixture_url}/replay/v2", "--save-heals")  # fmt: skip
    assert code == 1 and "healed (confident)" in out, out
    heals = IdentityHeal.objects.filter(step__scenario=scenario)
    assert heals.exists() and {h.status for h in heals} == {"proposed"}, list(heals)
    assert ScenarioStep.objects.get(scenario=scenario, index=1).identity["id"] == "email"


def test_replay_exit_status_says_how_it_ended(
    owner: Any, tmp_path: Path, fixture_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = services.scenario_import(owner=owner, data=sign_in(fixture_url))
    base = ["scenario_replay", str(scenario.pk), "--allow-private", "--step-timeout-ms", "3000"]
    # A secret that is not in the environment: nothing runs.
    out, code = run(*base, "--base-url", f"{fixture_url}/replay/v1")
    assert code == 3 and "TABWRIGHT_SECRET_SHOP_PW" in out
    monkeypatch.setenv("TABWRIGHT_SECRET_SHOP_PW", "s3cret-value")
    # v2 renamed and reworded: it passes and says what it healed; --save-heals keeps them.
    out, code = run(*base, "--base-url", f"{fixture_url}/replay/v2", "--save-heals")
    assert code == 0, out
    assert "healed (confident)" in out and "RESULT passed 5/5 steps" in out
    email = ScenarioStep.objects.get(scenario=scenario, index=1)
    assert email.identity["id"] == "login-email"
    assert IdentityHeal.objects.filter(step__scenario=scenario, status="applied").exists()
    # A page where the button is gone: the step needs a person, exit status 2.
    gone = tmp_path / "gone.json"
    data = sign_in(fixture_url)
    data["steps"][3]["identity"] = {
        **SIGN_IN,
        "name": "Pay now",
        "id": "pay",
        "selectors": ["#pay"],
    }
    gone.write_text(json.dumps(data))
    out, code = run(
        "scenario_replay", str(gone), "--allow-private", "--base-url", f"{fixture_url}/replay/v1"
    )
    assert code == 2 and "needs_person" in out and "can't tell which element" in out
    # A base URL nobody answers: the first step fails, exit status 1.
    dead = f"http://127.0.0.1:{free_port()}"
    out, code = run(*base, "--base-url", dead)
    assert code == 1 and "could not connect: connection refused" in out
    out, code = run("scenario_replay", "999", "--base-url", dead)
    assert code == 3 and "no scenario 999" in out


def test_a_caller_s_replay_prints_its_callee_s_steps_and_heals_the_callee(
    owner: Any, fixture_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABWRIGHT_SECRET_SHOP_PW", "s3cret-value")
    login = services.scenario_import(owner=owner, data=sign_in(fixture_url))
    call = {"scenario": "Sign in", "params": {"email": "grace@example.org"}}
    caller = services.scenario_import(owner=owner, data={
        "version": 1, "name": "Signed in", "base_url": f"{fixture_url}/replay/v1",
        "steps": [{"action": "call", "args": call}]})  # fmt: skip
    out, code = run("scenario_replay", str(caller.pk), "--allow-private", "--save-heals",
                    "--base-url", f"{fixture_url}/replay/v2")  # fmt: skip
    assert code == 0, out
    assert "RESULT passed 1/1 steps" in out and out.count("  in 'Sign in': step") == 5
    assert ScenarioStep.objects.get(scenario=login, index=1).identity["id"] == "login-email"
    assert not IdentityHeal.objects.filter(step__scenario=caller).exists()


def with_checks(base: str, *checks: dict[str, Any]) -> dict[str, Any]:
    data = sign_in(base)
    data["steps"] += [{"action": "expect", "args": check} for check in checks]
    return data


def test_one_call_replays_on_several_base_urls_and_a_failing_check_fails_it(
    tmp_path: Path, fixture_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABWRIGHT_SECRET_SHOP_PW", "s3cret-value")
    path = tmp_path / "checked.json"
    # Both releases say who signed in, each in its own markup.
    path.write_text(json.dumps(with_checks(
        fixture_url, {"kind": "text_visible", "text": "Signed in as ada@example.org"},
    )))  # fmt: skip
    bases = ["--base-url", f"{fixture_url}/replay/v1/login.html",
             "--base-url", f"{fixture_url}/replay/v2"]  # fmt: skip
    out, code = run("scenario_replay", str(path), *bases, "--allow-private")
    assert code == 0, out
    assert out.count("RESULT passed 6/6 steps, 1/1 checks") == 2
    assert f"== {fixture_url}/replay/v2" in out
    assert "expect         passed       text 'Signed in as ada@example.org' is visible: yes" in out
    out, code = run("scenario_replay", str(path), *bases, "--allow-private", "--json")
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [(r["base_url"], r["status"]) for r in lines] == [
        (f"{fixture_url}/replay/v1/login.html", "passed"), (f"{fixture_url}/replay/v2", "passed"),
    ]  # fmt: skip
    # A check that does not hold: the replay is failed, exit status 1, the check says why.
    path.write_text(json.dumps(with_checks(
        fixture_url, {"kind": "rows", "text": "Grace Hopper", "count": 0},
    )))  # fmt: skip
    out, code = run("scenario_replay", str(path), *bases[:2], "--allow-private",
                    "--timeout-ms", "60000")  # fmt: skip
    assert code == 1, out
    assert "RESULT failed 5/6 steps, 0/1 checks" in out
    assert "expected 0 row(s) show 'Grace Hopper', but 1 row(s) show it" in out


def test_a_file_replay_needs_no_database(tmp_path: Path, fixture_url: str) -> None:
    """On a checkout that was installed but never migrated."""
    path = tmp_path / "sign-in.json"
    data = sign_in(fixture_url)
    data["steps"][2]["args"] = {"value": "not a secret here"}
    path.write_text(json.dumps(data))
    var = tmp_path / "fresh"
    env = {**os.environ, "TABWRIGHT_VAR_DIR": str(var),
           "TABWRIGHT_DB_PATH": str(var / "db.sqlite3"),
           "DJANGO_SETTINGS_MODULE": "dashboard.settings"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "manage.py", "scenario_replay", str(path), "--allow-private",
         "--base-url", f"{fixture_url}/replay/v1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "RESULT passed 5/5 steps" in done.stdout


def test_a_replay_signs_in_again_and_says_which_interruptions_it_handled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that brings its login scenario, replayed after the back office ended every
    session: it signs in again on the sign-in page, then clears the new release's
    interruptions, and says both."""
    from tests.automation.recording.test_totp_replay import ENV, signs_in_with
    from tests.backoffice import COOKIES, WHATS_NEW, back_office, sign_in_scenario

    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    with back_office() as office:
        office.switch_release("2026.12", after_views=2)  # the sign-in's page, the list
        office.expire_sessions()
        data = signs_in_with(office.url, sign_in_scenario(office.url)).to_dict()
        path = tmp_path / "order.json"
        path.write_text(json.dumps({**data, "handlers": [WHATS_NEW, COOKIES]}))
        out, code = run("scenario_replay", str(path), "--base-url", office.url, "--allow-private")
    assert code == 0, out
    assert (
        "note: signed in again with the login scenario 'Sign in'\n"
        "note: handled 'What's new' dialog\nnote: handled 'Cookie consent' banner\n"
    ) in out
    assert out.rstrip().splitlines()[-1].startswith("RESULT passed 5/5 steps")
    assert office.sign_ins == 1 and ENV["TABWRIGHT_SECRET_BO_PASSWORD"] not in out
