"""Scenarios that call scenarios: the ``call`` step.

A step ``{"action": "call", "args": {"scenario": "Sign in", "params": {"user": "${email}"}}}``
runs the scenario named "Sign in" at that point of the replay, in the same tab, with its
parameter ``user`` given the caller's ``${email}`` (a literal works as well; a parameter
of the callee not given takes its default).  A secret is never passed: a callee types
its own ``${SECRET:…}`` and ``${TOTP:…}``, granted to the run as the caller's are.

The callee is referred to by name.  A scenario document carries the scenarios it calls,
transitively, in ``callees`` (name -> scenario): the dashboard fills them from the
stored scenarios (each stored once, so a heal of a callee's step holds for every caller),
an exported file holds them so that it replays alone.  A file's ``callees`` also bring
its login scenario (``login_scenario``) and the scenarios that one calls, so that
whoever imports it gets them too: :func:`called` is what its call steps reach.
:func:`check_calls` refuses, with a typed error before any step runs, a call of a
scenario it does not have (:class:`~automation.errors.CallMissing`), a cycle
(:class:`~automation.errors.CallCycle`: A calls B calls A), a parameter the callee does
not have, or one it needs and is not given.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from automation.errors import CallCycle, CallMissing, ParamMissing, ScenarioInvalid
from automation.events import (
    ActionFinished,
    ActionStarted,
    Event,
    EventSink,
    Observation,
    RunFinished,
    RunStarted,
    ScreenshotTaken,
    StepRecorded,
    StepReplayed,
)

if TYPE_CHECKING:
    from automation.recording.scenario import Scenario

__all__ = ["CALL", "MAX_DEPTH", "CallFrame", "brought_login", "brought_names", "call_args",
           "called", "callee_names", "check_calls", "read_callees"]  # fmt: skip

CALL = "call"
MAX_DEPTH = 10  # calls within calls: deeper is refused as a cycle would be
MAX_NAME_CHARS = 200
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # fullmatch: "$" would let a name end in "\n"
_SECRET = re.compile(r"\$\{(?:SECRET|TOTP):")
_BREAKS = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


def call_args(args: Mapping[str, Any], *, where: str, index: int) -> dict[str, Any]:
    """A call step's args, checked: ``scenario`` (a name) and ``params`` (name -> text)."""
    unknown = set(args) - {"scenario", "params"}
    if unknown:
        raise ScenarioInvalid(f"{where}: call takes no {', '.join(sorted(unknown))}",
                              index=index, hint="it takes scenario and params")  # fmt: skip
    name = args.get("scenario")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS:
        raise ScenarioInvalid(f"{where}: call needs the scenario's name (1 to "
                              f"{MAX_NAME_CHARS} characters)", index=index)  # fmt: skip
    if _BREAKS.search(name):
        raise ScenarioInvalid(f"{where}: the called scenario's name holds a control character",
                              index=index)  # fmt: skip
    params = args.get("params", {})
    if not isinstance(params, dict):
        raise ScenarioInvalid(f"{where}: call params must be an object of name -> value",
                              index=index)  # fmt: skip
    clean: dict[str, str] = {}
    for key, value in params.items():
        if not isinstance(key, str) or not _PARAM.fullmatch(key):
            raise ScenarioInvalid(f"{where}: call params: {key!r} is not a parameter name",
                                  index=index)  # fmt: skip
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or len(value) > 10_000 or _BREAKS.search(value):
            raise ScenarioInvalid(f"{where}: call param {key!r} must be one line of text",
                                  index=index)  # fmt: skip
        if _SECRET.search(value):
            raise ScenarioInvalid(
                f"{where}: call param {key!r} can't pass a secret", index=index,
                hint="the called scenario types its own ${SECRET:…} (secrets are the run's)",
            )  # fmt: skip
        clean[key] = value
    return {"scenario": name.strip(), "params": clean}


def callee_names(scenario: Scenario) -> list[str]:
    """The names the scenario's own call steps call, in order, each once."""
    names: list[str] = []
    for step in scenario.steps:
        if step.action == CALL and step.args["scenario"] not in names:
            names.append(step.args["scenario"])
    return names


def brought_names(scenario: Scenario) -> list[str]:
    """The names of the scenarios a file of ``scenario`` brings for it, in order: those its
    call steps call, then its login scenario."""
    names = callee_names(scenario)
    login = scenario.login_scenario
    return [*names, login] if login and login not in names else names


def brought_login(scenario: Scenario) -> Scenario | None:
    """The login scenario ``scenario`` brings, ready to replay on its own: named as
    ``scenario`` names it, with the scenarios ``scenario`` brings (those it calls), and no
    login scenario of its own (it never signs in again with itself).  None when it brings
    none, or names itself."""
    name = scenario.login_scenario
    login = scenario.callees.get(name) if name and name != scenario.name else None
    if login is None:
        return None
    return replace(login, name=name, callees=scenario.callees, login_scenario="")


def called(scenario: Scenario) -> dict[str, Scenario]:
    """The scenarios of its ``callees`` that its call steps reach, and theirs, by name
    (its login scenario, when no step calls it, is not one of them)."""
    found: dict[str, Scenario] = {}
    todo = [scenario]
    while todo:
        for name in callee_names(todo.pop()):
            callee = scenario.callees.get(name)
            if callee is not None and name not in found and name != scenario.name:
                found[name] = callee
                todo.append(callee)
    return {name: callee for name, callee in scenario.callees.items() if name in found}


