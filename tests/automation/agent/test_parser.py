from __future__ import annotations

from automation.actions import ACTIONS
from automation.agent.parser import MAX_ACTIONS_PER_REPLY, parse_reply
from automation.agent.prompts import system_prompt


def test_several_actions_and_prose() -> None:
    result = parse_reply(
        'Filling in.\n<action>{"action": "type", "ref": "e5", "text": "a"}</action>\n'
        '<ACTION>{"action": "click", "ref": "e6"}</ACTION>'
    )
    assert [(a.name, a.args) for a in result.actions] == [
        ("type", {"ref": "e5", "text": "a"}),
        ("click", {"ref": "e6"}),
    ]
    assert result.prose == "Filling in." and not result.errors and result.need_help is None


def test_fenced_json_and_unclosed_tag() -> None:
    result = parse_reply('<action>```json\n{"action": "press", "key": "Enter"}\n```</action>')
    assert result.actions[0].args == {"key": "Enter"}
    result = parse_reply('<action>{"action": "wait_for", "text": "Done"}')
    assert result.actions[0].name == "wait_for"


def test_errors_are_typed_and_do_not_stop_good_actions() -> None:
    result = parse_reply(
        "<action>{oops}</action><action>[]</action><action>{}</action>"
        '<action>{"action": "fly"}</action><action>{"action": "click"}</action>'
        '<action>{"action": "click", "ref": 5}</action><action>{"action": "type", '
        '"ref": "e1", "text": null}</action><action>{"action": "click", "ref": "e2"}</action>'
    )
    assert [a.args for a in result.actions] == [{"ref": "5"}, {"ref": "e2"}]
    messages = [str(e) for e in result.errors]
    assert all(e.code == "action_invalid" for e in result.errors)
    assert "not valid JSON" in messages[0] and "expected a JSON object" in messages[1]
    assert 'missing "action"' in messages[2] and "unknown action 'fly'" in messages[3]
    assert "needs 'ref'" in messages[4] and "needs 'text'" in messages[5]


def test_need_help_and_done() -> None:
    result = parse_reply("I am blocked. NEED_HELP: the site asks for a 2FA code")
    assert result.need_help == "the site asks for a 2FA code" and not result.actions
    result = parse_reply('<action>{"action": "done", "summary": ["a", 1]}</action>')
    assert result.actions[0].name == "done" and result.actions[0].args["summary"] == "['a', 1]"


def test_cap_on_actions_per_reply() -> None:
    tag = '<action>{"action": "press", "key": "Tab"}</action>'
    result = parse_reply(tag * (MAX_ACTIONS_PER_REPLY + 3))
    assert len(result.actions) == MAX_ACTIONS_PER_REPLY
    assert "more than" in str(result.errors[0])


def test_signature_ignores_key_order() -> None:
    a = parse_reply('<action>{"action": "type", "ref": "e1", "text": "x"}</action>').actions[0]
    b = parse_reply('<action>{"text": "x", "ref": "e1", "action": "type"}</action>').actions[0]
    assert a.signature == b.signature


def test_prompt_lists_every_registered_action() -> None:
    prompt = system_prompt()
    for name in [*ACTIONS, "done"]:
        assert f"\n- {name}(" in prompt


def test_the_hint_lists_only_the_actions_this_run_offers() -> None:
    offered = {"click", "fill", "navigate"}
    result = parse_reply(
        '<action>{"action": "teleport"}</action><action>{"action": "evaluate", '
        '"expression": "1"}</action><action>{"action": "click", "ref": "e1"}</action>',
        offered=offered,
    )

    assert [a.name for a in result.actions] == ["click"]
    unknown, not_offered = result.errors
    assert "unknown action 'teleport'" in str(unknown)
    assert "does not offer: 'evaluate'" in str(not_offered)
    for error in (unknown, not_offered):
        assert error.hint == "the actions you have: click, done, fill, navigate"


def test_an_action_nested_too_deep_is_a_typed_error() -> None:
    """A reply's action of arrays in arrays thousands deep (a model a page talked into it)
    is told to the model; Python's parser raised RecursionError, ending the run."""
    deep = "[" * 5_000 + "]" * 5_000
    result = parse_reply(f'<action>{{"action": "click", "ref": {deep}}}</action>'
                         '<action>{"action": "click", "ref": "e2"}</action>')  # fmt: skip
    assert [a.args for a in result.actions] == [{"ref": "e2"}]
    assert [e.code for e in result.errors] == ["action_invalid"]
    assert "nests too deep to read" in str(result.errors[0])


def test_a_number_json_has_none_for_is_a_typed_error_naming_it() -> None:
    """Python's parser reads NaN, Infinity and 1e400 as floats: nothing could store them."""
    for number, said in [
        ("NaN", "NaN is no JSON number"),
        ("-Infinity", "-Infinity is no JSON number"),
        ("1e400", "1e400 is no JSON number"),
        ("-2.5E+999", "-2.5E+999 is no JSON number"),
        ("9" * 5000, "5000 digits"),  # past Python's int digits: a ValueError of its own
    ]:
        reply = f'<action>{{"action": "scroll", "dy": {number}}}</action>'
        reply += '<action>{"action": "done", "summary": "s", "output": {"n": 1e308}}</action>'
        result = parse_reply(reply)
        assert [e.message for e in result.errors if said in e.message], (number, result.errors)
        assert [a.name for a in result.actions] == ["done"]  # the rest still read
        assert result.actions[0].args["output"] == {"n": 1e308}


def test_half_of_a_utf16_pair_alone_is_refused_and_a_whole_pair_is_read() -> None:
    result = parse_reply(
        '<action>{"action": "fill", "ref": "e4", "value": "Ada\\ud800"}</action>'
        '<action>{"action": "fill", "ref": "e4", "value": "Ada \\ud83d\\ude00"}</action>'
        '<action>{"action": "fill", "ref": "e4", "value": "Ada\\\\ud800"}</action>'
    )
    assert len(result.errors) == 1 and "half of a UTF-16 pair alone" in result.errors[0].message
    assert [a.args["value"] for a in result.actions] == ["Ada \U0001f600", "Ada\\ud800"]
    # A half the server's own JSON decoded into the reply text is a replacement character.
    prose = parse_reply("I see \ud800 here").prose
    assert prose == "I see \ufffd here"
