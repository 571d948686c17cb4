"""The evaluate engine on real Chromium: a hung script of any kind returns within its budget,
is stopped in the page, and the next click on the same tab works, without a restart."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from automation import AgentConfig, AgentRun, BrowserSession, Budget, Tab
from automation.actions import available, execute
from automation.agent.prompts import system_prompt
from automation.browser.evaluate import RESERVED_MS, _stopping
from automation.errors import (
    ActionInvalid,
    EvaluateCancelled,
    EvaluateError,
    EvaluateTimeout,
    RefNotFound,
    StaleRef,
    UnexpectedDialog,
)
from automation.events import ActionFinished, ActionStarted, EvaluationFinished
from automation.llm.openai import OpenAICompatPlanner
from automation.metrics import EVALUATE_FALLBACKS, EVALUATE_TERMINATIONS, EVALUATIONS
from tests.bounds import room
from tests.conftest import browser_config
from tests.fakellm import ScriptedLLMServer
from tests.refs import ref_of
from tests.sinks import WaitingSink

# A returned call may run this much past its budget here: far below any other bound the
# test has (a hang would be stopped by none), above what a loaded machine adds.  How close
# to its budget a hung script is stopped is bench.hang's measure, not a test's.
SLACK_MS = 2_000


def terminations_sent() -> float:
    """Scripts stopped: confirmed, or unanswered within the terminate's short wait (a busy
    machine's page may answer later)."""
    return sum(EVALUATE_TERMINATIONS.value(result=r) for r in ("confirmed", "unanswered"))


HANGS = {
    "spin": "while (true) {}",
    "async spin": "async () => { await null; while (true) {} }",
    "never settles": "new Promise(() => {})",
    "heavy layout": """() => {
        const boxes = [...document.querySelectorAll('.box')];
        for (let i = 0; ; i++) {
          for (const b of boxes) { b.style.width = (i % 50 + 50) + 'px'; b.offsetHeight; }
        }
    }""",
}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def engine() -> AsyncIterator[BrowserSession]:
    session = BrowserSession(browser_config(evaluate_enabled=True))
    await session.start()
    yield session
    await session.close()


@pytest_asyncio.fixture(loop_scope="session")
async def etab(engine: BrowserSession, fixture_url: str) -> AsyncIterator[Tab]:
    tab = await engine.new_tab()
    await tab.navigate(f"{fixture_url}/engine/evaluate.html")
    await tab.snapshot()
    yield tab
    await tab.close()


async def click_count(tab: Tab) -> int:
    """Click the Count button and return the page's counter: proof the tab still works."""
    snap = await tab.snapshot(budget=room())
    before = int(await tab.page.text_content("#count") or "0")
    await tab.click(ref_of(snap, "button", "Count"), budget=room())
    after = int(await tab.page.text_content("#count") or "0")
    assert after == before + 1
    return after


# A script that hangs its page and says so first: its console message still comes out of
# the hung page, so a test waits for the loop to have begun, not a fixed while.
SPIN = "console.log('spinning'); while (true) {}"


def spinning(tab: Tab) -> asyncio.Event:
    """Set once the page has begun SPIN's loop."""
    begun = asyncio.Event()
    tab.page.on("console", lambda message: begun.set() if message.text == "spinning" else None)
    return begun


async def begun(event: asyncio.Event) -> None:
    await asyncio.wait_for(event.wait(), 30)


async def timed(work: Any) -> tuple[float, BaseException | None]:
    started = time.monotonic()
    try:
        await work
    except BaseException as exc:  # the test inspects whatever ended it
        return (time.monotonic() - started) * 1000, exc
    return (time.monotonic() - started) * 1000, None


# -- values -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "arg"),
    [
        ("1 + 2", None),
        ("'text'", None),
        ("[1, {a: null, b: [true, 'x']}]", None),
        ("() => ({n: 1.5, s: 'é', b: false})", None),
        ("(x) => x.n * 2", {"n": 21}),
        ("async (x) => x + 1", 41),
        ("undefined", None),
        ("null", None),
        ("document.title", None),
        ("let a = 2; a * 3", None),
    ],
)
async def test_values_have_the_same_shape_on_every_route(etab: Tab, script: str, arg: Any) -> None:
    native = await etab.page.evaluate(script, arg) if "let a" not in script else 6
    assert await etab.evaluate(script, arg) == native
    assert etab.take_evaluations()[-1].route == "cdp"
    runtime, etab.runtime = etab.runtime, None  # as if the browser had no debugging endpoint
    try:
        assert await etab.evaluate(script, arg) == native
    finally:
        etab.runtime = runtime
    assert etab.take_evaluations()[-1].route == "playwright"


