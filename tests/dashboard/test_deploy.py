"""A deployment's settings: HTTPS behind a proxy, cookies and HSTS from the environment,
`check --deploy` clean with the documented values, a Content-Security-Policy on every page,
login throttling, and var/ private to the server's user."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.utils import timezone

from dashboard.models import Run
from tests.daphne import ROOT
from tests.dashboard.conftest import PASSWORD
from tests.servers import debian_postgres

# What docs/deploying.md documents (the host and key are the operator's own).
PRODUCTION = {
    "TABWRIGHT_DEBUG": "0",
    "TABWRIGHT_SECRET_KEY": "k7Yv2-Qp9rLx4Tm8Wn3Bc6Hs1Jd5Fg0Za7Ue2Ri9Oy4Pt6Mw3Nq8Lb1Xc5Vh0Ks",
    "TABWRIGHT_ALLOWED_HOSTS": "tabwright.example.com",
    "TABWRIGHT_CSRF_TRUSTED_ORIGINS": "https://tabwright.example.com",
    "TABWRIGHT_SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto,https",
    "TABWRIGHT_SECURE_COOKIES": "1",
    "TABWRIGHT_SSL_REDIRECT": "1",
    "TABWRIGHT_HSTS_SECONDS": "31536000",
    "TABWRIGHT_HSTS_INCLUDE_SUBDOMAINS": "1",
    "TABWRIGHT_HSTS_PRELOAD": "1",
}


def manage(var: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """manage.py in a fresh environment (only PATH and the TABWRIGHT_* given), umask 022."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "TABWRIGHT_VAR_DIR": str(var), **env},
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.umask(0o022),
    )


def test_check_deploy_is_clean_with_the_documented_settings(tmp_path: Path) -> None:
    done = manage(tmp_path / "var", "check", "--deploy", **PRODUCTION)
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout + done.stderr
    # Without them the same check names what is missing.
    bare = manage(tmp_path / "var2", "check", "--deploy")
    warnings = bare.stdout + bare.stderr
    for warning in ("W004", "W008", "W012", "W016"):
        assert f"security.{warning}" in warnings
    # Our middleware (Django's, run on the event loop) counts as Django's: none is missing.
    for missing in ("W001", "W002", "W003"):
        assert f"security.{missing}" not in warnings


def test_check_deploy_still_names_a_missing_middleware(tmp_path: Path) -> None:
    code = (
        "import django\ndjango.setup()\nfrom django.core import checks\n"
        "settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if 'Security' not in m]\n"
        "print(sorted(m.id for m in checks.run_checks(include_deployment_checks=True)))"
    )
    done = settings_of(tmp_path, code)  # no HSTS set: W004 were the middleware there
    assert done.returncode == 0, done.stderr
    found = done.stdout
    assert "security.W001" in found  # no security middleware
    assert "security.W004" not in found  # ... so HSTS is not looked at
    assert "security.W016" in found  # the CSRF middleware's settings still are


def test_var_and_the_database_are_created_private(tmp_path: Path) -> None:
    var = tmp_path / "var"
    done = manage(var, "migrate", "--noinput", "-v", "0")
    assert done.returncode == 0, done.stderr
    assert var.stat().st_mode & 0o777 == 0o700
    assert (var / "db.sqlite3").stat().st_mode & 0o777 == 0o600
    assert (var / "db.sqlite3").stat().st_size > 0  # a migrated database, not a stub
    assert (var / "secret_key").stat().st_mode & 0o777 == 0o600


def test_an_existing_open_var_is_reported_not_changed(tmp_path: Path) -> None:
    var = tmp_path / "var"
    var.mkdir(mode=0o755)
    var.chmod(0o755)
    (var / "db.sqlite3").touch(mode=0o644)
    done = manage(var, "check", "--deploy", **PRODUCTION)
    out = done.stdout + done.stderr
    assert "tabwright.W001" in out and f"chmod 700 {var}" in out
    assert var.stat().st_mode & 0o777 == 0o755  # the operator's folder, left as it was
    assert (var / "db.sqlite3").stat().st_mode & 0o777 == 0o600  # the database: made private


