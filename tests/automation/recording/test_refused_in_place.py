"""A save the app refuses on the same page (HTTP 200, the same address, what was typed shown
again in its field, an error list above it: as Django's admin does) fails the replay and
its pytest export, with the checks the run proposed ticked; saved, both pass, the app's
success banner in a ``role=alert`` (Bootstrap's) or a status list shown.  Before, the
only ticked check (the field shows what was typed) held on the refusal.

Rows are the app's data: a text a run typed that only a message lists ("Customer Zeta
Corp was added") is no row, so an error repeating it ("A customer named Zeta Corp already
exists") is none either.  And a rows check counts a row's field values the app wrote in
the export as in replay."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from automation import Tab
from automation.actions import execute
from automation.recording.export import to_pytest
from automation.recording.propose import Proposal, propose_checks
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario, ScenarioStep
from tests.bounds import room
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import ref_of

pytestmark = pytest.mark.long  # one of the longest files: dealt out first

BANNERS = {  # how the app says it saved
    "alert": '<div class="alert alert-success" role="alert">{said}</div>',
    "toast": '<div role="alert">{said}</div>',  # an alert saying words alone
    "status": '<ul class="messagelist" role="status"><li class="success">{said}</li></ul>',
}
ERRORS = {  # how the app says it refused: (above the form, beside the field)
    "django": ('<p class="errornote">Please correct the error below.</p>',
               '<ul class="errorlist"><li>{said}</li></ul>'),
    "alert": ("", '<div role="alert">{said}</div>'),
    "invalid": ("", '<div class="invalid-feedback">{said}</div>'),
    "tailwind": ("", '<ul class="text-sm text-red-600 dark:text-red-400 space-y-1 mt-2">'
                     "<li>{said}</li></ul>"),  # (Laravel Breeze's: only its colour says it)
}  # fmt: skip
PAGE = """<!doctype html><title>{title}</title><h1>{title}</h1>{banner}{note}
<form method="post"><label>Name: <input name="name" value="{name}"{invalid}></label>{error}
<button name="{button}">{label}</button></form>{script}"""
# An app busy a moment as its form's Enter is pressed (a suggestion list redrawn): the form
# is asked for after the key's own events are done.
BUSY_ON_ENTER = """<script>document.querySelector("input").addEventListener("keydown", e => {
  if (e.key === "Enter") setTimeout(() => { const t = Date.now(); while (Date.now() - t < 200); });
});</script>"""


@dataclass
class Office:
    """Customers by id; ``taken``: names another customer holds (the save is refused)."""

    banner: str = "alert"
    errors: str = "django"
    customers: dict[int, str] = field(default_factory=lambda: {1: "Acme Ltd"})
    taken: set[str] = field(default_factory=set)
    flash: str = ""
    url: str = ""
    script: str = ""

    def reset(self, *, taken: set[str]) -> None:
        self.customers, self.taken, self.flash = {1: "Acme Ltd"}, taken, ""


@pytest.fixture
def office() -> Iterator[Office]:
    state = Office()

    class Handler(QuietHandler):
        def page(self, title: str, name: str, refused: str = "", adding: bool = False) -> None:
            note, error = ERRORS[state.errors] if refused else ("", "")
            said = state.flash
            state.flash = ""
            button = ("_addanother", "Save and add another") if adding else (
                "_continue", "Save and continue editing")  # fmt: skip
            html = PAGE.format(
                title=title, name=escape(name), note=note,
                banner=BANNERS[state.banner].format(said=escape(said)) if said else "",
                error=error.format(said=escape(refused)),
                invalid=' aria-invalid="true"' if refused and state.errors == "invalid" else "",
                button=button[0], label=button[1], script=state.script)  # fmt: skip
            self.send(200, html.encode())

        def do_GET(self) -> None:
            if self.path.startswith("/customers/add/"):
                self.page("Add customer", "", adding=True)
            else:
                self.page("Change customer", state.customers[1])

        def do_POST(self) -> None:
            form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            name = form.get("name", [""])[0]
            adding = self.path.startswith("/customers/add/")
            if name in state.taken or (adding and name in state.customers.values()):
                said = f"A customer named “{name}” already exists."
                title = "Add customer" if adding else "Change customer"
                self.page(title, name, refused=said, adding=adding)
                return
            if adding:
                state.customers[len(state.customers) + 1] = name
                state.flash = f"The customer “{name}” was added. You may add another below."
            else:
                state.customers[1] = name
                state.flash = f"The customer “{name}” was changed successfully."
            self.send(302, Location=self.path)

    with loopback_app(Handler) as state.url:
        yield state


async def recorded(tab: Tab, url: str, name: str, button: str) -> tuple[Scenario, list[Proposal]]:
    """A run that types ``name`` and saves with ``button``, and the checks it proposes: the
    scenario with those ticked, as the save page keeps them."""
    await tab.navigate(url)
    rows: list[dict[str, Any]] = [{"action": "navigate", "args": {"url": url}, "ok": True}]
    for action, role, label, args in (("fill", "textbox", "Name:", {"value": name}),
                                      ("click", "button", button, {})):  # fmt: skip
        target = await tab.target(ref_of(await tab.snapshot(), role, label))
        await execute(tab, action, {"ref": target.ref, **args}, budget=room())
        assert target.identity is not None
        rows.append({"action": action, "args": args, "identity": target.identity.to_dict(),
                     "ok": True})  # fmt: skip
    proposals = await propose_checks(tab, rows, budget=room())
    steps = [ScenarioStep.from_dict({k: v for k, v in row.items() if k != "ok"}) for row in rows]
    steps += [p.check for p in proposals if p.picked]
    base = url.split("/customers/")[0] + "/"
    return Scenario("Save a customer", tuple(steps), base_url=base), proposals


async def replayed_and_exported(
    tab: Tab, office: Office, scenario: Scenario, tmp_path: Path, *, refused: set[str]
) -> tuple[bool, int, str]:
    """The scenario replayed and its export run, each on the app's first day's data with
    ``refused`` names taken: whether the replay passed, the export's status and output."""
    office.reset(taken=refused)
    result = await Replay(tab, scenario).run()
    replayed = dict(office.customers)
    office.reset(taken=refused)
    code, out = await run_exported(to_pytest(scenario), tmp_path, office.url, timeout_ms=4_000)
    assert office.customers == replayed  # the export did what the replay did
    return result.ok, code, out


