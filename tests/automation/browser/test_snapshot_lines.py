"""What a snapshot line shows (fixtures/snapshot/lines.html): link URLs on request, a
field's placeholder, the focused element, click targets without a role, and names read
from content with their parts kept apart, as Playwright's get_by_role reads them."""

from __future__ import annotations

import pytest

from automation import Budget, Tab
from automation.actions import execute
from automation.browser.snapshot import RefEntry, Snapshot, SnapshotOptions
from automation.errors import ActionInvalid
from tests.bounds import room
from tests.refs import ref_of


def line_of(snap: Snapshot, ref: str) -> str:
    """The line that carries ``ref``, without its indent."""
    lines = [line.strip() for line in snap.text.splitlines() if f"[{ref}]" in line]
    assert len(lines) == 1, f"{ref} on {len(lines)} lines of\n{snap.text}"
    return lines[0]


def lines_with(snap: Snapshot, mark: str) -> list[str]:
    return [line.strip() for line in snap.text.splitlines() if mark in line]


async def open_lines(tab: Tab, fixture_url: str) -> Snapshot:
    await tab.navigate(f"{fixture_url}/snapshot/lines.html")
    return await tab.snapshot()


async def test_link_urls_are_shown_only_when_asked(tab: Tab, fixture_url: str) -> None:
    plain = await open_lines(tab, fixture_url)
    assert "->" not in plain.text and "/snapshot/controls.html" not in plain.text
    snap = await tab.snapshot(SnapshotOptions(link_urls=True))
    url = {name: line_of(snap, ref_of(snap, "link", name)) for name in (
        "Controls", "Back to top", "Docs", "Report", "Run script", "Profile Ada Lovelace",
    )}  # fmt: skip
    # Same origin: from the path on; a place on this very page: the fragment alone.
    controls = ref_of(snap, "link", "Controls")
    assert url["Controls"] == f'- link "Controls" [{controls}] -> /snapshot/controls.html'
    assert url["Back to top"].endswith("] -> #top")
    assert url["Docs"].endswith("] -> https://example.org/docs/start?lang=en")
    assert url["Run script"].endswith("] -> javascript:")
    # A long URL keeps its whole path; its query is cut with an ellipsis.
    report = url["Report"].split(" -> ", 1)[1]
    assert report.startswith("https://example.org/reports/2024/q3/summary?filter=")
    assert report.endswith("…") and len(report) <= 100
    # The line reads the same otherwise, and the refs are the same.
    assert snap.refs.keys() == plain.refs.keys()
    assert url["Profile Ada Lovelace"].startswith(
        line_of(plain, ref_of(plain, "link", "Profile Ada Lovelace"))
    )
    # read_page (the act API's, a macro's) asks for them the same way.
    page = await execute(tab, "read_page", {"link_urls": True}, budget=room())
    lines = [line.strip() for line in page.splitlines()]
    assert f'- link "Controls" [{controls}] -> /snapshot/controls.html' in lines
    assert "->" not in await execute(tab, "read_page", {}, budget=room())


async def test_a_placeholder_shows_when_it_says_more_than_the_name(
    tab: Tab, fixture_url: str
) -> None:
    snap = await open_lines(tab, fixture_url)
    email, note = ref_of(snap, "textbox", "Email"), ref_of(snap, "textbox", "Note")
    assert line_of(snap, email) == f'- textbox "Email" [{email}] placeholder="name@example.com"'
    assert line_of(snap, note) == f'- textbox "Note" [{note}] placeholder="Write a note"'
    # Named by its placeholder: the name says it already.
    search = ref_of(snap, "textbox", "Search orders")
    assert line_of(snap, search) == f'- textbox "Search orders" [{search}]'
    phone = ref_of(snap, "textbox", "Phone")
    assert line_of(snap, phone) == f'- textbox "Phone" [{phone}]'


async def test_the_focused_element_is_marked_and_a_delta_shows_focus_moving(
    tab: Tab, fixture_url: str
) -> None:
    snap = await open_lines(tab, fixture_url)
    assert "[focused]" not in snap.text
    email, phone = ref_of(snap, "textbox", "Email"), ref_of(snap, "textbox", "Phone")
    await tab.page.focus("#email")
    snap = await tab.snapshot()
    assert lines_with(snap, "[focused]") == [
        f'- textbox "Email" [{email}] [focused] placeholder="name@example.com"'
    ]
    await tab.page.focus("#phone")
    delta = await tab.snapshot(SnapshotOptions(delta=True))
    # Both lines changed: the one that lost the focus and the one that has it now.
    assert f'- textbox "Email" [{email}] placeholder="name@example.com"' in delta.text
    assert f'- textbox "Phone" [{phone}] [focused]' in delta.text
    assert delta.text.count("[focused]") == 1
    # Through a shadow root.
    await tab.page.focus("#deep")
    snap = await tab.snapshot()
    deep = ref_of(snap, "textbox", "Shadow field")
    assert lines_with(snap, "[focused]") == [f'- textbox "Shadow field" [{deep}] [focused]']


