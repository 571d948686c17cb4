"""Refs through re-renders, on real Chromium: an element the page drew again in the same
place, with the same role, name, state and row, keeps the ref the model knows (from the
next snapshot on, never between snapshots); anything that could be another element gets a
new ref; and a delta names what changed, in the very lines the full snapshot shows."""

from __future__ import annotations

import re

import pytest

from automation import Tab
from automation.browser.snapshot import Snapshot, SnapshotOptions, frame_paths
from automation.errors import StaleRef
from tests.refs import ref_of

DELTA = SnapshotOptions(delta=True)
_UNCHANGED = re.compile(r"^\s*- … \d+ unchanged \(")


def table(snap: Snapshot) -> dict[str, tuple[str, str]]:
    return {r.ref: (r.role, r.name) for r in snap.refs.values()}


def shown(delta: Snapshot) -> list[str]:
    """The delta's lines about the page: not its head, not its counts of unchanged nodes."""
    return [
        line
        for line in delta.text.splitlines()
        if not line.startswith("#") and not _UNCHANGED.match(line)
    ]


def new_lines(delta: Snapshot, before: Snapshot) -> list[str]:
    """What the delta says that the earlier full snapshot did not (its ancestors' lines,
    shown for context, are in the earlier one)."""
    seen = set(before.text.splitlines())
    return [line.strip() for line in shown(delta) if line not in seen]


def removed(delta: Snapshot) -> list[str]:
    head = next((line for line in delta.text.splitlines() if line.startswith("# removed: ")), "")
    return re.findall(r"\[((?:f\d+)?e\d+)\]", head)


async def checked(tab: Tab) -> list[str]:
    """The titles of the ticked tasks, read from the page itself."""
    return await tab.page.evaluate(
        "() => [...document.querySelectorAll('li')].filter((li) =>"
        " li.querySelector('input').checked).map((li) => li.textContent.split('Delete')[0].trim())"
    )


