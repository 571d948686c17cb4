"""The scenario format without a browser: reading and refusing files, parameters and secrets,
rebasing URLs, and scenarios made from a run's recorded steps."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from automation.actions import validate
from automation.browser.identity import ElementIdentity
from automation.browser.served import same_place
from automation.errors import ParamMissing, ScenarioInvalid
from automation.recording.export import to_pytest
from automation.recording.fromrun import from_run_steps, plan
from automation.recording.params import address_holds, unfill, unfill_url
from automation.recording.rebase import rebase
from automation.recording.scenario import (
    FORMAT,
    SCENARIO_VERSION,
    Scenario,
    ScenarioStep,
)
from automation.recording.takes import replay_takes

IDENTITY = {"role": "button", "name": "Sign in", "tag": "button", "selectors": ["#signin"]}


def scenario_dict(*steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"format": FORMAT, "version": 1, "name": "Sign in", "steps": list(steps), **extra}


def test_a_scenario_survives_json() -> None:
    data = scenario_dict(
        {"action": "navigate", "args": {"url": "http://shop.test/login"}},
        {
            "action": "fill",
            "args": {"value": "${email}"},
            "identity": {**IDENTITY, "role": "textbox"},
        },
        {"action": "click", "args": {}, "identity": IDENTITY, "url": "http://shop.test/login"},
        base_url="http://shop.test",
        params={"email": {"default": "ada@example.org"}},
    )
    scenario = Scenario.from_dict(json.loads(json.dumps(data)))
    assert [s.action for s in scenario.steps] == ["navigate", "fill", "click"]
    assert scenario.steps[2].identity is not None and scenario.steps[2].identity.name == "Sign in"
    again = Scenario.from_dict(json.loads(json.dumps(scenario.to_dict())))
    assert again == scenario and again.to_dict()["version"] == SCENARIO_VERSION


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "a scenario is a JSON object"),
        ({"format": "other", "version": 1, "name": "x", "steps": []}, "not a Tabwright scenario"),
        (scenario_dict(version=SCENARIO_VERSION + 1), "newer than this Tabwright reads"),
        (scenario_dict(version="1"), "bad scenario version"),
        (scenario_dict(name=" "), "needs a name"),
        (scenario_dict(steps="click"), "steps must be a list"),
        (scenario_dict({"action": "teleport", "args": {}}), "step 0: unknown step type 'teleport'"),
        (scenario_dict({"action": "evaluate", "args": {"script": "1"}}), "unknown step type"),
        (scenario_dict({"action": "click", "args": {}}), "step 0: click needs the element's"),
        (scenario_dict({"action": "fill", "args": {}, "identity": IDENTITY}), "needs 'value'"),
        (scenario_dict({"action": "check", "args": {"checked": "yes"}, "identity": IDENTITY}),
         "'checked' must be bool"),
        (scenario_dict({"action": "click", "identity": {**IDENTITY, "version": 99}}),
         "step 0: element identity version 99 is newer"),
        (scenario_dict({"action": "click", "identity": {"box": [1, 2]}}),
         "step 0: element identity"),
        (scenario_dict({"action": "reload"}, {"action": "navigate", "args": {}}),
         "step 1: navigate needs 'url'"),
        (scenario_dict({"action": "navigate", "args": {"url": "/x"}}, "oops"),
         "step 1: a step is a JSON object"),
        (scenario_dict(params={"bad name": {}}), "is not a parameter name"),
        # A dismissed prompt answers nothing: the answer would be left out at replay.
        (scenario_dict({"action": "dialog", "args": {"accept": False, "prompt_text": "x"}}),
         "step 0: prompt_text only applies when accepting"),
        (scenario_dict({"action": "dialog", "args": {"times": 0}}),
         "step 0: times must be a whole number from 1 to 100"),
    ],
)  # fmt: skip
def test_a_scenario_that_cannot_be_read_is_refused_whole(data: object, message: str) -> None:
    with pytest.raises(ScenarioInvalid, match=message.replace("(", r"\(")):
        Scenario.from_dict(data)


def test_parameters_and_secrets_are_filled_in_and_secrets_come_only_from_their_variables() -> None:
    scenario = Scenario.from_dict(
        scenario_dict(
            {"action": "fill", "args": {"value": "${email}"}, "identity": IDENTITY},
            {"action": "fill", "args": {"value": "${SECRET:SHOP_PW}"}, "identity": IDENTITY},
            {"action": "fill", "args": {"value": "costs $${price}"}, "identity": IDENTITY},
            params={"email": {"default": "ada@example.org"}},
        )
    )
    assert scenario.placeholders() == ({"email"}, {"SHOP_PW"})
    env = {"TABWRIGHT_SECRET_SHOP_PW": "hunter2", "SHOP_PW": "not this one"}
    values = scenario.resolve({}, env=env)
    assert values.fill(scenario.steps[0].args) == {"value": "ada@example.org"}
    assert values.fill(scenario.steps[1].args) == {"value": "hunter2"}
    assert values.fill(scenario.steps[2].args) == {"value": "costs ${price}"}
    assert scenario.resolve({"email": "grace@example.org"}, env=env).params["email"] == (
        "grace@example.org"
    )
    assert "hunter2" not in repr(values) and values.redact("sent hunter2!") == "sent •••!"
    with pytest.raises(ParamMissing, match="TABWRIGHT_SECRET_SHOP_PW"):
        scenario.resolve({}, env={"SHOP_PW": "not this one"})
    with pytest.raises(ScenarioInvalid, match="no such parameter: nope"):
        scenario.resolve({"nope": "1"}, env=env)
    without_default = Scenario.from_dict(scenario_dict(*scenario.to_dict()["steps"][:1]))
    with pytest.raises(ParamMissing, match="parameter 'email'"):
        without_default.resolve({}, env=env)


def test_a_parameter_in_an_address_s_query_is_one_field_of_it() -> None:
    """A navigate's, a wait's and a URL check's address: past its ``?`` a parameter's value
    is URL-encoded as a form sends it ("a&age=99" was a second field, "x#y" cut the rest
    off as a fragment); before it (a host, a path, a whole address) it is put as it is, as
    it is in any other text."""
    scenario = Scenario.from_dict(
        scenario_dict(
            {"action": "navigate", "args": {"url": "${site}/people?name=${name}&age=1"}},
            {"action": "wait_for", "args": {"url": "?name=${name}"}},
            {"action": "expect", "args": {"kind": "url", "url": "/p/${name}?n=${name}&t=$${x}"}},
            {"action": "expect", "args": {"kind": "text_visible", "text": "?q=${name}"}},
            params={"site": {"default": "https://a.test"}, "name": {"default": "Zoë & Bo=1#x"}},
        )
    )
    values = scenario.resolve({}, env={})
    filled = [values.fill(step.args, step.action) for step in scenario.steps]
    assert filled[0]["url"] == "https://a.test/people?name=Zo%C3%AB+%26+Bo%3D1%23x&age=1"
    assert filled[1]["url"] == "?name=Zo%C3%AB+%26+Bo%3D1%23x"
    assert filled[2]["url"] == "/p/Zoë & Bo=1#x?n=Zo%C3%AB+%26+Bo%3D1%23x&t=${x}"
    assert filled[3]["text"] == "?q=Zoë & Bo=1#x"  # a text the page shows, not an address


@pytest.mark.parametrize(
    ("expected", "url", "holds"),
    [
        ("/found?name=Grace+Hopper", "http://h/found?name=Grace+Hopper&x=1", True),
        ("/found?name=Grace+Hopper", "http://h/found?name=Grace%20Hopper", True),
        ("/found?name=Zo%C3%AB", "http://h/found?name=Zo%C3%AB", True),
        ("/people/Zoë Ann", "http://h/people/Zo%C3%AB%20Ann", True),
        ("?q=a%26b", "http://h/?q=a&b", False),  # one field is not two
        ("?q=a&b", "http://h/?q=a%26b", False),
        ("/found?name=Grace+Hopper", "http://h/found?name=Grace", False),
        # Each part whole: another record's address holds no check of this one's.
        ("/hello?name=Ada", "http://h/hello?name=Adam", False),
        ("/orders?status=open", "http://h/orders?status=opened", False),
        ("/orders", "http://h/orders-old", False),
        ("/order", "http://h/orders/12", False),
        ("/orders", "http://h/app/orders/12", True),  # a run of whole segments
        ("orders/12", "http://h/app/orders/12?tab=1#x", True),
        ("shop.test/orders", "https://www.shop.test/orders", True),
        ("http://h/orders", "https://h/orders", False),  # its scheme, when it names it
        ("http://h/orders", "http://evil.test/?to=http://h/orders", False),
        ("http://H/orders", "http://h/orders/", True),
        ("http://h", "http://h/", True),
        # Fields in any order (a release that moved a form's fields), each one matched once.
        ("?customer=Ada&qty=3", "http://h/o?qty=3&customer=Ada", True),
        ("?tag=a&tag=a", "http://h/o?tag=a", False),
        ("?tag=a&tag=b", "http://h/o?tag=b&x=1&tag=a", True),
        ("/o#done", "http://h/o#done", True),
        ("/o#done", "http://h/o#draft", False),
    ],
)
def test_a_url_check_holds_each_part_of_its_address_whole_however_encoded(
    expected: str, url: str, holds: bool
) -> None:
    assert address_holds(expected, url) is holds


def test_a_number_given_for_a_step_s_text_is_refused_naming_the_step_and_field() -> None:
    """``"url": 5`` was read as the text "5" (a navigate to a page named 5 under the base
    URL): a file that says a number where a text belongs is refused, as one that says
    true is; a model's call that writes 42 for "42" is still taken."""
    for index, step in enumerate([{"action": "navigate", "args": {"url": 5}},
                                  {"action": "fill", "args": {"value": 42}, "selector": "#q"},
                                  {"action": "navigate", "args": {"url": True}}]):  # fmt: skip
        data = {"format": "tabwright.scenario", "version": 1, "name": "n",
                "steps": [{"action": "reload"}] * index + [step]}  # fmt: skip
        with pytest.raises(ScenarioInvalid, match=rf"step {index}: \w+: '(url|value)' must be"
                                                  r" str, not (int|bool)"):  # fmt: skip
            Scenario.from_dict(data)
    assert validate("fill", {"ref": "e1", "value": 42}) == {"ref": "e1", "value": "42"}


