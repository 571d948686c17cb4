"""Table rows in the brief format (fixtures/snapshot/tables.html), as MCP clients and the
act API's snapshot get it: a row of plain cells is one line, its cells' words between
" | " and its elements with their refs (the row's own ref is not shown: nothing is done
to a row as a whole); a row whose cells hold more (a list), or are targets themselves
(clickable, selected), or a grid's row, keeps a line per cell.  Deltas, find and
interactive snapshots show the same line; the agent's snapshot (the default) keeps a
line per cell."""

from __future__ import annotations

import pytest

from automation import Tab
from automation.actions import execute
from automation.browser.snapshot import Snapshot, SnapshotOptions
from tests.bounds import room
from tests.refs import ref_of

pytestmark = pytest.mark.asyncio(loop_scope="session")
LINES = SnapshotOptions(brief=True)


async def opened(tab: Tab, fixture_url: str) -> Snapshot:
    await tab.navigate(f"{fixture_url}/snapshot/tables.html")
    return await tab.snapshot(LINES)


def stripped(snap: Snapshot) -> list[str]:
    return [line.strip() for line in snap.text.splitlines()]


def row_ref(snap: Snapshot, first: str) -> str:
    """The ref of the row whose name (its cells' words) starts with ``first``."""
    rows = [r.ref for r in snap.refs.values() if r.role == "row" and r.name.startswith(first)]
    assert len(rows) == 1, f"{len(rows)} rows {first!r} in\n{snap.text}"
    return rows[0]


async def test_a_row_of_plain_cells_is_one_line(tab: Tab, fixture_url: str) -> None:
    snap = await opened(tab, fixture_url)
    lines = stripped(snap)
    assert "- No. | Customer | Note | Qty | Actions" in lines
    link, qty = ref_of(snap, "link", "Ada Lovelace"), ref_of(snap, "textbox", "Qty 1001")
    paid, delete = ref_of(snap, "button", "Paid"), ref_of(snap, "button", "Delete")
    # An empty cell keeps its place; a field shows its value; elements keep their refs.
    assert (
        f'- 1001 | link "Ada Lovelace" [{link}] |  | textbox "Qty 1001" [{qty}]: "3" | '
        f'button "Paid" [{paid}] button "Delete" [{delete}]'
    ) in lines
    # A cell's text holding the separator is quoted.
    select = ref_of(snap, "checkbox", "Select 1002")
    assert f'- 1002 | Grace Hopper | "a | b" | 1 | checkbox "Select 1002" [{select}]' in lines
    # A labelled row keeps its name; trailing empty cells leave no trailing blank.
    assert '- row "Summary row": Total |  |  | 6 |' in lines
    # The rows are still known by ref, their line's text as their name.
    assert all(row_ref(snap, n) for n in ("No. Customer", "1001 Ada", "1002 Grace", "Summary"))
    # The cells are still known by ref (a step recorded on one has its identity); only
    # their lines are gone.
    cell = ref_of(snap, "cell", "Grace Hopper")
    assert f"[{cell}]" not in snap.text


async def test_rows_whose_cells_hold_more_or_are_targets_keep_a_line_per_cell(
    tab: Tab, fixture_url: str
) -> None:
    snap = await opened(tab, fixture_url)
    lines = stripped(snap)
    at = lines.index('- cell "1003"')  # its cell holds a list: a line per cell
    assert lines[at - 1 : at + 4] == [
        "- row:",
        '- cell "1003"',
        "- cell:",
        "- list:",
        "- first",
    ]
    sort = ref_of(snap, "columnheader", "Name")
    assert f'- columnheader "Name" [{sort}] [clickable]' in lines  # a target of its own
    assert f'- cell "Ken" [{ref_of(snap, "cell", "Ken")}] [selected]' in lines
    assert "- Linus | 54" in lines  # its table's others
    assert f'- gridcell "A1" [{ref_of(snap, "gridcell", "A1")}]' in lines  # a grid's cells
    assert f"- row [{row_ref(snap, 'A1')}]:" in lines  # and rows


async def test_a_delta_find_and_the_interactive_snapshot_show_the_row_line(
    tab: Tab, fixture_url: str
) -> None:
    snap = await opened(tab, fixture_url)
    paid = ref_of(snap, "button", "Paid")
    await execute(tab, "click", {"ref": paid}, budget=room())
    delta = await tab.snapshot(SnapshotOptions(delta=True, brief=True))
    changed = [line for line in stripped(delta) if "paid today" in line]
    assert len(changed) == 1 and changed[0].startswith("- 1001 | link "), delta.text
    assert "| paid today |" in changed[0] and 'button "Paid" [' in changed[0]
    assert "Grace Hopper" not in delta.text  # the other rows did not change
    found = await execute(tab, "find", {"text": "grace"}, budget=room())
    now = await tab.snapshot(LINES)
    select = ref_of(now, "checkbox", "Select 1002")
    grace = f'1002 | Grace Hopper | "a | b" | 1 | checkbox "Select 1002" [{select}]'
    assert found.splitlines() == [grace]
    brief = await tab.snapshot(SnapshotOptions(interactive_only=True, brief=True))
    # A row one does not click as a whole is no target: its elements are listed alone.
    assert any(line.startswith('- button "Paid" [e') for line in brief.text.splitlines())
    assert not any(line.startswith(("- row", "- 100")) for line in brief.text.splitlines())
    # A row gone: the delta names it by its line, not the cells it never showed.
    drop = ref_of(now, "button", "Drop row 1002")
    await execute(tab, "click", {"ref": drop}, budget=room())
    gone = await tab.snapshot(SnapshotOptions(delta=True, brief=True))
    removed = next(line for line in gone.text.splitlines() if line.startswith("# removed: "))
    assert removed == f"# removed: {grace}"


async def test_the_agents_snapshot_keeps_a_line_per_cell(tab: Tab, fixture_url: str) -> None:
    await opened(tab, fixture_url)
    snap = await tab.snapshot()
    lines = [line.strip() for line in snap.text.splitlines()]
    grace = row_ref(snap, "1002 Grace")
    assert f"- row [{grace}]:" in lines
    assert f'- cell "Grace Hopper" [{ref_of(snap, "cell", "Grace Hopper")}]' in lines
    assert not any(" | " in line for line in lines if line.startswith("- row"))
