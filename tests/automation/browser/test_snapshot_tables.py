"""Table rows in a snapshot asked for row lines (fixtures/snapshot/tables.html), as MCP
clients and the act API's snapshot get it: a row of plain cells is one line, its cells'
words between " | " and its elements with their refs; a row whose cells hold more (a
list), or are targets themselves (clickable, selected), or a grid's row, keeps a line per
cell.  Deltas, find and interactive snapshots show the same line; the agent's snapshot
(the default) keeps a line per cell."""

from __future__ import annotations

import pytest

from automation import Budget, Tab
from automation.actions import execute
from automation.browser.snapshot import Snapshot, SnapshotOptions
from tests.refs import ref_of

pytestmark = pytest.mark.asyncio(loop_scope="session")
LINES = SnapshotOptions(row_lines=True)


async def opened(tab: Tab, fixture_url: str) -> Snapshot:
    await tab.navigate(f"{fixture_url}/snapshot/tables.html")
    return await tab.snapshot(LINES)


def line_with(snap: Snapshot, ref: str) -> str:
    lines = [line.strip() for line in snap.text.splitlines() if f"[{ref}]" in line]
    assert len(lines) == 1, f"{ref} on {len(lines)} lines of\n{snap.text}"
    return lines[0]


def row_ref(snap: Snapshot, first: str) -> str:
    """The ref of the row whose name (its cells' words) starts with ``first``."""
    rows = [r.ref for r in snap.refs.values() if r.role == "row" and r.name.startswith(first)]
    assert len(rows) == 1, f"{len(rows)} rows {first!r} in\n{snap.text}"
    return rows[0]


async def test_a_row_of_plain_cells_is_one_line(tab: Tab, fixture_url: str) -> None:
    snap = await opened(tab, fixture_url)
    head, ada, grace = (row_ref(snap, n) for n in (
        "No. Customer", "1001 Ada", "1002 Grace",
    ))  # fmt: skip
    assert line_with(snap, head) == f"- row [{head}]: No. | Customer | Note | Qty | Actions"
    link, qty = ref_of(snap, "link", "Ada Lovelace"), ref_of(snap, "textbox", "Qty 1001")
    paid, delete = ref_of(snap, "button", "Paid"), ref_of(snap, "button", "Delete")
    # An empty cell keeps its place; a field shows its value; elements keep their refs.
    assert line_with(snap, ada) == (
        f'- row [{ada}]: 1001 | link "Ada Lovelace" [{link}] |  | textbox "Qty 1001" [{qty}]: '
        f'"3" | button "Paid" [{paid}] button "Delete" [{delete}]'
    )
    # A cell's text holding the separator is quoted.
    select = ref_of(snap, "checkbox", "Select 1002")
    assert line_with(snap, grace) == (
        f'- row [{grace}]: 1002 | Grace Hopper | "a | b" | 1 | checkbox "Select 1002" [{select}]'
    )
    # A labelled row keeps its name; trailing empty cells leave no trailing blank.
    total = row_ref(snap, "Summary row")
    assert line_with(snap, total) == f'- row "Summary row" [{total}]: Total |  |  | 6 |'
    # The cells are still known by ref (a step recorded on one has its identity); only
    # their lines are gone.
    cell = ref_of(snap, "cell", "Grace Hopper")
    assert f"[{cell}]" not in snap.text


async def test_rows_whose_cells_hold_more_or_are_targets_keep_a_line_per_cell(
    tab: Tab, fixture_url: str
) -> None:
    snap = await opened(tab, fixture_url)
    lines = [line.strip() for line in snap.text.splitlines()]
    nested = row_ref(snap, "1003 first")
    assert f"- row [{nested}]:" in lines  # its cell holds a list
    assert f'- cell "1003" [{ref_of(snap, "cell", "1003")}]' in lines
    assert f"- listitem [{ref_of(snap, 'listitem', '')}]: first" in lines
    sort = ref_of(snap, "columnheader", "Name")
    assert f'- columnheader "Name" [{sort}] [clickable]' in lines  # a target of its own
    assert f'- cell "Ken" [{ref_of(snap, "cell", "Ken")}] [selected]' in lines
    assert f"- row [{row_ref(snap, 'Linus')}]: Linus | 54" in lines  # its table's others
    assert f'- gridcell "A1" [{ref_of(snap, "gridcell", "A1")}]' in lines  # a grid's cells


async def test_a_delta_find_and_the_interactive_snapshot_show_the_row_line(
    tab: Tab, fixture_url: str
) -> None:
    snap = await opened(tab, fixture_url)
    paid = ref_of(snap, "button", "Paid")
    await execute(tab, "click", {"ref": paid}, budget=Budget(5_000))
    delta = await tab.snapshot(SnapshotOptions(delta=True, row_lines=True))
    changed = [line.strip() for line in delta.text.splitlines() if "paid today" in line]
    assert len(changed) == 1 and changed[0].startswith("- row [e"), delta.text
    assert "| paid today |" in changed[0] and 'button "Paid" [' in changed[0]
    assert "Grace Hopper" not in delta.text  # the other rows did not change
    found = await execute(tab, "find", {"text": "grace"}, budget=Budget(5_000))
    now = await tab.snapshot(LINES)
    grace, select = row_ref(now, "1002 Grace"), ref_of(now, "checkbox", "Select 1002")
    assert found.splitlines() == [
        f'row [{grace}]: 1002 | Grace Hopper | "a | b" | 1 | checkbox "Select 1002" [{select}]'
    ]
    brief = await tab.snapshot(SnapshotOptions(interactive_only=True, row_lines=True))
    # A row one does not click as a whole is no target: its elements are listed alone.
    assert any(line.startswith('- button "Paid" [e') for line in brief.text.splitlines())
    assert not any(line.startswith("- row") for line in brief.text.splitlines())
    # A row gone: the delta names it and its elements, not the cells it never showed.
    drop = ref_of(now, "button", "Drop row 1002")
    await execute(tab, "click", {"ref": drop}, budget=Budget(5_000))
    gone = await tab.snapshot(SnapshotOptions(delta=True, row_lines=True))
    removed = next(line for line in gone.text.splitlines() if line.startswith("# removed: "))
    assert sorted(removed.removeprefix("# removed: ").split(", ")) == [
        f'checkbox "Select 1002" [{select}]',
        f"row [{grace}]",
    ]


async def test_the_agents_snapshot_keeps_a_line_per_cell(tab: Tab, fixture_url: str) -> None:
    await opened(tab, fixture_url)
    snap = await tab.snapshot()
    lines = [line.strip() for line in snap.text.splitlines()]
    grace = row_ref(snap, "1002 Grace")
    assert f"- row [{grace}]:" in lines
    assert f'- cell "Grace Hopper" [{ref_of(snap, "cell", "Grace Hopper")}]' in lines
    assert not any(" | " in line for line in lines if line.startswith("- row"))