def test_a_run_s_fill_of_a_number_is_saved_as_the_text_it_typed() -> None:
    """A model that wrote 42 for "42" typed "42": the run saved as a scenario keeps that
    step as the text (a file takes texts only: it was left out, "can't be replayed")."""
    field = {"role": "spinbutton", "name": "Quantity", "tag": "input"}
    rows = [{"action": "navigate", "args": {"url": "http://shop.test/"}, "ok": True},
            {"action": "fill", "args": {"value": 42}, "identity": field, "ok": True},
            {"action": "fill", "args": {"value": 2.5}, "identity": field, "ok": True}]  # fmt: skip
    assert [(p.step.args if p.step else p.reason) for p in plan(rows)][1:] == [
        {"value": "42"},
        {"value": "2.5"},
    ]
    scenario = from_run_steps(rows, name="Order")
    assert [step.args.get("value") for step in scenario.steps] == [None, "42", "2.5"]


def test_a_default_written_as_a_number_or_true_false_is_typed_as_json_writes_it() -> None:
    """As the API and a batch's cells take such values: true, not Python's True."""
    scenario = Scenario.from_dict(
        scenario_dict(
            {"action": "fill", "args": {"value": "${gift} ${n} ${price}"}, "identity": IDENTITY},
            params={"gift": {"default": True}, "n": {"default": 3}, "price": {"default": 2.5}},
        )
    )
    values = scenario.resolve({}, env={})
    assert values.fill(scenario.steps[0].args) == {"value": "true 3 2.5"}
    assert scenario.to_dict()["params"]["gift"] == {"default": "true"}
    assert replay_takes(scenario)["gift"].default == "true"


def test_a_typed_value_can_become_a_parameter_or_a_secret() -> None:
    scenario = Scenario.from_dict(
        scenario_dict(
            {"action": "fill", "args": {"value": "ada@example.org"}, "identity": IDENTITY},
            {"action": "fill", "args": {"value": "hunter2"}, "identity": IDENTITY},
            {"action": "click", "identity": IDENTITY},
        )
    )
    made = scenario.with_param(0, "email").with_param(1, "PW", secret=True)
    assert made.steps[0].args == {"value": "${email}"}
    assert made.params == {"email": {"default": "ada@example.org"}}
    assert "hunter2" not in json.dumps(made.to_dict())
    with pytest.raises(ScenarioInvalid, match="has no value"):
        made.with_param(2, "x")
    with pytest.raises(ScenarioInvalid, match="not a parameter name"):
        made.with_param(0, "e-mail")


def test_a_typed_value_made_a_parameter_is_carried_into_where_its_own_step_led() -> None:
    """A search typed and sent in one step (the field sends as it is typed in) led to
    ?q=Delta: another value leads to its own search."""
    searched = {
        "action": "fill",
        "args": {"value": "Delta Co"},
        "identity": IDENTITY,
        "url": "http://app.test/orders/",
        "led_to": "http://app.test/orders/?q=Delta+Co",
    }
    scenario = Scenario.from_dict(scenario_dict(searched))
    assert scenario.with_param(0, "q").steps[0].led_to == "http://app.test/orders/?q=${q}"


def test_a_value_made_a_parameter_of_a_name_in_use_with_another_default_is_refused() -> None:
    """Taken over, the name's default changed what the steps using it type (the email
    typed into Name, and the replay said succeeded); the same value joins the name."""
    scenario = Scenario.from_dict(
        scenario_dict(
            {"action": "fill", "args": {"value": "Ada Lovelace"}, "identity": IDENTITY},
            {"action": "fill", "args": {"value": "ada@example.org"}, "identity": IDENTITY},
            {"action": "fill", "args": {"value": "Ada Lovelace"}, "identity": IDENTITY},
        )
    )
    made = scenario.with_param(0, "name")
    with pytest.raises(ScenarioInvalid) as refused:
        made.with_param(1, "name")
    assert refused.value.message == (
        "the scenario has a parameter 'name' already, whose default is 'Ada Lovelace', not "
        "'ada@example.org'"
    )
    both = made.with_param(2, "name")
    assert both.params == {"name": {"default": "Ada Lovelace"}}
    assert both.steps[2].args == {"value": "${name}"}


