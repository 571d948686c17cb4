"""Saves a replay reads again for what they did: a refusal the HTTP status does not tell
(``{"ok": false}``) said in a toast that hides itself, a switch a click turned on, a
value the last step wrote, a page the app loads after a save, a save the app left for
later sent before a step leaves the page."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from automation import Tab
from automation.browser.identity import capture
from automation.budget import Budget
from automation.recording.export import to_pytest
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario, ScenarioStep
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

pytestmark = pytest.mark.long  # one of the longest files: dealt out first


class _Saves(QuietHandler):
    """An app whose save is answered ``{"ok": false}`` when ``refuse`` is set, else
    ``{"ok": true}``: a refusal its HTTP status does not tell."""

    refuse = True

    def do_POST(self) -> None:
        body = b'{"ok": false}' if self.refuse else b'{"ok": true}'
        self.send(200, body, Content_Type="application/json")


class _Toasts(_Saves):
    """A profile whose Save answers ``{"ok": false}`` when ``refuse`` is set: the app says
    so in an error toast (``role=alert``) that hides itself after ``toast_ms``, as toast
    libraries do (3 to 6 s); else a "Saved" toast (``role=status``)."""

    toast_ms = 1_500
    said = "Could not save your display name"  # what the error toast says

    def do_GET(self) -> None:
        page = f"""<!doctype html><title>Profile</title><h1>Profile</h1>
        <button id=save>Save</button><div id=toasts></div><script>
        save.onclick = async () => {{
          const ok = (await (await fetch("/save", {{method: "POST"}})).json()).ok;
          const toast = document.createElement("div");
          toast.setAttribute("role", ok ? "status" : "alert");
          toast.textContent = ok ? "Saved" : {json.dumps(self.said)};
          toasts.append(toast);
          setTimeout(() => toast.remove(), {self.toast_ms});
        }};
        </script>"""
        self.send(200, page.encode())


@pytest.mark.parametrize("refuse", [True, False])
async def test_an_error_toast_that_hides_itself_fails_the_no_error_check(
    tab: Tab, tmp_path: Path, refuse: bool
) -> None:
    """A save refused, the app saying so in a toast that hides itself after 1.5 s: the
    no_error check was read until it held, so once the toast had gone, and the replay
    and its export passed.  An error read fails the check at once; a save the app took
    passes."""
    _Toasts.refuse = refuse
    with loopback_app(_Toasts) as app:
        await tab.page.goto(f"{app}/profile")
        save = await capture(await tab.page.query_selector("#save"), budget=Budget(10_000))
        steps = (ScenarioStep("navigate", {"url": f"{app}/profile"}),
                 ScenarioStep("click", {}, save),
                 ScenarioStep("expect", {"kind": "no_error"}))  # fmt: skip
        scenario = Scenario("Save the profile", steps, base_url=app)
        result = await Replay(tab, scenario).run()
        assert result.ok is not refuse, result.to_dict()
        if refuse:
            assert "Could not save your display name" in result.reason, result.reason
        code, out = await run_exported(to_pytest(scenario), tmp_path, app)
        assert (code == 0) is not refuse, out
        assert "Could not save your display name" in out or not refuse, out


class _SaidToasts(_Toasts):
    """The same profile, its refusal said in the app's own words (``said``)."""


