"""A heal takes in none of the records a page lists: a back office's "New customer" link,
under the Customers heading beside the customers listed, recorded while the list was
empty; release 2 renames "Save customer" to "Create customer".  A replay on a day with
customers heals the renamed button, and what it writes back of the link (moved down by the
list) holds the heading it sits under, not that day's customers; written back, a replay on
another day's customers finds both again and heals nothing of the link's context.  (A
link's identity read with the records held them: each replay "healed" the step with its
own day's customers, and a later replay compared against a list long gone.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from html import escape

import pytest

from automation import Tab
from automation.browser.identity import ElementIdentity
from automation.recording.outcome import ReplayResult
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario
from tests.net import QuietHandler, loopback_app
from tests.refs import acted

PAGE = "<!doctype html><title>{title}</title><h1>{title}</h1>{body}"
CUSTOMERS = '<ul>{rows}</ul><a href="/new">New customer</a>'
NEW = """<form method="post" action="/new"><label>Name <input name="name"></label>
<label>Tier <select name="tier"><option>Bronze</option><option>Gold</option></select></label>
<button>{label}</button></form>"""


@dataclass
class BackOffice:
    url: str = ""
    label: str = "Save customer"  # release 2: "Create customer"
    customers: list[str] = field(default_factory=list)


@pytest.fixture
def office() -> Iterator[BackOffice]:
    office = BackOffice()

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            if self.path == "/new":
                body = NEW.format(label=escape(office.label))
                self.send(200, PAGE.format(title="New customer", body=body).encode())
                return
            rows = "".join(f"<li>{escape(name)} (Bronze)</li>" for name in office.customers)
            body = CUSTOMERS.format(rows=rows)
            self.send(200, PAGE.format(title="Customers", body=body).encode())

        def do_POST(self) -> None:
            office.customers.append(self.posted()["name"])
            self.send(303, Location="/customers")

    with loopback_app(Handler) as url:
        office.url = url
        yield office


def with_heals(scenario: Scenario, result: ReplayResult) -> Scenario:
    """The scenario with each heal of ``result`` written back, as the dashboard writes an
    approved one: the element as found first, what it was known as kept as a variant."""
    steps = list(scenario.steps)
    for outcome in result.steps:
        step = steps[outcome.index]
        if outcome.healed and step.identity is not None:
            now = ElementIdentity.from_dict(outcome.healed)
            steps[outcome.index] = replace(step, identity=step.identity.confirmed_as(now))
    return replace(scenario, steps=tuple(steps))


async def test_a_heal_holds_none_of_the_records_the_page_lists(
    tab: Tab, office: BackOffice
) -> None:
    steps = await acted(tab, f"{office.url}/customers", [
        ("click", "link", "New customer", {}), ("fill", "textbox", "Name", {"value": "Zoë"}),
        ("click", "button", "Save customer", {}),
    ])  # fmt: skip
    scenario = Scenario("Add a customer", steps, base_url=office.url + "/").with_param(2, "name")
    link = scenario.steps[1].identity
    assert link is not None and (link.card, link.section) == ("Customers", "Customers")

    # Release 2, on a day with customers listed.
    office.label, office.customers = "Create customer", ["Row 0", "Row 1"]
    first = await Replay(tab, scenario, params={"name": "Row 2"}).run()
    assert first.ok and office.customers[-1] == "Row 2", first.to_dict()
    heals = {o.index: o.healed for o in first.steps if o.healed}
    assert heals[3]["name"] == "Create customer", first.to_dict()
    for healed in heals.values():
        assert "Row " not in json.dumps(healed), healed  # none of that day's customers
    # The link moved down by the list: healed, under its heading, not among the customers.
    assert (heals[1]["card"], heals[1]["section"]) == ("Customers", "Customers"), heals[1]

    # Written back, another day's customers: both found again, the link's context intact.
    healed = with_heals(scenario, first)
    office.customers = ["Ann Lee", "Bob Stone", "Cy Young", "Di Moss"]
    again = await Replay(tab, healed, params={"name": "Eve Park"}).run()
    assert again.ok and office.customers[-1] == "Eve Park", again.to_dict()
    assert again.steps[1].strategy == "role_name" and again.steps[3].strategy == "role_name"
    context = [c for c in again.steps[1].changes if c.startswith(("card", "section"))]
    assert not context, again.to_dict()
    for outcome in again.steps:
        assert not outcome.healed or "Lee" not in json.dumps(outcome.healed), outcome
