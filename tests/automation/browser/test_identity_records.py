"""A control beside a list of records (a back office's "New customer" link under its
Customers heading, beside the customers listed; "Export orders" under a table of orders):
its identity's card is what frames it, never the records, which change with every one
added.  Read with them, the link's card was its heading while the list was empty and the
heading and every customer listed once it was not: each replay on other data "healed" the
step, and stored the customers of that day as what the link sits in."""

from __future__ import annotations

import pytest

from automation import Tab
from automation.browser.identity import ElementIdentity, locate
from automation.recording.exportplaces import CARDS_JS
from tests.bounds import room
from tests.refs import ref_of

# Each control, its heading, and its card (a table's row of column headers is no record).
CONTROLS = (
    ("link", "New customer", "Customers", "Customers"),
    ("button", "Export orders", "Orders", "Orders Order Total"),
)


async def identity_on(tab: Tab, url: str, role: str, name: str) -> ElementIdentity:
    await tab.navigate(url)
    target = await tab.target(ref_of(await tab.snapshot(), role, name))
    assert target.identity is not None
    return target.identity


@pytest.mark.parametrize(("role", "name", "heading", "card"), CONTROLS)
async def test_the_records_listed_beside_a_control_are_not_its_card(
    tab: Tab, fixture_url: str, role: str, name: str, heading: str, card: str
) -> None:
    page = f"{fixture_url}/engine/identity-records.html"
    recorded = await identity_on(tab, page, role, name)  # the first day: nothing listed
    assert (recorded.card, recorded.section, recorded.row) == (card, heading, "")
    listed = f"{page}?customers=Ann Lee,Bob Stone&orders=1001,1002"
    now = await identity_on(tab, listed, role, name)
    assert (now.card, now.section) == (card, heading), now
    # Found again on another day's data, its card did not change: nothing to heal there,
    # and what it is found as holds none of the records.
    found = await locate(tab.page, recorded, budget=room())
    assert found.strategy == "role_name" and found.found is not None, found.reason
    assert found.found.card == card and found.found.sameness() == recorded.sameness()
    assert not [c for c in found.changes if c.startswith(("card", "section"))], found.changes
    # The pytest export reads its card as replay does (its own copy of the rule).
    [(read, _, _)] = await tab.page.get_by_role(role, name=name).evaluate_all(CARDS_JS)
    assert read == card
