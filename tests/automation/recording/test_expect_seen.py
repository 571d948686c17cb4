"""What an outcome check sees of a page, in a real browser: only what a person sees there.
Text drawn where no one sees it (off the page, transparent, clipped to nothing, a
screen-reader-only line) is not seen; nor is a value waiting in a field one types into,
which is there whether or not anything came of typing it (a read-only field's is).
``wait_for`` and the snapshot see the same (automation.browser.seen)."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from automation import Budget, Tab
from automation.browser.seen import SEEN_JS, errors_shown
from automation.errors import ActionFailed, BudgetExceeded, CheckFailed
from automation.recording import expect
from automation.recording.export import to_pytest
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario, ScenarioStep
from tests.bounds import room
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

pytestmark = pytest.mark.long  # one of the longest files: dealt out first

PAGE = """<main><ul>
<li>Acme</li>
<li hidden>Zed Corp 1</li>
<li style="visibility: hidden">Zed Corp 2</li>
<li style="opacity: 0">Zed Corp 3</li>
<li style="position: absolute; left: -9999px">Zed Corp 4</li>
<li style="height: 0; overflow: hidden">Zed Corp 5</li>
<li hidden="until-found">Zed Corp 7</li>
<li><span style="position: absolute; width: 1px; height: 1px; overflow: hidden;
  clip: rect(0 0 0 0)">Zed Corp 6</span>Beta</li>
</ul>
<label>Company <input value="Initech"></label>
<label>Total <input value="42.00" readonly></label>
<table><tr><td>Grid</td><td><input value="Grid Co"></td></tr></table>
</main>"""


async def test_a_check_sees_what_a_person_sees(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(PAGE)
    text = await expect.page_text(tab, room())
    assert "acme" in text and "beta" in text and "42.00" in text
    assert "zed corp" not in text
    assert "initech" not in text  # typed into a field: no sign anything came of it
    assert await expect.count_rows(tab, "Zed Corp", room()) == 0
    assert await expect.count_rows(tab, "Acme", room()) == 1
    assert await expect.count_rows(tab, "Grid Co", room()) == 1  # a row's fields are its own
    # ...as the app wrote them: a value typed into a row's field (an inline "add" row the
    # app refused) is not a row showing it.
    await tab.page.fill("table input", "Globex Ltd")
    assert await expect.count_rows(tab, "Globex Ltd", room()) == 0
    check = {"kind": "text_visible", "text": "Initech"}
    assert not (await expect._once(tab, check, None, room()))[0]


async def test_a_check_reads_a_long_page_to_its_end(tab: Tab, fixture_url: str) -> None:
    """A list of 3,000 orders (over 200,000 characters): the last ones are shown, and a
    check of them reads them.  The text was read up to 200,000 characters: a check that
    an order is no longer shown passed while it stood near the end of the list, and one
    that it is shown failed."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    rows = "".join(f"<tr><td>Order {n}</td><td>{'Widget, blue, large. ' * 4}</td></tr>"
                   for n in range(1000, 4000))  # fmt: skip
    await tab.page.set_content(f"<main><table>{rows}</table></main>")
    assert len(await tab.page.inner_text("main")) > 250_000
    shown = {"kind": "text_visible", "text": "Order 3995"}
    assert (await expect._once(tab, shown, None, room()))[0]
    for gone in ({"kind": "text_hidden", "text": "Order 3990"},
                 {"kind": "text_hidden", "text": "Order 1001"}):  # fmt: skip
        assert not (await expect._once(tab, gone, None, room()))[0], gone
    assert (await expect._once(tab, {"kind": "text_hidden", "text": "Order 4001"}, None,
                               room()))[0]  # fmt: skip
    # A row is read whole too: a long note before the customer (it was read up to 4,000
    # characters, and a row still showing Zeta Corp counted as none).
    note = "Delivery to the back door, ring twice. " * 150
    await tab.page.set_content(
        f"<main><ul><li>Acme Corp</li><li><p>{note}</p><b>Zeta Corp</b></li></ul></main>"
    )
    assert await expect.count_rows(tab, "Zeta Corp", room()) == 1


