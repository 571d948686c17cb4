"""A name is checked whole: a parameter's name, a call's parameter name, a name made a
parameter and one written into an export, each ending in a newline, is refused with
ScenarioInvalid naming the field.  They were checked with ``re.match(r"^…$")``, whose
``$`` matches just before a newline at the end: ``x\\n`` was stored as a parameter no
``${x}`` names."""

from __future__ import annotations

from typing import Any

import pytest

from automation.errors import ScenarioInvalid
from automation.recording.exportliterals import param
from automation.recording.scenario import Scenario
from tests.automation.recording.test_calls import NAVIGATE, call, scenario
from tests.automation.recording.test_scenario import IDENTITY

FILL = {"action": "fill", "args": {"value": "ada@example.org"}, "identity": IDENTITY}


def _with(params: dict[str, Any], *steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    return scenario("Orders", *(steps or (NAVIGATE,)), params=params, **top)


def test_a_parameter_name_ending_in_a_newline_is_refused_at_import() -> None:
    with pytest.raises(ScenarioInvalid, match=r"^params: 'x\\n' is not a parameter name"):
        Scenario.from_dict(_with({"x\n": {}}))
    with pytest.raises(ScenarioInvalid, match=r"params: 'page\\n' is not a parameter name"):
        Scenario.from_dict(_with({}, callees={"Open": scenario("Open", params={"page\n": {}})}))
    assert Scenario.from_dict(_with({"x": {}, "_y2": {}})).params == {"x": {}, "_y2": {}}


def test_a_call_s_parameter_name_ending_in_a_newline_is_refused_at_import() -> None:
    callees = {"Open": scenario("Open", NAVIGATE, params={"page": {}})}
    with pytest.raises(ScenarioInvalid, match=r"^step 0: call params: 'page\\n' is not a "):
        Scenario.from_dict(_with({}, call("Open", **{"page\n": "a"}), callees=callees))
    kept = Scenario.from_dict(_with({}, call("Open", page="a"), callees=callees))
    assert kept.steps[0].args["params"] == {"page": "a"}


def test_a_value_made_a_parameter_named_with_a_newline_is_refused() -> None:
    recorded = Scenario.from_dict(_with({}, NAVIGATE, FILL))
    with pytest.raises(ScenarioInvalid, match=r"'email\\n' is not a parameter name"):
        recorded.with_param(1, "email\n")
    assert recorded.with_param(1, "email").params == {"email": {"default": "ada@example.org"}}


def test_an_export_reads_no_parameter_named_with_a_newline() -> None:
    with pytest.raises(ScenarioInvalid, match=r"'x\\n' is not a parameter name"):
        param("x\n", {"x\n": {"default": "a"}})
    assert param("x", {"x": {"default": "a"}}) == "os.environ.get('TABWRIGHT_PARAM_x', 'a')"
