"""The runner's URL policy: rules with ports from the admin, the demo pages' own rule, and
the Chromium sandbox setting."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from automation import BrowserSession, UrlPolicy
from automation.errors import UrlBlocked
from dashboard.engineconf import browser_config, chromium_sandbox_setting, url_policy
from dashboard.models import UrlRule
from tests.conftest import CHROMIUM
from tests.conftest import browser_config as engine_config
from tests.daphne import ROOT


def add_rule(client: Client, domain: str, kind: str) -> Any:
    return client.post(
        "/admin/dashboard/urlrule/add/",
        {"domain": domain, "kind": kind, "enabled": "on", "note": ""},
    )


@pytest.fixture
def staff_client(django_user_model: Any) -> Client:
    user = django_user_model.objects.create_user("stella", password="pw", is_staff=True)
    user.is_superuser = True
    user.save()
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("typed", "stored"),
    [
        ("intranet.example:8443", "intranet.example:8443"),
        ("127.0.0.1:8000", "127.0.0.1:8000"),
        ("*.Intranet.Example.:08443", "intranet.example:8443"),
        ("[::1]:9000", "[::1]:9000"),
        ("10.0.0.5", "10.0.0.5"),
    ],
)
def test_the_admin_takes_a_rule_with_a_port(staff_client: Client, typed: str, stored: str) -> None:
    assert add_rule(staff_client, typed, "allow").status_code == 302
    assert UrlRule.objects.get().domain == stored
    UrlPolicy(allowed_domains=(stored,))  # the engine reads what was stored


@pytest.mark.django_db
@pytest.mark.parametrize("typed", ["a.example:0", "a.example:65536", "a.example:x", "[::1]x"])
def test_the_admin_refuses_a_bad_port(staff_client: Client, typed: str) -> None:
    response = add_rule(staff_client, typed, "allow")
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["domain"]
    assert not UrlRule.objects.exists()


@pytest.mark.django_db
def test_an_admin_rule_with_a_port_allows_that_port_only() -> None:
    UrlRule.objects.create(domain="127.0.0.1:8000", kind=UrlRule.Kind.ALLOW)
    policy = url_policy()
    assert policy.check("http://127.0.0.1:8000/x")
    with pytest.raises(UrlBlocked, match=r"127\.0\.0\.1:8001 is not on the allowed list"):
        policy.check("http://127.0.0.1:8001/x")


# -- the demo pages -----------------------------------------------------------------------


def debug_settings(settings: Any, origins: tuple[str, ...]) -> None:
    settings.DEBUG = True
    settings.TABWRIGHT = {
        **settings.TABWRIGHT,
        "BLOCK_PRIVATE_ADDRESSES": True,
        "DEMO_ORIGINS": origins,
    }


@pytest.mark.django_db
def test_debug_lets_in_the_demo_pages_and_nothing_else_private(settings: Any) -> None:
    debug_settings(settings, ("http://127.0.0.1:8000",))
    policy = url_policy()
    assert policy.check("http://127.0.0.1:8000/demo/form.html")
    assert policy.check("https://example.com/")  # the demo rule makes no allow list
    for url in [
        "http://127.0.0.1:8000/admin/",
        "http://127.0.0.1:8000/",
        "http://127.0.0.1:9000/demo/",
        "http://169.254.169.254/",
        "http://localhost:8000/demo/",
    ]:
        with pytest.raises(UrlBlocked, match=r"loopback|metadata"):
            policy.check(url)


@pytest.mark.django_db
def test_without_debug_there_is_no_demo_rule(settings: Any) -> None:
    debug_settings(settings, ("http://127.0.0.1:8000",))
    settings.DEBUG = False
    with pytest.raises(UrlBlocked, match="loopback"):
        url_policy().check("http://127.0.0.1:8000/demo/form.html")


@pytest.mark.django_db
def test_a_demo_origin_must_be_http(settings: Any) -> None:
    debug_settings(settings, ("https://127.0.0.1:8000",))
    with pytest.raises(ImproperlyConfigured, match="TABWRIGHT_DEMO_ORIGIN"):
        url_policy()


def test_debug_no_longer_turns_private_blocking_off() -> None:
    code = "from django.conf import settings; print(settings.TABWRIGHT['BLOCK_PRIVATE_ADDRESSES'])"
    env = {**os.environ, "TABWRIGHT_DEBUG": "1", "DJANGO_SETTINGS_MODULE": "dashboard.settings"}
    env.pop("TABWRIGHT_BLOCK_PRIVATE_ADDRESSES", None)
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == "True", done.stderr


@pytest.mark.django_db(transaction=True)
async def test_the_agent_reaches_the_demo_pages_but_not_the_admin(
    settings: Any, live_server: Any
) -> None:
    debug_settings(settings, (live_server.url,))
    policy = await sync_to_async(url_policy)()
    async with BrowserSession(engine_config(url_policy=policy)) as session:
        tab = await session.new_tab()
        await tab.navigate(f"{live_server.url}/demo/form.html")
        assert await tab.page.title() == "Sign up"
        # A script on the demo page asks for the admin of the same origin: the egress
        # proxy answers for it, Django never sees the request.
        answer = await tab.page.evaluate(
            "fetch('/admin/').then(async r => r.status + ' ' + await r.text())"
        )
        assert answer.startswith("403 Tabwright egress proxy")
        with pytest.raises(UrlBlocked, match="loopback"):
            await tab.navigate(f"{live_server.url}/admin/")


# -- the sandbox --------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "forced"), [("auto", None), ("1", True), ("0", False)])
def test_the_sandbox_setting(settings: Any, value: str, forced: bool | None) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "CHROMIUM_SANDBOX": value}
    assert chromium_sandbox_setting() is forced


@pytest.mark.django_db
def test_the_browser_config_carries_the_sandbox_setting(settings: Any) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "CHROMIUM_SANDBOX": "0", "CHROMIUM_PATH": CHROMIUM}
    assert browser_config().chromium_sandbox is False
    settings.TABWRIGHT = {**settings.TABWRIGHT, "CHROMIUM_SANDBOX": "maybe"}
    with pytest.raises(ImproperlyConfigured, match="give auto, 1 or 0"):
        browser_config()