async def test_element_scripts_on_the_cdp_route(etab: Tab) -> None:
    snap = await etab.snapshot()
    note = ref_of(snap, "textbox", "Note")
    assert await etab.evaluate("el => el.value", ref=note) == "hello"
    assert await etab.evaluate("(el, suffix) => el.value + suffix", "!", ref=note) == "hello!"
    assert etab.state.backend_ids[note] > 0  # mapped once, then reused
    assert [e.route for e in etab.take_evaluations()] == ["cdp_element", "cdp_element"]
    # A node in the result comes back as its tag and, when it has one, its ref.
    assert await etab.evaluate("document.querySelector('#note')") == {"node": "input", "ref": note}


async def test_a_ref_without_a_backend_node_takes_the_bounded_playwright_path(
    engine: BrowserSession, fixture_url: str
) -> None:
    tab = await engine.new_tab()
    try:
        # 127.0.0.1 and localhost are different sites: that frame is another process, which
        # the page's session can't reach into.
        cross = fixture_url.replace("127.0.0.1", "localhost") + "/snapshot/inner.html"
        await tab.navigate(f"{fixture_url}/engine/evaluate.html?cross={cross}")
        await tab.page.frame_locator("#cross").get_by_role("button").wait_for()
        snap = await tab.snapshot()
        inner = next(r for r in snap.refs.values() if r.name == "Inner OK")
        before = EVALUATE_FALLBACKS.value(reason="no_backend_node")
        assert await tab.evaluate("el => el.textContent", ref=inner.ref) == "Inner OK"
        done = tab.take_evaluations()[-1]
        assert (done.route, done.fallback_reason) == ("playwright", "no_backend_node")
        assert EVALUATE_FALLBACKS.value(reason="no_backend_node") == before + 1
        # Still bounded: a script that never settles there ends with the budget.
        elapsed, error = await timed(
            tab.evaluate("el => new Promise(() => {})", ref=inner.ref, budget=Budget(600))
        )
        assert isinstance(error, EvaluateTimeout) and elapsed < 600 + SLACK_MS
        # A script spinning in that frame is stopped through the frame's own session, which
        # was attached when the frame appeared; the frame's button works afterwards.
        assert tab.runtime is not None and tab.runtime.frame_sessions
        elapsed, error = await timed(
            tab.evaluate("el => { while (true) {} }", ref=inner.ref, budget=Budget(600))
        )
        assert isinstance(error, EvaluateTimeout) and elapsed < 600 + SLACK_MS
        assert tab.take_evaluations()[-1].terminated
        await tab.click(inner.ref, budget=Budget(5_000))
        cross_frame = next(f for f in tab.page.frames if f.url.startswith("http://localhost"))
        assert await cross_frame.text_content("#said") == "Inner: "
        assert await click_count(tab) == 1
    finally:
        await tab.close()


# -- hung scripts ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(HANGS))
async def test_a_hung_page_script_returns_in_budget_and_the_next_click_works(
    etab: Tab, engine: BrowserSession, kind: str
) -> None:
    restarts = engine.restarts
    before = EVALUATIONS.value(route="cdp", outcome="timeout")
    elapsed, error = await timed(etab.evaluate(HANGS[kind], budget=Budget(700)))
    assert isinstance(error, EvaluateTimeout), error
    assert elapsed < 700 + SLACK_MS
    done = etab.take_evaluations()[-1]
    assert (done.route, done.outcome, done.terminated) == ("cdp", "timeout", True)
    assert EVALUATIONS.value(route="cdp", outcome="timeout") == before + 1
    assert await click_count(etab) == 1
    assert engine.restarts == restarts


