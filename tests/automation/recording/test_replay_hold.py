"""A replay's verdict waits for what its last steps left for later.  An app that saves a
change 600 ms after it (a debounce) shows the change at once; when the save is refused it
puts back what was there.  Read at once, the checks held, and the replay said succeeded
where nothing was saved.  Now, once every step passed, the replay waits for the timers
the last steps set (up to settle.HOLD_TIMER_MS), the requests they start and the quiet
after them, and reads the checks after the last step again: a state the app keeps (a
switch, a field's value, rows, a text gone) must still hold.  A text shown that goes by
itself (a toast) is not read again unless a request failed meanwhile.  The pytest export
waits for the same timers and judges the save the same way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.replay import Replay, ReplayConfig, ReplayResult
from automation.recording.scenario import Scenario, ScenarioStep
from tests.bounds import room
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

pytestmark = pytest.mark.long  # one of the longest files: dealt out first


def on(role: str, name: str, action: str, **args: object) -> ScenarioStep:
    tag = {"textbox": "input", "switch": "input", "checkbox": "input"}.get(role, role)
    identity = {"role": role, "name": name, "tag": tag}
    return ScenarioStep.from_dict({"action": action, "args": args, "identity": identity})


def check(kind: str, **args: object) -> ScenarioStep:
    return ScenarioStep("expect", {"kind": kind, **args})


SWITCH = "Email me about new orders"
# What a person did, and the checks that say it is done.
CHANGES = {
    "switch": (on("switch", SWITCH, "click"),
               ScenarioStep.from_dict({"action": "expect", "args": {"kind": "checked"},
                                       "identity": {"role": "switch", "name": SWITCH,
                                                    "tag": "input"}})),
    "value": (on("textbox", "Signature", "fill", value="Grace"),
              ScenarioStep.from_dict({"action": "expect",
                                      "args": {"kind": "value", "value": "Grace"},
                                      "identity": {"role": "textbox", "name": "Signature",
                                                   "tag": "input"}})),
    "rows": (on("button", 'Add the tag "urgent"', "click"),
             check("rows", text="urgent", count=1)),
}  # fmt: skip


def scenario(fixture_url: str, query: str, *steps: ScenarioStep) -> Scenario:
    page = f"{fixture_url}/replay/autosave.html{query}"
    return Scenario("Change a setting", (ScenarioStep("navigate", {"url": page}), *steps),
                    base_url=f"{fixture_url}/replay/")  # fmt: skip


SHORT = ReplayConfig(check_timeout_ms=3_000)  # a check that fails: not long


def took_back(result: ReplayResult, index: int, again: str = "held at first, then not") -> bool:
    """Whether the replay failed at step ``index``, where the app takes back what it
    checks, as read again (True: held at first, then not), or already at its first read
    (False: a machine slow enough that the app's timer ran first; a true verdict too,
    reached sooner).  Any other verdict fails the test."""
    assert result.status == "failed", result.to_dict()
    assert result.reason.startswith(f"step {index} ("), result.reason
    assert result.steps[index].status == "failed", result.to_dict()
    return again in result.reason


def exported_took_back(code: int, out: str, index: int, again: str) -> None:
    """As :func:`took_back`, for the export's output: failed where it reads step
    ``index`` again (``again`` in it), or at that step's own lines."""
    assert code == 1, out
    if again not in out:  # one of its own lines failed (those up to the next step's)
        assert re.search(rf"# step {index}: [^\n]*\n(?:(?! *# step )[^\n]*\n)*?>", out), out


@pytest.mark.parametrize(
    ("change", "save"), [(c, "missing") for c in sorted(CHANGES)] + [("switch", "refused")]
)
async def test_a_check_the_app_takes_back_when_its_delayed_save_is_refused_fails(
    tab: Tab, fixture_url: str, change: str, save: str
) -> None:
    act, holds = CHANGES[change]
    result = await Replay(tab, scenario(fixture_url, f"?save={save}", act, holds),
                          config=SHORT).run()  # fmt: skip
    if took_back(result, 2):
        assert "1 refused" in result.reason  # what the hold saw: the save answered 404 / 501
    assert result.steps[-1].index == 2, result.to_dict()
    assert [s.status for s in result.steps[:2]] == ["passed", "passed"]
    assert await tab.page.is_visible("#error")  # the page did say so