@pytest.mark.parametrize(
    ("refuse", "said"),
    [(True, "Something went wrong. Please try again."),
     (True, "You don't have permission to change this profile"),
     (False, "")],
)  # fmt: skip
async def test_a_refusal_a_toast_says_in_everyday_words_fails_a_save_with_no_check(
    tab: Tab, tmp_path: Path, refuse: bool, said: str
) -> None:
    """A save answered ``{"ok": false}`` (HTTP 200), the app saying why in an alert toast
    that hides itself, in words of its own, and no check after it: the alert's words named
    no refusal the replay knew ("required", "could not"...), so the replay and its export
    passed a save never made.  Now both fail saying what the toast said; a save the app
    took passes."""
    _SaidToasts.refuse, _SaidToasts.said = refuse, said
    with loopback_app(_SaidToasts) as app:
        await tab.page.goto(f"{app}/profile")
        save = await capture(await tab.page.query_selector("#save"), budget=Budget(10_000))
        steps = (ScenarioStep("navigate", {"url": f"{app}/profile"}),
                 ScenarioStep("click", {}, save))  # fmt: skip
        scenario = Scenario("Save the profile", steps, base_url=app)
        result = await Replay(tab, scenario).run()
        assert result.ok is not refuse, result.to_dict()
        assert not refuse or said in result.reason, result.reason
        code, out = await run_exported(to_pytest(scenario), tmp_path, app)
        assert (code == 0) is not refuse, out
        assert not refuse or said.replace("'", "\\'") in out or said in out, out


class _Notifications(_Saves):
    """A switch (``role=switch``) whose click saves it; the save answered ``{"ok": false}``
    when ``refuse`` is set, and the app turns the switch back off 300 ms later."""

    def do_GET(self) -> None:
        page = """<!doctype html><title>Settings</title><h1>Notifications</h1>
        <button id=mail role=switch aria-checked=false>Email me</button><script>
        mail.onclick = async () => {
          mail.setAttribute("aria-checked", "true");
          const ok = (await (await fetch("/save", {method: "POST"})).json()).ok;
          if (!ok) setTimeout(() => mail.setAttribute("aria-checked", "false"), 300);
        };
        </script>"""
        self.send(200, page.encode())


@pytest.mark.parametrize("refuse", [True, False])
async def test_a_switch_a_click_turned_on_is_read_again_at_the_end(
    tab: Tab, tmp_path: Path, refuse: bool
) -> None:
    """An agent (or an MCP client) turns a switch on with a click, a wait for the page's
    heading after it: its save refused, the app turned it back off, and the replay and its
    export passed (only a check step's box, and only the very last step's, was read
    again).  A click on a box is read right after and again at the end, past waits."""
    _Notifications.refuse = refuse
    with loopback_app(_Notifications) as app:
        await tab.page.goto(f"{app}/settings")
        switch = await capture(await tab.page.query_selector("#mail"), budget=Budget(10_000))
        assert switch.role == "switch"
        steps = (ScenarioStep("navigate", {"url": f"{app}/settings"}),
                 ScenarioStep("click", {}, switch),
                 ScenarioStep("wait_for", {"text": "Notifications"}))  # fmt: skip
        scenario = Scenario("Email me", steps, base_url=app)
        result = await Replay(tab, scenario).run()
        assert result.ok is not refuse, result.to_dict()
        if refuse:
            assert result.reason.startswith("step 1 (click"), result.reason
            assert result.reason.endswith("the box is not ticked"), result.reason
        code, out = await run_exported(to_pytest(scenario), tmp_path, app, timeout_ms=4_000)
        assert (code == 0) is not refuse, out


class _InlineEdit(_Saves):
    """An order edited in place: its status (a select) and its reference (a text field)
    are saved as they change (the text 200 ms after the last key), the save answered
    ``{"ok": false}`` when ``refuse`` is set; the app then puts the value from before back
    300 ms later, else writes the reference as it keeps it (upper case)."""

    def do_GET(self) -> None:
        page = """<!doctype html><title>Order 12</title><h1>Order 12</h1>
        <label>Status <select id=state><option>Pending</option><option>Shipped</option>
        </select></label>
        <label>Reference <input id=reference value="ab-1"></label><script>
        for (const field of [state, reference]) {
          let kept = field.value, timer;
          const save = async () => {
            const ok = (await (await fetch("/save", {method: "POST"})).json()).ok;
            const value = field === reference ? field.value.toUpperCase() : field.value;
            setTimeout(() => { field.value = ok ? value : kept; kept = field.value; }, 300);
          };
          field.addEventListener(field === state ? "change" : "input", () => {
            clearTimeout(timer);
            timer = setTimeout(save, field === state ? 0 : 200);
          });
        }
        </script>"""
        self.send(200, page.encode())


