"""One action run on a tab and recorded as the steps of a scenario.

The agent loop (:mod:`automation.agent.loop`) and an MCP session (:mod:`automation.mcp`)
act the same way: the element's identity is taken before the action acts on it (navigation
destroys refs; a click's is asked for beside the click, whose input reaches the page after
it), secrets are filled in only for the browser and masked everywhere else, the action's
events go out through the run's sink, and each step it ran is recorded with its identity,
so the run can be saved as a scenario and replayed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from automation.actions import (
    ACTIONS,
    OPENED_WAIT_MS,
    execute,
    execute_form,
    execute_steps,
    opened_since,
    tabs_known,
)
from automation.agent.masks import form_targets, masked, masked_steps
from automation.agent.parser import Action
from automation.browser.identity import ElementIdentity
from automation.browser.macro import MacroResult, StepResult
from automation.browser.tab import Tab, Target
from automation.budget import Budget
from automation.control import RunControl
from automation.errors import BrowserClosed, BudgetExceeded, Cancelled, TabwrightError
from automation.events import (
    ActionFinished,
    ActionStarted,
    EvaluationFinished,
    EventSink,
    RunPaused,
    StepRecorded,
)
from automation.llm.base import ActionOutcome
from automation.recording.replaytabs import form_state, moved_to
from automation.recording.rescue import start_recorder, unrecorded
from automation.recording.scenario import SENDING_ACTIONS, ScenarioStep
from automation.recording.sent import first_write
from automation.secrets import SecretNotGranted, Secrets
from automation.wording import double_quoted, step_words

__all__ = ["ActionSteps", "words_of"]

# Actions that prove their ref as they take it (in their own first round trip to the page):
# their step's target is taken beside them, not before (ActionSteps._beside).
_TAKEN_BESIDE = frozenset({"click"})


def words_of(action: str, args: dict[str, Any], target: Target | None = None) -> dict[str, str]:
    """An action on ``target`` in the run page's words (automation.wording)."""
    identity = None
    if target is not None:
        identity = target.identity or (
            ElementIdentity(role=target.role, name=target.name) if target.role else None
        )
    return step_words(action, args, identity, quote=double_quoted).to_dict()


def _macro_steps(macro: MacroResult, shown: dict[str, Any]) -> list[dict[str, Any]]:
    """Each step of a ``steps`` macro's outcome, with its words (its args as shown)."""
    specs = shown.get("steps")
    specs = specs if isinstance(specs, list) else []
    done = []
    for step in macro.steps:
        spec = specs[step.index] if step.index < len(specs) else {}
        spec = {k: v for k, v in spec.items() if k != "type"} if isinstance(spec, dict) else {}
        done.append(step.to_dict() | {"words": words_of(step.type, spec, step.target)})
    return done


_FORM_STATE_MS = 5_000  # reading what a page's forms hold
CUT_OFF = "cancelled before it ended (its caller went away)"


