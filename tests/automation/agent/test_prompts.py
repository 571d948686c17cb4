"""The system prompt's tool list comes from the action registry and the operator's switches."""

from __future__ import annotations

import dataclasses

from automation.actions import ACTIONS, available
from automation.agent.prompts import system_prompt
from automation.browser.config import BrowserConfig


def test_every_offered_action_is_in_the_prompt_and_switched_off_ones_are_not() -> None:
    config = BrowserConfig()
    prompt = system_prompt(available(config))
    for spec in available(config):
        assert f"\n- {spec.signature()}: {spec.description}" in prompt
    assert "\n- file_read(" in prompt and "\n- done(" in prompt
    assert "\n- shell(" not in prompt and "\n- evaluate(" not in prompt
    assert "\n- read_page(" not in prompt  # the page comes every round anyway
    assert "never write CSS selectors" in prompt and "${SECRET:NAME}" in prompt

    on = dataclasses.replace(config, shell_commands=("ls", "wc"))
    prompt = system_prompt(available(on), shell_programs=on.shell_commands)
    assert "\n- shell(" in prompt and "shell programs allowed: ls, wc" in prompt
    assert len(available(on)) == len(available(config)) + 1 <= len(ACTIONS)


def test_the_native_tools_prompt_does_not_list_the_actions_again() -> None:
    config = dataclasses.replace(BrowserConfig(), shell_commands=("wc",))
    offered = available(config)
    native = system_prompt(offered, shell_programs=config.shell_commands, native=True)
    text = system_prompt(offered, shell_programs=config.shell_commands)

    for spec in offered:
        assert spec.signature() not in native
    assert "<action>" not in native and "call done" in native
    assert "shell programs allowed: wc" in native  # not in any tool definition
    assert "timeout_ms" in native and "${SECRET:NAME}" in native
    # The rules are the same words in both forms; only the action list and format differ.
    assert native.split("\n- Several actions")[0] == text.split("\n- Several actions")[0]
    assert len(native) < len(text) / 2