@pytest.mark.parametrize("refuse", [True, False])
@pytest.mark.parametrize("field", ["state", "reference"])
async def test_a_value_the_last_step_wrote_is_read_again_at_the_end(
    tab: Tab, tmp_path: Path, refuse: bool, field: str
) -> None:
    """A status picked (or a reference typed) as a scenario's last step, the app saving it
    as it changes: its save refused, the app put the old value back, and the replay and
    its export passed with no check to read it.  The field the last step writes is read
    before it, after it, and again at the end: showing the old value again fails it; the
    value as the app keeps it (written in upper case) passes.  (A choice that asked the
    server is held as it is made, and fails at once.)"""
    _InlineEdit.refuse = refuse
    with loopback_app(_InlineEdit) as app:
        await tab.page.goto(f"{app}/order")
        found = await capture(await tab.page.query_selector(f"#{field}"), budget=Budget(10_000))
        picks = field == "state"
        write = ScenarioStep("select_option", {"values": ["Shipped"]}, found) if picks else (
            ScenarioStep("fill", {"value": "ab-2"}, found))  # fmt: skip
        steps = (ScenarioStep("navigate", {"url": f"{app}/order"}), write)
        scenario = Scenario("Edit order 12", steps, base_url=app)
        result = await Replay(tab, scenario).run()
        assert result.ok is not refuse, result.to_dict()
        # A choice is held once made (the app asked its server, and puts it back a
        # moment after the answer): its own step fails.  The reference, saved after a
        # pause in the typing, is read again at the end.
        said = "but the page put it back as it was" if picks else "again, as before the step"
        if refuse:
            assert result.reason.startswith("step 1 ("), result.reason
            assert said in result.reason, result.reason
            assert picks or "it shows 'ab-1' again, as before the step" in result.reason
        code, out = await run_exported(to_pytest(scenario), tmp_path, app, timeout_ms=4_000)
        assert (code == 0) is not refuse, out
        exported = "the page put the choice back as it was" if picks else said
        assert exported in out or not refuse, out


class _Reloads(QuietHandler):
    """A setting saved 1.5 s after its box is ticked (long enough for the check after the
    tick to be read first on a busy machine too: the page it reads goes away then);
    the save is refused (``{"ok":
    false}``) when ``refuse`` is set.  Then the app, as ``goes`` says, loads the page
    again (``reload``: the box as the server keeps it) or goes on to ``/error`` (an
    error banner) or ``/done`` ("Saved")."""

    refuse, goes, on = True, "reload", False

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path in ("/error", "/done"):
            said = (
                '<div class="alert alert-danger">Your settings could not be saved</div>'
                if path == "/error"
                else '<p class="alert alert-success">Saved</p>'
            )
            self.send(200, f"<!doctype html><title>Settings</title>{said}".encode())
            return
        after = "location.reload()" if self.goes == "reload" else (
            'location.assign(ok ? "/done" : "/error")')  # fmt: skip
        page = f"""<!doctype html><title>Settings</title><h1>Settings</h1><label>
        <input type=checkbox id=digest {"checked" if _Reloads.on else ""}> Weekly digest
        </label><script>
        digest.onchange = () => setTimeout(async () => {{
          const ok = (await (await fetch("/save", {{method: "POST"}})).json()).ok;
          {after};
        }}, 1500);
        </script>"""
        self.send(200, page.encode())

    def do_POST(self) -> None:
        _Reloads.on = _Reloads.on or not self.refuse
        self.send(200, b'{"ok": false}' if self.refuse else b'{"ok": true}',
                  Content_Type="application/json")  # fmt: skip


