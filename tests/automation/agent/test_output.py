"""A run's output: done carries data that must match the run's JSON Schema (real loop,
real Chromium, the real OpenAI and Anthropic clients against the scripted server)."""

from __future__ import annotations

import asyncio
import json

import pytest

from automation import AgentConfig, AgentRun, Tab
from automation.agent.output import check_output, check_schema
from automation.errors import OutputInvalid
from automation.events import Observation, RunPaused
from automation.llm.anthropic import AnthropicPlanner
from automation.llm.openai import OpenAICompatPlanner
from tests.fakellm import Reply, ScriptedLLMServer
from tests.sinks import WaitingSink

SCHEMA = {
    "type": "object",
    "properties": {"button": {"type": "string"}, "fields": {"type": "integer", "minimum": 1}},
    "required": ["button", "fields"],
    "additionalProperties": False,
}


def act(**fields: object) -> str:
    return f"<action>{json.dumps(fields)}</action>"


def make_run(tab: Tab, server: ScriptedLLMServer, url: str, **tools: object) -> AgentRun:
    return AgentRun(
        tab=tab,
        planner=OpenAICompatPlanner(base_url=server.base_url, model="m", retries=0, **tools),  # type: ignore[arg-type]
        sink=WaitingSink(),
        task="Read the form: the submit button's label and how many text fields it has",
        start_url=url,
        config=AgentConfig(llm_timeout_ms=5_000, screenshots=False),
        output_schema=SCHEMA,
    )


async def test_a_matching_output_ends_the_run_with_it(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    output = {"button": "Sign up", "fields": 3}
    llm_server.script(act(action="done", summary="read it", output=output))
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html", native_tools=False)
    finished = await run.run()

    assert finished.status == "succeeded" and finished.output == output
    assert finished.to_dict()["output"] == output
    # The model was told the schema with the task, in text mode as in tools mode.
    task = llm_server.requests[0]["messages"][1]["content"]
    assert '"output"' in task and json.dumps(SCHEMA, sort_keys=True) in task


async def test_a_wrong_output_goes_back_once_then_the_person_is_asked(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    llm_server.script(
        act(action="done", summary="read it", output={"button": "Sign up", "fields": "3"}),
        act(action="done", summary="read it", output={"button": "Sign up"}),
        act(action="done", summary="read it", output={"button": "Sign up", "fields": 3}),
    )
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html", native_tools=False)
    task = asyncio.create_task(run.run())
    sink = run.sink
    assert isinstance(sink, WaitingSink)
    paused = await sink.wait_for(RunPaused)
    assert paused.reason == "output_invalid"
    assert "$: 'fields' is a required property" in paused.detail

    told = llm_server.requests[1]["messages"][-1]["content"]
    assert "ERROR [output_invalid]" in told and "$.fields: '3' is not of type 'integer'" in told
    seen = sink.of_type(Observation)
    assert [o.error["code"] for o in seen] == ["output_invalid", "output_invalid"]
    run.control.reply("fields is a number")
    finished = await asyncio.wait_for(task, 60)
    assert finished.status == "succeeded"
    assert finished.output == {"button": "Sign up", "fields": 3}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_the_done_tool_asks_for_the_output_in_the_schema_s_shape(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str, provider: str
) -> None:
    output = {"button": "Sign up", "fields": 3}
    llm_server.script(Reply(tool_calls=[("done", {"summary": "read", "output": output})]))
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    if provider == "anthropic":
        run.planner = AnthropicPlanner(base_url=llm_server.root_url, model="m", retries=0)
    finished = await run.run()

    assert finished.status == "succeeded" and finished.output == output
    tools = llm_server.requests[0]["tools"]
    done = next(t for t in tools if (t.get("name") or t["function"]["name"]) == "done")
    params = done.get("input_schema") or done["function"]["parameters"]
    assert params["properties"]["output"] == SCHEMA
    assert params["required"] == ["summary", "output"]


async def test_a_run_without_a_schema_has_no_output(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    llm_server.script(act(action="done", summary="ok", output={"anything": 1}))
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html", native_tools=False)
    run.output_schema = None
    finished = await run.run()
    assert finished.status == "succeeded" and finished.output is None


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ([1, 2], "must be a JSON object, not list"),
        ({"type": "nope"}, "not a valid JSON Schema: $.type:"),
        ({"type": "object", "description": "x" * 30_000}, "at most 20000"),
        ({"type": "string", "pattern": "(" * 4000 + "a" + ")" * 4000}, "nested too deeply"),
    ],
)
def test_a_bad_schema_is_refused_before_anything_runs(schema: object, message: str) -> None:
    with pytest.raises(OutputInvalid, match=None) as caught:
        check_schema(schema)
    assert message in caught.value.message and caught.value.code == "output_invalid"


def test_problems_are_listed_with_where_they_are_and_capped() -> None:
    schema = check_schema({"type": "array", "items": {"type": "integer"}})
    with pytest.raises(OutputInvalid) as caught:
        check_output(schema, [str(i) for i in range(15)])
    problems = caught.value.problems
    assert problems[0] == "$[0]: '0' is not of type 'integer'"
    assert len(problems) == 11 and problems[-1] == "… and 5 more"
    assert "15 problems" in caught.value.message
