"""The runner: this process's live runs, each an asyncio task in the server's event loop with
its own browser context (dashboard.runs.live).  It claims queued runs while the worker has
room, shares one browser per configuration, routes the person's commands, acts, live-view
inputs and an MCP client's calls to the run, keeps conversations within their limits, and
drains on stop.

Each run's events become rows, files and channel-layer messages to the group ``run_<id>``
that its open pages have joined (dashboard.runs.sink).  The run never depends on a page
being open: a page that connects later reads the stored events and then follows live.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import logging
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from channels.db import database_sync_to_async
from django.conf import settings

from automation import (
    BrowserConfig,
    BrowserSession,
    Budget,
    RunControl,
    Tab,
)
from automation.actions import act
from automation.browser.screencast import person_input
from automation.browser.storage import storage_state_read
from automation.errors import ActionInvalid, TabwrightError
from automation.events import (
    EvaluationFinished,
    UserMessage,
)
from automation.recording.replayperson import SKIP_REPLIES
from automation.secrets import RedactingSink, Secrets
from dashboard.lib.requestthreads import process_task
from dashboard.models import Run, SecretGrant
from dashboard.runs import selectors as run_selectors
from dashboard.runs import services
from dashboard.runs.browsers import Browsers
from dashboard.runs.doorbell import wake
from dashboard.runs.leases import Leases, lease_seconds
from dashboard.runs.live import END_STEP_S, LiveRun, live_session, one_line
from dashboard.runs.liveview import LiveView, check_at, recorder_follows, switch_tab
from dashboard.runs.signins import signin_save
from dashboard.runs.sink import DashboardSink, announce_queue, group_name, relay_event
from dashboard.runs.viewers import Viewers

__all__ = ["RunManager", "group_name", "runner"]

log = logging.getLogger("tabwright.runner")

INTERRUPTED = "interrupted: its worker was stopped before the run ended"
MODEL_GAVE_WAY = (
    "its model could not be reached, and another run waited for this worker: closed to make "
    "room (write to go on from where it was)"
)
COMMANDS = frozenset({"pause", "resume", "stop", "reply", "extend", "message", "close"})
# What an MCP session refuses: its client plans every call and reads only the answers.
NOT_FOR_MCP = {
    "message": "an MCP session takes no messages: its client never reads them (tell the "
    "client in its own chat, or pause the run and act on its live view)",
    "extend": "an MCP session has no round cap to extend: its client makes as many calls "
    "as it needs (resume it if it is paused)",
    "reply": "an MCP session takes no reply: its client never reads one (resume it, once "
    "you have done on its live view what you paused it for)",
}
MAX_EXTEND_ROUNDS = 1_000


class RunManager:
    """Starts runs, routes the person's commands and messages to them, keeps a
    conversation's tab open between messages (within limits), shares one browser."""

    def __init__(self) -> None:
        # One browser per launch settings: the settings are read when a run starts, so a
        # run never shares a browser launched with other switches (evaluate, URL policy);
        # its tab's own settings (its action timeout, say) are its own in any browser.
        self.browsers = Browsers(lambda: self.serving)
        self._start_lock = asyncio.Lock()  # a closed conversation is restored once
        self._live: dict[int, LiveRun] = {}
        # Runs this process is starting (claimed, not live yet): set once each is live or
        # failed to start.  A call for one waits for that instead of finding it not live.
        self._starting: dict[int, asyncio.Event] = {}
        # The pages that watch each run, here and on other processes.
        self.viewers = Viewers(self._update_view)
        self.leases = Leases(lambda: list(self._live), self._lost)
        # A worker (dashboard.worker) claims queued runs while it has room; a process that
        # is not one (a web process beside separate workers) never does.
        self.serving = False
        self._claim_lock = asyncio.Lock()

    def is_live(self, run_id: int) -> bool:
        return run_id in self._live

    async def _live_run(self, run_id: int) -> LiveRun | None:
        """The run's live state here; a run being started here is waited for (a few
        database reads), so a stop or a message that comes as it starts reaches it."""
        starting = self._starting.get(run_id)
        if starting is not None:
            await starting.wait()
        return self._live.get(run_id)

    def is_working(self, run_id: int) -> bool:
        """Live and at work (not waiting for a message between stretches)."""
        live = self._live.get(run_id)
        return live is not None and live.working

    def live_ids(self) -> list[int]:
        """The runs with a tab in this process."""
        return list(self._live)

    @property
    def live_count(self) -> int:
        """Runs with a tab in this process, conversations waiting for a message included."""
        return len(self._live)

    @property
    def idle_count(self) -> int:
        """Conversations whose tab is kept open for the next message."""
        return sum(1 for live in self._live.values() if not live.working and not live.closing)

    @property
    def browser_restarts(self) -> int:
        """How often a shared browser had to be started again (0 before the first run)."""
        return self.browsers.restarts

    async def browser(self, config: BrowserConfig | None = None) -> BrowserSession:
        """The shared browser of ``config``'s launch settings (dashboard.runs.browsers)."""
        return await self.browsers.of(config)

    async def warm(self) -> None:
        """Start the browsers before any run asks (dashboard.runs.browsers)."""
        await self.browsers.warm()

    async def new_tab(self, live: LiveRun) -> Tab:
        """The run's first tab (dashboard.runs.browsers), in the running Chrome of
        TABWRIGHT_CDP_URL with the fewest of this worker's runs when it names several."""
        in_use = Counter(other.cdp_url for other in self._live.values() if other.tab)
        return await self.browsers.new_tab(live, in_use)

    @property
    def capacity(self) -> int:
        """Runs this worker drives at once (WORKER_RUNS), open conversation tabs included."""
        return max(1, int(settings.TABWRIGHT["WORKER_RUNS"]))

    async def claim(self) -> list[int]:
        """Start queued runs, oldest first, while this worker has room; returns their ids.
        Called on a wake-up, every poll, and whenever a run of this worker ends.  When
        full while runs wait, the longest-idle conversation's tab is closed to make room
        (its next message restores it)."""
        started: list[int] = []
        async with self._claim_lock:
            while len(self._live) < self.capacity:
                run_id = await database_sync_to_async(services.run_claim)(
                    holder=self.leases.holder, lease_s=lease_seconds()
                )
                if run_id is None:
                    break
                try:
                    await self.start(run_id, claimed=True)
                except Exception as exc:  # claimed, not started: it ends now, and says why
                    await self._fail_unstarted(run_id, exc)
                    continue
                started.append(run_id)
            else:
                if await database_sync_to_async(run_selectors.run_queue_positions)(limit=1):
                    self._close_idle_for_queue()
        if started:
            await announce_queue()
        return started

    async def _fail_unstarted(self, run_id: int, exc: Exception) -> None:
        log.exception("run %s was claimed but could not start", run_id)
        reason = f"the worker could not start it: {one_line(str(exc) or repr(exc))}"
        event = await database_sync_to_async(services.run_fail_unstarted)(
            run_id=run_id, holder=self.leases.holder, reason=reason
        )
        if event is not None:
            await relay_event(run_id, event)

    def _close_idle_for_queue(self) -> None:
        """Room for a run that waits: the longest-idle conversation's tab closes; with none,
        a conversation paused because its model can't be reached ends failed (it would
        hold its slot until someone came; its next message restores it)."""
        idle = [live for live in self._live.values() if not live.working and not live.closing]
        if idle:
            longest = min(idle, key=lambda each: each.idle_since)
            longest.close("closed to make room for a run that waited")
            return
        for live in self._live.values():
            if live.conversation and live.control.pause_reason == "llm_error" and not live.closing:
                live.closing = MODEL_GAVE_WAY
                live.control.fail(MODEL_GAVE_WAY)
                return

    async def start(self, run_id: int, *, message: str = "", claimed: bool = False) -> None:
        """Start a run: queued (claimed here, unless ``claimed`` already); with
        ``message``, a conversation whose session was closed: its page is restored by
        replaying its steps, then the agent goes on with ``message``."""
        if run_id in self._live or run_id in self._starting:
            raise ActionInvalid("the run is live already")
        # No await from the claim (the caller's, when ``claimed``) to here.
        self._starting[run_id] = asyncio.Event()
        try:
            await self._start(run_id, message, claimed=claimed)
        finally:
            self._starting.pop(run_id).set()

    async def _start(self, run_id: int, message: str, *, claimed: bool) -> None:
        if not (message or claimed):
            got = await database_sync_to_async(services.run_claim)(
                holder=self.leases.holder, lease_s=lease_seconds(), run_id=run_id
            )
            if got is None:
                raise ActionInvalid("the run is not queued: it started elsewhere or ended")
        run = await database_sync_to_async(Run.objects.get)(pk=run_id)
        announced = False
        if claimed and run.queued_message:  # a closed conversation, queued by a message
            message, announced = run.queued_message, True  # (taken when its work starts)
        next_seq = await database_sync_to_async(run_selectors.run_last_seq)(run_id=run_id)
        stretch = await database_sync_to_async(run_selectors.run_stretch_count)(run_id=run_id)
        secrets = Secrets(allowed=await database_sync_to_async(_granted_secrets)(run))
        holder = self.leases.holder if lease_seconds() else None
        sink = RedactingSink(
            DashboardSink(run_id, next_seq, scenario_id=run.scenario_id, stretch=stretch,
                          holder=holder, worker=self.leases.name, secrets=secrets),
            secrets,
        )  # fmt: skip
        conversation = run.kind == Run.Kind.AGENT
        if run.kind in (Run.Kind.AGENT, Run.Kind.MCP):  # one of the person's open sessions
            self.close_over_limit(run.owner_id, starting=True)
        view = LiveView(group_name(run_id), lambda: live.current_tab(), redact=secrets.redact)
        workspace = Path(settings.TABWRIGHT["WORKSPACE_DIR"]) / str(run_id)
        live = LiveRun(RunControl(), sink, view, secrets, run.owner_id, conversation,
                       run_id=run_id, workspace=workspace)  # fmt: skip
        await self.leases.hold(run_id)
        log.info("run %s: held by worker %s", run_id, self.leases.name)
        self._live[run_id] = live
        # The pages watching it now: one that opened while the lease was being held was
        # counted then, with no live run to tell (a page's watch finds it from here on).
        live.view.set_viewers(self.viewers.widths(run_id))
        # Its own task, whoever starts it (a worker's claim, or a request restoring it).
        live.task = process_task(
            live_session(self, run, live, message, announced=announced), name=f"run-{run_id}"
        )
        live.task.add_done_callback(lambda _t: self.forget(run_id, live))

    def forget(self, run_id: int, live: LiveRun) -> None:
        live.settled.set()
        if self._live.get(run_id) is live:  # not a later session of the same conversation
            del self._live[run_id]
            if self.serving:  # room for the next queued run
                process_task(self.claim_logged(), name="claim runs")

    async def claim_logged(self) -> None:
        """:meth:`claim`, its failure logged (a database hiccup: the next poll tries again)."""
        try:
            await self.claim()
        except Exception:
            log.exception("claiming queued runs failed")

    def _lost(self, run_id: int) -> None:
        """Another process declared the run lost (this one could not renew its lease in
        time): it must not go on here."""
        live = self._live.get(run_id)
        if live is not None:
            live.close("another server process declared it lost")
            live.control.fail("lost: this server process could not vouch for it in time")

    def watch(self, run_id: int, viewer: str, width: int = 0) -> dict[str, Any] | None:
        """A page of the run (its socket's channel ``viewer``) opened, or says anew how
        wide it shows the picture (``width`` device pixels, 0: not said): the live view
        runs while any page is open, its frames as large as the widest page shows them.
        Returns the latest frame, if any, for a page new here to show before the picture
        next changes.  (Each process with pages open also sweeps runs whose process is
        gone.)"""
        self.leases.keep()
        new = self.viewers.watch(run_id, viewer, width)
        live = self._live.get(run_id)
        return live.view.last_frame if new and live is not None else None

    def unwatch(self, run_id: int, viewer: str) -> None:
        self.viewers.unwatch(run_id, viewer)

    def watch_remote(
        self, run_id: int, viewer: str, ttl_s: float, width: int = 0
    ) -> dict[str, Any] | None:
        """A page on another process (its socket's channel ``viewer``) watches the run for
        the next ``ttl_s`` seconds, unless it says so again, at ``width`` as in
        :meth:`watch`: the live view runs for it as for a page here, and a page whose
        process died stops counting by itself.  Returns the latest frame when the page is
        new here."""
        new = self.viewers.watch_remote(run_id, viewer, ttl_s, width)
        live = self._live.get(run_id)
        return live.view.last_frame if new and live is not None else None

    def unwatch_remote(self, run_id: int, viewer: str) -> None:
        self.viewers.unwatch_remote(run_id, viewer)

    def viewer_count(self, run_id: int) -> int:
        """Pages watching the run: here, and on other processes until their time is up."""
        return len(self.viewers.widths(run_id))

    def _update_view(self, run_id: int) -> None:
        widths = self.viewers.widths(run_id)
        live = self._live.get(run_id)
        if live is not None:
            live.view.set_viewers(widths)

    def close_over_limit(self, owner_id: int, *, starting: bool = False) -> None:
        """Keep the person's open sessions, conversations and MCP sessions, within
        SESSIONS_PER_USER (``starting``: one more is about to open): the longest idle ones
        close; working ones are left.  (One person's idle sessions would otherwise hold
        every worker's slots, and everyone else's runs would queue behind them.)"""
        limit = max(1, int(settings.TABWRIGHT["SESSIONS_PER_USER"]))
        held = [
            live for live in self._live.values()
            if (live.conversation or live.mcp is not None) and live.owner_id == owner_id
            and not live.closing
        ]  # fmt: skip
        over = len(held) + starting - limit
        waiting = [(since, live) for live in held if (since := live.waiting_since()) is not None]
        waiting.sort(key=lambda pair: pair[0])
        what = "open session" if limit == 1 else "open sessions"
        for _, live in waiting[: max(0, over)]:
            live.close(f"closed to keep within {limit} {what} (conversations, MCP) per person")

    async def command(self, run_id: int, command: str, text: str = "", rounds: int = 0) -> None:
        """pause / resume / stop / reply / extend (``rounds`` more past the round cap, then
        resume) / message / close; raises LookupError if the run is not live (a message
        to a closed conversation restores it: :meth:`message`), ValueError for a command
        that does not apply now (an MCP session takes no message, reply or extend).  A
        close's ``text`` says why an MCP session ends: who closed it, or how its client
        left."""
        if command not in COMMANDS:
            raise ValueError(f"unknown command {command!r}")
        live = await self._live_run(run_id)
        if live is not None and live.mcp is not None and command in NOT_FOR_MCP:
            raise ValueError(NOT_FOR_MCP[command])
        if command == "message":
            await self.message(run_id, text)
            return
        if live is None:
            if command == "stop" and await self.stop_queued(run_id):
                return
            raise LookupError("the run is not live")
        if live.mcp is not None:  # its session's loop looks at the control again
            live.inbox.put_nowait("")
        if command == "close":
            if live.mcp is not None:  # ``text``: who closed it (services.stopped_by), or
                # how its client left (dashboard.api.mcp)
                live.close(text or f"{services.STOPPED_BY}the person")
                return
            if not live.conversation:
                raise ValueError("only a conversation has a session to close; stop the run")
            live.close("closed by the person")
            return
        if command == "reply":  # an answer to a pause: to nothing else (a message is one)
            if not (live.working and live.control.paused):
                raise ValueError(
                    "nothing waits for a reply: the run is not paused (write a message instead)"
                )
            if not live.conversation and not _answers_replay(text):  # (MCP: refused above)
                raise ValueError(
                    'a paused replay takes "retry" (try the step again) or "skip" (you did '
                    "it some other way); or stop it"
                )
            await self.message(run_id, text)
            return
        if not live.working:
            raise ValueError("nothing is working now: the agent waits for your message")
        control = live.control
        if command == "extend":
            if not 1 <= rounds <= MAX_EXTEND_ROUNDS:
                raise ValueError(f"extend by 1 to {MAX_EXTEND_ROUNDS} rounds")
            control.extend(rounds)
            control.resume()
        elif command == "pause":
            control.request_pause()
        elif command == "resume":
            control.resume()
        else:  # stop: ``text`` says by whom; a run waiting for the person says so too
            reason = text or f"{services.STOPPED_BY}the person"
            control.stop(f"{reason} while it waited for a person" if control.paused else reason)

    async def _requeue(self, run_id: int, text: str) -> None:
        event = await database_sync_to_async(services.run_requeue)(run_id=run_id, text=text)
        if event is None:
            raise ActionInvalid(
                "the conversation can't take a message now: it waits for a worker to start it",
                hint="write again once it has started",
            )
        await relay_event(run_id, event)
        await announce_queue()  # its page is told its place, as a new run's is
        await wake()

    async def stop_queued(self, run_id: int, reason: str = services.STOPPED_QUEUED) -> bool:
        """Stop a run no worker has claimed yet (from any process), saying why; False if it
        is not queued."""
        event = await database_sync_to_async(services.run_stop_queued)(run_id=run_id, reason=reason)
        if event is None:
            return False
        await relay_event(run_id, event)
        await announce_queue()
        return True

    async def message(self, run_id: int, text: str) -> None:
        """The person writes to the run: while it works, the model reads it next round
        (while paused, it answers the pause); while a conversation waits, its work goes on
        with it; to a closed conversation, the page is restored first (a new session).
        ActionInvalid for an empty message or a replay; ValueError for an MCP session,
        over or not, as :meth:`command` says it (its client never reads one)."""
        text = text.strip()
        if not text:
            raise ActionInvalid("the message is empty")
        async with self._start_lock:
            live = await self._live_run(run_id)
            if live is not None and live.closing and not live.working and live.task is not None:
                await asyncio.shield(live.task)  # closing now: restored once it has closed
                live = self._live.get(run_id)
            if live is None:
                run = await database_sync_to_async(Run.objects.get)(pk=run_id)
                if run.kind == Run.Kind.MCP:  # refused as a live one's is (409 on the API)
                    raise ValueError("this run is over, and an MCP session takes no messages: "
                                     "start a new session from the MCP client")  # fmt: skip
                if run.kind != Run.Kind.AGENT:
                    raise ActionInvalid("this run is over and a replay takes no messages",
                                        hint="replay the scenario again")  # fmt: skip
                web_only = not (self.serving or settings.TABWRIGHT["EMBEDDED_WORKER"])
                full = self.serving and len(self._live) >= self.capacity
                if web_only or full or run.status == Run.Status.QUEUED:
                    # A worker with room restores it, in its turn (a message joins one
                    # waiting already); a run that has not started yet takes none.
                    await self._requeue(run_id, text)
                    return
                await self.start(run_id, message=text)
                return
        idle = not live.working
        live.working = True  # from now: a wait for the run waits for this message's work
        live.settled.clear()
        await live.sink.emit(UserMessage(text))
        if idle or not live.working:  # not working: its work ended as this was said
            live.working = True
            live.settled.clear()
            live.inbox.put_nowait(text)
        elif live.restoring and live.control.paused and not _answers_replay(text):
            # Not "skip" or "retry": the person goes on without the rest of the
            # restore, from the page as it is, with this message.
            live.redirect = text
            live.control.stop("the person went on from this page")
        else:
            live.control.reply(text)

    async def act(
        self, run_id: int, action: str, args: dict[str, Any], *, budget: Budget
    ) -> dict[str, Any]:
        """One action by the person on a paused run's current tab, within the caller's
        budget (the HTTP request's or the socket command's); the answer of
        :func:`automation.actions.act`.  LookupError if the run is not live;
        ActionInvalid while the agent is acting, or for a bad action."""
        live = self._live.get(run_id)
        if live is None or live.closing:
            raise LookupError("the run is not live")
        if live.tab is None or not live.control.paused:
            raise ActionInvalid("the agent is using the tab", hint="pause the run first, then act")
        tab = live.current_tab()
        assert tab is not None
        try:  # the answer (a page read, a result, an error) leaves through the run's secrets
            answer = await act(tab, action, args, budget=budget)
            moved = live.current_tab()
            if action == "tabs" and moved is not None and moved is not tab:  # as the tab strip
                await recorder_follows(live.control.recorder, moved, budget)
            return live.secrets.redact_any(answer)
        except TabwrightError as exc:
            raise _redacted(exc, live.secrets) from None
        finally:
            for done in tab.take_evaluations():  # a person's action is not a numbered step
                await live.sink.emit(EvaluationFinished(-1, **dataclasses.asdict(done)))

    async def save_signin(self, run_id: int, name: str, *, budget: Budget) -> dict[str, Any]:
        """Save the signed-in state of the run's current tab (its context's cookies and
        each origin's storage) as its owner's sign-in profile ``name``, encrypted
        (dashboard.runs.signins): ``{"profile": id, "name", "site", "cookies", "origins"}``.
        LookupError if the run is not live or has no tab open."""
        live = self._live.get(run_id)
        tab = live.current_tab() if live is not None and not live.closing else None
        if live is None or tab is None:
            raise LookupError("the run is not live")
        state = await storage_state_read(tab.context, budget=budget)
        parts = urlsplit(tab.page.url)
        site = f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else ""
        profile = await database_sync_to_async(signin_save)(
            owner_id=live.owner_id, name=name, state=state, site=site, run_id=run_id
        )
        return {"profile": profile.pk, "name": profile.name, "site": profile.site,
                "cookies": profile.cookies, "origins": profile.origins}  # fmt: skip

    async def mcp_call(
        self, run_id: int, name: str, args: dict[str, Any], *, budget: Budget
    ) -> dict[str, Any]:
        """One tool call of the MCP session that is this run (dashboard.api.mcp), within the
        caller's ``budget`` (its cancellation stops the call): ``{"ok", "text", "image"}``
        (the image as base64).  LookupError if the run is not live."""
        live = self._live.get(run_id)
        if live is None or live.closing:
            raise LookupError("the run is not live")
        await budget.run(live.mcp_ready.wait())  # its tab is being opened
        if live.mcp is None:  # the run ended before its tab opened
            raise LookupError("the run is not live")
        answer = await live.mcp.call(name, args, within=budget)
        image = base64.b64encode(answer.image).decode("ascii") if answer.image else None
        return {"ok": answer.ok, "text": answer.text, "image": image}

    async def person_input(self, run_id: int, event: dict[str, Any], *, budget: Budget) -> str:
        """A click, scroll, key or text of the live view, to a paused run's current tab
        (:func:`automation.browser.screencast.person_input`), or a choice of another of
        its tabs (:func:`dashboard.runs.liveview.switch_tab`).  LookupError if the run is
        not live; ActionInvalid while the agent has the tab, or for a bad input."""
        live = self._live.get(run_id)
        if live is None or live.closing:
            raise LookupError("the run is not live")
        tab = live.current_tab()
        if tab is None or not live.control.paused:
            raise ActionInvalid("the agent is using the tab", hint="take over (pause) first")
        if event.get("kind") == "check":
            return live.secrets.redact(await check_at(live.control.recorder, tab, event, budget))
        if event.get("kind") == "tab":  # the tab strip: the run goes on in another of its tabs
            return live.secrets.redact(await switch_tab(tab, live.control.recorder, event, budget))
        return live.secrets.redact(await person_input(tab, event, budget=budget))

    async def wait(self, run_id: int) -> None:
        """Until the run's work ends: its task, or a conversation's stretch (the session
        may stay open for the next message)."""
        live = await self._live_run(run_id)
        if live is None or live.task is None:
            return
        settled = asyncio.ensure_future(live.settled.wait())
        try:
            await asyncio.wait({live.task, settled}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            settled.cancel()
        if live.closing:  # the session ends with the work: wait until it has
            await asyncio.shield(live.task)

    async def wait_closed(self, run_id: int) -> None:
        """Until the run's session is over (its tab closed)."""
        live = self._live.get(run_id)
        if live is not None and live.task is not None:
            await asyncio.shield(live.task)

    async def end(self, run_id: int, reason: str) -> None:
        """Stop whatever the run does and close its session; returns once it has."""
        live = await self._live_run(run_id)
        if live is None:
            return
        live.close(reason)
        live.control.stop(reason)
        await self.wait_closed(run_id)

    async def drain(self, grace_s: float) -> None:
        """This worker stops: idle conversation tabs close now; runs at work go on for
        ``grace_s``, then those still live end failed (interrupted); then the browsers
        close.  Claim nothing meanwhile (the caller stopped the worker)."""
        for live in list(self._live.values()):
            if not live.working:
                live.close("the worker stopped")
        tasks = {live.task for live in self._live.values() if live.task is not None}
        if tasks:
            await asyncio.wait(tasks, timeout=grace_s)
        for live in list(self._live.values()):
            live.close(INTERRUPTED)
            live.control.fail(INTERRUPTED)
        tasks = {live.task for live in self._live.values() if live.task is not None}
        if tasks:
            await asyncio.wait(tasks, timeout=3 * END_STEP_S)
        await self.shutdown()

    async def shutdown(self) -> None:
        tasks = [live.task for live in self._live.values() if live.task is not None]
        for live in list(self._live.values()):
            live.close("the server is stopping")
            live.control.stop("the server is stopping")
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await self.leases.stop()
        await self.browsers.close()


def _answers_replay(text: str) -> bool:
    """Whether a reply is one a paused replay acts on (skip the step, or try it again)."""
    return text.lower().strip(" .!") in SKIP_REPLIES | {"retry", "try again"}


def _granted_secrets(run: Run) -> frozenset[str] | None:
    """The secret names the run's owner may use (None: all, a superuser).  Reads the
    database."""
    return SecretGrant.objects.names_for(run.owner)


def _redacted(exc: TabwrightError, secrets: Secrets) -> TabwrightError:
    """``exc`` with its message and hint redacted (its class and fields kept)."""
    exc.message, exc.hint = secrets.redact(exc.message), secrets.redact(exc.hint)
    exc.args = (exc.message,)
    return exc


runner = RunManager()
