"""Scenarios that call scenarios: the call step in the scenario format, its checks (a
cycle, a callee that is not there, a parameter it lacks or needs), and in a real browser
a caller that signs in to the back office through a called scenario, then checks the
export it downloads, replayed and run as its pytest export."""

from __future__ import annotations

import ast
import json
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from automation.browser.session import BrowserSession
from automation.errors import CallCycle, CallMissing, ParamMissing, ScenarioInvalid
from automation.events import ActionStarted, ListSink, StepRecorded, StepReplayed
from automation.recording.basemove import moved_base
from automation.recording.calls import brought_names, called, check_calls
from automation.recording.export import to_pytest
from automation.recording.outcome import every_outcome
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario
from automation.secrets import Secrets
from tests.automation.recording.test_totp_replay import ENV, sign_in, signs_in_with
from tests.backoffice import PASSWORD, SEED, USER, back_office
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app


def call(name: str, **params: str) -> dict[str, Any]:
    return {"action": "call", "args": {"scenario": name, "params": params}}


def scenario(name: str, *steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"version": 1, "name": name, "steps": list(steps), **top}


NAVIGATE = {"action": "navigate", "args": {"url": "http://bo.test/${page}"}}


def test_a_call_step_is_read_written_and_told_in_words() -> None:
    caller = Scenario.from_dict(scenario(
        "Orders", call("Open", page="${where}"), params={"where": {"default": "orders"}},
        callees={"Open": scenario("Open", NAVIGATE)},
    ))  # fmt: skip
    step = caller.steps[0]
    assert step.describe() == "call 'Open' with page = '${where}'"
    assert caller.placeholders() == ({"where"}, set())  # a caller's ${param} it passes
    again = Scenario.from_dict(json.loads(json.dumps(caller.to_dict())))
    assert again == caller and list(again.callees) == ["Open"]
    check_calls(again)


@pytest.mark.parametrize(
    ("step", "error", "message"),
    [
        (call(""), ScenarioInvalid, "call needs the scenario's name"),
        (call("Open", page="${SECRET:PW}"), ScenarioInvalid, "can't pass a secret"),
        (call("Open", page="${TOTP:BO}"), ScenarioInvalid, "can't pass a secret"),
        (call("Open", **{"no-name": "x"}), ScenarioInvalid, "'no-name' is not a parameter"),
        ({"action": "call", "args": {"scenario": "Open", "then": 1}}, ScenarioInvalid,
         "call takes no then"),
        (call("Open", page="orders", more="x"), ScenarioInvalid, "'Open' has no parameter more"),
        (call("Open"), ParamMissing, "gives 'Open' no value for page"),
        (call("Orders"), CallCycle, "'Orders' calls 'Orders'"),
    ],
)  # fmt: skip
def test_a_bad_call_is_refused_when_read_saying_why(
    step: dict[str, Any], error: type[Exception], message: str
) -> None:
    data = scenario("Orders", step, callees={"Open": scenario("Open", NAVIGATE)})
    with pytest.raises(error, match=message) as info:
        Scenario.from_dict(data)
    assert type(info.value) is error


def test_a_cycle_through_others_and_a_missing_callee_are_typed_errors() -> None:
    a, b = scenario("A", call("B")), scenario("B", call("C"))
    with pytest.raises(CallCycle, match="'A' calls 'B' calls 'C' calls 'A'") as cycle:
        Scenario.from_dict({**a, "callees": {"B": b, "C": scenario("C", call("A"))}})
    assert cycle.value.code == "call_cycle"
    unresolved = Scenario.from_dict({**a, "callees": {"B": b}})  # C: a server resolves it
    with pytest.raises(CallMissing, match="step 0 of 'B' calls 'C', which is not there") as gone:
        check_calls(unresolved)  # what a replay does before its first step
    assert gone.value.code == "call_missing"


