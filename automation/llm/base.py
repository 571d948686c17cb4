"""The planner protocol: what the agent loop asks of an LLM (or of the rule planner).

A planner gets the whole round context and answers with text in which actions are written
as ``<action>{"action": "click", "ref": "e5"}</action>`` tags.  LLM planners send
``request.messages`` to a model; the rule planner reads ``request.task`` and the snapshot.
``request.actions`` are the actions offered this round, for planners that send them to
the model as native tools (the calls come back as the same tags).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from automation.actionspec import ActionSpec
from automation.browser.snapshot import Snapshot
from automation.budget import Budget

__all__ = ["ActionOutcome", "ChatMessage", "OnToken", "Planner", "PlannerReply", "PlannerRequest"]

OnToken = Callable[[str], Awaitable[None]]


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


@dataclass(frozen=True)
class PlannerReply:
    text: str
    usage: dict[str, int] = field(default_factory=dict)


class Planner(Protocol):
    name: str

    async def plan(
        self, request: PlannerRequest, *, budget: Budget, on_token: OnToken | None = None
    ) -> PlannerReply: ...
