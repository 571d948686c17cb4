"""Property-based: a scenario file, random or a valid one with one value changed, is read
whole or refused with ScenarioInvalid; what is read writes out and reads back the same,
and its placeholders resolve or are refused with a typed error."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from automation.errors import ScenarioInvalid, TabwrightError
from automation.recording.scenario import Scenario
from tests.automation.browser.test_identity_fuzz import IDENTITY
from tests.jsonfuzz import FUZZ, json_values, mutated

FIELD = {"role": "textbox", "name": "Email", "placeholder": "you@example.org",
         "type": "email", "tag": "input", "selectors": ["input[name=email]"]}  # fmt: skip
CALLEE = {
    "format": "tabwright.scenario", "version": 1, "name": "Promo",
    "params": {"code": {"default": "X1"}},
    "steps": [{"action": "fill", "args": {"value": "${code}"}, "identity": FIELD}],
}  # fmt: skip
LOGIN = {
    "format": "tabwright.scenario", "version": 1, "name": "Sign in",
    "params": {"user": {"default": "ada"}},
    "steps": [{"action": "fill", "args": {"value": "${user}"}, "identity": FIELD},
              {"action": "fill", "args": {"value": "${SECRET:PW}"}, "identity": FIELD}],
}  # fmt: skip
SEED: dict[str, Any] = {
    "format": "tabwright.scenario", "version": 1, "name": "Order", "description": "An order",
    "base_url": "http://shop.test", "login_scenario": "Sign in",
    "params": {"who": {"default": "Ada", "description": "the customer"}, "n": {"default": 3},
               "code": None},
    "steps": [
        {"action": "navigate", "args": {"url": "http://shop.test/orders?c=${code}"},
         "url": "http://shop.test/", "led_to": "http://shop.test/orders"},
        {"action": "click", "args": {"button": "left", "modifiers": ["Shift"]},
         "identity": IDENTITY, "intent": "save the order", "note": "n"},
        {"action": "fill", "args": {"value": "$${literal} ${who}"}, "identity": FIELD},
        {"action": "fill", "args": {"value": "${SECRET:SHOP_PASSWORD}"}, "identity": FIELD},
        {"action": "type", "args": {"text": "${TOTP:SHOP}"}, "identity": FIELD},
        {"action": "select_option", "args": {"values": ["Gold"]}, "role": "combobox",
         "name": "Tier", "selector": "#tier"},
        {"action": "press", "args": {"key": "Enter"}},
        {"action": "scroll", "args": {"direction": "down"}},
        {"action": "wait_for", "args": {"text": "Saved"}},
        {"action": "dialog", "args": {"accept": True}},
        {"action": "tabs", "args": {"op": "popup"}},
        {"action": "tabs", "args": {"op": "opener", "closed": True}},
        {"action": "call", "args": {"scenario": "Promo", "params": {"code": "${code}"}}},
        {"action": "expect", "args": {"kind": "text_visible", "text": "Saved ${who}"}},
        {"action": "expect", "args": {"kind": "rows", "text": "Ada", "count": 2,
                                      "at_least": True}},
        {"action": "expect", "args": {"kind": "url", "url": "http://shop.test/orders"}},
        {"action": "expect", "args": {"kind": "value", "value": ""}, "identity": FIELD},
        {"action": "expect", "args": {"kind": "items", "items": ["a", "b"]},
         "identity": IDENTITY},
        {"action": "expect", "args": {"kind": "download", "name": "orders.csv", "type": "csv",
                                      "min_bytes": 1, "max_bytes": 10**6, "rows": 2,
                                      "header": ["id", "name"], "text": "Ada"}},
        {"action": "expect", "args": {"kind": "checked"}, "identity": FIELD},
        {"action": "expect", "args": {"kind": "text_hidden", "text": "Error"}},
        {"action": "expect", "args": {"kind": "no_error"}},
        {"action": "back", "args": {}}, {"action": "reload"},
    ],
    "callees": {"Promo": CALLEE, "Sign in": LOGIN},
    "handlers": [{"name": "Cookie consent",
                  "when": {"role": "region", "name": "Cookie consent", "tag": "section"},
                  "steps": [{"action": "click", "args": {},
                             "identity": {"role": "button", "name": "Accept all"}}]}],
}  # fmt: skip


def check_read(data: Any) -> None:
    try:
        scenario = Scenario.from_dict(data)
    except ScenarioInvalid as exc:
        assert str(exc) and exc.to_dict()["code"]
        return
    written = scenario.to_dict()
    assert Scenario.from_dict(written) == scenario
    assert Scenario.from_dict(copy.deepcopy(written)).to_dict() == written
    for values in ({}, {"who": "Bo"}, {"nope": "1"}):
        try:
            scenario.resolve(values, env={"TABWRIGHT_SECRET_SHOP_PASSWORD": "pw"})
        except TabwrightError:
            pass
    scenario.placeholders()
    for step in scenario.steps:
        step.describe(), step.summary(), step.purpose()


def test_the_seed_is_read() -> None:
    scenario = Scenario.from_dict(SEED)
    assert len(scenario.steps) == len(SEED["steps"]) and scenario.callees
    check_read(SEED)


# Keys a changed file may add: the scenario's, a step's, a check's, an identity's.
KEYS = ("format", "version", "name", "params", "steps", "callees", "login_scenario",
        "handlers", "action", "args", "identity", "selector", "role", "led_to", "ref",
        "kind", "text", "count", "at_least", "values", "modifiers", "button", "scenario",
        "op", "closed", "default", "when", "variants", "box", "row_peers")  # fmt: skip
STEP = {"format": "tabwright.scenario", "version": 1, "name": "One step"}


@pytest.mark.parametrize("action", [{"a": 1}, ["click"], [], {}])
def test_a_step_type_that_is_no_text_is_refused(action: object) -> None:
    """An object or a list as a step's type escaped as a TypeError (unhashable)."""
    with pytest.raises(ScenarioInvalid, match="step 0: unknown step type"):
        Scenario.from_dict({**STEP, "steps": [{"action": action, "args": {}}]})


