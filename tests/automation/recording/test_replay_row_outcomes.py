"""Replays of a row's action whose verdict can be trusted: a parameter found in each row's
link however the page writes it, a row not taken for one alike in what its identity keeps,
rows told by their whole number and by the status typed into them, a parameter longer
than its field, and a check after a slow save read once the save is answered (replay and
the export alike)."""

from __future__ import annotations

import html
import time
from pathlib import Path
from urllib.parse import parse_qs, quote, quote_plus, unquote, urlsplit

import pytest

from automation import Tab
from automation.browser.identity import capture
from automation.budget import Budget
from automation.recording.export import to_pytest
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario, ScenarioStep
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

pytestmark = pytest.mark.long  # one of the longest files: dealt out first


CUSTOMERS = ("Ann Lee, Jr.", "bob@example.org", "Zoë Ray")
# How a page may write a customer's name into its "Pay" link: as it is in the query (the
# browser keeps "@" and "," there), as a template's urlencode does, as a path segment.
LINKS = {
    "query as written": lambda name: f"/paid?who={html.escape(name)}",
    "query urlencoded": lambda name: f"/paid?who={quote_plus(name)}",
    "path segment": lambda name: f"/paid/to/{quote(name, safe='')}",
}


class _PayLinks(QuietHandler):
    """Customers, each a row with a Note field above and a "Pay" link to its own page,
    written as ``LINKS[link]`` says; ``paid`` keeps whom each payment was for."""

    link = "query as written"
    paid: list[str] = []

    def do_GET(self) -> None:
        where = urlsplit(self.path)
        if where.path.startswith("/paid"):
            to = where.path.removeprefix("/paid/to/") if where.path != "/paid" else ""
            self.paid.append(unquote(to) or parse_qs(where.query)["who"][0])
            self.send(200, b"<!doctype html><title>Paid</title><h1>Paid</h1>")
            return
        rows = "".join(f'<tr><td>{html.escape(name)}</td><td><a href="{LINKS[self.link](name)}">'
                       "Pay</a></td></tr>" for name in CUSTOMERS)  # fmt: skip
        self.send(200, ("<!doctype html><title>Customers</title><h1>Customers</h1>"
                        '<label>Note <input id="note"></label>'
                        f"<table>{rows}</table>").encode())  # fmt: skip


@pytest.mark.parametrize("link", list(LINKS))
async def test_a_parameter_is_found_in_each_row_s_link_however_the_page_writes_it(
    tab: Tab, link: str
) -> None:
    """Bob's "Pay" clicked after his e-mail was typed, the typed value made a parameter:
    a replay for each other customer pays that customer, whether the page writes the name
    into its link as it is (``?who=bob@example.org``, which the parameter did not reach:
    every replay paid Bob, and passed), urlencoded, or as a path segment."""
    _PayLinks.link, _PayLinks.paid = link, []
    with loopback_app(_PayLinks) as app:
        await tab.page.goto(f"{app}/customers")
        budget = Budget(10_000)
        note = await capture(await tab.page.query_selector("#note"), budget=budget)
        pay = await capture(await tab.page.query_selector("tr:nth-child(2) a"), budget=budget)
        steps = (ScenarioStep("navigate", {"url": f"{app}/customers"}),
                 ScenarioStep("fill", {"value": CUSTOMERS[1]}, note),
                 ScenarioStep("click", {}, pay))  # fmt: skip
        scenario = Scenario("Pay", steps, base_url=app).with_param(1, "customer")
        for who in (CUSTOMERS[0], CUSTOMERS[2]):
            result = await Replay(tab, scenario, params={"customer": who}).run()
            assert result.ok, result.to_dict()
        assert _PayLinks.paid == [CUSTOMERS[0], CUSTOMERS[2]], _PayLinks.paid


class _LongNotes(QuietHandler):
    """Orders to approve, each row a long delivery note (the same for all) before its
    number, and an Approve posting the order's number; ``approved`` keeps which were."""

    NOTE = ("Deliver to the loading bay behind the warehouse, ring twice, ask for the "
            "duty manager, never leave parcels outside, call ahead on public holidays, "
            "pallets go through gate B only, the forklift is shared with the bakery.")  # fmt: skip
    pending: list[int] = []
    approved: list[int] = []

    def do_GET(self) -> None:
        rows = "".join(
            f"<tr><td>{self.NOTE}</td><td>Order {n}</td><td><form method=post action=/approve>"
            f"<input type=hidden name=order value={n}><button>Approve</button></form></td></tr>"
            for n in self.pending
        )
        page = f"<!doctype html><title>Orders</title><h1>Orders</h1><table>{rows}</table>"
        self.send(200, page.encode())

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        order = int(parse_qs(body)["order"][0])
        self.approved.append(order)
        self.pending.remove(order)
        self.send(303, Location="/orders")


