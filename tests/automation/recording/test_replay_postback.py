"""A form the server refuses by answering it with the form again (HTTP 200, the values sent
in its fields, a message saying why: as Django, Rails and most back offices do) fails the
replay's check of it, where the recording was redirected after the save.  The check of
the field's value held on the refused form, and the replay said passed with nothing saved.
A form whose recording was answered in place too (no redirect) is judged as ever."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs

import pytest

from automation import Tab
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario
from tests.net import QuietHandler, loopback_app

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


async def test_a_form_recorded_answered_in_place_is_judged_as_ever(
    tab: Tab, office: Office
) -> None:
    office.in_place = True  # saved, and answered in place when recorded as now
    result = await Replay(tab, edit(office, "ops@acme.test", "/customers/1/edit")).run()
    assert result.ok, result.to_dict()
    assert office.email == "ops@acme.test"
