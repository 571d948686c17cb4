"""A control whose name the page showed once, recorded under a title, is acted on under
that title alone, in replay and in its pytest export.

Recorded while the page showed one "Street" (the shipping address's, its part opened by
a click), one "Name" (a wizard's company step), one "Title" (a tab's) or one "15" (a date
picker's month), such a control kept its section, but nothing compared it: its name
alone found it.  A release that showed another part first (the billing address open, so
the click on the shipping one closed it; the contact's step before the company's; the
product's tab before the one chosen last; the picker opening on another month) had
replay and the export type the shipping street into the billing address, the company's
name as the contact's, the search title as the product's, or pick the 15th of another
month, and pass.  Now a field under a title reading otherwise, where the page holds one
of its name under the recorded title (shown or not: its twin), is another field, as is a
day under another month: replay waits for a person and the export fails, having saved
nothing; where the recorded one is shown among others (both addresses open), each finds
it under its title."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from tests.automation.recording.test_recorder import click_center
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

# A step that finds no element waits this long for one to appear (a refused case's).
SHORT = ReplayConfig(locate_wait_ms=1_000)


def _address(release: str) -> str:
    """Two parts of a customer's page, each opened by its header, each with a Street."""
    opened = {"as recorded": (), "billing open": ("billing",), "both open": ("billing", "shipping")}
    parts = ""
    for key, title in (("billing", "Billing address"), ("shipping", "Shipping address")):
        is_open = key in opened[release]
        parts += (
            f"<h3><button type=button aria-expanded={str(is_open).lower()} aria-controls={key}-part"
            " onclick=\"const o = this.getAttribute('aria-expanded') === 'true';"
            f" this.setAttribute('aria-expanded', !o); this.parentNode.nextSibling.hidden = o\">"
            f"{title}</button></h3>"
            f"<div id={key}-part role=region aria-label='{title}' {'' if is_open else 'hidden'}>"
            f"<label>Street <input name={key}></label></div>"
        )
    return f"<h1>Customer Acme</h1><form method=post>{parts}<button>Save</button></form>"


def _wizard(release: str) -> str:
    """A wizard of two steps shown one at a time, each asking a Name; Confirm sends both."""
    steps = [("company", "Company"), ("contact", "Contact")]
    if release == "steps swapped":
        steps.reverse()
    panels = "".join(
        f"<fieldset class=step {'hidden' if at else ''}><legend>{title}</legend>"
        f"<label>Name <input name={key}></label>"
        + ("<button type=button onclick='next(this)'>Next</button>" if not at else
           "<button>Confirm</button>")
        + "</fieldset>"
        for at, (key, title) in enumerate(steps)
    )  # fmt: skip
    script = (
        "<script>function next(b) { b.closest('fieldset').hidden = true;"
        " b.closest('fieldset').nextElementSibling.hidden = false; }</script>"
    )
    return f"<h1>New account</h1><form method=post>{panels}</form>{script}"


def _invoice(release: str) -> str:
    """A date picker opening on the month of the date its field holds."""
    month, ym, due = (
        ("December 2026", "2026-12", "2026-12-01") if release == "as recorded"
        else ("January 2027", "2027-01", "2027-01-05")
    )  # fmt: skip
    days = "".join(f"<button type=button onclick='pick(this)'>{d}</button>" for d in range(1, 29))
    return (
        f"<h1>Invoice 7</h1><form method=post><label>Due date <input name=due value={due}"
        " readonly onclick='cal.hidden = false'></label>"
        f"<div id=cal data-month={ym} hidden><h2>{month}</h2><div>{days}</div></div>"
        "<button>Save</button></form><script>function pick(b) {"
        " document.querySelector('[name=due]').value ="
        " `${cal.dataset.month}-${b.textContent.padStart(2, '0')}`; cal.hidden = true; }</script>"
    )


def _product(release: str) -> str:
    """Tabs, each panel with a Title; the page opens on the tab chosen last (here, the
    release says which: a person's earlier visit, a fresh browser)."""
    shown = "SEO" if release == "as recorded" else "General"
    tabs = "".join(
        f"<button type=button role=tab id=tab-{t} aria-selected={str(t == shown).lower()}"
        f" onclick='pick(\"{t}\")'>{t}</button>"
        for t in ("General", "SEO")
    )
    panels = "".join(
        f"<div role=tabpanel id=panel-{t} aria-labelledby=tab-{t} {'' if t == shown else 'hidden'}>"
        f"<label>Title <input name={key}></label></div>"
        for t, key in (("General", "title"), ("SEO", "seo"))
    )
    script = (
        "<script>function pick(t) { for (const n of ['General', 'SEO']) {"
        " document.getElementById('panel-' + n).hidden = n !== t; } }</script>"
    )
    form = f"<form method=post><div role=tablist>{tabs}</div>{panels}<button>Save</button></form>"
    return f"<h1>Product</h1>{form}{script}"


PAGES = {"address": _address, "wizard": _wizard, "invoice": _invoice, "product": _product}