async def test_a_row_s_action_is_not_taken_for_a_row_alike_for_what_its_identity_keeps(
    tab: Tab,
) -> None:
    """Order 1002's Approve, recorded where every row starts with the same long note: an
    identity keeps 200 characters of its row, all of them the note.  Replayed once 1002
    was approved, the replay approved 1003 (its Approve stood where 1002's had) and
    passed; it stops now, and approves 1002 wherever its row has moved."""
    _LongNotes.pending, _LongNotes.approved = [1001, 1002, 1003], []
    with loopback_app(_LongNotes) as app:
        await tab.page.goto(f"{app}/orders")
        approve = await tab.page.query_selector("tr:nth-child(2) button")
        identity = await capture(approve, budget=Budget(10_000))
        steps = (ScenarioStep("navigate", {"url": f"{app}/orders"}),
                 ScenarioStep("click", {}, identity))  # fmt: skip
        scenario = Scenario("Approve 1002", steps, base_url=app)
        _LongNotes.pending = [1001, 1003]  # 1002 approved by hand since
        result = await Replay(tab, scenario).run()
        assert not result.ok and _LongNotes.approved == [], result.to_dict()
        _LongNotes.pending = [1003, 1004, 1002]
        result = await Replay(tab, scenario).run()
        assert result.ok and _LongNotes.approved == [1002], result.to_dict()


class _SlowSave(QuietHandler):
    """A profile whose Save says "Saved" at once and sends the save, answered after a
    while with ``status``: refused, the app takes "Saved" back.  ``saves`` counts the
    saves the server answered."""

    status = 409
    delay_s = 1.5
    saves = 0

    def do_GET(self) -> None:
        page = """<!doctype html><title>Profile</title><h1>Profile</h1>
        <button id=save>Save</button> <a id=orders href="/orders">Orders</a><p id=said></p>
        <script>
        save.onclick = async () => {
          said.textContent = "Saved";
          const answer = await fetch("/save", {method: "POST", body: "x"});
          if (!answer.ok) said.textContent = "Could not save";
        };
        </script>"""
        self.send(200, page.encode() if self.path == "/profile" else b"<h1>Orders</h1>")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(self.delay_s)  # (a slow server: longer than the settle's bound)
        type(self).saves += 1
        self.send(self.status, b"{}", Content_Type="application/json")


async def save_then_leave(tab: Tab, app: str) -> Scenario:
    """Save, a check that it says "Saved", then the link to another page."""
    await tab.page.goto(f"{app}/profile")
    budget = Budget(10_000)
    save = await capture(await tab.page.query_selector("#save"), budget=budget)
    orders = await capture(await tab.page.query_selector("#orders"), budget=budget)
    steps = (ScenarioStep("navigate", {"url": f"{app}/profile"}),
             ScenarioStep("click", {}, save),
             ScenarioStep("expect", {"kind": "text_visible", "text": "Saved"}),
             ScenarioStep("click", {}, orders),
             ScenarioStep("expect", {"kind": "url", "url": f"{app}/orders"}))  # fmt: skip
    return Scenario("Save", steps, base_url=app)


@pytest.mark.parametrize("status", [409, 200])
async def test_a_check_after_a_slow_save_is_read_once_the_save_is_answered(
    tab: Tab, status: int
) -> None:
    """A save the server answers after the settle's bound, a check of what the app showed
    at once ("Saved"), then a link to another page: the check was read before the answer
    and held, and leaving the page cancelled the save in the browser, which the server
    refused: the replay passed.  The next step waits for a write under way; the refusal
    fails the check, and a save that was accepted replays as before."""
    _SlowSave.status, _SlowSave.saves = status, 0
    tab.settler.configure(bound_ms=500)
    with loopback_app(_SlowSave) as app:
        result = await Replay(tab, await save_then_leave(tab, app)).run()
        if status == 200:
            assert result.ok and _SlowSave.saves == 1, result.to_dict()
            return
        assert not result.ok and result.reason.startswith("step 2 (expect"), result.reason
        assert "POST" in result.reason and "409" in result.reason, result.reason
        assert [o.status for o in result.steps][3:] == ["not_run", "not_run"]


