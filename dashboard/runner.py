"""Live runs: each one an asyncio task in the server's event loop, with its own browser context.

The runner turns engine events into three things, in order: rows (RunEvent, Step, the
run's status), files (screenshots under MEDIA_ROOT) and channel-layer messages to the
group ``run_<id>`` that the run's open pages have joined.  The run never depends on a page
being open: a page that connects later reads the stored events and then follows live.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.urls import reverse

from automation import (
    AgentConfig,
    AgentRun,
    BrowserConfig,
    BrowserSession,
    Budget,
    RunControl,
    Tab,
)
from automation.actions import act
from automation.browser.problems import ProblemWatcher
from automation.browser.screencast import person_input, viewport_point
from automation.browser.tracing import TraceRecorder
from automation.budget import timeout_ms_of
from automation.errors import ActionInvalid, ScenarioInvalid, TabwrightError
from automation.events import (
    EvaluationFinished,
    Event,
    LLMMessage,
    RunFinished,
    RunPaused,
    RunResumed,
    RunStarted,
    ScreenshotTaken,
    StepRecorded,
    StepReplayed,
    UserMessage,
)
from automation.limits import fit
from automation.llm.base import Planner
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario as Document
from automation.secrets import RedactingSink, Secrets, secret_names
from dashboard import selectors, services
from dashboard.engineconf import browser_config, planner_for_run
from dashboard.liveview import LiveView
from dashboard.models import Run, Scenario, SecretGrant

__all__ = ["RunManager", "group_name", "runner"]

log = logging.getLogger("tabwright.runner")

COMMANDS = frozenset({"pause", "resume", "stop", "reply", "extend"})
# Events stamped with the server's time (``at_ms``, epoch ms): a model call's wait, retry
# and answer.
TIMED_EVENTS = frozenset({"llm.waiting", "llm.retry", "llm.message"})
MAX_EXTEND_ROUNDS = 1_000


def group_name(run_id: int) -> str:
    return f"run_{run_id}"


class DashboardSink:
    """Stores, numbers and relays one run's events.  Serialised: the loop and the person's
    replies emit from different tasks, and the sequence numbers must match the store."""

    def __init__(self, run_id: int, next_seq: int, *, scenario_id: int | None = None) -> None:
        self.run_id = run_id
        self.scenario_id = scenario_id  # a replay: where its healed identities go
        self._seq = next_seq
        self._lock = asyncio.Lock()
        self._layer = get_channel_layer()

    async def emit(self, event: Event) -> None:
        async with self._lock:
            data = event.to_dict()
            if event.type in TIMED_EVENTS:
                # The server's clock: the run page counts a wait from here, also after a
                # reload, and tells a finished round how long the model took.
                data["at_ms"] = int(time.time() * 1000)
            if isinstance(event, ScreenshotTaken):
                data["src"] = await self._save_screenshot(event)
            if isinstance(event, StepRecorded):
                await database_sync_to_async(services.step_record)(run_id=self.run_id, data=data)
            if isinstance(event, LLMMessage) and event.usage:
                await database_sync_to_async(services.run_usage_add)(
                    run_id=self.run_id, usage=event.usage
                )
            if isinstance(event, StepReplayed) and self.scenario_id is not None:
                await database_sync_to_async(services.scenario_step_replayed)(
                    scenario_id=self.scenario_id, outcome=data, run_id=self.run_id
                )
                if event.heal:
                    await database_sync_to_async(services.heal_record)(
                        scenario_id=self.scenario_id, outcome=data, run_id=self.run_id
                    )
            status = _status_change(event)
            if status is not None:
                await database_sync_to_async(services.run_set_status)(run_id=self.run_id, **status)
            # One event is one message to the page, stored and relayed within its limit.
            data = fit(_jsonable(data))
            if event.persist:
                self._seq += 1
                data["seq"] = self._seq
                await database_sync_to_async(services.run_event_append)(
                    run_id=self.run_id, seq=self._seq, type=event.type, data=data
                )
            await self._layer.group_send(
                group_name(self.run_id), {"type": "run.event", "event": data}
            )

    async def _save_screenshot(self, event: ScreenshotTaken) -> str:
        folder = Path(settings.MEDIA_ROOT) / "runs" / str(self.run_id)
        name = f"step-{event.step_index}.jpg"
        await asyncio.to_thread(_write_file, folder / name, event.jpeg)
        await database_sync_to_async(services.step_attach_screenshot)(
            run_id=self.run_id, index=event.step_index, path=f"runs/{self.run_id}/{name}"
        )
        return reverse("run_screenshot", args=[self.run_id, event.step_index])


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _status_change(event: Event) -> dict[str, Any] | None:
    if isinstance(event, RunStarted | RunResumed):
        return {"status": Run.Status.RUNNING}
    if isinstance(event, RunPaused):
        return {"status": Run.Status.PAUSED, "reason": f"{event.reason}: {event.detail}"}
    if isinstance(event, RunFinished):
        return {
            "status": event.status,
            "reason": event.reason,
            "summary": event.summary,
            "output": event.output,
        }
    return None


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if not isinstance(v, bytes)}


@dataclass
class LiveRun:
    task: asyncio.Task[None]
    control: RunControl
    sink: RedactingSink  # the run's one exit: its secrets, then the DashboardSink
    view: LiveView
    secrets: Secrets  # the owner's grants, and every value the run filled
    tab: Tab | None = None  # once the run has opened its tab

    def current_tab(self) -> Tab | None:
        """The tab the run works in now (it may have opened others since its first)."""
        if self.tab is None or self.tab.group is None:
            return self.tab
        return self.tab.group.current


class RunManager:
    """Starts runs, routes the person's commands to them, shares one browser between them."""

    def __init__(self) -> None:
        # One browser per configuration: the settings are read when a run starts, so a run
        # never shares a browser launched with other switches (evaluate, URL policy).
        self._browsers: dict[BrowserConfig, BrowserSession] = {}
        self._browser_lock = asyncio.Lock()
        self._live: dict[int, LiveRun] = {}
        self._viewers: Counter[int] = Counter()  # open pages per run

    def is_live(self, run_id: int) -> bool:
        return run_id in self._live

    @property
    def live_count(self) -> int:
        return len(self._live)

    @property
    def browser_restarts(self) -> int:
        """How often a shared browser had to be started again (0 before the first run)."""
        return sum(b.restarts for b in self._browsers.values())

    async def browser(self) -> BrowserSession:
        config = await database_sync_to_async(browser_config)()
        async with self._browser_lock:
            if config not in self._browsers:
                self._browsers[config] = BrowserSession(config)
            return self._browsers[config]

    async def start(self, run_id: int) -> None:
        run = await database_sync_to_async(Run.objects.get)(pk=run_id)
        next_seq = await database_sync_to_async(selectors.run_last_seq)(run_id=run_id)
        secrets = Secrets(allowed=await database_sync_to_async(_granted_secrets)(run))
        sink = RedactingSink(DashboardSink(run_id, next_seq, scenario_id=run.scenario_id), secrets)
        control = RunControl()
        task = asyncio.create_task(self._run(run, sink, control), name=f"run-{run_id}")
        view = LiveView(group_name(run_id), lambda: live.current_tab(), redact=secrets.redact)
        live = LiveRun(task, control, sink, view, secrets)
        live.view.set_viewers(self._viewers[run_id])
        self._live[run_id] = live
        task.add_done_callback(lambda _t: self._live.pop(run_id, None))

    def watch(self, run_id: int) -> dict[str, Any] | None:
        """A page of the run opened: the live view runs while any page is open.  Returns
        the latest frame, if any, for the page to show before the picture next changes."""
        self._viewers[run_id] += 1
        self._update_view(run_id)
        live = self._live.get(run_id)
        return live.view.last_frame if live is not None else None

    def unwatch(self, run_id: int) -> None:
        self._viewers[run_id] -= 1
        if self._viewers[run_id] <= 0:
            del self._viewers[run_id]
        self._update_view(run_id)

    def _update_view(self, run_id: int) -> None:
        live = self._live.get(run_id)
        if live is not None:
            live.view.set_viewers(self._viewers[run_id])

    async def _run(self, run: Run, sink: RedactingSink, control: RunControl) -> None:
        conf = settings.TABWRIGHT
        tab = None
        forget_crashes: Callable[[], None] | None = None
        problems: ProblemWatcher | None = None
        trace: TraceRecorder | None = None
        workspace = Path(conf["WORKSPACE_DIR"]) / str(run.pk)
        planner: Planner | None = None
        try:
            replay = await self._replay_of(run) if run.kind == Run.Kind.REPLAY else None
            # A secret the owner was not granted fails the run before any page opens.
            sink.secrets.require(replay.placeholders()[1] if replay else secret_names(run.task))
            if replay is None:
                planner = await database_sync_to_async(planner_for_run)(run)
            browser = await self.browser()
            # Downloads (and the trace) land in the run's own folder, which is never served.
            tab = await browser.new_tab(workspace=workspace)
            # Console errors and failed requests of every tab of the run, as they happen.
            problems = ProblemWatcher(tab, sink.emit)
            if tab.group is not None:  # tabs a site opens past MAX_TABS: closed, reported
                tab.group.report_to(sink.emit)
            forget_crashes = _fail_on_crash(tab, control)
            live = self._live.get(run.pk)
            if live is not None:
                live.tab = tab
                live.view.update()
            if conf["TRACE_RUNS"]:
                trace = TraceRecorder(tab.context)
                await trace.start(title=f"run {run.pk}", budget=Budget(10_000))
            if replay is not None:
                await Replay(tab, replay, params=run.params, base_url=run.start_url,
                             sink=sink, control=control, secrets=sink.secrets,
                             config=ReplayConfig(
                                 step_timeout_ms=conf["ACTION_TIMEOUT_MS"],
                                 run_timeout_ms=conf["RUN_TIMEOUT_MS"], screenshots=True,
                             )).run()  # fmt: skip
                return
            assert planner is not None
            agent = AgentRun(
                tab=tab,
                planner=planner,
                sink=sink,
                task=run.task,
                start_url=run.start_url,
                config=AgentConfig(
                    round_cap=conf["ROUND_CAP"],
                    run_timeout_ms=conf["RUN_TIMEOUT_MS"],
                    llm_timeout_ms=conf["LLM_TIMEOUT_MS"],
                    action_timeout_ms=conf["ACTION_TIMEOUT_MS"],
                ),
                control=control,
                secrets=sink.secrets,
                output_schema=run.output_schema,
            )
            await agent.run()
        except TabwrightError as exc:
            await sink.emit(RunFinished("failed", reason=str(exc)))
        except asyncio.CancelledError:
            await asyncio.shield(sink.emit(RunFinished("stopped", reason="the server stopped")))
            raise
        except Exception as exc:  # a bug must still end the run visibly, not leave it "running"
            log.exception("run %s crashed", run.pk)
            await sink.emit(RunFinished("failed", reason=f"internal error: {exc!r}"))
        finally:
            if run.pk in self._live:
                await self._live[run.pk].view.close()
            if problems is not None:
                await problems.stop()
            if forget_crashes is not None:
                forget_crashes()
            if trace is not None and trace.active:
                await _save_trace(trace, workspace / "trace.zip")
            if tab is not None:  # the run's context with every tab it opened
                await (tab.group.close() if tab.group is not None else tab.close())
            closer = getattr(planner, "aclose", None)
            if closer is not None:
                await closer()

    async def _replay_of(self, run: Run) -> Document:
        """The scenario a replay run replays, as stored now."""
        if run.scenario_id is None:
            raise ScenarioInvalid("the scenario of this replay was deleted")
        scenario = await database_sync_to_async(Scenario.objects.get)(pk=run.scenario_id)
        return await database_sync_to_async(selectors.scenario_document)(scenario=scenario)

    async def command(self, run_id: int, command: str, text: str = "", rounds: int = 0) -> None:
        """pause / resume / stop / reply / extend (``rounds`` more past the round cap, then
        resume); raises LookupError if the run is not live."""
        if command not in COMMANDS:
            raise ValueError(f"unknown command {command!r}")
        live = self._live.get(run_id)
        if live is None:
            raise LookupError("the run is not live")
        control, sink = live.control, live.sink
        if command == "extend":
            if not 1 <= rounds <= MAX_EXTEND_ROUNDS:
                raise ValueError(f"extend by 1 to {MAX_EXTEND_ROUNDS} rounds")
            control.extend(rounds)
            control.resume()
        elif command == "pause":
            control.request_pause()
        elif command == "resume":
            control.resume()
        elif command == "stop":
            control.stop()
        else:
            await sink.emit(UserMessage(text))
            control.reply(text)

    async def act(
        self, run_id: int, action: str, args: dict[str, Any], *, budget: Budget
    ) -> dict[str, Any]:
        """One action by the person on a paused run's current tab, within the caller's
        budget (the HTTP request's or the socket command's); the answer of
        :func:`automation.actions.act`.  LookupError if the run is not live;
        ActionInvalid while the agent is acting, or for a bad action."""
        live = self._live.get(run_id)
        if live is None:
            raise LookupError("the run is not live")
        if live.tab is None or not live.control.paused:
            raise ActionInvalid("the agent is using the tab", hint="pause the run first, then act")
        tab = live.current_tab()
        assert tab is not None
        try:  # the answer (a page read, a result, an error) leaves through the run's secrets
            return live.secrets.redact_any(await act(tab, action, args, budget=budget))
        except TabwrightError as exc:
            raise _redacted(exc, live.secrets) from None
        finally:
            for done in tab.take_evaluations():  # a person's action is not a numbered step
                await live.sink.emit(EvaluationFinished(-1, **dataclasses.asdict(done)))

    async def person_input(self, run_id: int, event: dict[str, Any], *, budget: Budget) -> str:
        """A click, scroll, key or text of the live view, to a paused run's current tab
        (:func:`automation.browser.screencast.person_input`).  LookupError if the run is
        not live; ActionInvalid while the agent has the tab, or for a bad input."""
        live = self._live.get(run_id)
        if live is None:
            raise LookupError("the run is not live")
        tab = live.current_tab()
        if tab is None or not live.control.paused:
            raise ActionInvalid("the agent is using the tab", hint="take over (pause) first")
        if event.get("kind") == "check":
            return live.secrets.redact(await _check_at(live.control.recorder, tab, event, budget))
        return live.secrets.redact(await person_input(tab, event, budget=budget))

    async def wait(self, run_id: int) -> None:
        live = self._live.get(run_id)
        if live is not None:
            await asyncio.shield(live.task)

    async def shutdown(self) -> None:
        for live in list(self._live.values()):
            live.control.stop("the server is stopping")
            live.task.cancel()
        if self._live:
            await asyncio.gather(*(r.task for r in self._live.values()), return_exceptions=True)
        for browser in self._browsers.values():
            await browser.close()
        self._browsers.clear()


