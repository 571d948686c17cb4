"""Property-based: an action's args as a model or an MCP client sends them are validated
or refused with ActionInvalid (strict or not); what is accepted has the types the action
says, its required args, and validates again to itself."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from automation.actions import ACTIONS, validate
from automation.errors import ActionInvalid
from tests.jsonfuzz import FUZZ, json_values

NAMES = sorted(ACTIONS)
ODD = st.sampled_from([float("inf"), float("nan"), -1, 0, 10**30, 1e308, "e1", "", [], {}, True,
                       "\x00", "${SECRET:A}", [{"type": "click", "ref": "e1"}] * 11])  # fmt: skip
BY_TYPE = {str: st.text(max_size=8) | st.sampled_from(["e1", "e5", "Enter", "http://x.test/"]),
           int: st.integers(-5, 70_000), float: st.floats(allow_nan=False), bool: st.booleans(),
           list: st.lists(st.text(max_size=4) | json_values, max_size=3),
           dict: st.dictionaries(st.text(max_size=4), json_values, max_size=3)}  # fmt: skip


def of_type(kind: type | tuple[type, ...]) -> st.SearchStrategy[Any]:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return st.one_of(*(BY_TYPE.get(k, json_values) for k in kinds))


@st.composite
def calls(draw: Any) -> tuple[str, dict[str, Any], bool]:
    """An action, and args: its own (mostly of their types), others, odd values."""
    name = draw(st.sampled_from(NAMES))
    params = ACTIONS[name].params
    args = {p.name: draw(of_type(p.type) | json_values | ODD) for p in params
            if draw(st.booleans()) or (p.required and draw(st.booleans()))}  # fmt: skip
    others = st.sampled_from(["timeout_ms", "ref", "steps", "values", "x"]) | st.text(max_size=6)
    args |= draw(st.dictionaries(others, json_values | ODD, max_size=2))
    return name, args, draw(st.booleans())


@settings(FUZZ, max_examples=1_500)
@given(call=calls())
def test_any_args_are_validated_or_refused(call: tuple[str, dict[str, Any], bool]) -> None:
    name, args, strict = call
    try:
        clean = validate(name, args, strict=strict)
    except ActionInvalid as exc:
        assert str(exc) and exc.to_dict()["code"]
        return
    params = {p.name: p for p in ACTIONS[name].params}
    assert set(clean) <= {*params, "timeout_ms"}
    for key, value in clean.items():
        if key in params:
            assert isinstance(value, params[key].type)
            assert not (isinstance(value, bool) and params[key].type is int)
    assert all(p.name in clean for p in params.values() if p.required)
    if strict:
        assert set(args) <= {*params, "timeout_ms"}
    assert validate(name, clean, strict=True) == clean
    # A step's args are kept, and PostgreSQL's JSON has no NaN: none is taken (nor one
    # turned into the text "nan" for a text param).
    assert holds_in_json({key: args[key] for key in clean}), args


def holds_in_json(value: Any) -> bool:
    """No NaN or infinity anywhere in ``value``: every number is one JSON can hold."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(holds_in_json(v) for v in value.values())
    if isinstance(value, list):
        return all(holds_in_json(v) for v in value)
    return True


@FUZZ
@given(name=st.text(max_size=12) | st.sampled_from(NAMES), args=json_values)
def test_any_name_and_args_are_validated_or_refused(name: str, args: Any) -> None:
    try:
        validate(name, args if isinstance(args, dict) else {"args": args})
    except ActionInvalid:
        pass
