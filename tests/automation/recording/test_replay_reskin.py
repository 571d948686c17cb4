"""Replay on redesigned back offices (the back office of bench/reskinapp.py, in the designs of
fixtures/reskin/designs.json): a page that draws itself after ``load`` is waited for while it
changes, a link's target tells look-alike links apart and reaches a step whose link is gone,
and a select hidden behind a widget is set through the widget that listens to it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

import pytest
from playwright.async_api import ElementHandle

from automation import Budget, Tab
from automation.agent.intent import PlannerAgent
from automation.errors import ActionFailed
from automation.llm.openai import OpenAICompatPlanner
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario, ScenarioStep
from automation.recording.widgets import set_behind_widget
from bench.reskinapp import USERNAME, Store, serve_backoffice
from tests.bounds import room
from tests.fakellm import ScriptedLLMServer
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


async def replay_on(tab: Tab, base: str, design: str, *steps: ScenarioStep) -> Any:
    """The steps (recorded on the plain design, after opening its start page) replayed on
    ``design``."""
    start = ScenarioStep("navigate", {"url": f"{base}/plain/"})
    scenario = Scenario("reskin", (start, *steps), base_url=f"{base}/plain/")
    await tab.page.goto("about:blank")
    return await Replay(tab, scenario, base_url=f"{base}/{design}/").run()


async def test_links_that_look_alike_are_told_apart_by_where_they_lead(tab: Tab, base: str) -> None:
    # Three "Add" links on the start page; the recorded one is the Customers row's.  The
    # card dashboard has one per card, and a card is not a row.
    add = await step_on(tab, f"{base}/plain/", "click", "link", "Add", 2)
    assert add.identity is not None and add.identity.target == f"{base}/plain/customers/new"
    result = await replay_on(tab, base, "cards", add)
    assert result.ok, result.to_dict()
    assert result.steps[1].strategy == "target"
    assert tab.page.url == f"{base}/cards/customers/new"


async def test_the_same_link_in_a_sidebar_and_a_header_is_either_of_them(
    tab: Tab, base: str
) -> None:
    customers = await step_on(tab, f"{base}/plain/", "click", "link", "Customers", 0)
    result = await replay_on(tab, base, "twin", customers)
    assert result.ok, result.to_dict()
    assert tab.page.url == f"{base}/twin/customers"


async def test_a_submit_keeps_where_its_form_posts(tab: Tab, base: str) -> None:
    save = await step_on(tab, f"{base}/plain/customers/new", "click", "button", "Save")
    assert save.identity is not None
    assert (save.identity.target, save.identity.method) == (
        f"{base}/plain/customers/save", "post"
    )  # fmt: skip


async def test_a_select_and_a_box_behind_widgets_are_set_and_shown(tab: Tab, base: str) -> None:
    url = f"{base}/plain/customers/new"
    tier = await step_on(tab, url, "select_option", "combobox", "Tier", values=["Gold"])
    active = await step_on(tab, url, "check", "checkbox", "Active", checked=True)
    start = ScenarioStep("navigate", {"url": url})
    scenario = Scenario("tier", (start, tier, active), base_url=f"{base}/plain/")
    await tab.page.goto("about:blank")
    result = await Replay(tab, scenario, base_url=f"{base}/widgets/").run()
    assert result.ok, result.to_dict()
    assert "widget listens to" in result.steps[1].result
    assert await tab.page.locator(".combo-value").first.text_content() == "Gold"
    assert await tab.page.is_checked("input[name=active]")


async def widget_page(tab: Tab, base: str, script: str) -> ElementHandle:
    await tab.navigate(f"{base}/widgets/customers/new")
    await tab.page.evaluate(script)
    return await tab.page.query_selector("select[name=tier]")  # type: ignore[return-value]


async def test_a_widget_that_does_not_follow_its_select_is_operated_by_role(
    tab: Tab, base: str
) -> None:
    select = await widget_page(tab, base, "document.querySelector('#f-tier').dataset.follow = 'no'")
    said = await set_behind_widget(tab, select, "select_option", {"values": ["Gold"]}, room())
    assert "in the widget standing for the select" in said
    assert await tab.page.locator(".combo-value").first.text_content() == "Gold"
    assert await tab.page.input_value("select[name=tier]") == "gold"


async def test_a_hidden_select_nothing_shows_fails_instead_of_passing(tab: Tab, base: str) -> None:
    select = await widget_page(tab, base, "document.querySelector('#f-tier + .combo').remove()")
    with pytest.raises(ActionFailed, match="does not show it"):
        await set_behind_widget(tab, select, "select_option", {"values": ["Gold"]}, Budget(20_000))


async def test_a_link_gone_from_the_page_is_followed_to_where_it_led_and_verified(
    tab: Tab, base: str
) -> None:
    # The menu design has no Add link on its start page (Customers sits in a collapsed
    # menu group, and Add on the list).
    add = await step_on(tab, f"{base}/plain/", "click", "link", "Add", 2)
    name = await step_on(tab, f"{base}/plain/customers/new", "fill", "textbox", "Name",
                         value="Grace")  # fmt: skip
    result = await replay_on(tab, base, "menus", add, name)
    assert result.ok, result.to_dict()
    assert result.steps[1].strategy == "direct"
    assert "customers/new" in result.steps[1].changes[0]
    assert tab.page.url == f"{base}/menus/customers/new"
    assert await tab.page.input_value("input[name=name]") == "Grace"


async def test_a_link_followed_directly_must_lead_to_the_next_steps_element(
    tab: Tab, base: str
) -> None:
    add = await step_on(tab, f"{base}/plain/", "click", "link", "Add", 0)  # Groups' Add
    notes = await step_on(tab, f"{base}/plain/customers/new", "fill", "textbox", "Notes",
                          value="x")  # fmt: skip
    start = ScenarioStep("navigate", {"url": f"{base}/plain/"})
    scenario = Scenario("reskin", (start, add, notes), base_url=f"{base}/plain/")
    config = ReplayConfig(locate_wait_ms=300)
    result = await Replay(tab, scenario, base_url=f"{base}/menus/", config=config).run()
    assert result.status == "needs_person", result.to_dict()
    assert result.steps[1].status == "needs_person"


def act(**fields: object) -> str:
    return f"<action>{json.dumps(fields)}</action>"


async def test_with_an_llm_profile_an_agent_reaches_the_intent_and_it_is_shown_as_a_heal(
    tab: Tab, base: str, llm_server: ScriptedLLMServer
) -> None:
    add = await step_on(tab, f"{base}/plain/", "click", "link", "Add", 2)
    assert add.identity is not None
    add = replace(add, identity=replace(add.identity, target=""))  # stored before targets
    name = await step_on(tab, f"{base}/plain/customers/new", "fill", "textbox", "Name",
                         value="Grace")  # fmt: skip
    start = ScenarioStep("navigate", {"url": f"{base}/plain/"})
    scenario = Scenario("reskin", (start, add, name), base_url=f"{base}/plain/")
    llm_server.script(
        act(action="navigate", url=f"{base}/menus/customers/new")
        + act(action="done", summary="opened the form to add a customer")
    )
    agent = PlannerAgent(OpenAICompatPlanner(base_url=llm_server.base_url, model="m"))
    await tab.page.goto("about:blank")
    config = ReplayConfig(locate_wait_ms=300)
    result = await Replay(tab, scenario, base_url=f"{base}/menus/", config=config,
                          agent=agent).run()  # fmt: skip
    assert result.ok, result.to_dict()
    step = result.steps[1]
    assert step.strategy == "agent"
    assert f"went to {base}/menus/customers/new" in step.changes[0], step.changes
    assert "needs a person's confirmation" in step.changes
    # It only went to an address: that is proposed as where the link leads (on the
    # address the scenario was recorded on), for a person to confirm.
    assert step.heal == "proposed" and step.healed is not None
    assert step.healed["target"] == f"{base}/plain/customers/new"
    assert step.healed["name"] == add.identity.name
    assert await tab.page.input_value("input[name=name]") == "Grace"
    sent = llm_server.requests[0]["messages"][-1]["content"]
    assert "open /plain/customers/new" not in sent  # a step stored without a target
    assert "'Add'" in json.dumps(llm_server.requests[0]["messages"])


async def test_an_agent_that_does_not_reach_the_next_steps_element_leaves_it_to_a_person(
    tab: Tab, base: str, llm_server: ScriptedLLMServer
) -> None:
    add = await step_on(tab, f"{base}/plain/", "click", "link", "Add", 2)
    assert add.identity is not None
    add = replace(add, identity=replace(add.identity, target=""))
    name = await step_on(tab, f"{base}/plain/customers/new", "fill", "textbox", "Name",
                         value="Grace")  # fmt: skip
    start = ScenarioStep("navigate", {"url": f"{base}/plain/"})
    scenario = Scenario("reskin", (start, add, name), base_url=f"{base}/plain/")
    llm_server.script(act(action="done", summary="it is already there"))
    agent = PlannerAgent(OpenAICompatPlanner(base_url=llm_server.base_url, model="m"))
    config = ReplayConfig(locate_wait_ms=300)
    result = await Replay(tab, scenario, base_url=f"{base}/menus/", config=config,
                          agent=agent).run()  # fmt: skip
    assert result.status == "needs_person", result.to_dict()
    assert await tab.page.query_selector("input[name=name]") is None


async def test_a_filter_behind_a_widget_that_sends_its_form_is_verified_on_the_next_page(
    tab: Tab, base: str
) -> None:
    url = f"{base}/plain/customers"
    tier = await step_on(tab, url, "select_option", "combobox", "Tier", values=["Silver"])
    start = ScenarioStep("navigate", {"url": url})
    scenario = Scenario("filter", (start, tier), base_url=f"{base}/plain/")
    await tab.page.goto("about:blank")
    result = await Replay(tab, scenario, base_url=f"{base}/widgets/").run()
    assert result.ok, result.to_dict()
    assert tab.page.url.endswith("tier=silver")
    assert await tab.page.locator(".combo-value").first.text_content() == "Silver"