async def _check_at(
    recorder: Recorder | None, tab: Tab, event: dict[str, Any], budget: Budget
) -> str:
    """The live view's "check this": a check of the element at the point, recorded with
    the person's steps (nothing is clicked)."""
    if recorder is None or not recorder.recording or recorder.tab is not tab:
        raise ActionInvalid(
            "checks are recorded only while the run is paused on the tab it recorded",
            hint="take over, then use Check this",
        )
    x, y = viewport_point(tab, event)
    step = await recorder.check_at(x, y, budget=budget)
    return f"check: {step.describe().removeprefix('expect ')}"


def _granted_secrets(run: Run) -> frozenset[str] | None:
    """The secret names the run's owner may use (None: all, a superuser).  Reads the
    database."""
    return SecretGrant.objects.names_for(run.owner)


def _redacted(exc: TabwrightError, secrets: Secrets) -> TabwrightError:
    """``exc`` with its message and hint redacted (its class and fields kept)."""
    exc.message, exc.hint = secrets.redact(exc.message), secrets.redact(exc.hint)
    exc.args = (exc.message,)
    return exc


def _fail_on_crash(tab: Tab, control: RunControl) -> Callable[[], None]:
    """End the run as failed the moment its tab or browser crashes, even while it waits
    for the person (nothing else would notice then).  Returns the undo: the browser is
    shared and outlives the run."""

    def tab_crashed(_page: object) -> None:
        control.fail("the browser went away: the tab crashed")

    def browser_gone(_browser: object) -> None:
        control.fail("the browser went away: it closed or crashed")

    tab.page.on("crash", tab_crashed)
    browser = tab.context.browser
    if browser is not None:
        browser.on("disconnected", browser_gone)

    def forget() -> None:
        tab.page.remove_listener("crash", tab_crashed)
        if browser is not None:
            browser.remove_listener("disconnected", browser_gone)

    return forget


