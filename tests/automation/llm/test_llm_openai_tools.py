"""OpenAICompatPlanner's native tool calls against the scripted server over real loopback
HTTP: tools offered, calls turned into action tags, the fallback to text when a server
refuses tools."""

from __future__ import annotations

import json

import pytest

from automation.actions import ACTIONS
from automation.agent.parser import parse_reply
from automation.budget import Budget
from automation.errors import LLMResponseError
from automation.llm.base import PlannerRequest
from automation.llm.openai import OpenAICompatPlanner
from automation.llm.tools import SHARED_TOOL, action_tag, call_tag, tool_definitions
from tests import fakellm
from tests.automation.llm.exchange import (
    REPLY_TEXT,
    RechunkingTransport,
    TokenSink,
    make_request,
)
from tests.fakellm import Reply, ScriptedLLMServer
from tests.fakellm_wire import CHUNK_CHARS

# Lets this module run on its own; tests/conftest.py provides the same fixture project-wide.
llm_server = fakellm.llm_server

# Native tool calls


NATIVE_SYSTEM = "You drive a browser with your tools."


def tool_request() -> PlannerRequest:
    request = make_request()
    request.actions = [ACTIONS["click"], ACTIONS["type"], ACTIONS["select_option"]]
    request.native_system = NATIVE_SYSTEM
    return request


def test_tool_definitions_give_common_actions_a_tool_and_share_one_for_the_rest() -> None:
    specs = [ACTIONS["click"], ACTIONS["fill"], ACTIONS["select_option"], ACTIONS["evaluate"]]
    tools = tool_definitions(specs)

    assert [t["name"] for t in tools] == ["click", "fill", SHARED_TOOL, "done"]
    click = tools[0]
    assert click["description"] == ACTIONS["click"].description
    assert click["parameters"]["type"] == "object"
    assert click["parameters"]["required"] == ["ref"]
    props = click["parameters"]["properties"]
    assert props == {"ref": {"type": "string"}, "button": {"type": "string"},
                     "modifiers": {"type": "array"}}  # fmt: skip
    # Every action accepts timeout_ms (the system prompt says so once): extra properties
    # must stay allowed.
    assert "additionalProperties" not in click["parameters"]
    assert tools[1]["parameters"]["required"] == ["ref", "value"]
    shared = tools[2]
    assert shared["parameters"]["properties"]["action"]["enum"] == ["select_option", "evaluate"]
    assert shared["parameters"]["required"] == ["action"]
    for spec in specs[2:]:  # listed as the text-mode prompt lists them
        assert f"{spec.signature()}: {spec.description}" in shared["description"]
    done = tools[-1]
    assert done["parameters"]["required"] == ["summary"]
    assert done["parameters"]["properties"]["summary"]["type"] == "string"
    # The same specs give the same bytes: the request's prefix can be cached.
    assert json.dumps(tool_definitions(specs)) == json.dumps(tools)


def test_a_call_of_the_shared_tool_is_the_action_it_names() -> None:
    assert call_tag(SHARED_TOOL, '{"action": "scroll", "dy": 300}') == (
        '<action>{"action": "scroll", "dy": 300}</action>'
    )
    # Without a name, the parser is left to say what is missing.
    tag = call_tag(SHARED_TOOL, {"ref": "e1"})
    parsed = parse_reply(tag)
    assert not parsed.actions and parsed.errors


def test_action_tag_puts_the_name_first_and_keeps_unicode() -> None:
    tag = action_tag("type", {"text": "Grüße", "action": "ignored", "ref": "e5"})

    assert tag == '<action>{"action": "type", "text": "Grüße", "ref": "e5"}</action>'
    assert call_tag("click", '{"ref": "e5"') == '<action>{"ref": "e5"</action>'
    assert call_tag("back", "") == '<action>{"action": "back"}</action>'
    deep = "[" * 5_000 + "]" * 5_000  # past Python's parser: kept raw, a parse error
    assert call_tag("click", deep) == f"<action>{deep}</action>"


