"""JSON nested 100,000 deep (or too large) gets a clear answer at every entry point (the
act API, the scenario import page and command, the run socket), never a RecursionError."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import AsyncClient, Client

from dashboard.lib import jsonin
from dashboard.lib.jsonin import MAX_DEPTH, JsonRefused
from dashboard.models import Scenario
from dashboard.runs import services
from tests.dashboard.conftest import OpenSocket
from tests.dashboard.sockets import ANSWER_S

DEEP = "[" * 100_000 + "]" * 100_000
# As deep as a command can be sent (more brackets are more values than a command holds).
DEEP_COMMAND = "[" * 10_000 + "]" * 10_000
DEEP_OBJECT = '{"a":' * 100_000 + "1" + "}" * 100_000


@pytest.mark.parametrize("text", [DEEP, DEEP_OBJECT, "[" * 100_000])
def test_deep_json_is_refused_before_the_parser_recurses(text: str) -> None:
    with pytest.raises(JsonRefused) as caught:
        jsonin.loads(text, max_bytes=10_000_000)
    assert caught.value.code == "too_deep"
    assert f"at most {MAX_DEPTH}" in caught.value.message
    assert isinstance(caught.value, ValueError)


def test_brackets_inside_strings_are_text_and_the_limit_is_exact() -> None:
    tricky = json.dumps({"a": "[[[[{{{{" * 1000, "b": ['\\"]]]]', "x\\\\"], "c": "\\u005b"})
    assert jsonin.loads(tricky, max_bytes=100_000)["a"].startswith("[[[[")
    assert jsonin.nesting_depth(tricky) == 2
    at_limit = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert jsonin.loads(at_limit, max_bytes=1_000) == json.loads(at_limit)
    with pytest.raises(JsonRefused, match=f"{MAX_DEPTH + 1} deep"):
        jsonin.loads("[" + at_limit + "]", max_bytes=1_000)


def _depth_of(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth_of, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth_of, value.values()), default=0)
    return 0


def test_strings_are_told_apart_by_their_escapes_whatever_they_hold() -> None:
    """Quotes, backslashes, brackets and commas inside strings (and keys) are text: the
    depth and the count of values are the document's own."""
    texts = ["\\", '\\"', '"', '\\\\"]', "[{", "\\u005b", ",,", "\u2028", "\\\\"]
    documents = [{text: [text, {"k": [text, [text + "]"]]}]} for text in texts] + [
        [texts, {"x": texts}],
        texts[0],
        {"a": {"b": {"c": texts}}},
    ]
    for document in documents:
        text = json.dumps(document)
        assert jsonin.nesting_depth(text) == _depth_of(document), text
        assert jsonin.loads(text, max_bytes=10_000) == document
        assert jsonin.loads(text, max_bytes=10_000, max_values=1_000) == document


@pytest.mark.parametrize(
    "unclosed", ['{"task": "' + '\\"' * 500_000, '["' + "\\\\" * 250_000 + '\\"' * 250_000]
)
def test_an_unclosed_string_is_refused_in_one_pass_over_it(unclosed: str) -> None:
    """A megabyte string that never closes, its every other character an escaped quote: a
    match of a whole literal started again at each quote, ten seconds for 32 KB (the
    interpreter held, every other request of the server waiting), hours for this."""
    with pytest.raises(JsonRefused) as caught:
        jsonin.loads(unclosed, max_bytes=2_000_000)
    assert caught.value.code == "bad_json"
    assert jsonin.nesting_depth(unclosed) == 1


def test_size_utf8_and_syntax_are_typed_errors() -> None:
    with pytest.raises(JsonRefused) as caught:
        jsonin.loads(b"[1]" * 10, max_bytes=20)
    assert caught.value.code == "too_large" and "over 20 bytes" in caught.value.message
    with pytest.raises(JsonRefused, match="not UTF-8") as caught:
        jsonin.loads(b'"\xff"', max_bytes=20)
    assert caught.value.code == "bad_json"
    with pytest.raises(JsonRefused, match=r"not JSON \(line 1, column 2") as caught:
        jsonin.loads("{x", max_bytes=20)
    assert caught.value.to_dict() == {"code": "bad_json", "message": str(caught.value), "hint": ""}


