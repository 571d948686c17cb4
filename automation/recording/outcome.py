"""What a replay reports: each step's :class:`StepOutcome` and the :class:`ReplayResult`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ReplayResult", "StepOutcome", "event_fields", "every_outcome"]


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