@pytest.fixture
def app() -> Iterator[tuple[dict, str]]:
    state: dict = {"release": "as recorded", "saved": []}

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            page = PAGES[self.path.strip("/").split("?")[0]](state["release"])
            self.send(200, f"<!doctype html><title>Back office</title>{page}".encode())

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"])).decode()
            fields = {k: v[0] for k, v in parse_qs(body).items()}
            state["saved"].append(fields)
            self.send(303, Location=f"{self.path}?saved=1")

    with loopback_app(Handler) as url:
        yield state, url


async def _recorded(tab: Tab, url: str, act: Callable[[], Awaitable[None]], name: str) -> Scenario:
    await tab.navigate(url)
    recorder = Recorder(tab)
    await recorder.start()
    await act()
    await tab.page.wait_for_url("**saved=1")
    return Scenario(name, tuple(await recorder.stop()), base_url=url.rsplit("/", 1)[0] + "/")


async def _typed(tab: Tab, selector: str, text: str) -> None:
    await click_center(tab.page, selector)
    await tab.page.keyboard.type(text)


async def _done(
    tab: Tab, state: dict, scenario: Scenario, base: str, folder: Path,
    releases: dict[str, dict | None],
) -> None:  # fmt: skip
    """Replay and export of ``scenario`` on each release: each saves what it says, or
    fails having saved nothing."""
    code = to_pytest(scenario)
    for n, (release, saved) in enumerate(releases.items()):
        state.update(release=release, saved=[])
        result = await Replay(tab, scenario, config=SHORT).run()
        assert result.ok == (saved is not None), (release, result.to_dict())
        assert state["saved"] == ([saved] if saved else []), release
        state.update(saved=[])
        status, out = await run_exported(code, folder / str(n), base, timeout_ms=3_000)
        assert (status == 0) == (saved is not None), (release, out)
        assert state["saved"] == ([saved] if saved else []), release


async def test_a_street_is_typed_into_the_address_it_was_typed_into(
    tab: Tab, app: tuple[dict, str], tmp_path: Path
) -> None:
    state, base = app

    async def act() -> None:
        await click_center(tab.page, "button[aria-controls=shipping-part]")
        await _typed(tab, "input[name=shipping]", "1 Dock Rd")
        await click_center(tab.page, "form > button")

    scenario = await _recorded(tab, f"{base}/address", act, "Ship to the dock")
    assert state["saved"] == [{"shipping": "1 Dock Rd"}]
    street = next(s for s in scenario.steps if s.action == "fill").identity
    assert street is not None and street.name_count == 1 and street.section == "Shipping address"
    await _done(tab, state, scenario, base, tmp_path, {
        "as recorded": {"shipping": "1 Dock Rd"},
        "billing open": {"shipping": "1 Dock Rd"},  # both open: its own found by its title
        "both open": None,  # the click closed it: the billing address's Street alone
    })  # fmt: skip


async def test_a_wizard_s_name_is_typed_on_the_step_it_was_typed_on(
    tab: Tab, app: tuple[dict, str], tmp_path: Path
) -> None:
    state, base = app

    async def act() -> None:
        await _typed(tab, "input[name=company]", "Acme Ltd")
        await click_center(tab.page, "fieldset:not([hidden]) button")
        await _typed(tab, "input[name=contact]", "Ann Lee")
        await click_center(tab.page, "fieldset:not([hidden]) button")

    scenario = await _recorded(tab, f"{base}/wizard", act, "Open an account")
    done = {"company": "Acme Ltd", "contact": "Ann Lee"}
    assert state["saved"] == [done]
    await _done(tab, state, scenario, base, tmp_path, {"as recorded": done, "steps swapped": None})


async def test_a_day_is_picked_in_the_month_it_was_picked_in(
    tab: Tab, app: tuple[dict, str], tmp_path: Path
) -> None:
    state, base = app

    async def act() -> None:
        await click_center(tab.page, "input[name=due]")
        await click_center(tab.page, "#cal button:nth-child(15)")
        await click_center(tab.page, "form > button")

    scenario = await _recorded(tab, f"{base}/invoice", act, "Due on the 15th")
    assert state["saved"] == [{"due": "2026-12-15"}]
    await _done(tab, state, scenario, base, tmp_path, {
        "as recorded": {"due": "2026-12-15"},
        "another month": None,  # the picker opens on January: its 15 is another day
    })  # fmt: skip


async def test_a_title_is_typed_on_the_tab_it_was_typed_on(
    tab: Tab, app: tuple[dict, str], tmp_path: Path
) -> None:
    state, base = app

    async def act() -> None:
        await _typed(tab, "input[name=seo]", "Best widget")
        await click_center(tab.page, "form > button")

    scenario = await _recorded(tab, f"{base}/product", act, "Title the page for search")
    done = {"seo": "Best widget"}
    assert state["saved"] == [done]
    await _done(tab, state, scenario, base, tmp_path, {
        "as recorded": done,
        "general first": None,  # the product's own Title shown: not the one typed into
    })  # fmt: skip