async def test_a_hung_element_script_returns_in_budget_and_the_next_click_works(
    etab: Tab,
) -> None:
    snap = await etab.snapshot()
    elapsed, error = await timed(
        etab.evaluate("el => { while (true) {} }", ref=ref_of(snap, "textbox", "Note"),
                      budget=Budget(500))
    )  # fmt: skip
    assert isinstance(error, EvaluateTimeout) and elapsed < 500 + SLACK_MS
    assert etab.take_evaluations()[-1].route == "cdp_element"
    assert await click_count(etab) == 1


async def test_the_script_gets_the_budget_less_what_stopping_it_needs() -> None:
    # The script's window ends RESERVED_MS before the caller's deadline, not sooner: read on
    # a clock that stands still (a script timed against a real one fails on a busy machine).
    budget = Budget(600, label="evaluate", _clock=lambda: 100.0)
    windows: list[Budget] = []

    async def run(window: Budget) -> str:
        windows.append(window)
        return "slept"

    assert await _stopping(budget, None, run) == "slept"
    assert windows[0].deadline == pytest.approx(budget.deadline - RESERVED_MS / 1000)
    assert windows[0].deadline > 100.0


async def test_an_alert_is_dismissed_and_reported(etab: Tab) -> None:
    elapsed, error = await timed(etab.evaluate("alert('hi'); 1", budget=Budget(2_000)))
    assert isinstance(error, UnexpectedDialog) and elapsed < 2_000
    assert await click_count(etab) == 1


# -- cancellation ---------------------------------------------------------------------------


async def test_cancelling_the_budget_stops_the_script(etab: Tab) -> None:
    budget = Budget(30_000, label="evaluate")
    before = terminations_sent()
    looping = spinning(etab)
    task = asyncio.create_task(etab.evaluate(SPIN, budget=budget))
    await begun(looping)
    budget.cancel("the stop button")
    elapsed, error = await timed(task)
    assert isinstance(error, EvaluateCancelled) and "the stop button" in str(error)
    assert elapsed < 10_000  # not the budget's 30 s
    assert terminations_sent() == before + 1
    assert etab.take_evaluations()[-1].outcome == "cancelled"
    assert await click_count(etab) == 1


async def test_cancelling_the_callers_task_stops_the_script(etab: Tab) -> None:
    assert etab.runtime is not None
    sent = etab.runtime.terminations
    looping = spinning(etab)
    task = asyncio.create_task(etab.evaluate(SPIN, budget=Budget(30_000)))
    await begun(looping)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert etab.runtime.terminations == sent + 1
    assert await click_count(etab) == 1


# -- bad input ----------------------------------------------------------------------------


async def test_bad_scripts_and_results_are_typed_errors(etab: Tab) -> None:
    with pytest.raises(EvaluateError, match="boom"):
        await etab.evaluate("throw new Error('boom')")
    with pytest.raises(EvaluateError, match="SyntaxError"):
        await etab.evaluate("() => {")
    with pytest.raises(EvaluateError, match="more than the cap"):
        await etab.evaluate("'x'.repeat(2_000_000)")
    with pytest.raises(EvaluateError, match="JSON"):
        await etab.evaluate("(() => { const a = {}; a.self = a; return a; })()")
    with pytest.raises(EvaluateError, match="nests arrays and objects too deep"):
        await etab.evaluate("(() => { let a = []; for (let i = 0; i < 2000; i++) a = [a];"
                            " return a; })()")  # fmt: skip
    with pytest.raises(ActionInvalid, match="function of the element"):
        await etab.evaluate("document.title", ref="e1")
    with pytest.raises(ActionInvalid, match="JSON"):
        await etab.evaluate("(x) => x", {1, 2})
    with pytest.raises(ActionInvalid, match="longer than"):
        await etab.evaluate("1;" * 60_000)
    with pytest.raises(RefNotFound):
        await etab.evaluate("el => el.id", ref="e999")
    assert await click_count(etab) == 1  # none of it hurt the tab


async def test_a_removed_element_is_a_stale_ref_on_the_cdp_route(etab: Tab) -> None:
    snap = await etab.snapshot()
    doomed = ref_of(snap, "button", "Doomed")
    assert await etab.evaluate("el => el.id", ref=doomed) == "doomed"  # maps its backend id
    await etab.page.evaluate("document.getElementById('doomed').remove()")
    with pytest.raises(StaleRef):
        await etab.evaluate("el => el.id", ref=doomed)


