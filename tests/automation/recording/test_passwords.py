"""The passwords a run typed, found again in the person's words without being kept, and
kept out of the scenario saved from the run."""

from __future__ import annotations

import json

import pytest

from automation.errors import ScenarioInvalid
from automation.recording.fromrun import from_run_steps, typed_passwords
from automation.recording.passwords import PasswordMark, TypedPasswords, marks_of
from automation.secrets import MASK, Secrets

PASSWORD = {"role": "textbox", "name": "Password", "tag": "input", "type": "password",
            "name_attr": "pw", "selectors": ["#pw"]}  # fmt: skip
SHOWN = {**PASSWORD, "type": "text", "autocomplete": "current-password"}
BUTTON = {"role": "button", "name": "Sign in", "tag": "button", "selectors": ["#go"]}


def test_a_mark_finds_the_password_in_words_and_keeps_nothing_of_it() -> None:
    marks = marks_of(["hunter22", "hunter22", "ab"])
    assert len(marks) == 1  # once; two characters are in too many words to tell
    stored = json.dumps([mark.to_dict() for mark in marks])
    assert "hunter" not in stored and "22" not in json.dumps(marks[0].chars)
    typed = TypedPasswords((PasswordMark.from_dict(json.loads(stored)[0]),))
    task = "Sign in as ada with password hunter22 and archive order 1003"
    assert typed.mask(task) == f"Sign in as ada with password {MASK} and archive order 1003"
    assert typed.found_in([task, "no password here"]) == ["hunter22"]
    assert typed.mask("hunter2 and hunter222") == f"hunter2 and {MASK}2"  # as the run masks


def test_a_short_password_is_found_only_where_it_stands_by_itself() -> None:
    typed = TypedPasswords(tuple(marks_of(["abc", "x1"])))
    assert (
        typed.mask("abc, then abcd and xabc; x1 stays") == f"{MASK}, then abcd and xabc; x1 stays"
    )


def test_a_name_holding_a_password_is_refused_saying_why() -> None:
    typed = TypedPasswords(tuple(marks_of(["s3cret pass!"])))
    typed.check_name(f"Sign in with {MASK}")
    with pytest.raises(ScenarioInvalid, match="holds a password the run typed") as refused:
        typed.check_name("Sign in with s3cret pass!")
    assert "s3cret" not in str(refused.value)


def test_a_mark_that_cant_be_read_says_so() -> None:
    for broken in ({}, {"chars": 3, "salt": "zz", "digest": "00"}, {"chars": "x"}):
        with pytest.raises((KeyError, TypeError, ValueError)):
            PasswordMark.from_dict(broken)


def test_secrets_tell_the_passwords_they_mask_from_the_secrets_they_fill(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TABWRIGHT_SECRET_PW", "from-the-env")
    secrets = Secrets()
    secrets.fill("${SECRET:PW}")
    secrets.hide("hunter22")
    assert secrets.hidden() == ["hunter22"]


def test_a_password_the_steps_show_masked_is_kept_out_of_the_steps_before_it() -> None:
    """The run went to an address holding the password before it typed it into the
    password field (masked from then on): found in the person's words, the password is
    kept out of the scenario as one its steps show."""
    sent = "http://shop.test/app/login?user=ada&pw=hunter22"
    rows = [
        {"action": "navigate", "args": {"url": "http://shop.test/app/login"}},
        {"action": "click", "args": {"ref": "e2"}, "identity": BUTTON, "led_to": sent},
        {"action": "fill", "args": {"ref": "e1", "value": MASK}, "identity": PASSWORD},
        {"action": "navigate", "args": {"url": sent}},
    ]  # fmt: skip
    before = from_run_steps(rows, name="Sign in")
    assert "hunter22" in json.dumps(before.to_dict())  # what the steps alone can tell
    scenario = from_run_steps(rows, name="Sign in", passwords=["hunter22"])
    assert [s.action for s in scenario.steps] == ["navigate", "click", "fill"]
    assert scenario.steps[1].led_to == "http://shop.test/app/login?user=ada"
    assert scenario.steps[2].args == {"value": "${SECRET:PW}"}
    assert "step 3 (navigate): it spells out the password typed at step 2" in scenario.description
    assert "hunter22" not in json.dumps(scenario.to_dict())


def test_the_passwords_a_run_s_steps_typed_as_they_are() -> None:
    rows = [
        {"action": "fill", "args": {"ref": "e1", "value": "shown-pw"}, "identity": SHOWN},
        {"action": "fill", "args": {"ref": "e1", "value": MASK}, "identity": PASSWORD},
        {"action": "fill", "args": {"ref": "e1", "value": "${SECRET:PW}"}, "identity": PASSWORD},
        {"action": "type", "args": {"ref": "e3", "text": "a note"}, "identity": BUTTON},
        {"action": "fill", "args": {"ref": "e1", "value": "shown-pw"}, "identity": SHOWN},
        {"action": "fill", "args": {"ref": "e1", "value": "no identity"}},
    ]  # fmt: skip
    assert typed_passwords(rows) == ["shown-pw"]
