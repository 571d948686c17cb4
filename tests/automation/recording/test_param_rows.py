"""A parameter carried into a row names the record its step acts on: a replay (or its
exported test) given a value acts only in a row that shows that value whole, never in the
row of a near name ("Ann Lee" is not "Ann Leeds", "Ann" is not "Anna"), whether the
row's button is the page's only one (a search narrowed the table) or one of several; and
so in a tile, and on the page a search opened under the name's heading."""

from __future__ import annotations

import html
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

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


_SEARCH = "<form action=/people><input name=q aria-label=Search><button>Search</button></form>"


class _People(QuietHandler):
    """People, each a row (Name, Dept, City, Status) with a Delete posting the name; the
    search narrows the table to the names holding what was searched for, unless
    ``narrows`` is off (a table that shows everyone)."""

    people: list[str] = []
    narrows = True

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)
        term = query.get("q", [""])[0].strip().lower() if self.narrows else ""
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>Sales</td><td>Leeds</td><td>Active</td>"
            "<td><form method=post action=/delete>"
            f'<input type=hidden name=who value="{html.escape(name)}">'
            "<button>Delete</button></form></td></tr>"
            for name in self.people
            if term in name.lower()
        )
        self.send(200, (
            "<!doctype html><title>People</title><h1>People</h1>"
            f"{_SEARCH}"
            "<table><thead><tr><th>Name</th><th>Dept</th><th>City</th><th>Status</th><th></th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
        ).encode())  # fmt: skip

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        who = parse_qs(body)["who"][0]
        type(self).people = [name for name in self.people if name != who]
        self.send(303, Location="/people?msg=Deleted")


async def _recorded(
    tab: Tab, app: str, shown: type[_People] = _People, in_: str = "tr",
    found: str = "**q=*", delete: str = "",
) -> Scenario:  # fmt: skip
    """A person searches for Ada Lovelace and deletes her row (her tile: ``shown`` and
    ``in_``; or, where the search opened the page ``found``, the button ``delete``); the
    typed name is made the parameter ``name`` (carried into the Delete button's row)."""
    shown.people = ["Ada Lovelace", "Bob Smith", "Carl Jung"]
    await tab.navigate(f"{app}/people")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "input[name=q]")
    await tab.page.keyboard.type("Ada Lovelace")
    await tab.page.keyboard.press("Enter")
    await tab.page.wait_for_url(found)
    await click_center(tab.page, delete or f"{in_}:has-text('Ada Lovelace') button")
    await tab.page.wait_for_url("**msg=*")
    steps = [*await recorder.stop(), ScenarioStep("expect", {"kind": "no_error"})]
    scenario = Scenario("Delete a person", tuple(steps), base_url=app)
    typed = next(i for i, step in enumerate(scenario.steps) if step.action == "fill")
    return scenario.with_param(typed, "name")


async def _exported(code: str, folder: Path, app: str, name: str, **kw: int) -> tuple[int, str]:
    """Runs the exported ``code`` in a new ``folder`` against ``app``, given ``name``."""
    return await run_exported(code, folder, app, {"TABWRIGHT_PARAM_name": name}, **kw)


@pytest.mark.parametrize("narrows", [True, False], ids=["search narrows", "full table"])
async def test_a_row_given_a_parameter_s_value_is_acted_on_only_where_it_shows_it_whole(
    tab: Tab, tmp_path: Path, narrows: bool
) -> None:
    """Replay and export delete the person named, and no one when only a near name is
    there: with "Ann Lee" given where only Ann Leeds is (and "Ann" where only Anna is),
    both deleted that other person and passed, the row matching in every other word."""
    _People.narrows = True
    with loopback_app(_People) as app:
        scenario = await _recorded(tab, app)
        click = scenario.steps[-2]
        assert click.action == "click" and click.identity is not None
        assert click.identity.row.startswith("${name}"), click.identity.row
        _People.narrows = narrows
        code = to_pytest(scenario)
        for given, there in (("Ann Lee", "Ann Leeds"), ("Ann", "Anna")):
            everyone = [there, "Bob Smith", "Carl Jung"]
            _People.people = list(everyone)
            # (The row is never there: a short wait for it says the same.)
            result = await Replay(tab, scenario, params={"name": given}, config=SHORT).run()
            assert not result.ok, result.to_dict()
            assert _People.people == everyone, (given, _People.people)
            assert f'row without "{given}"' in result.reason, result.reason
            folder = tmp_path / f"near-{given.replace(' ', '-')}"
            status, out = await _exported(code, folder, app, given, timeout_ms=3_000)
            assert status != 0, out
            assert _People.people == everyone, (given, _People.people, out)
        # The person named is there: replay and export each delete that person, no other.
        _People.people = ["Ann Leeds", "Bob Smith", "Carl Jung"]
        result = await Replay(tab, scenario, params={"name": "Bob Smith"}).run()
        assert result.ok, result.to_dict()
        assert _People.people == ["Ann Leeds", "Carl Jung"]
        status, out = await _exported(code, tmp_path / "named", app, "Carl Jung")
        assert status == 0 and "1 passed" in out, out
        assert _People.people == ["Ann Leeds"]