async def test_an_error_box_is_read_past_its_markup_s_blank_lines(
    tab: Tab, fixture_url: str
) -> None:
    """A server's error list, written by a template that leaves its indentation and blank
    lines in: 600 characters of white space before its first word.  The box was read for
    a letter in its first 400 characters, white space counted: it read as no error, and
    a no_error check passed while the page said the order could not be saved."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    blank = "".join(f"<span>{' ' * 40}\n</span>" for _ in range(15))
    await tab.page.set_content(
        f"<main><div class='errorlist'>{blank}<p>The order could not be saved.</p></div></main>"
    )
    held, said = await expect._once(tab, {"kind": "no_error"}, None, room())
    assert not held and "could not be saved" in said, said


async def test_a_button_styled_as_danger_is_no_error(tab: Tab, fixture_url: str) -> None:
    """A "Delete" button or a "Remove" link styled ``btn-danger`` (Bootstrap's) is what a
    person acts with, not an error the page says: a no_error check on a page of them
    held only where nothing else says one, and a row added in place with its own Delete
    button read as a save refused there."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    actions = ('<button class="btn btn-danger">Delete</button>'
               '<a class="btn btn-outline-danger" href="#x">Remove</a>'
               '<input type=submit class="btn-danger" value="Drop">')  # fmt: skip
    await tab.page.set_content(f"<main><form><input name=a>{actions}</form></main>")
    assert await expect._once(tab, {"kind": "no_error"}, None, room()) == (True, "")
    await tab.page.set_content(
        f"<main>{actions}<input aria-invalid=true class=btn-danger>"
        "<p class='text-danger'>Name is taken</p></main>"
    )
    held, said = await expect._once(tab, {"kind": "no_error"}, None, room())
    assert not held and "a field marked invalid" in said, said
    assert await errors_shown(tab, room()) == ["a field marked invalid", "Name is taken"]


async def test_a_status_badge_styled_as_danger_is_no_error(tab: Tab, fixture_url: str) -> None:
    """A row's status badge styled as danger ("Overdue" in Bootstrap's ``badge bg-danger``,
    Bootstrap 3's ``label label-danger``, Bulma's ``tag is-danger``) is a status of the
    app's data, not an error the page says: a no_error check on a list of them holds (it
    failed once an invoice fell overdue), and a message styled so beside them still fails."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    badges = "".join(
        f'<tr><td>INV-{n}</td><td><span class="{styled}">{said}</span></td></tr>'
        for n, (styled, said) in enumerate([("badge bg-danger", "Overdue"),
                                            ("label label-danger", "Unpaid"),
                                            ("tag is-danger", "Disputed")])
    )  # fmt: skip
    await tab.page.set_content(f"<main><table>{badges}</table></main>")
    assert await expect._once(tab, {"kind": "no_error"}, None, room()) == (True, "")
    assert await errors_shown(tab, room(), named=True) == []
    await tab.page.set_content(
        f"<main><div class='alert alert-danger'>The invoice could not be sent</div>"
        f"<table>{badges}</table></main>"
    )
    held, said = await expect._once(tab, {"kind": "no_error"}, None, room())
    assert not held and "could not be sent" in said, said
    assert await errors_shown(tab, room()) == ["The invoice could not be sent"]


async def test_a_component_library_s_alerts_and_chips_are_read_by_their_camel_case_names(
    tab: Tab, fixture_url: str
) -> None:
    """Material UI names an alert's kind in camelCase ("MuiAlert-standardSuccess", each
    one role=alert) and a status chip so ("MuiChip-colorError"): a no_error check failed
    on a page saying "Settings saved" in a success alert, and on an "Overdue" chip; a
    bare alert saying it went through ("Saved") is no error either, one saying nothing was
    saved is.  An error alert ("MuiAlert-standardError") is an error its markup names: a
    save refused so in place is read as refused."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    chip = '<div class="MuiChip-root MuiChip-colorError"><span>Overdue</span></div>'
    fine = ('<div role=alert class="MuiAlert-root MuiAlert-colorSuccess '
            'MuiAlert-standardSuccess"><div class=MuiAlert-message>Settings saved</div></div>'
            '<div role=alert class="MuiAlert-root MuiAlert-standardInfo">3 new orders</div>'
            "<p role=alert>Saved</p>")  # fmt: skip
    await tab.page.set_content(f"<main>{fine}<table><tr><td>{chip}</td></tr></table></main>")
    assert await expect._once(tab, {"kind": "no_error"}, None, room()) == (True, "")
    assert await errors_shown(tab, room(), named=True) == []
    for said, shown in (
        ('<div role=alert class="MuiAlert-root MuiAlert-standardError">The order could not be '
         "saved</div>", "The order could not be saved"),
        ('<div role=alert class="MuiAlert-root MuiAlert-standardError">Stock changed '
         "meanwhile</div>", "Stock changed meanwhile"),
        ("<p role=alert>Nothing was saved</p>", "Nothing was saved"),
    ):  # fmt: skip
        await tab.page.set_content(f"<main>{said}<table><tr><td>{chip}</td></tr></table></main>")
        held, told = await expect._once(tab, {"kind": "no_error"}, None, room())
        assert not held and shown in told, told
        named = await errors_shown(tab, room(), named=True)
        assert named == ([] if said.startswith("<p") else [shown]), named


