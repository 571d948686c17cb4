"""A link told by a parameter's value is not followed to its recorded address when no row
shows this replay's value: the address is the recorded record's, and the form it leads to
is every record's form (real Chromium, a loopback back office whose data is the truth)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from html import escape
from urllib.parse import parse_qs, urlsplit

import pytest

from automation import Tab
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario, ScenarioStep
from tests.net import QuietHandler, loopback_app
from tests.refs import ref_of

pytestmark = pytest.mark.browser

PEOPLE = [("Ann Lee", "Bronze"), ("Bo Zhang", "Silver"), ("Cy Diaz", "Gold")]


class _Customers(QuietHandler):
    """``/customers?q=…``: the customers whose name holds the words searched, each row
    with an Edit link to ``/edit/<i>``; ``/edit/<i>``: the record's note, saved by POST
    into ``notes`` (the truth), then back to the list."""

    notes: dict[int, str] = {}
    lock = threading.Lock()

    def _page(self, body: str) -> None:
        self.send(200, f"<!doctype html><html><body>{body}</body></html>".encode())

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/customers":
            q = parse_qs(parts.query).get("q", [""])[0].lower().split()
            rows = "".join(
                f"<tr><td>{escape(name)}</td><td>{tier}</td>"
                f'<td><a href="/edit/{i}">Edit</a></td></tr>'
                for i, (name, tier) in enumerate(PEOPLE)
                if all(word in name.lower().split() for word in q)
            )  # fmt: skip
            self._page(
                '<h1>Customers</h1><form action="/customers"><label>Find '
                '<input name="q"></label><button>Search</button></form>'
                f"<table><tr><th>Name</th><th>Tier</th><th></th></tr>{rows}</table>"
            )
            return
        i = int(parts.path.rsplit("/", 1)[1])
        self._page(
            f'<h1>Edit customer</h1><form method="post" action="/edit/{i}">'
            '<label>Note <input name="note"></label><button>Save changes</button></form>'
        )

    def do_POST(self) -> None:
        i = int(self.path.rsplit("/", 1)[1])
        note = self.posted().get("note", "")
        with self.lock:
            self.notes[i] = note
        self.send(303, Location="/customers")


@pytest.fixture(scope="module")
def customers() -> Iterator[str]:
    with loopback_app(_Customers) as url:
        yield url


@pytest.fixture
async def scenario(tab: Tab, customers: str) -> AsyncIterator[Scenario]:
    """Ann Lee's note written, as a run records it: her name searched, the Edit of her
    row, the note, the save; her name made the parameter ``who`` (carried into the row
    the Edit link is told by)."""

    async def step(action: str, role: str, name: str, **args: str) -> ScenarioStep:
        target = await tab.target(ref_of(await tab.snapshot(), role, name))
        return ScenarioStep(action, args, target.identity, url=tab.url)

    await tab.navigate(f"{customers}/customers")
    find = await step("fill", "textbox", "Find", value="Ann Lee")
    search = await step("click", "button", "Search")
    await tab.navigate(f"{customers}/customers?q=Ann+Lee")
    edit = await step("click", "link", "Edit")
    await tab.navigate(f"{customers}/edit/0")
    note = await step("fill", "textbox", "Note", value="called back")
    save = await step("click", "button", "Save changes")
    start = ScenarioStep("navigate", {"url": f"{customers}/customers"})
    recorded = Scenario("note", (start, find, search, edit, note, save), base_url=customers)
    made = recorded.with_param(1, "who")
    assert made.steps[3].identity is not None and "${who}" in made.steps[3].identity.row
    _Customers.notes = {}
    await tab.page.goto("about:blank")
    yield made


async def test_a_row_no_search_shows_is_not_reached_by_its_recorded_address(
    tab: Tab, scenario: Scenario
) -> None:
    """No customer is "Nobody Here": the search shows no row, so no Edit link.  The
    replay went to the Edit link's recorded address (Ann Lee's record), found the Note
    field there, saved the note on Ann's record and passed."""
    config = ReplayConfig(locate_wait_ms=500)
    result = await Replay(tab, scenario, params={"who": "Nobody Here"}, config=config).run()
    assert not result.ok, result.to_dict()
    assert result.steps[3].status in ("needs_person", "failed"), result.steps[3]
    assert result.steps[3].strategy != "direct", result.steps[3]
    assert _Customers.notes == {}, f"a record was changed: {_Customers.notes}"


async def test_a_row_the_search_shows_is_edited(tab: Tab, scenario: Scenario) -> None:
    result = await Replay(tab, scenario, params={"who": "Cy Diaz"}).run()
    assert result.ok, result.to_dict()
    assert _Customers.notes == {2: "called back"}