@pytest.mark.parametrize("refuse", [True, False])
@pytest.mark.parametrize("goes", ["reload", "leave"])
async def test_a_page_the_app_loads_after_a_save_is_read_for_what_the_save_did(
    tab: Tab, tmp_path: Path, refuse: bool, goes: str
) -> None:
    """A box ticked and checked, its save sent 1.5 s later and refused, after which the
    app loads its page again (the box unticked, as the server keeps it) or goes on to an
    error page: the checks were never read again once a page loaded, and the replay and
    its export passed.  The same page loaded again is read again; another page the app
    went on to is read for an error.  A save the server kept passes either way."""
    _Reloads.refuse, _Reloads.goes, _Reloads.on = refuse, goes, False
    with loopback_app(_Reloads) as app:
        await tab.page.goto(f"{app}/settings")
        box = await capture(await tab.page.query_selector("#digest"), budget=Budget(10_000))
        steps = (ScenarioStep("navigate", {"url": f"{app}/settings"}),
                 ScenarioStep("check", {"checked": True}, box),
                 ScenarioStep("expect", {"kind": "checked"}, box))  # fmt: skip
        scenario = Scenario("Weekly digest", steps, base_url=app)
        result = await Replay(tab, scenario).run()
        assert result.ok is not refuse, result.to_dict()
        said = "could not be saved" if goes == "leave" else "it is not ticked"
        assert said in result.reason or not refuse, result.reason
        _Reloads.on = False
        code, out = await run_exported(to_pytest(scenario), tmp_path, app, timeout_ms=4_000)
        assert (code == 0) is not refuse, out
        assert (said if goes == "leave" else "expected to be checked") in out or not refuse, out


class _Notes(QuietHandler):
    """An order's note, saved 600 ms after the last key (a debounce), refused (500) when
    ``refuse`` is set; a link back to the list of orders.  The notes it kept: ``saved``."""

    refuse, saved = False, []

    def do_GET(self) -> None:
        if urlsplit(self.path).path == "/orders":
            self.send(200, b"<!doctype html><title>Orders</title><h1>Orders</h1>")
            return
        self.send(
            200,
            b"""<!doctype html><title>Order 12</title><h1>Order 12</h1>
        <label>Note <input id=note></label> <a href="/orders">Back to orders</a><script>
        let timer;
        note.oninput = () => {
          clearTimeout(timer);
          timer = setTimeout(() => fetch("/note", {method: "POST", body: note.value}), 600);
        };
        </script>""",
        )

    def do_POST(self) -> None:
        note = self.rfile.read(int(self.headers["Content-Length"])).decode()
        if self.refuse:
            self.send(500, b"the note could not be kept")
            return
        _Notes.saved.append(note)
        self.send(200, b"{}", Content_Type="application/json")


@pytest.mark.parametrize("refuse", [False, True])
async def test_a_save_the_app_left_for_later_is_sent_before_a_step_leaves_the_page(
    tab: Tab, tmp_path: Path, refuse: bool
) -> None:
    """A note typed, then the link back to the list followed at once: the app saves the
    note 600 ms after the last key, so leaving the page dropped it, nothing was saved and
    the replay and its export passed.  Before a step that leaves the page, what the steps
    before it left for later is done, as a person waits for "Saved": the note is saved,
    and a save refused fails the step."""
    _Notes.refuse, _Notes.saved = refuse, []
    with loopback_app(_Notes) as app:
        await tab.page.goto(f"{app}/order")
        note = await capture(await tab.page.query_selector("#note"), budget=Budget(10_000))
        back = await capture(await tab.page.query_selector("a"), budget=Budget(10_000))
        steps = (ScenarioStep("navigate", {"url": f"{app}/order"}),
                 ScenarioStep("fill", {"value": "Rush"}, note, url=f"{app}/order"),
                 ScenarioStep("click", {}, back, url=f"{app}/order", led_to=f"{app}/orders"),
                 ScenarioStep("expect", {"kind": "text_visible", "text": "Orders"}))  # fmt: skip
        scenario = Scenario("Note order 12", steps, base_url=app)
        result = await Replay(tab, scenario).run()
        assert result.ok is not refuse, result.to_dict()
        assert _Notes.saved == ([] if refuse else ["Rush"])
        assert "500" in result.reason or not refuse, result.reason
        code, out = await run_exported(to_pytest(scenario), tmp_path, app, timeout_ms=4_000)
        assert (code == 0) is not refuse, out
        assert _Notes.saved == ([] if refuse else ["Rush", "Rush"])


