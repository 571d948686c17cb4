"""The questions a replay asks a page on a step's way (does it ask to sign in, is the
step's element there) wait for the page's answer, within what a step may take: a page
slow to answer (its script busy for seconds: a heavy app, a loaded machine) is not taken
to show no sign-in form, nor its element to be missing, because a fixed time ran out.
Read as "no", the first made a replay's sign-in step fail as "sent to the sign-in page"
and the second did a person's step for them."""

from __future__ import annotations

import asyncio

from automation import Tab
from automation.recording.relogin import asks_sign_in
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario, ScenarioStep
from tests.bounds import room
from tests.busypage import busy_once
from tests.refs import ref_of


async def test_a_page_slow_to_answer_is_answered_not_guessed(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/signin/login.html", budget=room())
    target = await tab.target(ref_of(await tab.snapshot(), "textbox", "User name"))
    assert target.identity is not None
    step = ScenarioStep("fill", {"value": "ada"}, target.identity)
    replay = Replay(tab, Scenario("busy", (step,)), env={})
    await tab.page.evaluate(busy_once(5_500))
    asked, found = await asyncio.gather(
        asks_sign_in(replay, room()), replay.findable(step, room()), return_exceptions=True
    )
    assert asked is True, "the page shows a sign-in form"
    assert found is True, f"the step's element is there: {found!r}"
