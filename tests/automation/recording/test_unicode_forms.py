"""A text written in either Unicode form is the same text: "José Díaz" stored decomposed
(NFD: typed on a Mac, read from some databases) is the "José Díaz" a check, a parameter or
a CSV cell gives composed (NFC: most keyboards and spreadsheets), and the other way
round.  Checks, rows and a row's identity failed on it in replay and export: "it is not
shown".  An unaccented "Jose Diaz" is still another name."""

from __future__ import annotations

import html
import re
import unicodedata
from pathlib import Path
from urllib.parse import parse_qs, quote

import pytest

from automation import Tab
from automation.browser.textmatch import named
from automation.recording.export import to_pytest
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario, ScenarioStep
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

NAME = "José Díaz"
FORMS = {"NFC": unicodedata.normalize("NFC", NAME), "NFD": unicodedata.normalize("NFD", NAME)}
SHORT = ReplayConfig(check_timeout_ms=1_500, locate_wait_ms=1_500)


class _Customers(QuietHandler):
    """Customers, the name in the form ``stored`` says, each row with a Delete posting
    it; ``deleted`` keeps whom."""

    stored = "NFD"
    deleted: list[str] = []

    def do_GET(self) -> None:
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>Madrid</td><td><form method=post "
            f'action=/delete><input type=hidden name=who value="{html.escape(name)}">'
            "<button>Delete</button></form></td></tr>"
            for name in (FORMS[self.stored], "Ann Lee")
        )
        page = f"<!doctype html><title>Customers</title><h1>Customers</h1><table>{rows}</table>"
        self.send(200, page.encode())

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        self.deleted.append(parse_qs(body)["who"][0])
        self.send(303, Location="/customers")


def _checks(app: str, given: str) -> Scenario:
    steps = [ScenarioStep("navigate", {"url": f"{app}/customers"})] + [
        ScenarioStep("expect", args)
        for args in (
            {"kind": "text_visible", "text": given},
            {"kind": "rows", "text": given, "count": 1},
            {"kind": "rows", "text": "Jose Diaz", "count": 0},
            {"kind": "text_hidden", "text": "Jose Diaz"},
        )
    ]
    return Scenario("Customers", tuple(steps), base_url=app)


def _delete(app: str, given: str) -> Scenario:
    """Delete in the row of ``${name}`` (given as ``given``), a search's only one."""
    row = {"role": "button", "name": "Delete", "tag": "button", "row": "${name} Madrid",
           "name_count": 1}  # fmt: skip
    steps = (ScenarioStep("navigate", {"url": f"{app}/customers"}),
             ScenarioStep.from_dict({"action": "click", "args": {}, "identity": row}))  # fmt: skip
    return Scenario("Delete", steps, base_url=app, params={"name": {"default": given}})


@pytest.mark.parametrize(("stored", "given"), [("NFD", "NFC"), ("NFC", "NFD")])
async def test_a_name_in_either_unicode_form_is_found_by_checks_and_rows(
    tab: Tab, tmp_path: Path, stored: str, given: str
) -> None:
    _Customers.stored, _Customers.deleted = stored, []
    with loopback_app(_Customers) as app:
        checks = _checks(app, FORMS[given])
        result = await Replay(tab, checks, config=SHORT).run()
        assert result.ok, result.to_dict()
        status, out = await run_exported(to_pytest(checks), tmp_path, app)
        assert status == 0, out
        delete = _delete(app, FORMS[given])
        result = await Replay(tab, delete, params={"name": FORMS[given]}, config=SHORT).run()
        assert result.ok, result.to_dict()
        assert _Customers.deleted == [FORMS[stored]]
        (tmp_path / "delete").mkdir()
        env = {"TABWRIGHT_PARAM_name": FORMS[given]}
        status, out = await run_exported(to_pytest(delete), tmp_path / "delete", app, env)
        assert status == 0, out
        assert _Customers.deleted == [FORMS[stored]] * 2
        # The unaccented name is another one: no row of it, nothing deleted.
        result = await Replay(tab, delete, params={"name": "Jose Diaz"}, config=SHORT).run()
        assert not result.ok and _Customers.deleted == [FORMS[stored]] * 2, result.to_dict()


class _Directory(QuietHandler):
    """Customers as links named by each one's name, in the form ``stored`` says; a
    customer's page says whose it is, and ``opened`` keeps whose were opened."""

    stored = "NFD"
    opened: list[str] = []

    def do_GET(self) -> None:
        if self.path.startswith("/customer?"):
            who = parse_qs(self.path.partition("?")[2])["who"][0]
            self.opened.append(who)
            page = f"<!doctype html><title>{html.escape(who)}</title><h1>Customer</h1>"
            self.send(200, page.encode())
            return
        links = "".join(
            f'<li><a href="/customer?who={quote(name)}">{html.escape(name)}</a></li>'
            for name in (FORMS[self.stored], "Ann Lee", "José Díazó")
        )
        self.send(200, f"<!doctype html><title>Customers</title><ul>{links}</ul>".encode())


def _open(app: str, given: str) -> Scenario:
    """A click on the link named ``${name}`` (given as ``given``), the page's only one."""
    link = {"role": "link", "name": "${name}", "tag": "a", "name_count": 1}
    steps = (ScenarioStep("navigate", {"url": f"{app}/customers"}),
             ScenarioStep.from_dict({"action": "click", "args": {}, "identity": link}))  # fmt: skip
    return Scenario("Open", steps, base_url=app, params={"name": {"default": given}})


@pytest.mark.parametrize(("stored", "given"), [("NFD", "NFC"), ("NFC", "NFD")])
async def test_a_name_a_parameter_gives_in_either_unicode_form_is_the_one_clicked(
    tab: Tab, tmp_path: Path, stored: str, given: str
) -> None:
    """A link named by a parameter's value: replay and export click it whichever form
    the page and the value are in, and only it (not the longer name beside it)."""
    _Directory.stored, _Directory.opened = stored, []
    with loopback_app(_Directory) as app:
        scenario = _open(app, FORMS[given])
        result = await Replay(tab, scenario, params={"name": FORMS[given]}, config=SHORT).run()
        assert result.ok, result.to_dict()
        assert _Directory.opened == [FORMS[stored]]
        env = {"TABWRIGHT_PARAM_name": FORMS[given]}
        status, out = await run_exported(to_pytest(scenario), tmp_path, app, env)
        assert status == 0, out
        assert _Directory.opened == [FORMS[stored]] * 2


def test_a_name_with_two_forms_is_matched_whole_in_either_and_only_so() -> None:
    """``named`` (the export's): a name without letters of two forms stays itself; one
    with them is a pattern that takes either form of each, spaces as any run, whole."""
    assert named("Delete") == "Delete"
    pattern = named(FORMS["NFD"] + "  ")
    assert isinstance(pattern, re.Pattern)
    for shown in (*FORMS.values(), " José\n Díaz ", "Jose\u0301 Díaz"):
        assert pattern.search(shown), shown
    for other in ("Jose Diaz", "José Díazó", "Dr José Díaz", "josé díaz"):
        assert not pattern.search(other), other