async def test_a_csp_without_eval_still_runs_expressions(etab: Tab) -> None:
    await etab.page.set_content(
        "<meta http-equiv='Content-Security-Policy' content=\"script-src 'self'\">"
        "<title>Locked</title>"
    )
    assert await etab.evaluate("let t = document.title; t + '!'") == "Locked!"


# -- the switch and the action ------------------------------------------------------------


async def test_evaluate_is_off_unless_the_operator_turns_it_on(tab: Tab) -> None:
    assert not tab.config.evaluate_enabled
    with pytest.raises(ActionInvalid, match="turned off"):
        await tab.evaluate("1")
    with pytest.raises(ActionInvalid, match="turned off"):
        await execute(tab, "evaluate", {"expression": "1"}, budget=Budget(2_000))
    assert "evaluate" not in [s.name for s in available(tab.config)]
    assert "\n- evaluate(" not in system_prompt(available(tab.config))
    on = browser_config(evaluate_enabled=True)
    assert "\n- evaluate(" in system_prompt(available(on))


async def test_the_action_returns_json_and_takes_its_timeout(etab: Tab) -> None:
    snap = await etab.snapshot()
    note = ref_of(snap, "textbox", "Note")
    result = await execute(
        etab, "evaluate", {"expression": "(el, n) => [el.value, n]", "ref": note, "arg": 2},
        budget=room(),
    )  # fmt: skip
    assert result == '["hello", 2]'
    elapsed, error = await timed(
        execute(etab, "evaluate", {"expression": "while(true){}", "timeout_ms": 400},
                budget=Budget(30_000))
    )  # fmt: skip
    assert isinstance(error, EvaluateTimeout) and elapsed < 400 + SLACK_MS
    long = await execute(
        etab, "evaluate", {"expression": "'y'.repeat(20000)"}, budget=Budget(5_000)
    )
    assert long.startswith('"yyy') and "more characters; return less" in long
    assert len(long) < 8_100


async def test_a_browser_reached_by_cdp_url(chromium_with_cdp: str, fixture_url: str) -> None:
    for _ in range(100):  # the port opens a moment after the process starts
        try:
            session = BrowserSession(
                browser_config(cdp_url=chromium_with_cdp, evaluate_enabled=True)
            )
            tab = await session.new_tab()
            break
        except Exception:
            await asyncio.sleep(0.1)
    try:
        assert tab.runtime is not None
        await tab.navigate(f"{fixture_url}/engine/evaluate.html")
        assert await tab.evaluate("document.title") == "Evaluate"
        elapsed, error = await timed(tab.evaluate("while (true) {}", budget=Budget(500)))
        assert isinstance(error, EvaluateTimeout) and elapsed < 500 + SLACK_MS
        assert await click_count(tab) == 1
        assert [e.route for e in tab.take_evaluations()] == ["cdp", "cdp"]
    finally:
        await tab.close()
        await session._drop_cdp()
        await session._drop_browser()  # disconnect only: the browser is not ours to close
        await session.close()


# -- inside an agent run ------------------------------------------------------------------


def act(**fields: object) -> str:
    return f"<action>{json.dumps(fields)}</action>"


def agent_run(tab: Tab, server: ScriptedLLMServer, url: str) -> AgentRun:
    return AgentRun(
        tab=tab,
        planner=OpenAICompatPlanner(base_url=server.base_url, model="test-model"),
        sink=WaitingSink(),
        task="Count once",
        start_url=url,
        config=AgentConfig(llm_timeout_ms=5_000, screenshots=False),
    )


