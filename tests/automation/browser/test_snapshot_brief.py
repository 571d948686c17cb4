"""The brief format (fixtures/snapshot/brief.html), as MCP clients and the act API's
snapshot get it: refs only on what one acts on or scopes to, a paragraph or an item with
its links on one line, text, items and table rows as their words alone, no heading
repeating its region's name, a closed select's options on its line, no table sections,
one space of indent a level, no line for a <main> holding the whole page, no heading level
when all are alike; every ref it leaves out is still the element's ref.  The
agent's snapshot (the default) keeps a line and a ref for each element."""

from __future__ import annotations

import re

import pytest

from automation import Tab
from automation.actions import execute
from automation.browser.snapshot import INTERACTIVE_ROLES, Snapshot, SnapshotOptions
from tests.bounds import room
from tests.refs import ref_of

pytestmark = pytest.mark.asyncio(loop_scope="session")
BRIEF = SnapshotOptions(brief=True)
REF = re.compile(r"\[((?:f\d+)?e\d+)\]")


def stripped(snap: Snapshot) -> list[str]:
    return [line.strip() for line in snap.text.splitlines()]


async def test_the_brief_format_keeps_what_a_model_acts_on(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/snapshot/brief.html")
    agent = await tab.snapshot()
    snap = await tab.snapshot(BRIEF)
    lines = stripped(snap)
    ref = {(r.role, r.name): r.ref for r in snap.refs.values()}
    # The same elements, the same refs, whichever format showed them.
    assert ref == {(r.role, r.name): r.ref for r in agent.refs.values()}
    heading = ref["heading", "Orders"]
    assert f'- heading "Orders" [{heading}] [level=1]' in stripped(agent)
    assert '- heading "Orders"' in lines  # the only level shown: it says nothing
    # A paragraph is one line of its words, its link with the link's ref, a strong part
    # run into the word it is part of; one whose words begin like a line of an element
    # ("note" is a role) says it is a paragraph.  Text alone is its words.
    terms = ref["link", "the terms"]
    assert f'- Read link "the terms" [{terms}] first, then picked rows go.' in lines
    assert "- paragraph: note: rows are kept a year" in lines
    assert "- Shipped on Mondays" in lines
    assert "- text: Shipped on Mondays" in stripped(agent)
    # Items: one line each; one clicked or dragged as a whole keeps its ref.
    alpha, beta = ref["link", "Alpha"], ref["link", "Beta"]
    gamma, delta = (REF.findall(next(x for x in lines if x.endswith(w)))[0] for w in (
        ": Gamma", ": Delta",
    ))  # fmt: skip
    assert snap.refs[gamma].role == snap.refs[delta].role == "listitem"
    assert f'- link "Alpha" [{alpha}] — first' in lines  # its list's line says "list"
    assert f'- link "Beta" [{beta}]' in lines
    assert lines[lines.index(f'- link "Alpha" [{alpha}] — first') - 1] == "- list:"
    assert f"- listitem [{gamma}] [clickable]: Gamma" in lines
    assert f"- listitem [{delta}]: Delta" in lines
    # A closed select: its value and its options (one holding the separator quoted) on
    # its line, their refs left out; one with a group keeps its lines.
    plan, region = ref["combobox", "Plan"], ref["combobox", "Region"]
    assert f'- combobox "Plan" [{plan}]: "Pro" options: Free | Pro | "Team | Max"' in lines
    assert f'- option "Paris" [{ref["option", "Paris"]}] [selected]' in lines
    assert f'- combobox "Region" [{region}]: "Paris":' in lines
    assert f'- textbox "Note" [{ref["textbox", "Note"]}]: "urgent"' in lines
    # A region named by its heading: the region's line says the name, once.
    help_at = lines.index(f'- region "Help" [{ref["region", "Help"]}]:')
    assert lines[help_at + 1] == "- Ask the desk"
    assert any(line.startswith('- heading "Help" [') for line in stripped(agent))
    assert not any(line.startswith('- heading "Help"') for line in lines)
    # A table: its rows right under it, no sections, no caption repeating its name.
    shown = set(REF.findall(snap.text))
    table = ref["table", "Open orders"]
    at = lines.index(f'- table "Open orders" [{table}]:')
    ada = ref["link", "Ada Lovelace"]
    assert lines[at + 1 :] == [
        "- No. | Customer",
        f'- 1001 | link "Ada Lovelace" [{ada}]',
        "- #1002 | Grace Hopper",
    ]
    assert {"row", "cell", "rowgroup"} <= {snap.refs[r].role for r in set(snap.refs) - shown}
    # One space of indent a level: the rows sit a level down (the <main> holding the
    # whole page has no line: what is in it begins the text).
    assert snap.text.splitlines()[-1] == " - #1002 | Grace Hopper"
    assert snap.text.startswith('- heading "Orders"\n')
    assert not any(line.startswith(("- rowgroup", "- caption")) for line in lines)
    # Every element one acts on shows its ref but the options on their select's line.
    acted = {r.ref for r in snap.refs.values() if r.role in INTERACTIVE_ROLES}
    folded = {ref["option", n] for n in ("Free", "Pro", "Team | Max")}
    assert acted - shown == folded
    assert shown <= set(snap.refs)
    assert len(snap.text) < 0.7 * len(agent.text), (snap.text, agent.text)


async def test_a_select_on_one_line_is_chosen_by_label_and_a_delta_shows_it(
    tab: Tab, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/snapshot/brief.html")
    snap = await tab.snapshot(BRIEF)
    plan, save = ref_of(snap, "combobox", "Plan"), ref_of(snap, "button", "Save")
    budget = room()
    await execute(tab, "select_option", {"ref": plan, "values": ["Team | Max"]}, budget=budget)
    await execute(tab, "click", {"ref": save}, budget=budget)
    delta = await tab.snapshot(SnapshotOptions(delta=True, brief=True))
    lines = stripped(delta)
    assert f'- combobox "Plan" [{plan}]: "Team | Max" options: Free | Pro | "Team | Max"' in (lines)
    assert "- status: Saved Team | Max" in lines, delta.text
    # Unchanged neighbours are counted, naming only refs the brief format shows.
    runs = " ".join(line for line in lines if "unchanged" in line)
    assert runs and set(re.findall(r"\be\d+\b", runs)) <= set(REF.findall(snap.text))
    assert "Alpha" not in delta.text  # the list did not change
