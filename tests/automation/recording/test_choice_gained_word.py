"""A choice whose name gained a word picks another thing: replay does not take it for the
one chosen, however alike the rest of its name reads.

Plan cards, each a radio button labelled by its plan and a description ("Standard,
billed monthly"); a person chose Standard.  Another day only "Standard (legacy)" and
Premium were offered: the recorded path found the legacy card, its name 0.94 alike,
and replay chose it and passed.  Now a choice whose name holds a word the recorded one
lacked is another choice: replay waits for a person, nothing saved; where Standard is
offered beside the legacy one, it is chosen."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs

import pytest

from automation import Tab
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from tests.automation.recording.test_recorder import click_center
from tests.net import QuietHandler, loopback_app

SHORT = ReplayConfig(locate_wait_ms=1_000)
DAYS = {
    "as recorded": [("std", "Standard"), ("pre", "Premium")],
    "legacy first": [("old", "Standard (legacy)"), ("std", "Standard"), ("pre", "Premium")],
    "legacy only": [("old", "Standard (legacy)"), ("pre", "Premium")],
}


@pytest.fixture
def app() -> Iterator[tuple[dict, str]]:
    state: dict = {"day": "as recorded", "saved": []}

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            cards = "".join(
                "<label class=card style='display: inline-block'>"
                f"<input type=radio name=plan value={value}><b>{plan}</b>"
                "<br><span>billed monthly</span></label>"
                for value, plan in DAYS[state["day"]]
            )
            self.send(200, (
                "<!doctype html><title>Plan</title><h1>Customer Acme</h1><form method=post>"
                f"<fieldset><legend>Plan</legend>{cards}</fieldset><button>Save</button></form>"
            ).encode())  # fmt: skip

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"])).decode()
            state["saved"].append(parse_qs(body)["plan"][0])
            self.send(303, Location="/plan?saved=1")

    with loopback_app(Handler) as url:
        yield state, url


async def test_a_plan_that_gained_a_word_is_another_plan(tab: Tab, app: tuple[dict, str]) -> None:
    state, base = app
    await tab.navigate(f"{base}/plan")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "label.card:nth-of-type(1)")
    await click_center(tab.page, "form > button")
    await tab.page.wait_for_url("**saved=1")
    scenario = Scenario("Put Acme on Standard", tuple(await recorder.stop()), base_url=f"{base}/")
    assert state["saved"] == ["std"]
    for day, saved in {"as recorded": ["std"], "legacy first": ["std"], "legacy only": []}.items():
        state.update(day=day, saved=[])
        result = await Replay(tab, scenario, config=SHORT).run()
        assert (result.ok, state["saved"]) == (bool(saved), saved), (day, result.to_dict())
