"""A form the server refuses by answering it with the form again (HTTP 200, the values sent
in its fields, a message saying why: as Django, Rails and most back offices do) fails the
replay's check of it, where the recording was redirected after the save.  The check of
the field's value held on the refused form, and the replay said passed with nothing saved.
A form whose recording was answered in place too (no redirect) is judged as ever.

And a form whose save the server redirects elsewhere than when it was recorded (an error
page of the app's own, answered 200: /oops) fails the step that sent it, in the replay and
in its pytest export: before, a scenario without a check said succeeded there.  Another
record's id, a parameter the app adds (?saved=1) or a fragment is the same place."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from urllib.parse import parse_qs, quote, urlencode

import pytest

from automation import AgentRun, ListSink, Tab
from automation.events import StepRecorded
from automation.llm.rules import RulePlanner
from automation.recording.export import to_pytest
from automation.recording.fromrun import from_run_steps
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayResult
from automation.recording.scenario import Scenario
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

pytestmark = pytest.mark.long  # one of the longest files: dealt out first

FORM = """<!doctype html><title>Edit customer</title><h1>Acme Ltd</h1>{said}
<form method="post"><label>Email <input name="email" value="{email}"></label>
<label>Phone <input name="phone" value=""></label><button>Save</button></form>"""


class Office:
    def __init__(self) -> None:
        self.email = "a@acme.test"
        self.phone_needed = False  # the new release: a phone is needed to save
        self.in_place = False  # answered in place, saved or not (no redirect)
        self.url = ""


@pytest.fixture
def office() -> Iterator[Office]:
    state = Office()

    class Handler(QuietHandler):
        def _page(self, status: int, said: str, email: str) -> None:
            self.send(status, FORM.format(said=said, email=email).encode())

        def do_GET(self) -> None:
            saved = self.path.endswith("?saved=1")
            self._page(200, '<p role="status">Saved</p>' if saved else "", state.email)

        def do_POST(self) -> None:
            form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            email = form.get("email", [""])[0]
            if state.phone_needed and not form.get("phone"):
                self._page(200, '<p role="alert">Phone: this field is required</p>', email)
                return
            state.email = email
            if state.in_place:
                self._page(200, '<p role="status">Saved</p>', email)
                return
            self.send(302, Location="/customers/1/edit?saved=1")

    with loopback_app(Handler) as state.url:
        yield state


def edit(office: Office, email: str, landed: str) -> Scenario:
    """Change the email and save; the check of the field recorded on ``landed``."""
    field = {"role": "textbox", "name": "Email", "tag": "input", "name_attr": "email"}
    return Scenario.from_dict({
        "version": 1, "name": "Change email", "base_url": office.url, "steps": [
            {"action": "navigate", "args": {"url": f"{office.url}/customers/1/edit"}},
            {"action": "fill", "args": {"value": email}, "identity": field},
            {"action": "click", "args": {}, "identity": {"role": "button", "name": "Save",
                                                         "tag": "button"}},
            {"action": "expect", "args": {"kind": "value", "value": email}, "identity": field,
             "url": f"{office.url}{landed}"}]})  # fmt: skip


@pytest.mark.parametrize("phone_needed", [True, False])
async def test_a_form_answered_with_itself_again_fails_the_check_recorded_after_a_redirect(
    tab: Tab, office: Office, phone_needed: bool
) -> None:
    office.phone_needed = phone_needed
    scenario = edit(office, "billing@acme.test", "/customers/1/edit?saved=1")
    result = await Replay(tab, scenario).run()
    if not phone_needed:  # saved and redirected, as when recorded
        assert result.ok, result.to_dict()
        assert office.email == "billing@acme.test"
        return
    check = result.steps[-1]
    assert result.status == "failed" and check.status == "failed", result.to_dict()
    assert check.error is not None and check.error["code"] == "check_failed"
    assert "the server's answer to the form sent" in check.error["message"]
    assert "likely refused the form" in check.error["message"]
    assert office.email == "a@acme.test"


@pytest.mark.parametrize("phone_needed", [True, False])
async def test_the_export_of_a_check_on_a_form_answered_with_itself_fails_as_its_replay(
    tab: Tab, office: Office, tmp_path: Path, phone_needed: bool
) -> None:
    """The export's check of the field held on the refused form, where the replay's
    failed: the server's own answer to the form, at another address than the check was
    recorded on."""
    office.phone_needed = phone_needed
    scenario = edit(office, "billing@acme.test", "/customers/1/edit?saved=1")
    result = await Replay(tab, scenario).run()
    assert result.ok is not phone_needed, result.to_dict()
    status, out = await run_exported(to_pytest(scenario), tmp_path, office.url)
    if not phone_needed:
        assert status == 0 and "1 passed" in out, out
        return
    assert status == 1 and "the server's answer to the form sent" in out, out
    assert office.email == "a@acme.test"


async def test_a_form_recorded_answered_in_place_is_judged_as_ever(
    tab: Tab, office: Office
) -> None:
    office.in_place = True  # saved, and answered in place when recorded as now
    result = await Replay(tab, edit(office, "ops@acme.test", "/customers/1/edit")).run()
    assert result.ok, result.to_dict()
    assert office.email == "ops@acme.test"


# A back office that shows its refusal as a page of its own, answered 200: the form's POST
# is redirected to /customers/<id>/ when it saves, to /oops (or /error?code=3) when not.
NEW_CUSTOMER = """<!doctype html><title>New customer</title><h1>New customer</h1>
<form method="post" action="/customers/"><label>Name <input name="name"></label>
<button>Save</button></form>"""


class BackOffice:
    def __init__(self) -> None:
        self.after = "/customers/12/"  # where the POST is redirected
        self.url = ""


@pytest.fixture
def back_office() -> Iterator[BackOffice]:
    state = BackOffice()

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            if self.path == "/customers/new":
                self.send(200, NEW_CUSTOMER.encode())
                return
            gone = self.path.startswith(("/oops", "/error"))
            said = "Something went wrong" if gone else "Customer saved"
            self.send(200, f"<!doctype html><title>{said}</title><h1>{said}</h1>".encode())

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send(302, Location=state.after)

    with loopback_app(Handler) as state.url:
        yield state


def add_customer(base: str, led_to: str | None) -> Scenario:
    """Add a customer; the save recorded as leading to ``led_to`` (None: a scenario
    stored before steps knew where they led)."""
    save = {"action": "click", "args": {}, "identity": {"role": "button", "name": "Save",
                                                        "tag": "button"}}  # fmt: skip
    if led_to is not None:
        save["led_to"] = base + led_to
    return Scenario.from_dict({
        "version": 1, "name": "Add a customer", "base_url": base, "steps": [
            {"action": "navigate", "args": {"url": f"{base}/customers/new"}},
            {"action": "fill", "args": {"value": "Ada"}, "identity": {
                "role": "textbox", "name": "Name", "tag": "input", "name_attr": "name"}},
            save]})  # fmt: skip


def led_elsewhere(result: ReplayResult) -> str:
    """The message of the replay's failed step, failed where its write led elsewhere."""
    last = next((s for s in result.steps if s.status == "failed"), None)
    assert result.status == "failed" and last is not None, result.to_dict()
    assert last.error is not None and last.error["code"] == "led_elsewhere", last.error
    assert "led to\" on the scenario's page" in last.error["hint"]
    return str(last.error["message"])


