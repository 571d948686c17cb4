"""Replay a scenario in a tab, finding each step's element again by its identity.

For every step, in order, inside its own budget (and the whole replay's):

1. page steps (navigate, back, forward, reload) run as they are; a navigation on the origin
   the scenario was recorded on moves to the replay's base URL (:func:`rebase`);
2. element steps :func:`~automation.browser.identity.locate` their element.  When it
   abstains the step *needs a person*: with a :class:`RunControl` (the dashboard) the replay
   pauses (resume tries the step again; a reply "skip" says the person did it), without one
   the replay ends there with status ``needs_person``.  Replay never acts on a guess;
3. the element found gets its ref from the snapshot registry (``refOf``), and the step runs
   through the same action code an agent uses (:func:`automation.browser.actions.execute`),
   with its ``${param}`` and ``${SECRET:NAME}`` values filled in only at that moment.

Each step's :class:`StepOutcome` keeps which strategy found the element, its score and what
changed.  When something changed, ``healed`` is the element's identity now and ``heal`` says
whether it may be written back at once (``confident``: a strategy before similarity, or a
similarity score of at least :attr:`ReplayConfig.heal_min_score`) or needs a person's
approval (``proposed``).  Writing it is the caller's choice (the dashboard keeps a history).

Events are the agent run's (run.started, action.started/finished, step.recorded,
run.paused/resumed, run.finished) plus one ``replay.step`` per step.  Args in events are the
scenario's own (placeholders, never secret values), and secret values are redacted from
every result and error text.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import ElementHandle
from playwright.async_api import Error as PlaywrightError

from automation.agent.control import RunControl
from automation.browser.actions import execute
from automation.browser.identity import Located, locate
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import (
    ActionFailed,
    BrowserClosed,
    BudgetExceeded,
    Cancelled,
    NeedsPerson,
    RefError,
    TabwrightError,
)
from automation.events import (
    ActionFinished,
    ActionStarted,
    Event,
    EventSink,
    RunFinished,
    RunPaused,
    RunResumed,
    RunStarted,
    StepRecorded,
    StepReplayed,
)
from automation.recording.scenario import Resolved, Scenario, ScenarioStep, rebase

__all__ = ["Replay", "ReplayConfig", "ReplayResult", "StepOutcome"]


SKIP_REPLIES = frozenset({"skip", "skipped", "done", "did it"})
_REF_OF_JS = "(el) => (window.__tabwright && window.__tabwright.refOf(el)) || ''"


@dataclass(frozen=True)
class ReplayConfig:
    step_timeout_ms: int = 15_000
    run_timeout_ms: int = 10 * 60 * 1000
    heal_min_score: float = 0.8  # a similarity match this good is healed without asking
    screenshots: bool = False


@dataclass(frozen=True)
class StepOutcome:
    index: int
    action: str
    status: str  # passed | failed | needs_person | skipped | not_run
    strategy: str = ""  # how the element was found (empty for page steps)
    score: float | None = None
    changes: list[str] = field(default_factory=list)
    heal: str = ""  # "" (nothing changed) | confident | proposed
    healed: dict[str, Any] | None = None  # the element's identity now, when it changed
    candidates: list[dict[str, Any]] = field(default_factory=list)  # when it needs a person
    error: dict[str, str] | None = None
    result: str = ""
    duration_ms: int = 0
    url: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("passed", "skipped")

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "action": self.action,
            "status": self.status,
            "strategy": self.strategy,
            "score": self.score,
            "changes": list(self.changes),
            "heal": self.heal,
            "healed": self.healed,
            "candidates": list(self.candidates),
            "error": self.error,
            "result": self.result,
            "duration_ms": self.duration_ms,
            "url": self.url,
        }


@dataclass(frozen=True)
class ReplayResult:
    status: str  # passed | failed | needs_person | stopped
    steps: list[StepOutcome]
    reason: str = ""
    duration_ms: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "passed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "ok": self.ok,
            "reason": self.reason,
            "duration_ms": self.duration_ms,
            "steps": [s.to_dict() for s in self.steps],
        }


class _NullSink:
    async def emit(self, event: Event) -> None:
        pass


@dataclass
class Replay:
    """One replay of ``scenario`` in ``tab``.  Parameters and secrets are resolved when it
    is made, so a missing one fails before anything runs (ParamMissing)."""

    tab: Tab
    scenario: Scenario
    params: dict[str, str] = field(default_factory=dict)
    base_url: str = ""
    config: ReplayConfig = field(default_factory=ReplayConfig)
    sink: EventSink = field(default_factory=_NullSink)
    control: RunControl | None = None
    env: dict[str, str] | None = None  # where secrets come from (default: os.environ)

    def __post_init__(self) -> None:
        self.values: Resolved = self.scenario.resolve(self.params, env=self.env)

    async def run(self) -> ReplayResult:
        started = time.monotonic()
        budget = Budget(self.config.run_timeout_ms, label="replay")
        if self.control is not None:
            self.control.budget = budget
        await self.sink.emit(
            RunStarted(f"replay: {self.scenario.name}", self.base_url or self.scenario.base_url,
                       "replay")
        )  # fmt: skip
        outcomes: list[StepOutcome] = []
        status, reason = "passed", ""
        try:
            for index, step in enumerate(self.scenario.steps):
                outcome = await self._step_with_person(index, step, budget)
                outcomes.append(outcome)
                if not outcome.ok:
                    status = outcome.status
                    reason = f"step {index} ({step.describe()}): " + (
                        outcome.error["message"] if outcome.error else outcome.status
                    )
                    break
        except Cancelled as exc:
            status, reason = "stopped", budget.cancel_reason or str(exc)
            if self.control is not None and self.control.failure:
                status, reason = "failed", self.control.failure
        except BudgetExceeded:
            status = "failed"
            reason = f"the replay ran out of its {self.config.run_timeout_ms} ms budget"
        except BrowserClosed as exc:
            status, reason = "failed", f"the browser went away: {exc}"
        done = {o.index for o in outcomes}
        outcomes += [
            StepOutcome(i, s.action, "not_run")
            for i, s in enumerate(self.scenario.steps)
            if i not in done
        ]
        finished = {"passed": "succeeded", "stopped": "stopped"}.get(status, "failed")
        await self.sink.emit(RunFinished(finished, reason=self.values.redact(reason)))
        return ReplayResult(
            status, outcomes, self.values.redact(reason), int((time.monotonic() - started) * 1000)
        )

    async def _step_with_person(
        self, index: int, step: ScenarioStep, budget: Budget
    ) -> StepOutcome:
        """A step that needs a person pauses the replay (when someone can answer) until they
        resume (try again), reply "skip" (they did it) or stop.  A pause the person asked
        for is taken before the step, and ends the same way."""
        if self.control is not None and self.control.pause_requested:
            self.control.pause_requested = False
            skipped = await self._wait_for_person(
                index, step, budget, "requested", f"paused by the person before step {index}"
            )
            if skipped is not None:
                return skipped
        while True:
            outcome = await self._step(index, step, budget)
            if outcome.status != "needs_person" or self.control is None:
                return outcome
            assert outcome.error is not None
            skipped = await self._wait_for_person(
                index, step, budget, "needs_person", outcome.error["message"]
            )
            if skipped is not None:
                return skipped

    async def _wait_for_person(
        self, index: int, step: ScenarioStep, budget: Budget, reason: str, detail: str
    ) -> StepOutcome | None:
        """Pause until the person resumes (None: do the step) or replies "skip" (the step
        is done: its outcome)."""
        assert self.control is not None
        await self.sink.emit(
            RunPaused(
                reason,
                f"{detail}. Resume to try the step again, reply "
                '"skip" if you did it yourself, or stop.',
            )
        )
        waited_from = time.monotonic()
        await self.control.wait_for_person(budget)
        budget.extend((time.monotonic() - waited_from) * 1000)
        await self.sink.emit(RunResumed())
        replies = {r.lower().strip(" .!") for r in self.control.take_replies()}
        if not replies & SKIP_REPLIES:
            return None
        skipped = StepOutcome(index, step.action, "skipped", url=self.tab.url)
        await self.sink.emit(StepReplayed(**_event_fields(skipped)))
        return skipped

    async def _step(self, index: int, step: ScenarioStep, budget: Budget) -> StepOutcome:
        shown = dict(step.args)  # placeholders, not values
        await self.sink.emit(ActionStarted(0, index, step.action, shown))
        step_budget = budget.child(self.config.step_timeout_ms, label=f"step {index}")
        started = time.monotonic()
        located: Located | None = None
        result, error, status = "", None, "passed"
        try:
            if step.needs_element:
                located = await self._locate(index, step, step_budget)
                result = await self._act_on(located, step, step_budget)
            else:
                args = self.values.fill(step.args)
                if step.action == "navigate":
                    args["url"] = rebase(args["url"], self.scenario.base_url, self.base_url)
                result = await execute(self.tab, step.action, args, budget=step_budget)
        except (Cancelled, BrowserClosed):
            raise
        except BudgetExceeded as exc:
            budget.check()  # the whole replay is out of time: that ends it, not the step
            error, status = exc, "failed"
        except NeedsPerson as exc:
            error, status = exc, "needs_person"
        except TabwrightError as exc:
            error, status = exc, "failed"
        duration_ms = int((time.monotonic() - started) * 1000)
        error_dict = self._redacted(error)
        result = self.values.redact(result)
        await self.sink.emit(
            ActionFinished(0, index, step.action, shown, error is None, result, error_dict,
                           duration_ms)
        )  # fmt: skip
        outcome = self._outcome(index, step, status, located, error, error_dict, result,
                                duration_ms)  # fmt: skip
        found = located.found if located is not None and located.ok else None
        await self.sink.emit(
            StepRecorded(
                index=index,
                action=step.action,
                args=shown,
                role=found.role if found else "",
                name=found.name if found else "",
                selector=found.selectors[0] if found and found.selectors else "",
                identity=found.to_dict() if found else None,
                url=self.tab.url,
                ok=error is None,
                error=error_dict,
                duration_ms=duration_ms,
            )
        )
        await self.sink.emit(StepReplayed(**_event_fields(outcome)))
        if self.config.screenshots and status != "needs_person":
            await self._screenshot(index, budget)
        return outcome

    async def _locate(self, index: int, step: ScenarioStep, budget: Budget) -> Located:
        target = step.target()
        assert target is not None
        located = await locate(self.tab.page, target, budget=budget)
        if not located.ok:
            raise NeedsPerson(
                f"step {index} ({step.describe()}): can't tell which element it means: "
                f"{located.reason or 'not found'}",
                index=index,
                candidates=located.candidates,
                hint="the page changed more than replay can be sure of",
            )
        return located

    async def _act_on(self, located: Located, step: ScenarioStep, budget: Budget) -> str:
        """Run the step on the element found, through its ref: from the registry if the
        latest snapshot has it, else after a new snapshot (once more if it went stale)."""
        assert located.element is not None
        args = self.values.fill(step.args)
        for attempt in range(2):
            ref = await self._ref_of(located.element, budget, fresh=attempt > 0)
            try:
                return await execute(self.tab, step.action, {**args, "ref": ref}, budget=budget)
            except RefError:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def _ref_of(self, element: ElementHandle, budget: Budget, *, fresh: bool) -> str:
        ref = "" if fresh else await self._registry_ref(element, budget)
        if not ref or ref not in self.tab.refs:
            await self.tab.snapshot(budget=budget)
            ref = await self._registry_ref(element, budget)
        if not ref or ref not in self.tab.refs:
            raise ActionFailed(
                "the element found is not in the page's snapshot (hidden, or not something "
                "that can be acted on)"
            )
        return ref

    async def _registry_ref(self, element: ElementHandle, budget: Budget) -> str:
        try:
            return str(await budget.run(element.evaluate(_REF_OF_JS)) or "")
        except PlaywrightError as exc:
            raise ActionFailed(f"the element found went away: {exc.message}") from None

    def _outcome(
        self,
        index: int,
        step: ScenarioStep,
        status: str,
        located: Located | None,
        error: TabwrightError | None,
        error_dict: dict[str, str] | None,
        result: str,
        duration_ms: int,
    ) -> StepOutcome:
        common: dict[str, Any] = {
            "error": error_dict, "result": result, "duration_ms": duration_ms, "url": self.tab.url,
        }  # fmt: skip
        if isinstance(error, NeedsPerson):
            return StepOutcome(index, step.action, status, candidates=error.candidates, **common)
        if located is None or not located.ok or located.found is None:
            return StepOutcome(index, step.action, status, **common)
        changes = list(located.changes)
        if step.identity is None:
            changes.insert(0, "stored before identities: found by its selector")
        heal = ""
        if changes and status == "passed":  # a step that failed may have found the wrong one
            confident = located.strategy not in ("similarity", "coordinates") or (
                located.strategy == "similarity" and located.score >= self.config.heal_min_score
            )
            heal = "confident" if confident else "proposed"
        return StepOutcome(
            index, step.action, status, strategy=located.strategy, score=located.score,
            changes=changes, heal=heal, healed=located.found.to_dict() if heal else None, **common,
        )  # fmt: skip

    def _redacted(self, error: TabwrightError | None) -> dict[str, str] | None:
        if error is None:
            return None
        return {k: self.values.redact(v) for k, v in error.to_dict().items()}

    async def _screenshot(self, index: int, budget: Budget) -> None:
        shot = await self.tab.step_screenshot(index, budget=budget)
        if shot is not None:
            await self.sink.emit(shot)


def _event_fields(outcome: StepOutcome) -> dict[str, Any]:
    data = outcome.to_dict()
    del data["result"], data["url"], data["duration_ms"]
    return data
