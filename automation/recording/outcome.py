"""What a replay reports: each step's :class:`StepOutcome` and the :class:`ReplayResult`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from automation.errors import NeedsPerson
from automation.events import StepRecorded
from automation.recording.params import unfill, unfill_url
from automation.recording.rebase import rebase, rebase_identity
from automation.recording.secretfree import without_secrets
from automation.wording import double_quoted, step_words

if TYPE_CHECKING:
    from automation.browser.identity import ElementIdentity, Located
    from automation.errors import TabwrightError
    from automation.recording.replay import Replay
    from automation.recording.scenario import ScenarioStep

__all__ = ["ReplayResult", "StepOutcome", "event_fields", "every_outcome", "replayed_record",
           "step_outcome", "written_back"]  # fmt: skip


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
    # A call step's: how each step of the scenario it called did.
    inner: list[StepOutcome] = field(default_factory=list)
    called: str = ""  # the name of the scenario it called

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
            **(
                {"called": self.called, "inner": [s.to_dict() for s in self.inner]}
                if self.called
                else {}
            ),
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


def every_outcome(
    steps: list[StepOutcome], scenario: str = ""
) -> Iterator[tuple[str, StepOutcome]]:
    """Each step's outcome with the scenario it is a step of ("" for the replayed one),
    those of the scenarios its call steps called after each call step."""
    for outcome in steps:
        yield scenario, outcome
        if outcome.called:
            yield from every_outcome(outcome.inner, outcome.called)


def event_fields(outcome: StepOutcome) -> dict[str, Any]:
    """The fields of a ``replay.step`` event (StepReplayed) for ``outcome``."""
    data = outcome.to_dict()
    for key in ("result", "url", "duration_ms", "called", "inner"):
        data.pop(key, None)
    return data


def step_outcome(
    replay: Replay,
    index: int,
    step: ScenarioStep,
    status: str,
    located: Located | None,
    error: TabwrightError | None,
    error_dict: dict[str, str] | None,
    result: str,
    duration_ms: int,
) -> StepOutcome:
    """How step ``index`` of ``replay`` did: how its element was found, what changed, and
    whether its identity heals (confident) or waits for a person (proposed)."""
    common: dict[str, Any] = {
        "error": error_dict, "result": result, "duration_ms": duration_ms, "url": replay.tab.url,
    }  # fmt: skip
    if isinstance(error, NeedsPerson):
        return StepOutcome(index, step.action, status, candidates=error.candidates, **common)
    if located is None or not located.ok or located.found is None:
        return StepOutcome(index, step.action, status, **common)
    changes = list(located.changes)
    if located.variant:
        changes.insert(0, f"found as its variant {located.variant} (an earlier release)")
    if step.identity is None:
        changes.insert(0, "stored before identities: found by its selector")
    heal = ""
    changed = bool(located.changes) or step.identity is None
    if changed and status == "passed":  # a failed step may have found another element
        confident = located.strategy not in ("similarity", "coordinates") or (
            located.strategy == "similarity" and located.score >= replay.config.heal_min_score
        )
        heal = "confident" if confident else "proposed"
    healed = written_back(replay, step, located.found) if heal else None
    return StepOutcome(
        index, step.action, status, strategy=located.strategy, score=located.score,
        changes=changes, heal=heal, healed=healed.to_dict() if healed else None, **common,
    )  # fmt: skip


def written_back(replay: Replay, step: ScenarioStep, found: ElementIdentity) -> ElementIdentity:
    """``found`` (an element as ``replay`` saw it for ``step``) in the scenario's terms: its
    parameters' placeholders where their values stand (:func:`unfill`), where it leads
    on the origin the scenario was recorded on, and no text that shows a secret (what
    the stored identity had there, or nothing: automation.recording.secretfree).  A heal
    is written back so, and a replay's steps are recorded so: a scenario saved from that
    replay, replayed with another value, looks for that value's row, not for the one this
    replay was given, nor for a row that shows ``${SECRET:…}``."""
    free = without_secrets(step.identity, found, replay.run_secrets)
    moved = rebase_identity(free, replay.base_url, replay.scenario.base_url)
    return unfill(step.identity, moved, replay.values.params)


def replayed_record(
    replay: Replay, index: int, step: ScenarioStep, element: ElementIdentity | None, *,
    url: str, led_to: str, error: dict[str, Any] | None = None, duration_ms: int = 0,
) -> StepRecorded:  # fmt: skip
    """The record of ``replay``'s step ``index``, done (or tried, with ``error``) on
    ``element``, at ``url`` and leading to ``led_to``: in the scenario's terms, as its
    args are (placeholders and all: automation.recording.fromrun), its element and its
    addresses :func:`written_back` (a value in an address as a form sends it)."""
    shown = dict(step.args)
    seen = element  # the words say what the person watching saw it as
    element = written_back(replay, step, element) if element is not None else None

    def address(live: str, stored: str) -> str:
        moved = rebase(live, replay.base_url, replay.scenario.base_url)
        return unfill_url(stored, moved, replay.values.params)

    return StepRecorded(
        index=index,
        action=step.action,
        args=shown,
        role=element.role if element else "",
        name=element.name if element else "",
        selector=element.selectors[0] if element and element.selectors else "",
        identity=element.to_dict() if element else None,
        url=address(url, step.url),
        led_to=address(led_to, step.led_to or step.url),
        sent=step.sent,  # (as recorded: what a replay of it judges the step by)
        ok=error is None,
        error=error,
        duration_ms=duration_ms,
        by="replay",
        words=step_words(step.action, shown, seen or step.target(), quote=double_quoted).to_dict(),
    )