def with_login() -> Scenario:
    """ "Orders", whose file brings its login scenario, which types a secret."""
    password = {"action": "fill", "args": {"value": "${SECRET:BO_PASSWORD}"},
                "identity": {"tag": "input", "selectors": ["#pw"]}}  # fmt: skip
    return Scenario.from_dict({
        **scenario("Orders", call("Menu", page="orders"), login_scenario="Sign in"),
        "callees": {"Menu": scenario("Menu", NAVIGATE), "Sign in": scenario("Sign in", password)},
    })  # fmt: skip


def test_a_login_scenario_a_file_brings_is_not_one_its_steps_call() -> None:
    document = with_login()
    assert brought_names(document) == ["Menu", "Sign in"] and list(called(document)) == ["Menu"]
    # Its export calls it only to sign in again, when its first element shows.
    code = to_pytest(document)
    assert "def call_menu(" in code and "def call_sign_in(" in code
    assert code.count("call_sign_in(page, {})") == 1
    arms = "page.add_locator_handler(page.locator('#pw'), sign_in_again, no_wait_after=True)"
    assert arms in code
    # A login scenario with parameters signs in with the test's values of them, as a
    # replay's login scenario takes the replay's (its default when it has one).
    who = {"action": "fill", "args": {"value": "${who}@${site}"},
           "identity": {"tag": "input", "selectors": ["#user"]}}  # fmt: skip
    signs_in = scenario("Sign in", who, params={"who": {}, "site": {"default": "main"}})
    code = to_pytest(
        replace(document, callees={**document.callees, "Sign in": Scenario.from_dict(signs_in)})
    )
    assert (
        "call_sign_in(page, {'who': os.environ['TABWRIGHT_PARAM_who'], "
        "'site': os.environ.get('TABWRIGHT_PARAM_site', 'main')})" in code
    )
    # The one with no default is checked before the first step, as the test's own are.
    assert "    check_params(['who'])\n" in code


def test_a_hostile_callee_is_written_into_its_export_as_text_only() -> None:
    evil = "x'); __import__('os').system('boom'); ('"
    callee = scenario(evil, NAVIGATE, {"action": "expect", "args": {
        "kind": "download", "name": evil, "header": [evil], "rows": 1}})  # fmt: skip
    login = "y'); boom(); ('"  # its login scenario, known by an element named so too
    field = {"role": "textbox", "name": evil, "tag": "input"}
    signs_in = scenario(login, {"action": "fill", "args": {"value": evil}, "identity": field})
    caller = Scenario.from_dict(scenario("Orders", call(evil, page=evil), login_scenario=login,
                                         callees={evil: callee, login: signs_in}))  # fmt: skip
    module = ast.parse(to_pytest(caller))
    functions = {f.name: f for f in module.body if isinstance(f, ast.FunctionDef)}
    assert {"call_x_import_os_system_boom", "test_orders", "check_download"} <= set(functions)
    assert "call_y_boom" in functions
    allowed = {"page", "params", "os", "url", "check_download", "call_x_import_os_system_boom",
               "call_y_boom", "opened", "sign_in_again", "list", "object", "served",
               "writes_answered", "DIALOGS", "fits", "went_on", "documents", "address",
               "DOCUMENT", "len", "held", "asks_sign_in", "signed_in_again",
               # a fill judged by the errors the page shows after it (an autosave refused)
               "WROTE", "sent", "shown", "errors_before", "refused_in_place",
               # a write answered in JSON that it failed, judged last
               "answered_ok",
               # what a step that typed left for later, done before the next one acts
               "before", "still_to_come", "typing_met",
               # a fill's last key released
               "released"}  # fmt: skip
    for name in ("call_x_import_os_system_boom", "call_y_boom", "test_orders"):
        names = {n.id for n in ast.walk(functions[name]) if isinstance(n, ast.Name)}
        assert names <= allowed | {"Page", "dict", "str", "None"}, names
    assert not any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "__import__"
                   for n in ast.walk(module))  # fmt: skip


# -- in a real browser: the back office ------------------------------------------------


