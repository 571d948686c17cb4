"""Signing in again in the middle of a replay: the scenario's login scenario.

A scenario may name a login scenario (``login_scenario``), which its document brings in
``callees`` (:mod:`automation.recording.calls`).  When a step of its replay fails on a
page that asks to sign in, the replay (:attr:`Replay.relogin
<automation.recording.replay.Replay.relogin>`) replays the login scenario in the same tab
with its own base URL, secrets and step timeout, goes back to the step's page and tries
the step again, once a replay; the steps between that page's navigate and the step are
done again first (the form they filled is gone with the session), unless one of them
sent something to the server (done twice, it might be saved twice): then the step fails,
saying so.  Every replay of the document does so by itself (the
library's, ``scenario_replay``'s, a batch's); the dashboard's also saves the run's sign-in
profile again (dashboard.runs.relogin).  The login scenario's own replay never signs in
again with itself, and a called scenario's replay leaves it to its caller's.

When the page asks to sign in before a step and the step's element is not there, the
replay signs in again first (:func:`sign_in_first`) rather than wait the step's time for
an element that can't come; a step that failed on such a page is tried again after
signing in (:func:`signed_out`), or its error says :attr:`Replay.signed_out_hint`.

The login scenario's replay is made with the replay's own class (as a called scenario's
and a handler's are: :mod:`automation.recording.replaycalls`), so this module needs no
import of :mod:`automation.recording.replay`, which imports it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from playwright.async_api import Error as PlaywrightError

from automation.browser.signin import sign_in_form
from automation.budget import Budget
from automation.errors import (
    ActionFailed,
    BrowserClosed,
    BudgetExceeded,
    Cancelled,
    ParamMissing,
    TabwrightError,
)
from automation.events import Observation
from automation.recording.basemove import moved_base
from automation.recording.calls import brought_login
from automation.recording.outcome import StepOutcome
from automation.recording.replayhandlers import interruptions_of
from automation.recording.scenario import Scenario, ScenarioStep
from automation.recording.takes import replay_takes

if TYPE_CHECKING:
    from automation.recording.replay import Replay

__all__ = [
    "LOST_HINT",
    "SIGNS_OUT",
    "SUBMITTING",
    "Relogin",
    "asks_sign_in",
    "login_given",
    "login_replay",
    "login_values",
    "sent_to_sign_in",
    "sign_in_first",
    "signed_out",
    "signs_in_as_given",
]

log = logging.getLogger("automation.recording")

Relogin = Callable[[Budget], Awaitable[str]]


def login_replay(replay: Replay) -> Relogin | None:
    """How ``replay`` signs in again: its scenario's login scenario, from its
    ``callees``, replayed in its tab with its base URL, environment, secrets, step
    timeout, interruption handlers (its own, and the replay's of other names, as a called
    scenario's) and the values of its parameters of the same names (automation.recording.
    takes); it says what it did, or raises ActionFailed when the login scenario did not
    pass, ParamMissing naming it and what it had no value for.  None when the scenario
    brings no login scenario (or is its own), or when ``replay`` is a called scenario's
    (its caller's replay signs in again)."""
    document = brought_login(replay.scenario)
    if document is None or replay.frame is not None:
        return None
    name = document.name
    takes = replay_takes(document)
    params = login_values(replay, document)
    # Needed only now that it signs in (automation.recording.takes): named with it.
    unset = [key for key, taken in takes.items() if taken.needed and key not in params]

    async def relogin(budget: Budget) -> str:
        if unset:
            raise ParamMissing(
                f"the login scenario {name!r} signs in with the parameter "
                f"{', '.join(map(repr, unset))}, and the replay has no value for it",
                hint="give it to the replay as one of its parameters (a batch's column, a "
                "schedule's values, the replay form's 'For signing in again')",
            )  # fmt: skip
        most_ms = max(1, int(budget.remaining_ms()))
        config = replace(replay.config, run_timeout_ms=most_ms, screenshots=False)
        try:
            signing_in = type(replay)(replay.tab, document, params=params,
                                      base_url=moved_base(document.base_url,
                                                          replay.scenario.base_url,
                                                          replay.base_url),
                                      env=replay.env,
                                      secrets=replay.run_secrets, config=config)  # fmt: skip
        except ParamMissing as exc:  # a secret it types: named with it
            raise ParamMissing(f"the login scenario {name!r} has {exc.message}",
                               hint=exc.hint) from None  # fmt: skip
        # As a called scenario: an interruption the replay handles (a cookie wall over
        # every page) is handled on the sign-in page too, else its "Sign in" stays covered.
        signing_in.interruptions = interruptions_of(signing_in, replay.interruptions)
        result = await signing_in.run()
        if not result.ok:
            raise ActionFailed(f"the login scenario {name!r} did not pass: {result.reason}",
                               hint=f"replay {name!r} alone to see where it fails")  # fmt: skip
        return f"signed in again with the login scenario {name!r}"

    return relogin


def login_values(replay: Replay, document: Scenario) -> dict[str, str]:
    """The values the login scenario ``document`` signs in again with in ``replay``: the
    replay's for the parameters of the same names, those it was given (a batch row's user
    signs in again as that user, as the export does) and its own parameters' defaults."""
    known = _known(replay.scenario, replay.params)
    return {key: known[key] for key in replay_takes(document) if key in known}


def signs_in_as_given(replay: Replay) -> list[str]:
    """The parameters of its login scenario ``replay`` signs in again with a value of
    its own, not the login scenario's default (a batch row's user): signed in so, its tab
    holds another sign-in than the login scenario's own ([] when none, or no login
    scenario)."""
    return login_given(replay.scenario, replay.params)


def login_given(scenario: Scenario, params: Mapping[str, object]) -> list[str]:
    """:func:`signs_in_as_given` for a replay of ``scenario`` with ``params``, known
    before its tab is opened: a run whose replay signs in as another user than a sign-in
    profile's starts signed out, not with the profile (dashboard.runs.live)."""
    document = brought_login(scenario)
    if document is None:
        return []
    takes = replay_takes(document)
    known = _known(scenario, params)
    return [key for key in takes if key in known and known[key] != takes[key].default]


def _known(scenario: Scenario, params: Mapping[str, object]) -> dict[str, str]:
    """A replay's values: those it was given, and its scenario's defaults for the
    parameters its steps use (as :meth:`Scenario.resolve` takes them)."""
    defaults = {name: (scenario.params.get(name) or {}).get("default")
                for name in scenario.placeholders()[0]}  # fmt: skip
    known = {name: str(value) for name, value in defaults.items() if value is not None}
    return {**known, **{name: str(value) for name, value in params.items()}}


async def sign_in_first(replay: Replay, index: int, step: ScenarioStep, budget: Budget) -> str:
    """Before step ``index``: sign in again (once a replay) when the page asks to and the
    step's element is not there.  Why the step can't be done now ("" when it can): the
    sign-in failed, or the steps before it could not be done again."""
    if (
        replay.relogin is not None
        and not replay.relogged
        and await asks_sign_in(replay, budget)
        and not await replay.findable(step, budget)
        and not await _sign_in_again(replay, index, budget)
    ):
        return replay.relogin_failure
    return ""


async def signed_out(
    replay: Replay, index: int, outcome: StepOutcome, budget: Budget
) -> StepOutcome:
    """``outcome`` of a failed step, when the page asks to sign in: the step again after
    :attr:`Replay.relogin` (once a replay), else with :attr:`Replay.signed_out_hint`
    added."""
    if outcome.ok or outcome.error is None or not (replay.signed_out_hint or replay.relogin):
        return outcome
    if not await asks_sign_in(replay, budget):
        return outcome
    if replay.relogin is not None and not replay.relogged:
        if await _sign_in_again(replay, index, budget):
            outcome = await replay.step(index, replay.scenario.steps[index], budget)
            if outcome.ok or not await asks_sign_in(replay, budget):
                return outcome
    hint = replay.signed_out_hint
    error = dict(outcome.error)
    if replay.relogin_failure:  # the cause, not the remedy it would have needed
        hint = f"the page asks to sign in, and {replay.relogin_failure}"
        error["hint"] = replay.relogin_hint
    if not hint:
        return outcome
    return replace(outcome, error={**error, "message": f"{error['message']} ({hint})"})


# What to do about a step that can't be done after signing in again, when the cause is a
# step before it that could not be done again (the page lost what they did).
LOST_HINT = "see the steps before it: the page lost them"

# Steps that send a form (a click on its button, Enter in a field), and the names of the
# controls that sign out (their step lands on a sign-in page as it should).
SUBMITTING = frozenset({"click", "double_click", "press"})
SIGNS_OUT = re.compile(r"\b(?:sign|log)[\s-]*(?:out|off)\b|\b(?:logout|signout)\b", re.I)


async def sent_to_sign_in(
    replay: Replay, step: ScenarioStep, name: str, asked_before: bool, wrote: bool,
    budget: Budget,
) -> None:  # fmt: skip
    """ActionFailed when step ``step`` (on the control named ``name``) sent a write and
    the server answered it with its sign-in page (the session ended: a form's POST
    redirected to sign in is answered 200, by the sign-in page): nothing it sent was kept,
    whatever a later check finds there (no rows on a sign-in page).  Not a step of signing
    in (the page asked to sign in before it: ``asked_before``), nor one that signs out.
    The replay then signs in again and tries the step anew (:func:`signed_out`)."""
    if not wrote or asked_before or step.action not in SUBMITTING or SIGNS_OUT.search(name):
        return
    if await asks_sign_in(replay, budget):
        raise ActionFailed(
            "it sent what it did, and the server answered with its sign-in page: nothing "
            "it sent was kept (the session ended)",
            hint="sign in again (a login scenario does it by itself), then replay",
        )


async def asks_sign_in(replay: Replay, budget: Budget) -> bool:
    """Whether the replay's page shows a sign-in form now (automation.browser.signin): not
    a sign-up's or a change of password's."""
    try:
        found = await sign_in_form(replay.tab.page, replay.asking(budget, "sign-in form"))
        return found.shown
    except PlaywrightError:
        return False  # a page going away meanwhile (a navigation) shows none
    except BudgetExceeded:
        if budget.expired:
            raise  # the caller's time ran out: its step says so
        log.info("the page took a step's time to say whether it asks to sign in: taken as no")
        return False


async def _sign_in_again(replay: Replay, index: int, budget: Budget) -> bool:
    """:attr:`Replay.relogin` (once a replay), said; then back to step ``index``'s page
    (its last navigate before it), and the steps done on it since done again.  False,
    said, when signing in failed, or when one of those steps can't be done again (or
    sent something to the server: it is not sent twice)."""
    assert replay.relogin is not None
    replay.relogged = True
    try:
        said = await replay.relogin(budget)
    except (Cancelled, BrowserClosed):
        raise
    except TabwrightError as exc:
        return await _cannot_go_on(
            replay,
            f"signing in again failed: {exc.message}",
            hint=exc.hint or "see the sign-in on the run's page",
        )
    await replay.out.emit(Observation(0, said))
    steps = replay.scenario.steps
    back = next((i for i in range(index, -1, -1) if steps[i].action == "navigate"), None)
    if back is None or back == index:
        return True
    # What the steps since did on the page the session lost (a form filled in) is gone
    # with it: they are done again, else the step would save a half-empty form.  Not when
    # one of them sent something to the server: done twice, it may be saved twice.
    redo = [i for i in range(back + 1, index) if not steps[i].is_check]
    sent = next((i for i in redo if i in replay.wrote), None)
    if sent is not None:
        return await _cannot_go_on(
            replay, f"it signed in again, but step {sent} ({steps[sent].describe()}) sent "
            "something to the server on the page the session lost: done again, it may be "
            "saved twice",
        )  # fmt: skip
    for i in [back, *redo]:
        outcome = await replay.step(i, steps[i], budget)
        if not outcome.ok:
            why = outcome.error["message"] if outcome.error else outcome.status
            return await _cannot_go_on(
                replay,
                f"it signed in again, but step {i} ({steps[i].describe()}) could not be done "
                f"again: {why}",
            )
    return True


async def _cannot_go_on(replay: Replay, why: str, *, hint: str = LOST_HINT) -> bool:
    """Why the replay can't go on past the sign-in page, said, and what to do about it
    (``hint``: by default, the steps before it, which the page lost): False."""
    replay.relogin_failure = why
    replay.relogin_hint = hint
    await replay.out.emit(Observation(0, why))
    return False