@pytest.mark.parametrize("kind", [{"a": 1}, ["url"]])
def test_a_check_kind_that_is_no_text_is_refused(kind: object) -> None:
    """So did one as a check's kind."""
    with pytest.raises(ScenarioInvalid, match="step 0: unknown check"):
        Scenario.from_dict({**STEP, "steps": [{"action": "expect", "args": {"kind": kind}}]})


@pytest.mark.parametrize("values", [[1], ["Gold", ["Silver"]], [None], [], [{"label": "x"}]])
def test_a_choice_of_labels_that_are_no_texts_is_refused(values: object) -> None:
    """A select_option step choosing a number or a list was read, then failed wherever it
    was said in words (its purpose: a TypeError from join) and at replay."""
    step = {"action": "select_option", "args": {"values": values}, "selector": "#tier"}
    with pytest.raises(ScenarioInvalid, match="step 0: select_option needs one option label"):
        Scenario.from_dict({**STEP, "steps": [step]})
    for values_given, said in (("Gold", "Gold"), (["Gold", "${tier}"], "Gold, ${tier}")):
        read = Scenario.from_dict({**STEP, "steps": [{**step, "args": {"values": values_given}}]})
        assert read.steps[0].purpose() == f"set the element to {said}"


def test_a_click_with_null_modifiers_is_read_as_one_with_none() -> None:
    """Null modifiers (a model's "no modifiers") escaped as a TypeError (None is not
    iterable); validate and the export take them as none."""
    click = {"action": "click", "args": {"modifiers": None}, "selector": "#save"}
    read = Scenario.from_dict({**STEP, "steps": [click]})
    assert Scenario.from_dict(read.to_dict()) == read
    with pytest.raises(ScenarioInvalid, match="step 0: button must be one of left"):
        Scenario.from_dict({**STEP, "steps": [{**click, "args": {"button": None}}]})


@pytest.mark.parametrize(
    "changed",
    [
        {"params": {"n": {"default": float("inf")}}},  # JSON's 1e400
        {"params": {"n": {"default": float("nan")}}},
        {"steps": [{"action": "back", "args": {"timeout": -float("inf")}}]},
        {"handlers": [{**SEED["handlers"][0], "x": [float("inf")]}]},
    ],
)
def test_a_number_that_is_not_finite_is_refused(changed: dict[str, Any]) -> None:
    """It was read, and stored where args and params are JSON: the database refused it
    with an IntegrityError (a 500 of the Import page); NaN never equalled itself."""
    with pytest.raises(ScenarioInvalid, match=r"a number is (-?inf|nan): a scenario.s numbers"):
        Scenario.from_dict({**SEED, **changed})


def test_values_nested_deeper_than_json_from_outside_are_refused() -> None:
    """Args nested 5,000 deep were read, then the placeholders' reader ran out of stack (a
    RecursionError); 64 is as deep as the dashboard reads JSON from outside."""
    deep: list[Any] = []
    for _ in range(5_000):
        deep = [deep]
    with pytest.raises(ScenarioInvalid, match="nested deeper than 64"):
        Scenario.from_dict({**STEP, "steps": [{"action": "back", "args": {"x": deep}}]})
    Scenario.from_dict(SEED)  # a scenario nests about 9 deep


@FUZZ
@given(data=json_values | st.dictionaries(st.sampled_from(sorted(SEED)), json_values))
@example(data={**STEP, "steps": [{"action": ["click"]}]})
def test_any_json_is_read_or_refused(data: Any) -> None:
    check_read(data)


@FUZZ
@given(data=mutated(SEED, keys=KEYS))
@example(data={**SEED, "steps": [{"action": "expect", "args": {"kind": {}}}]})
@example(data={**SEED, "steps": [{**SEED["steps"][1], "args": {"modifiers": None}}]})
@example(data={**SEED, "steps": [{**SEED["steps"][5], "args": {"values": [1]}}]})
def test_a_valid_scenario_changed_once_is_read_or_refused(data: Any) -> None:
    check_read(data)


@settings(FUZZ, max_examples=200)
@given(data=mutated(SEED, keys=KEYS).flatmap(lambda data: mutated(data, keys=KEYS)))
def test_a_valid_scenario_changed_twice_is_read_or_refused(data: Any) -> None:
    check_read(data)
