"""An agent that reaches a replayed step's intent when its recorded path is gone.

Given to :class:`~automation.recording.replay.Replay` as its ``agent`` when an LLM profile
is configured for replays (:class:`~automation.recording.intent.IntentAgent`): the model
gets the step's intent, what the page must show afterwards and the current page, and a
few rounds at most (:data:`MAX_ROUNDS`).  It runs as any agent run does (the same actions,
the same checks of their effect), in the replay's tab, with no secrets, and never waits
for a person: where it would pause, it stops.  Its events stay inside; what it did comes
back as an :class:`~automation.recording.intent.AgentAttempt`, and replay checks the
result itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from automation.agent.loop import AgentConfig, AgentRun
from automation.browser.identity import ElementIdentity
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.control import RunControl
from automation.errors import ActionInvalid
from automation.events import Event, RunPaused, StepRecorded
from automation.llm.base import Planner
from automation.recording.intent import AgentAttempt
from automation.secrets import Secrets
from automation.wording import step_words

__all__ = ["MAX_ROUNDS", "PlannerAgent"]

MAX_ROUNDS = 3


class _Watch:
    """The agent's events: its steps kept, a pause turned into a stop."""

    def __init__(self, control: RunControl) -> None:
        self.control = control
        self.steps: list[StepRecorded] = []

    async def emit(self, event: Event) -> None:
        if isinstance(event, StepRecorded) and event.ok:
            self.steps.append(event)
        elif isinstance(event, RunPaused):
            self.control.stop()  # no person is asked from inside a replay's step


@dataclass
class PlannerAgent:
    """Reaches an intent with ``planner`` (an LLM profile's), in ``max_rounds`` rounds."""

    planner: Planner
    max_rounds: int = MAX_ROUNDS

    async def __call__(self, tab: Tab, *, intent: str, goal: str, budget: Budget) -> AgentAttempt:
        control = RunControl()
        watch = _Watch(control)
        task = (
            "A recorded step of a scenario can't be done as recorded on this page (the site "
            f"was redesigned). The step's intent: {intent}. Reach it on this page, in as few "
            f"actions as you can, so that the page shows {goal}; then call done. Do nothing "
            "else: no other changes, no data typed. If you can't, call done saying so."
        )
        config = AgentConfig(
            round_cap=self.max_rounds, max_failed_rounds=1, unchanged_rounds=1,
            run_timeout_ms=max(1, int(budget.remaining_ms())), screenshots=False,
            record_person=False, llm_timeout_ms=max(1, int(budget.remaining_ms())),
        )  # fmt: skip
        run = AgentRun(tab=tab, planner=self.planner, sink=watch, task=task, config=config,
                       control=control, secrets=Secrets({}))  # fmt: skip
        finished = await budget.run(run.run())
        done, acted_on, went_to = [], [], []
        for step in watch.steps:
            if step.action == "navigate":
                url = str(step.args.get("url") or step.url)
                done.append(f"went to {url}")
                went_to.append(url)
                continue
            identity = None
            if step.identity is not None:
                try:
                    identity = ElementIdentity.from_dict(step.identity)
                except ActionInvalid:
                    identity = None
                else:
                    acted_on.append((step.action, identity))
            if identity is None and step.role:
                identity = ElementIdentity(role=step.role, name=step.name)
            done.append(str(step_words(step.action, step.args, identity)))
        how = finished.status + (f": {finished.reason}" if finished.reason else "")
        return AgentAttempt(done, acted_on, how, went_to)
