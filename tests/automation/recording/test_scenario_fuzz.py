"""A scenario file is read whole or refused with ScenarioInvalid, whatever it holds."""

from __future__ import annotations

import pytest

from automation.errors import ScenarioInvalid
from automation.recording.scenario import Scenario

STEP = {"format": "tabwright.scenario", "version": 1, "name": "One step"}


@pytest.mark.parametrize("values", [[1], ["Gold", ["Silver"]], [None], [], [{"label": "x"}]])
def test_a_choice_of_labels_that_are_no_texts_is_refused(values: object) -> None:
    """A select_option step choosing a number or a list was read, then failed wherever it
    was said in words (its purpose: a TypeError from join) and at replay."""
    step = {"action": "select_option", "args": {"values": values}, "selector": "#tier"}
    with pytest.raises(ScenarioInvalid, match="step 0: select_option needs one option label"):
        Scenario.from_dict({**STEP, "steps": [step]})
    for values_given, said in (("Gold", "Gold"), (["Gold", "${tier}"], "Gold, ${tier}")):
        read = Scenario.from_dict({**STEP, "steps": [{**step, "args": {"values": values_given}}]})
        assert read.steps[0].purpose() == f"set the element to {said}"
