"""The agent loop: snapshot → planner → parse actions → execute → record step → emit events.

A run ends on an explicit ``done`` action (a reply that only claims success gets a
reminder), when it is stopped, when its budget runs out, or after too many failing rounds
in a row.  It pauses for the person when the same action repeats, when the page has not
changed for ``unchanged_rounds`` rounds even after a nudge, when the planner writes
``NEED_HELP``, at the round cap (resume grants more rounds), when the person asks, and when
the LLM cannot be reached.  While it is paused, what the person does in the tab is recorded
as steps (``by="person"``) and told to the model on resume.

The prompt stays bounded (:mod:`automation.agent.context`); ``${SECRET:NAME}`` placeholders
are filled only when an action runs (:mod:`automation.secrets`), and a password typed into a
password field is masked in every event.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from automation.actions import available
from automation.actionspec import ActionSpec
from automation.agent.context import Context, ContextLimits
from automation.agent.masks import hide_typed_passwords
from automation.agent.output import check_schema, schema_note
from automation.agent.outputcheck import CHECK_TIMEOUT_MS, check_output_isolated
from automation.agent.parser import Action
from automation.agent.prompts import system_prompt
from automation.agent.steps import ActionSteps
from automation.agent.turn import read_reply
from automation.browser.snapshot import Snapshot, SnapshotOptions
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.control import RunControl
from automation.errors import (
    ActionInvalid,
    BrowserClosed,
    BudgetExceeded,
    Cancelled,
    LLMError,
    OutputInvalid,
    TabwrightError,
)
from automation.events import (
    ChecksProposed,
    EventSink,
    LLMMessage,
    LLMRetry,
    LLMToken,
    LLMWaiting,
    Observation,
    RunFinished,
    RunResumed,
    RunStarted,
    UserMessagesSeen,
)
from automation.limits import MAX_REPLY_CHARS, cut_text
from automation.llm.base import (
    ActionOutcome,
    ChatMessage,
    Planner,
    PlannerRequest,
    RetryNotice,
)
from automation.recording.propose import propose_checks
from automation.secrets import SecretNotGranted, Secrets, redacting, secret_names

__all__ = ["AgentConfig", "AgentRun"]

log = logging.getLogger("automation.agent")

# Actions after which the page is another one: the next snapshot is a full one.
_FOLLOW_MS = 5_000  # saying where the run went on when its tab closed itself
_NAVIGATING = frozenset({"navigate", "back", "forward", "reload", "tabs"})
_NO_CHANGE = "# no changes since the last snapshot"
# A cut reply keeps its end too: the actions and NEED_HELP come last.
_REPLY_TAIL_CHARS = 4_000


@dataclass(frozen=True)
class AgentConfig:
    round_cap: int = 50  # rounds before the run pauses; resume grants as many again
    max_failed_rounds: int = 3  # rounds in a row with no successful action end the run
    unchanged_rounds: int = 3  # rounds with an unchanged page before a nudge (then a pause)
    run_timeout_ms: int = 30 * 60 * 1000
    llm_timeout_ms: int = 120_000
    action_timeout_ms: int = 15_000
    snapshot_timeout_ms: int = 10_000
    screenshots: bool = True
    record_person: bool = True  # while paused, the person's acts in the tab become steps
    propose_timeout_ms: int = 5_000  # reading the final page for checks to propose
    output_check_timeout_ms: int = CHECK_TIMEOUT_MS  # an output against the run's schema
    context: ContextLimits = field(default_factory=ContextLimits)


@dataclass
class AgentRun:
    tab: Tab
    planner: Planner
    sink: EventSink
    task: str
    start_url: str = ""
    config: AgentConfig = field(default_factory=AgentConfig)
    control: RunControl = field(default_factory=RunControl)
    secrets: Secrets = field(default_factory=Secrets)
    # The task ends in data of this JSON Schema: done must carry a matching "output".
    output_schema: dict[str, Any] | None = None
    # Going on with a conversation begun in another AgentRun whose tab was closed (the page
    # restored since): ``task`` is what was asked first, ``requests`` what was asked after,
    # and the rounds and steps are numbered on from ``first_round`` and ``first_step``.
    # Its first call is continue_with.
    resumed: bool = False
    requests: list[str] = field(default_factory=list)
    first_round: int = 0
    first_step: int = 0

    def __post_init__(self) -> None:
        if self.output_schema is not None:
            self.output_schema = check_schema(self.output_schema)  # OutputInvalid if not
        # The one exit of the run's events: through its secrets (automation.secrets).
        self.out = redacting(self.sink, self.secrets)
        self.round = self.first_round
        self.steps = ActionSteps(
            self.tab, self.out, self.secrets,
            action_timeout_ms=self.config.action_timeout_ms,
            screenshots=self.config.screenshots, step_index=self.first_step,
        )  # fmt: skip
        self._cap = self.round + self.config.round_cap
        self._last_signature = ""
        self._failed_rounds = 0
        self._still = 0  # rounds in a row whose page showed no change
        self._notes: list[str] = []  # told to the model next round
        self._navigated = True  # the next snapshot is a full one
        self._last_url = ""
        self._native_system = ""  # the system prompt when the actions go as native tools
        # The actions offered (fixed for the run, like the prompts that list them).
        self._offered_specs: list[ActionSpec] = []
        self._offered: frozenset[str] = frozenset()  # their names
        self._output_misses = 0  # done actions in a row whose output did not match
        self._changed = True  # whether this round's page differs from the last round's
        self._last_full_text = ""
        self._context: Context | None = None  # the conversation so far, once it started
        self._stretches = 0
        self._working = False  # a stretch is under way
        self._asked = self.task

    async def run(self) -> RunFinished:
        """The task's work, up to its done (or a stop, a failure)."""
        return await self._stretch(self.task, self.start_url)

    async def continue_with(
        self, message: str, *, start_url: str = "", note: str = "", said_before: bool = False
    ) -> RunFinished:
        """More work in the same conversation, after the run ended: the same tab in the
        state it was left in, the rounds so far in the model's context (bounded as ever),
        ``message`` as what the person asks now.  Its own budget, round cap and done.
        ``note`` is told to the model in the first round (how the page was restored);
        ``said_before``: the message was already emitted as a ``user.message``."""
        if self._context is None and not self.resumed:
            raise ActionInvalid("nothing to continue: the run has not started")
        if self._working:
            raise ActionInvalid("the run is still working: send the message as a reply")
        if not message.strip():
            raise ActionInvalid("the message is empty")
        if self._context is None:  # resumed: the conversation so far, in the prompt
            self._start_context()
            for earlier in self.requests:
                self._context.add_request(earlier)  # type: ignore[union-attr]
        assert self._context is not None
        self._context.add_request(message.strip())
        if note:
            self._notes.append(note)
        return await self._stretch(message.strip(), start_url, said_before=said_before)

    async def _stretch(
        self, message: str, start_url: str, *, said_before: bool = False
    ) -> RunFinished:
        budget = Budget(self.config.run_timeout_ms, label="run")
        self.control.attach(budget)
        self._working = True
        self._stretches += 1
        self._asked = message  # what this stretch is for (the rule planner runs its commands)
        if self._stretches > 1:  # what the last stretch left is gone; a fresh look first
            self._cap = self.round + self.config.round_cap
            self._failed_rounds = self._still = self._output_misses = 0
            self._last_signature = ""
            self._navigated = True
        await self.out.emit(RunStarted(message, start_url, self.planner.name, said_before))
        try:
            finished = await self._run(budget, message, start_url)
        except Cancelled as exc:
            finished = RunFinished("stopped", reason=budget.cancel_reason or str(exc))
            if self.control.failure:
                finished = RunFinished("failed", reason=self.control.failure)
        except BudgetExceeded as exc:  # it names the budget that ran out (run, snapshot...)
            finished = RunFinished("failed", reason=exc.message)
        except BrowserClosed as exc:
            finished = RunFinished("failed", reason=f"the browser went away: {exc}")
        except SecretNotGranted as exc:  # names the secret, never its value
            finished = RunFinished("failed", reason=str(exc))
        finally:
            self._working = False
            self.control.stopped = False  # a stop ends this stretch, not the next one
        await self.out.emit(finished)
        return finished

    async def _run(self, budget: Budget, message: str, start_url: str) -> RunFinished:
        context = self._context or self._start_context()
        outcomes: list[ActionOutcome] = []
        self.secrets.require(secret_names(message))  # before anything reaches a page
        if start_url:
            outcome = await self._execute(Action("navigate", {"url": start_url}), budget)
            if not outcome.ok:
                return RunFinished("failed", reason=f"could not open {start_url}: {outcome.error}")
        while True:
            if self.control.pause_requested:
                await self._pause(budget, "requested", "paused by the person")
            if self.round >= self._cap:
                more = self.config.round_cap
                await self._pause(
                    budget, "round_cap",
                    f"reached the round cap ({self._cap} rounds); resume for {more} more",
                )  # fmt: skip
                self._cap += self.control.take_extension() or more
                continue
            self.round += 1
            replies = self.control.take_replies()
            self.secrets.require(secret_names(replies))
            self._notes.extend(f"The person says: {text}" for text in replies)
            if replies:
                await self.out.emit(UserMessagesSeen(self.round, len(replies)))
            snapshot = await self._snapshot(context, outcomes, budget)
            if self._still > self.config.unchanged_rounds:
                self.round -= 1  # the round did not happen; the person looks first
                detail = (
                    f"the page has not changed for {self._still - 1} rounds, even after a nudge"
                )
                await self._pause(budget, "stuck", detail)
                continue
            if self._still == self.config.unchanged_rounds:
                self._notes.append(
                    f"The page has not changed for {self._still} rounds. Try another way, "
                    "or write NEED_HELP: and what you need."
                )
            notes = self.secrets.redact(context.notes_text(outcomes, self._notes))
            page = self.secrets.redact(f"Page: {snapshot.title!r} {snapshot.url}\n{snapshot.text}")
            observation = context.observation(notes, page)
            try:
                reply = await self._plan(budget, snapshot, outcomes, context, observation, replies)
            except (LLMError, BudgetExceeded) as exc:
                budget.check()  # the run itself out of time ends the run
                detail = str(exc)  # what happened, after how many tries
                partial = self._partial_chars
                if isinstance(exc, BudgetExceeded):
                    ms = self.config.llm_timeout_ms
                    detail = f"the model did not answer within {ms} ms"
                    if partial:
                        detail = f"the model's reply did not finish within {ms} ms"
                if partial:  # the round is asked again on resume: what it showed is not kept
                    detail += f"; the {partial} characters it streamed are discarded"
                await self._pause(budget, "llm_error", detail)
                self.round -= 1  # the round did not happen; try it again
                continue
            context.add(self.round, notes=notes, page=page, full=not snapshot.delta, reply=reply)
            outcomes, self._notes = [], []
            turn = read_reply(
                reply,
                last_signature=self._last_signature,
                page_changed=self._changed,
                offered=self._offered,
            )
            for error in turn.errors:
                await self.out.emit(Observation(self.round, str(error), error.to_dict()))
            if not turn.actions and not turn.errors and turn.pause is None and turn.done is None:
                await self.out.emit(Observation(self.round, turn.notes[-1]))
            self._notes.extend(turn.notes)
            for action in turn.actions:
                acted_in = self.tab
                outcome = await self._execute(action, budget)
                outcomes.append(outcome)
                self._last_signature = action.signature
                if action.name in _NAVIGATING:
                    self._navigated = True
                if not outcome.ok:
                    break  # later actions were planned on a page that did not change as expected
                if self.tab is not acted_in and action.name != "tabs":
                    self._tab_closed()
                    break  # later actions' refs were of the tab that closed
            context.settle(turn.actions, outcomes)
            if turn.done is not None:
                if len(outcomes) == len(turn.actions) and all(o.ok for o in outcomes):
                    finished = await self._finish(turn.done, turn.output, budget)
                    if finished is not None:
                        return finished
                else:
                    self._notes.append("The done action was not taken: an action before it failed.")
            if turn.pause is not None:
                reason, detail = turn.pause
                await self._pause(budget, reason, detail)
                if reason == "stuck":
                    # Not run, and not replayed on resume: the model is asked again.  The
                    # same action once more on an unchanged page is stuck again, unless the
                    # person answered the pause (they may have asked for just that).
                    if self.control.replies_pending():
                        self._last_signature = ""
                    self._notes.append(
                        "Your repeated action was not run. The person has looked; take a "
                        "fresh look at the page."
                    )
                continue
            if any(o.ok for o in outcomes):
                self._failed_rounds = 0
            else:
                self._failed_rounds += 1
                if self._failed_rounds >= self.config.max_failed_rounds:
                    return RunFinished(
                        "failed",
                        reason=f"{self._failed_rounds} rounds in a row without a successful action",
                    )

    def _start_context(self) -> Context:
        config = self.tab.config
        offered = self._offered_specs = available(config)
        self._offered = frozenset(spec.name for spec in offered)
        # Both forms are fixed for the run: the request's prefix is the same bytes each round.
        prompt = system_prompt(offered, shell_programs=config.shell_commands)
        self._native_system = system_prompt(
            offered, shell_programs=config.shell_commands, native=True
        )
        self._context = Context(prompt, self._task_text(), self.config.context)
        return self._context

    async def _finish(self, summary: str, output: Any, budget: Budget) -> RunFinished | None:
        """The run's success, or None when its output does not match the schema: the model
        is told what is wrong, and on a second miss in a row the person is asked."""
        if self.output_schema is None or self._stretches > 1:
            # Only a run given a schema has an output, checked; it is the task's own, so a
            # later request of the conversation ends without one.
            output = None
        else:
            try:
                check = check_output_isolated(
                    self.output_schema, output, timeout_ms=self.config.output_check_timeout_ms
                )
                await budget.run(check)
            except OutputInvalid as exc:
                self._output_misses += 1
                detail = f"{exc.message}: " + "; ".join(exc.problems)
                await self.out.emit(Observation(self.round, detail, exc.to_dict()))
                if self._output_misses >= 2:
                    self._output_misses = 0
                    await self._pause(budget, "output_invalid", detail)
                    return None
                self._notes.append(
                    f"ERROR [{exc.code}]: the done action was not taken, {detail}. Send done "
                    "again with an output that matches the schema."
                )
                return None
        summary = self.secrets.redact(summary)
        await self._propose_checks(summary, budget)
        return RunFinished("succeeded", summary=summary, output=output)

    async def _snapshot(
        self, context: Context, outcomes: list[ActionOutcome], budget: Budget
    ) -> Snapshot:
        """This round's page: full or only the changes (see Context.wants_full), cut to
        the room the round's notes leave; counts the rounds the page stayed the same."""
        if not self.tab.alive and await self._follow():
            self._tab_closed()  # it closed between rounds (a popup closing itself)
        try:
            return await self._take_snapshot(context, outcomes, budget)
        except BrowserClosed:
            if not await self._follow():
                raise
            self._tab_closed()  # it closed as the snapshot was taken
            return await self._take_snapshot(context, outcomes, budget)

    async def _follow(self) -> bool:
        """Go on in the tab group's current tab when this one closed (not crashed)."""
        if self.tab.crashed:
            return False
        self.steps.tab = self.tab
        followed = await self.steps.follow_closed(Budget(_FOLLOW_MS, label="follow a tab"))
        self.tab = self.steps.tab
        return followed

    def _tab_closed(self) -> None:
        self._navigated = True
        group = self.tab.group
        where = f"tab {group.tabs.index(self.tab)}" if group and self.tab in group.tabs else ""
        self._notes.append(
            f"The tab you were in closed; the run goes on in {where or 'another tab'} "
            f"({self.tab.url})."
        )

    async def _take_snapshot(
        self, context: Context, outcomes: list[ActionOutcome], budget: Budget
    ) -> Snapshot:
        url = self.tab.url
        full = context.wants_full(navigated=self._navigated or url != self._last_url)
        room = context.snapshot_room(context.notes_text(outcomes, self._notes))
        snapshot = await self.tab.snapshot(
            SnapshotOptions(delta=not full, max_chars=room),
            budget=budget.child(self.config.snapshot_timeout_ms, label="snapshot"),
        )
        self._navigated = False
        self._last_url = snapshot.url
        if snapshot.delta:
            self._changed = not snapshot.text.startswith(_NO_CHANGE)
        else:  # a full page: changed unless it is the very page the last full one showed
            self._changed = snapshot.text != self._last_full_text
            self._last_full_text = snapshot.text
        self._still = 0 if self._changed else self._still + 1
        return snapshot

    async def _plan(
        self,
        budget: Budget,
        snapshot: Snapshot,
        outcomes: list[ActionOutcome],
        context: Context,
        observation: str,
        replies: list[str],
    ) -> str:
        messages = [  # a password the model typed literally is masked in its past replies
            ChatMessage(m.role, self.secrets.redact(m.content))
            for m in context.messages(observation)
        ]
        request = PlannerRequest(
            task=self._asked,
            start_url=self.start_url,
            round=self.round,
            messages=messages,
            actions=self._offered_specs,
            native_system=self._native_system,
            output_schema=self.output_schema,
            snapshot=snapshot,
            last_outcomes=outcomes,
            replies=replies,
        )
        round_no = self.round
        streamed = 0  # chars relayed so far: the stream stops where the kept reply is cut
        # What the current try streamed, for the pause detail if the round fails.
        self._partial_chars = 0

        async def on_token(piece: str) -> None:
            nonlocal streamed
            self._partial_chars += len(piece)
            room = MAX_REPLY_CHARS - streamed
            if room <= 0:
                return
            streamed += len(piece)
            if len(piece) > room:
                piece = piece[:room] + "…[cut: the rest is not streamed]"
            await self.out.emit(LLMToken(round_no, piece))

        async def on_attempt(number: int) -> None:
            await self.out.emit(LLMWaiting(round_no, number))

        async def on_retry(notice: RetryNotice) -> None:
            # The abandoned try's tokens were shown; the page marks them discarded, and the
            # next try streams the reply afresh.
            nonlocal streamed
            streamed = self._partial_chars = 0
            await self.out.emit(
                LLMRetry(
                    round_no, notice.retry, notice.retries, notice.wait_ms, notice.reason,
                    notice.discarded_chars,
                )
            )  # fmt: skip

        request.on_attempt, request.on_retry = on_attempt, on_retry
        reply = await self.planner.plan(
            request,
            budget=budget.child(self.config.llm_timeout_ms, label="llm"),
            on_token=on_token,
        )
        await hide_typed_passwords(
            self.tab, self.secrets, reply.text,
            budget.child(self.config.action_timeout_ms, label="the fields typed into"),
        )  # fmt: skip
        # The whole reply is acted on; what the events keep of it is cut, so one huge answer
        # can't break the run page's socket (automation.limits).  The model's context keeps
        # past replies much shorter on its own (ContextLimits.reply_chars).
        text = cut_text(
            self.secrets.redact(reply.text), MAX_REPLY_CHARS, tail_chars=_REPLY_TAIL_CHARS
        )
        await self.out.emit(LLMMessage(self.round, text, dict(reply.usage)))
        return reply.text

    def _task_text(self) -> str:
        start = f"\nStart page: {self.start_url}" if self.start_url else ""
        output = f"\n{schema_note(self.output_schema)}" if self.output_schema else ""
        return f"Task: {self.task}{start}{output}"

    async def _execute(self, action: Action, budget: Budget) -> ActionOutcome:
        """Run one action and record it as a step (:class:`ActionSteps`)."""
        self.steps.tab, self.steps.round = self.tab, self.round
        try:
            return await self.steps.run(action, budget)
        finally:
            self.tab = self.steps.tab  # a tabs action may have switched the current tab

    async def _propose_checks(self, summary: str, budget: Budget) -> None:
        """Checks of what the run reached, read from its final page before the tab goes,
        for whoever saves it as a scenario."""
        try:
            proposals = await propose_checks(
                self.tab, self.steps.recorded, summary=summary,
                budget=budget.child(self.config.propose_timeout_ms, label="propose checks"),
            )  # fmt: skip
        except TabwrightError as exc:
            if isinstance(exc, Cancelled | BrowserClosed):
                raise
            log.warning("no checks proposed: %s", exc)
            return
        if proposals:
            await self.out.emit(ChecksProposed([p.to_dict() for p in proposals]))

    async def _pause(self, budget: Budget, reason: str, detail: str) -> None:
        """Wait for the person; what they do in the tab meanwhile becomes steps."""
        self.control.pause_requested = False
        self.control.begin_pause(reason)
        waited_from = time.monotonic()
        self.steps.tab = self.tab
        acts = await self.steps.wait_for_person(
            self.control, budget, reason, detail, record=self.config.record_person
        )
        self.tab = self.steps.tab  # where the person left it (a popup they worked in)
        budget.extend((time.monotonic() - waited_from) * 1000)
        if acts:
            self._notes.append(
                "While the run was paused, the person did: "
                + "; ".join(self.secrets.redact(step.summary()) for step in acts)
            )
        self._failed_rounds = 0
        self._still = 0
        self._navigated = True  # the person may have changed anything: a fresh full page
        await self.out.emit(RunResumed())
