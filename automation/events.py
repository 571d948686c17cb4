"""Typed events the engine emits while it works: the only contract between engine and UI.

Every event is a frozen dataclass with a dotted ``type`` (``action.finished``); the
dashboard maps that to a channel-layer message type and to the JavaScript that draws it.
``to_dict()`` gives the JSON form.  Events with ``persist = False`` (token deltas) are
relayed live but not stored; the full message follows as an ``llm.message``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

__all__ = [
    "ActionFinished",
    "ActionStarted",
    "ChecksProposed",
    "EvaluationFinished",
    "Event",
    "EventSink",
    "HandlerProposed",
    "LLMMessage",
    "LLMRetry",
    "LLMToken",
    "LLMWaiting",
    "ListSink",
    "Observation",
    "PageProblem",
    "RestoreStep",
    "RunFinished",
    "RunPaused",
    "RunResumed",
    "RunStarted",
    "ScreenshotTaken",
    "SessionClosed",
    "SessionIdle",
    "SessionRestored",
    "SessionRestoring",
    "StepRecorded",
    "StepReplayed",
    "UserMessage",
    "UserMessagesSeen",
]


@dataclass(frozen=True)
class Event:
    type: ClassVar[str] = "event"
    persist: ClassVar[bool] = True

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["type"] = self.type
        return data


@dataclass(frozen=True)
class RunStarted(Event):
    """Work begins: the task, or in a conversation what the person asked next (a new
    stretch of rounds).  ``said_before``: that message was already emitted as a
    ``user.message`` (sent while the agent was still working, or to a closed session)."""

    type: ClassVar[str] = "run.started"
    task: str
    start_url: str
    planner: str
    said_before: bool = False


@dataclass(frozen=True)
class LLMWaiting(Event):
    """A request went to the model; its answer is awaited (the run page counts the seconds
    from here until the round's ``llm.message`` or an ``llm.retry``)."""

    type: ClassVar[str] = "llm.waiting"
    round: int
    attempt: int = 1  # 1 for the first try of the round, 2 for the first retry ...


@dataclass(frozen=True)
class LLMRetry(Event):
    """A try failed for a passing reason and is made again after ``wait_ms``:
    "HTTP 500, retry 2 of 4 in 1.3 s".  ``discarded_chars``: the part of a reply that was
    already streamed live when its connection dropped; it is thrown away, and the page
    marks it so."""

    type: ClassVar[str] = "llm.retry"
    round: int
    retry: int  # 1 for the first retry
    retries: int  # how many there may be at most
    wait_ms: int
    reason: str  # "HTTP 500", "connection dropped mid-reply", ...
    discarded_chars: int = 0


@dataclass(frozen=True)
class LLMToken(Event):
    type: ClassVar[str] = "llm.token"
    persist: ClassVar[bool] = False
    round: int
    text: str


@dataclass(frozen=True)
class LLMMessage(Event):
    type: ClassVar[str] = "llm.message"
    round: int
    text: str
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class UserMessage(Event):
    type: ClassVar[str] = "user.message"
    text: str


@dataclass(frozen=True)
class UserMessagesSeen(Event):
    """The person's messages sent while the agent worked reached the model: the ``count``
    oldest ones still marked as waiting are now part of this round's prompt."""

    type: ClassVar[str] = "user.seen"
    round: int
    count: int


@dataclass(frozen=True)
class ActionStarted(Event):
    type: ClassVar[str] = "action.started"
    round: int
    index: int
    name: str
    args: dict[str, Any]
    # The action in words (automation.wording.Words.to_dict): verb, target, detail, text.
    words: dict[str, str] | None = None


@dataclass(frozen=True)
class ActionFinished(Event):
    type: ClassVar[str] = "action.finished"
    round: int
    index: int
    name: str
    args: dict[str, Any]
    ok: bool
    result: str = ""
    error: dict[str, str] | None = None
    duration_ms: int = 0
    steps: list[dict[str, Any]] | None = None  # a steps macro: each step's outcome
    words: dict[str, str] | None = None  # as ActionStarted's


@dataclass(frozen=True)
class EvaluationFinished(Event):
    """How a script of an evaluate action ran: the route it took (cdp, cdp_element or the
    playwright fallback, with the reason), how it ended, and whether it had to be stopped."""

    type: ClassVar[str] = "evaluate.finished"
    step_index: int
    route: str
    outcome: str
    duration_ms: int
    terminated: bool = False
    fallback_reason: str = ""
    error_code: str = ""


@dataclass(frozen=True)
class Observation(Event):
    """Feedback that goes back to the model without an action behind it (parse errors),
    or a replay's note.  ``before``: the replay step whose action it came before, while
    that step was under way (a handler cleared what covered its element): drawn before
    the step's action, though the step had started."""

    type: ClassVar[str] = "observation"
    round: int
    text: str
    error: dict[str, str] | None = None
    before: int | None = None


@dataclass(frozen=True)
class StepRecorded(Event):
    """One executed action as it belongs in the scenario: with its element's identity (and
    best selector) taken before it ran."""

    type: ClassVar[str] = "step.recorded"
    index: int
    action: str
    args: dict[str, Any]
    ref: str = ""
    role: str = ""
    name: str = ""
    selector: str = ""
    identity: dict[str, Any] | None = None  # ElementIdentity.to_dict()
    url: str = ""
    # Where it led: the page's address once it settled ("" when not known).  ``url`` is
    # the address after the step too for an agent's step, but not for a person's.
    led_to: str = ""
    # The write a click or a key sent ("POST /api/profile"; ScenarioStep.sent).
    sent: str = ""
    ok: bool = True
    error: dict[str, str] | None = None
    duration_ms: int = 0
    # "person": done by the person in the tab while the run was paused; "mcp": by an MCP
    # client; "replay": a scenario's step, its args the scenario's (placeholders and all).
    by: str = "agent"
    # A step of a called scenario (by="call"): the called scenario's name, and of those
    # calling it, from the outermost ("Nav > Sign in").
    call: str = ""
    words: dict[str, str] | None = None  # the step in words, as ActionStarted's
    # The dialogs answered as an earlier dialog step armed while it ran: [{"type",
    # "message"}]; the scenario's dialog step then answers that kind only (fromrun).
    dialogs: list[dict[str, str]] | None = None


@dataclass(frozen=True)
class StepReplayed(Event):
    """How replay did a scenario's step: found by which strategy, with what score and
    changes, and whether its identity was healed (see automation.recording.replay)."""

    type: ClassVar[str] = "replay.step"
    index: int
    action: str
    status: str  # passed | failed | needs_person | skipped
    strategy: str = ""
    score: float | None = None
    changes: list[str] = field(default_factory=list)
    heal: str = ""  # "" | confident | proposed
    healed: dict[str, Any] | None = None
    candidates: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, str] | None = None
    # A step of a called scenario (automation.recording.calls): ``index`` is its place in
    # that scenario, named here, and ``row`` the run's step (its step.recorded) it is.
    scenario: str = ""
    row: int | None = None


