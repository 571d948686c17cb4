"""The row a search found, by the value the scenario typed into it.

A run searches orders for "1003" and archives the one row shown.  The Archive it clicked
was the page's only one, so replay took the page's only Archive whatever row it stood in,
and so did the export: where the search found another order (the app's search broken, or
the order gone), both archived that other order and passed.  The row it stood in showed
the value the scenario typed ("Order 1003 Gamma"): it must show it at replay too, as a
parameter's value must (replay abstains; the export fails), while a row that shows it,
wherever it stands, is still found."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import acted

CUSTOMERS = {"1001": "Acme", "1002": "Beta", "1003": "Gamma", "1004": "Delta"}


@dataclass
class Orders:
    archived: list[str] = field(default_factory=list)
    broken: bool = False  # its search shows the first order that does not match

    def reset(self, *, broken: bool = False) -> None:
        self.archived, self.broken = [], broken


@pytest.fixture
def orders() -> Iterator[tuple[Orders, str]]:
    state = Orders()

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            search = parse_qs(urlsplit(self.path).query).get("q", [""])[0]
            shown = [o for o in CUSTOMERS if o not in state.archived]
            if search:
                found = [o for o in shown if search in o or search in CUSTOMERS[o]]
                shown = [o for o in shown if o not in found][:1] if state.broken else found
            rows = "".join(
                f"<tr><td>Order {o}</td><td>{CUSTOMERS[o]}</td><td><form method=post "
                f'action="/orders/{o}/archive"><button>Archive</button></form></td></tr>'
                for o in shown
            )
            self.send(200, (
                "<!doctype html><title>Orders</title><h1>Orders</h1><form action=/orders>"
                f'<label>Search <input name=q value="{search}"></label><button>Search</button>'
                f"</form><table>{rows}</table>"
            ).encode())  # fmt: skip

        def do_POST(self) -> None:
            state.archived.append(self.path.split("/")[2])
            self.send(303, Location="/orders")

    with loopback_app(Handler) as url:
        yield state, url


async def _recorded(tab: Tab, base: str) -> Scenario:
    steps = await acted(tab, f"{base}/orders", [("fill", "textbox", "Search", {"value": "1003"}),
                                                ("click", "button", "Search", {}),
                                                ("click", "button", "Archive", {})])  # fmt: skip
    return Scenario("Archive order 1003", steps, base_url=base + "/")


async def test_a_row_a_search_found_by_a_typed_value_shows_it_at_replay_and_in_the_export(
    tab: Tab, orders: tuple[Orders, str], tmp_path: Path
) -> None:
    state, base = orders
    scenario = await _recorded(tab, base)
    archive = scenario.steps[-1].identity
    assert state.archived == ["1003"] and archive is not None
    assert archive.name_count == 1 and "1003" in archive.row  # the page's only Archive
    code = to_pytest(scenario)

    state.reset(broken=True)  # the search shows order 1001's row instead
    result = await Replay(tab, scenario).run()
    assert not result.ok and state.archived == [], result.to_dict()
    assert result.steps[-1].status == "needs_person", result.to_dict()
    status, out = await run_exported(code, tmp_path / "broken", base, timeout_ms=3_000)
    assert status == 1 and state.archived == [], (state.archived, out)

    state.reset()
    result = await Replay(tab, scenario).run()
    assert result.ok and state.archived == ["1003"], result.to_dict()
    state.reset()
    status, out = await run_exported(code, tmp_path / "working", base)
    assert status == 0 and state.archived == ["1003"], (state.archived, out)