async def test_a_text_only_its_colour_says_is_an_error_beside_a_field(
    tab: Tab, fixture_url: str
) -> None:
    """An error only its colour names (Tailwind's ``text-red-600`` list under a field, as
    Laravel Breeze draws one; shadcn's ``text-destructive``) is an error beside a field or
    in a form; a red status badge in a list is none, nor a red asterisk."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    badge = '<span class="rounded-md bg-red-50 px-2 text-xs text-red-700">Overdue</span>'
    await tab.page.set_content(
        f"<main><table><tr><td>INV-1</td><td>{badge}</td></tr></table>"
        '<form><label>Email <span class="text-red-500">*</span></label><input name=email>'
        "</form></main>"
    )
    assert await expect._once(tab, {"kind": "no_error"}, None, room()) == (True, "")
    for said in ('<ul class="mt-2 text-sm text-red-600 dark:text-red-400"><li>The email has '
                 "already been taken.</li></ul>",
                 '<p class="text-sm font-medium text-destructive">The email has already been '
                 "taken.</p>"):  # fmt: skip
        await tab.page.set_content(
            f"<main><table><tr><td>INV-1</td><td>{badge}</td></tr></table>"
            f"<div><label>Email</label><input name=email>{said}</div></main>"
        )
        held, told = await expect._once(tab, {"kind": "no_error"}, None, room())
        assert not held and "already been taken" in told, told
        assert await errors_shown(tab, room(), named=True) == ["The email has already been taken."]


def orders(shipped: str = "") -> str:
    """Orders whose Status is a list in each row; ``shipped``'s row sent with "Shipped"
    chosen, the others with no option marked (the first shows)."""
    rows = "".join(
        f"<tr><td>{who}</td><td><select aria-label=Status><option>Pending</option>"
        f"<option{' selected' if who == shipped else ''}>Shipped</option></select></td></tr>"
        for who in ("Ann", "Bob")
    )
    return f"<main><table>{rows}</table></main>"


async def test_a_list_shows_the_choice_the_app_sent_not_one_made_since(
    tab: Tab, fixture_url: str
) -> None:
    """Ann's Status chosen "Shipped" by the replay, its save refused, the row not redrawn:
    a check that Ann's row shows "Shipped" held on the replay's own choice.  A row's list
    reads as the app sent it (its first option when none is marked), and a list one can
    change is no text of the page."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(orders())
    assert await expect.count_rows(tab, "Ann Pending", room()) == 1
    await tab.page.get_by_role("row", name="Ann").get_by_label("Status").select_option("Shipped")
    assert await expect.count_rows(tab, "Ann Shipped", room()) == 0
    assert await expect.count_rows(tab, "Ann Pending", room()) == 0  # (nor what it showed)
    shown = {"kind": "text_visible", "text": "Shipped"}
    assert not (await expect._once(tab, shown, None, room()))[0]
    await tab.page.set_content(orders(shipped="Ann"))  # saved: the app sends it chosen
    assert await expect.count_rows(tab, "Ann Shipped", room()) == 1
    assert await expect.count_rows(tab, "Bob Pending", room()) == 1