def act_request(data: object) -> tuple[str, dict[str, Any], float]:
    """``{"action": name, "args": {...}, "timeout_ms": N}`` (or a macro, ``{"steps": [...],
    "fail_fast", "return_mode", "per_step_timeout_ms", "timeout_ms"}``) from an HTTP body
    or a socket command, checked: the action's name, its args, and the whole call's budget."""
    if not isinstance(data, dict):
        raise ActionInvalid("an act request is a JSON object")
    if "steps" in data and "action" not in data:  # a macro: {"steps": [...], options...}
        options = ("steps", "fail_fast", "return_mode", "per_step_timeout_ms")
        data = {**data, "action": "steps", "args": {k: data[k] for k in options if k in data}}
    action, args = data.get("action"), data.get("args", {})
    if not isinstance(action, str) or not action:
        raise ActionInvalid('an act request needs "action"')
    if not isinstance(args, dict):
        raise ActionInvalid('"args" must be an object')
    timeout_ms = timeout_ms_of(
        data.get("timeout_ms", settings.TABWRIGHT["ACTION_TIMEOUT_MS"]), what='"timeout_ms"'
    )
    # The request's timeout is the budget of the whole call; a second one in args would
    # only narrow it, so it is dropped rather than left to confuse.
    args = {k: v for k, v in args.items() if k != "timeout_ms"}
    return action, args, timeout_ms


async def _save_trace(trace: TraceRecorder, path: Path) -> None:
    """A trace that can't be written is logged: it must not change how the run ended."""
    try:
        await trace.stop(path, budget=Budget(30_000))
    except TabwrightError as exc:
        log.warning("the run's trace was not saved: %s", exc)


runner = RunManager()