def test_a_value_made_a_parameter_is_carried_into_what_a_later_call_gives() -> None:
    """A later call step that gives the typed name to a scenario that checks it gives the
    parameter: else a replay with another name checked the recorded one, and passed."""
    listed = {"version": 1, "name": "Customer is listed", "params": {"who": {}, "n": {}},
              "steps": [{"action": "expect", "args": {"kind": "rows", "text": "${who}",
                                                      "count": 1}}]}  # fmt: skip
    call = {"scenario": "Customer is listed", "params": {"who": "Ada Lovelace", "n": "Ada"}}
    scenario = Scenario.from_dict({
        **scenario_dict({"action": "fill", "args": {"value": "Ada Lovelace"}, "identity": IDENTITY},
                        {"action": "call", "args": call}),
        "callees": {"Customer is listed": listed},
    })  # fmt: skip
    made = scenario.with_param(0, "name")
    assert made.steps[1].args == {"scenario": "Customer is listed",
                                  "params": {"who": "${name}", "n": "Ada"}}  # fmt: skip


ROW_BOX = {"role": "checkbox", "tag": "input", "type": "checkbox", "row": "Buy milk",
           "selectors": ['input[aria-label="Toggle Buy milk"]', "li:nth-of-type(1) > input"],
           "name": "Toggle Buy milk", "name_count": 1}  # fmt: skip


def todo_steps(value: str = "Buy milk") -> dict[str, Any]:
    """A todo typed, then ticked and checked: the steps after it depend on its value."""
    box = {**ROW_BOX, "variants": [{**ROW_BOX, "name": "", "section": "Buy milk list"}]}
    return scenario_dict(
        {"action": "wait_for", "args": {"text": "Buy milk"}},
        {"action": "fill", "args": {"value": value, "submit": True},
         "identity": {**IDENTITY, "role": "textbox", "name": "New todo"}},
        {"action": "check", "args": {}, "identity": box},
        {"action": "check", "args": {"checked": False},
         "identity": {**ROW_BOX, "row": "Buy milkshake", "name": "Toggle", "name_count": 2,
                      "selectors": ['input[aria-label="Toggle Buy milkshake"]']}},
        {"action": "expect", "args": {"kind": "rows", "text": "Buy milk", "count": 1}},
        {"action": "expect", "args": {"kind": "text_visible", "text": "Added Buy milk."}},
        {"action": "expect", "args": {"kind": "checked"}, "identity": box},
        {"action": "wait_for", "args": {"text_gone": "Buy milk"}},
    )  # fmt: skip


def test_a_parameter_is_carried_into_the_identities_and_checks_that_use_its_value() -> None:
    scenario = Scenario.from_dict(todo_steps())
    made = scenario.with_param(1, "item")
    steps = made.steps
    assert steps[0] == scenario.steps[0]  # before the value was typed: nothing depends on it
    assert steps[1].args == {"value": "${item}", "submit": True}
    box = steps[2].identity
    assert box is not None
    assert (box.row, box.name, box.variants[0].section) == ("${item}", "Toggle ${item}",
                                                            "${item} list")  # fmt: skip
    # A selector spelling the value out would find the old row: dropped.
    assert box.selectors == ("li:nth-of-type(1) > input",)
    assert steps[3] == scenario.steps[3]  # "Buy milkshake" is another todo
    assert steps[4].args == {"kind": "rows", "text": "${item}", "count": 1}
    assert steps[5].args == {"kind": "text_visible", "text": "Added ${item}."}
    assert steps[6].identity == box and steps[7].args == {"text_gone": "${item}"}
    # Read back, the identities' placeholders count as the parameter's uses.
    again = Scenario.from_dict(json.loads(json.dumps(made.to_dict())))
    assert again == made and again.placeholders() == ({"item"}, set())
    values = again.resolve({"item": "Eggs"}, env={})
    found = values.target(again.steps[2])
    assert found is not None and (found.row, found.name) == ("Eggs", "Toggle Eggs")
    assert found.variants[0].section == "Eggs list"
    # A secret can't stand in a row or a check: while they spell the value out, making it
    # a secret is refused, naming each (it would stay in the scenario and its exports).
    with pytest.raises(ScenarioInvalid) as refused:
        scenario.with_param(1, "ITEM", secret=True)
    told = refused.value.message
    assert "step 0 (wait_for: its text)" in told and "step 2 (tick: its element)" in told
    assert "step 4 (expect: its text)" in told and "step 7 (wait_for: its text_gone)" in told
    assert "step 3 (untick: its element)" in told  # "Buy milkshake" spells it out too


def test_a_value_made_a_secret_is_typed_as_the_secret_wherever_it_was_typed() -> None:
    """An API key typed twice (the key, its confirmation) and once inside a longer text:
    made a secret on the first step, each types the secret and nothing spells it out; a
    check of it refuses the secret, and says so, until it is gone."""
    key = "sk-live-4242"
    steps = [
        {"action": "fill", "args": {"value": key}, "identity": IDENTITY},
        {"action": "type", "args": {"text": f"${{who}}: {key}; $${{x}}"}, "identity": IDENTITY},
        {"action": "fill", "args": {"value": key}, "identity": IDENTITY},
        {"action": "expect", "args": {"kind": "value", "value": key}, "identity": IDENTITY},
    ]  # fmt: skip
    with pytest.raises(ScenarioInvalid, match=r"spelled out elsewhere: step 3 \(expect: its"):
        Scenario.from_dict(scenario_dict(*steps)).with_param(0, "KEY", secret=True)
    made = Scenario.from_dict(scenario_dict(*steps[:3])).with_param(2, "KEY", secret=True)
    assert [step.args for step in made.steps] == [
        {"value": "${SECRET:KEY}"}, {"text": "${who}: ${SECRET:KEY}; $${x}"},
        {"value": "${SECRET:KEY}"},
    ]  # fmt: skip
    assert key not in json.dumps(made.to_dict()) and made.params == {}
    values = made.resolve({"who": "Ada"}, env={"TABWRIGHT_SECRET_KEY": key})
    assert values.fill(dict(made.steps[1].args)) == {"text": f"Ada: {key}; ${{x}}"}


def test_a_short_value_or_a_page_s_own_placeholder_text_is_not_taken_for_a_parameter() -> None:
    short = Scenario.from_dict(todo_steps(value="1")).with_param(1, "qty")
    assert short.steps[2:] == Scenario.from_dict(todo_steps(value="1")).steps[2:]
    data = todo_steps()
    data["steps"][2]["identity"]["row"] = "Price ${amount}"  # the page shows this text
    scenario = Scenario.from_dict(data)
    assert scenario.placeholders() == (set(), set())
    values = scenario.resolve({}, env={})
    target = values.target(scenario.steps[2])
    assert target is not None and target.row == "Price ${amount}"


def test_a_step_reads_as_what_it_does_to_which_element() -> None:
    steps = Scenario.from_dict(todo_steps()).steps
    assert steps[2].describe() == "tick checkbox 'Toggle Buy milk'"
    assert steps[3].describe() == "untick checkbox 'Toggle' in row 'Buy milkshake'"
    unnamed = ScenarioStep("check", {}, ElementIdentity(role="checkbox", row="Buy  milk\tnow"))
    assert unnamed.describe() == "tick the checkbox in row 'Buy milk now'"
    check = ScenarioStep("expect", {"kind": "checked"}, unnamed.identity)
    assert check.describe() == "expect the checkbox in row 'Buy milk now' is ticked"