@dataclass(frozen=True)
class ChecksProposed(Event):
    """Outcome checks read from a run's final page, for the person saving it as a
    scenario to tick (see automation.recording.propose): each ``{"check": <expect step>,
    "why": text, "picked": bool}``."""

    type: ClassVar[str] = "checks.proposed"
    checks: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class HandlerProposed(Event):
    """A replay was blocked at step ``index`` by something over the page and a person
    cleared it: the handler that would clear it from now on (see
    automation.recording.handlers), for the person to keep: its ``name``, ``when`` (an
    element identity as JSON) and ``steps`` (scenario steps as JSON)."""

    type: ClassVar[str] = "replay.handler_proposed"
    index: int
    name: str
    when: dict[str, Any]
    steps: list[dict[str, Any]] = field(default_factory=list)
    words: list[str] = field(default_factory=list)  # each step in words (automation.wording)


@dataclass(frozen=True)
class ScreenshotTaken(Event):
    """A JPEG of the tab after a step; the dashboard stores the bytes and sends a link."""

    type: ClassVar[str] = "screenshot"
    step_index: int
    jpeg: bytes = field(repr=False)
    url: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "step_index": self.step_index, "url": self.url}


@dataclass(frozen=True)
class PageProblem(Event):
    """Something went wrong in one of the run's pages while it ran: a console error, an
    uncaught exception or a failed request (see automation.browser.problems).

    ``kind`` is "console", "pageerror" or "request", or "console_flood" when a page wrote
    its console faster than it is kept (``dropped``: how many were not, in its first second
    of dropping); a watcher that hit its limit ends
    with one of kind "summary" whose ``dropped`` says how many it did not report.  Kind
    "tabs" says the site opened more tabs than the run may hold (automation.browser.tabs):
    ``dropped`` is how many were closed so far.
    """

    type: ClassVar[str] = "page.problem"
    kind: str
    text: str  # the console text, the error message, or "GET <url> → 404"
    url: str = ""  # the request's URL, or where the message or error came from
    page_url: str = ""  # the tab's address when it happened
    level: str = ""  # console only: "error"
    status: int | None = None  # request only: the HTTP status, None when none came
    method: str = ""  # request only
    resource_type: str = ""  # request only: document, script, fetch, xhr, image ...
    dropped: int = 0  # summary: problems seen past the limit, not reported; tabs: closed;
    # console_flood: console messages not kept


