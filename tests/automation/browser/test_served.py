"""What a write's JSON answer says of its failure (served.said_failed), read by replay and
the export alike: an answer that says it failed, whatever the HTTP status, and its words;
one that says it went through, or nothing either way, is none."""

from __future__ import annotations

import json

import pytest

from automation.browser.served import ANSWER_READ_BYTES, said_failed

FAILED = [
    ({"ok": False, "error": "Price locked: a promotion is running"},
     "Price locked: a promotion is running"),
    ({"ok": False}, '{"ok": false}'),
    ({"success": False, "message": "Not  yours\nto take"}, "Not yours to take"),
    ({"error": {"code": 409, "message": "Taken meanwhile"}}, "Taken meanwhile"),
    ({"data": None, "errors": [{"message": "Not allowed"}]}, "Not allowed"),
    ({"errors": {"name": "must be unique"}}, '{"errors": {"name": "must be unique"}}'),
    ({"status": "fail", "data": {"title": "A title is required"}},
     '{"status": "fail", "data": {"title": "A title is required"}}'),
    ({"status": "error", "message": "Database down"}, "Database down"),
    ({"saved": False, "message": "That e-mail is another customer's"},
     "That e-mail is another customer's"),
    ({"succeeded": False, "reason": "Locked"}, "Locked"),
    ({"status": "error"}, '{"status": "error"}'),  # an envelope of its outcome alone
    ({"status": "failed", "code": 409}, '{"status": "failed", "code": 409}'),
    ({"status": "Error", "msg": "Price  is locked"}, "Price is locked"),
    ({"result": "fail", "reason": "Locked by Ann"}, "Locked by Ann"),
]  # fmt: skip
NOT_FAILED = [
    {"ok": True},
    {"ok": True, "error": "a warning the app still took it with"},
    {"success": True, "errors": ["minor"]},
    {"data": {"id": 3}, "errors": []},
    {"id": 7, "status": "failed"},  # a record whose own status is "failed" (a job re-run)
    {"name": "Nightly import", "status": "error"},  # a record without an id: the same
    {"id": 7, "result": "fail"},  # a test's record
    {"status": "ok"},
    {"status": "error", "ok": True},  # the app says it took it
    {"error": None, "id": 3},
    {"saved": True, "errors": ["minor"]},
    {"saved": 0, "skipped": 2},  # a count
    {"created": False, "id": 3},  # words the rule does not read (a record already there)
    [{"ok": False}],  # not an object
]


@pytest.mark.parametrize(("answer", "said"), FAILED)
def test_an_answer_that_says_the_write_failed_is_read_with_its_words(
    answer: object, said: str
) -> None:
    assert said_failed(json.dumps(answer).encode()) == said


@pytest.mark.parametrize("answer", NOT_FAILED)
def test_an_answer_that_says_it_went_through_or_nothing_is_no_failure(answer: object) -> None:
    assert said_failed(json.dumps(answer).encode()) == ""


def test_an_answer_not_json_or_too_long_to_read_is_no_failure() -> None:
    assert said_failed(b"<html>Error</html>") == ""
    assert said_failed(b"\xff\xfe") == ""
    padded = json.dumps({"ok": False, "pad": "x" * ANSWER_READ_BYTES}).encode()
    assert said_failed(padded) == ""