async def test_what_is_typed_into_an_editor_is_no_text_of_the_page(
    tab: Tab, fixture_url: str
) -> None:
    """A note typed into an editor (contenteditable) and its save refused: a check that
    the page shows the note held on the replay's own typing.  An editor's text is a
    field's value, as an input's is; the notes the app lists are the page's."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(
        "<main><div contenteditable=true aria-label=Notes><p>Draft</p></div>"
        "<ul><li>Checked by legal</li></ul></main>"
    )
    await tab.page.get_by_label("Notes").fill("Approved by finance")
    for text, held in (("Approved by finance", False), ("Checked by legal", True)):
        shown = {"kind": "text_visible", "text": text}
        assert (await expect._once(tab, shown, None, room()))[0] is held, text


class _Grid(QuietHandler):
    """Ann's order, its Status and Note typed into a field and an editor of its row, each
    key copied into the field's value attribute as React does."""

    def do_GET(self) -> None:
        page = """<!doctype html><main><table><tr><td>Ann</td><td><input aria-label=Status
          value=Pending oninput="this.defaultValue = this.value"></td><td contenteditable
          aria-label=Note>Call first</td></tr></table></main>"""
        self.send(200, page.encode())


async def test_a_row_reads_its_fields_as_the_app_wrote_them_not_as_typed(tab: Tab) -> None:
    """What was typed into a row's field, the app copying each key into the value
    attribute (React), read as the row's: a check that the row shows it held whether or
    not the app kept it.  What was typed is remembered from the browser's own events; the
    row reads what the app wrote before, until the app writes another value there."""
    with loopback_app(_Grid) as app:
        await tab.page.goto(f"{app}/orders")
        await tab.page.get_by_label("Status").fill("Shipped")
        await tab.page.get_by_label("Note").fill("Leave at the door")
        attribute = "() => document.querySelector('input').getAttribute('value')"
        assert await tab.page.evaluate(attribute) == "Shipped"  # (as React leaves it)
        for text, rows in (("Ann Shipped", 0), ("Leave at the door", 0),
                           ("Ann Pending Call first", 1)):  # fmt: skip
            assert await expect.count_rows(tab, text, room()) == rows, text
        # The app writes (a save's answer); a script's own events are no typing.
        await tab.page.evaluate("""() => {
          const field = document.querySelector("input");
          field.value = field.defaultValue = "Shipped, 2 parcels";
          field.dispatchEvent(new Event("input", {bubbles: true}));
        }""")
        assert await expect.count_rows(tab, "Ann Shipped, 2 parcels", room()) == 1


HIDDEN_FRAMES = [
    '<div style="display: none"><iframe srcdoc="{doc}"></iframe></div>',
    '<div style="visibility: hidden"><iframe srcdoc="{doc}"></iframe></div>',
    '<div style="height: 0; overflow: hidden"><iframe srcdoc="{doc}"></iframe></div>',
    '<iframe srcdoc="{doc}" style="position: absolute; left: -9999px"></iframe>',
    '<iframe srcdoc="{doc}" width="0" height="0" style="border: 0"></iframe>',
    '<div hidden><iframe srcdoc="&lt;iframe srcdoc=&quot;{doc}&quot;&gt;&lt;/iframe&gt;">'
    "</iframe></div>",  # a frame in a frame nobody sees
]