@pytest.mark.parametrize(
    ("recorded", "now", "fails"),
    [
        ("/customers/", "/oops", True),
        ("/customers/", "/error?code=3", True),
        ("/customers/?tab=all", "/customers/?tab=mine", True),  # a parameter's other value
        ("/customers/12/", "/customers/17", False),  # another record's id, no last slash
        (
            "/customers/b1d3a4c2-5e6f-4a1b-8c2d-0123456789ab/",  # another record by its UUID
            "/customers/fc92aa00-7d3e-4f5a-9b1c-ba9876543210/",
            False,
        ),
        ("/customers/", "/customers/?saved=1#saved", False),  # a parameter the app adds
    ],
)
async def test_a_form_whose_save_leads_elsewhere_than_recorded_fails_in_replay_and_export(
    tab: Tab, back_office: BackOffice, tmp_path: Path, recorded: str, now: str, fails: bool
) -> None:
    back_office.after = now
    base = back_office.url
    scenario = add_customer(base, recorded)
    result = await Replay(tab, scenario).run()
    if fails:
        message = led_elsewhere(result)
        assert f"led to {base}{now}, not to {base}{recorded} as when recorded" in message
    code = to_pytest(scenario)
    assert f"where_it_led(page, sent, url({base + recorded!r})" in code
    status, out = await run_exported(code, tmp_path, base, timeout_ms=10_000)
    if not fails:
        assert result.ok, result.to_dict()
        assert status == 0 and "1 passed" in out, out
        return
    assert status == 1 and f"led to {base}{now}, not to {base}{recorded}" in out, out
    # Stored before steps knew where they led: judged as ever (no check: it passes).
    assert (await Replay(tab, add_customer(base, None)).run()).ok