def test_the_export_reads_each_parameter_from_a_variable_of_its_own() -> None:
    """A parameter lang, home or Item is never the machine's LANG or HOME, nor item's:
    read from those, the exported file typed "C.UTF-8" and checked it, and passed."""
    typed = [{"action": "fill", "args": {"value": f"${{{name}}}"}, "identity": IDENTITY}
             for name in ("lang", "home", "Item", "item")]  # fmt: skip
    scenario = Scenario.from_dict({
        **scenario_dict(*typed),
        "params": {"lang": {"default": "English"}, "home": {}, "Item": {}, "item": {}},
    })  # fmt: skip
    code = to_pytest(scenario)
    assert "os.environ.get('TABWRIGHT_PARAM_lang', 'English')" in code
    for name in ("home", "Item", "item"):
        assert f"os.environ['TABWRIGHT_PARAM_{name}']" in code
    assert "'LANG'" not in code and "'HOME'" not in code and "'ITEM'" not in code


def test_the_export_finds_an_element_by_each_identity_it_was_known_by() -> None:
    made = Scenario.from_dict(todo_steps()).with_param(1, "item")
    code = to_pytest(made)
    item = "os.environ.get('TABWRIGHT_PARAM_item', 'Buy milk')"
    # (the row is the item alone: its text begins and ends its cell)
    alone = f"r'(?<!\\w[^\\S\\n]*)' + re.escape({item}) + r'(?![^\\S\\n]*\\w)'"
    row = f"rows_showing(page, {alone})"
    assert (
        f"    # step 2: tick checkbox 'Toggle ${{item}}'\n"
        "    sent = len(WROTE)\n"  # (a save it sets off, refused on the page, fails it)
        "    shown = errors_before(page)\n"
        f"    kept_change({row}.get_by_role('checkbox', name=named('Toggle ' + {item}), "
        f"exact=True).or_({row}.get_by_role('checkbox')), 'check', True, checks_answered)\n"
    ) in code
    assert "# step 4: expect 1 row(s) show '${item}'" in code
    # A change replay proposed and no one approved yet: the file says where it won't work.
    pending = to_pytest(made, pending={2}).split("# step 2: ", 1)[1].splitlines()[1]
    assert pending.strip().startswith("# replay proposed another identity for this element")
    # A variant in another frame can't join the alternatives: the file says so.
    data = todo_steps()
    data["steps"][2]["identity"]["variants"][0]["frame_url"] = "http://shop.test/frame.html"
    code = to_pytest(Scenario.from_dict(data))
    assert (
        "    # where it was the checkbox in row 'Buy milk' (an earlier release) in another "
        "frame, this line won't find it\n"  # (in the row that shows the item it typed)
        "    kept_change(rows_showing(page, '(?<!\\\\w[^\\\\S\\\\n]*)Buy\\\\s*milk')"
        ".get_by_role('checkbox', "
        "name='Toggle Buy milk', exact=True), 'check', True, checks_answered)"
    ) in code


def test_urls_move_from_the_recorded_base_to_the_replay_base() -> None:
    assert rebase(
        "http://shop.test/v1/login?next=/a", "http://shop.test/v1", "http://127.0.0.1:9/v2"
    ) == ("http://127.0.0.1:9/v2/login?next=/a")
    assert rebase("https://other.test/x", "http://shop.test", "http://127.0.0.1:9") == (
        "https://other.test/x"
    )
    assert rebase("http://shop.test/x", "", "http://127.0.0.1:9") == "http://shop.test/x"


@pytest.mark.parametrize(
    ("url", "recorded", "base", "moved"),
    [
        # The same base: nothing moves (a conversation restored on its own start page).
        ("http://h/login", "http://h/login", "http://h/login", "http://h/login"),
        ("http://h/login?next=/a", "http://h/login", "http://h/login", "http://h/login?next=/a"),
        # The base's own page, without a file ending: no slash added.
        ("http://h/shop?q=1", "http://h/shop", "http://h2/v2/shop", "http://h2/v2/shop?q=1"),
        ("http://h/shop/", "http://h/shop", "http://h2/v2/shop", "http://h2/v2/shop/"),
        ("http://h/shop/cart", "http://h/shop", "http://h2/v2/shop", "http://h2/v2/shop/cart"),
        # A path that only starts with the base's letters is not in its folder.
        ("http://h/shopping", "http://h/shop", "http://h2/v2/shop", "http://h2/v2/shop/shopping"),
        ("http://h/login-help", "http://h/login", "http://h2/login", "http://h2/login/login-help"),
    ],
)
def test_a_url_moves_by_whole_folders(url: str, recorded: str, base: str, moved: str) -> None:
    assert rebase(url, recorded, base) == moved


def test_a_run_s_steps_become_a_scenario_with_passwords_as_secrets() -> None:
    password = {**IDENTITY, "role": "textbox", "name": "Password", "type": "password",
                "name_attr": "password", "tag": "input"}  # fmt: skip
    rows = [
        {"action": "navigate", "args": {"url": "http://shop.test/app/login?next=/"}, "ok": True},
        {"action": "read_page", "args": {}, "ok": True},
        {"action": "fill", "args": {"ref": "e3", "value": "hunter2"}, "identity": password},
        {"action": "click", "args": {"ref": "e9"}, "ok": False, "identity": IDENTITY},
        {"action": "click", "args": {"ref": "e4", "timeout_ms": 500}, "identity": IDENTITY},
        # stored before identities: kept with its selector
        {"action": "click", "args": {"ref": "e5"}, "role": "link", "name": "Orders",
         "selector": "#orders"},
    ]  # fmt: skip
    code = {**password, "type": "text", "name": "Code", "autocomplete": "one-time-code"}
    rows += [  # typed from the secrets the run was given: those are the ones kept
        {"action": "type", "args": {"ref": "e3", "text": "${SECRET:BO_PW}"}, "identity": password},
        {"action": "type", "args": {"ref": "e6", "text": "${TOTP:BO}"}, "identity": code},
    ]
    scenario = from_run_steps(rows, name="From run 7")
    actions = ["navigate", "fill", "click", "click", "type", "type"]
    assert [s.action for s in scenario.steps] == actions
    assert scenario.steps[1].args == {"value": "${SECRET:PASSWORD}"}
    assert [s.args for s in scenario.steps[4:]] == [
        {"text": "${SECRET:BO_PW}"}, {"text": "${TOTP:BO}"}
    ]  # fmt: skip
    assert scenario.steps[2].args == {}
    old = scenario.steps[3]
    assert old.identity is None and old.target() is not None
    assert old.target().selectors == ("#orders",) and old.target().role == "link"  # type: ignore[union-attr]
    assert scenario.base_url == "http://shop.test/app"
    assert scenario.description.startswith("Left out of the run's 8 steps: ")
    assert "step 1 (read_page): it only read the page" in scenario.description
    assert "step 3 (click button 'Sign in'): it failed: no reason given" in scenario.description
    assert "hunter2" not in json.dumps(scenario.to_dict())
    assert ScenarioStep.from_dict(old.to_dict()) == old