@pytest.mark.parametrize("hidden", HIDDEN_FRAMES)
async def test_a_frame_nobody_sees_shows_nothing(tab: Tab, fixture_url: str, hidden: str) -> None:
    """A collapsed panel's iframe (a receipt from an earlier payment): its text is not
    on the page a person sees; the same frame shown is."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    doc = "&lt;ul&gt;&lt;li&gt;Payment received&lt;/li&gt;&lt;/ul&gt;"
    for html, seen in ((hidden, False), ('<iframe srcdoc="{doc}"></iframe>', True)):
        await tab.page.set_content(f"<main><h1>Invoice</h1>{html.format(doc=doc)}</main>")
        at = tab.page.main_frame  # each frame loaded, down to the one with the text
        for _ in range(html.count("iframe srcdoc")):
            await at.wait_for_function("() => window.frames.length > 0", polling=50)
            at = at.child_frames[0]
        await at.wait_for_function("() => document.body?.textContent", polling=50)
        assert ("payment received" in await expect.page_text(tab, room())) is seen
        assert await expect.count_rows(tab, "Payment received", room()) == int(seen)


# Pages served from loopback, each a case: (its body, whether a person sees "Saved" there).
SAVED = "<p>Saved</p>"
FRAMES = {
    "/inner": SAVED,
    "/outer": '<h2>Outer</h2><iframe src="/inner"></iframe>',
    "/outer-hiding": '<h2>Outer</h2><iframe src="/inner" style="visibility: hidden"></iframe>',
    "/todos": '<ul aria-label="Todos"><li>Buy milk</li><li>Walk the dog</li></ul>',
}
# A cart's entries, each line with its Remove button and quantity box; whether the list
# is "Apple", "Pear" (the items checked).
LINE = "<li><input type=checkbox aria-label=Pick> {} <button>Remove</button></li>"
SR_ONLY = "position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0)"
CARTS = {
    "as listed": ("".join(LINE.format(x) for x in ("Apple", "Pear")), True),
    "a table": ("<table aria-label=Cart><thead><tr><th>Fruit</th></tr></thead><tbody>"
                "<tr><td>Apple</td></tr><tr><td>Pear</td></tr></tbody></table>", True),
    "a line twice": ("".join(LINE.format(x) for x in ("Apple", "Apple", "Pear")), False),
    "a line more": ("".join(LINE.format(x) for x in ("Apple", "Banana", "Pear")), False),
    "other products": ("".join(LINE.format(x) for x in ("Apple crumble", "Pear cider")), False),
    "one nobody sees": (LINE.format("Apple") + f'<li style="{SR_ONLY}">Pear</li>', False),
    "one transparent": (LINE.format("Apple") + '<li style="opacity: 0">Pear</li>', False),
}  # fmt: skip
SEEN_CASES = {
    "plain": (SAVED, True),
    "below the fold": ('<div style="height: 3000px"></div>' + SAVED, True),
    "in a frame": ('<iframe src="/inner"></iframe>', True),
    "in a frame in a frame": ('<iframe src="/outer"></iframe>', True),
    "in a hidden frame": ('<iframe src="/inner" style="visibility: hidden"></iframe>', False),
    "transparent": ('<p style="opacity: 0">Saved</p>', False),
    "off the left edge": ('<p style="position: absolute; left: -9999px">Saved</p>', False),
    "in a 0 x 0 frame": ('<iframe src="/inner" width="0" height="0" frameborder="0">', False),
    "in a frame in a transparent box": (
        '<div style="opacity: 0"><iframe src="/inner"></iframe></div>',
        False,
    ),
    "in a hidden frame in a frame": ('<iframe src="/outer-hiding"></iframe>', False),
}


# A button checked ``visible``: whether a person sees it.
ZERO = "width: 0; height: 0; padding: 0; border: 0; overflow: hidden"
ELEMENT_CASES = {
    "plain": ("<button>Save</button>", True),
    "transparent": ('<button style="opacity: 0">Save</button>', False),
    "in a transparent box": ('<div style="opacity: 0"><button>Save</button></div>', False),
    "0 x 0": (f"<button style='{ZERO}'>Save</button>", False),
}


class _Pages(QuietHandler):
    def do_GET(self) -> None:
        name = self.path.removeprefix("/case/").replace("%20", " ")
        body = FRAMES.get(self.path) or SEEN_CASES.get(name, ("",))[0]
        if self.path.startswith("/cart/"):
            cart = CARTS[self.path.removeprefix("/cart/").replace("%20", " ")][0]
            body = cart if cart.startswith("<table") else f'<ul aria-label="Cart">{cart}</ul>'
        if self.path.startswith("/element/"):
            body = ELEMENT_CASES[self.path.removeprefix("/element/").replace("%20", " ")][0]
        page = f"<!doctype html><title>Report</title><h1>Report</h1>{body}"
        self.send(200 if body else 404, page.encode())


@pytest.fixture(scope="module")
def pages() -> Iterator[str]:
    with loopback_app(_Pages) as base:
        yield base


@pytest.mark.parametrize("case", SEEN_CASES)
async def test_wait_for_a_check_and_the_snapshot_see_the_same(
    module_tab: Tab, pages: str, case: str
) -> None:
    """A toast drawn transparent, off the page, or in a frame nobody sees is not "Saved"
    to any of them: a macro's wait_for passing where the replay's check then fails (or
    the agent reading it in its snapshot) would be a false green."""
    tab, seen = module_tab, SEEN_CASES[case][1]
    await tab.navigate(f"{pages}/case/{case}")  # (waits for "load": every frame's too)
    assert any(["Saved" in await f.evaluate("document.body.textContent") for f in tab.page.frames])
    visible = {"kind": "text_visible", "text": "Saved"}
    if seen:
        await tab.wait_for(text="Saved", budget=room())
        await expect.check(tab, visible, None, budget=room())
    else:
        waited, checked = await asyncio.gather(
            tab.wait_for(text="Saved", budget=Budget(1_000)),
            expect.check(tab, visible, None, budget=Budget(1_500)),
            return_exceptions=True,
        )
        assert isinstance(waited, (BudgetExceeded, ActionFailed)), waited
        assert isinstance(checked, CheckFailed), checked
        await tab.wait_for(text_gone="Saved", budget=room())
        await expect.check(tab, {"kind": "text_hidden", "text": "Saved"}, None, budget=room())
    assert ("Saved" in (await tab.snapshot()).text) is seen


async def test_wait_for_waits_for_the_copy_a_person_sees(module_tab: Tab, pages: str) -> None:
    """A toast in the page from the start, drawn transparent until the save is done."""
    tab = module_tab
    await tab.navigate(f"{pages}/case/plain")
    await tab.page.set_content(
        '<p id="toast" style="opacity: 0">Saved</p><script>setTimeout(() => {'
        " toast.style.opacity = 1; window.shown = true; }, 1000)</script>"
    )
    assert "Saved" not in (await tab.snapshot()).text
    await tab.wait_for(text="Saved", budget=room())
    assert await tab.page.evaluate("window.shown === true")  # not the transparent copy
    await expect.check(tab, {"kind": "text_visible", "text": "Saved"}, None, budget=room())
    assert "Saved" in (await tab.snapshot()).text


def constant(code: str, name: str) -> object:
    """The value a module's source gives the constant ``name``."""
    assigned = [node for node in ast.parse(code).body if isinstance(node, ast.Assign)]
    (value,) = [node.value for node in assigned if getattr(node.targets[0], "id", "") == name]
    return ast.literal_eval(value)