async def test_streamed_tool_calls_become_tags_the_parser_accepts(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    calls = [
        ("type", {"ref": "e5", "text": "Ada Lovelace, Grüße", "submit": True}),
        ("click", {"ref": "e7"}),
        ("done", {"summary": "signed up"}),
    ]
    llm_server.script(Reply(text="Filling in the form.", tool_calls=calls))
    sink = TokenSink()

    reply = await planner.plan(tool_request(), budget=Budget(5000), on_token=sink)

    sent = llm_server.requests[0]
    assert [t["function"]["name"] for t in sent["tools"]] == ["click", "type", "act", "done"]
    assert all(t["type"] == "function" for t in sent["tools"])
    assert sent["tool_choice"] == "auto"
    parsed = parse_reply(reply.text)
    assert not parsed.errors
    assert [(a.name, a.args) for a in parsed.actions] == [
        ("type", {"ref": "e5", "text": "Ada Lovelace, Grüße", "submit": True}),
        ("click", {"ref": "e7"}),
        ("done", {"summary": "signed up"}),
    ]
    assert parsed.prose == "Filling in the form."
    # Text streams in pieces; each call is shown once, whole, never as fragments.
    text_pieces = [p for p in sink.pieces if "<action>" not in p]
    assert "".join(text_pieces) == "Filling in the form."
    assert [p.strip() for p in sink.pieces if "<action>" in p] == [
        action_tag(name, args) for name, args in calls
    ]
    assert "".join(sink.pieces) == reply.text
    # The server counted the argument fragments as completion tokens.
    assert reply.usage["completion_tokens"] > -(-len("Filling in the form.") // CHUNK_CHARS)


async def test_tool_calls_without_text_are_a_reply(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(tool_calls=[("click", {"ref": "e5"})]))

    reply = await planner.plan(tool_request(), budget=Budget(5000))

    assert reply.text == '<action>{"action": "click", "ref": "e5"}</action>'


async def test_invalid_tool_arguments_become_a_parse_error_not_a_crash(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(
        Reply(
            tool_calls=[("click", '{"ref": "e5", '), ("click", "[1, 2]"), ("click", {"ref": "e6"})]
        )
    )

    reply = await planner.plan(tool_request(), budget=Budget(5000))

    parsed = parse_reply(reply.text)
    assert [(a.name, a.args) for a in parsed.actions] == [("click", {"ref": "e6"})]
    assert [e.code for e in parsed.errors] == ["action_invalid", "action_invalid"]
    assert "not valid JSON" in parsed.errors[0].message
    assert "expected a JSON object" in parsed.errors[1].message


async def test_non_streamed_tool_calls_become_tags(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(
        Reply(
            text="Two steps.",
            json_body=True,
            tool_calls=[("fill", {"ref": "e3", "value": "Ada"}), ("click", {"ref": "e4"})],
        )
    )
    sink = TokenSink()

    reply = await planner.plan(tool_request(), budget=Budget(5000), on_token=sink)

    parsed = parse_reply(reply.text)
    assert [(a.name, a.args) for a in parsed.actions] == [
        ("fill", {"ref": "e3", "value": "Ada"}),
        ("click", {"ref": "e4"}),
    ]
    assert parsed.prose == "Two steps."
    assert "".join(sink.pieces) == reply.text


async def test_auto_mode_asks_again_without_tools_after_a_400_and_remembers(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.reject_tools = True
    llm_server.script(REPLY_TEXT, "second round")

    first = await planner.plan(tool_request(), budget=Budget(5000))
    second = await planner.plan(tool_request(), budget=Budget(5000))

    assert (first.text, second.text) == (REPLY_TEXT, "second round")
    with_tools, without, later = llm_server.requests
    assert "tools" in with_tools and "tool_choice" in with_tools
    assert "tools" not in without and "tool_choice" not in without
    # With tools the system prompt is the one that does not list the actions again;
    # asked without them, the one that does.  The rest of the conversation is the same.
    system = make_request().messages[0].content
    assert with_tools["messages"][0] == {"role": "system", "content": NATIVE_SYSTEM}
    assert without["messages"][0] == later["messages"][0] == {"role": "system", "content": system}
    assert without["messages"][1:] == with_tools["messages"][1:]
    assert "tools" not in later


async def test_a_400_that_is_not_about_tools_is_not_remembered(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(
        Reply(status=400, text="context too long"),
        Reply(status=400, text="context too long"),
        "fine now",
    )

    with pytest.raises(LLMResponseError) as info:
        await planner.plan(tool_request(), budget=Budget(5000))
    reply = await planner.plan(tool_request(), budget=Budget(5000))

    assert "context too long" in info.value.message
    assert reply.text == "fine now"
    assert ["tools" in r for r in llm_server.requests] == [True, False, True]


async def test_native_tools_true_never_falls_back(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.reject_tools = True
    llm_server.script("unused")
    planner = OpenAICompatPlanner(
        base_url=llm_server.base_url, model="m", native_tools=True, retries=0
    )
    try:
        with pytest.raises(LLMResponseError) as info:
            await planner.plan(tool_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    assert "400" in info.value.message and "does not support tools" in info.value.message
    assert len(llm_server.requests) == 1
    assert llm_server.pending == 1


async def test_native_tools_false_sends_no_tools(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(REPLY_TEXT)
    planner = OpenAICompatPlanner(base_url=llm_server.base_url, model="m", native_tools=False)
    try:
        reply = await planner.plan(tool_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    assert reply.text == REPLY_TEXT
    assert "tools" not in llm_server.requests[0]
    assert "tool_choice" not in llm_server.requests[0]


async def test_a_round_without_actions_sends_no_tools(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script("ok")

    await planner.plan(make_request(), budget=Budget(5000))

    assert "tools" not in llm_server.requests[0]


async def test_tool_call_fragments_split_across_network_chunks(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(tool_calls=[("type", {"ref": "e5", "text": "Größe ✓ " * 4})]))
    planner = OpenAICompatPlanner(
        base_url=llm_server.base_url, model="m", transport=RechunkingTransport(slice_bytes=5)
    )
    try:
        reply = await planner.plan(tool_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    (action,) = parse_reply(reply.text).actions
    assert action.args == {"ref": "e5", "text": "Größe ✓ " * 4}