async def test_an_agent_step_hangs_the_page_and_the_next_round_clicks(
    engine: BrowserSession, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    url = f"{fixture_url}/engine/evaluate.html"
    probe = await engine.new_tab()  # a fresh tab numbers refs as the run's fresh tab will
    await probe.navigate(url)
    count = ref_of(await probe.snapshot(), "button", "Count")
    await probe.close()
    tab = await engine.new_tab()
    try:
        llm_server.script(
            act(action="evaluate", expression="while (true) {}", timeout_ms=600),
            act(action="click", ref=count) + act(action="done", summary="counted"),
        )
        run = agent_run(tab, llm_server, url)
        finished = await asyncio.wait_for(run.run(), 60)
        sink = run.sink
        assert isinstance(sink, WaitingSink)
        assert finished.status == "succeeded", finished
        hung, click = [e for e in sink.of_type(ActionFinished) if e.name != "navigate"]
        assert hung.error["code"] == "evaluate_timeout" and hung.duration_ms < 600 + SLACK_MS
        assert click.ok and await tab.page.text_content("#count") == "1"
        [done] = sink.of_type(EvaluationFinished)
        assert (done.step_index, done.route, done.outcome, done.terminated) == (
            hung.index,
            "cdp",
            "timeout",
            True,
        )
        # The model was told the script was stopped, with the error code.
        assert "evaluate_timeout" in json.dumps(llm_server.requests[1]["messages"])
        assert "evaluate(" in json.dumps(llm_server.requests[0]["tools"])  # offered
    finally:
        await tab.close()


async def test_the_stop_button_ends_a_hung_step_and_stops_the_script(
    engine: BrowserSession, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    tab = await engine.new_tab()
    try:
        url = f"{fixture_url}/engine/evaluate.html"
        llm_server.script(act(action="evaluate", expression=SPIN, timeout_ms=60_000))
        looping = spinning(tab)
        run = agent_run(tab, llm_server, url)
        task = asyncio.create_task(run.run())
        sink = run.sink
        assert isinstance(sink, WaitingSink)
        started = await sink.wait_for(ActionStarted, count=2)  # navigate, then evaluate
        assert started.name == "evaluate"  # type: ignore[attr-defined]
        await begun(looping)
        assert tab.runtime is not None
        sent = tab.runtime.terminations
        stopped_at = time.monotonic()
        run.control.stop()
        finished = await asyncio.wait_for(task, 30)
        assert finished.status == "stopped" and time.monotonic() - stopped_at < 10  # not 60 s
        assert tab.runtime.terminations == sent + 1
        [done] = sink.of_type(EvaluationFinished)
        assert done.outcome == "cancelled" and done.terminated
        await tab.snapshot()
        assert await click_count(tab) == 1
    finally:
        await tab.close()


async def test_a_dropped_debugging_connection_is_replaced_before_the_next_script(
    etab: Tab, engine: BrowserSession
) -> None:
    old = etab.runtime
    assert old is not None and engine._cdp is not None
    await engine._cdp.close()  # as if the websocket to the browser had dropped
    assert not old.usable
    assert await etab.evaluate("document.title") == "Evaluate"
    assert etab.runtime is not None and etab.runtime is not old and etab.runtime.usable
    assert etab.take_evaluations()[-1].route == "cdp"
    elapsed, error = await timed(etab.evaluate("while (true) {}", budget=Budget(500)))
    assert isinstance(error, EvaluateTimeout) and elapsed < 500 + SLACK_MS
    assert await click_count(etab) == 1


async def test_a_session_the_browser_let_go_of_is_attached_anew_and_the_script_runs(
    etab: Tab,
) -> None:
    note = ref_of(await etab.snapshot(), "textbox", "Note")
    for heard in (True, False):  # the browser said it detached the session, or it did not
        old = etab.runtime
        assert old is not None
        await old.conn.send("Target.detachFromTarget", {"sessionId": old.session_id},
                            budget=room())  # fmt: skip
        async with asyncio.timeout(10):
            while old.usable:  # noqa: ASYNC110 (its event comes after the answer)
                await asyncio.sleep(0.01)
        if not heard:  # a command is the first to find it unknown: nothing of it ran
            old.conn._detached.discard(old.session_id)
        assert await etab.evaluate("document.title") == "Evaluate"
        assert etab.runtime is not None and etab.runtime is not old and etab.runtime.usable
        assert await etab.evaluate("el => el.value", ref=note) == "hello"  # not a stale ref
        assert [e.route for e in etab.take_evaluations()][-2:] == ["cdp", "cdp_element"]
    elapsed, error = await timed(etab.evaluate("while (true) {}", budget=Budget(500)))
    assert isinstance(error, EvaluateTimeout) and elapsed < 500 + SLACK_MS  # still stopped
    assert await click_count(etab) == 1
