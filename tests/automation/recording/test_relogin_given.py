"""Which of its login scenario's parameters a replay gives a value of its own (another
user's sign-in than the login scenario's), known before its tab opens: such a run starts
signed out rather than with a sign-in profile (dashboard.runs.live)."""

from __future__ import annotations

from typing import Any

import pytest

from automation.recording.relogin import login_given
from automation.recording.scenario import Scenario

FILL = {"action": "fill", "role": "textbox", "name": "User", "args": {"value": "${user}"}}
SIGN_IN = {"version": 1, "name": "Sign in", "params": {"user": {"default": "ada"}},
           "steps": [FILL]}  # fmt: skip


def _entry(params: dict[str, Any], login: dict[str, Any] = SIGN_IN) -> Scenario:
    step = {"action": "fill", "role": "textbox", "name": "Note", "args": {"value": "${note}"}}
    if "user" in params:  # the entry's own parameter of that name, used by its steps
        step = {**step, "args": {"value": "${note} by ${user}"}}
    return Scenario.from_dict({"version": 1, "name": "Entry", "login_scenario": "Sign in",
                               "params": {"note": {"default": "hi"}, **params},
                               "steps": [step], "callees": {"Sign in": login}})  # fmt: skip


@pytest.mark.parametrize(
    ("own", "given", "expected"),
    [
        ({}, {}, []),  # the login scenario's own user: the profile's
        ({}, {"user": "ada"}, []),  # its default given again
        ({}, {"user": "lin"}, ["user"]),  # a row's user
        ({}, {"note": "lin's"}, []),  # a value of the entry's own only
        ({"user": {"default": "lin"}}, {}, ["user"]),  # the entry's own default signs in
        ({"user": {"default": "lin"}}, {"user": "ada"}, []),
    ],
)
def test_a_replay_gives_its_login_scenario_another_user(
    own: dict[str, Any], given: dict[str, str], expected: list[str]
) -> None:
    assert login_given(_entry(own), given) == expected


def test_a_login_scenario_without_a_default_signs_in_as_whoever_is_given() -> None:
    login = {**SIGN_IN, "params": {"user": {}}}
    assert login_given(_entry({}, login), {}) == []
    assert login_given(_entry({}, login), {"user": "ada"}) == ["user"]


def test_a_scenario_without_a_login_scenario_gives_it_nothing() -> None:
    alone = Scenario.from_dict({"version": 1, "name": "Alone", "steps": [FILL]})
    assert login_given(alone, {"user": "lin"}) == []
