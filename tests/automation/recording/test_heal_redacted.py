"""A secret the page shows (a token listed once typed) never reaches a heal: the identity
replay found an element by again, in its result as in its events, has the secret's value
redacted.  (The dashboard stored heals from the redacted events; ``scenario_replay
--save-heals`` stored them from the result, the token spelled out.)  Nor what stands in
for it: a text that shows it is written as the stored identity had it, or left out
(automation.recording.secretfree)."""

from __future__ import annotations

import json
from dataclasses import replace

from automation import ListSink, Tab
from automation.browser.identity import ElementIdentity
from automation.events import StepRecorded, StepReplayed
from automation.recording.fromrun import from_run_steps
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario, ScenarioStep
from automation.recording.secretfree import heal_without_secrets, without_secrets
from automation.secrets import MASK, Secrets

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
    # Nor its placeholder: the row that lists the token is left out of the identity.
    assert "SECRET" not in json.dumps(healed.healed) and healed.healed["row"] == ""
    # Nor of the step as the run records it: a scenario saved from the replay looks for
    # the button, not for a row showing "Token ${SECRET:API_TOKEN}", which no page shows.
    rows: dict[int, dict[str, object]] = {}
    for event in sink.of_type(StepRecorded):
        said = {key: value for key, value in event.to_dict().items() if value is not None}
        rows[event.index] = {**rows.get(event.index, {}), **said}
    saved = from_run_steps([rows[i] for i in sorted(rows)], name="Saved from the replay")
    clicked = saved.steps[3].identity
    assert clicked is not None and clicked.name == "Revoke token"
    assert "SECRET" not in json.dumps(clicked.to_dict()) and clicked.row == ""


USER = "ada@corp.test"


def secrets_of(**values: str) -> Secrets:
    secrets = Secrets({})
    for name, value in values.items():
        secrets.remember(name, value)
    return secrets


def test_a_text_that_shows_a_secret_keeps_what_the_stored_identity_had_there() -> None:
    secrets = secrets_of(USER=USER)
    stored = ElementIdentity(role="button", name="Account", text="Account", id="account",
                             row="Ada Lovelace", selectors=("#account",))  # fmt: skip
    found = ElementIdentity(
        role="button", name=f"Signed in as {USER}", text=f"Signed in as {USER}",
        aria_label=f"Menu of {USER}", id="user-menu", row=f"{USER} Admin",
        test_ids={"data-testid": f"menu-{USER}", "data-qa": "menu"}, alike=(f"Sign out {USER}",),
        row_words=(USER, "admin"), target=f"/u?email={USER.replace('@', '%40')}",
        selectors=(f'[aria-label="Menu of {USER}"]', "#user-menu"),
    )  # fmt: skip
    free = without_secrets(stored, found, secrets)
    # Kept where the stored identity said it without the secret; else left out.
    assert (free.name, free.text, free.row) == ("Account", "Account", "Ada Lovelace")
    assert free.aria_label == "" and free.target == ""
    assert free.id == "user-menu" and free.selectors == ("#user-menu",)  # what changed stays
    assert free.test_ids == {"data-qa": "menu"} and free.row_words == ("admin",)
    assert free.alike == ()
    assert USER not in json.dumps(free.to_dict())


def test_a_stored_text_that_held_a_secret_or_its_mask_is_not_kept_either() -> None:
    secrets = secrets_of(TOKEN="sk-live-4242")
    secrets.hide("hunter22")  # a password typed as it is: masked
    stored = ElementIdentity(role="button", name="Delete token ${SECRET:TOKEN}",
                             label=f"Key {MASK}", text="Delete •••")  # fmt: skip
    found = ElementIdentity(role="button", name="Delete token sk-live-4242",
                            label="Key hunter22", text="Delete sk-live-4242")  # fmt: skip
    free = without_secrets(stored, found, secrets)
    assert (free.name, free.label, free.text) == ("", "", "")
    assert without_secrets(None, found, secrets).name == ""


def test_a_heal_that_only_shows_a_secret_heals_nothing() -> None:
    secrets = secrets_of(USER=USER)
    stored = ElementIdentity(role="button", name="Account", id="user-menu")
    shown = ElementIdentity(role="button", name=f"Signed in as {USER}", id="user-menu")
    assert heal_without_secrets(stored, shown.to_dict(), "confident", secrets) == (None, "")
    moved = replace(shown, id="account-menu")
    healed, heal = heal_without_secrets(stored, moved.to_dict(), "confident", secrets)
    assert heal == "confident" and healed is not None
    assert (healed["name"], healed["id"]) == ("Account", "account-menu")
    # Nothing to heal stays so; a heal without a secret is written as found.
    assert heal_without_secrets(stored, None, "", secrets) == (None, "")
    plain = replace(stored, id="account-menu").to_dict()
    assert heal_without_secrets(stored, plain, "proposed", secrets) == (plain, "proposed")