@pytest.mark.parametrize(
    ("banner", "errors"), [("alert", "django"), ("status", "alert"), ("alert", "invalid")]
)
async def test_a_save_refused_on_the_same_page_fails_replay_and_export(
    tab: Tab, office: Office, tmp_path: Path, banner: str, errors: str
) -> None:
    office.banner, office.errors = banner, errors
    url = f"{office.url}/customers/1/change/"
    scenario, proposals = await recorded(tab, url, "Acme Holdings", "Save and continue editing")
    picked = [p.check.describe() for p in proposals if p.picked]
    assert picked == [
        "expect the page shows no error",
        "expect textbox 'Name:' shows 'Acme Holdings'",
    ]
    # Another customer holds the name: refused, what was typed shown again with the error.
    ok, code, out = await replayed_and_exported(
        tab, office, scenario, tmp_path, refused={"Acme Holdings"}
    )
    assert office.customers[1] == "Acme Ltd"
    assert not ok and code == 1, out
    assert "expected the page to show no error, but it shows" in out, out
    ok, code, out = await replayed_and_exported(tab, office, scenario, tmp_path, refused=set())
    assert office.customers[1] == "Acme Holdings"
    assert ok and code == 0 and "1 passed" in out, out


async def test_a_field_showing_what_was_typed_beside_an_error_is_not_ticked(
    tab: Tab, office: Office
) -> None:
    """Recorded on the refusal itself: no check says it saved."""
    office.reset(taken={"Acme Holdings"})
    url = f"{office.url}/customers/1/change/"
    _, proposals = await recorded(tab, url, "Acme Holdings", "Save and continue editing")
    offered = [(p.check.describe(), p.picked) for p in proposals]
    assert ("expect textbox 'Name:' shows 'Acme Holdings'", False) in offered
    assert not [words for words, picked in offered if picked], offered


