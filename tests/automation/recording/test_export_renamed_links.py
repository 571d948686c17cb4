"""A link a record's data names ("Edit Acme"), healed as the record was renamed, is found
by where it leads in the pytest export, not by the names it had.

A replay after the record was renamed finds the link where it leads (its ``target``) and
the heal is written back: the new name first, the old kept as a variant.  The export
looked for any of those names: once another record bore an old one (data moves: customer
2 renamed "Acme" some day), the export clicked that record's link, edited it and passed.
Now a renamed link's old names are looked for where the link led, as replay's ``target``
finds it: the export edits the record the scenario acted on, or fails; never another (nor
does replay)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from html import escape
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from automation import Tab
from automation.browser.identity import ElementIdentity
from automation.recording.export import to_pytest
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import acted

LIST = "<!doctype html><title>Customers</title><h1>Customers</h1><table>{rows}</table>"
ROW = '<tr><td>{name}</td><td><a href="/customers/{id}/edit">Edit {name}</a></td></tr>'
EDIT = """<!doctype html><title>Edit</title><h1>Edit customer</h1><form method="post">
<label>Name <input name="name" value="{name}"></label><button>Save</button></form>"""


@pytest.fixture
def app() -> Iterator[tuple[dict[int, str], str]]:
    customers = {1: "Acme", 2: "Zeta Corp"}

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            if found := re.fullmatch(r"/customers/(\d+)/edit", self.path):
                html = EDIT.format(name=escape(customers[int(found.group(1))]))
            else:
                rows = "".join(ROW.format(id=i, name=escape(n)) for i, n in customers.items())
                html = LIST.format(rows=rows)
            self.send(200, html.encode())

        def do_POST(self) -> None:
            found = re.fullmatch(r"/customers/(\d+)/edit", self.path)
            assert found is not None
            form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            customers[int(found.group(1))] = form["name"][0]
            self.send(303, Location="/customers")

    with loopback_app(Handler) as url:
        yield customers, url


async def _recorded(tab: Tab, base: str) -> Scenario:
    """A run that renames Acme (customer 1) to Acme Ltd; the name typed made ``name``."""
    steps = await acted(tab, f"{base}/customers", [
        ("click", "link", "Edit Acme", {}), ("fill", "textbox", "Name", {"value": "Acme Ltd"}),
        ("click", "button", "Save", {}),
    ])  # fmt: skip
    return Scenario("Rename a customer", steps, base_url=base + "/").with_param(2, "name")


async def test_a_renamed_link_is_found_where_it_leads_not_by_an_old_name(
    tab: Tab, app: tuple[dict[int, str], str], tmp_path: Path
) -> None:
    customers, base = app
    scenario = await _recorded(tab, base)
    assert customers == {1: "Acme Ltd", 2: "Zeta Corp"}
    # Replayed on the day's data (customer 1 is "Acme Ltd" now): the link is healed.
    result = await Replay(tab, scenario, params={"name": "Alpha"}).run()
    assert result.ok, result.to_dict()
    link = result.steps[1]
    assert link.heal == "confident" and link.healed, result.to_dict()
    assert customers == {1: "Alpha", 2: "Zeta Corp"}
    now = ElementIdentity.from_dict(link.healed)
    before = scenario.steps[1].identity
    assert before is not None
    steps = list(scenario.steps)
    steps[1] = replace(steps[1], identity=before.confirmed_as(now))  # as the dashboard keeps it
    healed = replace(scenario, steps=tuple(steps))
    identity = healed.steps[1].identity
    assert identity is not None and [v.name for v in identity.variants] == ["Edit Acme"]

    # Another day: customer 1 is Gamma, and customer 2 bears customer 1's first name.
    customers.update({1: "Gamma", 2: "Acme"})
    code = to_pytest(healed)
    status, out = await run_exported(code, tmp_path, base, {"TABWRIGHT_PARAM_name": "Delta"})
    assert customers[2] == "Acme", (customers, out)  # never another record's link
    assert status == 0 and customers == {1: "Delta", 2: "Acme"}, (customers, out)
    # Replay, which finds each of the link's identities and refuses where they point at
    # different links, does not edit another record either.
    customers.update({1: "Gamma", 2: "Acme"})
    again = await Replay(tab, healed, params={"name": "Omega"}).run()
    assert customers[2] == "Acme", (customers, again.to_dict())
    assert again.ok == (customers[1] == "Omega"), (customers, again.to_dict())


def test_a_link_told_by_a_value_is_never_found_where_it_led() -> None:
    """The Edit link of the row showing ``${who}``, renamed "Modify" since (its old name a
    variant, where it leads kept as recorded: the record it was recorded on): the export
    looks for it in the value's row by either name, never by that address, which is
    another value's record (it would edit that one and pass where the value's row is
    gone)."""
    link = {"role": "link", "name": "Modify", "tag": "a", "row": "${who} Bronze",
            "target": "http://crm.test/edit/0", "name_count": 3,
            "variants": [{"role": "link", "name": "Edit", "tag": "a", "row": "${who} Bronze",
                          "target": "http://crm.test/edit/0", "name_count": 3}]}  # fmt: skip
    data = {"version": 1, "name": "Edit a note", "base_url": "http://crm.test/",
            "params": {"who": {"default": "Ann Lee"}},
            "steps": [{"action": "navigate", "args": {"url": "http://crm.test/customers"}},
                      {"action": "click", "args": {}, "identity": link}]}  # fmt: skip
    code = to_pytest(Scenario.from_dict(data))
    assert "a[href$=" not in code, code[-1500:]
    assert "name='Modify'" in code and "name='Edit'" in code
    unbound = {
        **link,
        "row": "Customers",
        "variants": [{**link["variants"][0], "row": "Customers"}],
    }
    bound_free = {**data, "steps": [data["steps"][0], {**data["steps"][1], "identity": unbound}]}
    assert 'a[href$="/edit/0"]' in to_pytest(Scenario.from_dict(bound_free))