async def test_a_delayed_save_the_server_refuses_fails_a_scenario_without_checks(
    tab: Tab, fixture_url: str
) -> None:
    act, _holds = CHANGES["switch"]
    result = await Replay(tab, scenario(fixture_url, "?save=refused", act)).run()
    assert result.status == "failed", result.to_dict()
    assert result.reason.startswith("after step 1 (click switch 'Email me"), result.reason
    assert "the page sent POST" in result.reason and "answered HTTP 501" in result.reason


@pytest.mark.parametrize("change", sorted(CHANGES))
async def test_the_same_check_passes_where_the_save_is_taken(
    tab: Tab, fixture_url: str, change: str
) -> None:
    act, holds = CHANGES[change]
    result = await Replay(tab, scenario(fixture_url, "", act, holds), config=SHORT).run()
    assert result.ok, result.to_dict()
    # The verdict came after the save: its toast was shown (and the replay waited for it).
    assert await tab.page.evaluate("document.getElementById('error').hidden")
    assert [s.status for s in result.steps] == ["passed"] * 3


async def test_a_save_refused_while_the_checks_were_read_fails(tab: Tab, fixture_url: str) -> None:
    """The last check waits for a text the app shows 900 ms after the change; the save
    (600 ms) is refused meanwhile and the switch put back.  Nothing is left for later when
    the checks are done, but the switch read at first no longer holds: the replay fails."""
    act, holds = CHANGES["switch"]
    synced = check("text_visible", text="Synced")
    shown = scenario(fixture_url, "?save=missing&synced_ms=900", act, holds, synced)
    result = await Replay(tab, shown, config=SHORT).run()
    assert await tab.page.evaluate("!document.getElementById('error').hidden")  # refused
    if took_back(result, 2):
        assert "1 refused" in result.reason


@pytest.mark.parametrize("change", sorted(CHANGES))
async def test_a_state_a_timer_took_back_while_the_checks_were_read_fails(
    tab: Tab, fixture_url: str, change: str
) -> None:
    """No request this time: the app (offline) puts the change back on its own timer
    (600 ms) while the last check waits for "Synced" (900 ms).  When the hold looks,
    nothing is left for later and nothing was sent; the kept state read at first is read
    again all the same, and no longer holds."""
    act, holds = CHANGES[change]
    synced = check("text_visible", text="Synced")
    shown = scenario(fixture_url, "?save=offline&synced_ms=900", act, holds, synced)
    result = await Replay(tab, shown, config=SHORT).run()
    assert await tab.page.evaluate("!document.getElementById('error').hidden")  # put back
    if took_back(result, 2, "held at first, then not when read again at the end"):
        assert [s.status for s in result.steps] == ["passed", "passed", "failed", "passed"]


async def test_a_toast_that_goes_by_itself_is_not_read_again(tab: Tab, fixture_url: str) -> None:
    """The save is taken and its "Saved" toast goes after two seconds, within the hold: a
    check that the toast was shown still holds.  (Two, not one: the check must read it
    before it goes, on a busy machine too.)"""
    act, holds = CHANGES["switch"]
    toast = check("text_visible", text="Saved")
    steps = (act, ScenarioStep("wait_for", {"text": "Saved"}), holds, toast)
    shown = scenario(fixture_url, "?toast_ms=2000", *steps)
    result = await Replay(tab, shown, config=SHORT).run()
    assert result.ok, result.to_dict()
    assert await tab.page.evaluate("document.getElementById('toast').hidden")  # gone since


async def test_a_replay_whose_last_step_left_nothing_for_later_does_not_wait(
    tab: Tab, fixture_url: str
) -> None:
    """The hold is one look at the page when nothing was left for later; a timer that
    was (1.5 s) is waited for."""
    await tab.navigate(f"{fixture_url}/replay/autosave.html", budget=room())
    assert await tab.settler.hold(room()) is None  # loaded, nothing set since
    await tab.page.evaluate("setTimeout(() => document.title = 'later', 1500)")
    held = await tab.settler.hold(room())
    assert held is not None and await tab.page.title() == "later"  # waited for it to run
    assert await tab.settler.hold(room()) is None  # and it has run