@pytest.mark.parametrize("status", [409, 200])
async def test_the_export_waits_for_a_slow_save_as_replay_does(
    tab: Tab, tmp_path: Path, status: int
) -> None:
    """The exported test of the scenario above: its check of "Saved" held before the
    save's answer, the link cancelled it, and the test passed whatever the server said."""
    _SlowSave.status, _SlowSave.saves = status, 0
    with loopback_app(_SlowSave) as app:
        code, out = await run_exported(to_pytest(await save_then_leave(tab, app)), tmp_path, app)
    if status == 200:
        assert code == 0 and "1 passed" in out and _SlowSave.saves == 1, out
    else:
        assert code == 1 and "the server refused POST" in out and "409" in out, out


class _Invoices(QuietHandler):
    """Invoices (``?i=100,2200``), each row's "Mark paid" posting its number; ``paid``
    keeps which were."""

    paid: list[str] = []

    def do_GET(self) -> None:
        numbers = parse_qs(urlsplit(self.path).query)["i"][0].split(",")
        rows = "".join(
            f"<tr><td>{n}</td><td>ACME</td><td>250.00</td><td><button "
            f"onclick=\"fetch('/pay?n={n}', {{method: 'POST'}}).then(() => "
            f"this.textContent = 'Paid')\">Mark paid</button></td></tr>"
            for n in numbers
        )
        self.send(200, f"<!doctype html><title>Invoices</title><table>{rows}</table>".encode())

    def do_POST(self) -> None:
        self.paid.append(parse_qs(urlsplit(self.path).query)["n"][0])
        self.send(200, b"{}", Content_Type="application/json")


async def test_the_export_tells_a_row_by_its_whole_number_as_replay_does(
    tab: Tab, tmp_path: Path
) -> None:
    """Invoice 100's "Mark paid", recorded beside invoice 2200; another day the list holds
    1100 and 2200.  Replay refuses (1100's row lacks the number that told 100's apart);
    the export found the row by a pattern "100 ACME 250.00" that 1100's row holds, paid
    invoice 1100 and passed.  Where 100 is, both pay it."""
    _Invoices.paid = []
    with loopback_app(_Invoices) as app:
        await tab.page.goto(f"{app}/invoices?i=100,2200")
        button = await tab.page.query_selector("tr:nth-child(1) button")
        pay = await capture(button, budget=Budget(10_000))
        for numbers, pays in (("1100,2200", []), ("2200,100", ["100"])):
            steps = (ScenarioStep("navigate", {"url": f"{app}/invoices?i={numbers}"}),
                     ScenarioStep("click", {}, pay),
                     ScenarioStep("expect", {"kind": "text_visible", "text": "Paid"}))  # fmt: skip
            scenario = Scenario("Pay 100", steps, base_url=app)
            config = ReplayConfig(locate_wait_ms=1_000, person_wait_ms=0)
            result = await Replay(tab, scenario, config=config).run()
            assert result.ok is bool(pays) and _Invoices.paid == pays, result.to_dict()
            _Invoices.paid = []
            code, out = await run_exported(to_pytest(scenario), tmp_path, app, timeout_ms=4_000)
            assert (code == 0) is bool(pays) and _Invoices.paid == pays, out
            _Invoices.paid = []


class _StatusGrid(QuietHandler):
    """Orders whose Status is typed into a field in each row, as an app drawn by React
    keeps it: each key copied into the field's value attribute.  A row's Save posts it;
    the app answers ``{"ok": true}`` and shows the status as text, or ``{"ok": false}``
    when ``refuse`` is set, and the app, like many, says nothing."""

    refuse = False
    saved: list[str] = []

    def do_GET(self) -> None:
        rows = "".join(
            f"<tr><td>{who}</td><td><input aria-label=Status value=Pending "
            f'oninput="this.defaultValue = this.value"></td><td><button onclick="save(this)">'
            f"Save</button></td></tr>"
            for who in ("Ann", "Bob")
        )
        page = f"""<!doctype html><title>Orders</title><table>{rows}</table><script>
        async function save(button) {{
          const row = button.closest("tr"), field = row.querySelector("input");
          const answer = await fetch("/save", {{method: "POST", body: field.value}});
          if ((await answer.json()).ok) field.replaceWith(field.value);
        }}
        </script>"""
        self.send(200, page.encode())

    def do_POST(self) -> None:
        status = self.rfile.read(int(self.headers["Content-Length"])).decode()
        if not self.refuse:
            self.saved.append(status)
        body = b'{"ok": false}' if self.refuse else b'{"ok": true}'
        self.send(200, body, Content_Type="application/json")


