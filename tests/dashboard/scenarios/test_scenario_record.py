"""scenario_record as a person uses it: the command opens the page in a browser reached by
CDP (a person's Chrome), the "person" acts in that window through a connection of its own,
and what they did is stored as a scenario that replays on the next release."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
import urllib.request
from collections.abc import Awaitable, Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from playwright.async_api import Page, async_playwright

from dashboard.models import IdentityHeal, Scenario, ScenarioStep

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"
Act = Callable[[Page], Awaitable[None]]


class Watch(StringIO):
    """A command's output that a test can wait on while the command runs."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = threading.Condition()

    def write(self, text: str) -> int:
        with self.changed:
            written = super().write(text)
            self.changed.notify_all()
        return written

    def wait_for(self, text: str, timeout: float = 30) -> None:
        with self.changed:
            seen = self.changed.wait_for(lambda: text in self.getvalue(), timeout)
        assert seen, f"{text!r} never came; output so far:\n{self.getvalue()}"


class Person(threading.Thread):
    """Acts in the recorded window, from a connection of its own, once recording began."""

    def __init__(self, cdp_url: str, out: Watch, act: Act) -> None:
        super().__init__(daemon=True)
        self.cdp_url, self.out, self.act = cdp_url, out, act
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._run())
        except BaseException as exc:  # re-raised in the test's thread
            self.error = exc

    async def _run(self) -> None:
        await asyncio.to_thread(self.out.wait_for, "recording ")
        async with async_playwright() as pw:
            browser = await pw.chromium.connect_over_cdp(self.cdp_url)
            pages = [p for c in browser.contexts for p in c.pages if p.url.startswith("http")]
            assert len(pages) == 1, [p.url for p in pages]
            await self.act(pages[0])

    def finish(self) -> None:
        self.join(60)
        assert not self.is_alive(), "the person's actions never finished"
        if self.error is not None:
            raise self.error


def record(cdp_url: str, act: Act, *args: str) -> tuple[str, int]:
    """Run scenario_record in this thread while a person acts; (output, exit status)."""
    out = Watch()
    person = Person(cdp_url, out, act)
    person.start()
    code = 0
    try:
        call_command("scenario_record", *args, "--cdp-url", cdp_url, "--allow-private",
                     "--timeout-ms", "60000", stdout=out, stderr=out)  # fmt: skip
    except CommandError as exc:
        out.write(f"\nERROR {exc}")
        code = exc.returncode
    person.finish()
    return out.getvalue(), code


@pytest.fixture
def cdp_url(chromium_with_cdp: str) -> str:
    """The person's Chrome, once its debugging port answers."""
    deadline = time.monotonic() + 60  # bounds a hang only
    while True:
        try:
            with urllib.request.urlopen(f"{chromium_with_cdp}/json/version", timeout=1):
                return chromium_with_cdp
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


async def sign_in(page: Page) -> None:
    await page.locator("#email").click()
    await page.keyboard.type("ada@example.org")
    await page.locator("#pw").click()
    await page.keyboard.type(PASSWORD)
    await page.get_by_text("Remember me").click()
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url("**/orders.html")