SHOWN = {**IDENTITY, "role": "textbox", "name": "Password", "type": "text",
         "autocomplete": "current-password", "name_attr": "pw", "tag": "input"}  # fmt: skip
NOTE = {**IDENTITY, "role": "textbox", "name": "Note", "type": "text", "tag": "input"}


def test_a_password_the_run_typed_is_nowhere_else_in_its_scenario() -> None:
    """A password field its "show password" switch made text (marked current-password)
    is a password field; the same password typed into another field is typed as its
    secret; an address a form sent by GET (where a step led, where the next ran) loses the
    parameter that holds it; a step that spells it out otherwise (a check, an address to
    go to) is left out, saying so.  A value too short to tell (two characters) is left
    alone."""
    sent = "http://shop.test/app/login?user=ada&pw=s3cret+pass%21"
    rows = [
        {"action": "navigate", "args": {"url": "http://shop.test/app/login"}},
        {"action": "fill", "args": {"ref": "e1", "value": "s3cret pass!"}, "identity": SHOWN},
        {"action": "click", "args": {"ref": "e2"}, "identity": IDENTITY, "led_to": sent},
        {"action": "fill", "args": {"ref": "e3", "value": "was s3cret pass! then"},
         "identity": NOTE, "url": sent},
        {"action": "expect", "args": {"kind": "text_visible", "text": "s3cret pass!"}},
        {"action": "navigate", "args": {"url": sent}},
        {"action": "fill", "args": {"ref": "e3", "value": "ab"}, "identity": NOTE},
        {"action": "fill", "args": {"ref": "e4", "value": "ab"}, "identity": SHOWN},
    ]  # fmt: skip
    scenario = from_run_steps(rows, name="Sign in")
    kept = scenario.steps
    assert [s.action for s in kept] == ["navigate", "fill", "click", "fill", "fill", "fill"]
    assert kept[1].args == {"value": "${SECRET:PW}"}
    assert kept[2].led_to == "http://shop.test/app/login?user=ada"
    assert kept[3].args == {"value": "was ${SECRET:PW} then"}
    assert kept[3].url == "http://shop.test/app/login?user=ada"
    assert kept[4].args == {"value": "ab"} and kept[5].args == {"value": "${SECRET:PW}"}
    left = "it spells out the password typed at step 1, which a scenario can't keep"
    assert f"step 4 (expect): {left}; step 5 (navigate): {left}" in scenario.description
    assert "s3cret" not in json.dumps(scenario.to_dict())


def test_a_visit_whose_path_holds_a_password_s_letters_is_kept() -> None:
    rows = [
        {"action": "fill", "args": {"ref": "e1", "value": "admin"}, "identity": SHOWN},
        {"action": "navigate", "args": {"url": "http://shop.test/admin/orders"}},
    ]  # fmt: skip
    scenario = from_run_steps(rows, name="Orders")
    assert [s.action for s in scenario.steps] == ["fill", "navigate"]
    assert scenario.steps[0].args == {"value": "${SECRET:PW}"}


def test_a_run_s_steps_in_a_tab_not_known_as_its_popup_are_left_out_and_named() -> None:
    """Steps stored before a tab switch said where it went (no ``to``): the run typed the
    new supplier's name into the popup's Name: kept, replay typed it into the customer's
    Name (the steps carried no tab), and the tab switches were left out as if they "only
    read the page"."""
    name = {**IDENTITY, "role": "textbox", "name": "Name", "tag": "input"}
    rows = [
        {"action": "fill", "args": {"ref": "e1", "value": "Zeta"}, "identity": name},
        {"action": "click", "args": {"ref": "e2"}, "identity": IDENTITY},  # "+" opens it
        {"action": "tabs", "args": {"op": "list"}},
        {"action": "tabs", "args": {"op": "select", "index": 1}},
        {"action": "fill", "args": {"ref": "e1", "value": "New Co"}, "identity": name},
        {"action": "click", "args": {"ref": "e3"}, "identity": IDENTITY},
        {"action": "tabs", "args": {"op": "select", "index": 0}},
        {"action": "click", "args": {"ref": "e4"}, "identity": IDENTITY},
    ]  # fmt: skip
    scenario = from_run_steps(rows, name="Customer")
    assert [s.action for s in scenario.steps] == ["fill", "click", "click"]
    assert scenario.steps[0].args == {"value": "Zeta"}
    left_out = scenario.description
    assert "step 2 (tabs): it only read the page" in left_out
    assert "step 3 (tabs): it switched to a tab the run's own steps did not open" in left_out
    assert "step 4 (fill): it ran in a tab the run's own steps did not open" in left_out
    assert "step 5 (click): it ran in a tab" in left_out and "step 6 (tabs)" in left_out
    assert "step 7" not in left_out


def test_a_run_s_typed_dollar_braces_are_text_in_its_scenario_and_a_replay_s_are_its_own() -> None:
    name = {**IDENTITY, "role": "textbox", "name": "Name", "tag": "input"}
    rows = [
        {"action": "type", "args": {"ref": "e3", "text": "Dear ${customer}, total $${amount}"},
         "identity": name},
        {"action": "wait_for", "args": {"text": "Hello ${customer}"}, "by": "person"},
        {"action": "fill", "args": {"ref": "e3", "value": "${who}"}, "identity": name,
         "by": "replay"},  # a replay's step: its scenario's parameter
        {"action": "fill", "args": {"ref": "e3", "value": "$${SECRET:SIG}"}, "identity": name},
        {"action": "fill", "args": {"ref": "e3", "value": "${x} ${SECRET:SIG}"}, "identity": name},
    ]  # fmt: skip
    scenario = from_run_steps(rows, name="Mail")
    assert [s.args for s in scenario.steps] == [
        {"text": "Dear $${customer}, total $$${amount}"},
        {"text": "Hello $${customer}"},
        {"value": "${who}"},
        {"value": "$${x} ${SECRET:SIG}"},
    ]
    assert scenario.placeholders() == ({"who"}, {"SIG"})
    # A replay types what the run typed.
    values = scenario.resolve({"who": "Ada"}, env={"TABWRIGHT_SECRET_SIG": "-- A."})
    assert [values.fill(step.args) for step in scenario.steps] == [
        {"text": "Dear ${customer}, total $${amount}"},
        {"text": "Hello ${customer}"},
        {"value": "Ada"},
        {"value": "${x} -- A."},
    ]
    # A "$" right before a secret can't be written: left out, saying why.
    assert "step 3 (fill): it can't be replayed: a '$' right before ${SECRET:SIG}" in (
        scenario.description
    )
    # Made a parameter, the text is its default, as it was typed.
    made = scenario.with_param(0, "greeting")
    assert made.params["greeting"] == {"default": "Dear ${customer}, total $${amount}"}
    assert made.steps[0].args == {"text": "${greeting}"}
    with pytest.raises(ScenarioInvalid, match="already takes its value"):
        scenario.with_param(3, "sig")


