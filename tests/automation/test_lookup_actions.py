"""The actions added for MCP clients, on a real page: find, verify (recorded as an
expect step), emulate_media, drop_files, network_request."""

from __future__ import annotations

import re

import pytest

from automation.actions import execute
from automation.agent.parser import Action
from automation.agent.steps import ActionSteps
from automation.browser.tab import Tab
from automation.errors import ActionFailed, ActionInvalid, CheckFailed
from automation.events import ListSink, StepRecorded
from automation.secrets import Secrets
from tests.bounds import room

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def opened(tab: Tab, fixture_url: str) -> Tab:
    await tab.navigate(f"{fixture_url}/engine/mcp.html", budget=room())
    return tab


async def run(tab: Tab, name: str, **args: object) -> str:
    return await execute(tab, name, args, budget=room())


async def test_find_answers_the_matching_lines_after_their_row(tab: Tab, fixture_url: str) -> None:
    await opened(tab, fixture_url)
    found = await run(tab, "find", text="delete")
    lines = found.splitlines()
    # A table row is one line, its own context; an item's match comes after its item.
    assert len(lines) == 2
    assert re.fullmatch(r'Alpha \| 3 items \| button "Delete" \[e\d+\]', lines[0])
    assert "Beta" in lines[1] and "Alpha" not in lines[1]
    ref = lines[1].rsplit("[", 1)[1].rstrip("]")
    assert tab.refs[ref].name == "Delete"  # a ref of the snapshot find took
    assert await run(tab, "find", text="banana") == "Banana"
    assert await run(tab, "find", pattern=r"^\s*- button") != ""
    assert (await run(tab, "find", text="nowhere")).startswith("nothing on the page matches")
    assert "1 more" in await run(tab, "find", text="delete", limit=1)
    for bad in ({}, {"text": "a", "pattern": "b"}, {"pattern": "("}, {"text": "a", "limit": 0},
                {"text": "a" * 1_001}):  # fmt: skip
        with pytest.raises(ActionInvalid):
            await run(tab, "find", **bad)


async def test_a_pattern_that_would_backtrack_answers_at_once(tab: Tab, fixture_url: str) -> None:
    """(a+)+$ against thirty a's and a "!" takes Python's re about 2^30 steps, on the
    event loop every other call shares (no budget can stop it there); RE2 answers in
    time linear in the page.  What RE2 can't do is refused saying so."""
    await opened(tab, fixture_url)
    await tab.page.set_content(f"<p>{'a' * 30}!</p>")
    assert (await run(tab, "find", pattern="(a+)+$")).startswith("nothing on the page matches")
    assert "a!" in await run(tab, "find", pattern="(a|aa)+!")
    with pytest.raises(ActionInvalid, match="no backreferences"):
        await run(tab, "find", pattern=r"(a)\1")


