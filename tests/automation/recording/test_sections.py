"""Alike controls told apart by the title each sits under, and nothing else: a profile's
addresses, each a title (a heading, bold or larger text, a description list's term, a
disclosure's summary, a table's caption or a group's header row) followed by its text and
its Delete, side by side in one container (no row or card of their own, or rows and cards
alike word for word).  Replay and the export act under the title recorded wherever
that part now stands, and under no other when it is gone; a parameter's value in the
title is shown whole there.  Before, the container's first title was taken as the title
of everything in it (every Delete sat under "Home address" too), so replay picked the
Delete by where it stood and the export took the first (or, for bold titles and terms,
the recorded section was "Home address"): with Work moved first or gone, both deleted
another address and passed."""

from __future__ import annotations

import html
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario, ScenarioStep
from tests.automation.recording.test_recorder import click_center
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

SHORT = ReplayConfig(locate_wait_ms=1_000)
# How a page sets its parts side by side: each part's title, text and Delete form (``{}``:
# the title, the form), and what holds them.
LAYOUTS = {
    "h2 in main": ("<h2>{}</h2><p>1 Park Row, Leeds</p>{}", "<main>", "</main>"),
    "h2 in a div": ("<h2>{}</h2><p>1 Park Row, Leeds</p>{}", "<div class=parts>", "</div>"),
    "h3 under a section's h2": (
        "<h3>{}</h3><p>1 Park Row, Leeds</p>{}",
        "<section><h2>Addresses</h2>",
        "</section>",
    ),
    "role=heading": (
        "<div role=heading aria-level=2>{}</div><p>1 Park Row, Leeds</p>{}",
        "<main>",
        "</main>",
    ),
    "bold div": ("<div class=title><b>{}</b></div><p>1 Park Row, Leeds</p>{}", "<div>", "</div>"),
    "strong in a p": ("<p><strong>{}</strong></p><p>1 Park Row, Leeds</p>{}", "<div>", "</div>"),
    "larger span": (
        "<span style='font-size: 20px'>{}</span><p>1 Park Row, Leeds</p>{}",
        "<div>",
        "</div>",
    ),
    "dl": ("<dt>{}</dt><dd>1 Park Row, Leeds {}</dd>", "<dl>", "</dl>"),
    "details": (
        "<details open><summary>{}</summary><p>1 Park Row, Leeds</p>{}</details>", "<div>", "</div>"
    ),
    "labelled regions": (
        "<div role=region aria-label='{}'><p>1 Park Row, Leeds</p>{}</div>", "<div>", "</div>"
    ),
    # Rows alike word for word, under a header row of their group, or a caption.
    "grouped table": (
        "<tbody><tr><th colspan=2>{}</th></tr><tr><td>1 Park Row, Leeds</td><td>{}</td></tr>"
        "</tbody>", "<table>", "</table>",
    ),
    "captioned tables": (
        "<table><caption>{}</caption><tr><td>1 Park Row, Leeds</td><td>{}</td></tr></table>",
        "<div>", "</div>",
    ),
    "row headers": (
        "<tr><th scope=row>{}</th><td>1 Park Row, Leeds</td><td>{}</td></tr>", "<table>", "</table>"
    ),
}  # fmt: skip


class _Parts(QuietHandler):
    """Parts of a page, each a title, a line of text and a Delete posting its title
    (numbered ids, as many apps number them: by place), set out as ``layout`` says.  A
    search box above them (what it finds, all of them still show)."""

    parts: list[str] = []
    layout = LAYOUTS["h2 in main"]

    def do_GET(self) -> None:
        part, opened, closed = self.layout
        parts = "".join(
            part.format(
                html.escape(title),
                "<form method=post action=/delete style='display: inline'>"
                f'<input type=hidden name=which value="{html.escape(title)}">'
                f"<button id=delete-{at}>Delete</button></form>",
            )
            for at, title in enumerate(self.parts)
        )
        self.send(200, (
            "<!doctype html><title>Profile</title><h1>Profile</h1>"
            "<form action=/><input name=q aria-label=Search><button>Search</button></form>"
            f"{opened}{parts}{closed}"
        ).encode())  # fmt: skip

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        which = parse_qs(body)["which"][0]
        type(self).parts = [title for title in self.parts if title != which]
        self.send(303, Location="/?msg=Deleted")


