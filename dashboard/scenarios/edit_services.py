"""What an edit of a stored scenario must keep true, checked in the edit's transaction:
the scenarios that call it still give what it takes, the rows of its batches still to run
and its schedules turned on still give its parameters values, and no live replay has its
steps renumbered under it.  Each refuses the edit (ScenarioInvalid, naming what would
break) rather than let the next replay fail, or run with a value nobody gave."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from django.utils import timezone

from automation.errors import ScenarioInvalid
from automation.recording import scenario as fmt
from automation.recording.calls import check_calls
from automation.recording.takes import Taken, replay_takes
from dashboard.models import Batch, BatchRow, Run, Scenario, Schedule
from dashboard.scenarios import selectors as scenario_selectors

__all__ = [
    "ReplayLive", "check_callers", "check_jobs", "check_no_live_replay", "keep_used_params",
    "params_misfit", "touch",
]  # fmt: skip


def keep_used_params(scenario: Scenario, document: fmt.Scenario) -> None:
    """Keep the parameters the edited steps (``document``) use, and drop the rest, once
    its callers and its jobs are known to still hold."""
    used = document.placeholders()[0]
    params = {name: spec for name, spec in document.params.items() if name in used}
    check_jobs(scenario, replace(document, params=params))
    touch(scenario.pk, params=params)
    check_callers(scenario)


def check_jobs(scenario: Scenario, document: fmt.Scenario) -> None:
    """The rows of its batches still to run and its schedules turned on still give values
    a replay of it takes after an edit (``document``: its steps and parameters as they
    will be; its login scenario's are taken as they are: automation.recording.takes):
    one that gives a parameter it would no longer take (renamed), or none for one it
    would need, refuses the edit, naming it (else each of its replays would fail).  The
    scenarios that sign in with it take its parameters too: their jobs are checked the
    same way, with it as it will be."""
    stored = scenario_selectors.scenario_document(scenario=scenario)
    login = {"login_scenario": stored.login_scenario, "callees": stored.callees}
    _check_job_values(scenario, replay_takes(replace(document, **login)))
    for user in scenario_selectors.scenario_signs_in_for(scenario=scenario):
        try:
            theirs = scenario_selectors.scenario_document(scenario=user)
            signing = replace(theirs, callees={**theirs.callees, theirs.login_scenario: document})
        except ScenarioInvalid:
            continue  # it calls it too, and those calls would not hold: check_callers says so
        try:
            _check_job_values(user, replay_takes(signing))
        except ScenarioInvalid as exc:
            raise type(exc)(f"{user.name!r} signs in with it: {exc.message}",
                            hint=exc.hint) from None  # fmt: skip


def _check_job_values(scenario: Scenario, takes: Mapping[str, Taken]) -> None:
    """The rows of ``scenario``'s batches still to run and its schedules turned on give
    values that fit ``takes``, what a replay of it would take (ScenarioInvalid, naming
    the first that does not)."""

    def misfit(values: dict[str, Any]) -> str:
        return params_misfit(values, takes, after=True)

    rows = BatchRow.objects.filter(
        batch__scenario=scenario, batch__status=Batch.Status.RUNNING, run__isnull=True
    ).values_list("batch_id", "index", "params")
    for batch_id, index, values in rows.iterator():
        why = misfit(values if isinstance(values, dict) else {})
        if why:
            raise ScenarioInvalid(f"batch {batch_id} is at work: its row {index} {why}",
                                  hint="stop the batch, or let it finish, first")  # fmt: skip
    for schedule in Schedule.objects.filter(scenario=scenario, enabled=True):
        for values in schedule.rows if isinstance(schedule.rows, list) else [schedule.params]:
            why = misfit(values if isinstance(values, dict) else {})
            if why:
                raise ScenarioInvalid(f"schedule {schedule.pk} ({schedule.cron}) {why}",
                                      hint="change or turn off the schedule first")  # fmt: skip


def params_misfit(values: Mapping[str, Any], takes: Mapping[str, Taken], *, after: bool) -> str:
    """How one replay's ``values`` do not fit the parameters a replay takes (``takes``),
    in words: "gives the parameter 'who', which it no longer has" (``after``: "which it
    would no longer have", once an edit is made); "" when they fit."""
    unknown = sorted(set(values) - set(takes))
    if unknown:
        has = "would no longer have" if after else "no longer has"
        return f"gives the parameter {unknown[0]!r}, which it {has}"
    needed = sorted(n for n, taken in takes.items() if taken.needed and not values.get(n))
    if needed:
        return f"gives no value for {needed[0]!r}, which it {'would need' if after else 'needs'}"
    return ""


def check_callers(scenario: Scenario) -> None:
    """The calls of ``scenario`` by other scenarios still hold after an edit of it: a
    parameter they give that it no longer has, or one it now needs, refuses the edit,
    naming the caller."""
    for caller in scenario_selectors.scenario_callers(scenario=scenario):
        try:
            check_calls(scenario_selectors.scenario_document(scenario=caller))
        except ScenarioInvalid as exc:
            raise type(exc)(f"{caller.name!r} calls it: {exc.message}", index=exc.index,
                            hint=f"change the call in {caller.name!r} first") from None  # fmt: skip


class ReplayLive(ScenarioInvalid):
    """An edit that renumbers a scenario's steps while a replay that runs them is live:
    ``run_id`` names the replay."""

    code = "replay_live"

    def __init__(self, message: str, *, run_id: int, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.run_id = run_id


def check_no_live_replay(scenario: Scenario) -> None:
    """A live replay reports its steps by index (dashboard.runs.sink), the steps of the
    scenarios it calls and signs in with too: renumbering them under it would put its
    outcomes and heals on other steps.  So a live replay of this scenario, or of one that
    calls it or signs in with it (directly or through others), refuses the edit (ReplayLive,
    naming the run); a batch or a schedule between replays does not (its next replay reads
    the scenario as it is then)."""
    users = scenario_selectors.scenario_users(scenario=scenario)
    # A queued replay reads the scenario when it starts: edits before then are its own.
    live = (
        Run.objects.filter(scenario_id__in=[scenario.pk, *users], kind=Run.Kind.REPLAY,
                           status__in=Run.LIVE)
        .select_related("scenario").order_by("pk").first()
    )  # fmt: skip
    if live is None:
        return
    what = "this scenario"
    if live.scenario_id != scenario.pk and live.scenario is not None:
        what = f"{live.scenario.name!r}, which {users[live.scenario_id]}"
    raise ReplayLive(f"run {live.pk} is replaying {what}, and its replay finds steps by number",
                     run_id=live.pk,
                     hint="stop it or let it finish before moving or deleting steps")  # fmt: skip


def touch(scenario_id: int, **fields: Any) -> None:
    """Write ``fields`` of the scenario (if any) and mark it changed now."""
    Scenario.objects.filter(pk=scenario_id).update(**fields, updated_at=timezone.now())
