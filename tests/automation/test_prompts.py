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
        assert f'{{"action": "{spec.name}"' in prompt and spec.description in prompt
    assert '"action": "file_read"' in prompt and '"action": "done"' in prompt
    assert '"action": "shell"' not in prompt and '"action": "evaluate"' not in prompt
    assert '"action": "read_page"' not in prompt  # the page comes every round anyway
    assert "never write CSS selectors" in prompt and "${SECRET:NAME}" in prompt

    on = dataclasses.replace(config, shell_commands=("ls", "wc"))
    prompt = system_prompt(available(on), shell_programs=on.shell_commands)
    assert '"action": "shell"' in prompt and "shell programs allowed: ls, wc" in prompt
    assert len(available(on)) == len(available(config)) + 1 <= len(ACTIONS)
