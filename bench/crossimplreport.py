"""What a cross-implementation run (bench/crossimpl.py) finds: each recording, each
pair's replay judged step by step, and how they are printed and summed up."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from automation import Scenario

PARTS = ("new_todo", "toggle", "filter_active")


@dataclass
class StepVerdict:
    index: int
    action: str
    part: str  # what the step was about when it was recorded
    verdict: str  # correct | wrong | abstain
    found: str = ""  # the part the element found on the replayed app is ("other: <html>")
    strategy: str = ""
    status: str = ""  # the replay's status of the step

    def short(self) -> str:
        how = f"({self.strategy})" if self.strategy else ""
        if self.found.endswith("(detached)"):
            how += "(detached)"  # the page replaced it right after locate found it
        return f"{self.index}:{self.action}/{self.part}={self.verdict}{how}"


@dataclass
class Recording:
    app: dict[str, Any]
    scenario: Scenario
    parts: list[str]  # per step: the part the person's action was about ("" for page steps)
    recorded_as: list[str]  # per step: the part its identity finds on the app right after
    state: Any = None  # the app's __crossimplState() after the task
    ok: bool = False  # the state is the goal
    error: str = ""  # the person could not do the task (a corpus bug)

    @property
    def element_steps(self) -> list[int]:
        return [i for i, s in enumerate(self.scenario.steps) if s.needs_element]

    @property
    def missing(self) -> list[str]:
        """Parts the person acted on that no recorded step is about (a recorder gap)."""
        return [p for p in PARTS if p not in self.parts]


@dataclass
class PairResult:
    source: str
    target: str
    status: str  # the replay's: passed | failed | needs_person | stopped | error
    reason: str
    task_ok: bool
    state: Any
    steps: list[StepVerdict] = field(default_factory=list)
    duration_ms: int = 0
    unjudged: int = 0  # element steps that passed without a locate the judge saw

    @property
    def false_green(self) -> bool:
        return self.status == "passed" and not self.task_ok


def _reason_kind(reason: str) -> str:
    """A replay's reason without its step number, names and values, to count alike ones."""
    reason = re.sub(r"^step \d+ \((\w+)[^:]*\): ", r"\1: ", reason)
    reason = re.sub(r"^(\w+: )step \d+ \(.*?\): ", r"\1", reason)
    reason = re.sub(r"'[^']*'|\"[^\"]*\"", "…", reason)
    reason = re.sub(r"\d+", "N", reason)
    return reason[:110] or "(none)"


def state_brief(state: Any) -> str:
    """An app's state in a few words: ``[Buy milk (done), Walk the dog] filter=all``."""
    if not isinstance(state, dict):
        return f"state={state!r}"
    items = ", ".join(
        f"{i.get('title')}{' (done)' if i.get('done') else ''}" for i in state.get("items", [])
    )
    return f"[{items}] filter={state.get('filter')}"


def share(n: int, total: int) -> float:
    return n / total if total else 0.0


def print_recording(rec: Recording) -> None:
    mark = "ok " if rec.ok else "BAD"
    print(f"{mark} record {rec.app['id']}: {len(rec.scenario.steps)} steps"
          + (f"  ERROR {rec.error}" if rec.error else "")
          + (f"  NO STEP for {', '.join(rec.missing)}" if rec.missing else "")
          + ("" if rec.ok else f"  state={json.dumps(rec.state)}"))  # fmt: skip
    for i, step in enumerate(rec.scenario.steps):
        part = rec.parts[i] if i < len(rec.parts) else ""
        seen = rec.recorded_as[i] if i < len(rec.recorded_as) else ""
        odd = "  <-- recorded as " + seen if part and seen != part else ""
        what = step.summary() + (f" = {step.args['checked']}" if "checked" in step.args else "")
        print(f"      {i}: {what[:70]:70} {part}{odd}")
        if step.note:
            print(f"         note: {step.note}")


def summaries(apps: list[dict[str, Any]], pairs: list[PairResult]) -> None:
    by_id = {a["id"]: a for a in apps}
    print("by target app (replayed on):")
    for app in apps:
        mine = [p for p in pairs if p.target == app["id"]]
        if not mine:
            continue
        verdicts = Counter(v.verdict for p in mine for v in p.steps)
        reasons = Counter(_reason_kind(p.reason) for p in mine if not p.task_ok)
        top = reasons.most_common(1)[0] if reasons else ("", 0)
        print(
            f"  {app['id']:14} task_ok={sum(p.task_ok for p in mine)}/{len(mine)}"
            f" correct={verdicts['correct']} wrong={verdicts['wrong']}"
            f" abstain={verdicts['abstain']}  {top[1]}x {top[0]}"
        )
    print("by source app (recorded on):")
    for app in apps:
        mine = [p for p in pairs if p.source == app["id"]]
        if mine:
            print(f"  {app['id']:14} task_ok={sum(p.task_ok for p in mine)}/{len(mine)}")
    print("by kind of the target app:")
    kinds = sorted({k for a in apps for k in a["kinds"]})
    for kind in kinds:
        mine = [p for p in pairs if kind in by_id[p.target]["kinds"]]
        if not mine:
            continue
        verdicts = Counter(v.verdict for p in mine for v in p.steps)
        reasons = Counter(_reason_kind(p.reason) for p in mine if not p.task_ok)
        top = "; ".join(f"{n}x {r}" for r, n in reasons.most_common(2))
        print(
            f"  {kind:28} task_ok={sum(p.task_ok for p in mine):3}/{len(mine):<3}"
            f" wrong={verdicts['wrong']:<3} abstain={verdicts['abstain']:<3} {top}"
        )
    print("by part:")
    for part in PARTS:
        mine = [v for p in pairs for v in p.steps if v.part == part]
        verdicts = Counter(v.verdict for v in mine)
        not_run = sum(v.status in ("", "not_run") for v in mine)
        print(
            f"  {part:14} correct={verdicts['correct']} wrong={verdicts['wrong']}"
            f" abstain={verdicts['abstain']} (needs_person={verdicts['abstain'] - not_run}"
            f" not_run={not_run})"
        )
    wrong = Counter(
        f"{v.part} -> {v.found[:60]}" for p in pairs for v in p.steps if v.verdict == "wrong"
    )
    if wrong:
        print("wrong elements (meant -> found):")
        for what, n in wrong.most_common(8):
            print(f"  {n:3}x {what}")
    reasons = Counter(_reason_kind(p.reason) for p in pairs if p.status != "passed")
    print("replay reasons:")
    for reason, n in reasons.most_common(8):
        print(f"  {n:3}x {reason}")
    greens = [f"{p.source}->{p.target}" for p in pairs if p.false_green]
    if greens:
        print("false green: " + " ".join(greens))
    unjudged = sum(p.unjudged for p in pairs)
    if unjudged:
        print(f"WARNING: {unjudged} steps passed without a locate the judge saw")