@pytest.mark.parametrize("refuse", [True, False])
async def test_a_row_shows_no_status_typed_into_its_field_the_app_copied_as_typed(
    tab: Tab, tmp_path: Path, refuse: bool
) -> None:
    """Ann's Status typed "Shipped", its save answered ``{"ok": false}``, nothing drawn:
    a check that Ann's row shows "Shipped" held, the replay and its export passed.  A
    row's field counted with the value the app wrote, judged by the value attribute, and
    React copies each key typed into it.  What was typed, still shown, is no value the
    app wrote, wherever the attribute stands; the status the app shows once saved is."""
    _StatusGrid.refuse, _StatusGrid.saved = refuse, []
    with loopback_app(_StatusGrid) as app:
        await tab.page.goto(f"{app}/orders")
        budget = Budget(10_000)
        field = await capture(await tab.page.query_selector("tr input"), budget=budget)
        save = await capture(await tab.page.query_selector("tr button"), budget=budget)
        shipped = {"kind": "rows", "text": "Ann Shipped", "count": 1}
        steps = (ScenarioStep("navigate", {"url": f"{app}/orders"}),
                 ScenarioStep("fill", {"value": "Shipped"}, field),
                 ScenarioStep("click", {}, save),
                 ScenarioStep("expect", shipped))  # fmt: skip
        scenario = Scenario("Ship Ann's order", steps, base_url=app)
        result = await Replay(tab, scenario, config=ReplayConfig(check_timeout_ms=1_000)).run()
        assert result.ok is not refuse, result.to_dict()
        if refuse:
            assert result.reason.startswith("step 3 (expect"), result.reason
        code, out = await run_exported(to_pytest(scenario), tmp_path, app, timeout_ms=4_000)
        assert (code == 0) is not refuse, out
        assert _StatusGrid.saved == ([] if refuse else ["Shipped", "Shipped"])


class _Customers(QuietHandler):
    """A customer form whose Name holds at most 12 characters; ``added`` keeps the names
    its Add posted."""

    added: list[str] = []

    def do_GET(self) -> None:
        page = """<!doctype html><title>Customers</title><form method=post action=/add>
        <label>Name <input name=name maxlength=12></label><button>Add</button></form>"""
        self.send(200, page.encode() if self.path == "/new" else b"<p>Added</p>")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        self.added.append(parse_qs(body)["name"][0])
        self.send(303, Location="/done")


async def test_a_parameter_longer_than_its_field_holds_fails_its_row(
    tab: Tab, tmp_path: Path
) -> None:
    """A batch row's name longer than the field holds: the browser cut it, the replay
    and its export passed and the app added "Ada Lovelac".  The fill fails saying how much
    the field holds, nothing is added; a name that fits is added whole."""
    with loopback_app(_Customers) as app:
        await tab.page.goto(f"{app}/new")
        budget = Budget(10_000)
        name = await capture(await tab.page.query_selector("input"), budget=budget)
        add = await capture(await tab.page.query_selector("button"), budget=budget)
        steps = (ScenarioStep("navigate", {"url": f"{app}/new"}),
                 ScenarioStep("fill", {"value": "${name}"}, name),
                 ScenarioStep("click", {}, add),
                 ScenarioStep("expect", {"kind": "text_visible", "text": "Added"}))  # fmt: skip
        scenario = Scenario("Add a customer", steps, base_url=app,
                            params={"name": {"default": "Ada"}})  # fmt: skip
        for given in ("Ada Lovelace King", "Ada Lovelace"):
            _Customers.added = []
            result = await Replay(tab, scenario, params={"name": given}).run()
            fits = len(given) <= 12
            assert result.ok is fits, result.to_dict()
            if not fits:
                assert result.reason.startswith("step 1 (fill"), result.reason
                assert "holds at most 12 characters" in result.reason, result.reason
            env = {"TABWRIGHT_PARAM_name": given}
            code, out = await run_exported(to_pytest(scenario), tmp_path, app, env)
            assert (code == 0) is fits, out
            assert "holds at most 12 characters" in out or fits, out
            assert _Customers.added == ([given, given] if fits else []), _Customers.added