def test_saving_a_run_lists_every_step_it_leaves_out_and_keeps_what_the_person_keeps() -> None:
    rows = [
        {"index": 0, "action": "navigate", "args": {"url": "http://shop.test/a/"}},
        {"index": 1, "action": "check", "args": {"ref": "e4", "checked": True}, "ok": False,
         "error": {"code": "budget_exceeded", "message": "check e4: out of time"},
         "identity": IDENTITY},
        {"index": 2, "action": "evaluate", "args": {"expression": "1"}},
        {"index": 3, "action": "click", "args": {"ref": "e7"}},  # never identified
        {"index": 4, "action": "click", "args": {"ref": "e9"}, "ok": False, "error": {}},
        {"index": 5, "action": "dialog", "args": {"accept": True}},
        {"index": 6, "action": "fill", "args": {"ref": "e3", "value": [5]}, "identity": IDENTITY},
    ]  # fmt: skip
    planned = plan(rows)
    assert [(p.index, p.kept, p.keepable) for p in planned] == [
        (0, True, False), (1, False, True), (2, False, False), (3, False, False),
        (4, False, False), (5, True, False), (6, False, False),
    ]  # fmt: skip
    reasons = [p.reason for p in planned]
    assert reasons[1] == "it failed: check e4: out of time"
    assert reasons[2] == "replay can't do 'evaluate' steps"
    assert reasons[3] == "its element was not identified"
    assert reasons[4] == "it failed: no reason given"  # what it failed at: never identified
    assert reasons[6] == "it can't be replayed: step 6: fill: 'value' must be str, not list"
    check = ScenarioStep("expect", {"kind": "text_visible", "text": "Saved"})
    scenario = from_run_steps(rows, name="Saved", keep=[1, 2], checks=[check])
    assert [s.action for s in scenario.steps] == ["navigate", "check", "dialog", "expect"]
    assert "step 1" not in scenario.description  # kept by the person
    for index in (2, 3, 4, 6):
        assert f"step {index} (" in scenario.description
    with pytest.raises(ScenarioInvalid, match="not a check"):
        from_run_steps(rows, name="x", checks=[ScenarioStep("click", {})])


def test_a_failed_step_is_left_out_because_it_failed_whatever_else_it_lacks() -> None:
    """A fill_form whose ref was not found was left out as "replay can't do 'fill_form'
    steps" (stdio) or "it can't be replayed: fill needs the element's identity" (/mcp):
    replay does fill_form (a done one is saved as its fills); the step failed."""
    lost = {"code": "ref_not_found", "message": "fill_form stopped at field 0 (e3) after 0 "
            "done: unknown ref 'e3': it is not in the latest snapshot of this tab"}  # fmt: skip
    rows = [
        {"index": 0, "action": "navigate", "args": {"url": "http://shop.test/a/"}},
        {"index": 1, "action": "fill_form", "args": {"fields": [{"ref": "e3", "value": "Ann"}]},
         "ok": False, "error": lost},  # as a stdio session records it
        {"index": 2, "action": "fill", "args": {"value": "Ann"}, "ok": False, "error": lost},
        {"index": 3, "action": "fill", "args": {"ref": "e3", "value": "Ann"}, "ok": False,
         "error": lost},
        {"index": 4, "action": "tabs", "args": {"op": "select", "index": 3}, "ok": False,
         "error": {"code": "tab_not_found", "message": "no tab 3"}},
        {"index": 5, "action": "fill", "args": {"ref": "e3", "value": "Ann"}, "ok": False,
         "error": lost, "identity": {**IDENTITY, "role": "textbox", "name": "Name"}},
    ]  # fmt: skip
    planned = plan(rows)
    failed = f"it failed: {lost['message']}"
    assert [(p.index, p.reason, p.keepable) for p in planned] == [
        (0, "", False), (1, failed, False), (2, failed, False), (3, failed, False),
        (4, "it failed: no tab 3", False), (5, failed, True),
    ]  # fmt: skip
    scenario = from_run_steps(rows, name="Sign up", keep=[5])
    assert [s.action for s in scenario.steps] == ["navigate", "fill"]
    assert f"step 1 (fill_form): {failed}" in scenario.description


def test_checks_proposed_mid_conversation_stand_where_their_request_ended() -> None:
    rows = [
        {"index": 0, "action": "navigate", "args": {"url": "http://shop.test/"}},
        {"index": 1, "action": "fill", "args": {"value": "Ada"}, "selector": "#name"},
        {"index": 2, "action": "read_page", "args": {}},  # left out: only read
        {"index": 3, "action": "click", "args": {}, "selector": "#save"},
    ]
    first = ScenarioStep("expect", {"kind": "text_visible", "text": "Ada"})
    second = ScenarioStep("expect", {"kind": "text_visible", "text": "Saved"})
    at_end = ScenarioStep("expect", {"kind": "url", "url": "/done"})
    scenario = from_run_steps(
        rows, name="x", checks=[at_end], placed_checks=[(3, second), (2, first), (-1, first)]
    )
    texts = [
        (s.args.get("text") or s.args.get("url")) if s.is_check else s.action
        for s in scenario.steps
    ]
    # Before any step; after step 2's place (step 2 itself left out); after the last step,
    # then the plain checks at the end.
    assert texts == ["Ada", "navigate", "fill", "Ada", "click", "Saved", "/done"]
    with pytest.raises(ScenarioInvalid, match="not a check"):
        from_run_steps(rows, name="x", placed_checks=[(0, ScenarioStep("click", {}))])


def test_an_identity_stored_before_targets_still_loads_and_a_target_is_kept() -> None:
    old = {"action": "click", "args": {}, "identity": {"role": "link", "name": "Add"}}
    step = ScenarioStep.from_dict(old)
    assert step.identity is not None and step.identity.target == ""
    new = {**old, "identity": {"role": "button", "name": "Save", "target": "http://a.test/s",
                               "method": "post"}}  # fmt: skip
    again = ScenarioStep.from_dict(ScenarioStep.from_dict(new).to_dict())
    assert again.identity is not None
    assert (again.identity.target, again.identity.method) == ("http://a.test/s", "post")


def test_a_step_keeps_its_intent_in_words_and_one_stored_without_says_what_it_does() -> None:
    link = ElementIdentity(role="link", name="Add", target="http://a.test/app/customers/new")
    assert ScenarioStep("click", {}, link).purpose() == "open /app/customers/new through 'Add'"
    tier = ElementIdentity(role="combobox", name="Tier")
    step = ScenarioStep("select_option", {"values": ["Gold"]}, tier)
    assert step.purpose() == "set 'Tier' to Gold"
    kept = ScenarioStep.from_dict({**step.to_dict(), "intent": "set the tier"})
    assert kept.purpose() == "set the tier" and kept.to_dict()["intent"] == "set the tier"
    secret = ScenarioStep("fill", {"value": "hunter2"}, ElementIdentity(role="textbox", name="PIN"))
    assert "hunter2" not in secret.purpose()


def test_a_rows_check_may_count_one_row_or_more_and_its_export_says_so() -> None:
    args = {"kind": "rows", "text": "Buy milk", "count": 1, "at_least": True}
    step = ScenarioStep.from_dict({"action": "expect", "args": args})
    assert step.describe() == "expect at least 1 row(s) show 'Buy milk'"
    code = to_pytest(Scenario(name="Todos", steps=(step,)))
    assert "expect_rows(page, 'Buy milk', 1, at_least=True)" in code
    for bad in ({**args, "at_least": "yes"}, {**args, "count": 0}):
        with pytest.raises(ScenarioInvalid, match="at_least is true or false"):
            ScenarioStep.from_dict({"action": "expect", "args": bad})
    exact = ScenarioStep.from_dict({"action": "expect", "args": {**args, "at_least": False}})
    assert exact.args == {"kind": "rows", "text": "Buy milk", "count": 1}