def settings_of(tmp_path: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c",
         "import django, os\nos.environ['DJANGO_SETTINGS_MODULE'] = 'dashboard.settings'\n"
         "from django.conf import settings\n" + code],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={"PATH": os.environ["PATH"], "TABWRIGHT_VAR_DIR": str(tmp_path / "var"), **env},
    )  # fmt: skip


def test_the_https_settings_come_from_the_environment(tmp_path: Path) -> None:
    code = (
        "print(settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE, "
        "settings.SECURE_HSTS_SECONDS, settings.SECURE_HSTS_INCLUDE_SUBDOMAINS, "
        "settings.SECURE_HSTS_PRELOAD, settings.SECURE_SSL_REDIRECT, "
        "settings.SECURE_PROXY_SSL_HEADER)"
    )
    default = settings_of(tmp_path, code)
    assert default.stdout.strip() == "False False 0 False False False None", default.stderr
    production = settings_of(tmp_path, code, **PRODUCTION)
    assert production.stdout.strip() == (
        "True True 31536000 True True True ('HTTP_X_FORWARDED_PROTO', 'https')"
    ), production.stderr
    header = settings_of(
        tmp_path, code, TABWRIGHT_SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO, https"
    )
    assert header.stdout.strip().endswith("('HTTP_X_FORWARDED_PROTO', 'https')")
    for bad in ("X-Forwarded-Proto", "X-Forwarded-Proto,https,http"):
        wrong = settings_of(tmp_path, code, TABWRIGHT_SECURE_PROXY_SSL_HEADER=bad)
        assert wrong.returncode != 0
        assert "TABWRIGHT_SECURE_PROXY_SSL_HEADER is a header and its value" in wrong.stderr
    wrong = settings_of(tmp_path, code, TABWRIGHT_HSTS_SECONDS="a year")
    assert "TABWRIGHT_HSTS_SECONDS must be a whole number, not 'a year'" in wrong.stderr


