"""A save the app refuses by sending the person back to the list with a message saying why
fails its step, in replay and in the pytest export.

A server-drawn back office: the list of customers, each one's edit form; the form posts,
and the server redirects to the list with a flash message, "Customer was updated" or, when
it refuses the save, "Customer could not be updated: email is already taken" (HTTP 200
after the redirect: nothing else tells).  The step led where it led when recorded (the
list), so that passed; now the list, read when an earlier step acted on it, shows an error
it did not show then, and the step fails saying it.  The message is marked as frameworks
mark it: a class naming an error, Rails' ``flash[:alert]`` (a class "alert", read by its
words), ``role=alert``.  An error the list showed all along is no answer to the save, and a
check after the step that expects the refusal's words makes it the scenario's own."""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from automation import Tab
from automation.browser.seen import errors_shown
from automation.recording.export import to_pytest
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario, ScenarioStep
from tests.bounds import room
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import acted

LAYOUT = """<!doctype html><title>{title}</title><nav><a href="/customers">Customers</a></nav>
{flash}{steady}<h1>{title}</h1>{body}"""
REFUSED = "Customer could not be updated: email is already taken"
FLASHES = {  # how each framework marks its error message
    "error class": '<div class="flash flash-error">{}</div>',
    "rails alert": '<p class="alert">{}</p>',
    "role alert": '<div role="alert" class="flash">{}</div>',
}


@dataclass
class Office:
    email: str = "acme@example.com"
    refuse: bool = False
    style: str = "error class"
    steady: str = ""  # an error the list shows all along
    flash: list[str] = field(default_factory=list)


@pytest.fixture
def office() -> Iterator[tuple[Office, str]]:
    state = Office()

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            flash = state.flash.pop() if state.flash else ""
            if self.path == "/customers":
                link = '<a href="/customers/1/edit">Edit Acme</a>'
                body = (f"<table><tr><td>Acme</td><td>{html.escape(state.email)}</td>"
                        f"<td>{link}</td></tr></table>")  # fmt: skip
                title = "Customers"
            else:
                body = ('<form method=post action="/customers/1"><label>Email <input '
                        f'name=email value="{html.escape(state.email)}"></label>'
                        "<button>Update customer</button></form>")  # fmt: skip
                title = "Edit Acme"
            page = LAYOUT.format(title=title, flash=flash, steady=state.steady, body=body)
            self.send(200, page.encode())

        def do_POST(self) -> None:
            email = self.posted()["email"]
            if state.refuse:
                state.flash.append(FLASHES[state.style].format(REFUSED))
            else:
                state.email = email
                state.flash.append('<div class="flash flash-notice">Customer was updated</div>')
            self.send(303, Location="/customers")

    with loopback_app(Handler) as url:
        yield state, url


async def update_email(tab: Tab, base: str) -> tuple[ScenarioStep, ...]:
    return await acted(tab, f"{base}/customers", [
        ("click", "link", "Edit Acme", {}),
        ("fill", "textbox", "Email", {"value": "billing@acme.example"}),
        ("click", "button", "Update customer", {}),
    ])  # fmt: skip


@pytest.mark.parametrize("style", list(FLASHES))
async def test_a_save_sent_back_to_the_list_saying_why_fails_replay_and_export(
    tab: Tab, office: tuple[Office, str], tmp_path: Path, style: str
) -> None:
    state, base = office
    scenario = Scenario("Update Acme's email", await update_email(tab, base), base_url=base + "/")
    assert state.email == "billing@acme.example"
    code = to_pytest(scenario)

    state.email, state.refuse, state.style = "acme@example.com", True, style
    result = await Replay(tab, scenario).run()
    assert not result.ok and state.email == "acme@example.com", result.to_dict()
    failed = result.steps[3]
    assert failed.error is not None and failed.error["code"] == "refused_where_it_led"
    assert f"saying {REFUSED!r}, which that page did not show before" in failed.error["message"]
    status, out = await run_exported(code, tmp_path, base)
    assert status == 1 and "which that page did not show before" in out, out
    assert state.email == "acme@example.com"


async def test_a_save_kept_passes_beside_an_error_the_list_shows_all_along(
    tab: Tab, office: tuple[Office, str], tmp_path: Path
) -> None:
    state, base = office
    state.steady = '<div class="alert alert-danger">2 invoices are overdue</div>'
    scenario = Scenario("Update Acme's email", await update_email(tab, base), base_url=base + "/")
    state.email = "acme@example.com"
    result = await Replay(tab, scenario).run()
    assert result.ok and state.email == "billing@acme.example", result.to_dict()
    state.email = "acme@example.com"
    status, out = await run_exported(to_pytest(scenario), tmp_path, base)
    assert status == 0 and state.email == "billing@acme.example", out


async def test_a_refusal_a_check_after_the_save_expects_passes(
    tab: Tab, office: tuple[Office, str], tmp_path: Path
) -> None:
    state, base = office
    state.refuse = True
    steps = await update_email(tab, base)
    expects = ScenarioStep("expect", {"kind": "text_visible", "text": "could not be updated"})
    scenario = Scenario("Acme's email is refused", (*steps, expects), base_url=base + "/")
    assert (await Replay(tab, scenario).run()).ok
    status, out = await run_exported(to_pytest(scenario), tmp_path, base)
    assert status == 0 and state.email == "acme@example.com", out


async def test_a_message_box_its_class_names_is_an_error_where_its_words_say_it_refused(
    module_tab: Tab,
) -> None:
    await module_tab.page.set_content(
        '<p class="alert">Customer could not be updated</p>'
        '<p class="Flash">You must accept the terms</p>'
        '<p class="alert">Signed out</p><p class="flash">Customer was updated</p>'
        '<div class="alert alert-info">Some fields are missing a value</div>'
        '<p class="alerts">Nothing could be read</p>'
    )
    for named in (True, False):
        shown = await errors_shown(module_tab, room(), named=named)
        assert shown == ["Customer could not be updated", "You must accept the terms"], shown


async def test_a_key_that_sends_the_form_back_to_the_list_saying_why_fails_replay(
    tab: Tab, office: tuple[Office, str]
) -> None:
    state, base = office
    steps = await update_email(tab, base)
    click = steps[-1]  # Enter pressed where the focus is (the field) instead of the click
    enter = ScenarioStep("press", {"key": "Enter"}, url=click.url, led_to=click.led_to)
    scenario = Scenario("Update Acme's email", (*steps[:-1], enter), base_url=base + "/")
    state.email, state.refuse = "acme@example.com", True
    result = await Replay(tab, scenario).run()
    assert not result.ok and state.email == "acme@example.com", result.to_dict()
    failed = result.steps[3]
    assert failed.error is not None and failed.error["code"] == "refused_where_it_led", failed
