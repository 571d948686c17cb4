"""Replay a scenario in a tab, finding each step's element again by its identity.

For every step, in order, inside its own budget (and the whole replay's):

1. page steps (navigate, back, forward, reload) run as they are; a navigation on the origin
   the scenario was recorded on moves to the replay's base URL (:func:`rebase`);
2. element steps :func:`~automation.browser.identity.locate` their element, looking again
   while the page is still loading or drawing new elements (where a link or submit leads
   is moved to the replay's base URL first).  When it abstains on a page that has stopped
   changing, the step's intent may be reached another way, checked by the next step's
   element (:mod:`automation.recording.intent`: a link's target directly, or an agent);
   failing that, the step *needs a person*: with a :class:`RunControl` (the
   dashboard) the replay pauses (:mod:`automation.recording.replayperson`: resume tries
   the step again; a reply "skip" says the person did it; with
   :attr:`ReplayConfig.person_wait_ms`, no one coming in that time ends it), without one
   the replay ends there with status ``needs_person``.  Replay never acts on a guess;
3. the element found gets its ref from the snapshot registry (``refOf``), and the step runs
   through the same action code an agent uses (:func:`automation.actions.execute`),
   with its ``${param}`` and ``${SECRET:NAME}`` values filled in only at that moment (a
   parameter carried into the element's identity is filled in before it is looked for:
   :mod:`automation.recording.params`); a native select or box hidden behind a widget is
   set there instead, verified on what the page shows (:mod:`automation.recording.widgets`).
   Before it acts, nothing may cover the element: an interruption the scenario has a
   handler for is cleared, one it has none for makes a pointer step need a person, and
   what the person then does is proposed as a handler (:mod:`automation.recording.handlers`;
   a handler's steps replay through :mod:`automation.recording.replayhandlers`).

A ``call`` step replays the scenario it names there, in the same tab
(:mod:`automation.recording.replaycalls`).  A step that fails on a page that asks to sign
in signs in again with the scenario's login scenario, once a replay, and is tried again
(:attr:`Replay.relogin`, by default :mod:`automation.recording.relogin`).

Each step's :class:`StepOutcome` keeps which strategy found the element, its score and what
changed.  When something changed, ``healed`` is the element's identity now and ``heal`` says
whether it may be written back at once (``confident``: a strategy before similarity, or a
similarity score of at least :attr:`ReplayConfig.heal_min_score`) or needs a person's
approval (``proposed``).  Writing it is the caller's choice (the dashboard keeps a history).
A check of an element reports the element it held on the same way, so its identity heals
as a step's does.

Events are the agent run's (run.started, action.started/finished, step.recorded,
run.paused/resumed, run.finished) plus one ``replay.step`` per step.  Args in events are the
scenario's own (placeholders, never secret values), and secret values are redacted from
every result and error text.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from playwright.async_api import JSHandle

from automation.actions import execute
from automation.browser.identity import Located, locate, page_changing
from automation.browser.pagelog import Refused
from automation.browser.seen import errors_shown
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.control import RunControl
from automation.errors import (
    ActionFailed,
    BrowserClosed,
    BudgetExceeded,
    Cancelled,
    NeedsPerson,
    TabwrightError,
)
from automation.events import (
    ActionFinished,
    ActionStarted,
    Event,
    EventSink,
    RunFinished,
    RunStarted,
    StepReplayed,
)
from automation.recording import expect
from automation.recording.answered import (
    errors_before,
    not_a_form_answered_again,
    not_where_it_led,
    refused_by_server,
    refused_in_place,
    refused_where_it_led,
)
from automation.recording.calls import CALL, CallFrame, called, check_calls
from automation.recording.ensured import ticks_ensured
from automation.recording.intent import IntentAgent, Reached, agent_goal, by_agent, go_directly
from automation.recording.outcome import (
    ReplayResult,
    StepOutcome,
    event_fields,
    replayed_record,
    step_outcome,
    written_back,
)
from automation.recording.readagain import holds_before, last_acting, last_write, typed_before
from automation.recording.rebase import normalize_base, rebase, rebase_identity
from automation.recording.relogin import (
    SUBMITTING,
    Relogin,
    asks_sign_in,
    login_replay,
    sent_to_sign_in,
    sign_in_first,
    signed_out,
)
from automation.recording.replayact import act_on
from automation.recording.replaycalls import calls_frame, play_call
from automation.recording.replayconfirm import CONFIRM_MS, before, confirm
from automation.recording.replayhandlers import interruptions_of
from automation.recording.replayperson import step_with_person
from automation.recording.replaytabs import TABS, Windows
from automation.recording.scenario import (
    TYPED_ARG,
    Resolved,
    Scenario,
    ScenarioStep,
)
from automation.recording.secretfree import heal_without_secrets
from automation.recording.sent import sent_again, state_of, watched
from automation.secrets import SECRET_ENV_PREFIX, Secrets, redacting, secret_names
from automation.wording import double_quoted, element_words

__all__ = ["Replay", "ReplayConfig", "ReplayResult", "StepOutcome"]


@dataclass(frozen=True)
class ReplayConfig:
    step_timeout_ms: int = 15_000
    run_timeout_ms: int = 10 * 60 * 1000
    heal_min_score: float = 0.8  # a similarity match this good is healed without asking
    screenshots: bool = False
    # How long a step keeps looking for its element while locate abstains (a client-side
    # app draws it a moment after the page loaded); within the step's budget, less a
    # reserve for acting.  Past it, the step keeps looking as long as the page is still
    # loading or drawing new elements, to that same end: "nothing fits" is final only on
    # a page that has stopped changing.
    locate_wait_ms: int = 5_000
    check_timeout_ms: int = 5_000  # how long an expect check may take to hold
    # How long a step that needs a person waits for one before the replay ends with it
    # (None: until they come or the run is stopped).  Replays nobody watches (a batch's
    # rows) set it, so that they end.
    person_wait_ms: int | None = None


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
    secrets: Secrets | None = None  # the run's (its owner's grants); default: all of env
    # With an LLM profile for replays: tries a step whose element is gone, checked and
    # proposed (automation.recording.intent).  None: such a step needs a person.
    agent: IntentAgent | None = None
    # Said with a failed step when the page then asks to sign in (a sign-in form or a
    # one-time code field shows): the run's saved sign-in has expired, or it had none.
    signed_out_hint: str = ""
    # Signs in again when a failed step's page asks to (once a replay): it says what it did,
    # or raises a TabwrightError saying why it could not.  The replay then goes back to the
    # step's page (its latest navigation) and tries the step again.  None: the scenario's
    # login scenario, when its document brings one (automation.recording.relogin).
    relogin: Relogin | None = None
    # Set on the replay of a called scenario (a call step's): where it reports its steps.
    frame: CallFrame | None = None
    # A secret this run can't type (not granted to it, or not set) is asked of a person at
    # the step that types it, instead of refusing the replay before it starts: a closed
    # conversation's restore, whose password typed as it was is not kept.
    ask_for_secrets: bool = False

    def __post_init__(self) -> None:
        # A box clicked whose state a later check reads is ticked to it (a box already so
        # is left so): the click would undo it.
        self.scenario = ticks_ensured(self.scenario)
        # Whether each box a step clicked was to be left ticked (kept_state reads it again).
        self.left_ticked: dict[int, bool | None] = {}
        # What the field the last step that acts writes showed before it and after it (an
        # app that then puts the value before back took the write back: confirm).
        self.left_value: dict[int, tuple[str | None, str | None]] = {}
        # That field and the places it stands in, read where it stood should the app take
        # it away (an editor in a table's cell, removed once its edit is committed).
        self.left_places: dict[int, JSHandle] = {}
        # Whether each value a step wrote, that a later step sends, was there already
        # (sent.sent_again: an app that sends nothing when nothing changed); when the
        # step that acts now began (wall clock s: the page's errors since are its own).
        self.unchanged: dict[int, bool] = {}
        self.step_began = 0.0
        self.acting = last_acting(self.scenario.steps)  # the last step that acts
        # The step whose value is read again at the end (the last that acts, or the fill
        # a key pressed on its field commits), and whether a key committed it (last_write).
        self.written, self.committed = last_write(self.scenario.steps)
        self.said_before: list[str] = []  # what the page said was wrong before that edit
        # The errors each page showed as a step that may send a write began there (its
        # address, and them): a page a later write leads to is judged by them.
        self.errors_at: list[tuple[str, list[str]]] = []
        # The last step that acts, its write judged at the end (answered.refused_at_end).
        self.in_place: tuple[int, int, tuple[str, list[str] | None], list[str]] | None = None
        self.held_before = -1  # the step the page was last held before (holds_before)
        self.run_secrets = self.secrets if self.secrets is not None else Secrets(self.env)
        for index, step in enumerate(self.scenario.steps):
            step.check_secrets(index)  # also when the scenario was built in code
        env = os.environ if self.env is None else self.env
        self.asked = frozenset(
            name for name in self.scenario.placeholders()[1]
            if self.ask_for_secrets and not self._can_type(name, env)
        )  # fmt: skip
        # Never typed (their steps wait for a person): no value to resolve for them.
        env = {**env, **{SECRET_ENV_PREFIX + name: "" for name in self.asked}}
        self.run_secrets.require(self.scenario.placeholders()[1] - self.asked)
        if self.frame is None:  # the replayed scenario: every call it makes, checked now
            check_calls(self.scenario)
            for callee in called(self.scenario).values():
                self.run_secrets.require(callee.placeholders()[1])
        self.values: Resolved = replace(
            self.scenario.resolve(self.params, env=env),
            on_code=self.run_secrets.remember_code,
        )
        for name, value in self.values.secrets.items():
            if name not in self.asked:
                self.run_secrets.remember(name, value)
        # The one exit of the replay's events: through its secrets (automation.secrets).
        self.out = redacting(self.sink, self.run_secrets)
        # Where the scenarios its call steps call report (automation.recording.replaycalls).
        self.calls_frame = calls_frame(self)
        self.tab.is_secret = self.run_secrets.is_secret  # masked before a secret is typed
        # A base URL naming a file (…/app/index.html) means its folder.
        self.base_url = normalize_base(self.base_url)
        self.relogged = False  # signed in again already (once a replay)
        self.relogin_failure = ""  # why signing in again failed, when it did
        self.relogin_hint = ""  # and what to do about it
        if self.relogin is None:
            self.relogin = login_replay(self)
        self.interruptions = interruptions_of(self)  # automation.recording.replayhandlers
        # The tab's requests before the replay, and the refusals told since (see refusals).
        self.log_since = self.tab.log.requests_seen
        self.told: set[Refused] = set()
        self.wrote: set[int] = set()  # the steps that sent a write (a form posted, a save)
        self.windows = Windows(self.tab)  # the popups its steps act in (replaytabs)

    def _can_type(self, name: str, env: Mapping[str, str]) -> bool:
        return self.run_secrets.granted(name) and SECRET_ENV_PREFIX + name in env

    async def run(self) -> ReplayResult:
        started = time.monotonic()
        budget = Budget(self.config.run_timeout_ms, label="replay")
        if self.control is not None:
            self.control.attach(budget)
        await self.out.emit(
            RunStarted(f"replay: {self.scenario.name}", self.base_url or self.scenario.base_url,
                       "replay")
        )  # fmt: skip
        # What the tab's dialogs did before (an alert nobody armed, an arming nothing used)
        # is not this replay's: its steps arm their own.
        self.tab.dialogs.take_unexpected()
        self.tab.dialogs.disarm()
        outcomes: list[StepOutcome] = []
        try:
            status, reason = await self.play(budget, outcomes)
        except Cancelled as exc:
            status, reason = "stopped", budget.cancel_reason or str(exc)
            if self.control is not None and self.control.failure:
                status, reason = "failed", self.control.failure
        except BudgetExceeded as exc:  # names the budget that ran out, the replay's or less
            status, reason = "failed", exc.message
        except BrowserClosed as exc:
            status, reason = "failed", f"the browser went away: {exc}"
        self.not_run(outcomes)
        finished = {"passed": "succeeded", "stopped": "stopped"}.get(status, "failed")
        await self.out.emit(RunFinished(finished, reason=self.values.redact(reason)))
        return ReplayResult(
            status, outcomes, self.values.redact(reason), int((time.monotonic() - started) * 1000)
        )

    async def play(self, budget: Budget, outcomes: list[StepOutcome]) -> tuple[str, str]:
        """Every step in order, each outcome added to ``outcomes``: the status and why."""
        if not self.scenario.steps:  # nothing done, nothing checked: no success to tell
            return "failed", "the scenario has no steps: nothing was replayed"
        status, reason = "passed", ""
        failed_checks = 0
        for index, step in enumerate(self.scenario.steps):
            if status != "passed" and not step.is_check:
                break  # after a failure, only the checks right after it are read
            if holds_before(self.scenario.steps, index):
                status, reason = await before(self, index, budget, outcomes)
                if status != "passed":
                    break
            outcome = await step_with_person(self, index, step, budget)
            outcomes.append(outcome)
            if outcome.ok:
                continue
            failed_checks += step.is_check
            if status == "passed":
                status = outcome.status
                reason = f"step {index} ({step.describe()}): " + (
                    outcome.error["message"] if outcome.error else outcome.status
                )
        if status == "passed":
            status, reason = await confirm(self, budget, outcomes)
        if failed_checks > 1:
            reason += f" (and {failed_checks - 1} more checks failed)"
        return status, reason

    def not_run(self, outcomes: list[StepOutcome]) -> None:
        """The steps with no outcome in ``outcomes`` added to it, not run."""
        done = {o.index for o in outcomes}
        outcomes += [StepOutcome(i, s.action, "not_run")
                     for i, s in enumerate(self.scenario.steps) if i not in done]  # fmt: skip

    async def tried(self, index: int, step: ScenarioStep, budget: Budget) -> StepOutcome:
        """The step; again when it failed and an interruption was then cleared by a
        handler, or after signing in again (:func:`~automation.recording.relogin.
        signed_out`).  On a page that asks to sign in without the step's element, a replay
        that can sign in again does so first rather than wait the step's time for an
        element that can't come."""
        stuck = await sign_in_first(self, index, step, budget)
        if stuck:  # done now, the step would act on a page that lost what came before
            return await self.step(index, step, budget, refuse=stuck)
        outcome = await signed_out(self, index, await self.step(index, step, budget), budget)
        # (Not when a cover no handler cleared is why: handle() just said so.)
        if (
            not outcome.ok
            and self.interruptions.blocked is None
            and (await self.interruptions.handle(budget))
        ):
            outcome = await signed_out(self, index, await self.step(index, step, budget), budget)
        return outcome

    def asking(self, budget: Budget, what: str) -> Budget:
        """The time for one question of the page on a step's way (is its element there,
        does the page ask to sign in): what a step may take at most, never a fixed guess;
        a question a page answers in milliseconds alone takes seconds on a busy machine,
        and its running out must not read as "no"."""
        return budget.child(self.config.step_timeout_ms, label=what)

    async def findable(self, step: ScenarioStep, budget: Budget) -> bool:
        """Whether replay finds the step's element now, at once."""
        target = self.values.target(step)
        if target is None:
            return True
        located = await locate(self.tab.page, target, budget=self.asking(budget, "locate"))
        return located.ok

    async def step(
        self, index: int, step: ScenarioStep, budget: Budget, *, refuse: str = ""
    ) -> StepOutcome:
        """One try of step ``index``: found, done and judged, its events emitted; or,
        with ``refuse``, failed for that reason without being tried."""
        if step.action != TABS:  # out of a popup that closed itself meanwhile
            await self.windows.follow(self)
        if not step.is_check and self.tab.downloads is not None:
            self.tab.downloads.step_begins()  # a download checked before is no answer now
        shown = dict(step.args)  # placeholders, not values
        words = step.words(double_quoted).to_dict()
        # A save of an earlier step still unanswered is waited for, as a person waits for
        # it before going on: a check read before its answer reads what the app shows
        # meanwhile (taken back when it is refused), and leaving the page cancels it; so is
        # one still to be sent (a debounce) before a step that leaves the page.
        # And what a step that typed left for later runs before the next step acts (a
        # search box's debounce, then the list it filters), as a person waits to see it.
        steps = self.scenario.steps
        if (holds_before(steps, index) or typed_before(steps, index)) and self.held_before != index:
            await self.tab.settler.hold(budget.child(label="hold"))  # (redone after a sign-in)
        await self.tab.settler.writes_answered(budget)
        await self.out.emit(ActionStarted(0, index, step.action, shown, words))
        timeout_ms = self.config.check_timeout_ms if step.is_check else self.config.step_timeout_ms
        step_budget = budget.child(timeout_ms, label=f"step {index}")
        started = time.monotonic()
        located: Located | None = None
        reached: Reached | None = None  # its intent reached another way
        inner: list[StepOutcome] = []  # a call step's: the called scenario's outcomes
        result, error, status = "", None, "passed"
        try:
            if refuse:
                raise ActionFailed(refuse, hint=self.relogin_hint)
            self.refusals(self.tab.log.requests_seen)  # (an earlier step's, answered since)
            if not step.is_check and step.action != "wait_for":  # before it acts again
                await self.answered_failed(self.tab.log.requests_seen)
            asked = sorted(self.asked & secret_names(step.args))
            if asked:
                raise NeedsPerson(
                    f"it types the secret {asked[0]}, which this run can't type (not granted "
                    "to its owner, or not set on this server)",
                    index=-1, hint="type it on the live view, then resume",
                )  # fmt: skip
            if step.action == TABS:
                result = await self.windows.move(self, step.args, step_budget)
            elif step.action == CALL:
                result = await play_call(self, index, step, budget, inner, shown, words)
            elif step.is_check:
                result = await self.read_check(step, step_budget)
                located = await self._held_on(step, step_budget)
            elif step.needs_element:
                try:
                    located = await self.locate_step(step, step_budget)
                except NeedsPerson:
                    reached = await self._reach_intent(index, step, budget)
                    if reached is None:
                        raise
                    result = reached.result
                else:
                    located = await self.interruptions.uncover(
                        located, step.action, lambda within: self.locate_step(step, within),
                        step_budget, index=index,
                    )  # fmt: skip
                    if located.frame is not None:  # its writes there are the step's
                        self.tab.log.acted_in(located.frame)
                    # A form sent from a page that asked to sign in is signing in.
                    signing_in = step.action in SUBMITTING and await asks_sign_in(self, step_budget)
                    since = self.tab.log.requests_seen
                    if step.clicks_a_box() and located.element is not None:  # read at the end
                        role = located.found.role if located.found is not None else ""
                        self.left_ticked[index] = await expect.click_leaves(
                            located.element, role, step_budget
                        )
                    writes = (step.writes_a_value() and located.element is not None
                              and index == self.written)  # fmt: skip
                    if writes:  # read before it, after it, and at the end (confirm)
                        before = await expect.value_shown(located.element, step_budget)
                        places = await expect.places_of(located.element, step_budget)
                        if places is not None:
                            self.left_places[index] = places
                        if self.committed:  # (put back only where the page says why)
                            self.said_before = await errors_shown(
                                self.tab, step_budget.child(CONFIRM_MS)
                            )
                    shown = (self.tab.url, await errors_before(self, index, step_budget))
                    was = (await state_of(step, located.element, step_budget)
                           if located.element is not None and watched(self.scenario.steps, index)
                           else None)  # fmt: skip
                    self.step_began = time.time()
                    try:
                        result = await act_on(self, located, step, step_budget)
                        await self.tab.settle(budget=step_budget)
                        self.tab.dialogs_raise(_WENT_ON)  # (one its action brought: said)
                    finally:
                        self._note_writes(index, since)
                    if was is not None and located.element is not None:
                        self.unchanged[index] = was == await state_of(
                            step, located.element, step_budget
                        )
                    if writes and self.committed and index == self.acting:
                        # Its own Enter committed it: what it wrote, as the field took it
                        # before the Enter (the app's answer may be the old value back).
                        typed = self.values.fill(step.args, step.action).get(TYPED_ARG[step.action])
                        self.left_value[index] = (before, typed if isinstance(typed, str)
                                                  else None)  # fmt: skip
                    elif writes:
                        after = await expect.value_shown(located.element, step_budget)
                        self.left_value[index] = (before, after)
                    self.refusals(since)
                    name = located.found.name if located.found is not None else ""
                    await sent_to_sign_in(self, step, name, signing_in,
                                          self.tab.log.wrote(since), step_budget)  # fmt: skip
                    not_where_it_led(self, step, since)
                    await refused_where_it_led(self, index, since, shown, step_budget)
                    await refused_in_place(self, index, since, shown, step_budget)
                    await sent_again(self, index, step, since, step_budget)
            else:
                args = self.values.fill(step.args, step.action)
                if step.action == "wait_for" and "url" in args:  # as a URL check's
                    expect.words_given({"kind": "url", "url": args["url"]})
                if step.action == "navigate" or (step.action == "wait_for" and "url" in args):
                    args["url"] = rebase(args["url"], self.scenario.base_url, self.base_url)
                since = self.tab.log.requests_seen
                shown = (self.tab.url, await errors_before(self, index, step_budget))  # a key
                self.step_began = time.time()
                try:
                    if step.action == "wait_for" and "url" in args:  # read as a URL check
                        check = {"kind": "url", "url": args["url"]}
                        result = await expect.check(self.tab, check, None, budget=step_budget)
                    else:
                        result = await execute(self.tab, step.action, args, budget=step_budget)
                    await self.tab.settle(budget=step_budget)
                    self.tab.dialogs_raise(_WENT_ON)
                finally:
                    self._note_writes(index, since)
                self.refusals(since)
                not_where_it_led(self, step, since)
                await refused_where_it_led(self, index, since, shown, step_budget)
                await refused_in_place(self, index, since, shown, step_budget)
                await sent_again(self, index, step, since, step_budget)
        except Cancelled:
            raise
        except BrowserClosed:
            if not self.windows.closed_itself(self):
                raise
            result = "the popup closed itself as it ran"  # the next step says it should
        except BudgetExceeded as exc:
            # The whole replay out of time (or all but its headroom) ends it, not the step.
            budget.check()
            if step_budget.binding() is budget:
                raise budget.exceeded() from None
            error, status = exc, "failed"
        except NeedsPerson as exc:
            error, status = exc, "needs_person"
        except TabwrightError as exc:
            error, status = exc, "failed"
        duration_ms = int((time.monotonic() - started) * 1000)
        error_dict = self._redacted(error)
        result = self.values.redact(result)
        await self.out.emit(
            ActionFinished(0, index, step.action, shown, error is None, result, error_dict,
                           duration_ms, words=words)
        )  # fmt: skip
        outcome = step_outcome(self, index, step, status, located, error, error_dict, result,
                               duration_ms)  # fmt: skip
        if step.action == CALL:
            outcome = replace(outcome, called=step.args["scenario"], inner=inner)
        if reached is not None and status == "passed":
            healed = None
            if reached.healed is not None and step.identity is not None:
                healed = written_back(self, step, reached.healed).to_dict()
            outcome = replace(outcome, strategy=reached.strategy, changes=reached.changes,
                              heal="proposed" if healed else "", healed=healed)  # fmt: skip
        # What the page showed of a secret (a token listed once typed) is redacted in the
        # result as in the events; a heal, written from either, is what the next replay
        # looks for: it holds neither the secret nor what stands in for it (secretfree).
        healed, heal = heal_without_secrets(step.identity, outcome.healed, outcome.heal,
                                            self.run_secrets)  # fmt: skip
        changes = self.run_secrets.redact_any(outcome.changes)
        outcome = replace(outcome, healed=healed, heal=heal, changes=changes)
        found = located.found if located is not None and located.ok else None
        record = replayed_record(self, index, step, found, url=self.tab.url,
                                 led_to=self.tab.url, error=error_dict,
                                 duration_ms=duration_ms)  # fmt: skip
        await self.out.emit(record)
        await self.out.emit(StepReplayed(**event_fields(outcome)))
        if self.config.screenshots and status != "needs_person":
            await self._screenshot(index, budget)
        return outcome

    def _note_writes(self, index: int, since: int) -> None:
        if self.tab.log.wrote(since):
            self.wrote.add(index)

    def refusals(self, since: int) -> None:
        """HttpStatus for what the server refused (:func:`refused_by_server`) that was
        not told yet: a request of this step's (numbered after ``since``), or an earlier
        step's answered only now (a slow save), which fails this one."""
        self._tell(self.tab.log.refused(self.log_since), since)

    async def answered_failed(self, since: int) -> None:
        """HttpStatus for a write whose JSON answer said it failed (``{"ok": false}``, HTTP
        200: :meth:`~automation.browser.pagelog.PageLog.said_failed`) not told yet: read
        before the next step that acts (nothing more built on a save never made) and at
        the end, once what the page showed after it, and the checks after it, were judged
        (a refusal it said, a value it put back tell more: told first)."""
        self._tell(await self.tab.log.said_failed(self.log_since), since)

    def _tell(self, refused: list[Refused], since: int) -> None:
        """HttpStatus for the first of ``refused`` not told yet (each told once): "it"
        sent it when numbered after ``since``, else "the page" (an earlier step's)."""
        new = [r for r in refused if r not in self.told]
        self.told.update(new)
        if new:
            refused_by_server(new, what="it" if new[0].number > since else "the page")

    async def locate_step(self, step: ScenarioStep, budget: Budget) -> Located:
        """The step's element, looked for until it appears (within the step's budget, less
        a reserve for acting), or NeedsPerson saying why none could be taken."""
        target = self.values.target(step)
        assert target is not None
        target = rebase_identity(target, self.scenario.base_url, self.base_url)
        reserve_ms = min(5_000, self.config.step_timeout_ms / 3)
        longest_ms = max(0, budget.remaining_ms() - reserve_ms)
        wait_ms = min(self.config.locate_wait_ms, longest_ms)
        # The search ends before the step does, its reserve kept for acting: a search that
        # takes all of its time (a busy machine, a page slow to answer) found nothing.
        search = budget.reserve(reserve_ms, label="search for the element")

        async def changing() -> bool:  # still loading, or drawing new elements
            return self.tab.settler.busy() or await page_changing(self.tab.page, budget=search)

        try:
            located = await locate(self.tab.page, target, budget=search, wait_ms=wait_ms,
                                   longest_ms=longest_ms, changing=changing,
                                   pressing=step.action in ("click", "double_click"))  # fmt: skip
        except BudgetExceeded:
            if search.binding() is not search:
                raise  # the step's own time, or the replay's, is what ran out
            located = Located(None, reason=f"the search for it took all of its {longest_ms:.0f} ms")
        if not located.ok:
            raise NeedsPerson(
                f"can't tell which element it means: {located.reason or 'not found'}",
                index=-1,
                candidates=located.candidates,
                hint="the page changed more than replay can be sure of",
            )
        return located

    async def _reach_intent(self, index: int, step: ScenarioStep, budget: Budget) -> Reached | None:
        """The step's element is not there: reach its intent another way, checked by the
        next step's element (:mod:`automation.recording.intent`), or None."""
        target = self.values.target(step)
        if target is None:
            return None
        target = rebase_identity(target, self.scenario.base_url, self.base_url)
        following = next((s for s in self.scenario.steps[index + 1 :]
                          if s.needs_element and not s.is_check), None)  # fmt: skip

        async def find_next(within: Budget) -> Located | None:
            assert following is not None
            try:
                return await self.locate_step(following, within)
            except NeedsPerson:
                return None

        find = find_next if following is not None else None
        within = budget.child(self.config.step_timeout_ms, label=f"step {index}: its intent")
        base = self.base_url or self.scenario.base_url
        reached = await go_directly(self.tab, step, target, base, within, find)
        if reached is None and self.agent is not None and find is not None:
            goal = agent_goal(following, element_words)
            reached = await by_agent(self.tab, self.agent, step, target, base, goal, within,
                                     find)  # fmt: skip
        return reached

    async def read_check(self, step: ScenarioStep, budget: Budget) -> str:
        """An expect step: read the page until it holds (CheckFailed if it does not)."""
        not_a_form_answered_again(self, step)
        args = self.values.fill(step.args, step.action)
        expect.words_given(args)  # (before the address moves to the base URL: never empty)
        if args["kind"] == "url":
            args["url"] = rebase(args["url"], self.scenario.base_url, self.base_url)
        return await expect.check(self.tab, args, self.values.target(step), budget=budget)

    async def _held_on(self, step: ScenarioStep, budget: Budget) -> Located | None:
        """The element a check of an element held on, found again: when it changed, the
        check's identity heals as a step's does (so an export finds it where replay did)."""
        target = self.values.target(step)
        if target is None or not step.needs_element:
            return None
        try:
            located = await locate(self.tab.page, target, budget=budget)
        except BudgetExceeded:
            return None  # it held; how it was found is only told when there is time
        return located if located.ok else None

    def _redacted(self, error: TabwrightError | None) -> dict[str, str] | None:
        if error is None:
            return None
        return {k: self.values.redact(v) for k, v in error.to_dict().items()}

    async def _screenshot(self, index: int, budget: Budget) -> None:
        try:
            shot = await self.tab.step_screenshot(index, budget=budget)
        except BrowserClosed:
            if not self.windows.closed_itself(self):
                raise
            return  # the popup closed itself after its step (its Save): no picture of it
        if shot is not None:
            await self.out.emit(shot)


# A dialog no step armed that came after a step's action, as the page went on (its save's
# answer): the step fails, naming it, as one its action brought does.
_WENT_ON = "as the page went on after it"