# The export's cases: a text a person sees, in a frame, and three copies nobody sees.
EXPORTED = ["plain", "in a frame", "transparent", "off the left edge", "in a 0 x 0 frame"]


def looks_for(base: str, case: str, shown: bool) -> Scenario:
    """ "Saved" checked shown (and waited for), or hidden (and waited gone), on a case."""
    check = {"kind": "text_visible" if shown else "text_hidden", "text": "Saved"}
    wait = {"text" if shown else "text_gone": "Saved"}
    steps = (ScenarioStep("navigate", {"url": f"{base}/case/{case}"}),
             ScenarioStep("expect", check), ScenarioStep("wait_for", wait))  # fmt: skip
    return Scenario(f"{case} {'shown' if shown else 'hidden'}", steps, base_url=base)


async def test_the_export_sees_a_page_by_the_replays_rule(
    module_tab: Tab, pages: str, tmp_path: Path
) -> None:
    """A toast drawn transparent or off the page passed the export's check of it (and
    failed its wait for it to go): Playwright's "visible" sees it; the replay failed
    there.  And text in a frame, which the export did not look into.  Both now read the
    page by one rule, written into the file as it is."""
    config = ReplayConfig(step_timeout_ms=5_000, check_timeout_ms=1_500)
    verdicts: dict[str, bool] = {}  # an exported file's name: the replay's verdict
    files: dict[str, str] = {}
    for case in EXPORTED:
        for shown in (True, False):
            scenario = looks_for(pages, case, shown)
            name = f"test_{len(files)}.py" if files else "test_exported.py"
            verdicts[name] = (await Replay(module_tab, scenario, config=config).run()).ok
            assert verdicts[name] is (shown == SEEN_CASES[case][1]), scenario.name
            files[name] = to_pytest(scenario)
    code = files.pop("test_exported.py")
    assert constant(code, "SEEN_JS") == SEEN_JS  # the rule, as it is
    status, out = await run_exported(code, tmp_path, pages, more=files, timeout_ms=1_500)
    assert status == 1 and "5 failed, 5 passed" in out, out
    for name, ok in verdicts.items():
        assert (f"FAILED {name}::" not in out) is ok, (name, out)