@pytest.mark.django_db(transaction=True)
async def test_the_act_api_answers_400_to_deep_json(owner: Any) -> None:
    run = await sync_to_async(services.run_create)(owner=owner, task="x", start_url="")
    client = AsyncClient()
    await sync_to_async(client.force_login)(owner)
    for body in (DEEP_COMMAND, '{"action": "read_page", "args": ' + DEEP_COMMAND + "}"):
        response = await client.post(f"/runs/{run.pk}/act", body, content_type="application/json")
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == "too_deep" and f"at most {MAX_DEPTH}" in error["message"]
    response = await client.post(f"/runs/{run.pk}/act", DEEP, content_type="application/json")
    assert response.status_code == 413, response.content  # more values than a command holds
    assert response.json()["error"]["message"].endswith(f"at most {jsonin.MAX_COMMAND_VALUES}")
    response = await client.post(f"/runs/{run.pk}/act", "{x", content_type="application/json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "bad_json"
    big = json.dumps({"action": "read_page", "args": {"x": "y" * jsonin.MAX_COMMAND_BYTES}})
    response = await client.post(f"/runs/{run.pk}/act", big, content_type="application/json")
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"


@pytest.mark.django_db
def test_the_import_page_refuses_deep_json_with_a_message(owner: Any) -> None:
    client = Client()
    client.force_login(owner)
    upload = SimpleUploadedFile("deep.json", DEEP.encode(), content_type="application/json")
    response = client.post("/scenarios/import", {"file": upload})
    assert response.status_code == 400
    assert f"100000 deep; at most {MAX_DEPTH}" in response.content.decode()
    assert not Scenario.objects.exists()


@pytest.mark.django_db
def test_the_import_command_refuses_deep_json(owner: Any, tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    with pytest.raises(CommandError, match=r"deep\.json: nests .* 100000 deep") as caught:
        call_command("scenario_import", str(path), "--owner", owner.username, stdout=StringIO())
    assert caught.value.returncode == 3


@pytest.mark.django_db(transaction=True)
async def test_the_run_socket_answers_deep_json_with_an_error_and_stays_open(
    open_socket: OpenSocket, owner: Any
) -> None:
    run = await sync_to_async(services.run_create)(owner=owner, task="x", start_url="")
    comm, connected, _ = await open_socket(run.pk, owner)
    assert connected
    assert (await comm.receive_json_from(timeout=ANSWER_S))["type"] == "state"
    for text in (DEEP_COMMAND, '{"command": "act", "id": 1, "args": ' + DEEP_COMMAND + "}"):
        await comm.send_to(text_data=text)
        message = await comm.receive_json_from(timeout=ANSWER_S)
        assert message["type"] == "error" and message["code"] == "too_deep", message
        assert message["message"].startswith("a command nests arrays and objects 1000")
        assert message["message"].endswith(f" deep; at most {MAX_DEPTH}")
    await comm.send_to(text_data="[" + ",".join(["[]"] * 30_000) + "]")  # under 256 KiB
    message = await comm.receive_json_from(timeout=ANSWER_S)
    assert message["code"] == "too_large" and "values; at most 50000" in message["message"]
    await comm.send_to(text_data="x" * (jsonin.MAX_COMMAND_BYTES + 1))
    message = await comm.receive_json_from(timeout=ANSWER_S)
    assert message["code"] == "too_large" and "over" in message["message"]
    # Half of a UTF-16 pair in a message: said, and nothing reaches the run.
    await comm.send_to(text_data='{"command": "message", "text": "hi \\ud800"}')
    message = await comm.receive_json_from(timeout=ANSWER_S)
    assert message["code"] == "bad_text" and "half of a UTF-16 pair" in message["message"]
    # Still open and reading commands: the next one gets its ordinary answer.
    await comm.send_json_to({"command": "pause"})
    assert (await comm.receive_json_from(timeout=ANSWER_S))[
        "message"
    ] == "the run is not live any more"


def test_a_text_of_too_many_values_is_refused_before_the_parse() -> None:
    """Millions of values are one parse in C that holds the interpreter (every thread, the
    server's event loop too) for seconds: counted first, in C, and refused."""
    flood = "[" + ",".join(["[]"] * 200_000) + "]"
    with pytest.raises(JsonRefused) as caught:
        jsonin.loads(flood, max_bytes=10_000_000, max_values=100_000)
    assert caught.value.code == "too_large"
    assert caught.value.message == "the body holds about 400001 values; at most 100000"
    # Commas and brackets inside strings are text: a long CSV in one string is one value.
    csv = json.dumps({"csv": "a,b,[c],{d}\n" * 50_000})
    assert jsonin.loads(csv, max_bytes=10_000_000, max_values=10)["csv"].count(",") == 150_000


@pytest.mark.parametrize(
    "text", ['{"name": "Ada \\ud800"}', '["\\udfff"]', '{"\\ud83d": 1}', '["\\ud83d\\u0041"]']
)
def test_half_of_a_utf16_pair_is_no_text(text: str) -> None:
    """JSON allows it; no database, page or file can hold it (a 500 at the save, a
    conversation ended by UnicodeEncodeError): refused as the text is read."""
    with pytest.raises(JsonRefused) as caught:
        jsonin.loads(text, max_bytes=1_000)
    assert caught.value.code == "bad_text" and "half of a UTF-16 pair" in caught.value.message


def test_a_whole_utf16_pair_and_an_escaped_backslash_are_text() -> None:
    assert jsonin.loads('["\\ud83d\\ude00"]', max_bytes=100) == ["\U0001f600"]
    assert jsonin.loads('["\\\\ud800"]', max_bytes=100) == ["\\ud800"]  # a backslash, then text


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "9" * 5000])
def test_a_number_json_has_none_for_is_no_json(number: str) -> None:
    """Python's parser reads them; no database's JSON column nor any page holds them."""
    with pytest.raises(JsonRefused, match="is no JSON number") as caught:
        jsonin.loads(f'{{"rows": [{{"n": {number}}}]}}', max_bytes=100_000)
    assert caught.value.code == "bad_json"
    assert jsonin.loads('{"n": 1e308, "s": "NaN"}', max_bytes=100) == {"n": 1e308, "s": "NaN"}
