"""A box in a table whose column header says what it is (a permissions matrix: a row
per role, a column per right, each box unnamed) is the box under that header, in replay
and in its pytest export.

Found by where it stood in its row, a box recorded under "Write" was, another day, the
box under whatever header stood there: a column "Export" added before "Write" had replay
grant Editor the export and pass.  Now a box whose name does not tell it from its row's
others keeps its column's header; under another header it is another box: found under
its own where the columns moved, refused where its column is gone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from automation import Tab
from automation.browser.identity import COLUMN_JS
from automation.recording.export import to_pytest
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from tests.automation.recording.test_recorder import click_center
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

SHORT = ReplayConfig(locate_wait_ms=1_000)
ROLES = ("Admin", "Editor", "Viewer")
DAYS = {
    "as recorded": ("Read", "Write", "Delete"),
    "a column added before it": ("Read", "Export", "Write", "Delete"),
    "a column before it gone": ("Write", "Delete"),
    "its column gone": ("Read", "Export", "Delete"),
}


def matrix(rights: tuple[str, ...], aria: bool) -> str:
    """The roles' rights, a box per role and right, none of them named; ``aria``: drawn
    as an ARIA grid of divs instead of a table."""
    if aria:
        head = "".join(f"<div role=columnheader>{r}</div>" for r in ("Role", *rights))
        rows = "".join(
            f"<div role=row><div role=rowheader>{role}</div>"
            + "".join(f"<div role=gridcell><input type=checkbox name=perm value={role}.{r}></div>"
                      for r in rights)
            + "</div>"
            for role in ROLES
        )  # fmt: skip
        grid = f"<div role=grid><div role=row>{head}</div>{rows}</div>"
    else:
        head = "".join(f"<th>{r}</th>" for r in ("Role", *rights))
        rows = "".join(
            f"<tr><th scope=row>{role}</th>"
            + "".join(f"<td><input type=checkbox name=perm value={role}.{r}></td>" for r in rights)
            + "</tr>"
            for role in ROLES
        )  # fmt: skip
        grid = f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    return (
        "<!doctype html><title>Permissions</title><h1>Permissions</h1>"
        f"<form method=post>{grid}<button>Save</button></form>"
    )


@pytest.fixture
def app() -> Iterator[tuple[dict, str]]:
    state: dict = {"rights": DAYS["as recorded"], "aria": False, "saved": []}

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self.send(200, matrix(state["rights"], state["aria"]).encode())

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"])).decode()
            state["saved"].append(sorted(parse_qs(body).get("perm", [])))
            self.send(303, Location="/roles?saved=1")

    with loopback_app(Handler) as url:
        yield state, url


@pytest.mark.parametrize("aria", [False, True], ids=["table", "grid"])
async def test_a_box_is_ticked_under_the_header_it_was_ticked_under(
    tab: Tab, app: tuple[dict, str], tmp_path: Path, aria: bool
) -> None:
    state, base = app
    state["aria"] = aria
    await tab.navigate(f"{base}/roles")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "input[value='Editor.Write']")
    await click_center(tab.page, "form > button")
    await tab.page.wait_for_url("**saved=1")
    steps = await recorder.stop()
    assert state["saved"] == [["Editor.Write"]]
    tick = steps[1].identity
    assert tick is not None and tick.column == "Write", tick
    scenario = Scenario("Let editors write", tuple(steps), base_url=f"{base}/")
    code = to_pytest(scenario)
    for n, (day, rights) in enumerate(DAYS.items()):
        granted = [["Editor.Write"]] if "Write" in rights else []
        for run in ("replay", "export"):
            state.update(rights=rights, saved=[])
            if run == "replay":
                passed = (await Replay(tab, scenario, config=SHORT).run()).ok
            else:
                status, _ = await run_exported(code, tmp_path / str(n), base, timeout_ms=3_000)
                passed = status == 0
            assert (passed, state["saved"]) == (bool(granted), granted), (day, run)


HEADERS = """<table id=t1><thead><tr><th colspan=3>Rights</th></tr>
<tr><th>Role</th><th>Read</th><th>Write</th></tr></thead>
<tbody><tr><th>Editor</th><td><i id=a1></i></td><td><i id=a2></i></td></tr></tbody></table>
<table id=t2><tr><th>Role</th><th colspan=2>Read</th><th>Write</th></tr>
<tr><td>Editor</td><td>own</td><td><i id=b1></i></td><td><i id=b2></i></td></tr></table>
<table id=t3><tr><th id=h-del>Delete</th><th>Write</th></tr>
<tr><td headers=h-del><i id=c1></i></td><td><i id=c2></i></td></tr></table>
<table id=t4><tr><td>Editor</td><td><i id=d1></i></td></tr></table>
<div role=grid><div role=row><span role=columnheader aria-colindex=1>Role</span>
<span role=columnheader aria-colindex=3>Export</span></div>
<div role=row><span role=gridcell aria-colindex=3><i id=e1></i></span></div></div>
<p><i id=f1></i></p>"""


async def test_a_column_is_read_as_a_person_reads_it_down_from_its_header(tab: Tab) -> None:
    await tab.page.set_content(HEADERS)
    read = f"(e) => {{ {COLUMN_JS}\n return columnOf(e); }}"
    columns = {
        where: await tab.page.locator(f"#{where}").evaluate(read)
        for where in ("a1", "a2", "b1", "b2", "c1", "c2", "d1", "e1", "f1")
    }
    assert columns == {
        "a1": "Read", "a2": "Write",  # a header of two rows: its last
        "b1": "Read", "b2": "Write",  # a header cell over two columns
        "c1": "Delete", "c2": "Write",  # a cell's headers attribute first
        "d1": "", "f1": "",  # a table with no header row; no table
        "e1": "Export",  # an ARIA grid's column by its aria-colindex
    }  # fmt: skip
