"""A scenario's interruption handlers in its file format: read whole or refused with
HandlerInvalid naming the handler and what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from automation.errors import HandlerInvalid, ScenarioInvalid
from automation.recording.scenario import Scenario

GOT_IT = {"action": "click", "args": {}, "identity": {"role": "button", "name": "Got it"}}
WHATS_NEW = {"name": "What's new", "when": {"role": "dialog", "name": "What's new"},
             "steps": [GOT_IT]}  # fmt: skip


def scenario(*handlers: Any) -> dict[str, Any]:
    steps = [{"action": "navigate", "args": {"url": "http://bo.test/orders"}}]
    return {"version": 1, "name": "Orders", "handlers": list(handlers), "steps": steps}


def test_handlers_are_kept_and_written_back() -> None:
    read = Scenario.from_dict(scenario(WHATS_NEW))
    (handler,) = read.handlers
    assert handler.name == "What's new" and handler.describe() == "'What's new' dialog"
    assert handler.when.role == "dialog" and handler.steps[0].describe() == "click button 'Got it'"
    again = Scenario.from_dict(read.to_dict())
    assert again.handlers == read.handlers
    assert "handlers" not in Scenario.from_dict(scenario()).to_dict()  # files stay as they were


@pytest.mark.parametrize(
    ("handlers", "message"),
    [
        ({"name": "x"}, "handlers must be a list"),
        (["What's new"], "handler 0: a handler is a JSON object"),
        ([{**WHATS_NEW, "name": " "}], "handler 0: a handler needs a name"),
        ([{**WHATS_NEW, "name": "two\nlines"}], "handler 0: its name must be one line"),
        ([WHATS_NEW, {**WHATS_NEW, "name": "WHAT'S NEW"}],
         "handler 1: a handler named \"WHAT'S NEW\" comes before it"),
        ([{**WHATS_NEW, "when": {}}], "handler 0 (\"What's new\"): when says nothing to find"),
        ([{**WHATS_NEW, "when": {"role": "popup", "name": "x"}}],
         "handler 0 (\"What's new\"): when: element identity: role 'popup'"),
        ([{**WHATS_NEW, "steps": []}], "steps must be a list of 1 to 5 steps"),
        ([{**WHATS_NEW, "steps": [GOT_IT] * 6}], "steps must be a list of 1 to 5 steps"),
        ([{**WHATS_NEW, "steps": [{"action": "navigate", "args": {"url": "http://x.test"}}]}],
         "step 0 (navigate) can't clear an interruption"),
        ([{**WHATS_NEW, "steps": [{"action": "teleport"}]}], "step 0: unknown step type"),
        ([{**WHATS_NEW, "steps": [{**GOT_IT, "action": "fill",
                                   "args": {"value": "${SECRET:PW}"}}]}],
         "step 0 takes a ${…}: a handler's steps take no parameter or secret"),
    ],
)  # fmt: skip
def test_a_handler_that_cant_be_used_refuses_the_file(handlers: Any, message: str) -> None:
    data = scenario() | {"handlers": handlers}
    with pytest.raises(HandlerInvalid) as caught:
        Scenario.from_dict(data)
    assert message in caught.value.message, caught.value.message
    assert caught.value.code == "handler_invalid"
    assert isinstance(caught.value, ScenarioInvalid)  # refused as any bad scenario is


def test_the_pytest_export_clears_them_with_playwrights_locator_handler() -> None:
    from automation.recording.export import to_pytest

    text = to_pytest(Scenario.from_dict(scenario(WHATS_NEW)))
    compile(text, "exported.py", "exec")
    assert '    # handler 0: "What\'s new", cleared whenever it shows\n' in text
    assert "    def clear_0() -> None:\n" in text
    assert "        page.get_by_role('button', name='Got it', exact=True).click()\n" in text
    when = "page.get_by_role('dialog', name=\"What's new\", exact=True)"
    assert f'    INTERRUPTIONS.add(page, "What\'s new", {when!r}, {when}, clear_0)\n' in text
    assert text.index("INTERRUPTIONS.add(") < text.index("page.goto(")