def test_a_person_records_in_their_browser_and_it_replays_on_the_next_release(
    cdp_url: str, fixture_url: str, owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def act(page: Page) -> None:
        await sign_in(page)
        await page.locator("tr", has_text="#1002").get_by_role("button", name="Edit").click()
        await page.get_by_text("Editing order #1002").wait_for()
        await page.close()  # the person closes the tab: recording ends

    start = f"{fixture_url}/replay/v1/login.html"
    out, code = record(cdp_url, act, start, "--name", "Edit an order", "--owner", owner.username)
    assert code == 0, out
    scenario = Scenario.objects.get(owner=owner)
    assert scenario.name == "Edit an order"
    assert scenario.base_url == f"{fixture_url}/replay/v1"
    steps = list(scenario.steps.order_by("index"))
    assert [s.action for s in steps] == ["navigate", "fill", "fill", "check", "click", "click"]
    assert steps[1].args == {"value": "ada@example.org"}
    assert steps[2].args == {"value": "${SECRET:PASSWORD}"}  # never as typed
    assert steps[5].identity["name"] == "Edit" and "#1002" in steps[5].identity["row"]
    # Printed as they came, a fill once its typing ended; never the password.
    assert "step   1 fill textbox 'Email' = 'ada@example.org'" in out
    assert "step   5 click button 'Edit'" in out and PASSWORD not in out
    assert "TABWRIGHT_SECRET_PASSWORD" in out and f"saved scenario {scenario.pk}" in out

    monkeypatch.setenv("TABWRIGHT_SECRET_PASSWORD", PASSWORD)
    replay_out = StringIO()
    call_command("scenario_replay", str(scenario.pk), "--base-url", f"{fixture_url}/replay/v2",
                 "--allow-private", stdout=replay_out)  # fmt: skip
    assert "RESULT passed 6/6" in replay_out.getvalue()


def test_a_heal_on_a_release_that_shows_the_secret_typed_replays_there_again(
    cdp_url: str, fixture_url: str, owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Release 2 names the button after the token just saved, and gave it another id: the
    heal written back holds neither the token nor what stands in for it, so the next
    replay there finds the button as well as before, and heals nothing."""
    token = "sk-live-4242abcd"

    async def act(page: Page) -> None:
        await page.locator("#token").click()
        await page.keyboard.type(token)
        await page.get_by_role("button", name="Save").click()
        await page.get_by_role("button", name="Delete token").click()
        await page.get_by_text("Token deleted").wait_for()
        await page.close()

    start = f"{fixture_url}/replay/tokens/v1/index.html"
    out, code = record(cdp_url, act, start, "--name", "Delete a token", "--owner", owner.username)
    assert code == 0, out
    scenario = Scenario.objects.get(owner=owner)
    step = ScenarioStep.objects.get(scenario=scenario, index=3)
    assert step.identity["name"] == "Delete token" and step.identity["id"] == "delete"

    monkeypatch.setenv("TABWRIGHT_SECRET_TOKEN", token)

    def replay() -> dict[str, Any]:
        printed = StringIO()
        call_command("scenario_replay", str(scenario.pk), "--base-url",
                     f"{fixture_url}/replay/tokens/v2", "--allow-private", "--save-heals",
                     "--json", stdout=printed)  # fmt: skip
        result = json.loads(printed.getvalue())
        assert result["status"] == "passed", result
        return result["steps"][3]

    first = replay()
    assert first["heal"] == "confident", first
    stored = json.dumps(ScenarioStep.objects.get(pk=step.pk).identity)
    for shown in (token, "${SECRET", "•••"):
        assert shown not in stored and shown not in json.dumps(first["healed"])
    healed = ScenarioStep.objects.get(pk=step.pk).identity
    assert healed["id"] == "remove-token" and healed["name"] == "Delete token"
    assert IdentityHeal.objects.filter(step_id=step.pk, status="applied").count() == 1

    second = replay()
    assert second["heal"] == "" and second["healed"] is None, second
    assert second["score"] >= first["score"]
    assert ScenarioStep.objects.get(pk=step.pk).identity == healed
    assert IdentityHeal.objects.filter(step_id=step.pk).count() == 1


def test_ctrl_c_ends_the_recording_and_the_scenario_is_written_to_a_file(
    cdp_url: str, fixture_url: str, tmp_path: Path
) -> None:
    out_file = tmp_path / "sign-in.json"

    async def act(page: Page) -> None:
        await sign_in(page)
        await asyncio.to_thread(out.wait_for, "step   4 click button 'Sign in'")
        os.kill(os.getpid(), signal.SIGINT)  # the person presses Ctrl-C; the tab stays open

    out = Watch()
    person = Person(cdp_url, out, act)
    person.start()
    call_command("scenario_record", f"{fixture_url}/replay/v1/login.html", "--name", "Sign in",
                 "--output", str(out_file), "--cdp-url", cdp_url, "--allow-private",
                 stdout=out, stderr=out)  # fmt: skip
    person.finish()
    data = json.loads(out_file.read_text())
    assert data["format"] == "tabwright.scenario" and data["name"] == "Sign in"
    assert [s["action"] for s in data["steps"]] == ["navigate", "fill", "fill", "check", "click"]
    assert PASSWORD not in out_file.read_text()
    assert not Scenario.objects.exists()  # --output writes the file instead of storing
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Ctrl-C is back


def test_what_cannot_be_recorded_says_why_and_stores_nothing(
    cdp_url: str, fixture_url: str, owner: Any, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    async def close(page: Page) -> None:
        await page.close()

    start = f"{fixture_url}/replay/v1/login.html"
    out, code = record(cdp_url, close, start, "--name", "Nothing", "--owner", owner.username)
    assert code == 1 and "nothing was recorded" in out

    def refused(*args: str) -> tuple[str, int]:
        try:
            call_command("scenario_record", *args, "--timeout-ms", "20000",
                         stdout=StringIO(), stderr=StringIO())  # fmt: skip
        except CommandError as exc:
            return str(exc), exc.returncode
        raise AssertionError("the command should have refused")

    settings.TABWRIGHT = {**settings.TABWRIGHT, "BLOCK_PRIVATE_ADDRESSES": True}
    message, code = refused(start, "--name", "Blocked", "--owner", owner.username,
                            "--cdp-url", cdp_url)  # fmt: skip
    assert code == 3 and "127.0.0.1" in message, message  # private addresses need --allow-private
    message, code = refused(start, "--name", "Who", "--owner", "nobody", "--cdp-url", cdp_url)
    assert code == 3 and "no user 'nobody'" in message
    message, code = refused(start, "--name", "  ", "--owner", owner.username)
    assert code == 3 and "--name" in message
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    message, code = refused(start, "--name", "Headless", "--owner", owner.username)
    assert code == 3 and "--cdp-url" in message and "DISPLAY" in message
    assert not Scenario.objects.exists()
