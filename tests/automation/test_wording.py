"""Every place a person reads an action says it in the same words (automation.wording):
a box is *ticked* or *unticked*, a check *expects*, and "check" is never said of a box."""

from __future__ import annotations

import re
from typing import Any

import pytest

from automation.agent.steps import words_of
from automation.browser.identity import ElementIdentity
from automation.browser.refs import Target
from automation.recording.export import to_pytest
from automation.recording.fromrun import plan
from automation.recording.scenario import Scenario, ScenarioStep
from automation.wording import (
    Words,
    curly_quoted,
    double_quoted,
    element_words,
    named,
    step_words,
    verb,
)

BOX = ElementIdentity(role="checkbox", row="Buy  milk\tnow")  # no name of its own
NAMED_BOX = ElementIdentity(role="checkbox", name="Notify me", name_count=1)
SHARED_BOX = ElementIdentity(role="checkbox", name="Toggle", name_count=3, row="Walk the dog")
RADIO = ElementIdentity(role="radio", name="Pro", name_count=1)
SELECT = ElementIdentity(role="combobox", name="Country", name_count=1)
FIELD = ElementIdentity(role="textbox", name="Email", name_count=1)
LINK = ElementIdentity(role="link", name="Orders", name_count=1)
BUTTON = ElementIdentity(role="button", name="Save", name_count=1)
SAID_OF_A_BOX = re.compile(r"\b(check|checks|checked|uncheck|unchecked)\b")

CASES: list[tuple[str, dict[str, Any], ElementIdentity | None, str, str]] = [
    # action, args, identity -> the words, with the values
    ("check", {"ref": "e5"}, BOX, "tick the checkbox in row 'Buy milk now'", ""),
    ("check", {"checked": False}, BOX, "untick the checkbox in row 'Buy milk now'", ""),
    ("check", {"checked": True}, NAMED_BOX, "tick checkbox 'Notify me'", ""),
    ("check", {}, SHARED_BOX, "tick checkbox 'Toggle' in row 'Walk the dog'", ""),
    ("check", {}, RADIO, "tick radio 'Pro'", ""),
    ("check", {"ref": "e9"}, None, "tick e9", ""),  # its element no longer known
    ("select_option", {"values": ["France"]}, SELECT, "select combobox 'Country'",
     " = 'France'"),
    ("fill", {"ref": "e3", "value": "ada@example.org"}, FIELD, "fill textbox 'Email'",
     " = 'ada@example.org'"),
    ("fill", {"value": "${SECRET:PW}"}, FIELD, "fill textbox 'Email'", " = '${SECRET:PW}'"),
    ("type", {"text": "Ada"}, FIELD, "type textbox 'Email'", " = 'Ada'"),
    ("click", {"ref": "e7"}, LINK, "click link 'Orders'", ""),
    ("click", {}, BUTTON, "click button 'Save'", ""),
    ("click", {}, ElementIdentity(role="button"), "click the button", ""),
    ("navigate", {"url": "https://shop.test/"}, None, "navigate", " https://shop.test/"),
    ("press", {"key": "Enter"}, None, "press", " key='Enter'"),
    ("press", {"key": "Control+A"}, FIELD, "press textbox 'Email'", " = 'Control+A'"),
    ("wait_for", {"text": "Saved", "timeout_ms": 500}, None, "wait_for",
     " text='Saved' timeout_ms=500"),
    ("call", {"scenario": "Sign in", "params": {"user": "${email}"}}, None,
     "call 'Sign in' with user = '${email}'", ""),
    ("expect", {"kind": "checked"}, BOX, "expect the checkbox in row 'Buy milk now' is ticked",
     ""),
    ("expect", {"kind": "unchecked"}, NAMED_BOX, "expect checkbox 'Notify me' is not ticked", ""),
    ("expect", {"kind": "text_visible", "text": "Saved"}, None, "expect text 'Saved' is visible",
     ""),
    ("expect", {"kind": "text_hidden", "text": "Error"}, None,
     "expect text 'Error' is not visible", ""),
    ("expect", {"kind": "rows", "text": "Buy milk", "count": 1}, None,
     "expect 1 row(s) show 'Buy milk'", ""),
    ("expect", {"kind": "url", "url": "/done"}, None, "expect the address holds '/done'", ""),
    ("expect", {"kind": "visible"}, BUTTON, "expect button 'Save' is on the page", ""),
    ("expect", {"kind": "value", "value": "FR"}, SELECT, "expect combobox 'Country' shows 'FR'",
     ""),
    ("expect", {"kind": "items", "items": ["a", "b"]}, ElementIdentity(role="list"),
     "expect the list lists 'a', 'b' in order", ""),
    ("expect", {"kind": "download", "name": "orders-*.csv", "type": "csv", "rows": 2}, None,
     "expect a download 'orders-*.csv' (csv) with 2 row(s)", ""),
    ("steps", {"steps": [{"type": "fill"}, {"type": "click"}]}, None, "steps (2)",
     ": fill → click"),
    ("fill_form", {"fields": [{}, {}]}, None, "fill a form of 2 fields", ""),
    # A run's moves between tabs, as its steps recorded them (where each went).
    ("tabs", {"op": "select", "index": 1, "to": "popup"}, None,
     "go to the popup the steps before opened", ""),
    ("tabs", {"op": "closed", "to": "opener", "changed": True}, None,
     "go to the opener (the popup closed itself, having changed its form)", ""),
    ("tabs", {"op": "select", "index": 0, "to": "first"}, None, "go to the first tab", ""),
    ("tabs", {"op": "select", "index": 2, "to": ""}, None, "tabs", " op='select' index=2 to=''"),
]  # fmt: skip


