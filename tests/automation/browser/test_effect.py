"""Actions judged by their effect, on a page that replaces every control as it changes
(fixtures/rerender/): the element is found again by its identity and its state read
there.  Each action reports success when the page shows what was asked, and a true
failure (a box that never changes) is reported as such, not as a lost budget.

Budgets here are generous on purpose: the old way waited them out on the node that was
replaced and failed with budget_exceeded, so success itself is the assertion."""

from __future__ import annotations

from typing import Any

import pytest

from automation import Budget, Tab
from automation.actions import execute, execute_form
from automation.browser.snapshot import Snapshot
from automation.errors import ActionFailed
from tests.refs import ref_of

BUDGET_MS = 20_000


async def run(tab: Tab, name: str, **args: object) -> str:
    return await execute(tab, name, dict(args), budget=Budget(BUDGET_MS))


async def model(tab: Tab) -> dict[str, Any]:
    return await tab.page.evaluate("() => JSON.parse(JSON.stringify(model))")


@pytest.fixture
async def page(tab: Tab, fixture_url: str) -> Snapshot:
    await tab.navigate(f"{fixture_url}/rerender/index.html")
    return await tab.snapshot()


def checkbox_in_row(snap: Snapshot, n: int) -> str:
    boxes = [e.ref for e in snap.refs.values() if e.role == "checkbox" and not e.name]
    return boxes[n]


async def test_check_a_box_whose_row_is_replaced(tab: Tab, page: Snapshot) -> None:
    ref = checkbox_in_row(page, 0)
    node = await tab.page.evaluate_handle("() => document.querySelector('[data-i=\"0\"]')")
    out = await run(tab, "check", ref=ref)
    # A box with no name of its own, told as such; "check" is never said of a box.
    assert out == "ticked the checkbox (the page re-rendered it)"
    assert (await model(tab))["todos"][0]["done"] is True
    assert await node.evaluate("(e) => !e.isConnected")  # the page did replace it
    again = await run(tab, "check", ref=checkbox_in_row(await tab.snapshot(), 0))
    assert again == "the checkbox was already ticked"
    await run(tab, "check", ref=checkbox_in_row(await tab.snapshot(), 0), checked=False)
    assert (await model(tab))["todos"][0]["done"] is False


async def test_check_a_radio_and_an_aria_checkbox_that_are_replaced(
    tab: Tab, page: Snapshot
) -> None:
    assert "re-rendered" in await run(tab, "check", ref=ref_of(page, "radio", "pro"))
    assert (await model(tab))["plan"] == "pro"
    snap = await tab.snapshot()
    with pytest.raises(ActionFailed, match="can't be unticked"):
        await run(tab, "check", ref=ref_of(snap, "radio", "pro"), checked=False)
    assert "ticked checkbox 'Notify me'" in await run(
        tab, "check", ref=ref_of(snap, "checkbox", "Notify me")
    )
    assert (await model(tab))["notify"] is True


async def test_a_controlled_box_is_judged_after_the_app_settles(tab: Tab, page: Snapshot) -> None:
    # The app puts the box back during the click and draws the new state 40 ms later.
    out = await run(tab, "check", ref=ref_of(page, "checkbox", "Controlled"))
    assert out.startswith("ticked checkbox 'Controlled'")
    assert (await model(tab))["controlled"] is True


async def test_a_box_that_never_changes_fails_as_what_it_is(tab: Tab, page: Snapshot) -> None:
    with pytest.raises(ActionFailed, match="did not tick it") as failed:
        await run(tab, "check", ref=ref_of(page, "checkbox", "Stuck"))
    assert failed.value.code == "action_failed"  # a refusal, not a lost budget


async def test_a_box_that_leaves_the_page_is_not_called_checked(tab: Tab, page: Snapshot) -> None:
    out = await run(tab, "check", ref=ref_of(page, "checkbox", "Archive me"))
    assert "removed it" in out and "could not be read" in out
    assert (await model(tab))["archived"] is True


async def test_select_an_option_of_a_select_that_is_replaced(tab: Tab, page: Snapshot) -> None:
    out = await run(tab, "select_option", ref=ref_of(page, "combobox", "Size"), values="L")
    assert out == "selected 'L' in combobox 'Size'"
    assert (await model(tab))["size"] == "L"


async def test_fill_and_submit_a_field_replaced_on_every_key(tab: Tab, page: Snapshot) -> None:
    out = await run(tab, "fill", ref=ref_of(page, "textbox", "Note"), value="abc", submit=True)
    assert out == "filled textbox 'Note' with 3 characters and pressed Enter"
    assert (await model(tab))["note"] == "abc"
    assert await tab.page.text_content("#log") == "Saved note abc"


async def test_type_key_by_key_into_a_field_replaced_on_every_key(tab: Tab, page: Snapshot) -> None:
    ref = ref_of(page, "textbox", "Note")
    out = await run(tab, "type", ref=ref, text="hello", delay_ms=5, submit=True)
    assert out == "typed 5 characters into textbox 'Note' and pressed Enter"
    assert (await model(tab))["note"] == "hello"
    assert await tab.page.text_content("#log") == "Saved note hello"


async def test_fill_form_follows_fields_the_form_redraws(tab: Tab, page: Snapshot) -> None:
    heard: list[tuple[int, str, dict[str, Any], object]] = []

    async def on_field(i: int, action: str, args: dict[str, Any], error: object, ms: int) -> None:
        heard.append((i, action, args, error))

    fields = [
        {"ref": checkbox_in_row(page, 1), "value": True},  # redraws the whole form
        {"ref": ref_of(page, "combobox", "Size"), "value": "S"},  # then a <select>
        {"ref": ref_of(page, "textbox", "City"), "value": "Rome"},
        {"ref": ref_of(page, "radio", "pro"), "value": True},
    ]
    out = await execute_form(tab, {"fields": fields}, budget=Budget(BUDGET_MS), on_field=on_field)
    assert out.startswith("filled 4 fields")
    state = await model(tab)
    assert state["todos"][1]["done"] and state["size"] == "S" and state["plan"] == "pro"
    assert await tab.page.input_value("#city") == "Rome"
    assert [(i, a, e) for i, a, _, e in heard] == [
        (0, "check", None), (1, "select_option", None), (2, "fill", None), (3, "check", None)
    ]  # fmt: skip
    assert heard[1][2] == {"ref": fields[1]["ref"], "values": ["S"]}


async def test_check_a_box_in_an_open_shadow_root_that_is_redrawn(tab: Tab, page: Snapshot) -> None:
    ref = ref_of(page, "checkbox", "Toggle Todo Water plants")
    assert "re-rendered" in await run(tab, "check", ref=ref)
    items = await tab.page.evaluate("() => document.getElementById('shadow').state()")
    assert [i["done"] for i in items] == [False, True]


async def test_click_a_toggle_button_the_page_redraws(tab: Tab, page: Snapshot) -> None:
    out = await run(tab, "click", ref=ref_of(page, "button", "Star"))
    assert out == "clicked button 'Star'"
    assert (await model(tab))["starred"] is True
    assert await tab.page.get_attribute("#star", "aria-pressed") == "true"  # a new node
