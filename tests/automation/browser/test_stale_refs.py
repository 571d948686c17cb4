"""A ref never acts on another row than the one it was issued in, on real Chromium.

A list re-rendered by index (``key={index}``) keeps row 0's nodes for whatever row 0 shows
now: the same Delete button, same role, same name, in Beta's row once Alpha is gone.  A
ref keeps the row (or named container) its element sat in, and an action refuses it
(StaleRef) when that row now reads otherwise.  Each re-render here happens in the page,
not through the ref; the outcome must be safe: refused with nothing done, or done to
exactly the row that was meant (Alpha's)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import ElementHandle, Frame

from automation import BrowserSession, Tab
from automation.browser import refs
from automation.browser.refcheck import stale_ref
from automation.errors import ActionFailed, StaleRef
from tests.conftest import browser_config
from tests.refs import ref_of

ROWS = "reflist/rows.html"

# (query, the page's re-render, whether acting on the old ref must be refused)
RERENDERS: dict[str, tuple[str, str, bool]] = {
    "a_nodes_replaced": ("", "rows.rebuild()", False),
    "b_reordered_keyed": ("", "rows.reorder()", False),
    "c_renamed": ("", "rows.rename('Alpha', 'Alef')", False),
    "d_index_reuse_same_names": ("", "rows.drop('Alpha')", True),
    "e_index_reuse_row_names": ("?names=row", "rows.drop('Alpha')", True),
    "f_row_removed": ("", "rows.remove('Alpha')", True),
    "f_rows_removed_nodes_reused": ("", "rows.filter('Gamma')", True),
}


async def deleted(tab: Tab) -> list[str]:
    """What the app's own Delete buttons deleted (not the other user's changes)."""
    return await tab.page.evaluate("() => [...rows.deleted]")


async def refused(work: Awaitable[object]) -> StaleRef | None:
    try:
        await work
    except StaleRef as exc:
        return exc
    return None


async def open_rows(tab: Tab, fixture_url: str, query: str = "") -> None:
    await tab.navigate(f"{fixture_url}/{ROWS}{query}")


@pytest.mark.parametrize("kind", RERENDERS)
async def test_a_delete_ref_after_a_rerender_is_safe(tab: Tab, fixture_url: str, kind: str) -> None:
    query, rerender, must_refuse = RERENDERS[kind]
    await open_rows(tab, fixture_url, query)
    snap = await tab.snapshot()
    alpha = ref_of(snap, "button", "Delete Alpha" if query else "Delete")
    await tab.page.evaluate(f"() => {rerender}")
    error = await refused(tab.click(alpha))
    done = await deleted(tab)
    if error is not None:
        assert done == [], f"{kind}: refused, yet {done} was deleted"
        assert error.hint == "take a new snapshot"
    else:
        assert done == ["Alpha"], f"{kind}: the click on Alpha's Delete deleted {done}"
    if must_refuse:
        assert error is not None, f"{kind}: acting on a ref whose row changed was not refused"
    if kind == "b_reordered_keyed":  # the very row, moved with its nodes: still Alpha's
        assert error is None and done == ["Alpha"]


async def test_index_reuse_says_what_changed_and_the_next_snapshot_has_a_new_ref(
    tab: Tab, fixture_url: str
) -> None:
    await open_rows(tab, fixture_url)
    snap = await tab.snapshot()
    alpha = ref_of(snap, "button", "Delete")
    await tab.page.evaluate("() => rows.drop('Alpha')")
    error = await refused(tab.click(alpha))
    assert error is not None
    assert error.message.startswith(f"ref {alpha} (button 'Delete'): its row changed from")
    assert '"Alpha' in error.message and '"Beta' in error.message
    # The node now in Beta's row is another element to the model: a new ref, never the old.
    again = await tab.snapshot()
    beta = ref_of(again, "button", "Delete")
    assert beta != alpha and alpha not in again.refs
    with pytest.raises(StaleRef, match="earlier snapshot"):
        await tab.click(alpha)
    await tab.click(beta)
    assert await deleted(tab) == ["Beta"]


async def test_every_way_from_a_ref_to_its_element_refuses_another_row(
    tab: Tab, fixture_url: str
) -> None:
    await open_rows(tab, fixture_url)
    snap = await tab.snapshot()
    alpha = ref_of(snap, "button", "Delete")
    await tab.page.evaluate("() => rows.drop('Alpha')")
    for work in (
        tab.resolve(alpha),
        tab.target(alpha),
        tab.backend_node_id(alpha),
        tab.hover(alpha),
        tab.press_key("Enter", ref=alpha),
        tab.screenshot(ref=alpha),
    ):
        assert await refused(work) is not None
    assert await deleted(tab) == []


@pytest.mark.parametrize("how", ["fill", "type"])
async def test_a_note_field_in_an_index_reused_row_is_refused(
    tab: Tab, fixture_url: str, how: str
) -> None:
    await open_rows(tab, fixture_url)
    snap = await tab.snapshot()
    note = ref_of(snap, "textbox", "Note")  # Alpha's
    await tab.page.evaluate("() => rows.drop('Alpha')")
    act = tab.fill(note, "call back") if how == "fill" else tab.type(note, "call back")
    assert await refused(act) is not None
    assert await tab.page.evaluate("() => rows.notes()") == [
        ["Beta", ""],
        ["Gamma", ""],
        ["Delta", ""],
    ]


@pytest.mark.parametrize("how", ["fill", "type"])
async def test_a_note_field_of_a_row_moved_with_its_nodes_still_works(
    tab: Tab, fixture_url: str, how: str
) -> None:
    await open_rows(tab, fixture_url)
    snap = await tab.snapshot()
    note = ref_of(snap, "textbox", "Note")
    await tab.page.evaluate("() => rows.reorder()")
    await (tab.fill(note, "call back") if how == "fill" else tab.type(note, "call back"))
    assert ["Alpha", "call back"] in await tab.page.evaluate("() => rows.notes()")


async def test_a_checkbox_in_an_index_reused_table_row_is_refused(
    tab: Tab, fixture_url: str
) -> None:
    await open_rows(tab, fixture_url)
    snap = await tab.snapshot()
    pick = ref_of(snap, "checkbox", "Pick")  # the table's first row: Alpha
    await tab.page.evaluate("() => rows.drop('Alpha')")
    for work in (tab.set_checked(pick, True), tab.click(pick)):
        assert await refused(work) is not None
    assert await tab.page.evaluate("() => rows.checked()") == []
    assert await tab.page.evaluate("() => document.querySelector('.pick').checked") is False


async def test_a_checkbox_in_a_keyed_table_row_still_works(tab: Tab, fixture_url: str) -> None:
    await open_rows(tab, fixture_url)
    snap = await tab.snapshot()
    pick = ref_of(snap, "checkbox", "Pick")
    await tab.page.evaluate("() => rows.reorder()")
    await tab.set_checked(pick, True)
    assert await tab.page.evaluate("() => rows.checked()") == ["Alpha"]


async def test_a_reused_dialog_asking_about_another_row_is_refused(
    tab: Tab, fixture_url: str
) -> None:
    await open_rows(tab, fixture_url)
    snap = await tab.snapshot()
    confirm = ref_of(snap, "button", "Confirm")  # in the dialog "Delete Alpha?"
    await tab.page.evaluate("() => rows.ask('Beta')")
    error = await refused(tab.click(confirm))
    assert error is not None and "its dialog changed" in error.message
    assert await deleted(tab) == []


# -- no false stale refs ----------------------------------------------------------------


async def test_other_rows_changing_leaves_a_rows_refs_alone(tab: Tab, fixture_url: str) -> None:
    await open_rows(tab, fixture_url)
    snap = await tab.snapshot()
    alpha = ref_of(snap, "button", "Delete")
    note = ref_of(snap, "textbox", "Note")
    await tab.page.evaluate("() => rows.tick()")  # Gamma's viewers and the sync counter
    await tab.fill(note, "urgent")  # a field's own value is no part of its row's text
    await tab.page.evaluate("() => rows.tick()")
    await tab.click(alpha)
    assert await deleted(tab) == ["Alpha"]


async def test_a_plain_page_takes_the_same_refs_again(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/reflist/plain.html")
    snap = await tab.snapshot()
    like, name, send = (
        ref_of(snap, "button", "Like"),
        ref_of(snap, "textbox", "Name"),
        ref_of(snap, "button", "Send"),
    )
    await tab.click(like)
    await tab.click(like)
    assert await tab.page.inner_text("#likes") == "2"
    await tab.fill(name, "Ada")
    await tab.click(send)
    await tab.fill(name, "Grace")  # the fieldset's status line changed: its legend did not
    await tab.click(send)
    assert await tab.page.inner_text("#status") == "Sent 2 times, as Grace"
    again = await tab.snapshot()
    assert {r: (e.role, e.name) for r, e in again.refs.items() if e.interactive} == {
        r: (e.role, e.name) for r, e in snap.refs.items() if e.interactive
    }


async def test_a_list_drawn_again_unchanged_keeps_its_refs(tab: Tab, fixture_url: str) -> None:
    await open_rows(tab, fixture_url)
    first = await tab.snapshot()
    await tab.page.evaluate("() => rows.rebuild()")
    second = await tab.snapshot()
    assert {r: (e.role, e.name) for r, e in second.refs.items()} == {
        r: (e.role, e.name) for r, e in first.refs.items()
    }
    await tab.click(ref_of(first, "button", "Delete", nth=1))
    assert await deleted(tab) == ["Beta"]


# -- evaluate by ref ---------------------------------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def engine() -> AsyncIterator[BrowserSession]:
    session = BrowserSession(browser_config(evaluate_enabled=True))
    await session.start()
    yield session
    await session.close()


@pytest.mark.parametrize("known_node", [False, True])
async def test_evaluate_on_a_ref_in_another_row_is_refused(
    engine: BrowserSession, fixture_url: str, known_node: bool
) -> None:
    tab = await engine.new_tab()
    try:
        await open_rows(tab, fixture_url)
        snap = await tab.snapshot()
        alpha = ref_of(snap, "button", "Delete")
        if known_node:  # the CDP route, with the node's id remembered from before
            await tab.backend_node_id(alpha)
        await tab.page.evaluate("() => rows.drop('Alpha')")
        error = await refused(tab.evaluate("el => el.click()", ref=alpha))
        assert error is not None and "its row changed" in error.message
        assert await deleted(tab) == []
    finally:
        await tab.close()


def test_what_the_page_says_of_a_stale_ref_is_checked_and_quoted() -> None:
    # The registry's reason is page data: only its known shapes are read, and its text is
    # quoted, cut, and never taken for a kind of container it does not name.
    long = "Alpha " * 20
    said = stale_ref("e12 (button 'Delete')", ["context", f"row\t{long}", "row\tBeta"]).message
    assert said == (f'ref e12 (button \'Delete\'): its row changed from "{long[:40]}…" to "Beta"')
    odd = stale_ref("e3", ["context", "</b>\tAlpha", ""]).message
    assert odd == 'ref e3: it is no longer in its container "Alpha"'
    for reason in (None, "gone", ["context", 1, 2], ["name"], [["x"]], {"stale": True}):
        assert "no longer points at that element" in stale_ref("e3", reason).message
    assert stale_ref("e3", ["name", "Beta"]).message.endswith('(it is named "Beta" now)')


async def test_a_page_busy_just_after_its_ref_was_checked_is_waited_for_not_called_stale(
    tab: Tab,
) -> None:
    """A page only slow to answer (a long task, a busy machine) between the ref's check and
    the taking of its element is the same page: the box is ticked, not refused as stale."""
    await tab.page.set_content("<label><input type=checkbox id=box> Send me the newsletter</label>")
    snap = await tab.snapshot()
    ref = ref_of(snap, "checkbox", "Send me the newsletter")
    checked = tab.resolve

    async def then_busy(*args: Any, **kwargs: Any) -> Any:
        found = await checked(*args, **kwargs)
        # The page's next task spins for 1.5 s, past any short wait for the element.
        await tab.page.evaluate(
            "setTimeout(() => { const end = Date.now() + 1500; while (Date.now() < end); })"
        )
        return found

    tab.resolve = then_busy  # type: ignore[method-assign]
    try:
        await tab.click(ref)
    finally:
        del tab.resolve
    assert await tab.page.is_checked("#box")


async def test_a_click_refused_as_it_took_its_element_clicks_nothing_and_says_why(
    tab: Tab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A click proves its ref as it takes the element, in the click's own first round
    trip: a button hidden then is refused and not clicked, and when it is shown again by
    the time the reason is asked for, the error says it changed as it was taken."""
    await tab.page.set_content(
        "<button onclick='window.clicks = (window.clicks || 0) + 1'>Save</button>"
    )
    ref = ref_of(await tab.snapshot(), "button", "Save")
    show = "(shown) => { document.querySelector('button').style.visibility = shown }"
    await tab.page.evaluate(show, "hidden")
    with pytest.raises(ActionFailed, match="the element is hidden"):
        await tab.click(ref)
    checked = refs.resolve

    async def shown_again(*args: Any, **kwargs: Any) -> Any:
        await tab.page.evaluate(show, "visible")
        return await checked(*args, **kwargs)

    await tab.page.evaluate(show, "hidden")
    monkeypatch.setattr(refs, "resolve", shown_again)
    with pytest.raises(ActionFailed, match="the element changed as it was taken"):
        await tab.click(ref)
    monkeypatch.undo()
    assert await tab.page.evaluate("window.clicks") is None
    assert await tab.click(ref) == "clicked button 'Save'"
    assert await tab.page.evaluate("window.clicks") == 1


async def test_a_step_s_target_is_proven_and_described_in_one_round_trip(
    tab: Tab, fixture_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a recorded step keeps of its element (before each action by ref) costs one
    script in the page, which leaves no handle behind; the ref is proven all the same."""
    await open_rows(tab, fixture_url)
    alpha = ref_of(await tab.snapshot(), "button", "Delete")
    calls: list[str] = []

    def counted(cls: type, name: str) -> None:
        original = getattr(cls, name)

        def call(self: object, *args: Any, **kwargs: Any) -> Any:
            calls.append(f"{cls.__name__}.{name}")
            return original(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, call)

    for cls, name in ((Frame, "evaluate"), (Frame, "evaluate_handle"),
                      (ElementHandle, "evaluate"), (ElementHandle, "owner_frame")):  # fmt: skip
        counted(cls, name)
    target = await tab.target(alpha)
    assert calls == ["Frame.evaluate"]
    assert target.identity is not None
    assert (target.role, target.name, target.identity.name) == ("button", "Delete", "Delete")
    assert target.selector and "Alpha" in target.identity.row
    await tab.page.evaluate("() => rows.drop('Alpha')")
    assert await refused(tab.target(alpha)) is not None