async def test_a_text_only_a_message_lists_is_no_row(
    tab: Tab, office: Office, tmp_path: Path
) -> None:
    office.banner, office.errors = "status", "django"
    url = f"{office.url}/customers/add/"
    scenario, proposals = await recorded(tab, url, "Zeta Corp", "Save and add another")
    offered = {p.check.describe(): p.picked for p in proposals}
    assert "expect at least 1 row(s) show 'Zeta Corp'" not in offered, offered
    assert offered["expect text 'Zeta Corp' is visible"] is False
    # The customer is there already: the error repeats the name, in a list of its own.
    ok, code, out = await replayed_and_exported(tab, office, scenario, tmp_path, refused=set())
    assert ok and code == 0 and "1 passed" in out, out
    rows = replace(scenario.steps[-1], args={"kind": "rows", "text": "Zeta Corp", "count": 1,
                                              "at_least": True})  # fmt: skip
    with_rows = replace(scenario, steps=(*scenario.steps[:3], rows))
    for one in (scenario, with_rows):
        ok, code, out = await replayed_and_exported(
            tab, office, one, tmp_path, refused={"Zeta Corp"}
        )
        assert office.customers == {1: "Acme Ltd"}
        assert not ok and code == 1, out


def bare(scenario: Scenario, *more: ScenarioStep) -> Scenario:
    """``scenario``'s steps without its checks, then ``more``."""
    steps = tuple(s for s in scenario.steps if not s.is_check)
    return replace(scenario, steps=(*steps, *more))


@pytest.mark.parametrize("errors", ["django", "invalid", "tailwind", "alert"])
async def test_a_save_refused_on_the_same_page_fails_with_no_check_after_it(
    tab: Tab, office: Office, tmp_path: Path, errors: str
) -> None:
    """No check after the save (a person unticked them, or the scenario goes on): the
    errors the page shows once it answered the save on the same page fail it, in replay
    and export, naming what the page said; saved, both pass."""
    office.errors = errors
    url = f"{office.url}/customers/1/change/"
    recorded_, _ = await recorded(tab, url, "Acme Holdings", "Save and continue editing")
    then = ScenarioStep("navigate", {"url": f"{office.url}/customers/add/"})
    for scenario in (bare(recorded_), bare(recorded_, then)):
        ok, code, out = await replayed_and_exported(
            tab, office, scenario, tmp_path, refused={"Acme Holdings"}
        )
        assert office.customers[1] == "Acme Ltd"
        assert not ok and code == 1, out
        said = "the app answered what the step sent on the same page, saying"
        assert said in out and "already exists" in out, out
        ok, code, out = await replayed_and_exported(tab, office, scenario, tmp_path, refused=set())
        assert office.customers[1] == "Acme Holdings"
        assert ok and code == 0 and "1 passed" in out, out
    office.reset(taken={"Acme Holdings"})
    result = await Replay(tab, bare(recorded_, then)).run()
    failed = result.steps[2]
    assert [s.status for s in result.steps] == ["passed", "passed", "failed", "not_run"]
    assert failed.error is not None and failed.error["code"] == "refused_in_place", failed.error
    assert (
        "already exists" in failed.error["message"]
        or "correct the error" in failed.error["message"]
    ), failed.error