async def test_a_recorded_save_knows_where_it_led_and_fails_where_it_leads_elsewhere(
    tab: Tab, back_office: BackOffice
) -> None:
    base = back_office.url
    await tab.navigate(f"{base}/customers/new")
    recorder = Recorder(tab)
    await recorder.start()
    await tab.page.get_by_label("Name").click()
    await tab.page.keyboard.type("Ada")
    await tab.page.get_by_role("button", name="Save").click()
    await tab.page.wait_for_url(f"{base}/customers/12/")
    steps = await recorder.stop()
    assert [(s.action, s.led_to) for s in steps] == [
        ("navigate", f"{base}/customers/new"),
        ("fill", f"{base}/customers/new"),
        ("click", f"{base}/customers/12/"),
    ]
    recorded = Scenario("Add a customer", tuple(steps), base_url=base)
    back_office.after = "/customers/17/"  # another record: the same place
    assert (await Replay(tab, recorded).run()).ok
    back_office.after = "/oops"
    assert f"led to {base}/oops, not to {base}/customers/12/" in led_elsewhere(
        await Replay(tab, recorded).run()
    )


async def test_a_save_an_agent_run_made_knows_where_it_led(
    tab: Tab, back_office: BackOffice
) -> None:
    base = back_office.url
    task = "type Ada into Name\nclick Save\nwait for Customer saved"
    recorded = await agent_made(tab, task, f"{base}/customers/new", base)
    assert [s.led_to for s in recorded.steps][-2:] == [f"{base}/customers/12/"] * 2
    back_office.after = "/error?code=3"
    message = led_elsewhere(await Replay(tab, recorded).run())
    assert f"led to {base}/error?code=3, not to {base}/customers/12/" in message


async def agent_made(tab: Tab, task: str, start_url: str, base: str) -> Scenario:
    """The scenario made from an agent's run of ``task`` (the rule planner's: no model)
    from ``start_url``, as the dashboard saves it from the run's recorded steps."""
    sink = ListSink()
    run = AgentRun(tab=tab, planner=RulePlanner(), sink=sink, task=task, start_url=start_url)
    finished = await run.run()
    assert finished.status == "succeeded", finished.reason
    rows = [asdict(step) for step in sink.of_type(StepRecorded)]
    return from_run_steps(rows, name=task.splitlines()[0], base_url=base)


class _Searching(QuietHandler):
    """A save redirected to the list searched for the name saved (?name=…), as a form
    encodes it (``Delta+Co``), or, ``by_script``, as a script's encodeURIComponent does
    (``Delta%20Co``)."""

    by_script = False

    def do_GET(self) -> None:
        if self.path == "/customers/new":
            self.send(200, NEW_CUSTOMER.encode())
            return
        self.send(200, b"<!doctype html><title>Customers</title><h1>Customers</h1>")

    def do_POST(self) -> None:
        name = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())["name"][0]
        query = f"name={quote(name, safe='')}" if self.by_script else urlencode({"name": name})
        self.send(302, Location=f"/customers/?{query}")


@pytest.fixture
def searching_office() -> Iterator[str]:
    with loopback_app(_Searching) as base:
        yield base


@pytest.mark.parametrize("by_script", [False, True])
async def test_a_typed_value_made_a_parameter_is_carried_into_where_later_steps_led(
    tab: Tab, searching_office: str, tmp_path: Path, by_script: bool
) -> None:
    """Where the save led holds the name typed: made a parameter, each value is judged
    by where it leads with that value, read decoded (the app's %20 is the form's +:
    replay filled ``Echo+%26+Sons`` where the app wrote ``Echo%20%26%20Sons``, and failed
    every value the app saved)."""
    base = searching_office
    _Searching.by_script = by_script
    spelled = "Delta%20Co" if by_script else "Delta+Co"
    recorded = Scenario.from_dict({
        "version": 1, "name": "Add a customer", "base_url": base, "steps": [
            {"action": "navigate", "args": {"url": f"{base}/customers/new"}},
            {"action": "fill", "args": {"value": "Delta Co"}, "identity": {
                "role": "textbox", "name": "Name", "tag": "input", "name_attr": "name"}},
            {"action": "click", "args": {}, "led_to": f"{base}/customers/?name={spelled}",
             "identity": {"role": "button", "name": "Save", "tag": "button"}}]})  # fmt: skip
    scenario = recorded.with_param(1, "customer")
    assert scenario.steps[2].led_to == base + "/customers/?name=${customer}"
    for params in ({}, {"customer": "Echo & Sons"}):
        result = await Replay(tab, scenario, params=params).run()
        assert result.ok, result.to_dict()
    code = to_pytest(scenario)
    assert "where_it_led(page, sent, url('" in code and "quote_plus(os.environ.get(" in code
    env = {"TABWRIGHT_PARAM_customer": "Echo & Sons"}
    status, out = await run_exported(code, tmp_path, base, env=env, timeout_ms=10_000)
    assert status == 0 and "1 passed" in out, out