@pytest.mark.parametrize(("action", "args", "identity", "words", "detail"), CASES)
def test_each_kind_of_action_reads_as_what_it_does_to_which_element(
    action: str, args: dict[str, Any], identity: ElementIdentity | None, words: str, detail: str
) -> None:
    told = step_words(action, args, identity)
    assert str(told) == words
    assert told.full == words + detail
    assert told.to_dict()["text"] == words + detail
    assert str(told) == f"{told.verb} {told.target}".rstrip()
    if action in ("check", "expect"):  # the two words never meet
        assert not SAID_OF_A_BOX.search(told.full), told.full
    # A scenario's step is told by the same function, on every page.
    if action not in ("steps", "fill_form"):
        step = ScenarioStep(action, dict(args), identity)
        assert step.describe() == words and step.summary() == words + detail


def test_the_verbs_tick_untick_and_expect_and_the_rest_by_name() -> None:
    assert verb("check") == verb("check", {"checked": True}) == "tick"
    assert verb("check", {"checked": False}) == "untick"
    assert verb("expect") == "expect"
    assert verb("select_option") == "select"
    assert verb("click") == "click"


def test_an_element_is_told_by_its_row_when_its_name_does_not_tell_it() -> None:
    assert element_words(None) == "the element"
    assert element_words(NAMED_BOX) == "checkbox 'Notify me'"
    long_row = ElementIdentity(role="checkbox", row="x" * 60)
    assert element_words(long_row) == f"the checkbox in row '{'x' * 39}…'"
    assert named("checkbox", "", "Buy milk", double_quoted) == 'the checkbox in row "Buy milk"'
    assert named("button", "Save", quote=curly_quoted) == "button “Save”"
    assert named("", "x") == "the element"


def test_the_run_page_words_come_with_the_event_and_in_its_quotes() -> None:
    target = Target("e5", "checkbox", "", "", BOX)
    words = words_of("check", {"ref": "e5", "checked": True}, target)
    assert words == {
        "verb": "tick",
        "target": 'the checkbox in row "Buy milk now"',
        "detail": "",
        "text": 'tick the checkbox in row "Buy milk now"',
    }
    # Known by its role and name only (no identity taken): still no empty quotes.
    assert (
        words_of("click", {"ref": "e2"}, Target("e2", "button", ""))["text"] == "click the button"
    )
    assert words_of("navigate", {"url": "https://a.test/"})["text"] == "navigate https://a.test/"
    assert Words("tick").to_dict()["text"] == "tick"


def todos() -> Scenario:
    return Scenario.from_dict({
        "version": 1, "name": "Todos", "base_url": "https://todo.test",
        "steps": [
            {"action": "navigate", "args": {"url": "https://todo.test/"}},
            {"action": "fill", "args": {"value": "Buy milk", "submit": True},
             "identity": {"role": "textbox", "name": "New todo", "tag": "input"}},
            {"action": "check", "args": {}, "identity": {"role": "checkbox", "row": "Buy milk",
                                                         "tag": "input"}},
            {"action": "check", "args": {"checked": False},
             "identity": {"role": "checkbox", "row": "Walk the dog", "tag": "input"}},
            {"action": "expect", "args": {"kind": "checked"},
             "identity": {"role": "checkbox", "row": "Buy milk", "tag": "input"}},
            {"action": "expect", "args": {"kind": "rows", "text": "Buy milk", "count": 1}},
        ],
    })  # fmt: skip


def test_the_save_page_and_the_exported_test_say_it_the_same_way() -> None:
    scenario = todos()
    rows = [
        {"index": i, "action": s.action, "args": s.args, "ok": True,
         "identity": s.identity.to_dict() if s.identity else None}
        for i, s in enumerate(scenario.steps)
    ]  # fmt: skip
    assert [p.describe() for p in plan(rows)] == [
        "navigate https://todo.test/",
        "fill textbox 'New todo' = 'Buy milk'",
        "tick the checkbox in row 'Buy milk'",
        "untick the checkbox in row 'Walk the dog'",
        "expect the checkbox in row 'Buy milk' is ticked",
        "expect 1 row(s) show 'Buy milk'",
    ]
    comments = [line.strip() for line in to_pytest(scenario).splitlines() if "# step " in line]
    assert comments == [
        "# step 0: navigate",
        "# step 1: fill textbox 'New todo'",
        "# step 2: tick the checkbox in row 'Buy milk'",
        "# step 3: untick the checkbox in row 'Walk the dog'",
        "# step 4: expect the checkbox in row 'Buy milk' is ticked",
        "# step 5: expect 1 row(s) show 'Buy milk'",
        # Read again once the page has done what the last steps left for later: the checks
        # after the last step, and the box it unticked.
        "# step 4, read again: expect the checkbox in row 'Buy milk' is ticked",
        "# step 5, read again: expect 1 row(s) show 'Buy milk'",
        "# step 3, its box read again: untick the checkbox in row 'Walk the dog'",
    ]