class _Tiles(_People):
    """The same people, each a tile (plain divs: name, dept, office, a Delete) rather
    than a table row; the search shows everyone (``narrows``: those found, and the first
    page the first two; ``seats``: each tile edits its seats in place, a field of its
    own)."""

    narrows = False
    seats = False

    def do_GET(self) -> None:
        term = parse_qs(urlsplit(self.path).query).get("q", [""])[0].strip().lower()
        found = [name for name in self.people if term in name.lower()]
        # Searched, those found; else the first page: two (the search is how one finds
        # someone past them).
        shown = found if self.narrows and term else self.people[: 2 if self.narrows else None]
        tiles = "".join(
            f'<div class="tile"><div><b>{html.escape(name)}</b></div><div>Sales</div>'
            "<div>Leeds office</div>"
            + ("<label>Seats <input type=number name=seats value=2></label>" if self.seats else "")
            + "<form method=post action=/delete>"
            f'<input type=hidden name=who value="{html.escape(name)}">'
            "<button>Delete</button></form></div>"
            for name in shown
        )
        self.send(200, (
            "<!doctype html><title>People</title><h1>People</h1>"
            f"{_SEARCH}"
            f"<main><div class=grid>{tiles}</div></main>"
        ).encode())  # fmt: skip


async def test_the_export_acts_in_the_tile_it_acted_in_wherever_it_now_stands(
    tab: Tab, tmp_path: Path
) -> None:
    """Several tiles, each with its Delete: the export found the one recorded by where it
    stood (the second tile's), so once the tiles came in another order it deleted
    another person and passed.  Now it finds the Delete in the tile that reads as the
    recorded one, as replay does, a parameter's value in it whole: given "Ann Lee" where
    only Ann Leeds is, it deletes no one."""
    with loopback_app(_Tiles) as app:
        scenario = await _recorded(tab, app, _Tiles, in_=".tile")
        click = scenario.steps[-2]
        assert click.identity is not None and click.identity.name_count == 3, click.identity
        assert click.identity.card.startswith("${name}"), click.identity.card
        code = to_pytest(scenario)
        for given, there, left in (
            ("Carl Jung", ["Dan Brown", "Carl Jung", "Ann Leeds"], ["Dan Brown", "Ann Leeds"]),
            ("Ann Lee", ["Bob Smith", "Ann Leeds", "Dan Brown"], None),
        ):
            _Tiles.people = list(there)
            folder = tmp_path / given.replace(" ", "-")
            status, out = await _exported(code, folder, app, given, timeout_ms=3_000)
            if left is None:
                assert status != 0 and "no card reads as 'Ann Lee Sales" in out, out
                assert _Tiles.people == there, out
            else:
                assert status == 0 and "1 passed" in out, out
                assert _Tiles.people == left, out
            _Tiles.people = list(there)
            result = await Replay(tab, scenario, params={"name": given}, config=SHORT).run()
            assert result.ok == (left is not None), result.to_dict()
            assert _Tiles.people == (left or there)


class _FoundTiles(_Tiles):
    narrows = True


class _EditableTiles(_FoundTiles):
    seats = True


