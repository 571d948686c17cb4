"""Element identities on real Chromium: taken from a ref, found again after the page
changed (ids, classes, wrappers, order, wording, shadow roots, frames), and abstaining when
the element is gone and only look-alikes remain; and every pair of the healing corpus
(fixtures/healing/, measured by bench/healing.py)."""

from __future__ import annotations

from typing import Any

import pytest

from automation import ActionInvalid, Budget, Tab
from automation.browser.identity import IDENTITY_VERSION, ElementIdentity, Located, locate
from automation.browser.snapshot import Snapshot
from bench.healing import load_cases, run_case
from tests.refs import ref_of


@pytest.fixture
async def page(tab: Tab, fixture_url: str) -> Snapshot:
    await tab.navigate(f"{fixture_url}/engine/identity.html")
    return await tab.snapshot()


async def identity_of(tab: Tab, page: Snapshot, role: str, name: str, nth: int = 0) -> Any:
    target = await tab.target(ref_of(page, role, name, nth))
    assert target.identity is not None
    return target.identity


async def find(tab: Tab, identity: ElementIdentity) -> Located:
    return await locate(tab.page, identity, budget=Budget(5_000))


async def html_of(located: Located) -> str:
    assert located.element is not None, located.reason
    return str(await located.element.evaluate("(e) => e.outerHTML"))


async def test_an_identity_is_taken_from_a_ref(tab: Tab, page: Snapshot) -> None:
    csv = await identity_of(tab, page, "button", "Export CSV")
    assert (csv.role, csv.name, csv.tag, csv.id) == ("button", "Export CSV", "button", "export-csv")
    assert csv.test_ids == {"data-testid": "export-csv"}
    assert csv.selectors[0] == '[data-testid="export-csv"]' and "#export-csv" in csv.selectors
    assert csv.section == "Export" and csv.name_count == 1 and csv.version == IDENTITY_VERSION
    assert csv.box is not None and csv.box[2] > 0 and csv.look and csv.captured_at
    delete = await identity_of(tab, page, "button", "Delete", 2)
    assert delete.row == "#1003 Alan Turing" and delete.name_count == 3
    email = await identity_of(tab, page, "textbox", "Email", 1)
    assert email.section == "Shipping address" and email.type == "email"


async def test_an_identity_survives_json_and_refuses_what_it_cannot_read(
    tab: Tab, page: Snapshot
) -> None:
    csv = await identity_of(tab, page, "button", "Export CSV")
    assert ElementIdentity.from_dict(csv.to_dict()) == csv
    assert ElementIdentity.from_dict({"role": "button", "name": "Go"}).version == 1  # old shape
    with pytest.raises(ActionInvalid, match="newer than this Tabwright reads"):
        ElementIdentity.from_dict({**csv.to_dict(), "version": IDENTITY_VERSION + 1})
    with pytest.raises(ActionInvalid, match="box"):
        ElementIdentity.from_dict({"box": [1, 2]})
    with pytest.raises(ActionInvalid, match="name must be text"):
        ElementIdentity.from_dict({"name": 5})
    with pytest.raises(ActionInvalid, match="JSON object"):
        ElementIdentity.from_dict(["button"])


async def test_renamed_ids_and_regenerated_classes_are_found_by_role_and_name(
    tab: Tab, page: Snapshot
) -> None:
    save = await identity_of(tab, page, "button", "Save changes")
    await tab.page.evaluate(
        """() => { const b = document.getElementById('save');
        b.id = 'settings-submit-btn'; b.className = 'css-9f8e7d';
        const wrap = document.createElement('div'); b.replaceWith(wrap); wrap.appendChild(b); }"""
    )
    found = await find(tab, save)
    assert found.strategy == "role_name" and 'id="settings-submit-btn"' in await html_of(found)
    assert any(c.startswith("id: 'save'") for c in found.changes)


async def test_a_reworded_button_is_found_by_similarity(tab: Tab, page: Snapshot) -> None:
    save = await identity_of(tab, page, "button", "Save changes")
    await tab.page.evaluate(
        """() => { const b = document.getElementById('save');
        b.textContent = 'Save all changes'; b.id = 'btn-1';
        const wrap = document.createElement('div'); b.replaceWith(wrap); wrap.appendChild(b); }"""
    )
    found = await find(tab, save)
    assert found.strategy == "similarity" and found.score >= 0.6
    assert "Save all changes" in await html_of(found)
    assert "name: 'Save changes' -> 'Save all changes'" in found.changes


async def test_a_row_action_follows_its_row_and_abstains_when_the_row_is_gone(
    tab: Tab, page: Snapshot
) -> None:
    delete = await identity_of(tab, page, "button", "Delete", 2)
    await tab.page.evaluate(
        """() => { const body = document.querySelector('tbody');
        body.insertBefore(body.children[2], body.children[0]); }"""
    )
    found = await find(tab, delete)
    assert found.element is not None
    assert await found.element.evaluate("(e) => e.closest('tr').cells[0].textContent") == "#1003"
    await tab.page.evaluate("() => document.querySelector('tbody').children[0].remove()")
    gone = await find(tab, delete)
    # Two Delete buttons remain, and the old selector now points at one of them.
    assert not gone.ok and "another row" in gone.reason
    assert [c["name"] for c in gone.candidates[:2]] == ["Delete", "Delete"]


async def test_a_removed_button_is_not_replaced_by_its_neighbour(tab: Tab, page: Snapshot) -> None:
    csv = await identity_of(tab, page, "button", "Export CSV")
    await tab.page.evaluate("() => document.getElementById('export-csv').remove()")
    gone = await find(tab, csv)
    assert not gone.ok and gone.element is None
    assert "name" in gone.reason and gone.candidates[0]["name"] == "Export PDF"


async def test_a_shared_name_is_told_apart_by_its_section(tab: Tab, page: Snapshot) -> None:
    shipping = await identity_of(tab, page, "textbox", "Email", 1)
    await tab.page.evaluate(
        """() => { const main = document.querySelector('main');
        const [billing, ship] = document.querySelectorAll('section');
        main.insertBefore(ship, billing);
        for (const input of document.querySelectorAll('input[type=email]')) input.id = ''; }"""
    )
    found = await find(tab, shipping)
    assert found.ok and found.strategy == "similarity"
    section = await found.element.evaluate(
        "(e) => e.closest('section').querySelector('h2').textContent"
    )  # type: ignore[union-attr]
    assert section == "Shipping address"


async def test_elements_in_shadow_roots_and_frames_are_found(tab: Tab, page: Snapshot) -> None:
    follow = await identity_of(tab, page, "button", "Follow")
    pay = await identity_of(tab, page, "button", "Pay now")
    assert pay.frame_url.endswith("/engine/identity-frame.html")
    found = await find(tab, follow)
    assert found.strategy == "role_name" and found.element is not None
    assert await found.element.evaluate("(e) => e.getRootNode() instanceof ShadowRoot")
    in_frame = await find(tab, pay)
    assert in_frame.ok and in_frame.frame is not None and in_frame.frame.parent_frame is not None


@pytest.mark.parametrize("case", load_cases(), ids=lambda c: c["id"])
async def test_every_pair_of_the_healing_corpus(
    tab: Tab, fixture_url: str, case: dict[str, Any]
) -> None:
    """Recorded on v1, found on v2 (the same element), or abstained when it is gone."""
    result = await run_case(tab, fixture_url, case)
    assert result["ours"].verdict == "correct", (
        f"{result['ours'].verdict} via {result['strategy']} ({result['reason']}) "
        f"{result['ours'].detail}"
    )