async def test_checks_are_not_read_again_on_the_page_the_app_went_on_to(
    tab: Tab, fixture_url: str
) -> None:
    """'Saved', and back to another page a moment later by itself: the checks were of the
    page before; the hold waits for the move, and reads them on no other page."""
    note = {"role": "textbox", "name": "Note", "tag": "input"}
    steps = (
        ScenarioStep.from_dict({"action": "fill", "args": {"value": "Ada"}, "identity": note}),
        on("button", "Save", "click"),
        ScenarioStep.from_dict({"action": "expect", "args": {"kind": "value", "value": "Ada"},
                                "identity": note}),
    )  # fmt: skip
    page = f"{fixture_url}/replay/goes-on.html"
    scenario = Scenario("Note", (ScenarioStep("navigate", {"url": page}), *steps),
                        base_url=f"{fixture_url}/replay/")  # fmt: skip
    result = await Replay(tab, scenario, config=SHORT).run()
    assert result.ok, result.to_dict()
    assert tab.page.url.endswith("/replay/autosave.html")  # the verdict came after the move


@pytest.mark.parametrize(("save", "fails"), [("refused", True), ("", False)])
async def test_the_export_waits_for_a_delayed_save_and_judges_it_as_replay_does(
    fixture_url: str, tmp_path: Path, save: str, fails: bool
) -> None:
    """The pytest export of a scenario whose last step sets off a save 600 ms later: the
    file waits for it, and fails where the server refused it, as the replay does."""
    act, _holds = CHANGES["switch"]
    recorded = scenario(fixture_url, f"?save={save}" if save else "", act)
    code, out = await run_exported(to_pytest(recorded), tmp_path, recorded.base_url)
    if fails:
        assert code == 1 and "the server refused POST" in out and "HTTP 501" in out, out
    else:
        assert code == 0, out


@pytest.mark.parametrize(
    ("query", "fails"),
    [("?save=missing&synced_ms=900", True), ("?save=offline&synced_ms=900", True), ("", False)],
)
async def test_the_export_reads_a_kept_state_again_once_the_page_is_done(
    fixture_url: str, tmp_path: Path, query: str, fails: bool
) -> None:
    """As replay does: once the page has done what the last steps left for later, a check
    of a state the app keeps (the switch) is read again, and fails where the app took it
    back (its save refused while the checks were read); not where the save was taken."""
    act, holds = CHANGES["switch"]
    later = (check("text_visible", text="Synced"),) if "synced" in query else ()
    recorded = scenario(fixture_url, query, act, holds, *later)
    code, out = await run_exported(  # the check meant to fail waits 5 s, as long as a step
        to_pytest(recorded), tmp_path, recorded.base_url, timeout_ms=5_000 if fails else 30_000
    )
    if fails:
        assert "to_be_checked" in out, out
        exported_took_back(code, out, 2, "step 2, read again: expect switch")
    else:
        assert code == 0, out


@pytest.mark.parametrize(("query", "fails"), [("?save=offline", True), ("", False)])
async def test_a_box_the_last_step_ticked_is_read_again_once_the_page_is_done(
    tab: Tab, fixture_url: str, tmp_path: Path, query: str, fails: bool
) -> None:
    """The last step ticks the switch, and no check follows: its save fails without an
    HTTP error (offline; an app's {"ok": false} alike) and the app unticks it a moment
    later.  The tick was verified as it was done, and the replay (and its export) passed.
    The box the last step ticked is read again once the page is done, as a check of it
    would be."""
    tick = on("switch", SWITCH, "check", checked=True)
    recorded = scenario(fixture_url, query, tick)
    result = await Replay(tab, recorded, config=SHORT).run()
    code, out = await run_exported(  # the check meant to fail waits 5 s, as long as a step
        to_pytest(recorded), tmp_path, recorded.base_url, timeout_ms=5_000 if fails else 30_000
    )
    if not fails:
        assert result.ok and code == 0, (result.to_dict(), out)
        return
    took_back(result, 1)
    assert result.reason.startswith("step 1 (tick switch 'Email me about new orders'): ")
    assert [s.status for s in result.steps] == ["passed", "failed"]
    exported_took_back(code, out, 1, "step 1, its box read again: tick switch")