async def test_a_form_sent_by_a_key_where_the_focus_is_and_refused_fails(
    tab: Tab, office: Office, tmp_path: Path
) -> None:
    """Enter pressed where the focus is (a step with no element: a keyboard's) sends the
    form the field is in: refused on the same page, the step fails, in replay and in the
    export (whose key waits for the form it sent to be answered, as a click does, on a
    page busy a moment as the key is pressed too)."""
    url = f"{office.url}/customers/1/change/"
    recorded_, _ = await recorded(tab, url, "Acme Holdings", "Save and continue editing")
    navigate, fill, _click = recorded_.steps[:3]
    enter = ScenarioStep("press", {"key": "Enter"})
    scenario = replace(recorded_, steps=(navigate, fill, enter))
    office.reset(taken={"Acme Holdings"})
    result = await Replay(tab, scenario).run()
    assert not result.ok and office.customers[1] == "Acme Ltd"
    assert (
        "step 2 (press): the app answered what it sent on the same page, saying 'Please "
        "correct the error below.'" in result.reason
    ), result.reason
    office.reset(taken=set())
    result = await Replay(tab, scenario).run()
    assert result.ok and office.customers[1] == "Acme Holdings", result.to_dict()
    office.script = BUSY_ON_ENTER  # (a key that did not wait ends the test before it)
    ok, code, out = await replayed_and_exported(
        tab, office, scenario, tmp_path, refused={"Acme Holdings"}
    )
    assert not ok and code == 1, out
    assert "on the same page, saying 'Please correct the error below.'" in out, out
    ok, code, out = await replayed_and_exported(tab, office, scenario, tmp_path, refused=set())
    assert ok and code == 0 and "1 passed" in out, out


async def test_a_save_refused_as_the_last_step_of_a_called_scenario_fails_in_both(
    tab: Tab, office: Office, tmp_path: Path
) -> None:
    """The save is the last step of a scenario another calls: judged there, in replay
    (the called scenario's own end) and in the export (its function has no end of its
    own: judged at the step)."""
    url = f"{office.url}/customers/1/change/"
    recorded_, _ = await recorded(tab, url, "Acme Holdings", "Save and continue editing")
    rename = replace(bare(recorded_), name="Rename")
    call = ScenarioStep("call", {"scenario": "Rename", "params": {}})
    caller = Scenario("Rename, called", (call,), base_url=rename.base_url,
                      callees={"Rename": rename})  # fmt: skip
    ok, code, out = await replayed_and_exported(
        tab, office, caller, tmp_path, refused={"Acme Holdings"}
    )
    assert not ok and code == 1, out
    assert "on the same page, saying 'Please correct the error below.'" in out, out
    ok, code, out = await replayed_and_exported(tab, office, caller, tmp_path, refused=set())
    assert ok and code == 0 and "1 passed" in out, out


async def test_a_secret_the_refusal_repeats_is_redacted_from_its_step(
    tab: Tab, office: Office
) -> None:
    """The name typed is a secret's value and the page's error repeats it: the failed
    step, judged at the end, says the error with the value redacted, as every step does."""
    url = f"{office.url}/customers/1/change/"
    recorded_, _ = await recorded(tab, url, "Acme Holdings", "Save and continue editing")
    navigate, fill, click = bare(recorded_).steps
    secret = replace(fill, args={"value": "${SECRET:NAME}"})
    scenario = replace(recorded_, steps=(navigate, secret, click))
    office.reset(taken={"Acme Holdings"})
    env = {"TABWRIGHT_SECRET_NAME": "Acme Holdings"}
    result = await Replay(tab, scenario, env=env).run()
    failed = result.steps[2]
    assert not result.ok and failed.error is not None, result.to_dict()
    assert "A customer named “•••” already exists." in failed.error["message"], failed.error
    assert "Acme Holdings" not in str(result.to_dict())


async def test_a_refusal_a_check_after_the_save_expects_passes(
    tab: Tab, office: Office, tmp_path: Path
) -> None:
    """A scenario that tests the form's refusal: its check of the error's words makes the
    error its own, in replay and export; where the save goes through, the check fails."""
    url = f"{office.url}/customers/1/change/"
    recorded_, _ = await recorded(tab, url, "Acme Holdings", "Save and continue editing")
    said = ScenarioStep("expect", {"kind": "text_visible", "text": "already exists"})
    note = ScenarioStep("expect", {"kind": "text_visible", "text": "correct the error below"})
    scenario = bare(recorded_, said, note)
    ok, code, out = await replayed_and_exported(
        tab, office, scenario, tmp_path, refused={"Acme Holdings"}
    )
    assert ok and code == 0 and "1 passed" in out, out
    ok, code, out = await replayed_and_exported(tab, office, scenario, tmp_path, refused=set())
    assert not ok and code == 1, out
    assert "expected the page to show 'already exists'" in out, out


