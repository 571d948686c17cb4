"""Property-based: a stored element identity (a scenario step's, a handler's) is read
whole or refused with ActionInvalid, whatever the file holds; what is read has the types
its fields say, and writes out and reads back the same."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from automation.browser.identity import ElementIdentity
from automation.errors import ActionInvalid
from tests.jsonfuzz import FUZZ, json_values, mutated

IDENTITY: dict[str, Any] = {
    "role": "button", "kind": "press", "name": "Save ${who}", "name_base": "Save",
    "name_own": "end",
    "aria_label": "Save", "test_ids": {"data-testid": "save"}, "name_attr": "save",
    "id": "save", "placeholder": "", "label": "", "autocomplete": "", "type": "submit",
    "tag": "button", "text": "Save", "target": "http://shop.test/save", "method": "post",
    "row": "Ada 42", "card": "", "section": "Form", "column": "Actions",
    "selectors": ["#save", "form > button"],
    "box": [10, 20, 80, 24], "look": "blue", "name_count": 1, "alike": ["Save all"],
    "unique": ["label"], "row_peers": 2, "row_words": ["42"],
    "variants": [{"role": "button", "name": "Store", "box": [1, 2, 3, 4], "version": 1}],
    "frame_url": "", "backend_node_id": 17, "captured_at": "2026-01-01T00:00:00Z",
    "version": 1,
}  # fmt: skip
FIELDS = {f.name: f for f in dataclasses.fields(ElementIdentity)}
HINTS = typing.get_type_hints(ElementIdentity)


def typed_as_said(identity: ElementIdentity) -> None:
    """Every field holds what its annotation says: texts are texts, counts whole numbers
    (no bool), the box four of them."""
    for name, hint in HINTS.items():
        value = getattr(identity, name)
        if hint is str:
            assert isinstance(value, str), name
        elif hint is int:
            assert isinstance(value, int) and not isinstance(value, bool), name
        elif name == "backend_node_id":
            assert value is None or (isinstance(value, int) and not isinstance(value, bool))
        elif name == "box":
            assert value is None or (len(value) == 4 and all(type(v) is int for v in value))
        elif name == "test_ids":
            assert all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
        elif name == "shows":  # a replay's, never read from what was kept
            assert value == {}, value
        elif name == "variants":
            for variant in value:
                assert not variant.variants
                typed_as_said(variant)
        else:
            assert isinstance(value, tuple) and all(isinstance(v, str) for v in value), name


def check_read(data: Any) -> None:
    try:
        identity = ElementIdentity.from_dict(data)
    except ActionInvalid as exc:
        assert str(exc) and exc.to_dict()["code"] == "action_invalid"
        return
    typed_as_said(identity)
    assert ElementIdentity.from_dict(identity.to_dict()) == identity
    identity.every(), identity.sameness(), identity.holds_password(), identity.changes(identity)


def test_the_seed_is_read_whole() -> None:
    identity = ElementIdentity.from_dict(IDENTITY)
    assert identity.to_dict() == {**IDENTITY, "variants": [identity.variants[0].to_dict()]}
    check_read(IDENTITY)


@pytest.mark.parametrize(
    "changed",
    [
        {"row_peers": float("inf")},  # JSON's 1e400
        {"name_count": -float("inf")},
        {"box": [0, 0, float("inf"), 10]},
        {"variants": [{"name_count": float("inf")}]},
    ],
)
def test_a_number_past_any_whole_number_is_refused(changed: dict[str, Any]) -> None:
    """Read as inf, it escaped as an OverflowError (a 500 of the Import page)."""
    with pytest.raises(ActionInvalid, match="element identity: "):
        ElementIdentity.from_dict({**IDENTITY, **changed})


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"box": ["a", 1, 2, 3]}, "box must be whole numbers, not 'a'"),
        ({"box": "1234"}, "box needs x, y, width, height"),  # (was read as 1, 2, 3, 4)
        ({"box": {"x": 1}}, "box needs x, y, width, height"),
        ({"name_count": "many"}, "name_count must be a whole number, not 'many'"),
        ({"row_peers": [2]}, "row_peers must be a whole number, not '[2]'"),
    ],
)
def test_a_number_that_is_no_number_is_refused_naming_the_field(
    changed: dict[str, Any], said: str
) -> None:
    """It was refused with Python's own words ("invalid literal for int() with base 10")."""
    with pytest.raises(ActionInvalid) as refused:
        ElementIdentity.from_dict({**IDENTITY, **changed})
    assert refused.value.message == f"element identity: {said}"


@pytest.mark.parametrize("node", ["17", [17], {"id": 17}, 1.5, True])
def test_a_backend_node_id_is_a_whole_number(node: object) -> None:
    """It was kept as it was, whatever it was: a node id of a text, a list, a bool."""
    with pytest.raises(ActionInvalid, match="backend_node_id must be a whole number"):
        ElementIdentity.from_dict({**IDENTITY, "backend_node_id": node})
    assert ElementIdentity.from_dict({**IDENTITY, "backend_node_id": None}).backend_node_id is None


def test_a_version_is_a_whole_number_not_true() -> None:
    with pytest.raises(ActionInvalid, match="bad version True"):
        ElementIdentity.from_dict({**IDENTITY, "version": True})


@FUZZ
@given(data=json_values | st.dictionaries(st.sampled_from(sorted(FIELDS)), json_values))
@example(data={"row_peers": float("inf")})
def test_any_json_is_read_or_refused(data: Any) -> None:
    check_read(data)


@FUZZ
@given(data=mutated(IDENTITY, keys=tuple(FIELDS)))
@example(data={**IDENTITY, "box": [0, 0, 1e308 * 10, 0]})
@example(data={**IDENTITY, "backend_node_id": "17"})
def test_a_valid_identity_changed_once_is_read_or_refused(data: Any) -> None:
    check_read(data)


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"test_ids": ["a"]}, "test_ids must be an object of attributes and their values"),
        ({"selectors": "abc"}, "selectors must be a list"),  # (was read as 'a', 'b', 'c')
        ({"alike": 5}, "alike must be a list"),
        ({"row_words": "Ada"}, "row_words must be a list"),
    ],
)
def test_a_list_or_an_object_that_is_neither_is_refused_naming_the_field(
    changed: dict[str, Any], said: str
) -> None:
    """A list of test ids was refused with Python's own words ("dictionary update sequence
    element #0 has length 1; 2 is required"); a text where a list belongs was read as its
    letters."""
    with pytest.raises(ActionInvalid) as refused:
        ElementIdentity.from_dict({**IDENTITY, **changed})
    assert refused.value.message == f"element identity: {said}"
