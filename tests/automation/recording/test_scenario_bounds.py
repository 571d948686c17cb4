"""A scenario file's values that replay would refuse, or read as something else, are
refused when the file is read, naming the step and the field: a wait past a minute or
below a millisecond, a key delay below 0 or past a second, a base URL that is no http(s)
address.  The same reading serves every step a file holds: its own, its callees', its
interruptions'."""

from __future__ import annotations

from typing import Any

import pytest

from automation.actions import validate
from automation.browser.fieldops import MAX_KEY_DELAY_MS
from automation.browser.pageops import MAX_WAIT_MS
from automation.errors import ActionInvalid, ScenarioInvalid
from automation.recording.scenario import Scenario

FIELD = {"role": "textbox", "name": "Search", "tag": "input", "selectors": ["#q"]}


def scenario_dict(*steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"format": "tabwright.scenario", "version": 1, "name": "Search",
            "base_url": "http://shop.test", "steps": list(steps), **extra}  # fmt: skip


def wait(time_ms: object) -> dict[str, Any]:
    return {"action": "wait_for", "args": {"time_ms": time_ms}}


def typing(delay_ms: object) -> dict[str, Any]:
    return {"action": "type", "args": {"text": "shoes", "delay_ms": delay_ms}, "identity": FIELD}


NAVIGATE = {"action": "navigate", "args": {"url": "http://shop.test/"}}


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (wait(10**20), "step 1: wait_for: time_ms must be a whole number from 1 to 60000, "
                       "not 100000000000000000000"),
        (wait(MAX_WAIT_MS + 1), "step 1: wait_for: time_ms must be a whole number"),
        (wait(-1), "step 1: wait_for: time_ms must be a whole number from 1 to 60000, not -1"),
        (wait(1e20), "step 1: wait_for: 'time_ms' must be int, not float"),
        (wait(1.0), "step 1: wait_for: 'time_ms' must be int, not float"),
        (wait(True), "step 1: wait_for: 'time_ms' must be int, not bool"),
        (typing(-5), "step 1: type: delay_ms must be a whole number from 0 to 1000, not -5"),
        (typing(MAX_KEY_DELAY_MS + 1), "step 1: type: delay_ms must be a whole number"),
        (typing(2.5), "step 1: type: 'delay_ms' must be int, not float"),
    ],
)  # fmt: skip
def test_a_wait_or_a_key_delay_out_of_bounds_is_refused_naming_the_step(
    step: dict[str, Any], message: str
) -> None:
    with pytest.raises(ScenarioInvalid, match=message) as refused:
        Scenario.from_dict(scenario_dict(NAVIGATE, step))
    assert refused.value.index == 1


def test_the_bounds_themselves_are_taken() -> None:
    read = Scenario.from_dict(scenario_dict(wait(1), wait(MAX_WAIT_MS), typing(0),
                                            typing(MAX_KEY_DELAY_MS)))  # fmt: skip
    assert [step.args for step in read.steps][:2] == [{"time_ms": 1}, {"time_ms": MAX_WAIT_MS}]
    assert [step.args["delay_ms"] for step in read.steps[2:]] == [0, MAX_KEY_DELAY_MS]


def test_a_model_s_wait_past_the_bound_is_refused_before_it_runs() -> None:
    """The same bounds, read from the same spec: a model's call is refused before any
    browser work, as a file's step is at import."""
    with pytest.raises(ActionInvalid, match="time_ms must be a whole number"):
        validate("wait_for", {"time_ms": MAX_WAIT_MS * 10})
    with pytest.raises(ActionInvalid, match="delay_ms must be a whole number"):
        validate("type", {"ref": "e1", "text": "x", "delay_ms": -1})


@pytest.mark.parametrize(
    ("base_url", "message"),
    [
        ("javascript:1", "base_url: refused URL 'javascript:1': javascript: is not allowed"),
        ("file:///etc/passwd", "file: is not allowed"),
        ("data:text/html,<b>hi</b>", "data: is not allowed"),
        ("ftp://shop.test", "ftp: is not allowed"),
        ("shop.test", "no scheme is not allowed"),
        ("http://", "no host"),
        ("http://shop.test:99999/", "malformed port"),
    ],
)
def test_a_base_url_that_is_no_http_address_is_refused(base_url: str, message: str) -> None:
    with pytest.raises(ScenarioInvalid, match=message.replace("(", r"\(")) as refused:
        Scenario.from_dict(scenario_dict(NAVIGATE, base_url=base_url))
    assert refused.value.message.startswith("base_url: ")


@pytest.mark.parametrize("base_url", ["", "http://shop.test", "https://shop.test:8443/app/",
                                      "http://127.0.0.1:8000/demo/index.html"])  # fmt: skip
def test_an_http_base_url_or_none_is_taken_as_written(base_url: str) -> None:
    """Only the form is checked here: whether a run may open it is the URL policy's, at
    replay (a scenario recorded on a local server stays importable)."""
    assert Scenario.from_dict(scenario_dict(NAVIGATE, base_url=base_url)).base_url == base_url


def test_a_callee_s_and_an_interruption_s_steps_are_read_the_same_way() -> None:
    """One reading for every step a file brings, not only its own."""
    callee = scenario_dict(wait(-1), name="Open")
    calling = {"action": "call", "args": {"scenario": "Open"}}
    with pytest.raises(ScenarioInvalid, match="callee 'Open': step 0: wait_for: time_ms"):
        Scenario.from_dict(scenario_dict(calling, callees={"Open": callee}))
    with pytest.raises(ScenarioInvalid, match="callee 'Open': base_url: refused URL"):
        Scenario.from_dict(scenario_dict(calling, callees={
            "Open": scenario_dict(NAVIGATE, name="Open", base_url="javascript:1")}))  # fmt: skip
    handler = {"name": "Cookies", "when": {"role": "button", "name": "Accept", "tag": "button"},
               "steps": [typing(-5)]}  # fmt: skip
    with pytest.raises(ScenarioInvalid, match="delay_ms must be a whole number"):
        Scenario.from_dict(scenario_dict(NAVIGATE, handlers=[handler]))
