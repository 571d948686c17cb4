"""One-time codes in a real browser: a person's code typed into a one-time-code field is
recorded as ``${TOTP:…}``, and a replay signs in to a back office with a password and the
code of the moment, neither of which comes back in its events or result."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest

from automation.browser.tab import Tab
from automation.events import ListSink, Observation
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from automation.secrets import Secrets
from tests.backoffice import (
    PASSWORD,
    SEED,
    BackOffice,
    back_office,
    order_scenario,
    sign_in_scenario,
)

ENV = {"TABWRIGHT_SECRET_BO_PASSWORD": PASSWORD, "TABWRIGHT_SECRET_BO": SEED}


@pytest.fixture
def office() -> Iterator[BackOffice]:
    with back_office() as office:
        yield office


async def test_a_code_a_person_types_is_recorded_as_a_totp(tab: Tab, office: BackOffice) -> None:
    await tab.navigate(f"{office.url}/otp")
    recorder = Recorder(tab)
    await recorder.start()
    await tab.page.locator("#otp").click()
    await tab.page.keyboard.type("493817")
    steps = await recorder.stop()
    assert [(s.action, s.args) for s in steps][-1] == ("fill", {"value": "${TOTP:OTP}"})
    assert "493817" not in json.dumps([s.to_dict() for s in steps])


def sign_in(url: str) -> Scenario:
    return sign_in_scenario(url)


async def test_a_replay_signs_in_with_the_code_of_the_moment(tab: Tab, office: BackOffice) -> None:
    sink = ListSink()
    secrets = Secrets(ENV, allowed={"BO", "BO_PASSWORD"})
    result = await Replay(tab, sign_in(office.url), sink=sink, env=ENV, secrets=secrets).run()
    assert result.ok, result.reason
    assert office.sign_ins == 1 and len(office.codes) == 1
    code = office.codes[0]
    text = json.dumps([e.to_dict() for e in sink.events]) + json.dumps(result.to_dict())
    assert code not in text and SEED not in text and PASSWORD not in text
    assert "${TOTP:BO}" in text

    # The session ends; a scenario that brings its login scenario, replayed by the library
    # with no way to sign in given, meets the sign-in page and signs in with it by itself.
    office.expire_sessions()
    again = ListSink()
    orders = signs_in_with(office.url, sign_in(office.url))
    replay = Replay(tab, orders, sink=again, env=ENV, secrets=secrets)
    result = await replay.run()
    assert result.ok, result.reason
    assert [o.status for o in result.steps] == ["passed"] * 5
    assert [e.text for e in again.events if isinstance(e, Observation)] == [
        "signed in again with the login scenario 'Sign in'"
    ]
    assert office.sign_ins == 2 and office.views["/orders/1001"] == 1
    text = json.dumps([e.to_dict() for e in again.events])
    assert office.codes[1] not in text and SEED not in text and PASSWORD not in text
    # The login scenario's own replay never signs in again with itself.
    itself = replace(orders.callees["Sign in"], login_scenario="Sign in", callees=orders.callees)
    assert Replay(tab, itself, env=ENV, secrets=secrets).relogin is None


def signs_in_with(url: str, login: Scenario) -> Scenario:
    """The back office's order scenario, bringing ``login`` as its login scenario."""
    data = {**order_scenario(url), "login_scenario": login.name,
            "callees": {login.name: login.to_dict()}}  # fmt: skip
    return Scenario.from_dict(data)


async def test_a_totp_not_granted_fails_before_any_page(tab: Tab, office: BackOffice) -> None:
    from automation.errors import SecretNotGranted

    with pytest.raises(SecretNotGranted, match="BO"):
        Replay(tab, sign_in(office.url), env=ENV, secrets=Secrets(ENV, allowed={"BO_PASSWORD"}))


async def test_a_sign_in_again_whose_secret_is_not_granted_says_so_where_the_replay_stops(
    tab: Tab, office: BackOffice
) -> None:
    """Whoever replays it was granted neither secret of its login scenario: the replay
    meets the sign-in page and stops there, saying why signing in again failed (not only
    that a sign-in profile would have done)."""
    orders = signs_in_with(office.url, sign_in(office.url))
    config = ReplayConfig(step_timeout_ms=3_000)  # its first step waits for the list, in vain
    replay = Replay(tab, orders, env=ENV, secrets=Secrets(ENV, allowed=set()), config=config)
    replay.signed_out_hint = "the page asks to sign in: start the replay with a sign-in profile"
    result = await replay.run()
    assert not result.ok and office.sign_ins == 0
    stopped = next(o for o in result.steps if not o.ok)
    assert stopped.error is not None
    assert "signing in again failed: the secret BO" in stopped.error["message"], stopped.error
    assert "not granted" in stopped.error["message"]