async def test_focus_inside_a_frame_is_marked_there_only(tab: Tab, fixture_url: str) -> None:
    cross = fixture_url.replace("127.0.0.1", "localhost") + "/snapshot/inner.html"
    await tab.navigate(f"{fixture_url}/snapshot/frames.html?cross={cross}")
    await tab.page.wait_for_function("document.querySelectorAll('iframe').length === 2")
    await tab.page.frame_locator("#cross").get_by_role("button").wait_for()
    for frame in tab.page.frames[1:]:
        await frame.focus("input")
        snap = await tab.snapshot()
        focused = lines_with(snap, "[focused]")
        assert len(focused) == 1 and focused[0].startswith("- textbox"), snap.text
        ref = focused[0].split("[", 1)[1].split("]", 1)[0]
        assert snap.refs[ref].frame  # the field in the frame, not the <iframe>
    await tab.page.focus("button")
    snap = await tab.snapshot()
    outer = ref_of(snap, "button", "Outer")
    assert lines_with(snap, "[focused]") == [f'- button "Outer" [{outer}] [focused]']


async def test_plain_elements_one_clicks_get_a_line_and_a_ref_once(
    tab: Tab, fixture_url: str
) -> None:
    snap = await open_lines(tab, fixture_url)
    for name in ("Open report", "Pointer span", "Whole card"):
        ref = ref_of(snap, "clickable", name)
        assert line_of(snap, ref) == f'- clickable "{name}" [{ref}]'
    clickables = sorted(r.name for r in snap.refs.values() if r.role == "clickable")
    # What sits inside a pointer element inherits its cursor: no target of its own.
    assert clickables == ["Open report", "Pointer span", "Whole card"], snap.text
    # A row clicked as a whole says so; its cells do not.
    row = ref_of(snap, "row", "#1003 Alan Turing")
    assert line_of(snap, row) == f'- row "#1003 Alan Turing" [{row}] [clickable]:'
    assert lines_with(snap, "[clickable]") == [line_of(snap, row)]
    brief = await tab.snapshot(SnapshotOptions(interactive_only=True))
    assert f'- row "#1003 Alan Turing" [{row}] [clickable]' in brief.text.splitlines()
    # On one line, its cells tell it, in the full snapshot and the interactive one.
    for options in (SnapshotOptions(brief=True),
                    SnapshotOptions(brief=True, interactive_only=True)):  # fmt: skip
        lined = await tab.snapshot(options)
        shown = [line.strip() for line in lined.text.splitlines()]
        assert f"- row [{row}] [clickable]: #1003 | Alan Turing" in shown


async def test_names_from_content_keep_their_parts_apart(tab: Tab, fixture_url: str) -> None:
    snap = await open_lines(tab, fixture_url)
    names = {(r.role, r.name) for r in snap.refs.values()}
    assert ("row", "#1001 Delete Archive") in names  # buttons are inline-block: spaced
    assert ("cell", "Delete Archive") in names
    assert ("row", "#1002 Grace Hopper") in names  # a checkbox's value is no text
    assert ("button", "Save as draft") in names  # block spans: spaced
    assert ("button", "Reload") in names  # inline spans: not
    assert ("link", "Profile Ada Lovelace") in names
    assert "- listitem [" in snap.text and ": Bolder words" in snap.text


@pytest.mark.parametrize(
    ("role", "name"),
    [
        ("row", "#1001 Delete Archive"),
        ("cell", "Delete Archive"),
        ("row", "#1002 Grace Hopper"),
        ("row", "#1003 Alan Turing"),
        ("button", "Save as draft"),
        ("button", "Reload"),
        ("link", "Profile Ada Lovelace"),
        ("textbox", "Email"),
    ],
)
async def test_stored_names_find_their_element_with_get_by_role(
    tab: Tab, fixture_url: str, role: str, name: str
) -> None:
    snap = await open_lines(tab, fixture_url)
    entry: RefEntry = snap.refs[ref_of(snap, role, name)]
    found = tab.page.get_by_role(entry.role, name=entry.name, exact=True)
    assert await found.count() == 1
    ref = await found.evaluate("el => window.__tabwright.refOf(el)")
    assert ref == entry.ref


async def test_link_urls_can_be_asked_for_by_the_snapshot_action_and_a_steps_read(
    tab: Tab, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/snapshot/lines.html")
    shown = "-> /snapshot/controls.html"
    assert shown not in await execute(tab, "snapshot", {}, budget=room())
    assert shown in await execute(tab, "snapshot", {"link_urls": True}, budget=room())
    steps = {"steps": [{"type": "read_page", "link_urls": True}]}
    assert shown in await execute(tab, "steps", steps, budget=room())
    steps = {"steps": [{"type": "read_page", "link_urls": "yes"}]}
    with pytest.raises(ActionInvalid, match="link_urls must be true or false"):
        await execute(tab, "steps", steps, budget=Budget(10_000))
