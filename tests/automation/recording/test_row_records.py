"""A row's control acts on that row's record alone, in replay and in its pytest export.

Recorded on a day Globex was the only customer listed, "Archive" in its row had no other
"Archive" to be told from: no word of the row was kept to tell it, and the next day, with
only Acme listed, replay and the export archived Acme and passed. Now a row that holds
half of the recorded row's words or fewer (its control's own name aside) is another
record's: replay waits for a person, the export fails; a row of which a word changed (its
status) is still the record's, and among other rows it is found.

Recorded among other rows, Globex's row was told by "Globex": the next day, Globex gone
and "New Globex" of York listed, its row still held the word, and replay and the export
archived New Globex.  Now the text (cell) that holds the word that told the row apart
must read as it did (its numbers aside: they are the record's own, and told apart too)."""

from __future__ import annotations

import html
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import acted

GLOBEX = ("Globex", "York", "Active")
LISTS = {
    "the same list": ([GLOBEX], "Globex"),
    "among others": ([("Acme", "Leeds", "Active"), GLOBEX, ("Initech", "Bath", "Active")],
                     "Globex"),
    "its status changed": ([("Globex", "York", "Overdue")], "Globex"),
    "another alone": ([("Acme", "Leeds", "Active")], None),
    "others only": ([("Acme", "Leeds", "Active"), ("Globe Trotters", "York", "Active")], None),
}  # fmt: skip
# A step that finds no element waits this long for one to appear (a refused case's).
SHORT = ReplayConfig(locate_wait_ms=1_000)
OTHERS = [("Acme", "Leeds", "Active"), ("Initech", "Bath", "Active")]
AMONG_OTHERS = {
    "the same list": ([("Globex (2)", "York", "Active"), *OTHERS], "Globex (2)"),
    "rows reordered": ([*OTHERS, ("Globex (2)", "York", "Active")], "Globex (2)"),
    "a word more where its name stood": ([*OTHERS, ("New Globex (2)", "York", "Active")], None),
    "its name renamed": ([*OTHERS, ("Globex Inc (2)", "York", "Active")], None),
}  # fmt: skip


@pytest.fixture
def customers() -> Iterator[tuple[dict[str, list], str]]:
    state: dict[str, list] = {"listed": [GLOBEX], "archived": []}

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            rows = "".join(
                f"<tr><td>{html.escape(name)}</td><td>{city}</td><td>{status}</td><td>"
                f"<form method=post action='/archive/{html.escape(name)}'>"
                "<button>Archive</button></form></td></tr>"
                for name, city, status in state["listed"]
            )
            self.send(200, f"<!doctype html><title>Customers</title><h1>Customers</h1>"
                           f"<table><tr><th>Name</th><th>City</th><th>Status</th><th></th></tr>"
                           f"{rows}</table>".encode())  # fmt: skip

        def do_POST(self) -> None:
            state["archived"].append(unquote(self.path.rsplit("/", 1)[-1]))
            self.send(303, Location="/customers/")

    with loopback_app(Handler) as url:
        yield state, url


async def test_a_sole_row_s_control_acts_on_its_record_alone(
    tab: Tab, customers: tuple[dict[str, list], str], tmp_path: Path
) -> None:
    state, base = customers
    steps = await acted(tab, f"{base}/customers/", [("click", "button", "Archive", {})])
    assert state["archived"] == ["Globex"]
    await _replayed(tab, state, base, Scenario("Archive Globex", steps, base_url=base + "/"),
                    LISTS, tmp_path)  # fmt: skip


async def test_a_row_whose_telling_words_gained_a_word_is_another_record_s(
    tab: Tab, customers: tuple[dict[str, list], str], tmp_path: Path
) -> None:
    state, base = customers
    state["listed"] = AMONG_OTHERS["the same list"][0]
    steps = await acted(tab, f"{base}/customers/", [("click", "button", "Archive", {})])
    assert state["archived"] == ["Globex (2)"]
    click = steps[1].identity
    assert click is not None and click.row_words, click  # told from the others' rows
    scenario = Scenario("Archive Globex", steps, base_url=base + "/")
    await _replayed(tab, state, base, scenario, AMONG_OTHERS, tmp_path)


async def _replayed(
    tab: Tab, state: dict[str, list], base: str, scenario: Scenario,
    lists: dict[str, tuple[list, str | None]], tmp_path: Path,
) -> None:  # fmt: skip
    """Replay and export of ``scenario`` on each of ``lists``: each archives the record
    named, or fails archiving nothing."""
    code = to_pytest(scenario)
    for n, (label, (listed, archived)) in enumerate(lists.items()):
        state.update(listed=listed, archived=[])
        result = await Replay(tab, scenario, config=SHORT).run()
        assert result.ok == bool(archived), (label, result.to_dict())
        assert state["archived"] == ([archived] if archived else []), label
        state.update(archived=[])
        status, out = await run_exported(code, tmp_path / str(n), base, timeout_ms=3_000)
        assert (status == 0) == bool(archived), (label, out)
        assert state["archived"] == ([archived] if archived else []), label
