"""Writes of scenarios that call scenarios (automation.recording.calls): the links kept
from call steps, renames, the login scenario, and the called scenarios a file brings.

A call step names its callee; the link (ScenarioCall) is kept whenever the caller's steps
are saved: a name is taken first among the scenarios the caller already calls, then among
the scenarios an import brought along, then among its owner's scenarios (exactly one).
Saving refuses, naming the step, a callee that is not there (CallMissing), a cycle
(CallCycle), a parameter the callee does not have or needs and is not given.  A callee is
stored once: a heal of its step holds for every caller.  A name changes only through
:func:`scenario_rename` (the scenario page and the admin), which renames the callee in its
callers' steps; deleting one that others call, or that signs in for others (their
login scenario), is refused, saying which (ScenarioCalled).  A file brings its login
scenario as it brings the scenarios it calls (in ``callees``), stored the same way."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from django.db import transaction

from automation.errors import CallCycle, CallMissing, ScenarioInvalid
from automation.recording import scenario as fmt
from automation.recording.calls import CALL, brought_names, callee_names, check_calls
from dashboard.models import Scenario, ScenarioCall, ScenarioStep
from dashboard.scenarios import selectors as scenario_selectors
from dashboard.scenarios.edit_services import check_jobs, keep_used_params

MAX_NAME_CHARS = 200


class ScenarioCalled(ScenarioInvalid):
    """A scenario that others call can't be deleted: ``callers`` names them."""

    code = "scenario_called"

    def __init__(self, message: str, *, callers: list[str], hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.callers = callers


class CalleeClash(ScenarioInvalid):
    """A scenario a file brings along (in ``callees``) has the name of one of the
    importer's that is not the same: ``name`` and ``existing`` (its id) say which."""

    code = "callee_clash"

    def __init__(self, message: str, *, name: str, existing: int, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.name = name
        self.existing = existing


def calls_link(
    *, scenario: Scenario, document: fmt.Scenario, chosen: Mapping[str, Scenario] | None = None
) -> None:
    """Keep the scenarios ``scenario``'s steps (``document``) call, checked whole (in the
    caller's transaction): ScenarioInvalid, and nothing kept, when a call can't run.
    ``chosen``: the scenario a name means, when no link says it yet (an import's)."""
    linked = {link.callee.name: link.callee for link in
              ScenarioCall.objects.filter(caller=scenario).select_related("callee")}  # fmt: skip
    direct: dict[str, Scenario] = {}
    for name in callee_names(document):
        callee = linked.get(name) or (chosen or {}).get(name) or one_named(scenario, name)
        if callee.pk == scenario.pk:
            raise CallCycle(f"{scenario.name!r} can't call itself")
        direct[name] = callee
    everything: dict[str, Scenario] = dict(direct)
    for callee in direct.values():
        for name, further in scenario_selectors.scenario_callees(scenario=callee).items():
            if further.pk == scenario.pk:
                raise CallCycle(f"{callee.name!r} calls {scenario.name!r} (through "
                                f"{name!r}): a cycle of calls")  # fmt: skip
            if everything.setdefault(name, further).pk != further.pk:
                raise ScenarioInvalid(f"two scenarios named {name!r} are called here",
                                      hint="rename one of them")  # fmt: skip
    for callee in everything.values():  # one that signs in again with this one
        if callee.login_scenario_id == scenario.pk:
            raise CallCycle(f"{callee.name!r} signs in again with {scenario.name!r}, which "
                            "would call it: a cycle of calls")  # fmt: skip
    data = {name: scenario_selectors.scenario_data(scenario=s) for name, s in everything.items()}
    check_calls(fmt.Scenario.from_dict({**document.to_dict(), "callees": data}))
    ScenarioCall.objects.filter(caller=scenario).exclude(
        callee_id__in=[s.pk for s in direct.values()]
    ).delete()
    for callee in direct.values():
        ScenarioCall.objects.get_or_create(caller=scenario, callee=callee)
    login = Scenario.objects.filter(pk=scenario.login_scenario_id).first()
    _one_of_a_name(scenario, login)  # with those it calls now


def one_named(scenario: Scenario, name: str) -> Scenario:
    """The one scenario of ``scenario``'s owner named ``name`` (CallMissing, or
    ScenarioInvalid when several are)."""
    found = list(Scenario.objects.filter(owner_id=scenario.owner_id, name=name)[:2])
    if not found:
        raise CallMissing(f"no scenario of yours is named {name!r}",
                          hint="save or import the called scenario first")  # fmt: skip
    if len(found) > 1:
        raise ScenarioInvalid(f"several scenarios of yours are named {name!r}",
                              hint="rename all but the one to call")  # fmt: skip
    return found[0]


# -- names ----------------------------------------------------------------------------


def scenario_name_clean(name: object) -> str:
    """The name as it is stored (one line, 1 to 200 characters, no space around it), or
    ScenarioInvalid saying why it can't be one."""
    if not isinstance(name, str) or not name.strip():
        raise ScenarioInvalid("a scenario needs a name")
    name = name.strip()
    if len(name) > MAX_NAME_CHARS:
        raise ScenarioInvalid(f"the name is {len(name)} characters long (at most {MAX_NAME_CHARS})")
    fmt.Scenario.from_dict({"version": fmt.SCENARIO_VERSION, "name": name, "steps": []})
    return name


def scenario_name_free(*, scenario: Scenario, name: str) -> None:
    """ScenarioInvalid when another scenario of its owner has ``name``: a call finds its
    scenario by name, so one of two would run the other's steps (and a check of the
    other's never run)."""
    taken = Scenario.objects.filter(owner_id=scenario.owner_id, name=name)
    if taken.exclude(pk=scenario.pk).exists():
        raise ScenarioInvalid(
            f"you have another scenario named {name!r}: calls find scenarios by name, so "
            "each of yours has a name of its own"
        )


class SettingsChanged(ScenarioInvalid):
    """A scenario's name or description written from a page shown before another tab
    changed it to something else: ``field`` names which, ``now`` what it is now."""

    code = "settings_changed"

    def __init__(self, message: str, *, field: str, now: str, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.field = field
        self.now = now


def same_text(a: str, b: str) -> bool:
    """Whether two values of a text field are the same as a form sends them back (its line
    breaks as CRLF, the spaces around it dropped)."""
    return a.replace("\r\n", "\n").strip() == b.replace("\r\n", "\n").strip()


def scenario_rename(
    *, scenario: Scenario, name: str | None = None, description: str | None = None,
    shown: Mapping[str, str] | None = None,
) -> None:  # fmt: skip
    """Rename the scenario and (each given) change its description: the one way a stored
    name changes, so that the scenarios that call it call it by its new name.  ``shown``:
    what the person's page showed of the fields given; one changed since to something else
    (in another tab) refuses the save (SettingsChanged), rather than write over it."""
    with transaction.atomic():
        locked = Scenario.objects.select_for_update().get(pk=scenario.pk)
        given = {"name": name, "description": description}
        for field, value in given.items():
            now, was = getattr(locked, field), (shown or {}).get(field)
            if value is None or was is None or same_text(now, was) or same_text(now, value):
                continue
            raise SettingsChanged(
                f"the {field} was changed to {now!r} since this page was shown (in another "
                "tab?); nothing was saved",
                field=field, now=now, hint=f"keep the {field} or write yours again, and save",
            )  # fmt: skip
        name = locked.name if name is None else scenario_name_clean(name)
        data = scenario_selectors.scenario_data(scenario=locked)
        new_description = locked.description if description is None else description
        fmt.Scenario.from_dict({**data, "name": name, "description": new_description})
        old = locked.name
        if old != name:
            scenario_name_free(scenario=locked, name=name)
            for step in ScenarioStep.objects.filter(scenario__calls__callee=locked, action=CALL):
                if step.args.get("scenario") == old:
                    step.args = {**step.args, "scenario": name}
                    step.save(update_fields=["args"])
        locked.name = scenario.name = name
        fields = ["name", "updated_at"]
        if description is not None:
            locked.description = scenario.description = description
            fields.append("description")
        locked.save(update_fields=fields)


def scenario_call_add(*, scenario: Scenario, callee_id: int, params: Mapping[str, str]) -> int:
    """Add a step at the end that calls the owner's scenario ``callee_id`` with
    ``params``; returns its index."""
    callee = Scenario.objects.filter(pk=callee_id, owner_id=scenario.owner_id).first()
    if callee is None:
        raise CallMissing(f"no scenario {callee_id} of yours to call")
    step = {"action": CALL, "args": {"scenario": callee.name, "params": dict(params)}}
    with transaction.atomic():
        locked = Scenario.objects.select_for_update().get(pk=scenario.pk)
        data = scenario_selectors.scenario_data(scenario=locked)
        index = len(data["steps"])
        document = fmt.Scenario.from_dict({**data, "steps": [*data["steps"], step]})
        calls_link(scenario=scenario, document=document)
        ScenarioStep.objects.create(scenario=scenario, index=index, action=CALL,
                                    args=document.steps[-1].args)  # fmt: skip
        # Its values may need a parameter the scenario's callers and jobs don't give.
        keep_used_params(scenario, document)
    return index


def login_set(
    *, scenario: Scenario, login_id: int | None = None, name: str = "",
    chosen: Mapping[str, Scenario] | None = None,
) -> None:  # fmt: skip
    """Name the owner's scenario (by id, or by ``name``; neither: none) that signs in
    again when a replay of ``scenario`` meets a sign-in page (dashboard.runs.relogin).
    ``chosen``: the scenario a name means (an import's, which the file brought)."""
    login = None
    if login_id is not None:
        login = Scenario.objects.filter(pk=login_id, owner_id=scenario.owner_id).first()
        if login is None:
            raise CallMissing(f"no scenario {login_id} of yours to sign in with")
    elif name:
        login = (chosen or {}).get(name) or one_named(scenario, name)
    if login is not None and login.pk == scenario.pk:
        raise ScenarioInvalid("the login scenario is another scenario of yours")
    if login is not None:  # signing in again would replay it, and it would sign in again
        for name, further in scenario_selectors.scenario_callees(scenario=login).items():
            if further.pk == scenario.pk:
                raise CallCycle(f"the login scenario {login.name!r} calls {scenario.name!r} "
                                f"(through {name!r}): a cycle of calls")  # fmt: skip
    _one_of_a_name(scenario, login)
    with transaction.atomic():
        Scenario.objects.filter(pk=scenario.pk).update(login_scenario=login)
        # Its batches at work and its schedules may give the old one's parameters.
        now = Scenario.objects.get(pk=scenario.pk)
        check_jobs(now, scenario_selectors.scenario_document(scenario=now))
    scenario.login_scenario = login


def _one_of_a_name(scenario: Scenario, login: Scenario | None) -> None:
    """A file names the scenarios it brings by name: those ``scenario`` calls and
    ``login``, its login scenario, and those they call are one scenario a name
    (ScenarioInvalid, naming both, when two are not)."""
    clash = scenario_selectors.scenario_brought_clash(scenario=scenario, login=login)
    if clash is not None:
        one, other = clash
        raise ScenarioInvalid(
            f"two scenarios named {one.name!r} ({one.pk} and {other.pk}) would come with "
            f"{scenario.name!r}: those it calls and its login scenario are named once",
            hint="rename one of them",
        )  # fmt: skip


# -- the scenarios a file brings along --------------------------------------------------


def callees_in_order(document: fmt.Scenario) -> Iterator[tuple[str, fmt.Scenario]]:
    """The file's ``callees`` its call steps reach, and its login scenario and those that
    one's reach (the others are left out), each after the ones it calls, so that each can
    be stored linked to them."""
    done: set[str] = set()

    def visit(scenario: fmt.Scenario) -> Iterator[tuple[str, fmt.Scenario]]:
        names = brought_names(scenario) if scenario is document else callee_names(scenario)
        for name in names:
            callee = document.callees.get(name)
            if callee is None or name in done:
                continue  # not in the file: a scenario of the importer's, found by name
            done.add(name)  # the file was read whole: no cycle among them
            yield from visit(callee)
            yield name, callee

    yield from visit(document)


def callee_existing(
    *, owner_id: int, callee: fmt.Scenario, chosen: Mapping[str, Scenario]
) -> Scenario | None:
    """The importer's scenario that the file's ``callee`` is already: one of the same
    name, base URL, parameters, steps and handlers (the description aside) that calls
    the scenarios ``chosen`` for the callee's calls.  None when the importer has no
    scenario of that name; CalleeClash, saying what differs, when none of theirs is it."""
    mine = list(Scenario.objects.filter(owner_id=owner_id, name=callee.name).order_by("pk"))
    if not mine:
        return None
    wanted = {name: chosen[name].pk for name in callee_names(callee) if name in chosen}
    differs = ""
    for scenario in mine:
        stored = fmt.Scenario.from_dict(scenario_selectors.scenario_data(scenario=scenario))
        differs = _difference(stored, callee)
        if not differs:
            links = dict(ScenarioCall.objects.filter(caller=scenario)
                         .values_list("callee__name", "callee_id"))  # fmt: skip
            if all(links.get(name) == pk for name, pk in wanted.items()):
                return scenario
            differs = "the scenarios it calls"
    raise CalleeClash(
        f"the file calls {callee.name!r}, and your scenario {callee.name!r} "
        f"({mine[-1].pk}) is another: {differs} differ",
        name=callee.name, existing=mine[-1].pk,
        hint="rename yours (the file then brings its own), or to call yours take "
        f"{callee.name!r} out of the file's callees",
    )  # fmt: skip


def _difference(stored: fmt.Scenario, callee: fmt.Scenario) -> str:
    """What differs between two scenarios of one name ("" when nothing that replays)."""
    if stored.base_url != callee.base_url:
        return "their base URLs"
    if stored.params != callee.params:
        return "their parameters"
    mine, theirs = stored.to_dict(), callee.to_dict()
    if len(mine["steps"]) != len(theirs["steps"]):
        return f"their step counts ({len(stored.steps)} and {len(callee.steps)})"
    pairs = zip(mine["steps"], theirs["steps"], strict=True)
    first = next((i for i, (a, b) in enumerate(pairs) if not _same_step(a, b)), None)
    if first is not None:
        return f"their steps (from step {first})"
    if mine.get("handlers") != theirs.get("handlers"):
        return "their interruption handlers"
    return ""


def _undated(step: dict[str, Any]) -> dict[str, Any]:
    """``step`` without when its element's identity (and each variant) was captured: two
    people's replays of one file capture the same element at other times."""
    identity = step.get("identity")
    if not isinstance(identity, dict):
        return step
    undated = {key: value for key, value in identity.items() if key != "captured_at"}
    if isinstance(identity.get("variants"), list):
        undated["variants"] = [
            {k: v for k, v in each.items() if k != "captured_at"}
            if isinstance(each, dict)
            else each
            for each in identity["variants"]
        ]
    return {**step, "identity": undated}


def _same_step(stored: dict[str, Any], brought: dict[str, Any]) -> bool:
    """Whether a stored step is the one a file brings: the same (when its identity was
    captured aside), or the file's step as
    written before identities (its element's role and name), to which a replay added the
    identity of the element it found by them, still of that role and name (a heal since,
    to another name, makes it another step)."""
    if stored == brought or _undated(stored) == _undated(brought):
        return True
    learned = stored.get("identity")
    if "identity" in brought or not isinstance(learned, dict):
        return False
    rest = {key: value for key, value in stored.items() if key != "identity"}
    return (
        rest == brought
        and learned.get("role") == brought.get("role")
        and learned.get("name") == brought.get("name")
    )