def test_a_called_scenarios_name_holds_no_parameter_of_its_callers() -> None:
    """ "Promo ${code} (10% off)" is a name: its callers need no value for code."""
    promo = {"version": 1, "name": "Promo ${code} (10% off)", "params": {"who": {}},
             "steps": [{"action": "expect", "args": {"kind": "text_visible",
                                                     "text": "${who}"}}]}  # fmt: skip
    call = {"scenario": "Promo ${code} (10% off)", "params": {"who": "${name}"}}
    scenario = Scenario.from_dict({**scenario_dict({"action": "call", "args": call}),
                                   "callees": {promo["name"]: promo}})  # fmt: skip
    assert scenario.placeholders() == ({"name"}, set())


def test_a_heal_written_back_keeps_a_short_values_placeholder() -> None:
    """A row "${name}" found as "Al (VIP)" with name=Al (a batch row's short value) is
    written back as "${name} (VIP)", as with a longer value: else every later row would
    look for Al's row."""
    stored = ElementIdentity.from_dict({"role": "button", "name": "Delete", "tag": "button",
                                        "row": "${name}"})  # fmt: skip
    for value in ("Alice", "Al"):
        found = replace(stored, row=f"{value} (VIP)")
        assert unfill(stored, found, {"name": value}).row == "${name} (VIP)", value
    found = replace(stored, row="Al (VIP) and All")
    assert unfill(stored, found, {"name": "Al"}).row == "${name} (VIP) and All"  # whole words


def test_a_heal_written_back_keeps_what_only_one_value_s_record_says_as_stored() -> None:
    """The Edit link of the row showing ``${who}`` found in Bo's row, leading to
    /edit/1 where it was recorded leading to /edit/0: written back leading to /edit/0 (each
    batch row wrote its record's number in turn), while a row changed around the value
    is written; a section found without the value (another record's page, "Edit Cy")
    stays "Edit ${who}", never that record's name for every value."""
    stored = ElementIdentity.from_dict({"role": "link", "name": "Edit", "tag": "a",
                                        "row": "${who} Bronze", "section": "Edit ${who}",
                                        "target": "http://crm.test/edit/0"})  # fmt: skip
    found = replace(stored, row="Bo Gold", section="Edit Cy", target="http://crm.test/edit/1")
    kept = unfill(stored, found, {"who": "Bo"})
    assert (kept.row, kept.section, kept.target) == (
        "${who} Gold",
        "Edit ${who}",
        "http://crm.test/edit/0",
    )
    unbound = replace(stored, row="Orders", section="Customers")  # told by no value
    assert unfill(unbound, found, {"who": "Bo"}).target == "http://crm.test/edit/1"


def test_an_element_found_with_a_value_is_written_back_without_what_spells_it() -> None:
    """Found in Bob's row with name=Bob: the row holds ``${name}`` again, a selector that
    spells "Bob" out is dropped (it would find Bob's row for every value), and the row is
    told apart by the words the scenario had, not by Bob's."""
    stored = ElementIdentity.from_dict({"role": "button", "name": "Pay", "tag": "button",
                                        "row": "${name}", "row_words": []})  # fmt: skip
    found = replace(stored, row="Bob", row_words=("bob",),
                    selectors=("tr[data-who='Bob'] button", "#pay-form button"))  # fmt: skip
    kept = unfill(stored, found, {"name": "Bob"})
    assert (kept.row, kept.row_words, kept.selectors) == ("${name}", (), ("#pay-form button",))
    unnamed = replace(stored, row="Orders")  # no placeholder: what replay found is kept whole
    assert unfill(unnamed, found, {"name": "Bob"}) == found


def test_a_parameter_is_carried_into_where_its_link_leads_past_the_host() -> None:
    """Each row's "Pay" link leads to its customer's page: made a parameter, the value in
    where the link leads becomes the placeholder (in the path as a link writes it, past
    the ``?`` as a form sends it; the host is no part of it), replay looks for the link
    leading to the given value's page, and a link found so is written back with the
    placeholder (the "Pay" of Bob's row found, by the link to Bob's page, for every row)."""
    link = {"role": "link", "name": "Pay", "tag": "a", "row": "Ada Lovelace", "name_count": 3,
            "target": "http://ada.test/c/Ada%20Lovelace/pay?who=Ada+Lovelace&to=Ada%20Lovelace",
            "selectors": ["a[href$='who=Ada+Lovelace']", "tr:nth-of-type(1) a"]}  # fmt: skip
    steps = ({"action": "fill", "args": {"value": "Ada Lovelace"}, "identity": IDENTITY},
             {"action": "click", "args": {}, "identity": link})  # fmt: skip
    made = Scenario.from_dict(scenario_dict(*steps)).with_param(0, "who")
    pay = made.steps[1].identity
    assert pay is not None and pay.target == "http://ada.test/c/${who}/pay?who=${who}&to=${who}"
    assert pay.selectors == ("tr:nth-of-type(1) a",)
    only_there = replace(made.steps[1], identity=replace(pay, row="Orders"))
    assert replace(made, steps=(made.steps[0], only_there)).placeholders() == ({"who"}, set())
    values = {"who": "Bob Ray & Co"}
    found = made.resolve(values, env={}).target(made.steps[1])
    assert found is not None
    assert (
        found.target
        == "http://ada.test/c/Bob%20Ray%20%26%20Co/pay?who=Bob+Ray+%26+Co&to=Bob+Ray+%26+Co"
    )
    assert unfill(pay, found, values).target == pay.target
    moved = replace(found, target=found.target + "&page=2", row="Bob Ray & Co (VIP)")
    kept = unfill(pay, moved, values)
    assert kept.target == pay.target + "&page=2" and kept.row == "${who} (VIP)"
    # A value that is also the host's name is no part of where the link leads.
    shop = {**link, "row": "shop", "target": "http://shop.test/pay?who=shop"}
    steps = ({"action": "fill", "args": {"value": "shop"}, "identity": IDENTITY},
             {"action": "click", "args": {}, "identity": shop})  # fmt: skip
    made = Scenario.from_dict(scenario_dict(*steps)).with_param(0, "who")
    assert made.steps[1].identity is not None
    assert made.steps[1].identity.target == "http://shop.test/pay?who=${who}"


