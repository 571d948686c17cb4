"""A live run: its state (:class:`LiveRun`) and its life on its tab (:func:`live_session`):
the tab opened, the work done (an agent's, a replay's, an MCP client's), a conversation's
next messages on the same tab while its session is kept, then a bounded end (files kept,
tabs closed, the lease let go).  The runner (dashboard.runs.runner) starts one and routes
the person's commands to it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async
from django.conf import settings

from automation import (
    AgentConfig,
    AgentRun,
    Budget,
    RunControl,
    Tab,
)
from automation.agent.intent import PlannerAgent
from automation.browser.problems import ProblemWatcher
from automation.browser.tracing import TraceRecorder
from automation.errors import ScenarioInvalid, TabwrightError
from automation.events import (
    Observation,
    RunFinished,
    SessionClosed,
    SessionIdle,
    UserMessage,
)
from automation.llm.base import Planner
from automation.mcp.session import McpSession
from automation.recording.calls import called
from automation.recording.relogin import login_given
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.restore import restore_page
from automation.recording.scenario import Scenario as Document
from automation.secrets import RedactingSink, Secrets, secret_names
from dashboard.engineconf import heal_planner_for_run, planner_for_run
from dashboard.models import Run, Scenario
from dashboard.runs import files as runfiles
from dashboard.runs import mcprun, services
from dashboard.runs import selectors as run_selectors
from dashboard.runs.liveview import LiveView
from dashboard.runs.relogin import relogin_for
from dashboard.runs.signins import SAVE_AGAIN, signin_state_for_run
from dashboard.runs.sink import DashboardSink, relay_event
from dashboard.scenarios import selectors as scenario_selectors

if TYPE_CHECKING:
    from dashboard.runs.runner import RunManager

__all__ = ["END_STEP_S", "LiveRun", "RunEndedHook", "live_session", "on_ended", "one_line"]

log = logging.getLogger("tabwright.runner")

RunEndedHook = Callable[[Run], Awaitable[object]]
_ended_hooks: list[tuple[str, RunEndedHook]] = []


def on_ended(what: str, hook: RunEndedHook) -> None:
    """Have every run of this process call ``hook(run)`` once it has ended (its lease let
    go), bounded like each step of the end; ``what`` names it in the log.  The worker
    registers what other packages do then (a batch's next rows start), so runs import
    none of them.  Registering a hook twice keeps one."""
    if all(known is not hook for _what, known in _ended_hooks):
        _ended_hooks.append((what, hook))


@dataclass
class LiveRun:
    control: RunControl
    sink: RedactingSink  # the run's one exit: its secrets, then the DashboardSink
    view: LiveView
    secrets: Secrets  # the owner's grants, and every value the run filled
    owner_id: int
    conversation: bool  # an agent run: its tab is kept between messages for a while
    task: asyncio.Task[None] | None = None
    tab: Tab | None = None  # once the run has opened its tab
    working: bool = True  # a stretch of work (or a restore) is under way
    idle_since: float = 0.0  # time.monotonic() when the last stretch ended
    closing: str = ""  # why the session ends, once it must
    restoring: bool = False  # a closed conversation's page is being restored
    redirect: str = ""  # a message that ended a paused restore: the agent goes on with it
    # Messages for the agent while the session waits for one; None: close.
    inbox: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    settled: asyncio.Event = field(default_factory=asyncio.Event)  # set while not working
    run_id: int = 0
    workspace: Path | None = None  # the run's folder: downloads, trace, the agent's files
    # The state its browser context starts with: its sign-in profile's (dashboard.runs.signins).
    storage_state: dict[str, Any] | None = None
    cdp_url: str = ""  # the running Chrome its tab is in, when the worker reaches several
    # An MCP session's run (dashboard.runs.mcprun): the client's session, once its tab is open.
    mcp: McpSession | None = None
    mcp_ready: asyncio.Event = field(default_factory=asyncio.Event)

    def current_tab(self) -> Tab | None:
        """The tab the run works in now (it may have opened others since its first)."""
        if self.tab is None or self.tab.group is None:
            return self.tab
        return self.tab.group.current

    def waiting_since(self) -> float | None:
        """Since when the session has waited for its person or client (time.monotonic):
        a conversation between messages, an MCP session between calls; None while it
        works, or is paused for a person."""
        if self.mcp is not None:
            busy = self.mcp.busy or self.control.paused or self.control.pause_requested
            return None if busy else self.mcp.last_call
        return self.idle_since if self.conversation and not self.working else None

    def close(self, reason: str) -> None:
        """End the session: at once when it waits for a message, else when the work in
        progress has stopped."""
        if self.closing:
            return
        self.closing = reason
        if self.working:
            self.control.stop(reason)
        if not self.working or self.mcp is not None:  # an MCP session waits on its inbox
            self.inbox.put_nowait(None)


async def live_session(
    manager: RunManager, run: Run, live: LiveRun, message: str, *, announced: bool = False
) -> None:
    """The run's life: its tab opened, its work done; for a conversation, then each
    message's work on the same tab, until the session is closed.  ``message``: the
    one that reopened a closed conversation (``announced``: already in its thread)."""
    conf = settings.TABWRIGHT
    sink, control = live.sink, live.control
    tab = None
    forget_crashes: Callable[[], None] | None = None
    problems: ProblemWatcher | None = None
    trace: TraceRecorder | None = None
    workspace = live.workspace
    assert workspace is not None
    planner: Planner | None = None
    opened = False
    try:
        if message and not announced:  # shown at once, before the page is restored
            await sink.emit(UserMessage(message))
        replay = await _replay_of(run) if run.kind == Run.Kind.REPLAY else None
        # A secret the owner was not granted fails the run before any page opens.
        sink.secrets.require(
            replay.placeholders()[1] if replay else secret_names(run.task + "\n" + message)
        )
        if replay is None and run.kind != Run.Kind.MCP:  # an MCP client plans itself
            planner = await database_sync_to_async(planner_for_run)(run)
        elif replay is not None and (run.llm_profile_id or run.llm_profile_name):  # heals
            planner = await database_sync_to_async(heal_planner_for_run)(run)
        signin = await database_sync_to_async(signin_state_for_run)(run)
        # A replay whose login scenario signs in as another user than the profile's (a
        # batch row's user) starts signed out: with the profile, it would act as the
        # profile's user and pass, its own value unused.
        given = login_given(replay, run.params) if replay is not None and signin else []
        live.storage_state = signin[0] if signin and not given else None
        # Downloads (and the trace) land in the run's own folder (dashboard.runs.files).
        tab = await manager.new_tab(live)
        # Console errors and failed requests of every tab of the run, as they happen.
        problems = ProblemWatcher(tab, sink.emit)
        if tab.group is not None:  # tabs a site opens past MAX_TABS: closed, reported
            tab.group.report_to(sink.emit)
        forget_crashes = _fail_on_crash(tab, live)
        live.tab = tab
        live.view.update()
        if live.conversation:
            opened = True
            await database_sync_to_async(services.run_set_session)(
                run_id=run.pk, session=Run.Session.OPEN
            )
        if conf["TRACE_RUNS"]:
            trace = TraceRecorder(tab.context)
            await trace.start(title=f"run {run.pk}", budget=Budget(10_000))
        if run.kind == Run.Kind.MCP:
            await mcprun.serve(run, live)
            return
        if replay is not None:
            replaying = Replay(tab, replay, params=run.params, base_url=run.start_url,
                               sink=sink, control=control, secrets=sink.secrets,
                               # Started signed out for its login scenario: its sign-in says.
                               signed_out_hint="" if given else _signed_out_hint(replay, signin),
                               agent=PlannerAgent(planner) if planner is not None else None,
                               config=ReplayConfig(
                                   step_timeout_ms=conf["ACTION_TIMEOUT_MS"],
                                   run_timeout_ms=conf["RUN_TIMEOUT_MS"], screenshots=True,
                                   person_wait_ms=_person_wait_ms(run),
                               ))  # fmt: skip
            # Its login scenario's sign-in, which also saves the run's profile again.
            replaying.relogin = await relogin_for(run, replaying)
            if given and signin:
                await sink.emit(Observation(0, _signed_out_note(replay, signin[1], given)))
            await replaying.run()
            return
        assert planner is not None
        if message:
            agent, note = await _restored(run, live, planner, message)
        else:
            agent, note = _agent(run, live, planner), ""
            await agent.run()
        await _converse(manager, agent, live, note)
    except TabwrightError as exc:
        await sink.emit(RunFinished("failed", reason=str(exc)))
    except asyncio.CancelledError:
        if live.working:
            await asyncio.shield(sink.emit(RunFinished("stopped", reason="the server stopped")))
        live.closing = live.closing or "the server stopped"
        raise
    except Exception as exc:  # a bug must still end the run visibly, not leave it "running"
        log.exception("run %s crashed", run.pk)
        await sink.emit(RunFinished("failed", reason=f"internal error: {exc!r}"))
    finally:
        # Each step of the end is bounded: a browser or connection that stopped
        # answering must not keep the run (and whoever waits for it) from ending.
        live.working = False
        live.mcp_ready.set()  # an MCP call waiting for the tab finds the run ended
        await _bounded(run.pk, "stop the live view", live.view.close())
        if problems is not None:
            await problems.stop()  # bounded by its own budget
        if forget_crashes is not None:
            forget_crashes()
        if trace is not None and trace.active:
            await _end_trace(trace, workspace / runfiles.TRACE_NAME, live.secrets)  # bounded
        if tab is not None:  # the run's context with every tab it opened
            closing = tab.group.close() if tab.group is not None else tab.close()
            await _bounded(run.pk, "close the run's tabs", closing)
        await _bounded(run.pk, "keep the run's files", _keep_files(live))
        closer = getattr(planner, "aclose", None)
        if closer is not None:
            await _bounded(run.pk, "close the model's connection", closer())
        if opened:  # says so, also when the server stops
            reason = live.closing or control.failure or "the run ended"
            await _bounded(run.pk, "record the session closed",
                           asyncio.shield(sink.emit(SessionClosed(reason))))  # fmt: skip
        await _bounded(run.pk, "let go of the lease",
                       asyncio.shield(manager.leases.let_go(run.pk)))  # fmt: skip
        ended = sink.sink.status if isinstance(sink.sink, DashboardSink) else ""
        log.info("run %s: ended%s on worker %s", run.pk, f" {ended}" if ended else "",
                 manager.leases.name)  # fmt: skip
        for what, hook in _ended_hooks:  # what others do when a run ends (on_ended)
            await _bounded(run.pk, what, hook(run))
        # Gone from the live runs before the task ends: whoever awaits it sees it gone
        # (the done callback, which does the same, runs a moment later).
        manager.forget(run.pk, live)


def _person_wait_ms(run: Run) -> int | None:
    """How long a replay waits for a person: one nobody watches (a schedule's firing, a
    batch's row, whose batch must end) for BATCH_PERSON_WAIT_S, then it fails and its
    worker's slot is free for everyone's runs; any other until someone comes."""
    if not run.unattended and run.batch_row_id is None:
        return None
    return max(1, int(settings.TABWRIGHT["BATCH_PERSON_WAIT_S"])) * 1000


def _signed_out_note(replay: Document, profile: str, given: list[str]) -> str:
    """Why a replay started signed out though its run names a sign-in profile."""
    names = ", ".join(map(repr, given))
    return (f"started signed out, not with the sign-in profile {profile!r}: this replay "
            f"gives the login scenario {replay.login_scenario!r} its own {names}, and it "
            "signs in with them")  # fmt: skip


def _signed_out_hint(replay: Document, signin: tuple[Any, str] | None) -> str:
    """What a replay that fails on a sign-in page says (dashboard.runs.signins): its
    profile expired; with none, to start with one, unless the scenario signs in itself
    (it types a secret)."""
    if signin is None:
        if any(one.placeholders()[1] for one in (replay, *called(replay).values())):
            return ""  # it signs in itself, or a scenario it calls does
        return "the page asks to sign in: start the replay with a sign-in profile"
    profile = signin[1]
    return (
        f"the page asks to sign in: the sign-in profile {profile!r} has expired or does not "
        f"sign in to this site; {SAVE_AGAIN}"
    )


def _agent(run: Run, live: LiveRun, planner: Planner, **resumed: Any) -> AgentRun:
    conf = settings.TABWRIGHT
    assert live.tab is not None
    return AgentRun(
        tab=live.tab,
        planner=planner,
        sink=live.sink,
        task=run.task,
        start_url=run.start_url,
        config=AgentConfig(
            round_cap=conf["ROUND_CAP"],
            run_timeout_ms=conf["RUN_TIMEOUT_MS"],
            llm_timeout_ms=conf["LLM_TIMEOUT_MS"],
            action_timeout_ms=conf["ACTION_TIMEOUT_MS"],
        ),
        control=live.control,
        secrets=live.secrets,
        output_schema=run.output_schema,
        **resumed,
    )


async def _restored(
    run: Run, live: LiveRun, planner: Planner, message: str
) -> tuple[AgentRun, str]:
    """A closed conversation's page, restored by replaying its recorded steps; then its
    agent goes on with ``message``.  When the replay stops short, the conversation says
    where and waits: the person's next message goes on from that page.  Returns the
    agent and what to tell the model with the next message (if one is awaited)."""
    conf = settings.TABWRIGHT
    history = await database_sync_to_async(run_selectors.run_conversation)(run_id=run.pk)
    rows = await database_sync_to_async(run_selectors.run_step_rows)(run=run)
    assert live.tab is not None
    live.restoring = True
    try:
        restored = await restore_page(
            live.tab, rows, base_url=run.start_url, sink=live.sink, control=live.control,
            secrets=live.secrets,
            config=ReplayConfig(step_timeout_ms=conf["ACTION_TIMEOUT_MS"],
                                run_timeout_ms=conf["RUN_TIMEOUT_MS"]),
        )  # fmt: skip
    finally:
        live.restoring = False
    agent = _agent(
        run, live, planner, resumed=True, requests=history.requests[1:],
        first_round=history.last_round, first_step=history.next_step,
    )  # fmt: skip
    earlier = "\n".join(
        f"- asked: {one_line(asked)} -> {one_line(ended)}"
        for asked, ended in list(zip(history.requests, history.endings, strict=False))[-10:]
    )
    note = (
        "The browser was closed after the work above and opened again. "
        + (f"The page was restored by replaying the {restored.done} steps recorded so far"
           if restored.ok else
           f"Restoring the page by replaying the {restored.total} steps recorded so far "
           f"stopped after {restored.done}: {restored.reason}; the page is as those steps "
           "left it")
        + ". Earlier rounds are not shown; how each request ended:\n" + earlier
    )  # fmt: skip
    if not restored.ok and live.redirect and not live.closing:
        # The person answered the restore's pause with what to do instead: from here.
        text, live.redirect = live.redirect, ""
        live.control.stopped = False  # the stop ended the restore, not this message's work
        note = f"{note}\nBefore that, the person had asked: {message}"
        await agent.continue_with(text, note=note, said_before=True)
        return agent, ""
    if not restored.ok or live.closing:
        live.control.stopped = False
        return agent, f"{note}\nBefore that, the person had asked: {message}"
    # Nothing was recorded to restore (the first work failed at once): start where the
    # conversation did.
    start_url = run.start_url if not restored.total else ""
    await agent.continue_with(message, start_url=start_url, note=note, said_before=True)
    return agent, ""


async def _converse(manager: RunManager, agent: AgentRun, live: LiveRun, note: str) -> None:
    """Each message's work in turn, on the same tab, while the session is kept."""
    while not (live.closing or live.control.failure):
        text = await _idle(manager, live)
        if text is None or live.closing:  # closed as the message came: no more work
            break
        await agent.continue_with(text, note=note, said_before=True)
        note = ""
    live.closing = live.closing or live.control.failure


async def _idle(manager: RunManager, live: LiveRun) -> str | None:
    """Wait for the person's next message with the tab open, within the idle time and
    the per-person limit; None when the session is to close."""
    idle_s = int(settings.TABWRIGHT["SESSION_IDLE_S"])
    # Its files first: once settled, a waiter may act, and the session must already
    # know whether it closes.
    await _bounded(live.run_id, "keep the run's files", _keep_files(live))
    # Until the next line the run still counts as working, so what came as the last
    # stretch ended (its files being kept) went to the work: a close (or a crash) ends
    # the session now, messages the model did not read go on at once.  No await from
    # here to ``working = False``: a later message or close finds the session idle.
    if live.closing or live.control.failure:
        return None
    carried = live.control.take_replies()
    if carried:
        return "\n".join(carried)
    # Asked as the work ended: nothing left to pause or stop.
    live.control.pause_requested = live.control.stopped = False
    live.working = False
    live.idle_since = time.monotonic()
    live.settled.set()
    if idle_s <= 0:
        live.closing = "this server keeps no tab between messages (TABWRIGHT_SESSION_IDLE_S=0)"
        return None
    await live.sink.emit(SessionIdle(idle_s, int(time.time() * 1000) + idle_s * 1000))
    manager.close_over_limit(live.owner_id)
    try:
        async with asyncio.timeout(idle_s):  # a stop is never taken for the timeout
            text = await live.inbox.get()
    except TimeoutError:
        text = None if live.inbox.empty() else live.inbox.get_nowait()
        if text is None:
            live.closing = live.closing or f"no message for {_span(idle_s)}"
    if text is None:
        return None
    live.working = True
    live.settled.clear()
    return text


async def _replay_of(run: Run) -> Document:
    """The scenario a replay run replays, as stored now."""
    if run.scenario_id is None:
        raise ScenarioInvalid("the scenario of this replay was deleted")
    scenario = await database_sync_to_async(Scenario.objects.get)(pk=run.scenario_id)
    return await database_sync_to_async(scenario_selectors.scenario_document)(scenario=scenario)


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _span(seconds: int) -> str:
    """``45 s``, ``15 min``, ``2 h``: an idle time in words."""
    if seconds < 120:
        return f"{seconds} s"
    return f"{seconds // 60} min" if seconds < 7200 else f"{seconds // 3600} h"


def _fail_on_crash(tab: Tab, live: LiveRun) -> Callable[[], None]:
    """End the run as failed the moment its tab or browser crashes, even while it waits
    for the person (nothing else would notice then); a conversation waiting for a message
    closes its session.  Returns the undo: the browser is shared and outlives the run."""

    def gone(reason: str) -> None:
        live.control.fail(reason)
        if not live.working:
            live.close(reason)

    def tab_crashed(_page: object) -> None:
        gone("the browser went away: the tab crashed")

    def browser_gone(_browser: object) -> None:
        gone("the browser went away: it closed or crashed")

    tab.page.on("crash", tab_crashed)
    browser = tab.context.browser
    if browser is not None:
        browser.on("disconnected", browser_gone)

    def forget() -> None:
        tab.page.remove_listener("crash", tab_crashed)
        if browser is not None:
            browser.remove_listener("disconnected", browser_gone)

    return forget


END_STEP_S = 20  # the longest one step of a run's end may take (closing its tabs, ...)


async def _bounded(run_id: int, what: str, step: Awaitable[object]) -> None:
    """One step of a run's end, given END_STEP_S; one that overruns is logged and left."""
    try:
        async with asyncio.timeout(END_STEP_S):
            await step
    except TimeoutError:
        log.error("run %s: %s took longer than %s s; it was left", run_id, what, END_STEP_S)


async def _end_trace(trace: TraceRecorder, path: Path, secrets: Secrets) -> None:
    """Write the run's trace, unless the run typed a secret or a password: a trace records
    the values typed, so it is then discarded.  A trace that can't be written is logged:
    it must not change how the run ended."""
    try:
        if secrets.values():
            await trace.discard(budget=Budget(30_000))
            await asyncio.to_thread(path.unlink, missing_ok=True)  # an earlier session's
            log.info("%s not kept: the run typed a secret or a password", path)
        else:
            await trace.stop(path, budget=Budget(30_000))
    except (TabwrightError, OSError) as exc:
        log.warning("the run's trace was not saved: %s", exc)


async def _keep_files(live: LiveRun) -> None:
    """The run's new downloads (and trace) into storage (dashboard.runs.files), and the
    list to its open pages; a failure is logged: it must not change how the run went."""
    if live.workspace is None:
        return
    try:
        if not await asyncio.to_thread(runfiles.keep, live.run_id, live.workspace):
            return
        files = await asyncio.to_thread(runfiles.files_of, live.run_id)
    except Exception:
        log.exception("run %s: its files were not kept", live.run_id)
        return
    listing = [file.to_dict(live.run_id) for file in files]
    await relay_event(live.run_id, {"type": "files", "files": listing})
