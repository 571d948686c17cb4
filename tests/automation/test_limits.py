"""What every database, page and HTTP body can hold: fit() makes an event so, a model's JSON
is read refusing numbers JSON has none for, and a request's body carries whole characters."""

from __future__ import annotations

import json
import math

import pytest

from automation.limits import cut_text, fit, loads_finite, storable, whole_text
from automation.llm.http import request_body


def test_numbers_json_has_none_for_are_stored_as_text_and_the_rest_as_it_is() -> None:
    data = {"nan": math.nan, "inf": [math.inf, -math.inf, 1.5], "deep": {"x": [math.nan]}}
    assert storable(data) == {
        "nan": "NaN", "inf": ["Infinity", "-Infinity", 1.5], "deep": {"x": ["NaN"]},
    }  # fmt: skip
    assert data["nan"] is math.nan  # a copy: the caller's data is left as it was
    plain = {"n": 1e308, "text": "Grüße 😀", "nul": "a\x00b"}
    assert storable(plain) is plain  # nothing to change: no copy
    said = {"said": "\\ud800"}  # a text that says an escape is text
    assert storable(said) == said
    fitted = fit({"type": "evaluate.finished", "value": math.nan})
    assert json.loads(json.dumps(fitted, allow_nan=False)) == {
        "type": "evaluate.finished", "value": "NaN",
    }  # fmt: skip


def test_half_of_a_utf16_pair_alone_becomes_a_replacement_character() -> None:
    assert whole_text("Go\ud800!") == "Go\ufffd!"
    assert whole_text("\udc00\U0001f600") == "\ufffd\U0001f600"
    assert whole_text("plain") == "plain"
    assert storable({"k\udfff": ["a\ud83d"]}) == {"k\ufffd": ["a\ufffd"]}
    assert cut_text("x\ud800" * 10, 1000) == "x\ufffd" * 10
    # The whole pair of an emoji, as json.dumps escapes it, is no half alone.
    emoji = {"text": "\U0001f600"}
    assert storable(emoji) is emoji


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("NaN", "NaN is no JSON number"),
        ('{"a": [Infinity]}', "Infinity is no JSON number"),
        ("-Infinity", "-Infinity is no JSON number"),
        ("1e400", "1e400 is no JSON number: past the largest a float holds"),
        ("1" * 5000, "is no JSON number: 5000 digits"),
    ],
)
def test_a_number_json_has_none_for_is_a_value_error_naming_it(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        loads_finite(text)


def test_json_with_finite_numbers_reads_as_json_loads_reads_it() -> None:
    text = '{"a": [1, -2.5e10, 1e308, 0.1, "NaN", 12345678901234567890], "b": null}'
    assert loads_finite(text) == json.loads(text)
    with pytest.raises(json.JSONDecodeError):
        loads_finite("{not json")


def test_a_request_body_carries_whole_characters() -> None:
    body = request_body({"messages": [{"content": "OK evaluate: Go\ud800 😀"}]})
    sent = json.loads(body.decode("utf-8"))
    assert sent == {"messages": [{"content": "OK evaluate: Go\ufffd 😀"}]}
    assert request_body({"a": "Grüße"}) == '{"a":"Grüße"}'.encode()
