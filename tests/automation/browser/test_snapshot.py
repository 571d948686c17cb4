"""Role snapshots on real Chromium: options, frames, shadow roots, stable and fail-closed refs."""

from __future__ import annotations

import re

import pytest

from automation import Budget, Tab
from automation.browser.snapshot import SnapshotOptions
from automation.errors import ActionFailed, ActionInvalid, RefNotFound, StaleRef
from tests.refs import ref_of


async def test_interactive_only_lists_just_what_can_be_acted_on(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    full = await tab.snapshot()
    brief = await tab.snapshot(SnapshotOptions(interactive_only=True))
    assert "heading" in full.text and "heading" not in brief.text
    assert len(brief.text) < len(full.text)
    for line in brief.text.splitlines():
        assert line.startswith("- ") and re.search(r"\[e\d+\]", line), line
    assert 'textbox "Email"' in brief.text and 'button "Sign up"' in brief.text
    # Same elements, same refs, whatever the view.
    assert ref_of(brief, "button", "Sign up") == ref_of(full, "button", "Sign up")


async def test_max_depth_folds_deeper_subtrees(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/list.html")
    folded = await tab.snapshot(SnapshotOptions(max_depth=2))
    assert "refs below)" in folded.text
    assert max(len(line) - len(line.lstrip()) for line in folded.text.splitlines()) <= 2
    # The refs of folded parts still resolve: the table covers the whole page.
    await tab.click(ref_of(folded, "button", "Delete", nth=1))
    await tab.wait_for_text("Order #1002 deleted")


async def test_compact_false_shows_structural_elements(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/list.html")
    await tab.page.set_content(
        "<div class=a><div class=b><span>Hi</span> <button>Go</button></div></div>"
    )
    compact = await tab.snapshot()
    loose = await tab.snapshot(SnapshotOptions(compact=False))
    assert "generic" not in compact.text
    assert "generic" in loose.text and len(loose.text) > len(compact.text)


def count_title_reads(tab: Tab, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each read of the page's title on its own (a round trip to the page), noted."""
    asked: list[str] = []
    title = tab.page.title

    async def noted() -> str:
        asked.append("title")
        return await title()

    monkeypatch.setattr(tab.page, "title", noted)
    return asked


async def test_scope_by_ref_and_by_selector(
    tab: Tab, fixture_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await tab.navigate(f"{fixture_url}/demo/list.html")
    await tab.page.evaluate("document.title = 'Orders: 4'")  # as a page's script may
    asked = count_title_reads(tab, monkeypatch)
    whole = await tab.snapshot()
    assert whole.title == "Orders: 4" and asked == []  # it came back with the walk
    row = next(r for r in whole.refs.values() if r.role == "row" and "1003" in r.name)
    scoped = await tab.snapshot(SnapshotOptions(scope=row.ref))
    assert scoped.title == "Orders: 4" and asked == ["title"]  # the walk read no title
    assert scoped.text.startswith("- row")
    assert scoped.text.count('button "Delete"') == 1
    by_css = await tab.snapshot(SnapshotOptions(scope='[data-testid="order-1004"]'))
    assert "1004" in by_css.text and "1003" not in by_css.text
    # A scoped snapshot keeps the refs outside its scope usable.
    await tab.click(ref_of(whole, "button", "Delete", nth=0))
    await tab.wait_for_text("Order #1001 deleted")
    with pytest.raises(ActionInvalid, match="matches no element"):
        await tab.snapshot(SnapshotOptions(scope="#no-such-thing"))
    with pytest.raises(RefNotFound):
        await tab.snapshot(SnapshotOptions(scope="e99999"))


async def test_max_chars_cuts_with_a_marker(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/list.html")
    full = await tab.snapshot()
    cut = await tab.snapshot(SnapshotOptions(max_chars=400))
    assert len(cut.text) <= 400 + 40
    assert cut.truncated_chars > 0
    marker = cut.text.splitlines()[-1]
    assert marker.startswith("[… truncated:") and "refs not shown" in marker
    left_out = int(re.search(r"truncated: (\d+) more characters", marker).group(1))
    assert left_out == cut.truncated_chars and left_out > len(full.text) - 400 - 200
    assert (await tab.snapshot(SnapshotOptions(max_chars=100_000))).truncated_chars == 0
    with pytest.raises(ActionInvalid):
        SnapshotOptions(max_chars=50)


async def test_delta_shows_only_what_changed(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/dynamic.html")
    full = await tab.snapshot()
    counter = ref_of(full, "button", "Count: 0")
    await tab.click(counter)
    delta = await tab.snapshot(SnapshotOptions(delta=True))
    assert delta.delta
    assert 'button "Count: 1"' in delta.text
    # Renamed: a new ref, and the old one is reported gone.
    assert f'# removed: button "Count: 0" [{counter}]' in delta.text
    assert "Load more" not in delta.text and "Dynamic content" not in delta.text
    assert len(delta.text) < len(full.text)
    again = await tab.snapshot(SnapshotOptions(delta=True))
    assert again.text == "# no changes since the last snapshot"
    # The delta's refs are usable like any other.
    await tab.click(ref_of(delta, "button", "Count: 1"))
    await tab.wait_for_text("Count: 2")
    with pytest.raises(StaleRef, match="earlier snapshot"):
        await tab.click(counter)


async def test_shadow_roots_are_included_and_actionable(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/snapshot/shadow.html")
    snap = await tab.snapshot()
    assert 'region "Card"' in snap.text
    assert "Ada Lovelace" in snap.text  # slotted light-DOM content shows where it renders
    await tab.fill(ref_of(snap, "textbox", "Note"), "from the shadow")
    await tab.click(ref_of(snap, "button", "Save note"))
    await tab.wait_for_text("Saved: from the shadow")


async def test_same_and_cross_origin_frames(tab: Tab, fixture_url: str) -> None:
    # 127.0.0.1 and localhost are different sites: Chromium puts that frame in another
    # process, where the page's scripts can't reach.
    cross = fixture_url.replace("127.0.0.1", "localhost") + "/snapshot/inner.html"
    await tab.navigate(f"{fixture_url}/snapshot/frames.html?cross={cross}")
    await tab.page.wait_for_function("document.querySelectorAll('iframe').length === 2")
    await tab.page.frame_locator("#cross").get_by_role("button").wait_for()
    await tab.page.evaluate("document.title = 'Outer page'")
    snap = await tab.snapshot()
    assert snap.title == "Outer page"  # the main frame's, not a frame's
    inner = [r for r in snap.refs.values() if r.name == "Inner OK"]
    assert len(inner) == 2
    frames = {r.frame for r in inner}
    assert len(frames) == 2 and "" not in frames  # each frame has its own prefix
    for entry in inner:
        assert entry.ref.startswith(entry.frame + "e")
        host = snap.refs[entry.host]
        assert host.role == "iframe" and host.frame == ""
        assert f"[{entry.ref}]" in snap.text
    # The frame's lines sit under its <iframe> line.
    lines = snap.text.splitlines()
    host_line = next(i for i, line in enumerate(lines) if f"[{inner[1].host}]" in line)
    assert any(f"[{inner[1].ref}]" in line for line in lines[host_line : host_line + 6])
    for entry in inner:
        code = next(r for r in snap.refs.values() if r.frame == entry.frame and r.role == "textbox")
        await tab.fill(code.ref, f"in {entry.frame}")
        await tab.click(entry.ref)
    texts = [await f.text_content("#said") for f in tab.page.frames[1:]]
    assert sorted(texts) == sorted(f"Inner: in {e.frame}" for e in inner)
    await tab.click(ref_of(snap, "button", "Outer"))
    await tab.wait_for_text("Outer clicked")


async def test_backend_node_ids(tab: Tab, fixture_url: str) -> None:
    cross = fixture_url.replace("127.0.0.1", "localhost") + "/snapshot/inner.html"
    await tab.navigate(f"{fixture_url}/snapshot/frames.html?cross={cross}")
    await tab.page.frame_locator("#cross").get_by_role("button").wait_for()
    await tab.page.evaluate("document.title = 'Outer page'")
    snap = await tab.snapshot()
    assert snap.title == "Outer page"  # the main frame's, not a frame's
    outer = ref_of(snap, "button", "Outer")
    node_id = await tab.backend_node_id(outer)
    assert isinstance(node_id, int) and node_id > 0
    assert await tab.backend_node_id(outer) == node_id  # remembered
    cdp = await tab.context.new_cdp_session(tab.page)
    described = await cdp.send("DOM.describeNode", {"backendNodeId": node_id})
    assert described["node"]["nodeName"] == "BUTTON"
    await cdp.detach()
    for entry in [r for r in snap.refs.values() if r.name == "Inner OK"]:
        assert await tab.backend_node_id(entry.ref) > 0  # same-process and out-of-process
    again = await tab.snapshot()
    assert again.refs[outer].backend_node_id == node_id  # carried on the ref


async def test_refs_are_stable_and_fail_closed(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/list.html")
    first = await tab.snapshot()
    second = await tab.snapshot()
    assert {r.ref: (r.role, r.name) for r in first.refs.values()} == {
        r.ref: (r.role, r.name) for r in second.refs.values()
    }
    archive = ref_of(first, "button", "Archive", nth=1)
    # Rename the element behind the ref: the ref must not act on it any more.
    await tab.page.evaluate(
        "() => document.querySelectorAll('tbody tr')[1].querySelectorAll('button')[1]"
        ".textContent = 'Restore'"
    )
    clicks_before = await tab.page.evaluate("() => document.body.innerText")
    with pytest.raises(StaleRef, match="take a new snapshot"):
        await tab.click(archive)
    assert await tab.page.evaluate("() => document.body.innerText") == clicks_before
    third = await tab.snapshot()
    assert ref_of(third, "button", "Restore") != archive
    for bad in ("", "   ", "e", "button", "e1; drop", "x99", "[e]"):
        with pytest.raises(RefNotFound):
            await tab.click(bad)
    with pytest.raises(RefNotFound, match="unknown ref"):
        await tab.click("e987654")


async def test_ref_numbers_are_not_reused_after_navigation(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    before = await tab.snapshot()
    await tab.navigate(f"{fixture_url}/demo/form.html")  # the same page, a new document
    after = await tab.snapshot()
    assert not set(before.refs) & set(after.refs)
    with pytest.raises(StaleRef):
        await tab.click(ref_of(before, "button", "Sign up"), budget=Budget(2_000))


async def test_a_page_that_keeps_moving_is_read_in_a_document_it_reached_or_says_so(
    tab: Tab, fixture_url: str
) -> None:
    """Read as it moves to another document every few ms: each snapshot is of one of its
    documents (whole, or one caught before it had drawn anything), or fails saying the
    page kept moving; never Playwright's own words about a destroyed execution context."""
    await tab.navigate(f"{fixture_url}/snapshot/moving.html")
    for _ in range(5):
        try:
            shot = await tab.snapshot(budget=Budget(10_000))
        except ActionFailed as exc:
            assert "went to another document as it was read, 3 times" in exc.message, exc
            assert "Execution context" not in exc.message
        else:  # read in one of its documents (it may have been caught still loading)
            assert "/snapshot/moving.html" in shot.url
            assert 'button "Stay"' in shot.text or not shot.text.strip(), shot.text
