"""The brief format's rules that read the whole page: no line for a <main> that holds it
all, a heading's level only where the levels shown differ, and on a small page no ref on
a container one would only scope a snapshot to.  Every ref left out stays in the table
and resolves; the agent's snapshot (the default) keeps them all."""

from __future__ import annotations

import pytest

from automation import Tab
from automation.browser.snapshot import SnapshotOptions
from tests.refs import ref_of

pytestmark = pytest.mark.asyncio(loop_scope="session")
BRIEF = SnapshotOptions(brief=True)
SMALL = (
    "<main><h1>Settings</h1>"
    "<form><input aria-label=Name><button type=button>Save</button></form>"
    "<section aria-label=Help><p>Ask the desk</p></section>"
    "<table><tr><td>Plan</td><td>Pro</td></tr></table>"
    "<div role=dialog aria-label=Confirm><button>OK</button></div>"
    "<div role=tablist><button role=tab>General</button></div>"
    "<section aria-label=Tiles onclick='1'><p>Tile</p></section></main>"
)


async def test_a_main_holding_the_whole_page_has_no_line(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/flow/step1.html")
    snap = await tab.snapshot(BRIEF)
    main = ref_of(snap, "main", "")
    assert snap.text.startswith('- heading "Step 1 of 2: your company"\n'), snap.text
    assert "main" not in snap.text
    assert (
        snap.text.splitlines()[-1]
        == f'- link "Back to the demo pages" [{ref_of(snap, "link", "Back to the demo pages")}]'
    )
    assert (await tab.snapshot()).text.startswith(f"- main [{main}]:")  # the agent's
    # Asked for, the <main> is what the answer is about: its line stays.
    assert (await tab.snapshot(SnapshotOptions(scope=main, brief=True))).text.startswith("- main")
    # Something beside it (a dialog drawn at the end of <body>): the <main> has its line
    # again, and a delta tells it unchanged, showing only the dialog.
    await tab.snapshot(BRIEF)
    await tab.page.evaluate(
        "document.body.insertAdjacentHTML('beforeend', "
        "'<div role=dialog aria-label=Leave><button>Stay</button></div>')"
    )
    delta = await tab.snapshot(SnapshotOptions(delta=True, brief=True))
    assert "Continue" not in delta.text, delta.text
    assert delta.text.splitlines()[1] == "- … 1 unchanged", delta.text
    assert '- dialog "Leave"' in delta.text
    whole = await tab.snapshot(BRIEF)
    assert whole.text.startswith("- main:\n"), whole.text
    # A form holding the whole page (as some frameworks draw every page) says as little.
    await tab.page.set_content(
        "<form><main><h1>Sign in</h1><input aria-label=User><button>Go</button></main></form>"
    )
    signin = await tab.snapshot(BRIEF)
    assert signin.text.startswith('- heading "Sign in"\n- textbox "User" ['), signin.text


async def test_heading_levels_show_only_where_they_differ(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/list.html")
    await tab.page.set_content("<h2>Orders</h2><p>Open</p><h2>Invoices</h2><p>None</p>")
    alike = (await tab.snapshot(BRIEF)).text
    assert '- heading "Orders"\n' in alike and alike.endswith('- heading "Invoices"\n- None')
    assert "level" not in alike
    assert "[level=2]" in (await tab.snapshot()).text  # the agent's
    await tab.page.evaluate("document.body.insertAdjacentHTML('afterbegin', '<h1>Books</h1>')")
    differ = (await tab.snapshot(BRIEF)).text
    assert differ.startswith('- heading "Books" [level=1]\n- heading "Orders" [level=2]\n')
    assert '- heading "Invoices" [level=2]' in differ


async def test_a_small_page_leaves_out_the_refs_of_containers_one_only_scopes_to(
    tab: Tab, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/demo/list.html")
    await tab.page.set_content(SMALL)
    snap = await tab.snapshot(BRIEF)
    lines = [line.strip() for line in snap.text.splitlines()]
    assert {"- form:", '- region "Help":', "- table:"} <= set(lines), snap.text
    # A dialog, a widget and what is clicked keep theirs; so does every element one acts on.
    for role, name in (("dialog", "Confirm"), ("tablist", ""), ("region", "Tiles")):
        assert f"[{ref_of(snap, role, name)}]" in snap.text, (role, snap.text)
    assert f'- textbox "Name" [{ref_of(snap, "textbox", "Name")}]' in lines
    # The refs left out still name their elements (a scoped snapshot is no whole page:
    # its containers show their refs).
    form = ref_of(snap, "form", "")
    scoped = await tab.snapshot(SnapshotOptions(scope=form, brief=True))
    assert scoped.text.startswith(f"- form [{form}]:\n") and "Save" in scoped.text
    assert f"- form [{form}]:" in (await tab.snapshot()).text  # the agent's
    # A page with more elements than a short read: a container's ref is worth its place.
    await tab.page.evaluate(
        "document.querySelector('main').insertAdjacentHTML('beforeend', "
        "'<ul>' + '<li>item</li>'.repeat(50) + '</ul>')"
    )
    big = await tab.snapshot(BRIEF)
    assert f'- region "Help" [{ref_of(big, "region", "Help")}]:' in big.text
    assert f"- form [{ref_of(big, 'form', '')}]:" in big.text


async def test_a_small_page_with_something_to_drag_or_a_frame_keeps_its_containers_refs(
    tab: Tab, fixture_url: str
) -> None:
    """What is dragged may be dropped on any container; a frame's elements are not
    counted in the page's walk, so the page may not be small."""
    await tab.navigate(f"{fixture_url}/demo/list.html")
    for source in (
        "<div role=button draggable=true>Card</div>",
        "<div role=button aria-roledescription=draggable>Card</div>",
        "<div role=button style='cursor: grab'>Card</div>",
        "<iframe srcdoc='<button>Inside</button>'></iframe>",
    ):
        await tab.page.set_content(
            f"<main>{source}<section aria-label=Done><p>Drop here</p></section></main>"
        )
        snap = await tab.snapshot(BRIEF)
        assert f'- region "Done" [{ref_of(snap, "region", "Done")}]:' in snap.text, source