def export_orders(url: str) -> Scenario:
    """Signs in through the called "Sign in" (its user a parameter the caller passes),
    then downloads the orders and checks the file."""
    login = sign_in(url).to_dict()
    login["steps"][1]["args"]["value"] = "${user}"
    link = {"role": "link", "name": "Export CSV", "tag": "a", "selectors": ["a[download]"]}
    check = {"kind": "download", "name": "orders*.csv", "type": "csv", "rows": 2,
             "header": ["order", "customer", "total"]}  # fmt: skip
    return Scenario.from_dict(scenario(
        "Export orders", call("Sign in", user="${who}"),
        {"action": "click", "args": {}, "identity": link},
        {"action": "expect", "args": check},
        base_url=url, params={"who": {"default": USER}}, callees={"Sign in": login},
    ))  # fmt: skip


async def test_a_caller_replays_its_callee_in_the_same_tab_and_its_export_does_too(
    browser: BrowserSession, tmp_path: Path
) -> None:
    with back_office() as office:
        document = export_orders(office.url)
        tab = await browser.new_tab(workspace=tmp_path / "replay")
        sink = ListSink()
        # A login scenario's secret is granted when it signs in (recording.relogin),
        # not asked of a replay that may never meet the sign-in page.
        Replay(tab, with_login(), env={}, secrets=Secrets({}, allowed=set()))
        try:
            result = await Replay(tab, document, sink=sink, env=ENV, secrets=Secrets(ENV)).run()
        finally:
            await tab.close()
        assert result.ok, result.reason
        assert office.sign_ins == 1  # signed in as the caller's ${who} told the callee
        first = result.steps[0]
        assert (first.action, first.called, len(first.inner)) == ("call", "Sign in", 8)
        assert [s for s, o in every_outcome(result.steps) if o.status == "passed"] == (
            [""] + ["Sign in"] * 8 + ["", ""]
        )
        # The callee's steps are steps of the run of their own, marked with its name.
        recorded = sink.of_type(StepRecorded)
        assert {e.index for e in recorded} == set(range(11))
        assert recorded[0].action == "call"  # listed before its steps, said again when done
        assert [e.index for e in recorded if e.action == "call"] == [0, 0]
        inner = [e for e in recorded if e.by == "call"]
        assert len(inner) == 8 and {e.call for e in inner} == {"Sign in"}
        assert min(e.index for e in inner) == 3  # after the caller's own three
        replayed = [e for e in sink.of_type(StepReplayed) if e.scenario == "Sign in"]
        assert [e.index for e in replayed] == list(range(8))
        assert [e.row for e in replayed] == [e.index for e in inner]
        started = [e.index for e in sink.of_type(ActionStarted)]
        assert started[:2] == [0, 3]  # the call, then its first step
        text = json.dumps([e.to_dict() for e in sink.events]) + json.dumps(result.to_dict())
        assert PASSWORD not in text and SEED not in text and office.codes[0] not in text

        # The export: a function for "Sign in", called with the caller's value, and the
        # download checked as the replay checked it.
        code = to_pytest(document)
        assert "def call_sign_in(page: Page, params: dict[str, str]) -> None:" in code
        assert "call_sign_in(page, {'user': os.environ.get('TABWRIGHT_PARAM_who', 'ada')})" in code
        assert "check_download(page, {'kind': 'download', 'name': 'orders*.csv'" in code
        # Run beside it, the same file expecting a row more fails as the replay would; and
        # a scenario that brings its login scenario, which its export signs in again with
        # when the sign-in page shows (its browser has no session), then goes on.
        signing = to_pytest(signs_in_with(office.url, sign_in(office.url)))
        assert "page.add_locator_handler(page.locator('[name=user]'), sign_in_again, " in signing
        # One that calls its own login scenario first: its sign-in page is no expired
        # session there, and the export signs in once, as the replay does.
        own = to_pytest(Scenario.from_dict({**document.to_dict(), "login_scenario": "Sign in"}))
        assert "page.remove_locator_handler(page.locator('[name=user]'))" in own
        more = {"test_fewer.py": code.replace("'rows': 2", "'rows': 3"),
                "test_signs_in_again.py": signing, "test_calls_its_login.py": own}  # fmt: skip
        # (Its login scenario's user, which it signs in again with, has no default: the
        # file needs it, as its own parameters.)
        env = {**ENV, "TABWRIGHT_PARAM_user": USER}
        status, out = await run_exported(code, tmp_path, office.url, env, more=more)
        assert status == 1 and "1 failed, 3 passed" in out, out
        assert "test_fewer.py" in out and "'orders.csv' has 2 row(s) of data" in out, out
        assert office.sign_ins == 5 and office.views["/orders/1001"] == 1