def check_calls(scenario: Scenario, *, missing_ok: bool = False) -> None:
    """Every call of ``scenario`` and its callees can run: the callee is in its
    ``callees`` (CallMissing, unless ``missing_ok``: a file whose callees a server
    resolves), no scenario calls itself through others (CallCycle), each call passes
    only parameters its callee has."""
    for chain, index, callee in _walk(scenario, (scenario.name,), missing_ok):
        call = chain[-1]  # the caller's name
        if callee is None:
            continue
        known = callee.placeholders()[0] | set(callee.params)
        step = _call_step(scenario, chain, index)
        extra = sorted(set(step.args["params"]) - known)
        if extra:
            raise ScenarioInvalid(
                f"step {index} of {call!r}: {callee.name!r} has no parameter "
                f"{', '.join(extra)}", index=index,
                hint=f"its parameters: {', '.join(sorted(known)) or 'none'}",
            )  # fmt: skip
        needed = {name for name in callee.placeholders()[0]
                  if (callee.params.get(name) or {}).get("default") is None}  # fmt: skip
        unset = sorted(needed - set(step.args["params"]))
        if unset:
            raise ParamMissing(
                f"step {index} of {call!r}: the call gives {callee.name!r} no value for "
                f"{', '.join(unset)}", index=index,
                hint="give it in the call's params, or a default in the called scenario",
            )  # fmt: skip


def _call_step(scenario: Scenario, chain: tuple[str, ...], index: int) -> Any:
    owner = scenario if len(chain) == 1 else scenario.callees[chain[-1]]
    return owner.steps[index]


def _walk(
    scenario: Scenario, chain: tuple[str, ...], missing_ok: bool
) -> Iterator[tuple[tuple[str, ...], int, Scenario | None]]:
    """Each call step under ``chain`` (the names from the top down to the caller), its
    index and its callee (None when missing and ``missing_ok``)."""
    caller = scenario if len(chain) == 1 else scenario.callees[chain[-1]]
    for index, step in enumerate(caller.steps):
        if step.action != CALL:
            continue
        name = step.args["scenario"]
        if name in chain:
            loop = " calls ".join(repr(n) for n in (*chain[chain.index(name) :], name))
            raise CallCycle(f"step {index} of {chain[-1]!r}: a cycle of calls: {loop}",
                            index=index, hint="a scenario can't call itself, not even "
                            "through others")  # fmt: skip
        if len(chain) > MAX_DEPTH:
            raise CallCycle(f"calls go deeper than {MAX_DEPTH} scenarios: "
                            + " calls ".join(repr(n) for n in chain), index=index)  # fmt: skip
        callee = scenario.callees.get(name)
        if callee is None:
            if missing_ok:
                yield chain, index, None
                continue
            raise CallMissing(
                f"step {index} of {chain[-1]!r} calls {name!r}, which is not there",
                index=index, hint="save or import the called scenario first (by that name)",
            )  # fmt: skip
        yield chain, index, callee
        yield from _walk(scenario, (*chain, name), missing_ok)


MAX_CALLEES = 50


def read_callees(data: object, read: Callable[[object], Scenario]) -> dict[str, Scenario]:
    """A file's ``callees`` (name -> scenario, each read by ``read``): every scenario its
    call steps call, and those theirs call, and its login scenario and those it calls,
    side by side."""
    if not isinstance(data, dict):
        raise ScenarioInvalid("callees must be an object of name -> scenario")
    if len(data) > MAX_CALLEES:
        raise ScenarioInvalid(f"too many callees ({len(data)}; at most {MAX_CALLEES})")
    out: dict[str, Scenario] = {}
    for name, callee in data.items():
        if isinstance(callee, dict) and "callees" in callee:
            raise ScenarioInvalid(f"callee {name!r}: its callees go in the file's own callees")
        try:
            scenario = read(callee)
        except ScenarioInvalid as exc:
            raise ScenarioInvalid(f"callee {name!r}: {exc.message}", hint=exc.hint) from None
        if scenario.name != name:
            raise ScenarioInvalid(f"callee {name!r} is named {scenario.name!r}")
        out[name] = scenario
    return out


class CallFrame:
    """Where the replay of a called scenario says what it does: the run's own events,
    its steps numbered after every step of the replayed scenario (``rows``, shared by
    every call of the replay, so that each is a step of the run of its own), each marked
    with the scenario it is a step of."""

    def __init__(self, out: EventSink, names: tuple[str, ...], rows: Iterator[int]) -> None:
        self.out = out  # the outermost replay's (never another frame: numbers are the run's)
        self.names = names
        self.rows = rows
        self._row_of: dict[int, int] = {}

    def under(self, name: str) -> CallFrame:
        """The frame of a scenario this one calls."""
        return CallFrame(self.out, (*self.names, name), self.rows)

    def row(self, index: int) -> int:
        if index not in self._row_of:
            self._row_of[index] = next(self.rows)
        return self._row_of[index]

    async def emit(self, event: Event) -> None:
        if isinstance(event, ActionStarted | ActionFinished):
            event = replace(event, index=self.row(event.index))
        elif isinstance(event, StepRecorded):
            by = "call" if event.by in ("agent", "replay") else event.by
            event = replace(event, index=self.row(event.index), by=by,
                            call=" > ".join(self.names))  # fmt: skip
        elif isinstance(event, StepReplayed):
            event = replace(event, scenario=self.names[-1], row=self.row(event.index))
        elif isinstance(event, Observation) and event.before is not None:
            event = replace(event, before=self.row(event.before))
        elif isinstance(event, ScreenshotTaken):
            event = replace(event, step_index=self.row(event.step_index))
        elif isinstance(event, RunStarted | RunFinished):
            return  # the run's own start and end are the outermost replay's
        await self.out.emit(event)
