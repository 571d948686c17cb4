"""A run given an output schema ends in data: stored with the run, downloadable as JSON,
visible only to whoever may see the run."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import Client

from dashboard.models import Run, RunEvent
from dashboard.runs import services
from dashboard.runs.forms import NewRunForm
from dashboard.runs.runner import runner
from tests.dashboard.conftest import Runs
from tests.fakellm import ScriptedLLMServer

# Rollback transactions, but for the async tests: their database work runs in another
# thread (sync_to_async), which must see the rows.
pytestmark = pytest.mark.django_db

SCHEMA = {
    "type": "object",
    "properties": {"button": {"type": "string"}},
    "required": ["button"],
}


@database_sync_to_async
def create_run(owner: Any, url: str) -> Run:
    return services.run_create(
        owner=owner, task="Read the button's label", start_url=url, planner="openai",
        output_schema=SCHEMA,
    )  # fmt: skip


@database_sync_to_async
def stored(run_id: int) -> tuple[Run, dict[str, Any]]:
    finished = RunEvent.objects.get(run_id=run_id, type="run.finished")
    return Run.objects.get(pk=run_id), finished.data


@pytest.mark.django_db(transaction=True)
async def test_the_output_is_stored_with_the_run(
    runs: Runs,
    owner: Any,
    fixture_url: str,
    llm_server: ScriptedLLMServer,
    llm_at: Callable[[str], None],
) -> None:
    llm_at(llm_server.base_url)
    output = {"button": "Sign up — Grüße"}
    llm_server.script(
        f"<action>{json.dumps({'action': 'done', 'summary': 'read', 'output': output})}</action>"
    )
    run = await runs.start(await create_run(owner, f"{fixture_url}/demo/form.html"))
    await runner.wait(run.pk)

    saved, event = await stored(run.pk)
    assert saved.status == Run.Status.SUCCEEDED
    assert saved.output_schema == SCHEMA and saved.output == output
    assert event["output"] == output
    # The model was told the schema.
    assert json.dumps(SCHEMA, sort_keys=True) in llm_server.requests[0]["messages"][1]["content"]


def test_a_bad_schema_is_refused_and_nothing_is_created(owner: Any) -> None:
    from automation.errors import OutputInvalid

    with pytest.raises(OutputInvalid):
        services.run_create(owner=owner, task="t", start_url="", output_schema={"type": 5})
    assert not Run.objects.exists()


def test_the_output_downloads_as_json_for_its_owner_only(owner: Any, stranger: Any) -> None:
    run = Run.objects.create(owner=owner, task="t", output={"total": 12.5, "name": "Grüße"})
    empty = Run.objects.create(owner=owner, task="t")
    client = Client()
    client.force_login(owner)

    answer = client.get(f"/runs/{run.pk}/output.json")
    assert answer.status_code == 200
    assert answer["Content-Type"] == "application/json; charset=utf-8"
    assert answer["Content-Disposition"] == f'attachment; filename="run-{run.pk}-output.json"'
    assert json.loads(answer.content) == {"total": 12.5, "name": "Grüße"}
    assert client.get(f"/runs/{empty.pk}/output.json").status_code == 404
    assert client.post(f"/runs/{run.pk}/output.json").status_code in (403, 405)

    other = Client()
    other.force_login(stranger)
    assert other.get(f"/runs/{run.pk}/output.json").status_code == 404
    assert Client().get(f"/runs/{run.pk}/output.json").status_code == 302  # to the login


def form(**data: str) -> NewRunForm:
    return NewRunForm({"task": "Read the total", "planner": "openai", **data})


def test_the_new_run_form_takes_an_output_schema() -> None:
    given = form(output_schema=json.dumps(SCHEMA))
    assert given.is_valid(), given.errors
    assert given.cleaned_data["output_schema"] == SCHEMA
    empty = form()
    assert empty.is_valid() and empty.cleaned_data["output_schema"] is None

    for text, problem in [
        ("{not json", "not JSON"),
        # Nested past Python's parser (a RecursionError: the page answered 500).
        ('{"a":' * 3_000 + "1" + "}" * 3_000, "nests arrays and objects 3000 deep; at most 64"),
        ('{"type": 5}', "not a valid JSON Schema"),
        ("[1, 2]", "must be a JSON object"),
        # Nothing is fetched, read from disk or matched by backtracking.
        ('{"$ref": "http://127.0.0.2:18734/schema.json"}', "does not point within the schema"),
        ('{"items": {"$ref": "file:///etc/passwd"}}', "does not point within the schema"),
        ('{"type": "string", "pattern": "^(a)\\\\1$"}', "can't be used: invalid escape"),
    ]:
        refused = form(output_schema=text)
        assert not refused.is_valid()
        assert problem in " ".join(refused.errors["output_schema"])
    rules = NewRunForm({"task": "click Go", "planner": "rules", "output_schema": "{}"})
    assert not rules.is_valid() and "rule planner" in " ".join(rules.errors["output_schema"])


def test_the_run_page_shows_the_output_as_text(owner: Any) -> None:
    run = Run.objects.create(owner=owner, task="t", output_schema={}, output={"name": "<b>Ada</b>"})
    waiting = Run.objects.create(owner=owner, task="t", output_schema={})
    plain = Run.objects.create(owner=owner, task="t")
    client = Client()
    client.force_login(owner)

    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert "&quot;name&quot;: &quot;&lt;b&gt;Ada&lt;/b&gt;&quot;" in html  # text, never markup
    assert "<b>Ada</b>" not in html
    assert f'href="/runs/{run.pk}/output.json"' in html
    html = client.get(f"/runs/{waiting.pk}/").content.decode()
    assert 'id="output-card"' in html and "shows here when it ends" in html
    assert 'id="output-card"' not in client.get(f"/runs/{plain.pk}/").content.decode()


# What JSON has no number for: Python's parser reads these as floats (1e400 as infinity),
# the schema's "number" takes them, and no database's JSON nor any page can hold them.
# (Two a run: a third round in a row without an action that worked ends it as stuck.)
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("native", "not_numbers"),
    [(False, ["NaN", "1e400"]), (True, ["-Infinity", "1e400"])],
    ids=["action tag", "tool call"],
)
async def test_an_output_with_no_json_number_goes_back_to_the_model_and_the_run_ends_well(
    runs: Runs,
    owner: Any,
    fixture_url: str,
    llm_server: ScriptedLLMServer,
    llm_at: Callable[[str], None],
    native: bool,
    not_numbers: list[str],
) -> None:
    """The run failed "internal error: no free event number" and its output was lost: the
    store took the database refusing the output for another process's event."""
    from tests.fakellm import Reply

    llm_at(llm_server.base_url)
    number_schema = {"type": "object", "properties": {"total": {"type": "number"}}}
    bad = [f'{{"summary": "read", "output": {{"total": {number}}}}}' for number in not_numbers]
    if native:
        replies = [Reply(tool_calls=[("done", args)]) for args in bad]
    else:
        replies = [Reply(text=f'<action>{{"action": "done", {args[1:]}</action>') for args in bad]
    llm_server.script(
        *replies,
        Reply(text='<action>{"action": "done", "summary": "read", "output": {"total": 12.5}}'
              "</action>"),
    )  # fmt: skip
    run = await database_sync_to_async(services.run_create)(
        owner=owner, task="Read the total", start_url=f"{fixture_url}/demo/form.html",
        planner="openai", output_schema=number_schema,
    )  # fmt: skip
    run = await runs.start(run)
    await runner.wait(run.pk)

    saved, event = await stored(run.pk)
    assert saved.status == Run.Status.SUCCEEDED, saved.status_reason
    assert saved.output == {"total": 12.5} and event["output"] == {"total": 12.5}
    # Each refusal was told to the model, naming what it wrote.
    told = [json.dumps(request["messages"][-1]) for request in llm_server.requests[1:]]
    assert len(told) == len(not_numbers)
    for number, text in zip(not_numbers, told, strict=False):
        assert f"{number} is no JSON number" in text