@dataclass
class ActionSteps:
    """Runs actions on ``tab`` and records them; ``out`` is the run's one exit (already
    through its secrets).  ``tab`` follows the current tab when an action switches it."""

    tab: Tab
    out: EventSink
    secrets: Secrets
    action_timeout_ms: int = 15_000
    opened_wait_ms: float = OPENED_WAIT_MS  # how long a tab an action opened is waited for
    screenshots: bool = True
    step_index: int = 0  # the next step's number
    round: int = 0  # the round the actions belong to (0 outside an agent's rounds)
    # The steps so far (action, args, ok, identity), to propose checks from.
    recorded: list[dict[str, Any]] = field(default_factory=list)
    last_macro: MacroResult | None = None  # the latest ``steps`` call's outcome
    last_error: dict[str, str] | None = None  # the latest action's error (code, message, hint)
    _announced: int = -1  # the latest action whose start was emitted
    # A popup the run went into: what its opener's forms held then (replaytabs.form_state).
    _entered: dict[Tab, str | None] = field(default_factory=dict)

    async def run(self, action: Action, budget: Budget, *, by: str = "agent") -> ActionOutcome:
        """Run one action and record it as a step; a ``steps`` macro is one action but
        records each step it ran, so the scenario keeps every one.  The browser gets the
        args with their secrets filled in; everything else, the args as written, a password
        typed into a password field masked.  Cancelled, a closed browser, an ungranted
        secret and the caller's whole budget running out raise; any other failure is the
        outcome's error."""
        spec = ACTIONS[action.name]
        index = self.step_index
        step_budget = budget.child(self.action_timeout_ms, label=action.name)
        started = time.monotonic()
        ref = str(action.args.get("ref", ""))
        target = self.tab.known_target(ref)  # kept if taking the full target fails
        was_alive = self.tab.alive
        before = self.tab
        since = before.log.requests_seen  # its writes are those after
        known = await tabs_known(self.tab)
        result, error, macro = "", None, None
        self.last_macro = None
        shown = action.args
        beside = spec.targets_ref and bool(ref) and action.name in _TAKEN_BESIDE
        try:
            if beside:
                pass  # its target is taken as it runs, below
            elif spec.targets_ref and ref:
                try:
                    target = await self.tab.target(ref, budget=step_budget)
                finally:
                    shown = masked(self.secrets, action.name, action.args, target)
                    await self._started(index, action.name, shown, target)
            elif action.name == "fill_form":
                shown, fields = await form_targets(self.tab, self.secrets, action, step_budget)
                await self._started(index, action.name, shown)
            else:
                shown = await masked_steps(self.tab, self.secrets, action, step_budget)
                await self._started(index, action.name, shown)
            args = self.secrets.fill_action(action.name, action.args)
            self.tab.is_secret = self.secrets.is_secret  # its field is masked before typing
            if beside:
                target, shown, acting = await self._beside(index, action, args, target, step_budget)
                result = await acting
            elif action.name == "fill_form":

                async def record_field(
                    i: int, name: str, field_args: dict[str, Any], failed: Any, ms: int
                ) -> None:
                    target = fields[i] if i < len(fields) else Target()
                    step_args = {k: v for k, v in field_args.items() if k != "ref"}
                    if name == "fill":  # the caller's own value: a placeholder, not a secret
                        step_args["value"] = action.args["fields"][i]["value"]
                    step_args = masked(self.secrets, name, step_args, target)
                    step_args = self.secrets.redact_any(step_args)
                    await self.record(
                        name, step_args, target, failed.to_dict() if failed else None, ms, by=by
                    )

                result = await execute_form(
                    self.tab, args, budget=step_budget, on_field=record_field
                )
            elif action.name == "steps":

                async def record_step(step: StepResult) -> None:
                    await self._record_step(step, by)

                macro = await execute_steps(
                    self.tab, args, budget=step_budget, on_step=record_step, record=True
                )
                self.last_macro = macro
                if not macro.ok:
                    raise macro.error()
                result = macro.to_text()
            else:
                result = await execute(self.tab, action.name, args, budget=step_budget)
        except BrowserClosed as exc:
            # A page that closed itself as the action ran (a popup's Save) is not the
            # browser going away when the run has another tab to go on in.
            if self.tab.crashed or not await self.follow():
                await self._cut(index, action.name, shown, target, started, exc)
                raise
            if not was_alive:
                error = exc  # the tab was gone before the action: it did nothing
            else:
                result = "the tab closed as the action ran; the run goes on in the current tab"
        except (asyncio.CancelledError, Cancelled, SecretNotGranted) as exc:
            await self._cut(index, action.name, shown, target, started, exc)
            raise
        except BudgetExceeded as exc:
            # The caller's whole budget out of time (or all but its headroom) ends the
            # work, not the step.
            budget.check()
            if step_budget.binding() is budget:
                raise budget.exceeded() from None
            error = exc
        except TabwrightError as exc:
            error = exc
        opened = ""
        if error is None and action.name != "tabs":
            try:
                opened = await opened_since(before, known, budget, wait_ms=self.opened_wait_ms)
            except asyncio.CancelledError as exc:
                await self._cut(index, action.name, shown, target, started, exc)
                raise
        await self.follow()  # a tabs action switched the current tab, or the tab closed
        await self.emit_evaluations(index)
        duration_ms = int((time.monotonic() - started) * 1000)
        error_dict = self.secrets.redact_any(error.to_dict()) if error else None
        self.last_error = error_dict
        if macro is not None:
            result = macro.to_text()  # which steps ran, for the caller to read
        result = self.secrets.redact(result + opened)
        await self._finished(index, action.name, shown, target, result, error_dict, duration_ms,
                             _macro_steps(macro, shown) if macro else None)  # fmt: skip
        closed = self.tab is not before and before.page.is_closed()
        if self.tab is not before and action.name == "tabs":  # where it went, for replay
            shown = {**shown, "to": await self._moved(before, step_budget)}
        if self.step_index == index:  # nothing recorded yet (a macro may have run no step)
            step = spec.records_as or action.name
            sent = ""
            if step in SENDING_ACTIONS and error is None and not before.page.is_closed():
                sent = first_write(before.log, since, before.url)  # what replay sends again
            # One that closed its tab (a popup's Save) led nowhere in it.
            await self.record(step, shown, target, error_dict, duration_ms, by=by,
                              led_to="" if closed else None, sent=sent)  # fmt: skip
        if closed and action.name != "tabs":
            await self.record_closed(before, budget, by=by)
        if self.screenshots:
            await self.screenshot(self.step_index - 1, budget)
        if error is None:
            return ActionOutcome(action.name, action.args, True, result)
        detail = f"{error_dict['message'] if error_dict else error}"
        if macro is not None:
            detail += f"\n{result}"
        return ActionOutcome(action.name, action.args, False, "", error.code, detail)

    async def _cut(
        self, index: int, name: str, shown: dict[str, Any], target: Target, started: float,
        exc: BaseException,
    ) -> None:  # fmt: skip
        """An action cut off (cancelled, the browser gone): its end is told if its start was."""
        await self.emit_evaluations(index)
        if self._announced == index:
            why = exc if isinstance(exc, TabwrightError) else Cancelled(CUT_OFF)
            error_dict = self.secrets.redact_any(why.to_dict())
            duration_ms = int((time.monotonic() - started) * 1000)
            await self._finished(index, name, shown, target, "", error_dict, duration_ms)

    async def follow(self) -> bool:
        """Follow the tab group's current tab: a tabs action switched it, or the current tab
        closed (a popup that closed itself) and the group fell back to another.  Whether
        the tab changed."""
        group = self.tab.group
        if group is None:
            return False
        await group.sync()
        if group.current is None or group.current is self.tab:
            return False
        self.tab = group.current
        return True

    async def follow_closed(self, budget: Budget, *, by: str = "agent") -> bool:
        """Follow the tab group's current tab (:meth:`follow`) between actions; when the
        tab the run acted in closed meanwhile (a popup closing itself a moment after its
        Save), a step says where the run went on (:meth:`record_closed`), so a replay
        follows too.  Whether the tab changed."""
        before = self.tab
        followed = await self.follow()
        if followed and before.page.is_closed():
            await self.record_closed(before, budget, by=by)
        return followed

    async def record_closed(self, before: Tab, budget: Budget, *, by: str = "agent") -> None:
        """A step saying the run went on in another tab as ``before`` closed itself (a
        popup's Save): to its opener (and whether the popup changed its form), or elsewhere."""
        args: dict[str, Any] = {"op": "closed", "to": await self._moved(before, budget)}
        if args["to"] == "opener":
            args["changed"] = self._entered.pop(before, None) != await form_state(
                self.tab.page, budget.child(_FORM_STATE_MS, label="form state")
            )
        await self.record("tabs", args, Target(), None, 0, by=by)

    async def _moved(self, before: Tab, budget: Budget) -> str:
        """Where the run went from ``before`` to the current tab
        (:func:`~automation.recording.replaytabs.moved_to`); into a popup, what its opener's
        forms held then is kept, to tell whether the popup changed them."""
        group = self.tab.group
        if group is None:
            return ""
        to = await moved_to(await group.opener_of(before), before, self.tab, group.tabs[0])
        if to == "popup":
            within = budget.child(_FORM_STATE_MS, label="form state")
            self._entered[self.tab] = await form_state(before.page, within)
        return to

    async def _beside(
        self, index: int, action: Action, args: dict[str, Any], known: Target, budget: Budget
    ) -> tuple[Target, dict[str, Any], asyncio.Future[str]]:
        """Start an action that proves its ref as it takes it (a click) with its step's
        target taken beside it, not before: the target's script is sent first, so the page
        describes the element before the action's input reaches it, and the two round trips
        overlap.  A target that can't be taken (the ref went stale) leaves the action to
        say why, or, when the action took its element all the same (the page changed
        between the two), the step keeps what the ref table knows of it.  (target, args as
        shown, the action running)."""
        ref = str(action.args["ref"])
        taking = asyncio.ensure_future(self.tab.target(ref, budget=budget))
        acting = asyncio.ensure_future(execute(self.tab, action.name, args, budget=budget))
        target = known
        try:
            try:
                target = await taking
            except (Cancelled, BrowserClosed):
                raise
            except TabwrightError:
                pass  # the action says why, or acted on the element it proved
            finally:
                shown = masked(self.secrets, action.name, action.args, target)
                await self._started(index, action.name, shown, target)
        except BaseException:
            for task in (taking, acting):
                task.cancel()
            await asyncio.gather(taking, acting, return_exceptions=True)
            raise
        return target, shown, acting

    async def _finished(
        self, index: int, name: str, shown: dict[str, Any], target: Target, result: str,
        error: dict[str, str] | None, duration_ms: int,
        steps: list[dict[str, Any]] | None = None,
    ) -> None:  # fmt: skip
        """The action's end, told (ok when it has no error)."""
        await self.out.emit(ActionFinished(
            self.round, index, name, shown, error is None, result, error, duration_ms, steps,
            words_of(name, shown, target),
        ))  # fmt: skip

    async def _started(
        self, index: int, name: str, shown: dict[str, Any], target: Target | None = None
    ) -> None:
        words = words_of(name, shown, target)
        await self.out.emit(ActionStarted(self.round, index, name, shown, words))
        self._announced = index

    async def _record_step(self, step: StepResult, by: str) -> None:
        if step.skipped:
            return
        target = step.target or Target()
        args = self.secrets.redact_any(masked(self.secrets, step.type, step.args, target))
        await self.record(step.type, args, target, step.error, step.duration_ms, by=by)

    async def record(
        self,
        action: str,
        args: dict[str, Any],
        target: Target,
        error: dict[str, str] | None,
        duration_ms: int,
        *,
        by: str = "agent",
        led_to: str | None = None,
        sent: str = "",
    ) -> None:
        """One step of the scenario, numbered in the order the steps ran; ``led_to``:
        where it led (by default the tab's address now, after the step); ``sent``: the
        write it sent (ScenarioStep.sent)."""
        self.recorded.append({
            "action": action, "args": args, "ok": error is None,
            "identity": target.identity.to_dict() if target.identity else None,
        })  # fmt: skip
        # The dialogs an arming answered while it ran: of which kind the arming was for.
        answered = [{"type": d.type, "message": self.secrets.redact(d.message)}
                    for d in self.tab.dialogs.take_answered()]  # fmt: skip
        await self.out.emit(
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
                led_to=self.tab.url if led_to is None else led_to,
                sent=sent,
                ok=error is None,
                error=self.secrets.redact_any(error) if error else None,
                duration_ms=duration_ms,
                by=by,
                words=words_of(action, args, target),
                dialogs=answered or None,
            )
        )
        self.step_index += 1

    async def wait_for_person(
        self, control: RunControl, budget: Budget, reason: str, detail: str, *, record: bool
    ) -> list[ScenarioStep]:
        """The run is paused (``control.begin_pause`` done): tell the person why, wait for
        them, and keep what they did in the tab meanwhile (``record``) as steps of theirs,
        also when they stop the run.  Their acts, for whoever goes on to hear of them."""
        # The recorder is ready before the person is told.
        recorder = (
            await start_recorder(self.tab, budget, on_secret=self.secrets.hide) if record else None
        )
        control.recorder = recorder
        if record and (unheard := unrecorded(recorder)):
            detail = f"{detail} ({unheard})" if detail else unheard
        await self.out.emit(RunPaused(reason, self.secrets.redact(detail)))
        try:
            await control.wait_for_person(budget)
        finally:
            control.recorder = None
            done = await recorder.stop() if recorder is not None else []
            # The recording opens with where the page was: not a step of theirs.
            acts = done[1:] if done and done[0].action == "navigate" else done
            await self.record_person(acts)
        if recorder is not None and await self.follow():
            # The person's last step was in a popup (the recording went there): the run
            # goes on in it, and knows what its opener's forms held as it opened.
            self._entered[self.tab] = recorder.opener_forms(self.tab.page)
        if acts and self.screenshots:
            # The page as the person left it, with their last step (the run page shows it
            # instead of the agent's last picture, taken before they acted).
            await self.screenshot(self.step_index - 1, budget)
        return acts

    async def record_person(self, acts: list[ScenarioStep]) -> None:
        """What a person did in the tab (the live view's recorder) as steps of theirs."""
        for step in acts:
            target = step.target()
            await self.record(
                step.action, step.args,
                Target("", target.role, target.name, step.selector, target)
                if target else Target(),
                None, 0, by="person", led_to=step.led_to, sent=step.sent,
            )  # fmt: skip

    async def emit_evaluations(self, index: int) -> None:
        for done in self.tab.take_evaluations():
            await self.out.emit(EvaluationFinished(index, **dataclasses.asdict(done)))

    async def screenshot(self, index: int, budget: Budget) -> None:
        try:
            shot = await self.tab.step_screenshot(index, budget=budget)
        except BrowserClosed:
            if self.tab.crashed or not await self.follow():
                raise
            return  # the tab closed after its step (a popup closing itself): no picture
        if shot is not None:
            await self.out.emit(shot)