@pytest.mark.parametrize("tiles", [_FoundTiles, _EditableTiles], ids=["plain", "seats field"])
async def test_the_one_tile_a_search_left_is_acted_on_only_where_it_shows_the_value(
    tab: Tab, tmp_path: Path, tiles: type[_FoundTiles]
) -> None:
    """The search left one tile, so its Delete was the page's only one: given "Ann Lee"
    where only Ann Leeds is, replay and export deleted Ann Leeds and passed (a tile's
    text counted only where the name was shared).  Now a card that is one record's tile
    must show the value whole, a field of its own in it (its seats) or not (with one,
    both still deleted Ann Leeds: a card holding a field was taken for a form's); a
    search box's card (here the page, listing others) is a form's, its box showing the
    value given, and the search for someone not listed before it still goes on."""
    with loopback_app(tiles) as app:
        scenario = await _recorded(tab, app, tiles, in_=".tile")
        click = scenario.steps[-2]
        assert click.identity is not None and click.identity.name_count == 1, click.identity
        assert click.identity.card.startswith("${name}"), click.identity.card
        searched = scenario.steps[-3].identity
        assert searched is not None and "${name}" in searched.card, searched
        code = to_pytest(scenario)
        everyone = ["Bob Smith", "Dan Brown", "Ann Leeds", "Carl Jung"]
        tiles.people = list(everyone)
        result = await Replay(tab, scenario, params={"name": "Ann Lee"}, config=SHORT).run()
        assert not result.ok and tiles.people == everyone, result.to_dict()
        assert (
            result.reason.startswith("step 3 (click") and 'row without "Ann Lee"' in result.reason
        )
        status, out = await _exported(code, tmp_path / "near", app, "Ann Lee", timeout_ms=3_000)
        assert status != 0 and "no 'Ann Lee' in it" in out, out
        assert tiles.people == everyone, out
        # Named people past the first page: each deleted, no one else.
        result = await Replay(tab, scenario, params={"name": "Carl Jung"}).run()
        assert result.ok, result.to_dict()
        assert tiles.people == ["Bob Smith", "Dan Brown", "Ann Leeds"]
        status, out = await _exported(code, tmp_path / "named", app, "Ann Leeds")
        assert status == 0 and "1 passed" in out, out
        assert tiles.people == ["Bob Smith", "Dan Brown"]


class _Profiles(_People):
    """A search that finds one person opens their page (a heading with their name, a
    Delete among its actions); several found, a list of links to them."""

    people: list[str] = []

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)
        if self.path.startswith("/person"):
            name = self.people[int(query["id"][0])]
            self.send(200, (
                f"<!doctype html><title>{html.escape(name)}</title><nav><a href=/people>People"
                f"</a></nav><main><h1>{html.escape(name)}</h1><p>Sales, Leeds office</p>"
                "<div class=actions><a href=/people>Back</a><form method=post action=/delete>"
                f'<input type=hidden name=who value="{html.escape(name)}">'
                "<button>Delete person</button></form></div></main>"
            ).encode())  # fmt: skip
            return
        term = query.get("q", [""])[0].strip().lower()
        found = [i for i, name in enumerate(self.people) if term and term in name.lower()]
        if len(found) == 1:
            self.send(303, Location=f"/person?id={found[0]}")
            return
        links = "".join(
            f'<li><a href="/person?id={i}">{html.escape(self.people[i])}</a></li>' for i in found
        )
        self.send(200, (
            "<!doctype html><title>People</title><h1>People</h1>"
            f"{_SEARCH}"
            f"<ul>{links}</ul>"
        ).encode())  # fmt: skip


async def test_the_page_a_search_opened_is_acted_on_only_where_its_title_shows_the_value(
    tab: Tab, tmp_path: Path
) -> None:
    """A search that finds one person opens their page, whose Delete is the page's only
    one, under a heading with their name: given "Ann Lee" where only Ann Leeds is, the
    search opens Ann Leeds's page, and replay and export delete no one."""
    with loopback_app(_Profiles) as app:
        delete = "button:has-text('Delete person')"
        scenario = await _recorded(tab, app, _Profiles, found="**/person?*", delete=delete)
        click = scenario.steps[-2]
        assert click.identity is not None and click.identity.name_count == 1, click.identity
        assert "${name}" in click.identity.section, click.identity
        code = to_pytest(scenario)
        everyone = ["Bob Smith", "Ann Leeds", "Carl Jung"]
        _Profiles.people = list(everyone)
        result = await Replay(tab, scenario, params={"name": "Ann Lee"}, config=SHORT).run()
        assert not result.ok and _Profiles.people == everyone, result.to_dict()
        assert 'section without "Ann Lee"' in result.reason, result.reason
        status, out = await _exported(code, tmp_path / "near", app, "Ann Lee", timeout_ms=3_000)
        assert status != 0 and "its page shows no 'Ann Lee'" in out, out
        assert _Profiles.people == everyone, out
        # The person named: deleted, no one else.
        result = await Replay(tab, scenario, params={"name": "Carl Jung"}).run()
        assert result.ok, result.to_dict()
        assert _Profiles.people == ["Bob Smith", "Ann Leeds"]
        status, out = await _exported(code, tmp_path / "named", app, "Ann Leeds")
        assert status == 0 and "1 passed" in out, out
        assert _Profiles.people == ["Bob Smith"]
