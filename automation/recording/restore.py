"""Bring a closed session's page back: replay the steps a run recorded so far in a new tab.

A conversation keeps its browser tab between messages only for a while; after that the tab
is closed, and the next message first restores the page with :func:`restore_page`.  It is
a replay like any other (identities, healing, checks, a person's help when a step needs
it), of the scenario the recorded steps make (:func:`~automation.recording.fromrun.
from_run_steps`: failed steps left out), with its events translated for the conversation:
the steps it replays are not the run's steps, so no ``step.recorded`` or ``run.*`` event
of the replay's own leaves here, only ``session.restoring``, one ``restore.step`` per step
and ``session.restored``.  A pause for a person passes through unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from automation.browser.tab import Tab
from automation.control import RunControl
from automation.errors import TabwrightError
from automation.events import (
    Event,
    EventSink,
    RestoreStep,
    RunPaused,
    RunResumed,
    SessionRestored,
    SessionRestoring,
    StepReplayed,
)
from automation.recording.fromrun import from_run_steps
from automation.recording.replay import Replay, ReplayConfig
from automation.secrets import Secrets
from automation.wording import double_quoted

__all__ = ["Restored", "restore_page"]


@dataclass(frozen=True)
class Restored:
    ok: bool  # every step replayed (or nothing to replay)
    done: int  # steps replayed before it stopped
    total: int
    reason: str = ""  # where and why it stopped
    stopped: bool = False  # the person stopped it


class _RestoreSink:
    """The replay's events as a restore's: steps in words, pauses as they are."""

    def __init__(self, out: EventSink, describe: Sequence[str]) -> None:
        self.out = out
        self.describe = describe

    async def emit(self, event: Event) -> None:
        if isinstance(event, RunPaused | RunResumed):
            await self.out.emit(event)
        elif isinstance(event, StepReplayed):
            await self.out.emit(
                RestoreStep(event.index, event.action, self.describe[event.index],
                            event.status, event.strategy, event.error)
            )  # fmt: skip


async def restore_page(
    tab: Tab,
    rows: Sequence[Mapping[str, Any]],
    *,
    base_url: str = "",
    sink: EventSink,
    control: RunControl | None = None,
    secrets: Secrets | None = None,
    config: ReplayConfig | None = None,
) -> Restored:
    """Replay ``rows`` (a run's recorded steps, as stored) in ``tab``; ``base_url`` is
    where the run started.  Secrets in typed values are read again (``secrets``)."""
    try:
        scenario = from_run_steps(rows, name="restore", base_url=base_url)
    except TabwrightError as exc:  # steps that can't be read as a scenario any more
        reason = f"the steps can't be replayed: {exc}"
        return await _ended(sink, Restored(False, 0, len(rows), reason))
    total = len(scenario.steps)
    await sink.emit(SessionRestoring(total))
    if not total:
        return await _ended(sink, Restored(True, 0, 0))
    try:  # a secret no longer granted, a value that reads as a missing parameter
        # A password the run typed is kept only as the secret named after its field,
        # which no one may have: the restore asks the person to type it at that step.
        replay = Replay(
            tab, scenario, base_url=base_url, config=config or ReplayConfig(), control=control,
            sink=_RestoreSink(sink, [str(step.words(double_quoted)) for step in scenario.steps]),
            secrets=secrets, ask_for_secrets=True,
        )  # fmt: skip
    except TabwrightError as exc:
        return await _ended(sink, Restored(False, 0, total, str(exc)))
    result = await replay.run()
    done = sum(1 for step in result.steps if step.ok)
    reason = "" if result.ok else result.reason
    at = next((step.index for step in result.steps if not step.ok), None)
    if result.status == "stopped" and at is not None:  # a stop's reason says why, not where
        reason = f"step {at} ({scenario.steps[at].describe()}): {reason}"
    stopped = result.status == "stopped"
    return await _ended(sink, Restored(result.ok, done, total, reason, stopped))


async def _ended(sink: EventSink, restored: Restored) -> Restored:
    await sink.emit(
        SessionRestored(restored.ok, restored.done, restored.total, restored.reason,
                        restored.stopped)
    )  # fmt: skip
    return restored
