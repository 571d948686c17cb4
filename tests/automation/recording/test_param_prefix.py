"""A parameter's value that is part of another's name names no record of that other: a
replay (or its exported test) given "Ann" where only Ann Lee is (or "Lee" where only Ann
Lee is) acts on nobody, where both took Ann Lee's row, whose every word but "Lee" reads as
the recorded row, and passed.  The value must stand in its row where the recorded one
stood: alone in its cell (or its badge, or the words beside it then), so a row whose other
cells changed (another tier) is still the one given."""

from __future__ import annotations

import html
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from tests.automation.recording.test_recorder import click_center
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

SHORT = ReplayConfig(locate_wait_ms=1_000)


class _Customers(QuietHandler):
    """Customers (name, tier), each a row with a Delete posting the name: a table's row
    of cells, a list item of a name and a tier badge, a tile of blocks, or a list item
    of one run of text (``layout``: "table", "badges", "tiles", "plain"; there the tier
    is a count); the search shows
    those whose name holds the words searched for (so "Ann" finds Ann Lee)."""

    customers: list[tuple[str, str]] = []
    layout = "table"

    def do_GET(self) -> None:
        term = parse_qs(urlsplit(self.path).query).get("q", [""])[0].strip().lower()
        found = [(n, t) for n, t in self.customers if term in n.lower()]
        delete = (
            "<form method=post action=/delete style='display:inline'>"
            "<input type=hidden name=who value='{}'><button>Delete</button></form>"
        )
        if self.layout == "table":
            rows = "".join(
                f"<tr><td>{html.escape(n)}</td><td>{t}</td><td>{delete.format(html.escape(n))}"
                "</td></tr>"
                for n, t in found
            )
            listed = f"<table><tr><th>Name</th><th>Tier</th><th></th></tr>{rows}</table>"
        elif self.layout == "plain":  # (one run of text: the name and a count)
            listed = (
                "<ul>"
                + "".join(
                    f"<li>{html.escape(n)} {t} {delete.format(html.escape(n))}</li>"
                    for n, t in found
                )
                + "</ul>"
            )
        elif self.layout == "tiles":
            listed = "".join(
                f"<div class=tile><div><b>{html.escape(n)}</b></div><div>{t}</div>"
                f"{delete.format(html.escape(n))}</div>"
                for n, t in found
            )
        else:
            items = "".join(
                f"<li><span>{html.escape(n)}</span> "
                f"<span class=badge style='display:inline-block'>{t}</span> "
                f"{delete.format(html.escape(n))}</li>"
                for n, t in found
            )
            listed = f"<ul>{items}</ul>"
        self.send(200, (
            "<!doctype html><title>Customers</title><h1>Customers</h1>"
            "<form action=/customers><input name=q aria-label=Search>"
            f"<button>Search</button></form>{listed}"
        ).encode())  # fmt: skip

    def do_POST(self) -> None:
        who = self.posted()["who"]
        type(self).customers = [(n, t) for n, t in self.customers if n != who]
        self.send(303, Location="/customers?msg=Deleted")


async def _recorded(tab: Tab, app: str, tier: str = "Gold") -> Scenario:
    """A person searches for Ada and deletes her row (Ada, Gold); the typed name is made
    the parameter ``name``, carried into the Delete's row ("${name} Gold")."""
    _Customers.customers = [("Ada", tier), ("Bob", tier)]
    await tab.navigate(f"{app}/customers")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "input[name=q]")
    await tab.page.keyboard.type("Ada")
    await tab.page.keyboard.press("Enter")
    await tab.page.wait_for_url("**q=*")
    await click_center(tab.page, "button:has-text('Delete')")
    await tab.page.wait_for_url("**msg=*")
    scenario = Scenario("Delete a customer", tuple(await recorder.stop()), base_url=app)
    typed = next(i for i, step in enumerate(scenario.steps) if step.action == "fill")
    return scenario.with_param(typed, "name")


@pytest.mark.parametrize("layout", ["table", "badges", "tiles"])
async def test_a_value_that_begins_or_ends_another_name_acts_on_nobody(
    tab: Tab, tmp_path: Path, layout: str
) -> None:
    """Given "Ann" where Ann Lee is (and "Lee" where Ann Lee is), replay and export
    delete nobody; given "Ann" where Ann (now Silver) and Ann Lee both are, replay deletes
    Ann, whose tier changed in a cell of its own, and the export (the tier as recorded)
    too, never Ann Lee."""
    _Customers.layout = layout
    with loopback_app(_Customers) as app:
        scenario = await _recorded(tab, app)
        click = scenario.steps[-1]
        assert click.identity is not None, click
        told = click.identity.card if layout == "tiles" else click.identity.row
        assert told == "${name} Gold", click.identity
        code = to_pytest(scenario)
        for given, there in (("Ann", "Ann Lee"), ("Lee", "Ann Lee"), ("Ann", "Jo Ann")):
            everyone = [(there, "Gold"), ("Bob", "Gold")]
            _Customers.customers = list(everyone)
            result = await Replay(tab, scenario, params={"name": given}, config=SHORT).run()
            assert not result.ok, (given, there, result.to_dict())
            assert _Customers.customers == everyone, (given, there)
            assert f'without "{given}"' in result.reason, result.reason
            if layout == "badges":  # (the export reads a row's text as a table's)
                continue
            folder = tmp_path / f"{given}-in-{there.replace(' ', '-')}"
            status, out = await run_exported(
                code, folder, app, {"TABWRIGHT_PARAM_name": given}, timeout_ms=2_000
            )
            assert status != 0, out
            assert _Customers.customers == everyone, (given, there, out)
        _Customers.customers = [("Ann Lee", "Gold"), ("Ann", "Silver")]
        result = await Replay(tab, scenario, params={"name": "Ann"}).run()
        assert result.ok, result.to_dict()
        assert _Customers.customers == [("Ann Lee", "Gold")]
        if layout == "badges":
            return
        # (a search that finds two tiles is past what the export tells apart: one there)
        other = ("Ann Lee", "Gold") if layout == "table" else ("Bob Lee", "Gold")
        _Customers.customers = [other, ("Ann", "Gold")]
        status, out = await run_exported(
            code, tmp_path / "named", app, {"TABWRIGHT_PARAM_name": "Ann"}
        )
        assert status == 0 and "1 passed" in out, out
        assert _Customers.customers == [other]


async def test_a_count_beside_the_value_in_one_run_of_text_may_change(tab: Tab) -> None:
    """A row that is one run of text, the name and a count ("Ada 2"): given "Ann", the
    row "Ann 5" is hers, its count changed beside the name, and "Ann Lee 2" is no one's
    ("Lee" stands where the count stood)."""
    _Customers.layout = "plain"
    with loopback_app(_Customers) as app:
        scenario = await _recorded(tab, app, tier="2")
        click = scenario.steps[-1]
        assert click.identity is not None and click.identity.row == "${name} 2", click
        _Customers.customers = [("Ann Lee", "2"), ("Bob", "2")]
        result = await Replay(tab, scenario, params={"name": "Ann"}, config=SHORT).run()
        assert not result.ok and 'without "Ann"' in result.reason, result.to_dict()
        assert _Customers.customers == [("Ann Lee", "2"), ("Bob", "2")]
        _Customers.customers = [("Ann Lee", "2"), ("Ann", "5")]
        result = await Replay(tab, scenario, params={"name": "Ann"}).run()
        assert result.ok, result.to_dict()
        assert _Customers.customers == [("Ann Lee", "2")]
