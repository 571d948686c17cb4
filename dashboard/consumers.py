"""The run page's WebSocket: join the run's group, replay stored events, relay, forward commands.

Messages from the page: ``{"command": "pause" | "resume" | "stop" | "reply", "text": "..."}``,
and ``{"command": "act", "id": ..., "action": ..., "args": {...}, "timeout_ms": N}`` for one
action by the person on a paused run's tab.
Messages to the page: the engine events (``{"type": "action.finished", "seq": 12, ...}``),
``{"type": "act.result", "id": ..., "ok": ..., "result" | "error": ...}`` per act command
(a ``steps`` macro's also has ``steps`` and, when one failed, ``failed_index``),
and ``{"type": "error", "message": ...}`` for a command that could not be carried out.

An act runs within its ``timeout_ms``; when the socket drops, the acts still in flight are
cancelled (a script in the page is stopped), since nobody is left to read their answer.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from automation import Budget
from automation.errors import TabwrightError
from dashboard import selectors
from dashboard.models import Run
from dashboard.runner import COMMANDS, act_request, group_name, runner

MAX_REPLY_CHARS = 4000
MAX_ACTS_IN_FLIGHT = 4
CLOSE_FORBIDDEN = 4403


class RunConsumer(AsyncJsonWebsocketConsumer):
    acts: dict[asyncio.Task[None], Budget]

    async def connect(self) -> None:
        self.acts = {}
        user = self.scope.get("user")
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        allowed = user is not None and await database_sync_to_async(selectors.run_can_view)(
            user=user, id=self.run_id
        )
        if not allowed:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.group = group_name(self.run_id)
        # Join before reading the backlog: an event stored in between arrives twice, and the
        # page drops what it has seen by seq, rather than never.
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        after = _int(parse_qs(self.scope.get("query_string", b"").decode()).get("after", ["0"])[0])
        for event in await database_sync_to_async(selectors.run_events)(
            run_id=self.run_id, after_seq=after
        ):
            await self.send_json(event)
        run = await database_sync_to_async(Run.objects.get)(pk=self.run_id)
        await self.send_json(
            {"type": "state", "status": run.status, "reason": run.status_reason,
             "live": runner.is_live(self.run_id)}
        )  # fmt: skip

    async def disconnect(self, code: int) -> None:
        for budget in self.acts.values():
            budget.cancel("the page disconnected")
        if self.acts:
            await asyncio.gather(*self.acts, return_exceptions=True)
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        # A frame that is not JSON text is a bad command like any other, not a crash that
        # drops the socket (the base class raises on binary frames and invalid JSON).
        try:
            if text_data is None:
                raise ValueError("binary frame")
            content = await self.decode_json(text_data)
        except ValueError:
            await self.send_json({"type": "error", "message": "commands are JSON text messages"})
            return
        await self.receive_json(content, **kwargs)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("command") == "act":
            await self._start_act(content)
            return
        if not isinstance(content, dict) or content.get("command") not in COMMANDS:
            await self.send_json({"type": "error", "message": "unknown command"})
            return
        command = content["command"]
        text = content.get("text", "")
        if not isinstance(text, str) or len(text) > MAX_REPLY_CHARS:
            await self.send_json(
                {"type": "error", "message": f"a reply is text of at most {MAX_REPLY_CHARS} chars"}
            )
            return
        run = await database_sync_to_async(Run.objects.get)(pk=self.run_id)
        if run.owner_id != self.scope["user"].pk:
            await self.send_json({"type": "error", "message": "only the run's owner can do that"})
            return
        if command == "reply" and not text.strip():
            await self.send_json({"type": "error", "message": "the reply is empty"})
            return
        try:
            await runner.command(self.run_id, command, text)
        except LookupError:
            await self.send_json({"type": "error", "message": "the run is not live any more"})

    async def _start_act(self, content: dict[str, Any]) -> None:
        act_id = content.get("id")
        run = await database_sync_to_async(Run.objects.get)(pk=self.run_id)
        if run.owner_id != self.scope["user"].pk:
            await self.send_json({"type": "error", "message": "only the run's owner can do that"})
            return
        if len(self.acts) >= MAX_ACTS_IN_FLIGHT:
            await self.send_json({"type": "error", "message": "too many actions in flight"})
            return
        try:
            action, args, timeout_ms = act_request(content)
        except TabwrightError as exc:
            answer = {"type": "act.result", "id": act_id, "ok": False, "error": exc.to_dict()}
            await self.send_json(answer)
            return
        # The act runs beside the socket's receive loop, so a stop or a disconnect that
        # arrives meanwhile is handled at once.
        budget = Budget(timeout_ms, label=action)
        task = asyncio.create_task(self._act(act_id, action, args, budget))
        self.acts[task] = budget
        task.add_done_callback(self.acts.pop)

    async def _act(self, act_id: Any, action: str, args: dict[str, Any], budget: Budget) -> None:
        answer: dict[str, Any] = {"type": "act.result", "id": act_id, "ok": False}
        try:
            answer.update(await runner.act(self.run_id, action, args, budget=budget))
        except LookupError:
            message = "the run is not live any more"
            answer["error"] = {"code": "not_live", "message": message, "hint": ""}
        except TabwrightError as exc:
            answer["error"] = exc.to_dict()
        if not budget.cancelled:  # cancelled: the socket is gone, nobody to answer
            await self.send_json(answer)

    async def run_event(self, message: dict[str, Any]) -> None:
        await self.send_json(message["event"])


def _int(value: str) -> int:
    try:
        return max(0, int(value))
    except ValueError:
        return 0
