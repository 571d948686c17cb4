"""Every channel-layer message of the dashboard, as a TypedDict, each made by a small
constructor (no literal message dicts elsewhere).

To the workers' channel (dashboard.runs.doorbell):

- ``runs.wake``: a run was queued, or room was made.

A call for a live run, to the channel of the worker that holds it (dashboard.runs.carry):
``run.command``, ``run.act``, ``run.input`` (a live-view click, key or text),
``run.mcp`` (an MCP client's tool call) and ``run.signin`` (save the tab's sign-in),
each sent with a call ``id``, the ``reply_to`` channel its answer goes to and what is
left of the caller's budget (``timeout_ms``);
``run.cancel`` when the caller stops waiting; the answer comes back as ``run.answer``.
A page on another process watching the run: ``run.watch`` (renewed) and ``run.unwatch``.

To the group ``run_<id>`` that the run's open pages joined (or to one page's channel):
``run.event`` (an engine event, as stored), ``run.frame`` (a live-view picture),
``run.tabs`` (the run's open tabs, for the live view's tab strip) and ``run.queue`` (a
queued run's place in the queue).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "ActMessage", "Answer", "AnswerError", "AnswerMessage", "CallMessage", "CancelMessage",
    "CommandMessage", "EventMessage", "FrameMessage", "InputMessage", "McpMessage",
    "PausingMessage", "QueueMessage", "SchedulesDueMessage", "SigninMessage", "TabsMessage",
    "UnwatchMessage", "WakeMessage", "WatchMessage", "act_message", "answer_message",
    "cancel_message", "command_message", "event_message", "frame_message", "input_message",
    "mcp_message", "pausing_message", "queue_message", "schedules_due_message",
    "signin_message", "tabs_message", "unwatch_message", "wake_message", "watch_message",
]  # fmt: skip


class WakeMessage(TypedDict):
    type: Literal["runs.wake"]


class SchedulesDueMessage(TypedDict):
    """A schedule was made due now (Run now): the worker that hears it fires it."""

    type: Literal["schedules.due"]


# -- calls for a live run, and their answers ----------------------------------------------


class _Call(TypedDict):
    run_id: int
    # Set when the call is sent to the worker that holds the run (dashboard.runs.carry):
    id: NotRequired[str]  # the call's, for its answer and a cancel
    reply_to: NotRequired[str]  # the caller's channel for the answer
    timeout_ms: NotRequired[float]  # what is left of the caller's budget


class CommandMessage(_Call):
    """pause, resume, stop, reply, extend, message or close (RunManager.command)."""

    type: Literal["run.command"]
    command: str
    text: str
    rounds: int


class ActMessage(_Call):
    """One action by the person on a paused run's tab (RunManager.act)."""

    type: Literal["run.act"]
    action: str
    args: dict[str, Any]


class InputMessage(_Call):
    """A click, scroll, key or text on the live view (RunManager.person_input)."""

    type: Literal["run.input"]
    event: dict[str, Any]


class McpMessage(_Call):
    """A tool call of the MCP session that is the run (RunManager.mcp_call)."""

    type: Literal["run.mcp"]
    name: str
    args: dict[str, Any]


class SigninMessage(_Call):
    """Save the signed-in state of the run's tab as its owner's profile ``name``
    (RunManager.save_signin): the worker reads and encrypts it, it never travels."""

    type: Literal["run.signin"]
    name: str


CallMessage = CommandMessage | ActMessage | InputMessage | McpMessage | SigninMessage


class CancelMessage(TypedDict):
    """Nobody waits for the call's answer any more: its work is stopped."""

    type: Literal["run.cancel"]
    id: str


class AnswerError(TypedDict):
    """``kind``: "lookup" (the run is not live), "value" (not now), "invalid" (a bad
    request: ActionInvalid's code, message, hint) or "refused" (any other engine error)."""

    kind: str
    message: str
    code: NotRequired[str]
    hint: NotRequired[str]


class Answer(TypedDict, total=False):
    """What a call ended in: ``answer`` (what it returned) or ``error``."""

    answer: Any
    error: AnswerError


class AnswerMessage(Answer):
    type: Literal["run.answer"]
    id: str


class WatchMessage(TypedDict):
    """A page on another process (its channel ``viewer``) watches the run, for a while,
    showing the picture ``width`` device pixels wide (0: not said)."""

    type: Literal["run.watch"]
    run_id: int
    viewer: str
    width: int


class UnwatchMessage(TypedDict):
    type: Literal["run.unwatch"]
    run_id: int
    viewer: str


# -- to a run's pages -----------------------------------------------------------------------


class EventMessage(TypedDict):
    type: Literal["run.event"]
    event: dict[str, Any]


class FrameMessage(TypedDict):
    type: Literal["run.frame"]
    frame: dict[str, Any]


class TabsMessage(TypedDict):
    """The run's open tabs, oldest first: each ``{"id", "url", "title", "current",
    "opener"}`` (automation.browser.tabs.TabGroup.overview)."""

    type: Literal["run.tabs"]
    tabs: list[dict[str, Any]]


class QueueMessage(TypedDict):
    type: Literal["run.queue"]
    position: int


class PausingMessage(TypedDict):
    """A pause reached the run's worker: it pauses at the end of the step under way."""

    type: Literal["run.pausing"]
    sender: str  # the page's channel that asked (told already)


# -- constructors -----------------------------------------------------------------------------


def wake_message() -> WakeMessage:
    return {"type": "runs.wake"}


def schedules_due_message() -> SchedulesDueMessage:
    return {"type": "schedules.due"}


def command_message(run_id: int, command: str, text: str = "", rounds: int = 0) -> CommandMessage:
    return {"type": "run.command", "run_id": run_id, "command": command, "text": text,
            "rounds": rounds}  # fmt: skip


def act_message(run_id: int, action: str, args: dict[str, Any]) -> ActMessage:
    return {"type": "run.act", "run_id": run_id, "action": action, "args": args}


def input_message(run_id: int, event: dict[str, Any]) -> InputMessage:
    return {"type": "run.input", "run_id": run_id, "event": event}


def mcp_message(run_id: int, name: str, args: dict[str, Any]) -> McpMessage:
    return {"type": "run.mcp", "run_id": run_id, "name": name, "args": args}


def signin_message(run_id: int, name: str) -> SigninMessage:
    return {"type": "run.signin", "run_id": run_id, "name": name}


def cancel_message(call_id: str) -> CancelMessage:
    return {"type": "run.cancel", "id": call_id}


def answer_message(call_id: str, answer: Answer) -> AnswerMessage:
    return {"type": "run.answer", "id": call_id, **answer}  # type: ignore[typeddict-item]


def watch_message(run_id: int, viewer: str, width: int = 0) -> WatchMessage:
    return {"type": "run.watch", "run_id": run_id, "viewer": viewer, "width": width}


def unwatch_message(run_id: int, viewer: str) -> UnwatchMessage:
    return {"type": "run.unwatch", "run_id": run_id, "viewer": viewer}


def event_message(event: dict[str, Any]) -> EventMessage:
    return {"type": "run.event", "event": event}


def frame_message(frame: dict[str, Any]) -> FrameMessage:
    return {"type": "run.frame", "frame": frame}


def tabs_message(tabs: list[dict[str, Any]]) -> TabsMessage:
    return {"type": "run.tabs", "tabs": tabs}


def queue_message(position: int) -> QueueMessage:
    return {"type": "run.queue", "position": position}


def pausing_message(sender: str) -> PausingMessage:
    return {"type": "run.pausing", "sender": sender}