async def test_an_items_check_is_exported_and_read_as_the_replay_reads_it(
    module_tab: Tab, pages: str, tmp_path: Path
) -> None:
    """A list's entries in order: the export refused the scenario ("value is missing");
    now it reads the element's text as the replay does, each entry after the one before."""
    todos = {"role": "list", "name": "Todos", "tag": "ul"}
    files: dict[str, str] = {}
    for items, holds in (
        (["buy  MILK", "Walk the dog"], True),
        (["Walk the dog", "Buy milk"], False),
    ):
        check = {"action": "expect", "args": {"kind": "items", "items": items}, "identity": todos}
        navigate = {"action": "navigate", "args": {"url": f"{pages}/todos"}}
        scenario = Scenario.from_dict({"version": 1, "name": f"Todos {holds}", "base_url": pages,
                                       "steps": [navigate, check]})  # fmt: skip
        config = ReplayConfig(check_timeout_ms=1_500)
        assert (await Replay(module_tab, scenario, config=config).run()).ok is holds
        files["test_exported.py" if holds else "test_wrong.py"] = to_pytest(scenario)
    code = files.pop("test_exported.py")
    status, out = await run_exported(code, tmp_path, pages, more=files, timeout_ms=1_500)
    assert status == 1 and "1 failed, 1 passed" in out and "FAILED test_wrong.py" in out, out
    assert "it lists 'Buy milk', 'Walk the dog'" in out, out


async def test_a_visible_check_sees_the_element_as_a_person_does_in_replay_and_export(
    module_tab: Tab, pages: str, tmp_path: Path
) -> None:
    """A Save button drawn transparent, or a 0 x 0 box clipping its label: the replay's
    ``visible`` check passed on any element it found, and the export's Playwright
    ``to_be_visible`` passed on the transparent one.  Both now go by the one rule."""
    config = ReplayConfig(check_timeout_ms=1_500)
    save = {"role": "button", "name": "Save", "tag": "button"}
    files: dict[str, str] = {}
    for number, (case, (_, seen)) in enumerate(ELEMENT_CASES.items()):
        navigate = {"action": "navigate", "args": {"url": f"{pages}/element/{case}"}}
        check = {"action": "expect", "args": {"kind": "visible"}, "identity": save}
        scenario = Scenario.from_dict({"version": 1, "name": case, "base_url": pages,
                                       "steps": [navigate, check]})  # fmt: skip
        result = await Replay(module_tab, scenario, config=config).run()
        assert result.ok is seen, (case, result.to_dict())
        if not seen:
            assert "it is not seen" in result.reason, result.reason
        files["test_exported.py" if not number else f"test_{number}.py"] = to_pytest(scenario)
    code = files.pop("test_exported.py")
    status, out = await run_exported(code, tmp_path, pages, more=files, timeout_ms=1_500)
    assert status == 1 and "3 failed, 1 passed" in out, out
    assert "FAILED test_exported.py" not in out and "it is not seen" in out, out