@pytest.mark.parametrize(
    ("base", "caller", "replayed_at", "moved"),
    [
        ("http://a.test", "http://a.test/orders", "http://a.test/orders/", "http://a.test"),
        ("http://a.test", "http://a.test/orders", "http://b.test/orders", "http://b.test"),
        ("http://a.test/auth", "http://a.test/orders", "http://b.test/v2/orders",
         "http://b.test/v2/auth"),  # the app's mount moved: the sign-in's did too
        ("http://a.test/orders/x", "http://a.test/orders", "http://b.test/v2", "http://b.test/v2/x"),
        ("http://a.test/auth", "http://a.test/orders", "http://b.test/sales", "http://b.test/auth"),
        ("http://id.test", "http://a.test/orders", "http://b.test/orders", "http://id.test"),
        ("http://a.test/auth", "", "http://b.test/app", "http://b.test/app"),  # it only calls
        ("", "http://a.test/orders", "http://b.test/orders", "http://b.test/orders"),
        ("http://a.test/auth", "http://a.test/orders", "", "http://a.test/auth"),
        ("http://a.test/auth/index.html", "http://a.test/orders/list.html",
         "http://b.test/orders/", "http://b.test/auth"),
    ],
)  # fmt: skip
def test_a_called_scenario_moves_as_its_caller_moved(
    base: str, caller: str, replayed_at: str, moved: str
) -> None:
    assert moved_base(base, caller, replayed_at) == moved


class Mounted(QuietHandler):
    """An app with its sign-in page at ``/login`` and its orders at ``/orders/``, served at
    the root and again under ``/v2`` (another build, mounted there); ``asked`` keeps the
    paths asked for."""

    asked: list[str] = []

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        self.asked.append(path)
        pages = {"/login": "<h1>Sign in</h1>", "/orders/list.html": "<h1>Orders</h1>"}
        page = pages.get(path.removeprefix("/v2"))
        self.send(200 if page else 404, (page or "<h1>Not found</h1>").encode())


async def test_a_called_scenario_recorded_outside_its_caller_s_folder_replays_where_it_was(
    browser: BrowserSession, tmp_path: Path
) -> None:
    """The orders (recorded under ``/orders``) call "Open sign-in" (recorded at the root):
    replayed at their own base, or at another build's mount, the sign-in page is opened
    where it is there, by the replay and by the export.  The called one was moved into
    the caller's folder (``/orders/login``: not found) and failed."""
    with loopback_app(Mounted) as url:
        opened = {"action": "expect", "args": {"kind": "text_visible", "text": "Sign in"}}
        signing = scenario("Open sign-in", {"action": "navigate", "args": {"url": f"{url}/login"}},
                           opened, base_url=url)  # fmt: skip
        document = Scenario.from_dict(scenario(
            "Orders", {"action": "navigate", "args": {"url": f"{url}/orders/list.html"}},
            call("Open sign-in"), base_url=f"{url}/orders", callees={"Open sign-in": signing},
        ))  # fmt: skip
        tab = await browser.new_tab()
        try:
            for at, login in ((f"{url}/orders/", "/login"), (f"{url}/v2/orders", "/v2/login")):
                Mounted.asked = []
                result = await Replay(tab, document, base_url=at).run()
                assert result.ok, (at, result.reason, Mounted.asked)
                assert Mounted.asked[-1] == login, Mounted.asked
        finally:
            await tab.close()
        Mounted.asked = []
        status, out = await run_exported(to_pytest(document), tmp_path, f"{url}/v2/orders")
        assert status == 0, out[-3000:]
        assert Mounted.asked == ["/v2/orders/list.html", "/v2/login"], Mounted.asked