@pytest.mark.django_db(transaction=True)
async def test_a_page_s_text_no_database_or_request_can_hold_is_carried_as_whole_characters(
    runs: Runs,
    owner: Any,
    fixture_url: str,
    llm_server: ScriptedLLMServer,
    llm_at: Callable[[str], None],
    settings: Any,
) -> None:
    """A page's JavaScript strings may hold half of a UTF-16 pair alone (and so may a
    model's JSON): one such character read off the page, or written by the model, failed
    the run ("internal error: UnicodeEncodeError").  The page's reaches the model and the
    stored events as U+FFFD, the model's is refused and told; the run goes on."""
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALLOW_EVALUATE": True}
    llm_at(llm_server.base_url)
    text = "'Go' + String.fromCharCode(0xd800) + String.fromCharCode(0) + '!\\u{1F600}'"
    llm_server.script(
        "".join(
            f"<action>{json.dumps({'action': 'evaluate', 'expression': expression})}</action>"
            for expression in (text, "0/0")  # (null: JSON has no NaN)
        ),
        '<action>{"action": "fill", "ref": "e4", "value": "Ada\\ud800"}</action>',
        '<action>{"action": "done", "summary": "read"}</action>',
    )
    run = await database_sync_to_async(services.run_create)(
        owner=owner, task="Read the values", start_url=f"{fixture_url}/demo/form.html",
        planner="openai",
    )  # fmt: skip
    run = await runs.start(run)
    await runner.wait(run.pk)

    saved = await database_sync_to_async(Run.objects.get)(pk=run.pk)
    assert saved.status == Run.Status.SUCCEEDED, saved.status_reason
    # The model read what the script gave, in whole characters.
    told = llm_server.requests[1]["messages"][-1]["content"]
    assert 'OK evaluate: "Go\ufffd\\u0000!\U0001f600"' in told and "OK evaluate: null" in told
    stored = await database_sync_to_async(
        lambda: json.dumps([e.data for e in RunEvent.objects.filter(run_id=run.pk)],
                           ensure_ascii=False)
    )()  # fmt: skip
    assert 'OK evaluate: \\"Go\ufffd' in stored or '"Go\ufffd' in stored
    stored.encode("utf-8")  # no half of a pair is left alone
    steps = await database_sync_to_async(lambda: list(saved.steps.order_by("index")))()
    assert [step.action for step in steps] == ["navigate", "evaluate", "evaluate"]
    # A model's JSON that says one is told so: a page would be given a character of no text.
    assert "half of a UTF-16 pair alone" in llm_server.requests[2]["messages"][-1]["content"]
