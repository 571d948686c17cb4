"""The agent loop: snapshot → planner → parse actions → execute → record step → emit events.

A run ends on an explicit ``done`` action, on the round cap, on too many failing rounds in
a row, when it is stopped, or when its budget runs out.  It pauses for the person when the
same action repeats (stuck), when the planner writes ``NEED_HELP``, when the person asks,
and when the LLM cannot be reached; a reply or resume continues it.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from automation.agent.control import RunControl
from automation.agent.parser import Action, parse_reply
from automation.agent.prompts import observation_text, system_prompt
from automation.browser.actions import ACTIONS, available, execute, execute_steps
from automation.browser.macro import StepResult
from automation.browser.snapshot import Snapshot
from automation.browser.tab import Tab, Target
from automation.budget import Budget
from automation.errors import (
    BrowserClosed,
    BudgetExceeded,
    Cancelled,
    LLMError,
    TabwrightError,
)
from automation.events import (
    ActionFinished,
    ActionStarted,
    EvaluationFinished,
    EventSink,
    LLMMessage,
    LLMToken,
    Observation,
    RunFinished,
    RunPaused,
    RunResumed,
    RunStarted,
    StepRecorded,
)
from automation.llm.base import ActionOutcome, ChatMessage, Planner, PlannerRequest

__all__ = ["AgentConfig", "AgentRun"]


@dataclass(frozen=True)
class AgentConfig:
    round_cap: int = 50
    max_failed_rounds: int = 3  # rounds in a row with no successful action end the run
    run_timeout_ms: int = 30 * 60 * 1000
    llm_timeout_ms: int = 120_000
    action_timeout_ms: int = 15_000
    snapshot_timeout_ms: int = 10_000
    screenshots: bool = True
    history_rounds: int = 20  # older rounds are dropped from the prompt


@dataclass
class _Round:
    observation: str  # what the model was told, without the snapshot (not resent)
    reply: str


@dataclass
class AgentRun:
    tab: Tab
    planner: Planner
    sink: EventSink
    task: str
    start_url: str = ""
    config: AgentConfig = field(default_factory=AgentConfig)
    control: RunControl = field(default_factory=RunControl)

    def __post_init__(self) -> None:
        self.round = 0
        self.step_index = 0
        self._history: list[_Round] = []
        self._last_signature = ""
        self._failed_rounds = 0

    async def run(self) -> RunFinished:
        budget = Budget(self.config.run_timeout_ms, label="run")
        self.control.budget = budget
        await self.sink.emit(RunStarted(self.task, self.start_url, self.planner.name))
        try:
            finished = await self._run(budget)
        except Cancelled as exc:
            finished = RunFinished("stopped", reason=budget.cancel_reason or str(exc))
        except BudgetExceeded:
            finished = RunFinished(
                "failed", reason=f"the run ran out of its {self.config.run_timeout_ms} ms budget"
            )
        except BrowserClosed as exc:
            finished = RunFinished("failed", reason=f"the browser went away: {exc}")
        await self.sink.emit(finished)
        return finished

    async def _run(self, budget: Budget) -> RunFinished:
        outcomes: list[ActionOutcome] = []
        if self.start_url:
            outcome = await self._execute(Action("navigate", {"url": self.start_url}), budget)
            if not outcome.ok:
                return RunFinished(
                    "failed", reason=f"could not open {self.start_url}: {outcome.error}"
                )
        notes: list[str] = []
        while True:
            if self.control.pause_requested:
                await self._pause(budget, "requested", "paused by the person")
            if self.round >= self.config.round_cap:
                return RunFinished(
                    "failed", reason=f"reached the round cap ({self.config.round_cap} rounds)"
                )
            self.round += 1
            replies = self.control.take_replies()
            notes.extend(f"The person says: {text}" for text in replies)
            snapshot = await self.tab.snapshot(
                budget=budget.child(self.config.snapshot_timeout_ms, label="snapshot")
            )
            observation = observation_text(outcomes=outcomes, notes=notes, snapshot=snapshot)
            try:
                reply = await self._plan(budget, snapshot, outcomes, observation, replies)
            except (LLMError, BudgetExceeded) as exc:
                budget.check()  # the run itself out of time ends the run
                detail = str(exc)
                if isinstance(exc, BudgetExceeded):
                    detail = f"the model did not answer within {self.config.llm_timeout_ms} ms"
                await self._pause(budget, "llm_error", detail)
                self.round -= 1  # the round did not happen; try it again
                continue
            brief = observation_text(outcomes=outcomes, notes=notes, snapshot=None)
            self._history.append(_Round(brief, reply))
            outcomes, notes = [], []
            parsed = parse_reply(reply)
            for error in parsed.errors:
                notes.append(f"ERROR [{error.code}]: {error}")
                await self.sink.emit(Observation(self.round, str(error), error.to_dict()))
            if not parsed.actions:
                if parsed.need_help is not None:
                    await self._pause(budget, "need_help", parsed.need_help)
                    continue
                if not parsed.errors:
                    notes.append("No action found in your reply. Send <action>{...}</action> tags.")
                    await self.sink.emit(Observation(self.round, notes[-1]))
            for action in parsed.actions:
                if action.name == "done":
                    return RunFinished("succeeded", summary=action.args.get("summary", ""))
                if action.signature == self._last_signature:
                    await self._pause(budget, "stuck", f"the same action again: {action.signature}")
                    self._last_signature = ""
                    notes.append("The person reviewed the repeated action; take a fresh look.")
                    break
                self._last_signature = action.signature
                outcome = await self._execute(action, budget)
                outcomes.append(outcome)
                if not outcome.ok:
                    break  # later actions were planned on a page that did not change as expected
            if any(o.ok for o in outcomes):
                self._failed_rounds = 0
            else:
                self._failed_rounds += 1
                if self._failed_rounds >= self.config.max_failed_rounds:
                    return RunFinished(
                        "failed",
                        reason=f"{self._failed_rounds} rounds in a row without a successful action",
                    )

    async def _plan(
        self,
        budget: Budget,
        snapshot: Snapshot,
        outcomes: list[ActionOutcome],
        observation: str,
        replies: list[str],
    ) -> str:
        messages = [
            ChatMessage("system", system_prompt(available(self.tab.config))),
            ChatMessage("user", self._task_text()),
        ]
        for past in self._history[-self.config.history_rounds :]:
            if past.observation:
                messages.append(ChatMessage("user", past.observation))
            messages.append(ChatMessage("assistant", past.reply))
        messages.append(ChatMessage("user", observation))
        request = PlannerRequest(
            task=self.task,
            start_url=self.start_url,
            round=self.round,
            messages=messages,
            snapshot=snapshot,
            last_outcomes=outcomes,
            replies=replies,
        )
        round_no = self.round

        async def on_token(piece: str) -> None:
            await self.sink.emit(LLMToken(round_no, piece))

        reply = await self.planner.plan(
            request,
            budget=budget.child(self.config.llm_timeout_ms, label="llm"),
            on_token=on_token,
        )
        await self.sink.emit(LLMMessage(self.round, reply.text, dict(reply.usage)))
        return reply.text

    def _task_text(self) -> str:
        start = f"\nStart page: {self.start_url}" if self.start_url else ""
        return f"Task: {self.task}{start}"

    async def _execute(self, action: Action, budget: Budget) -> ActionOutcome:
        """Run one action and record it as a step; a ``steps`` macro is one action in the
        conversation but records each step it ran, so the scenario keeps every one."""
        spec = ACTIONS[action.name]
        index = self.step_index
        await self.sink.emit(ActionStarted(self.round, index, action.name, action.args))
        step_budget = budget.child(self.config.action_timeout_ms, label=action.name)
        started = time.monotonic()
        ref = str(action.args.get("ref", ""))
        target = self.tab.known_target(ref)  # kept if taking the full target fails
        result, error, macro = "", None, None
        try:
            if action.name == "steps":
                macro = await execute_steps(
                    self.tab, action.args, budget=step_budget, on_step=self._record_step,
                    record=True,
                )  # fmt: skip
                if not macro.ok:
                    raise macro.error()
                result = macro.to_text()
            else:
                if spec.targets_ref:
                    target = await self.tab.target(ref, budget=step_budget)
                result = await execute(self.tab, action.name, action.args, budget=step_budget)
            group = self.tab.group
            if group is not None and group.current is not None:
                self.tab = group.current  # a tabs action may have switched the current tab
        except (Cancelled, BrowserClosed):
            await self._emit_evaluations(index)
            raise
        except BudgetExceeded as exc:
            budget.check()  # the whole run is out of time: that ends the run, not the step
            error = exc
        except TabwrightError as exc:
            error = exc
        await self._emit_evaluations(index)
        duration_ms = int((time.monotonic() - started) * 1000)
        error_dict = error.to_dict() if error else None
        if macro is not None and error is not None:
            result = macro.to_text()  # which steps ran, for the model to read
        await self.sink.emit(
            ActionFinished(
                self.round, index, action.name, action.args, error is None, result, error_dict,
                duration_ms, [s.to_dict() for s in macro.steps] if macro else None,
            )
        )  # fmt: skip
        if self.step_index == index:  # nothing recorded yet (a macro may have run no step)
            await self._record(action.name, action.args, target, error_dict, duration_ms)
        if self.config.screenshots:
            await self._screenshot(self.step_index - 1, budget)
        if error is None:
            return ActionOutcome(action.name, action.args, True, result)
        detail = f"{error}\n{result}" if macro is not None else str(error)
        return ActionOutcome(action.name, action.args, False, "", error.code, detail)

    async def _record_step(self, step: StepResult) -> None:
        if not step.skipped:
            await self._record(
                step.type, step.args, step.target or Target(), step.error, step.duration_ms
            )

    async def _record(
        self,
        action: str,
        args: dict[str, Any],
        target: Target,
        error: dict[str, str] | None,
        duration_ms: int,
    ) -> None:
        """One step of the scenario, numbered in the order the steps ran."""
        await self.sink.emit(
            StepRecorded(
                index=self.step_index,
                action=action,
                args=args,
                ref=target.ref,
                role=target.role,
                name=target.name,
                selector=target.selector,
                identity=target.identity.to_dict() if target.identity else None,
                url=self.tab.url,
                ok=error is None,
                error=error,
                duration_ms=duration_ms,
            )
        )
        self.step_index += 1

    async def _emit_evaluations(self, index: int) -> None:
        for done in self.tab.take_evaluations():
            await self.sink.emit(EvaluationFinished(index, **dataclasses.asdict(done)))

    async def _screenshot(self, index: int, budget: Budget) -> None:
        shot = await self.tab.step_screenshot(index, budget=budget)
        if shot is not None:
            await self.sink.emit(shot)

    async def _pause(self, budget: Budget, reason: str, detail: str) -> None:
        await self.sink.emit(RunPaused(reason, detail))
        self.control.pause_requested = False
        waited_from = time.monotonic()
        await self.control.wait_for_person(budget)
        budget.extend((time.monotonic() - waited_from) * 1000)
        self._failed_rounds = 0
        await self.sink.emit(RunResumed())
