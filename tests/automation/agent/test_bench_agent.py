"""bench/agent.py keeps working: its model rebuilds the page the way the snapshots show
it, drives the real loop in both tool modes, and its verdict does not trust the run's."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from automation import BrowserSession, Tab
from automation.browser.snapshot import SnapshotOptions
from bench.agent import report, run_task
from bench.agenttasks import DELETE_RE, SKILLS, TASKS
from bench.model import Decision, ScriptedModel, Skill, serve_model
from bench.pageview import PageView, page_from_messages

DELETE = next(t for t in TASKS if t.id == "delete")


def _outline(view: PageView, start: str = "", depth: int = 0) -> list[tuple[object, ...]]:
    """The view as (depth, ref, role, name, states, value, texts), in page order."""
    out: list[tuple[object, ...]] = []
    for ref in view.nodes[start].children:
        n = view.nodes[ref]
        out.append((depth, n.ref, n.role, n.name, n.states, n.value, tuple(n.texts)))
        out += _outline(view, ref, depth + 1)
    return out


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with serve_model(ScriptedModel(SKILLS)) as served:
        yield served


async def test_deltas_rebuild_the_page_a_full_snapshot_shows(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/crossimpl/classic/index.html")
    first = await tab.snapshot()
    messages = [{"role": "user", "content": f"Page: 'Todos' {tab.url}\n{first.text}"}]
    page = tab.page
    for title in ("Buy milk", "Walk the dog", "Pay rent"):
        await page.fill("input.new-todo", title)
        await page.press("input.new-todo", "Enter")
        delta = await tab.snapshot(SnapshotOptions(delta=True))
        messages.append({"role": "user", "content": f"Page: 'Todos' {tab.url}\n{delta.text}"})
    await page.locator("li", has_text="Walk the dog").locator("input.toggle").click()
    delta = await tab.snapshot(SnapshotOptions(delta=True))
    observation = f"OK click: done\nPage: 'Todos' {tab.url}\n{delta.text}"
    messages.append({"role": "user", "content": observation})

    rebuilt = page_from_messages(messages)
    fresh = PageView()
    fresh.load_full((await tab.snapshot()).text)

    assert _outline(rebuilt) == _outline(fresh)
    assert rebuilt.nodes[""].texts == fresh.nodes[""].texts
    row = rebuilt.row_of("Walk the dog")
    assert row is not None
    assert [n.checked for n in rebuilt.find("checkbox", within=row.ref)] == [True]
    assert rebuilt.row_of("Pay rent") is not None and rebuilt.row_of("Feed the cat") is None


@pytest.mark.parametrize("mode", ["tools", "text"])
async def test_a_task_runs_through_the_real_loop(
    browser: BrowserSession, fixture_url: str, model: ScriptedModel, mode: str
) -> None:
    result = await run_task(browser, fixture_url, model, DELETE, mode)

    assert result.status == "succeeded", result.reason
    assert result.check_ok, result.seen
    assert result.ok and not result.false_green
    assert len(result.requests) == 2  # click Delete in its row, then done
    assert all(r.native == (mode == "tools") for r in result.requests)
    assert all((r.tools_chars > 0) == (mode == "tools") for r in result.requests)
    assert all(r.chars > r.system_chars + r.tools_chars for r in result.requests)
    assert "Order #1003 deleted" in result.summary
    table = report([result])
    result_line = r"^RESULT agent tasks=1 ok=1 rounds=2 prompt_chars_per_round_p50=\d+ "
    assert re.search(result_line, table, re.M)


async def test_a_claimed_success_the_page_does_not_show_is_a_false_green(
    browser: BrowserSession, fixture_url: str
) -> None:
    def claims_done(match: re.Match[str], situation: object) -> Decision:
        return Decision(done=f"The order of {match['who']} is deleted.")

    with serve_model(ScriptedModel([Skill(DELETE_RE, claims_done)])) as liar:
        result = await run_task(browser, fixture_url, liar, DELETE, "text")

    assert not result.check_ok and not result.ok
    assert "Alan Turing" in result.seen  # the row is still there
    # The loop takes a done after successful actions at the model's word: a false green.
    assert result.false_green == (result.status == "succeeded")
    assert ("FALSE GREEN" in report([result])) == result.false_green


async def test_the_model_asks_for_help_when_the_prompt_lacks_an_action(
    browser: BrowserSession, fixture_url: str
) -> None:
    def wants_teleport(match: re.Match[str], situation: object) -> Decision:
        return Decision(({"action": "teleport", "to": "the end"},))

    with serve_model(ScriptedModel([Skill(DELETE_RE, wants_teleport)])) as model:
        result = await run_task(browser, fixture_url, model, DELETE, "tools")

    assert result.status == "stopped" and not result.ok
    assert "need_help" in result.reason and "no teleport action" in result.reason
    assert result.requests[0].reply.startswith("NEED_HELP:")
