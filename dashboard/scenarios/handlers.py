"""A scenario's interruption handlers (automation.recording.handlers): kept on the
scenario as its file format writes them, written on its page or through the API, or
learned from a replay where a person cleared an interruption on the live view (the run's
``replay.handler_proposed`` event: "handle this from now on").

Every write reads the whole scenario back through its format, so a handler that can't be
used is refused with HandlerInvalid (nothing is stored) and the file an export writes is
always one the import reads."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from automation.errors import HandlerInvalid, ScenarioInvalid
from automation.recording import scenario as fmt
from automation.recording.handlers import Handler
from dashboard.models import Run, Scenario
from dashboard.scenarios import selectors as scenario_selectors

__all__ = [
    "PROPOSED",
    "HandlerRow",
    "Proposal",
    "handler_from_words",
    "handler_rows",
    "run_handler_proposals",
    "scenario_handler_learn",
    "scenario_handler_remove",
    "scenario_handler_save",
    "scenario_handlers",
    "scenario_handlers_set",
]

PROPOSED = "replay.handler_proposed"


@dataclass(frozen=True)
class HandlerRow:
    """A handler as the scenario page shows it."""

    name: str
    looks: str  # what the interruption looks like, in words
    steps: list[str]  # each step in words
    simple: dict[str, str] | None  # the form's fields, when one click clears it
    shown: str = ""  # what the page showed of it (its "Change" form refuses a stale one)


@dataclass(frozen=True)
class Proposal:
    """A handler a replay proposed: its event's ``seq``, and whether the scenario keeps
    one of that name now."""

    seq: int
    index: int
    name: str
    steps: list[str]
    kept: bool


def scenario_handlers(*, scenario: Scenario) -> tuple[Handler, ...]:
    return scenario_selectors.scenario_document(scenario=scenario).handlers


def scenario_handlers_set(*, scenario: Scenario, handlers: object) -> tuple[Handler, ...]:
    """Replace the scenario's handlers with ``handlers`` (the format's list), checked
    whole: HandlerInvalid names the handler and what is wrong, and nothing changes."""
    with transaction.atomic():
        locked = Scenario.objects.select_for_update().get(pk=scenario.pk)
        data = {**scenario_selectors.scenario_data(scenario=locked), "handlers": handlers}
        document = fmt.Scenario.from_dict(data)
        locked.handlers = [h.to_dict() for h in document.handlers]
        locked.save(update_fields=["handlers", "updated_at"])
        scenario.handlers = locked.handlers
        return document.handlers


def shown_as(handler: dict[str, Any]) -> str:
    """A handler as a page showed it, in a few characters: a form sent from a page shown
    before another tab changed the handler carries another."""
    text = json.dumps(handler, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def scenario_handler_save(
    *, scenario: Scenario, handler: dict[str, Any], replaces: str = "", shown: str = ""
) -> Handler:
    """Add ``handler``, or put it in the place of the handler named ``replaces`` (or of
    one of its own name).  ``shown`` (:func:`shown_as`): the replaced handler as the page
    showed it; HandlerInvalid when it changed since (nothing is saved)."""
    with transaction.atomic():
        locked = Scenario.objects.select_for_update().get(pk=scenario.pk)
        current = [dict(h) for h in locked.handlers]
        if shown and replaces:  # read as the page read it (the format's own form)
            listed = scenario_selectors.scenario_document(scenario=locked).handlers
            was = next((h for h in listed if h.name.casefold() == replaces.casefold()), None)
            if was is None or shown_as(was.to_dict()) != shown:
                raise HandlerInvalid(
                    f"handler {replaces!r} changed since this page was shown (in another "
                    "tab?); nothing was changed: look again and retry"
                )
        names = {str(replaces).casefold(), str(handler.get("name", "")).strip().casefold()}
        at = next((i for i, h in enumerate(current)
                   if str(h.get("name", "")).casefold() in names), None)  # fmt: skip
        if at is None:
            current.append(handler)
        else:
            current[at] = handler
            current = [h for i, h in enumerate(current)
                       if i == at or str(h.get("name", "")).casefold() not in names]  # fmt: skip
        kept = scenario_handlers_set(scenario=scenario, handlers=current)
    wanted = str(handler.get("name", "")).strip().casefold()
    return next(h for h in kept if h.name.casefold() == wanted)


def scenario_handler_remove(*, scenario: Scenario, name: str) -> None:
    current = list(Scenario.objects.get(pk=scenario.pk).handlers)
    kept = [h for h in current if str(h.get("name", "")).casefold() != name.casefold()]
    if len(kept) == len(current):
        raise HandlerInvalid(f"the scenario has no handler named {name!r}")
    scenario_handlers_set(scenario=scenario, handlers=kept)


def handler_from_words(
    *, name: str, role: str, looks_name: str, clear_role: str, clear_name: str
) -> dict[str, Any]:
    """A handler as a person writes it on the scenario page: the interruption by its role
    and name ("dialog", "What's new"), cleared by one click on a control by its role and
    name ("button", "Got it")."""
    return {
        "name": name,
        "when": {"role": role.strip(), "name": looks_name.strip()},
        "steps": [{"action": "click", "args": {},
                   "identity": {"role": clear_role.strip(), "name": clear_name.strip()}}],
    }  # fmt: skip


def handler_rows(*, document: fmt.Scenario) -> list[HandlerRow]:
    rows = []
    for handler in document.handlers:
        when = handler.when
        looks = (
            f"{when.role or when.tag or 'element'} '{when.name or when.aria_label or when.text}'"
        )
        steps = [s.describe() for s in handler.steps]
        first = handler.steps[0].target() if len(handler.steps) == 1 else None
        simple = None
        if first is not None and handler.steps[0].action == "click" and when.role and when.name:
            simple = {"name": handler.name, "role": when.role, "looks_name": when.name,
                      "clear_role": first.role, "clear_name": first.name}  # fmt: skip
        rows.append(HandlerRow(handler.name, looks, steps, simple, shown_as(handler.to_dict())))
    return rows


def run_handler_proposals(*, run: Run) -> list[Proposal]:
    """The handlers the run's replay proposed, in order."""
    kept = set()
    if run.scenario_id is not None:
        scenario = Scenario.objects.filter(pk=run.scenario_id).only("handlers").first()
        kept = {str(h.get("name", "")).casefold() for h in (scenario.handlers if scenario else [])}
    out = []
    for seq, data in run.events.filter(type=PROPOSED).order_by("seq").values_list("seq", "data"):
        steps = [_step_words(s) for s in data.get("steps", [])]
        name = str(data.get("name", ""))
        out.append(Proposal(seq, int(data.get("index", 0)), name, steps,
                            name.casefold() in kept))  # fmt: skip
    return out


def scenario_handler_learn(*, run: Run, seq: int, name: str = "") -> tuple[Scenario, Handler]:
    """Keep the handler the run proposed in its event ``seq`` on the run's scenario
    ("handle this from now on"), under ``name`` if given; one of the same name is
    replaced."""
    event = run.events.filter(seq=seq, type=PROPOSED).first()
    if event is None:
        raise HandlerInvalid(f"run {run.pk} proposed no handler at event {seq}")
    scenario = Scenario.objects.filter(pk=run.scenario_id).first()
    if scenario is None:
        raise HandlerInvalid(f"run {run.pk} replays no scenario that is still there")
    data = event.data
    handler = {"name": name.strip() or data.get("name", ""), "when": data.get("when"),
               "steps": data.get("steps")}  # fmt: skip
    return scenario, scenario_handler_save(scenario=scenario, handler=handler)


def _step_words(data: object) -> str:
    try:
        return fmt.ScenarioStep.from_dict(data).describe()
    except ScenarioInvalid:
        return "a step that can't be read"
