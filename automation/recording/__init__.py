"""Scenarios: steps kept from a run or a person's recording, replayed with self-healing.

- :mod:`automation.recording.scenario`: the versioned scenario format, its parameters
  (``${email}``) and secrets (``${SECRET:NAME}``);
- :mod:`automation.recording.replay`: replay a scenario in a tab, finding each element again
  by its identity (:mod:`automation.browser.identity`) or abstaining;
- :mod:`automation.recording.recorder`: record what a person does in a tab as scenario steps.
"""