class _DoneGoes(QuietHandler):
    """A to-do list showing what is left: an item ticked done leaves it a moment later."""

    def do_GET(self) -> None:
        goes = "setTimeout(() => this.closest('li').remove(), 300)"
        page = (f'<!doctype html><title>Active</title><h1>Active</h1><ul><li><label>'
                f'<input type=checkbox onchange="{goes}"> Buy milk</label></li>'
                "<li>Walk the dog</li></ul>")  # fmt: skip
        self.send(200, page.encode())


async def test_a_box_the_last_step_ticked_that_then_went_away_is_no_failure(
    tab: Tab, tmp_path: Path
) -> None:
    """Ticked done under "Active", the item leaves the list: the box it ticked is not
    there to read again, which says nothing against the step (nor in the export)."""
    with loopback_app(_DoneGoes) as app:
        tick = on("checkbox", "Buy milk", "check", checked=True)
        steps = (ScenarioStep("navigate", {"url": f"{app}/active"}), tick)
        recorded = Scenario("Done", steps, base_url=app)
        result = await Replay(tab, recorded, config=SHORT).run()
        assert result.ok, result.to_dict()
        assert not await tab.page.get_by_text("Buy milk").count()  # (it went)
        code, out = await run_exported(to_pytest(recorded), tmp_path, app)
        assert code == 0, out


def then_goes_on(fixture_url: str, query: str, change: str, leaves: bool) -> Scenario:
    """The change and its check, then a step to another page or one on the same page (a
    conversation saved as a scenario places each request's checks after its own steps,
    the next request's after them), and a check after it."""
    act, holds = CHANGES[change]
    if leaves:
        away = ScenarioStep("navigate", {"url": f"{fixture_url}/demo/index.html"})
        there = check("text_visible", text="Tabwright demo pages")
    else:
        away = ScenarioStep("scroll", {"dy": 200})
        there = check("text_visible", text="Notification settings")
    return scenario(fixture_url, query, act, holds, away, there)


@pytest.mark.parametrize("change", sorted(CHANGES))
@pytest.mark.parametrize("leaves", [True, False], ids=["leaves the page", "stays"])
async def test_a_check_before_the_next_step_is_read_again_before_it(
    tab: Tab, fixture_url: str, tmp_path: Path, change: str, leaves: bool
) -> None:
    """The check of a change held when read; the app's save, 600 ms later, failed (no
    request: it is offline) and it put back what was there; the next step went to another
    page, or acted on this one.  Only the checks after the last step were read again, so
    the replay and its export passed.  Now the checks since the last step that acts are
    read again before the next step, as at the end: both fail at that check, and pass
    where the save was taken."""
    recorded = then_goes_on(fixture_url, "?save=offline", change, leaves)
    result = await Replay(tab, recorded, config=SHORT).run()
    took_back(result, 2)
    assert result.reason.startswith("step 2 (expect "), result.reason
    assert [s.status for s in result.steps] == ["passed", "passed", "failed", "not_run", "not_run"]
    assert "autosave.html" in tab.page.url  # it did not leave
    code, out = await run_exported(to_pytest(recorded), tmp_path, recorded.base_url,
                                   timeout_ms=3_000)  # fmt: skip
    exported_took_back(code, out, 2, "step 2, read again")
    # The save taken: both pass, the check read again where it held.
    taken = then_goes_on(fixture_url, "", change, leaves)
    result = await Replay(tab, taken, config=SHORT).run()
    assert result.ok, result.to_dict()
    (tmp_path / "taken").mkdir()
    code, out = await run_exported(to_pytest(taken), tmp_path / "taken", taken.base_url)
    assert code == 0, out
