"""The planner protocol: what the agent loop asks of an LLM (or of the rule planner).

A planner gets the whole round context and answers with text in which actions are written
as ``<action>{"action": "click", "ref": "e5"}</action>`` tags.  LLM planners send
``request.messages`` to a model; the rule planner reads ``request.task`` and the snapshot.
``request.actions`` are the actions offered this round, for planners that send them to
the model as native tools (the calls come back as the same tags).

A planner that talks to a server tells how the exchange goes through the request's
optional callbacks: ``on_attempt(n)`` right before try ``n`` is sent (1 first), and
``on_retry(notice)`` when a try failed for a passing reason and another one follows after
``notice.wait_ms``.  Only the last try's text is the reply: what an abandoned try already
passed to ``on_token`` is counted in ``notice.discarded_chars``.  A planner without a server
(the rule planner) ignores both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from automation.actionspec import ActionSpec
from automation.browser.snapshot import Snapshot
from automation.budget import Budget

__all__ = [
    "ActionOutcome",
    "ChatMessage",
    "OnAttempt",
    "OnRetry",
    "OnToken",
    "Planner",
    "PlannerReply",
    "PlannerRequest",
    "RetryNotice",
]


@dataclass(frozen=True)
class RetryNotice:
    """A try failed for a passing reason; try ``retry + 1`` follows after ``wait_ms``."""

    retry: int  # 1 for the first retry
    retries: int  # how many retries there may be at most
    wait_ms: int
    reason: str  # "HTTP 500", "HTTP 429", "connection dropped mid-reply", ...
    discarded_chars: int = 0  # what the failed try had already passed to on_token


OnToken = Callable[[str], Awaitable[None]]
OnAttempt = Callable[[int], Awaitable[None]]
OnRetry = Callable[[RetryNotice], Awaitable[None]]


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class ActionOutcome:
    """The result of one action of the previous round, as the planner sees it."""

    action: str
    args: dict[str, Any]
    ok: bool
    result: str = ""
    error_code: str = ""
    error: str = ""


@dataclass
class PlannerRequest:
    task: str
    start_url: str
    round: int
    messages: list[ChatMessage]
    snapshot: Snapshot | None = None
    last_outcomes: list[ActionOutcome] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)  # the person's replies since last round
    actions: list[ActionSpec] = field(default_factory=list)  # the actions offered this round
    on_attempt: OnAttempt | None = None  # called with the try's number as each try is sent
    on_retry: OnRetry | None = None  # called before the wait for each retry
    # The system prompt to send instead of messages[0] when the actions go as native tools
    # (it does not list them again); empty: messages[0] either way.
    native_system: str = ""
    output_schema: dict[str, Any] | None = None  # the done tool's output, if the run has one


@dataclass(frozen=True)
class PlannerReply:
    text: str
    usage: dict[str, int] = field(default_factory=dict)


class Planner(Protocol):
    name: str

    async def plan(
        self, request: PlannerRequest, *, budget: Budget, on_token: OnToken | None = None
    ) -> PlannerReply: ...
