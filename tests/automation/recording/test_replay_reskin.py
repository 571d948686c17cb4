"""Replay on redesigned back offices (the back office of bench/reskinapp.py, in the designs of
fixtures/reskin/designs.json): a page that draws itself after ``load`` is waited for while it
changes, a link's target tells look-alike links apart and reaches a step whose link is gone,
and a select hidden behind a widget is set through the widget that listens to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from automation import Budget, Tab
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario, ScenarioStep
from bench.reskinapp import USERNAME, Store, serve_backoffice
from tests.refs import ref_of

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def backoffice() -> Iterator[tuple[str, Store]]:
    with serve_backoffice() as served:
        yield served


@pytest.fixture
async def base(backoffice: tuple[str, Store], tab: Tab) -> AsyncIterator[str]:
    """The back office's origin, with the tab logged in and the store as seeded."""
    origin, store = backoffice
    store.reset()
    await tab.page.context.clear_cookies()
    await tab.page.context.add_cookies([{"name": "session", "value": "ok", "url": origin}])
    yield origin


async def step_on(
    tab: Tab, url: str, action: str, role: str, name: str, nth: int = 0, **args: Any
) -> ScenarioStep:
    """A step on the element of ``role`` and ``name`` at ``url``, as a run records it."""
    await tab.navigate(url)
    target = await tab.target(ref_of(await tab.snapshot(), role, name, nth))
    return ScenarioStep(action, args, target.identity, url=url)


async def test_a_page_that_draws_itself_after_load_is_waited_for_while_it_changes(
    tab: Tab, base: str
) -> None:
    fill = await step_on(tab, f"{base}/plain/login", "fill", "textbox", "Username",
                         value=USERNAME)  # fmt: skip
    scenario = Scenario(
        "log in", (ScenarioStep("navigate", {"url": f"{base}/plain/login"}), fill),
        base_url=f"{base}/plain/",
    )  # fmt: skip
    await tab.page.goto("about:blank")
    # Looking for a moment only while nothing changes: the deferred app mounts ~1 s after
    # load, and until then only its footer's links are there.
    config = ReplayConfig(locate_wait_ms=300, step_timeout_ms=30_000)
    result = await Replay(tab, scenario, base_url=f"{base}/deferred/", config=config).run()
    assert result.ok, result.to_dict()
    assert await tab.page.input_value("input[name=username]") == USERNAME


async def test_a_page_that_has_stopped_changing_is_not_waited_for_to_the_budgets_end(
    tab: Tab, base: str
) -> None:
    fill = await step_on(tab, f"{base}/plain/customers/new", "fill", "textbox", "Notes",
                         value="x")  # fmt: skip
    scenario = Scenario(
        "notes", (ScenarioStep("navigate", {"url": f"{base}/plain/groups"}), fill),
        base_url=f"{base}/plain/",
    )  # fmt: skip
    config = ReplayConfig(locate_wait_ms=300, step_timeout_ms=600_000)
    budget = Budget(120_000, label="the test")  # far less than the step's budget
    result = await budget.run(Replay(tab, scenario, base_url=f"{base}/plain/", config=config).run())
    assert result.status == "needs_person", result.to_dict()
