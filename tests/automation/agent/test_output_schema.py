"""An output schema anyone may write is safe to apply: its ``$ref`` reaches only the schema
itself (nothing is fetched, nothing is read from disk), and its patterns are RE2's, which
never backtrack; what can't be held to that is refused when the schema is given."""

from __future__ import annotations

from typing import Any

import pytest

from automation.agent.output import check_output, check_schema
from automation.errors import OutputInvalid

OUTSIDE = "does not point within the schema"
NOT_RE2 = "can't be used"


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({"$ref": "http://127.0.0.2:18734/schema.json"}, OUTSIDE),
        ({"properties": {"a": {"$ref": "file:///etc/passwd"}}}, OUTSIDE),
        ({"items": {"$ref": "other.json#/$defs/x"}}, OUTSIDE),
        ({"$ref": "#/$defs/missing", "$defs": {"there": {}}}, OUTSIDE),
        ({"$dynamicRef": "https://example.com/meta#node"}, OUTSIDE),
        # Under a draft of its own, in a place only that draft reads as a schema.
        (
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "definitions": {"a": {"$ref": "https://example.com/a.json"}},
            },
            OUTSIDE,
        ),
        # The bundled meta-schemas are not part of the schema either.
        ({"$ref": "https://json-schema.org/draft/2020-12/schema"}, OUTSIDE),
        ({"type": "string", "pattern": r"^(a)\1$"}, NOT_RE2),  # a backreference
        ({"type": "string", "pattern": "^(?=.*[0-9]).+$"}, NOT_RE2),  # lookahead
        ({"type": "object", "patternProperties": {"(?<!x)y": {}}}, NOT_RE2),  # lookbehind
        ({"items": {"type": "string", "pattern": "a{2000}"}}, NOT_RE2),  # past RE2's bound
        (
            {"patternProperties": {"^x": {}}, "unevaluatedProperties": False},
            "unevaluatedProperties with patternProperties",
        ),
    ],
)
def test_what_could_fetch_or_backtrack_is_refused_when_the_schema_is_given(
    schema: dict[str, Any], says: str
) -> None:
    with pytest.raises(OutputInvalid) as refused:
        check_schema(schema)
    assert says in refused.value.message and refused.value.code == "output_invalid"
    assert refused.value.hint


def test_the_hint_of_a_refused_reference_says_what_is_followed() -> None:
    with pytest.raises(OutputInvalid) as refused:
        check_schema({"$ref": "http://127.0.0.2:18734/schema.json"})
    assert "'http://127.0.0.2:18734/schema.json'" in refused.value.message
    assert "#/$defs/" in refused.value.hint and "nothing is fetched" in refused.value.hint


def test_references_within_the_schema_are_followed() -> None:
    schema = check_schema({
        "$defs": {
            "line": {"type": "object", "properties": {"qty": {"type": "integer"}}},
            "named": {"$id": "https://example.com/named", "type": "string", "minLength": 2},
        },
        "type": "object",
        "properties": {
            "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}},
            "name": {"$ref": "https://example.com/named"},  # embedded: its own $id
            "tree": {"type": "array", "items": {"$ref": "#/properties/tree"}},
        },
    })  # fmt: skip
    check_output(schema, {"lines": [{"qty": 2}], "name": "Ada", "tree": [[[]]]})
    with pytest.raises(OutputInvalid) as caught:
        check_output(schema, {"lines": [{"qty": "2"}], "name": "A", "tree": [[1]]})
    assert caught.value.problems == [
        "$.lines[0].qty: '2' is not of type 'integer'",
        "$.name: 'A' is too short",
        "$.tree[0][0]: 1 is not of type 'array'",
    ]


def test_patterns_are_matched_as_the_standard_says_in_every_keyword_that_uses_them() -> None:
    schema = check_schema({
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-\\d+$"}},
        "patternProperties": {"^x-": {"type": "integer"}},
        "propertyNames": {"pattern": "^[a-z-]+$"},
        "additionalProperties": False,
    })  # fmt: skip
    check_output(schema, {"code": "ABC-12", "x-count": 3})
    with pytest.raises(OutputInvalid) as caught:
        check_output(schema, {"code": "abc", "x-count": "3", "other": 1, "Upper": 1})
    assert caught.value.problems == [
        "$: 'Upper' does not match '^[a-z-]+$'",
        "$: 'Upper', 'other' do not match any of the regexes: '^x-'",
        "$.code: 'abc' does not match '^[A-Z]{3}-\\\\d+$'",
        "$.x-count: '3' is not of type 'integer'",
    ]