async def _deletes(tab: Tab, app: str, title: str, *, searched: bool = False) -> Scenario:
    """A person deletes the part headed ``title`` (``searched``: after searching for
    it); the scenario checks no error shows."""
    await tab.navigate(f"{app}/")
    recorder = Recorder(tab)
    await recorder.start()
    if searched:
        await click_center(tab.page, "input[name=q]")
        await tab.page.keyboard.type(title)
        await tab.page.keyboard.press("Enter")
        await tab.page.wait_for_url("**q=*")
    at = _Parts.parts.index(title)
    await click_center(tab.page, f"#delete-{at}")
    await tab.page.wait_for_url("**msg=*")
    steps = [*await recorder.stop(), ScenarioStep("expect", {"kind": "no_error"})]
    return Scenario("Delete a part", tuple(steps), base_url=app)


@pytest.mark.parametrize("layout", list(LAYOUTS))
async def test_a_delete_is_found_under_its_title_wherever_that_part_stands(
    tab: Tab, tmp_path: Path, layout: str
) -> None:
    _Parts.layout = LAYOUTS[layout]
    _Parts.parts = ["Home address", "Work address", "Billing address"]
    with loopback_app(_Parts) as app:
        scenario = await _deletes(tab, app, "Work address")
        click = scenario.steps[-2]
        assert click.identity is not None and click.identity.name_count == 3, click.identity
        # (The row headers' row holds its title: the row tells it.)
        told = click.identity.row if layout == "row headers" else click.identity.section
        assert told.startswith("Work address"), click.identity
        code = to_pytest(scenario)
        # Work first now: its Delete is where Home's was recorded, numbered as it was.
        moved = ["Work address", "Home address", "Billing address"]
        _Parts.parts = list(moved)
        result = await Replay(tab, scenario, config=SHORT).run()
        assert result.ok, result.to_dict()
        assert _Parts.parts == ["Home address", "Billing address"]
        _Parts.parts = list(moved)
        status, out = await run_exported(code, tmp_path / "moved", app, {}, timeout_ms=3_000)
        assert status == 0 and "1 passed" in out, out
        assert _Parts.parts == ["Home address", "Billing address"], out
        # Gone: no other part's Delete is taken for it.
        left = ["Home address", "Billing address"]
        _Parts.parts = list(left)
        result = await Replay(tab, scenario, config=SHORT).run()
        gone = "another row" if layout == "row headers" else "another section"
        assert not result.ok and gone in result.reason, result.to_dict()
        assert _Parts.parts == left
        status, out = await run_exported(code, tmp_path / "gone", app, {}, timeout_ms=3_000)
        assert status != 0, out
        assert layout == "row headers" or "no section reads as 'Work address'" in out, out
        assert _Parts.parts == left, out


async def test_a_value_given_for_a_heading_is_acted_on_only_under_that_heading(
    tab: Tab, tmp_path: Path
) -> None:
    """The heading was a parameter's value (a person's name typed in a search): given
    "Carl Jung", his part's Delete, wherever it stands; given "Ann Lee" where only Ann
    Leeds is, none."""
    _Parts.layout = LAYOUTS["h2 in main"]
    _Parts.parts = ["Ada Lovelace", "Bob Smith"]
    with loopback_app(_Parts) as app:
        recorded = await _deletes(tab, app, "Ada Lovelace", searched=True)
        typed = next(i for i, step in enumerate(recorded.steps) if step.action == "fill")
        scenario = recorded.with_param(typed, "name")
        click = scenario.steps[-2]
        assert click.identity is not None and click.identity.section == "${name}", click
        code = to_pytest(scenario)
        everyone = ["Bob Smith", "Ann Leeds", "Carl Jung"]
        for given, left in (("Carl Jung", ["Bob Smith", "Ann Leeds"]), ("Ann Lee", everyone)):
            _Parts.parts = list(everyone)
            result = await Replay(tab, scenario, params={"name": given}, config=SHORT).run()
            assert result.ok == (left != everyone), result.to_dict()
            assert _Parts.parts == left
            _Parts.parts = list(everyone)
            env = {"TABWRIGHT_PARAM_name": given}
            status, out = await run_exported(
                code, tmp_path / given.replace(" ", "-"), app, env, timeout_ms=3_000
            )
            assert (status == 0) == (left != everyone), out
            assert _Parts.parts == left, out