async def test_a_list_drawn_again_keeps_its_refs(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/reflist/index.html")
    first = await tab.snapshot()
    await tab.page.evaluate("() => tasks.render()")  # every node is new, nothing changed
    second = await tab.snapshot()
    assert table(second) == table(first)
    assert second.text == first.text
    await tab.page.evaluate("() => tasks.render()")
    delta = await tab.snapshot(DELTA)
    assert delta.text == "# no changes since the last snapshot"
    # The kept ref acts on the new node.
    await tab.click(ref_of(first, "checkbox", "Task 2"))
    assert await checked(tab) == ["Task 2"]


async def test_a_replaced_node_is_stale_until_the_next_snapshot(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/reflist/index.html")
    first = await tab.snapshot()
    task2 = ref_of(first, "checkbox", "Task 2")
    await tab.click(ref_of(first, "checkbox", "Task 1"))  # the whole list is drawn again
    with pytest.raises(StaleRef, match="take a new snapshot"):
        await tab.click(task2)
    assert await checked(tab) == ["Task 1"]  # nothing else was touched
    delta = await tab.snapshot(DELTA)
    assert ref_of(delta, "checkbox", "Task 2") == task2  # the model was shown it again
    await tab.click(task2)
    assert await checked(tab) == ["Task 1", "Task 2"]


async def test_a_moved_ref_forgets_the_old_nodes_cdp_id(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/reflist/index.html")
    first = await tab.snapshot()
    ref = ref_of(first, "button", "Delete", nth=2)
    old_id = await tab.backend_node_id(ref)
    await tab.page.evaluate("() => tasks.render()")
    second = await tab.snapshot()
    assert ref_of(second, "button", "Delete", nth=2) == ref
    assert second.refs[ref].backend_node_id is None
    new_id = await tab.backend_node_id(ref)
    assert new_id != old_id
    cdp = await tab.context.new_cdp_session(tab.page)
    node = await cdp.send("DOM.resolveNode", {"backendNodeId": new_id})
    found = await cdp.send(
        "Runtime.callFunctionOn",
        {
            "objectId": node["object"]["objectId"],
            "functionDeclaration": "function () { return this.isConnected && this.dataset.del; }",
            "returnByValue": True,
        },
    )
    await cdp.detach()
    assert found["result"]["value"] == "2"


async def test_a_toggle_is_one_changed_line(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/reflist/index.html")
    first = await tab.snapshot()
    box = ref_of(first, "checkbox", "Task 3")
    await tab.click(box)
    delta = await tab.snapshot(DELTA)
    fresh = ref_of(delta, "checkbox", "Task 3")
    # A box whose state changed is not taken for the one the model knew unticked.
    assert fresh != box
    assert new_lines(delta, first) == [f'- checkbox "Task 3" [{fresh}] [checked]']
    assert removed(delta) == [box]
    assert len(shown(delta)) <= 3  # the list and the row it sits in, for context
    assert {r: v for r, v in table(delta).items() if r != fresh} == {
        r: v for r, v in table(first).items() if r != box
    }


async def test_a_row_added_on_top_is_the_only_news(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/reflist/index.html")
    first = await tab.snapshot()
    await tab.fill(ref_of(first, "textbox", "New task"), "Task 0")
    await tab.click(ref_of(first, "button", "Add"))
    delta = await tab.snapshot(DELTA)
    row = [line.split(" [")[0] for line in new_lines(delta, first)]
    assert row == ["- listitem", '- checkbox "Task 0"', '- button "Delete"']
    assert removed(delta) == []
    assert set(table(first)) < set(table(delta))  # every ref the model knew is kept


async def test_a_row_deleted_is_only_removed(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/reflist/index.html")
    first = await tab.snapshot()
    await tab.click(ref_of(first, "button", "Delete", nth=4))
    delta = await tab.snapshot(DELTA)
    assert new_lines(delta, first) == []
    gone = {r: v for r, v in table(first).items() if r not in table(delta)}
    assert sorted(gone.values()) == [("button", "Delete"), ("checkbox", "Task 5"), ("listitem", "")]
    assert sorted(removed(delta)) == sorted(gone)
    assert set(table(delta)) < set(table(first))


async def test_a_row_whose_text_changed_gets_new_refs(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/reflist/index.html")
    first = await tab.snapshot()
    await tab.page.evaluate("() => tasks.rename(3, 'Task 4, urgent')")
    delta = await tab.snapshot(DELTA)
    # The row's text is its identity: a row with other words could be another row.
    renamed = ref_of(delta, "checkbox", "Task 4, urgent")
    assert renamed not in table(first)
    assert len(removed(delta)) == 3
    unchanged = {r: v for r, v in table(first).items() if r in table(delta)}
    assert len(unchanged) == len(table(first)) - 3


async def test_two_candidates_for_one_ref_get_new_refs(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/reflist/index.html")
    first = await tab.snapshot()
    old = ref_of(first, "checkbox", "Task 5")
    await tab.page.evaluate("() => tasks.add('Task 5', 0)")  # a second row just like it
    second = await tab.snapshot()
    twins = [r.ref for r in second.refs.values() if (r.role, r.name) == ("checkbox", "Task 5")]
    assert len(twins) == 2 and old not in twins
    assert ref_of(second, "checkbox", "Task 6") == ref_of(first, "checkbox", "Task 6")
    # Two known refs with the same place: neither is handed to a node drawn again.
    await tab.page.evaluate("() => tasks.render()")
    third = await tab.snapshot()
    again = [r.ref for r in third.refs.values() if (r.role, r.name) == ("checkbox", "Task 5")]
    assert len(again) == 2 and not set(again) & {old, *twins}
    assert ref_of(third, "checkbox", "Task 6") == ref_of(first, "checkbox", "Task 6")
    with pytest.raises(StaleRef, match="earlier snapshot"):
        await tab.click(twins[0])
    assert await checked(tab) == []


async def test_rows_told_apart_by_what_is_in_them(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/reflist/links.html")
    first = await tab.snapshot()
    await tab.page.evaluate("() => sections.render()")
    second = await tab.snapshot()
    # The list items say nothing themselves: their links tell them apart.
    kept = {r: v for r, v in table(first).items() if r in table(second)}
    helps = [r.ref for r in first.refs.values() if r.name == "Help"]
    assert len(helps) == 2
    for name in ("Orders", "Invoices", "Customers", "Reports"):
        assert ref_of(second, "link", name) == ref_of(first, "link", name)
    # Two rows exactly alike could be each other: both get new refs, as do their items.
    assert not set(helps) & set(table(second))
    assert sorted(v for r, v in table(first).items() if r not in kept) == [
        ("link", "Help"),
        ("link", "Help"),
        ("listitem", ""),
        ("listitem", ""),
    ]


async def test_a_twin_of_a_node_still_in_the_page_gets_a_new_ref(
    tab: Tab, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/reflist/index.html")
    first = await tab.snapshot()
    old = ref_of(first, "checkbox", "Task 7")
    # The page hides the row and puts a copy in its place: the hidden one is still there.
    await tab.page.evaluate(
        "() => { const li = document.querySelectorAll('li')[6];"
        " li.after(li.cloneNode(true)); li.style.display = 'none'; }"
    )
    second = await tab.snapshot()
    twin = ref_of(second, "checkbox", "Task 7")
    assert twin != old and old not in second.refs
    assert ref_of(second, "checkbox", "Task 8") == ref_of(first, "checkbox", "Task 8")
    with pytest.raises(StaleRef):
        await tab.click(old)
    await tab.click(twin)  # the copy's box: the app ticks its task and draws the list again
    assert await checked(tab) == ["Task 7"]


async def test_refs_move_only_in_the_frame_whose_list_was_drawn_again(
    tab: Tab, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/demo/list.html")
    await tab.page.set_content(
        f'<h1>Outer</h1><iframe title="Tasks" src="{fixture_url}/reflist/index.html?rows=3">'
        "</iframe>"
    )
    frame = tab.page.frames[1]
    await frame.wait_for_selector("li")
    first = await tab.snapshot()
    inner = ref_of(first, "checkbox", "Task 2")
    assert inner.startswith("f")
    await frame.evaluate("() => tasks.render()")
    delta = await tab.snapshot(DELTA)
    assert ref_of(delta, "checkbox", "Task 2") == inner
    assert delta.text == "# no changes since the last snapshot"  # the <iframe> line too
    await tab.click(inner)
    assert await frame.evaluate("() => document.querySelectorAll('input')[1].checked")


def test_frame_paths_from_the_page_are_checked() -> None:
    # Page data: only [ref, lines, depth] with a ref, lines of text and a positive depth.
    good = ["e4", ["- main [e1]:", '  - iframe "Tasks" [e4]:'], 2]
    reported = [
        good,
        ["e5", ["- x"], 0],
        ["e6", ["- x", 7], 1],
        ["button", ["- x"], 1],
        ["e7", "- x", 1],
        ["e8", ["- x"], True],
        "e9",
    ]
    assert frame_paths(reported) == {"e4": (good[1], 2)}
    assert frame_paths({"e4": good}) == {} and frame_paths(None) == {}


# -- the delta shows what the full snapshot shows ----------------------------------------

# Pages and what changes on them, by clicking (role, name, nth) or by the page's script.
CHANGES: list[tuple[str, list[tuple[str, str, int] | str]]] = [
    ("reflist/form.html", [("checkbox", "Newsletter", 0)]),
    ("reflist/form.html", [("button", "Help", 0), ("button", "Switch plan", 0)]),
    ("reflist/form.html", [("checkbox", "Newsletter", 0), ("button", "Save", 0)]),
    ("rerender/index.html", [("button", "Star", 0), ("radio", "pro", 0)]),
    ("rerender/index.html", [("checkbox", "Archive me", 0), ("checkbox", "Sweep the floor", 0)]),
    ("reflist/index.html", [("checkbox", "Task 3", 0), "tasks.rename(5, 'Task 6 later')"]),
    ("reflist/index.html", ["tasks.add('Task 0', 0)", ("button", "Delete", 9)]),
    # Changed in place (the same nodes): a button's state, a list item's only text.
    ("reflist/form.html", ["document.getElementById('help').disabled = true"]),
    ("reflist/form.html", ["document.querySelector('li').textContent = 'Plan: Pro'"]),
    ("demo/dynamic.html", [("button", "Count: 0", 0)]),
    # Only the frame changed: its lines come under their <iframe> line, as in the full one.
    (
        "reflist/framed.html",
        ["document.querySelector('iframe').contentWindow.tasks.rename(1, 'B')"],
    ),
    (
        "reflist/nested.html",
        [
            "document.querySelector('iframe').contentDocument.querySelector('iframe')"
            ".contentWindow.tasks.rename(2, 'C')"
        ],
    ),
    ("demo/list.html", [("button", "Delete", 1)]),
]


@pytest.mark.parametrize(("page", "steps"), CHANGES)
async def test_a_delta_adds_only_lines_the_full_snapshot_shows(
    tab: Tab, fixture_url: str, page: str, steps: list[tuple[str, str, int] | str]
) -> None:
    await tab.navigate(f"{fixture_url}/{page}")
    await tab.page.wait_for_load_state("load")  # frames too
    await tab.snapshot()
    for step in steps:  # all of them in one delta: by the page's locators, not by refs
        if isinstance(step, str):
            await tab.page.evaluate(step)
        else:
            role, name, nth = step
            await tab.page.get_by_role(role, name=name, exact=True).nth(nth).click()  # type: ignore[arg-type]
    delta = await tab.snapshot(DELTA)
    full = await tab.snapshot()
    lines = shown(delta)
    assert lines, delta.text
    missing = [line for line in lines if line not in full.text.splitlines()]
    assert missing == [], f"delta:\n{delta.text}\nfull:\n{full.text}"
