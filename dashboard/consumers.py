"""The run page's WebSocket: join the run's group, replay stored events, relay, forward commands.

Messages from the page: ``{"command": "pause" | "resume" | "stop" | "reply", "text": "..."}``.
Messages to the page: the engine events (``{"type": "action.finished", "seq": 12, ...}``),
and ``{"type": "error", "message": ...}`` for a command that could not be carried out.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from dashboard import selectors
from dashboard.models import Run
from dashboard.runner import COMMANDS, group_name, runner

MAX_REPLY_CHARS = 4000
CLOSE_FORBIDDEN = 4403


class RunConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
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

    async def run_event(self, message: dict[str, Any]) -> None:
        await self.send_json(message["event"])


def _int(value: str) -> int:
    try:
        return max(0, int(value))
    except ValueError:
        return 0
