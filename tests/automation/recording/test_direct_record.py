"""A link in a record's row that replay follows to its address, the link not on the page,
leads to that record, or replay does not go on there.

A person clicked Edit in Acme's row (``/edit/1``) and raised the credit limit.  Another
day the list held other data: Acme on the second page under another id, and id 1 now
Umbrella's.  Replay, the link not on the page, went to ``/edit/1`` directly and saved
Umbrella's limit, and passed.  Now the page a record's link led to must show that
record (the words that told its row apart); where it does not (Umbrella's), the step
waits for a person, nothing saved; where it does (Acme moved to page 2 under its own id),
replay goes there and passes."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from automation import Tab
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from tests.automation.recording.test_recorder import click_center
from tests.net import QuietHandler, loopback_app

SHORT = ReplayConfig(locate_wait_ms=1_000)
# Each day's customers, by page: (id, name).
DAYS = {
    "as recorded": [[(1, "Acme"), (2, "Globex"), (3, "Initech")], [(4, "Umbrella")]],
    "Acme on page 2": [[(5, "Acme Inc"), (2, "Globex"), (3, "Initech")],
                       [(1, "Acme"), (4, "Umbrella")]],
    "other data": [[(5, "Acme Inc"), (2, "Globex"), (3, "Initech")],
                   [(7, "Acme"), (1, "Umbrella")]],
}  # fmt: skip


@pytest.fixture
def app() -> Iterator[tuple[dict, str]]:
    state: dict = {"day": "as recorded", "saved": []}

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            pages = DAYS[state["day"]]
            if parts.path.startswith("/edit/"):
                key = int(parts.path.rsplit("/", 1)[1])
                who = dict(c for page in pages for c in page).get(key, "nobody")
                body = (f"<h1>Edit customer</h1><p>Name: <b>{who}</b></p><form method=post>"
                        "<label>Credit limit <input name=limit value=500></label>"
                        "<button>Save</button></form>")  # fmt: skip
            else:
                page = int(parse_qs(parts.query).get("page", ["1"])[0])
                rows = "".join(f"<tr><td>{name}</td><td><a href=/edit/{key}>Edit</a></td></tr>"
                               for key, name in pages[page - 1])  # fmt: skip
                body = (f"<h1>Customers</h1><table><tr><th>Name</th><th></th></tr>{rows}"
                        "</table><a href=/customers?page=2>Next page</a>")  # fmt: skip
            self.send(200, f"<!doctype html><title>Back office</title>{body}".encode())

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"])).decode()
            state["saved"].append((self.path, parse_qs(body)["limit"][0]))
            self.send(303, Location=f"{self.path}?saved=1")

    with loopback_app(Handler) as url:
        yield state, url


async def test_a_record_s_link_followed_directly_leads_to_that_record(
    tab: Tab, app: tuple[dict, str]
) -> None:
    state, base = app
    await tab.navigate(f"{base}/customers")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "tr:nth-child(2) a")
    await tab.page.wait_for_url("**/edit/1")
    await click_center(tab.page, "input[name=limit]")
    await tab.page.keyboard.press("Control+A")
    await tab.page.keyboard.type("900")
    await click_center(tab.page, "form > button")
    await tab.page.wait_for_url("**saved=1")
    scenario = Scenario("Raise Acme's limit", tuple(await recorder.stop()), base_url=f"{base}/")
    assert state["saved"] == [("/edit/1", "900")]
    for day, saved in {
        "as recorded": [("/edit/1", "900")],
        "Acme on page 2": [("/edit/1", "900")],  # gone from the list: its address, still Acme's
        "other data": [],  # /edit/1 is Umbrella's now
    }.items():
        state.update(day=day, saved=[])
        result = await Replay(tab, scenario, config=SHORT).run()
        assert (result.ok, state["saved"]) == (bool(saved), saved), (day, result.to_dict())
