"""Property-based: arbitrary and adversarial model replies never crash the parser, the
loop's step function or a real run; every failure is a typed error."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automation import AgentConfig, AgentRun, BrowserSession
from automation.actions import ACTIONS, validate
from automation.agent.parser import MAX_ACTIONS_PER_REPLY, parse_reply
from automation.agent.turn import read_reply
from automation.browser.url_policy import UrlPolicy
from automation.errors import TabwrightError
from automation.events import RunFinished, RunPaused
from automation.llm.openai import OpenAICompatPlanner
from tests.conftest import browser_config
from tests.fakellm import ScriptedLLMServer
from tests.sinks import WaitingSink

NAMES = sorted([*ACTIONS, "done", "Click", "", "nope", "steps"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def tags(draw: Any) -> str:
    """One tag: mostly a JSON object naming some action with arbitrary args."""
    keys = st.sampled_from(["ref", "url", "value", "text", "key", "steps", "summary", "timeout_ms"])
    args = draw(st.dictionaries(keys | st.text(max_size=6), json_values, max_size=4))
    body = json.dumps({"action": draw(st.sampled_from(NAMES)), **args})
    body = draw(st.sampled_from([body, body[: len(body) // 2], f"```json\n{body}\n```", "[1,2]",
                                 "null", body.replace('"', "'")]))  # fmt: skip
    return draw(
        st.sampled_from(["<action>{}</action>", "<ACTION>{}</action>", "<action>{}"])
    ).format(body)


FRAGMENTS = ["NEED_HELP", "NEED_HELP:", "done", "I am done.", "</action>", "<action>", "{", "}",
             "\x00", "\u202e", "${SECRET:X}", "🙂", "\n", " ", '"action"']  # fmt: skip
replies = st.lists(
    tags() | st.sampled_from(FRAGMENTS) | st.text(max_size=40), max_size=MAX_ACTIONS_PER_REPLY + 3
).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=st.text() | replies)
def test_parser_and_step_function_take_any_text(text: str) -> None:
    parsed = parse_reply(text)
    turn = read_reply(text, last_signature='click{"ref": "e5"}')
    for error in [*parsed.errors, *turn.errors]:
        assert isinstance(error, TabwrightError)
        assert isinstance(error.to_dict()["code"], str) and str(error)
    for action in turn.actions:
        assert action.name in ACTIONS  # done is never run as an action
        assert validate(action.name, action.args) == action.args
    assert len(turn.actions) <= MAX_ACTIONS_PER_REPLY
    assert turn.pause is None or turn.pause[0] in {"stuck", "need_help"}
    assert all(isinstance(note, str) and note for note in turn.notes)
    assert turn.actions or turn.notes or turn.pause or turn.done is not None


def test_a_run_survives_any_reply(fixture_url: str, llm_server: ScriptedLLMServer) -> None:
    """Each example is one round of a real run on a real page; it ends or pauses at the
    round cap, and every event it emitted can be stored."""
    loop = asyncio.new_event_loop()
    policy = UrlPolicy(block_private=False, allowed_domains=("127.0.0.1",))  # no internet
    session = BrowserSession(browser_config(url_policy=policy, action_timeout_ms=500))
    tab = loop.run_until_complete(session.new_tab())

    async def one_round(reply: str) -> RunFinished:
        llm_server.script(reply)
        run = AgentRun(
            tab=tab,
            planner=OpenAICompatPlanner(base_url=llm_server.base_url, model="m", retries=0),
            sink=WaitingSink(),
            task="anything",
            start_url=f"{fixture_url}/demo/form.html",
            config=AgentConfig(
                round_cap=1,
                llm_timeout_ms=5_000,
                action_timeout_ms=500,
                run_timeout_ms=20_000,
                screenshots=False,
            ),
        )
        task = asyncio.create_task(run.run())
        while not task.done():
            if run.sink.of_type(RunPaused) and run.control.paused:  # type: ignore[attr-defined]
                run.control.stop("the example is over")
            await asyncio.sleep(0.02)
        finished = task.result()
        json.dumps([e.to_dict() for e in run.sink.events])  # type: ignore[attr-defined]
        return finished

    @settings(max_examples=25, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
    @given(reply=replies)
    def example(reply: str) -> None:
        finished = loop.run_until_complete(one_round(reply))
        assert finished.status in {"succeeded", "failed", "stopped"}, finished
        if finished.status == "failed":
            assert finished.reason

    try:
        example()
    finally:
        loop.run_until_complete(tab.close())
        loop.run_until_complete(session.close())
        loop.close()