def test_an_edit_to_type_another_parameter_takes_the_steps_that_used_the_value_along() -> None:
    """Bob typed, made ``${customer}`` (carried into his row, where the search led, the
    check of the row), then edited to type ``${client}``: the later steps use ``${client}``
    (they kept ``${customer}``, its default Bob: a batch of clients paid Bob's invoice and
    passed).  Edited to a plain value instead, the edit is refused, naming them."""
    pay = {"role": "button", "name": "Pay", "tag": "button", "row": "Bob", "name_count": 3}
    paid = {"kind": "text_visible", "text": "Bob paid, $${customer}"}
    mail = {"scenario": "Mail", "params": {"to": "${customer}"}}
    steps = ({"action": "fill", "args": {"value": "Bob"}, "identity": IDENTITY,
              "led_to": "http://a.test/find?q=Bob"},
             {"action": "click", "args": {}, "identity": pay},
             {"action": "expect", "args": paid}, {"action": "call", "args": mail})  # fmt: skip
    made = Scenario.from_dict(scenario_dict(*steps)).with_param(0, "customer")

    def edited(value: str, *, source: Scenario = made) -> Scenario:
        data = source.to_dict()
        was = data["steps"][0]["args"]
        data["steps"][0] = {**data["steps"][0], "args": {"value": value}}
        followed, renamed = Scenario.from_dict(data).following(0, was)
        assert renamed in ({}, {"customer": "client"}), renamed
        return followed

    followed = edited("${client}")
    assert followed.steps[0].led_to == "http://a.test/find?q=${client}"
    assert followed.steps[1].identity is not None and followed.steps[1].identity.row == "${client}"
    assert followed.steps[2].args["text"] == "${client} paid, $${customer}"  # (a literal one)
    assert followed.steps[3].args["params"] == {"to": "${client}"}
    assert followed.placeholders() == ({"client"}, set())
    # The new parameter is declared as the one it replaces: its default Bob, not required.
    assert followed.params["client"] == {"default": "Bob"}
    assert followed.resolve({}, env={}).params == {"client": "Bob"}
    declared = replace(made, params={**made.params, "client": {"default": "Cyd"}})
    assert edited("${client}", source=declared).params["client"] == {"default": "Cyd"}
    alone = replace(made, steps=made.steps[:1])  # no later step uses it: declared so too
    assert edited("${client}", source=alone).params["client"] == {"default": "Bob"}
    for value in ("Zed", "${client} ${code}", "${SECRET:KEY}"):
        with pytest.raises(ScenarioInvalid) as refused:
            edited(value)
        told = refused.value.message
        assert "step 0 typed ${customer}, and step 1 (click), step 2 (expect)" in told, told
        assert "(its default 'Bob')" in told and "change its default" in (refused.value.hint or "")
    # Typed by another step too, it is that step's value the others may use: none follows.
    twice = replace(made, steps=(*made.steps, made.steps[0]))
    assert edited("${client}", source=twice).steps[1:4] == made.steps[1:4]
    assert edited("Zed", source=twice).steps[0].args == {"value": "Zed"}


@pytest.mark.parametrize(
    ("stored", "who", "found", "written"),
    [
        ("/find?q=${who}", "Ada Lovelace", "/find?q=Ada+Lovelace", "/find?q=${who}"),  # as it is
        ("/find?q=${who}", "Ada Lovelace", "/find?q=Ada+Lovelace&page=2",
         "/find?q=${who}&page=2"),  # changed around the value
        ("/find?q=${who}", "Al", "/find?q=Al&page=2", "/find?q=${who}&page=2"),  # however short
        ("", "Ada Lovelace", "/paid?who=Ada%20Lovelace", "/paid?who=${who}"),  # none stored
        ("", "Al", "/paid?who=Al", "/paid?who=Al"),  # too short to carry where none is stored
        ("", "Ada", "/paid?who=Adam", "/paid?who=Adam"),  # not inside a longer word
        ("/x", "Ada", "", ""),
    ],
)  # fmt: skip
def test_an_address_a_replay_reached_is_written_back_with_its_parameters(
    stored: str, who: str, found: str, written: str
) -> None:
    site = "http://a.test"
    stored, found = (f"{site}{stored}" if stored else ""), (f"{site}{found}" if found else "")
    assert unfill_url(stored, found, {"who": who}) == (f"{site}{written}" if written else "")


def test_an_element_known_by_its_text_alone_is_exported_by_its_text() -> None:
    """A clickable <div> whose selector spelled the value made a parameter (dropped then)
    is found by its text, parameter and all, where replay finds it."""
    card = {"tag": "div", "text": "Ada Lovelace", "selectors": ["div[title='Ada Lovelace']"]}
    scenario = Scenario.from_dict(scenario_dict(
        {"action": "fill", "args": {"value": "Ada Lovelace"}, "identity": IDENTITY},
        {"action": "click", "args": {}, "identity": card},
    ))  # fmt: skip
    code = to_pytest(scenario.with_param(0, "name"))
    assert (
        "page.get_by_text(named(os.environ.get('TABWRIGHT_PARAM_name', 'Ada Lovelace')), "
        "exact=True).first.click()"
    ) in code


@pytest.mark.parametrize(
    ("recorded", "now", "same"),
    [
        ("http://a.test/customers/", "http://a.test/customers", True),  # a last slash
        ("http://a.test/customers/12/", "http://a.test/customers/17/", True),  # another record
        ("http://a.test/customers/", "http://a.test/customers/?saved=1#saved", True),  # added
        ("http://a.test/c/?page=2&tab=all", "http://a.test/c/?tab=all&page=3", True),
        ("http://a.test/customers/", "http://a.test/oops", False),
        ("http://a.test/customers/", "http://a.test/error?code=3", False),
        ("http://a.test/c/?tab=all", "http://a.test/c/?tab=mine", False),  # another value
        ("http://a.test/c/?tab=all", "http://a.test/c/", False),  # a parameter gone
        # Read decoded: a value a form wrote (+) is the one a script wrote (%20).
        ("http://a.test/c?created=Ada+L", "http://a.test/c?created=Ada%20L", True),
        ("http://a.test/c?who=a%40b.org", "http://a.test/c?who=a@b.org&x=1", True),
        ("http://a.test/c/Ada%20L/", "http://a.test/c/Ada L", True),
        ("http://a.test/c?created=Ada+L", "http://a.test/c?created=Ada%2BL", False),
        ("http://a.test/c?who=a%26b", "http://a.test/c?who=a&b", False),  # a value, not two
        # Another record by a generated id: a UUID, a hex id, a cuid.
        ("http://a.test/orders/b1d3a4c2-5e6f-4a1b-8c2d-0123456789ab",
         "http://a.test/orders/fc92aa00-7d3e-4f5a-9b1c-ba9876543210/", True),
        ("http://a.test/orders/3f9a01bc/edit", "http://a.test/orders/77ab0e1d/edit", True),
        ("http://a.test/o/cl9ebqhxk00003b600tymydho", "http://a.test/o/clb1xyz0000a4b600abcdefg",
         True),
        ("http://a.test/o/?id=3f9a01bc", "http://a.test/o/?id=0e1d77ab", True),
        ("http://a.test/orders/3f9a01bc", "http://a.test/orders/new", False),  # words: no id
        ("http://a.test/reports/summary", "http://a.test/reports/overview", False),
    ],
)  # fmt: skip
def test_the_same_place_is_its_path_and_recorded_query_numbers_aside(
    recorded: str, now: str, same: bool
) -> None:
    assert same_place(recorded, now) is same


def test_where_a_step_led_is_read_and_written_as_a_line() -> None:
    step = {"action": "click", "args": {}, "identity": {"role": "button", "name": "Save"},
            "led_to": "http://a.test/customers/"}  # fmt: skip
    read = ScenarioStep.from_dict(step)
    assert read.to_dict()["led_to"] == "http://a.test/customers/"
    assert "led_to" not in ScenarioStep.from_dict({**step, "led_to": ""}).to_dict()
    for bad, said in (("http://a.test/\nx", "control character"), (3, "must be text")):
        with pytest.raises(ScenarioInvalid, match=f"step 0: led_to.*{said}|led_to {said}"):
            ScenarioStep.from_dict({**step, "led_to": bad})