class _Tickets(QuietHandler):
    """Tickets to take, each with "Assign to me": its save answered in JSON (``answer``),
    HTTP 200, and only a save the app took shows (the ticket leaves the list, the count
    of mine goes up); a refused one shows nothing at all."""

    answer: dict[str, object] = {}
    mine: list[str] = []

    def do_GET(self) -> None:
        rows = "".join(f"<li>{t} Printer jam <button data-t={t}>Assign to me</button></li>"
                       for t in ("T-1", "T-2") if t not in self.mine)  # fmt: skip
        page = f"""<!doctype html><title>Tickets</title><h1>Tickets</h1>
        <p>Mine: <span id=mine>{len(self.mine)}</span></p><ul>{rows}</ul><script>
        for (const button of document.querySelectorAll("li button")) button.onclick = async () => {{
          const answer = await (await fetch("/assign", {{method: "POST",
            body: button.dataset.t}})).json();
          if (answer.ok === true) {{
            mine.textContent = Number(mine.textContent) + 1;
            button.parentElement.remove();
          }}
        }};</script>"""
        self.send(200, page.encode())

    def do_POST(self) -> None:
        ticket = self.rfile.read(int(self.headers["Content-Length"])).decode()
        if self.answer.get("ok") is True:
            _Tickets.mine = [*self.mine, ticket]
        self.send(200, json.dumps(self.answer).encode(), Content_Type="application/json")


@pytest.mark.parametrize(
    ("answer", "said"),
    [({"ok": False, "error": "T-1 is already someone's"}, "T-1 is already someone's"),
     ({"data": None, "errors": [{"message": "Not yours to take"}]}, "Not yours to take"),
     ({"status": "fail", "data": {"ticket": "closed"}}, '"status": "fail"'),
     ({"ok": True}, "")],
    ids=["ok false", "graphql errors", "jsend fail", "taken"],
)  # fmt: skip
async def test_a_save_answered_in_json_that_it_failed_fails_though_the_page_says_nothing(
    tab: Tab, tmp_path: Path, answer: dict[str, object], said: str
) -> None:
    """A save answered HTTP 200 in JSON saying it failed, the page saying nothing of it
    (a refused assignment just leaves the ticket where it was), and no check after it:
    replay and its export passed an assignment never made.  Now both fail saying what
    the answer said, replay before the next step that acts (it does not go on); a save
    the app took passes."""
    _Tickets.answer = answer
    with loopback_app(_Tickets) as app:
        for after in ((), (ScenarioStep("navigate", {"url": f"{app}/tickets?again"}),)):
            _Tickets.mine = []
            await tab.page.goto(f"{app}/tickets")
            button = await tab.page.query_selector("li button")
            assign = await capture(button, budget=Budget(10_000))
            steps = (ScenarioStep("navigate", {"url": f"{app}/tickets"}),
                     ScenarioStep("click", {}, assign), *after)  # fmt: skip
            scenario = Scenario("Take a ticket", steps, base_url=app)
            result = await Replay(tab, scenario).run()
            assert result.ok is not bool(said), result.to_dict()
            if said:
                assert said in result.reason and "HTTP 200" in result.reason, result.reason
                failed = [step.index for step in result.steps if step.status == "failed"]
                assert failed == ([2] if after else []), result.to_dict()  # not gone on
            assert _Tickets.mine == ([] if said else ["T-1"])
            _Tickets.mine = []
            code, out = await run_exported(to_pytest(scenario), tmp_path / str(len(after)), app)
            assert (code == 0) is not bool(said), out
            assert said.replace('"', "'") in out.replace('"', "'"), out