@dataclass(frozen=True)
class RunPaused(Event):
    type: ClassVar[str] = "run.paused"
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class RunResumed(Event):
    type: ClassVar[str] = "run.resumed"


@dataclass(frozen=True)
class RunFinished(Event):
    type: ClassVar[str] = "run.finished"
    status: str  # "succeeded" | "failed" | "stopped"
    reason: str = ""
    summary: str = ""
    output: Any = None  # the data the task ended in, matching the run's output schema


@dataclass(frozen=True)
class SessionIdle(Event):
    """The work asked for is over and the tab stays open for the next message, for
    ``idle_s`` seconds (until ``closes_at_ms``, epoch ms)."""

    type: ClassVar[str] = "session.idle"
    idle_s: int
    closes_at_ms: int


@dataclass(frozen=True)
class SessionClosed(Event):
    """The conversation's browser context is closed (idle too long, closed by the person,
    over the open-session limit, the browser gone); a later message restores the page."""

    type: ClassVar[str] = "session.closed"
    reason: str


@dataclass(frozen=True)
class SessionRestoring(Event):
    """A closed session comes back: ``steps`` recorded steps are replayed to restore the
    page before the work goes on."""

    type: ClassVar[str] = "session.restoring"
    steps: int


@dataclass(frozen=True)
class RestoreStep(Event):
    """One step of a restore, as replayed (its ``index`` in the restore, not a run step)."""

    type: ClassVar[str] = "restore.step"
    index: int
    action: str
    what: str  # the step in words
    status: str  # passed | failed | needs_person | skipped
    strategy: str = ""
    error: dict[str, str] | None = None


@dataclass(frozen=True)
class SessionRestored(Event):
    """How the restore ended: all ``total`` steps replayed (``ok``), or where it stopped."""

    type: ClassVar[str] = "session.restored"
    ok: bool
    done: int
    total: int
    reason: str = ""
    stopped: bool = False  # the person stopped it (else, when not ok, it failed)


class EventSink(Protocol):
    async def emit(self, event: Event) -> None: ...


class ListSink:
    """Collects events in memory: for tests and library use."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def emit(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, cls: type[Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]