async def test_verify_checks_the_page_and_is_recorded_as_an_expect_step(
    tab: Tab, fixture_url: str
) -> None:
    await opened(tab, fixture_url)
    snap = await tab.snapshot()
    fruit = next(r for r, e in snap.refs.items() if e.role == "list")
    note = next(r for r, e in snap.refs.items() if e.role == "textbox")
    await run(tab, "fill", ref=note, value="urgent")
    sink = ListSink()
    steps = ActionSteps(tab, sink, Secrets(), screenshots=False)
    budget = room()
    checks = [
        {"kind": "text_visible", "text": "Beta"},
        {"kind": "items", "ref": fruit, "items": ["Apple", "Cherry"], "among_others": True},
        {"kind": "value", "ref": note, "value": "urgent"},
        {"kind": "rows", "text": "Alpha", "count": 1},
    ]
    for check in checks:
        outcome = await steps.run(Action("verify", check), budget)
        assert outcome.ok, outcome
    wrong = await steps.run(  # (long enough to be read once on a busy machine: check_failed)
        Action("verify", {"kind": "items", "ref": fruit, "items": ["Cherry", "Apple"],
                          "timeout_ms": 4_000}), budget,
    )  # fmt: skip
    assert not wrong.ok and wrong.error_code == CheckFailed.code
    recorded = sink.of_type(StepRecorded)
    assert [s.action for s in recorded] == ["expect"] * 5
    assert recorded[1].identity is not None and recorded[1].args["items"] == ["Apple", "Cherry"]
    assert recorded[1].args["among_others"] is True
    # Without among_others, the entries are the items: Banana between is one more.
    exact = {"kind": "items", "ref": fruit, "items": ["Apple", "Cherry"], "timeout_ms": 1_500}
    assert not (await steps.run(Action("verify", exact), budget)).ok
    assert recorded[0].identity is None and recorded[-1].ok is False
    # What an MCP client is told: the session's page, not a replay, is what fell short.
    with pytest.raises(CheckFailed) as failed:
        await run(tab, "verify", kind="text_visible", text="Nowhere", timeout_ms=1_500)
    assert "replay" not in failed.value.hint and "scenario" not in failed.value.hint
    assert "verify again" in failed.value.hint, failed.value.hint
    with pytest.raises(ActionInvalid):  # an element check needs its element
        await run(tab, "verify", kind="value", value="x")
    with pytest.raises(ActionInvalid):
        await run(tab, "verify", kind="nonsense", text="x")


async def test_emulate_media_is_what_the_page_sees(tab: Tab, fixture_url: str) -> None:
    await opened(tab, fixture_url)
    dark = "matchMedia('(prefers-color-scheme: dark)').matches"
    assert await tab.page.evaluate(dark) is False
    said = await run(tab, "emulate_media", color_scheme="dark", media="print")
    assert "color_scheme=dark" in said
    assert await tab.page.evaluate(dark) is True
    assert await tab.page.evaluate("matchMedia('print').matches") is True
    await run(tab, "emulate_media", color_scheme="reset", media="reset")
    assert await tab.page.evaluate(dark) is False
    for bad in ({}, {"color_scheme": "purple"}):
        with pytest.raises(ActionInvalid):
            await run(tab, "emulate_media", **bad)


async def test_drop_files_reach_a_drop_zone_and_a_drop_nobody_takes_fails(
    tab: Tab, fixture_url: str
) -> None:
    await opened(tab, fixture_url)
    snap = await tab.snapshot()
    zone = next(r for r, e in snap.refs.items() if e.name == "Drop files here")
    plain = next(r for r, e in snap.refs.items() if e.name == "Not a drop zone")
    said = await run(tab, "drop_files", ref=zone, files=["avatar.txt"])
    assert said.startswith("dropped avatar.txt")
    # The page reads the file before it shows it (a promise): its words are waited for.
    await tab.page.wait_for_function("document.getElementById('dropped').textContent")
    assert await tab.page.text_content("#dropped") == "avatar.txt:portrait"
    with pytest.raises(ActionFailed, match="nothing there took the drop"):
        await run(tab, "drop_files", ref=plain, files=["avatar.txt"])
    with pytest.raises(ActionInvalid, match="outside the upload folder"):
        await run(tab, "drop_files", ref=zone, files=["../engine/mcp.html"])


async def test_a_request_s_details_by_its_number_hide_credentials(
    tab: Tab, fixture_url: str
) -> None:
    await opened(tab, fixture_url)
    snap = await tab.snapshot()
    load = next(r for r, e in snap.refs.items() if e.name == "Load data")
    await run(tab, "click", ref=load)
    await run(tab, "wait_for", text="loaded")
    listed = await run(tab, "page_log", kind="requests", contains="data.json")
    number = int(listed.split()[0].lstrip("#"))
    details = await run(tab, "network_request", number=number)
    assert details.startswith(f"#{number} GET {fixture_url}/engine/data.json")
    assert "status: 200" in details and '"engine fixture"' in details
    assert "x-trace: abc" in details
    assert "cookie: (hidden)" in details and "s3cr3t-cookie" not in details
    with pytest.raises(ActionInvalid, match="no request #9999"):
        await run(tab, "network_request", number=9999)