@pytest.mark.django_db
def test_behind_the_proxy_plain_http_is_redirected_and_https_gets_hsts(settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 3600
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    client = Client()
    plain = client.get("/accounts/login/")
    assert plain.status_code == 301 and plain["Location"].startswith("https://")
    secure = client.get("/accounts/login/", headers={"X-Forwarded-Proto": "https"})
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"] == "max-age=3600"


# -- the Content-Security-Policy ---------------------------------------------------------------


def directives(response: Any) -> dict[str, str]:
    header = response["Content-Security-Policy"]
    return dict(part.strip().split(" ", 1) for part in header.split(";") if part.strip())


@pytest.mark.django_db
def test_every_page_has_the_policy_and_no_inline_script(owner: Any, staff: Any) -> None:
    run = Run.objects.create(owner=owner, task="t", start_url="")
    client = Client()
    pages = ["/accounts/login/"]
    client.force_login(owner)
    pages += ["/", f"/runs/{run.pk}/", "/scenarios/"]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        policy = directives(response)
        assert policy["script-src"] == "'self'" and policy["default-src"] == "'self'", page
        assert policy["img-src"] == "'self' data:" and policy["connect-src"] == "'self'"
        assert policy["frame-ancestors"] == "'none'" and policy["object-src"] == "'none'"
        html = response.content.decode()
        assert "<script>" not in html and " onclick=" not in html, page
    admin = Client()
    admin.force_login(staff)
    assert "script-src" in directives(admin.get("/admin/"))


@pytest.mark.django_db
def test_the_demo_pages_are_exempt(settings: Any) -> None:
    settings.DEBUG = True
    response = Client().get("/demo/form.html")
    assert response.status_code == 200 and "Content-Security-Policy" not in response


# -- login throttling -------------------------------------------------------------------------


@pytest.mark.django_db
def test_failed_logins_lock_the_account_then_the_lock_expires(owner: Any, settings: Any) -> None:
    assert settings.AXES_FAILURE_LIMIT == 5
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        bad = client.post("/accounts/login/", {"username": "olive", "password": "wrong"})
        assert bad.status_code == 200 and "didn't match" in bad.content.decode()
    locked = client.post("/accounts/login/", {"username": "olive", "password": "wrong"})
    assert locked.status_code == 429
    # Now even the right password is refused, with a page that says why and for how long.
    good = client.post("/accounts/login/", {"username": "olive", "password": PASSWORD})
    assert good.status_code == 429
    page = good.content.decode()
    assert "Too many failed logins" in page and "locked for 15 minutes" in page
    assert "olive" in page and "_auth_user_id" not in client.session
    # Another person is not locked out by it.
    other = Client().post("/accounts/login/", {"username": "nobody", "password": "x"})
    assert other.status_code == 200
    # Once the lock's time has passed since the last failure, the right password works.
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    after = client.post("/accounts/login/", {"username": "olive", "password": PASSWORD})
    assert after.status_code == 302 and client.session["_auth_user_id"] == str(owner.pk)


@pytest.mark.django_db
def test_a_good_login_clears_the_count_and_the_admin_login_is_throttled(
    owner: Any, staff: Any, settings: Any
) -> None:
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        client.post("/accounts/login/", {"username": "olive", "password": "wrong"})
    assert (
        client.post("/accounts/login/", {"username": "olive", "password": PASSWORD}).status_code
        == 302
    )
    assert not AccessAttempt.objects.filter(username="olive").exists()
    admin = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        admin.post("/admin/login/", {"username": "stella", "password": "wrong"})
    refused = admin.post("/admin/login/", {"username": "stella", "password": PASSWORD})
    assert refused.status_code == 429 and "Too many failed logins" in refused.content.decode()


def documented_block(test_name: str) -> str:
    """The shell block of docs/deploying.md that names ``test_name`` as its test."""
    text = (ROOT / "docs" / "deploying.md").read_text()
    found = re.search(rf"^```sh covered-by={test_name}\n(.*?)^```$", text, re.M | re.S)
    assert found is not None, f"docs/deploying.md has no block covered by {test_name}"
    return found.group(1)


def test_the_scaling_out_database_lets_its_role_in_over_tcp_as_debian_s_does() -> None:
    """docs/deploying.md's database example, run as written (its package install left
    out) on a cluster that lets people in as Debian's does: the role it makes gets in
    over TCP with the DATABASE_URL it exports, and owns the database (makes a table)."""
    example = documented_block(
        "test_the_scaling_out_database_lets_its_role_in_over_tcp_as_debian_s_does"
    )
    lines = [line for line in example.splitlines() if "apt-get install" not in line]
    with debian_postgres() as cluster:
        script = "\n".join([
            # `sudo -u postgres` is the cluster's superuser over its socket, as on Debian.
            'sudo() { [ "$1" = -u ] && shift 2; "$@"; }',
            *lines,
            'psql -w "$DATABASE_URL" -Atc "create table t (n int); select current_user"',
        ]).replace(":5432/", f":{cluster.port}/")  # fmt: skip
        env = {**os.environ, "PGHOST": str(cluster.folder), "PGPORT": str(cluster.port),
               "PGUSER": "postgres"}  # fmt: skip
        env.pop("PGPASSWORD", None)
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "tabwright"


def test_the_scaling_out_web_processes_run_with_debug_off() -> None:
    example = documented_block("test_ten_queued_runs_on_two_workers_of_two_each_run_exactly_once")
    starts = [line for line in example.splitlines() if "make run" in line or "daphne" in line]
    assert starts and all("TABWRIGHT_DEBUG=1" not in line for line in starts)
    # make run turns DEBUG on unless told otherwise; the other processes have it off.
    assert all("DEBUG=0" in line for line in starts if line.startswith("make run")), starts
    assert "TABWRIGHT_DEBUG" not in example
