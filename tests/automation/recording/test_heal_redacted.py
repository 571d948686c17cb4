"""A secret the page shows (a token listed once typed) never reaches a heal: the identity
replay found an element by again, in its result as in its events, has the secret's value
redacted.  (The dashboard stored heals from the redacted events; ``scenario_replay
--save-heals`` stored them from the result, the token spelled out.)"""

from __future__ import annotations

import json

from automation import ListSink, Tab
from automation.events import StepReplayed
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario, ScenarioStep

TOKEN = "tok-8f2b9c71d4"


async def test_a_heal_of_an_element_beside_a_shown_secret_does_not_spell_it_out(
    tab: Tab, fixture_url: str
) -> None:
    page = f"{fixture_url}/replay/token.html"
    field = {"role": "textbox", "name": "API token", "tag": "input", "id": "token"}
    save = {"role": "button", "name": "Save", "tag": "button", "id": "save"}
    revoke = {"role": "button", "name": "Revoke", "tag": "button", "id": "revoke",
              "selectors": ["#revoke"]}  # fmt: skip
    scenario = Scenario("Revoke a token", (
        ScenarioStep("navigate", {"url": f"{page}?v=2"}),  # the release that renamed it
        ScenarioStep.from_dict({"action": "fill", "args": {"value": "${SECRET:API_TOKEN}"},
                                "identity": field}),
        ScenarioStep.from_dict({"action": "click", "args": {}, "identity": save}),
        ScenarioStep.from_dict({"action": "click", "args": {}, "identity": revoke}),
    ), base_url=f"{fixture_url}/replay/")  # fmt: skip
    sink = ListSink()
    result = await Replay(tab, scenario, sink=sink, env={"TABWRIGHT_SECRET_API_TOKEN": TOKEN}).run()
    assert result.ok, result.to_dict()
    healed = result.steps[3]
    assert healed.healed is not None, healed  # found again, by what it is called now
    assert healed.healed["name"] == "Revoke token"
    assert TOKEN not in json.dumps(result.to_dict())
    assert TOKEN not in json.dumps([e.to_dict() for e in sink.of_type(StepReplayed)])