async def test_a_save_that_says_so_in_an_alert_alone_passes_with_no_check_after_it(
    tab: Tab, office: Office, tmp_path: Path
) -> None:
    """The app's success said in an alert with no class (a toast "… was changed
    successfully" in ``role=alert``) is no refusal: an alert saying words alone is not
    read as one here (a check that the page shows no error reads it, as ever)."""
    office.banner = "toast"
    url = f"{office.url}/customers/1/change/"
    recorded_, _ = await recorded(tab, url, "Acme Holdings", "Save and continue editing")
    ok, code, out = await replayed_and_exported(
        tab, office, bare(recorded_), tmp_path, refused=set()
    )
    assert office.customers[1] == "Acme Holdings"
    assert ok and code == 0 and "1 passed" in out, out


ITEMS = """<!doctype html><title>Items</title><h1>Items</h1><table>{rows}</table>
<form method="post"><label>New item <input name="item"></label><button>Add</button></form>"""


@pytest.mark.parametrize(
    "wears",
    ['<button class="btn btn-danger">Delete</button>', '<span class="badge bg-danger">New</span>'],
    ids=["a delete button", "a status badge"],
)
async def test_a_row_added_in_place_with_a_delete_button_styled_danger_passes(
    tab: Tab, tmp_path: Path, wears: str
) -> None:
    """The form's answer is the same page with the new row, and each row has a "Delete"
    button styled ``btn-danger`` or a status badge styled so: neither is an error the
    page says, so the save is no refusal there, in replay and export."""
    items: list[str] = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            rows = "".join(f"<tr><td>{escape(i)}</td><td>{wears}</td></tr>" for i in items)
            self.send(200, ITEMS.format(rows=rows).encode())

        def do_POST(self) -> None:
            form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            items.append(form["item"][0])
            self.do_GET()  # answered in place, HTTP 200

    box = {"role": "textbox", "name": "New item", "tag": "input", "name_attr": "item"}
    add = {"role": "button", "name": "Add", "tag": "button", "text": "Add"}
    with loopback_app(Handler) as base:
        fill = {"action": "fill", "args": {"value": "Bolt"}, "identity": box}
        click = {"action": "click", "args": {}, "identity": add}
        steps = (ScenarioStep("navigate", {"url": f"{base}/items"}),
                 ScenarioStep.from_dict(fill), ScenarioStep.from_dict(click))  # fmt: skip
        scenario = Scenario("Add an item", steps, base_url=base + "/")
        result = await Replay(tab, scenario).run()
        assert result.ok, result.to_dict()
        code, out = await run_exported(to_pytest(scenario), tmp_path, base, timeout_ms=3_000)
    assert code == 0 and "1 passed" in out, out
    assert items == ["Bolt", "Bolt"]


LINES = """<!doctype html><title>Order 7</title><h1>Order 7</h1><form method="post"><table>
<tr><th>Product</th><th>Qty</th></tr>{rows}</table><button>Save</button></form>"""


@pytest.mark.parametrize("saved", [True, False])
async def test_a_rows_check_reads_the_values_the_app_wrote_in_export_as_in_replay(
    tab: Tab, tmp_path: Path, saved: bool
) -> None:
    lines = ["Bolt", "Nut", *(["Screw"] if saved else [])]

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            rows = "".join(f'<tr><td><input name="product" value="{p}"></td>'
                           '<td><input name="qty" value="1"></td></tr>' for p in lines)  # fmt: skip
            self.send(200, LINES.format(rows=rows).encode())

    with loopback_app(Handler) as base:
        steps = (ScenarioStep("navigate", {"url": f"{base}/orders/7/"}),
                 ScenarioStep("expect", {"kind": "rows", "text": "Screw", "count": 1,
                                         "at_least": True}))  # fmt: skip
        scenario = Scenario("Order lines", steps, base_url=base + "/")
        result = await Replay(tab, scenario).run()
        code, out = await run_exported(to_pytest(scenario), tmp_path, base, timeout_ms=3_000)
    assert result.ok is saved, result.to_dict()
    assert code == (0 if saved else 1), out
    if not saved:
        assert "expected at least 1 row(s) to show 'Screw' (waited" in out, out
        assert "but 0 row(s) show it" in out, out


