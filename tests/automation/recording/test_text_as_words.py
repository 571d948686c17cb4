"""A text a scenario looks for is found where it stands as words, never inside a longer
word: "Saved" is not in "Unsaved changes", nor "Order 100" in "Order 1001".  A check, a
wait and the pytest export agree: each fails on the page where the save did not happen
(words/v1) and passes on the page where it did (words/v2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from automation import Tab
from automation.budget import Budget
from automation.errors import BudgetExceeded, TabwrightError
from automation.recording import expect
from automation.recording.export import to_pytest
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario, ScenarioStep
from tests.bounds import room
from tests.exported import run_exported

CHECKS = (
    ScenarioStep("expect", {"kind": "text_visible", "text": "Saved"}),
    ScenarioStep("expect", {"kind": "rows", "text": "Order 100", "count": 1}),
    ScenarioStep("expect", {"kind": "rows", "text": "order 100", "count": 1, "at_least": True}),
)


def scenario(fixture_url: str) -> Scenario:
    base = f"{fixture_url}/words/v2/"
    return Scenario(
        "Save the order",
        (ScenarioStep("navigate", {"url": f"{base}index.html"}),
         ScenarioStep("wait_for", {"text": "saved"}), *CHECKS),
        base_url=base,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "page", "found"),
    [
        ("Saved", "Unsaved changes", False),
        ("Saved", "All saved.", True),
        ("Order 100", "Order 1001", False),
        ("order  100", "Order 100 shipped", True),
        ("$12.50", "USD $12.50", True),
        ("$12.50", "$12.500", False),
        ("Müller", "Herr Müller GmbH", True),
        ("Müller", "Herr Xmüller", False),
        ("(draft)", "Report (draft)", True),
        ("世界", "你好世界", True),  # a script without spaces: anywhere
    ],
)
def test_a_text_is_found_as_words(text: str, page: str, found: bool) -> None:
    assert expect.shows(expect.fold(page), text) is found


# A page of four million words "a", and checks of 500 words that end in one it lacks, or
# that it shows only at its very end: Python's re tried the words at each place in turn
# (time of the page's length times the check's), over a minute of the event loop held
# for each read, every page, socket and run of the process waiting.
MANY_WORDS = expect.fold("a " * 4_000_000)
LONG_CHECK = "a " * 499 + "b"


def test_a_page_of_repeated_words_is_searched_in_time_linear_in_it() -> None:
    assert not expect.shows(MANY_WORDS, LONG_CHECK)
    assert expect.shows(MANY_WORDS + " b.", LONG_CHECK)
    assert not expect._in_order(MANY_WORDS + " b", ["a a", LONG_CHECK, "a"])
    assert expect._in_order("x)y", ["x)", "y"]) and not expect._in_order("xy", ["x", "y"])


async def test_an_items_check_reads_a_page_of_repeated_words(tab: Tab) -> None:
    await tab.page.set_content(f"<ul aria-label=Todos><li>{'a ' * 500_000}</li></ul>")
    todos = {"role": "list", "name": "Todos", "tag": "ul"}
    check = ScenarioStep.from_dict({"action": "expect", "args": {"kind": "items",
                                    "items": [LONG_CHECK]}, "identity": todos})  # fmt: skip
    ok, seen = await expect._once(tab, check.args, check.identity, room())
    assert not ok and seen.startswith("it lists 'a a a"), seen


async def test_a_check_and_a_wait_find_words_not_parts_of_words(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/words/v1/index.html")
    gone = {"kind": "text_hidden", "text": "Saved"}  # "Unsaved" is not "Saved"
    assert (await expect._once(tab, gone, None, room()))[0]
    for check in CHECKS:
        ok, seen = await expect._once(tab, check.args, None, room())
        assert not ok, (check.args, seen)
    with pytest.raises((BudgetExceeded, TabwrightError)):
        await tab.wait_for(text="saved", budget=Budget(1_500))
    await tab.navigate(f"{fixture_url}/words/v2/index.html")
    assert await tab.wait_for(text="saved", budget=room())
    for check in CHECKS:
        ok, seen = await expect._once(tab, check.args, None, room())
        assert ok, (check.args, seen)


async def test_replay_and_its_export_fail_where_the_save_did_not_happen(
    tab: Tab, fixture_url: str, tmp_path: Path
) -> None:
    recorded = scenario(fixture_url)
    unsaved = f"{fixture_url}/words/v1/"
    short = ReplayConfig(step_timeout_ms=2_000, check_timeout_ms=2_000)  # it fails: not long
    result = await Replay(tab, recorded, base_url=unsaved, config=short).run()
    assert result.status == "failed", result.to_dict()
    result = await Replay(tab, recorded).run()
    assert result.ok, result.to_dict()

    code, out = await run_exported(to_pytest(recorded), tmp_path, recorded.base_url)
    assert code == 0 and "1 passed" in out, out
    code, out = await run_exported(to_pytest(recorded), tmp_path, unsaved, timeout_ms=2_000)
    assert code == 1 and "1 failed" in out, out