async def test_an_address_check_its_parameter_left_empty_fails_in_replay_and_export(
    module_tab: Tab, pages: str, tmp_path: Path
) -> None:
    """A ``url`` check of ``${where}`` with ``where`` empty: the replay failed it saying
    its address is empty, the export with Playwright's "Page URL expected to be
    re.compile('')", which says nothing of the parameter.  Both say it now; given, it
    holds in both."""
    scenario = Scenario.from_dict({
        "version": 1, "name": "Where", "base_url": pages, "params": {"where": {}},
        "steps": [{"action": "navigate", "args": {"url": f"{pages}/todos"}},
                  {"action": "expect", "args": {"kind": "url", "url": "${where}"}}],
    })  # fmt: skip
    config = ReplayConfig(check_timeout_ms=1_500)
    for where, holds in (("", False), ("/todos", True)):
        replayed = await Replay(module_tab, scenario, {"where": where}, config=config).run()
        assert replayed.ok is holds, replayed
        if not holds:
            assert "its url is empty with the values it was given" in replayed.reason
    code = to_pytest(scenario)
    for where, holds in (("", False), ("/todos", True)):
        folder = tmp_path / ("given" if where else "empty")
        folder.mkdir()
        env = {"TABWRIGHT_PARAM_where": where}
        status, out = await run_exported(code, folder, pages, env=env, timeout_ms=1_500)
        assert (status == 0) is holds, out[-3000:]
        if not holds:
            assert "its url is empty with the values it was given" in out, out[-3000:]


async def test_an_items_check_holds_where_the_list_s_entries_are_the_items(
    module_tab: Tab, pages: str, tmp_path: Path
) -> None:
    """``items`` Apple, Pear passed on a cart listing Apple twice, a Banana between, Apple
    crumble and Pear cider, or a Pear nobody sees: it looked for the words anywhere in the
    list's text.  Now the list's entries as a person reads them (a line's Remove aside)
    are the items, in replay and export alike; with ``among_others``, each item is an
    entry of its own, others between."""
    config = ReplayConfig(check_timeout_ms=1_500)
    files: dict[str, str] = {}
    expected: dict[str, bool] = {}
    cases = [(case, False, listed) for case, (_, listed) in CARTS.items()] + [
        ("a line more", True, True), ("other products", True, False),
    ]  # fmt: skip
    for number, (case, among, listed) in enumerate(cases):
        role, tag = ("table", "table") if case == "a table" else ("list", "ul")
        cart = {"role": role, "name": "Cart", "tag": tag}
        args = {"kind": "items", "items": ["Apple", "Pear"]}
        if among:
            args["among_others"] = True
        steps = [{"action": "navigate", "args": {"url": f"{pages}/cart/{case}"}},
                 {"action": "expect", "args": args, "identity": cart}]  # fmt: skip
        scenario = Scenario.from_dict({"version": 1, "name": f"cart {number}", "base_url": pages,
                                       "steps": steps})  # fmt: skip
        result = await Replay(module_tab, scenario, config=config).run()
        assert result.ok is listed, (case, among, result.to_dict())
        if not listed:
            assert "but it lists 'Apple" in result.reason, result.reason
        name = "test_exported.py" if not number else f"test_{number}.py"
        files[name], expected[name] = to_pytest(scenario), listed
    code = files.pop("test_exported.py")
    status, out = await run_exported(code, tmp_path, pages, more=files, timeout_ms=1_500)
    failed = sum(not ok for ok in expected.values())
    assert status == 1 and f"{failed} failed, {len(cases) - failed} passed" in out, out
    for name, ok in expected.items():
        assert (f"FAILED {name}::" not in out) is ok, (name, out)