async def test_a_page_whose_errors_cant_be_read_in_time_fails_the_step_saying_so(
    tab: Tab, office: Office, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No time to read what errors the page shows around a save (a page too big or too
    busy for it): the step fails naming that read, not the step's own time, and is not
    passed unjudged (a refusal would pass)."""
    from automation.recording import answered

    url = f"{office.url}/customers/1/change/"
    recorded_, _ = await recorded(tab, url, "Acme Holdings", "Save and continue editing")
    office.reset(taken=set())
    monkeypatch.setattr(answered, "_READ_MS", 0)
    result = await Replay(tab, bare(recorded_)).run()
    failed = result.steps[1]  # (the fill, whose write an app may send as it is typed)
    assert not result.ok and failed.error is not None, result.to_dict()
    assert failed.error["code"] == "budget_exceeded", failed.error
    assert "the read of the errors the page shows ran out" in failed.error["message"]


# A price edited in place and saved by script: the answer says whether it was kept, and a
# toast says so for a moment, then hides itself (``hides_ms`` after it shows).
PRICES = """<!doctype html><title>Prices</title><main><h1>Prices</h1>
<label>Price <input id=price value="12.00"></label> <button id=save>Save</button>
<div id=toasts></div><script>
save.onclick = async () => {
  const answer = await (await fetch("/price", {method: "POST", body: price.value})).json();
  const toast = document.createElement("div");
  toast.className = answer.ok ? "toast toast-success" : "toast toast-error";
  toast.textContent = answer.ok ? "Price updated" : "The price can't be below cost";
  toasts.append(toast);
  setTimeout(() => toast.remove(), HIDES_MS);
};
</script></main>"""


class _Prices(QuietHandler):
    kept: list[str] = []
    refuse = False

    def do_GET(self) -> None:
        self.send(200, PRICES.replace("HIDES_MS", "1500").encode(), Content_Type="text/html")

    def do_POST(self) -> None:
        price = self.rfile.read(int(self.headers["Content-Length"])).decode()
        if not self.refuse:
            _Prices.kept.append(price)
        self.send(200, b'{"ok": %s}' % (b"false" if self.refuse else b"true"),
                  Content_Type="application/json")  # fmt: skip


@pytest.mark.parametrize("refuse", [True, False], ids=["refused", "kept"])
async def test_a_toast_saying_why_that_hides_itself_fails_the_last_save(
    tab: Tab, tmp_path: Path, refuse: bool
) -> None:
    """The last step's save refused, saying so in a toast that hides itself 1.5 s later:
    the errors were read only once what the step left for later was done (the toast's
    own timer among it), and the replay and its export passed with the price not kept.
    What the page shows right after the step counts too; a toast saying it was kept
    passes."""
    _Prices.refuse, _Prices.kept = refuse, []
    with loopback_app(_Prices) as app:
        steps = tuple(ScenarioStep.from_dict(step) for step in (
            {"action": "navigate", "args": {"url": f"{app}/prices"}},
            {"action": "fill", "args": {"value": "9.50"},
             "identity": {"role": "textbox", "name": "Price", "tag": "input"}},
            {"action": "click", "args": {},
             "identity": {"role": "button", "name": "Save", "tag": "button"}},
        ))  # fmt: skip
        scenario = Scenario("Price", steps, base_url=f"{app}/")
        result = await Replay(tab, scenario).run()
        code, out = await run_exported(to_pytest(scenario), tmp_path, f"{app}/")
    assert _Prices.kept == ([] if refuse else ["9.50", "9.50"])
    if not refuse:
        assert result.ok and code == 0, (result.to_dict(), out)
        return
    said = 'on the same page, saying "The price can\'t be below cost"'
    assert result.status == "failed" and said in result.reason, result.to_dict()
    assert code == 1 and said in out, out
