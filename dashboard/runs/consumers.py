"""The run page's WebSocket: join the run's group, replay stored events, relay, forward commands.

Messages from the page: ``{"command": "message", "text": "..."}`` (to the agent at any time:
read at its next round while it works, the answer to a pause, the next stretch of work of
a conversation waiting for one, or a closed conversation restored and continued),
``{"command": "close"}`` (end a conversation's session: its tab is closed; an MCP
session's run ends stopped by the person),
``{"command": "pause" | "resume" | "stop" | "reply", "text": "..."}``,
``{"command": "extend", "rounds": N}`` (N more rounds past the round cap, and resume),
``{"command": "act", "id": ..., "action": ..., "args": {...}, "timeout_ms": N}`` for one
action by the person on a paused run's tab, ``{"command": "input", "kind": ...}`` for a
click, scroll, key or text on the live view of a paused run (see
automation.browser.screencast.person_input), and ``{"command": "frame.ack"}`` once the page
has drawn a frame.
Messages to the page: the engine events (``{"type": "action.finished", "seq": 12, ...}``),
``{"type": "frame", "jpeg": base64, "width", "height", "url"}`` (the live view, never
stored), ``{"type": "tabs", "tabs": [{"id", "url", "title", "current", "opener"}]}`` (the
run's open tabs, when they change: the tab strip, whose choice is an input of kind
``tab``: ``{"command": "input", "kind": "tab", "tab": id}``),
``{"type": "act.result", "id": ..., "ok": ..., "result" | "error": ...}`` per act
command (a ``steps`` macro's also has ``steps`` and, when one failed, ``failed_index``),
``{"type": "input.result", "id": ..., "ok": ..., "done" | "error": ...}`` per input,
and ``{"type": "error", "message": ...}`` for a command that could not be carried out.

An act runs within its ``timeout_ms``; when the socket drops, the acts still in flight are
cancelled (a script in the page is stopped), since nobody is left to read their answer.
Inputs run one after another, in the order they came (typing must not be reordered).
A page gets the next frame only after it acked the last, and then only the newest: a slow
connection sees fewer frames, never a growing backlog.

This consumer only checks and relays: a command, act or live-view input is carried where
the run lives, here or at the worker in another process that holds it, within one budget
(dashboard.runs.carry; a command to a worker elsewhere is answered in a task of its own,
so events and frames keep coming meanwhile); the page tells that worker every
VIEWER_RENEW_S that it watches, so the live view streams for it too (frames reach every
process through the run's group; each socket acks its own).  A queued run's page gets
``{"type": "queue", "position": N}`` as the queue moves, and the ``state`` message says
its place (``queue``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from automation import Budget
from automation.errors import TabwrightError
from automation.limits import MAX_MESSAGE_BYTES, TRANSPORT_LIMIT_BYTES, fit
from dashboard.lib import jsonin
from dashboard.lib.jsonin import JsonRefused
from dashboard.models import Run
from dashboard.runs import carry, messages, selectors
from dashboard.runs.carry import VIEWER_RENEW_S
from dashboard.runs.doorbell import layer_failed
from dashboard.runs.forms import act_request
from dashboard.runs.liveview import MAX_SAID_WIDTH, view_width
from dashboard.runs.messages import (
    Answer,
    AnswerError,
    EventMessage,
    FrameMessage,
    PausingMessage,
    QueueMessage,
    TabsMessage,
)
from dashboard.runs.runner import COMMANDS, group_name, runner
from dashboard.runs.services import stopped_by

log = logging.getLogger("tabwright.consumers")

MAX_REPLY_CHARS = 4000
MAX_MESSAGE_CHARS = 20_000  # as long as a new conversation's first message
MAX_ACTS_IN_FLIGHT = 4
MAX_INPUTS_QUEUED = 64
INPUT_TIMEOUT_MS = 5_000
CLOSE_FORBIDDEN = 4403
CLOSE_TOO_MANY = 4429  # past a person's sockets
MAX_SOCKETS_PER_USER = 50  # run pages open at once, per person and process
# The stored events sent to a run page as it connects are read in pages of events: each
# read (on the socket's thread) and each page's sending (on the loop) is short however
# long the run, and a run page closed mid-way stops the reading.  At most so many events
# a page, and none more once so many bytes of text are read (an event is at most
# MAX_MESSAGE_BYTES).
BACKLOG_PAGE_EVENTS = 100
BACKLOG_PAGE_BYTES = 1024 * 1024
_BACKLOG_CHUNK = 10  # rows fetched from the database at a time within a page
CLOSE_LAYER_LOST = 4503  # the layer is unavailable: the page reconnects and catches up
# A live-view frame is a picture: never cut, sent up to the transport's limit (less room
# for the framing), dropped beyond.
MAX_FRAME_BYTES = TRANSPORT_LIMIT_BYTES - 64 * 1024
NOT_LIVE = {"code": "not_live", "message": "the run is not live any more", "hint": ""}
_sockets: Counter[int] = Counter()  # run page sockets open in this process, by person


class RunPageConsumer(AsyncJsonWebsocketConsumer):
    """The run page's socket: it checks what the page sends and relays it (a call for the
    run goes wherever the run lives: dashboard.runs.carry), and relays the run's events,
    frames and queue place to the page.

    When the channel layer fails under it (Redis restarting), the page would hear nothing
    more — and a restarted Redis has forgotten the group it joined — so its socket is
    closed with CLOSE_LAYER_LOST and cleaned up as any other; the page reconnects and reads
    what it missed from the database, by seq."""

    acts: dict[asyncio.Task[None], Budget]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.acts = {}
        self.calls: set[asyncio.Task[None]] = set()  # commands sent to another process
        self.watching = False
        self.width = 0  # device pixels the page shows the live picture at (0: not said)
        self.frame_in_flight = False
        self.frame_waiting: dict[str, Any] | None = None
        self.inputs: asyncio.Queue[dict[str, Any]] = asyncio.Queue(MAX_INPUTS_QUEUED)
        self.input_worker: asyncio.Task[None] | None = None
        self.watcher: asyncio.Task[None] | None = None
        self.watched = ""  # the worker elsewhere told that this page watches
        self.look = asyncio.Event()  # the run may have moved: look for its worker again
        self.layer_gone = False  # the channel layer failed under this socket: it closes
        self.layer_closed = False
        self.counted_for: int | None = None  # the person whose sockets this one counts in
        self.gone = False  # the page closed its socket (known before it is handled)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # Channels reads the page's next message only once the handler at work is done
        # (connect, with its backlog): read here as they come instead, a close is known
        # at once, and stops the backlog's reading.  They are handled in order as before.
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        reading = asyncio.create_task(self._read_socket(receive, inbox))
        try:
            await super().__call__(scope, inbox.get, send)
        finally:
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)

    async def _read_socket(self, receive: Any, inbox: asyncio.Queue[dict[str, Any]]) -> None:
        while not self.gone:  # nothing comes after the close
            message = await receive()
            self.gone = message.get("type") == "websocket.disconnect"
            inbox.put_nowait(message)

    # Channels' consumer reads its channel with ``channel_receive`` (set when it starts);
    # read through here, a failing layer becomes a ``layer.lost`` message to this consumer
    # instead of an error that would end it unclean (the page's socket closed with 1011,
    # its watch of the run never ended).
    @property
    def channel_receive(self) -> Callable[[], Awaitable[dict[str, Any]]]:
        return self._receive_or_lost

    @channel_receive.setter
    def channel_receive(self, receive: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        self._layer_receive = receive

    async def _receive_or_lost(self) -> dict[str, Any]:
        if self.layer_gone:  # told once; the socket is closing (this wait is cancelled)
            await asyncio.Event().wait()
        try:
            return await self._layer_receive()
        except Exception as exc:
            layer_failed(exc, "a run page's socket")
            self.layer_gone = True
            return {"type": "layer.lost"}

    async def layer_lost(self, message: dict[str, Any]) -> None:
        await self._close_for_layer()

    async def _close_for_layer(self) -> None:
        """Closed once (a second close of a socket still connecting is an error)."""
        if not self.layer_closed:
            self.layer_closed = True
            await self.close(code=CLOSE_LAYER_LOST)

    async def connect(self) -> None:
        if self.layer_gone:  # it failed before the page was let in
            await self._close_for_layer()
            return
        user = self.scope.get("user")
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        # One person's many pages (or a script) are refused before any work for them: the
        # place is taken now, before the database is asked (sockets connecting at once
        # must not all find room), and given back if the run may not be seen.
        if _sockets[user.pk] >= MAX_SOCKETS_PER_USER:
            await self.close(code=CLOSE_TOO_MANY)
            return
        self.counted_for = user.pk
        _sockets[user.pk] += 1
        if not await database_sync_to_async(selectors.run_can_view)(user=user, id=self.run_id):
            self._uncount()
            await self.close(code=CLOSE_FORBIDDEN)
            return
        # Join before reading the backlog: an event stored in between arrives twice, and the
        # page drops what it has seen by seq, rather than never.
        try:
            await self.channel_layer.group_add(group_name(self.run_id), self.channel_name)
        except Exception as exc:  # the layer is down: the page tries again shortly
            layer_failed(exc, "a run page's socket")
            self.layer_gone = True
            await self._close_for_layer()
            return
        self.group = group_name(self.run_id)
        await self.accept()
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.width = view_width(_int(query.get("width", ["0"])[0])) or 0
        frame = runner.watch(self.run_id, self.channel_name, self.width)
        self.watching = True
        self.watcher = asyncio.create_task(self._watch_elsewhere())
        await self._send_backlog(_int(query.get("after", ["0"])[0]))
        if self.gone:  # the page left while its backlog was read
            return
        run = await database_sync_to_async(Run.objects.get)(pk=self.run_id)
        queue = await database_sync_to_async(selectors.run_queue_position)(run=run)
        place = await carry.where(self.run_id)
        working = place.working or (place.elsewhere and run.status in Run.LIVE)
        await self.send_json(
            {"type": "state", "status": run.status, "reason": run.status_reason,
             "live": place.live, "working": working, "worker": run.worker_name,
             "session": run.session, "session_reason": run.session_reason, "queue": queue}
        )  # fmt: skip
        if frame is not None:
            await self.run_frame(messages.frame_message(frame))

    def _uncount(self) -> None:
        if self.counted_for is not None:
            _sockets[self.counted_for] -= 1
            if not _sockets[self.counted_for]:
                del _sockets[self.counted_for]
            self.counted_for = None

    async def disconnect(self, code: int) -> None:
        self._uncount()
        if self.watching:
            runner.unwatch(self.run_id, self.channel_name)
            self.watching = False
        if self.watcher is not None:
            self.watcher.cancel()
            await asyncio.gather(self.watcher, return_exceptions=True)
        if self.watched:
            await self._tell_watched(watching=False)
        if self.input_worker is not None:
            self.input_worker.cancel()
        for call in self.calls:
            call.cancel()
        for budget in self.acts.values():
            budget.cancel("the page disconnected")
        if self.acts:
            await asyncio.gather(*self.acts, return_exceptions=True)
        if hasattr(self, "group") and not self.layer_gone:
            try:
                await self.channel_layer.group_discard(self.group, self.channel_name)
            except Exception as exc:  # (the group expires by itself)
                layer_failed(exc, "a run page's socket")

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        # A frame that is not JSON text is a bad command like any other, not a crash that
        # drops the socket (the base class raises on binary frames and invalid JSON).
        # Bounded (size, values, then nesting, before the parse): 100,000 nested brackets
        # would otherwise end in a RecursionError and close the socket with 1011, and
        # 256 KiB of empty arrays held the event loop for a tenth of a second each.
        try:
            if text_data is None:
                raise JsonRefused("bad_json", "binary frame")
            content = jsonin.loads(
                text_data,
                max_bytes=jsonin.MAX_COMMAND_BYTES,
                max_values=jsonin.MAX_COMMAND_VALUES,
                what="a command",
            )
        except JsonRefused as exc:
            message = "commands are JSON text messages" if exc.code == "bad_json" else exc.message
            await self.send_json({"type": "error", "code": exc.code, "message": message})
            return
        await self.receive_json(content, **kwargs)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        command = content.get("command") if isinstance(content, dict) else None
        if command == "frame.ack":
            await self._frame_drawn()
            return
        if command == "act":
            await self._start_act(content)
            return
        if command == "input":
            await self._queue_input(content)
            return
        if command == "view":
            await self._view(content)
            return
        if command not in COMMANDS:
            await self.send_json({"type": "error", "message": "unknown command"})
            return
        text = content.get("text", "")
        limit = MAX_MESSAGE_CHARS if command == "message" else MAX_REPLY_CHARS
        if not isinstance(text, str) or len(text) > limit:
            await self.send_json(
                {"type": "error", "message": f"a {command} is text of at most {limit} chars"}
            )
            return
        if not await self._is_owner():
            await self.send_json({"type": "error", "message": "only the run's owner can do that"})
            return
        if command in ("reply", "message") and not text.strip():
            await self.send_json({"type": "error", "message": f"the {command} is empty"})
            return
        rounds = content.get("rounds", 0)
        if command == "extend" and (isinstance(rounds, bool) or not isinstance(rounds, int)):
            await self.send_json({"type": "error", "message": "rounds must be a whole number"})
            return
        if command in ("stop", "close"):  # who stops (or closes) it is the run's reason,
            text = stopped_by(self.scope["user"])  # never what the page says
        await self._inputs_done()
        place = await carry.where(self.run_id)
        if place.elsewhere:  # answered in a task: events and frames keep coming meanwhile
            call = asyncio.create_task(self._command(command, text, rounds, place))
            self.calls.add(call)
            call.add_done_callback(self.calls.discard)
            return
        await self._command(command, text, rounds, place)

    async def _command(self, command: str, text: str, rounds: int, place: carry.Place) -> None:
        got = await carry.command_where_it_runs(self.run_id, command, text, rounds, place=place)
        if got.get("error") is None and command == "pause":
            # Heard by the run's worker: it pauses at the end of the step under way (the
            # model's answer, an action), which the page says until then, and so does
            # every other page on the run (the person's other tabs, whoever watches).
            await self.send_json({"type": "pausing"})
            await self.channel_layer.group_send(
                group_name(self.run_id), messages.pausing_message(self.channel_name)
            )
        await self._refused(got.get("error"))

    async def _watch_elsewhere(self) -> None:
        """While a worker in another process holds the run, tell it every VIEWER_RENEW_S
        that this page watches; look for the holder again when an event says the run
        started (a claim, a conversation restored on another worker)."""
        while True:
            self.look.clear()  # before looking: an event that comes meanwhile is not lost
            try:
                holder = (await carry.where(self.run_id)).holder
                if holder != self.watched and self.watched:
                    await self._tell_watched(watching=False)
                self.watched = holder
                if holder:
                    await self._tell_watched(watching=True)
            except Exception:  # the database hiccuped: the next turn tries again
                log.warning("run %s: looking for its worker failed", self.run_id,
                            exc_info=True)  # fmt: skip
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(VIEWER_RENEW_S if self.watched else None):
                    await self.look.wait()

    async def _view(self, content: dict[str, Any]) -> None:
        """The page shows the live picture at another size: ``{"command": "view",
        "width": device pixels}``; its frames are sized for it from now on."""
        width = view_width(content.get("width"))
        if width is None:
            refused = f"width must be a whole number from 0 to {MAX_SAID_WIDTH}"
            await self.send_json({"type": "error", "message": refused})
            return
        if width == self.width or not self.watching:
            return
        self.width = width
        runner.watch(self.run_id, self.channel_name, width)
        if self.watched:
            await self._tell_watched(watching=True)

    async def _tell_watched(self, *, watching: bool) -> None:
        await carry.tell_watching(self.watched, self.run_id, self.channel_name,
                                  watching=watching, width=self.width)  # fmt: skip

    async def _refused(self, error: AnswerError | None) -> None:
        """Tell the page why a command was not carried out (nothing when it was)."""
        if error is None:
            return
        if error["kind"] == "lookup":
            await self.send_json({"type": "error", "message": "the run is not live any more"})
        elif error["kind"] == "value":
            await self.send_json({"type": "error", "message": error["message"]})
        else:
            await self.send_json(
                {"type": "error", "code": error["code"], "message": error["message"]}
            )

    # -- the live view -------------------------------------------------------------------

    async def run_frame(self, message: FrameMessage) -> None:
        if self.frame_in_flight:
            self.frame_waiting = message["frame"]  # only the newest is worth sending
            return
        # A frame too big to send is dropped: the page is not waiting to ack it.
        self.frame_in_flight = await self._send_capped(message["frame"])

    async def run_tabs(self, message: TabsMessage) -> None:
        await self.send_json({"type": "tabs", "tabs": message["tabs"]})

    async def _frame_drawn(self) -> None:
        self.frame_in_flight = False
        frame, self.frame_waiting = self.frame_waiting, None
        if frame is not None:
            await self.run_frame(messages.frame_message(frame))

    async def _queue_input(self, content: dict[str, Any]) -> None:
        if not await self._is_owner():
            await self.send_json({"type": "error", "message": "only the run's owner can do that"})
            return
        try:
            self.inputs.put_nowait(content)
        except asyncio.QueueFull:
            await self.send_json({"type": "error", "message": "too many inputs queued"})
            return
        if self.input_worker is None:
            self.input_worker = asyncio.create_task(self._input_loop())

    async def _inputs_done(self) -> None:
        """Until the live-view inputs sent before a command are done: a click on the live
        view and the Resume sent right after it reach the run in that order (else the run
        takes its tab back first, and the click is refused or lost).  Each input has its
        own budget; the wait ends within the last one's, whatever happens."""
        if self.input_worker is None or self.input_worker.done():
            return
        try:
            async with asyncio.timeout(INPUT_TIMEOUT_MS / 1000 * (self.inputs.qsize() + 1)):
                await self.inputs.join()
        except TimeoutError:
            log.warning("run %s: a command went ahead of live-view inputs not done", self.run_id)

    async def _input_loop(self) -> None:
        while True:
            content = await self.inputs.get()
            try:
                got = await self._input(content)
            except Exception as exc:  # a bug must not end the worker: later inputs would hang
                log.exception("live-view input of run %s failed", self.run_id)
                got = {"error": {"kind": "refused", "code": "internal",
                                 "message": f"internal error: {exc!r}"}}  # fmt: skip
            finally:
                self.inputs.task_done()
            answer: dict[str, Any] = {"type": "input.result", "id": content.get("id"), "ok": True}
            if "error" in got:
                answer.update(ok=False, error=_page_error(got["error"]))
            else:
                answer["done"] = got["answer"]
            await self.send_json(answer)

    async def _input(self, content: dict[str, Any]) -> Answer:
        """One live-view input, where the run lives."""
        budget = Budget(INPUT_TIMEOUT_MS, label="live-view input")
        return await carry.carry(messages.input_message(self.run_id, content), budget)

    async def _is_owner(self) -> bool:
        run = await database_sync_to_async(Run.objects.get)(pk=self.run_id)
        return run.owner_id == self.scope["user"].pk

    async def _start_act(self, content: dict[str, Any]) -> None:
        act_id = content.get("id")
        if not await self._is_owner():
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
        # Where the run lives, within this budget.
        got = await carry.carry(messages.act_message(self.run_id, action, args), budget)
        if "error" in got:
            answer["error"] = _page_error(got["error"])
        else:
            answer.update(got["answer"])
        if not budget.cancelled:  # cancelled: the socket is gone, nobody to answer
            await self.send_json(answer)

    async def run_event(self, message: EventMessage) -> None:
        if message["event"].get("type") == "run.started" or not self.watched:
            self.look.set()  # the run may be held elsewhere now
        await self.send_json(message["event"])

    async def run_pausing(self, message: PausingMessage) -> None:
        if message["sender"] != self.channel_name:  # the sender was told at once
            await self.send_json({"type": "pausing"})

    async def run_queue(self, message: QueueMessage) -> None:
        """The queued run's place in the queue moved (1: next)."""
        await self.send_json({"type": "queue", "position": message["position"]})

    async def send_json(self, content: Any, close: bool = False) -> None:
        """Every message to the page leaves through here, within the message limit
        (automation.limits): over it, daphne drops the socket and the page loops."""
        await self._send_capped(content, close=close)

    async def _send_capped(self, content: Any, *, close: bool = False) -> bool:
        """Send ``content`` fitted to MAX_MESSAGE_BYTES (an event or answer is cut with
        markers); False when it could not be sent whole (a live-view frame is not cut,
        only dropped)."""
        text, whole = self._fitted(content)
        if text is None:
            return False
        await self.send(text_data=text, close=close)
        return whole

    def _fitted(self, content: Any) -> tuple[str | None, bool]:
        """``content`` as the text sent, and whether it is whole (None: a frame too big)."""
        text = json.dumps(content)
        if len(text) > MAX_MESSAGE_BYTES:  # ASCII-escaped JSON: chars are bytes
            if isinstance(content, dict) and content.get("type") == "frame":
                if len(text) > MAX_FRAME_BYTES:
                    log.warning("run %s: a %d-byte frame was not sent", self.run_id, len(text))
                    return None, False
            elif isinstance(content, dict):
                return json.dumps(fit(content)), False
        return text, True

    async def _send_backlog(self, after: int) -> None:
        """The run's stored events after ``after``, in order of seq, a page at a time: each
        read and made into text on the socket's thread (a long conversation's are
        megabytes), sent, then the next read after the last one sent, until a page is the
        last or the run page has gone.  An event stored meanwhile is in a later page or comes
        live after the backlog, or both: the page drops what it has seen by seq."""
        more = True
        while more and not self.gone:
            texts, after, more = await database_sync_to_async(self._backlog_page)(after)
            if self.gone:
                return
            for text in texts:
                await self.send(text_data=text)

    def _backlog_page(self, after: int) -> tuple[list[str], int, bool]:
        """The texts of the run's next stored events after seq ``after`` (at most
        BACKLOG_PAGE_EVENTS of them, and none more once BACKLOG_PAGE_BYTES are read), the
        seq of the last one read, and whether more may follow."""
        texts: list[str] = []
        size = count = 0
        events = selectors.run_events_iter(
            run_id=self.run_id, after_seq=after, limit=BACKLOG_PAGE_EVENTS, chunk=_BACKLOG_CHUNK
        )
        with contextlib.closing(events):
            for event in events:
                text, _ = self._fitted(event)
                after, count = event["seq"], count + 1
                if text is not None:
                    texts.append(text)
                    size += len(text)
                if size >= BACKLOG_PAGE_BYTES:
                    return texts, after, True
        return texts, after, count == BACKLOG_PAGE_EVENTS


def _page_error(error: AnswerError) -> dict[str, str]:
    """An act's or input's error (dashboard.runs.carry.answer_of's) as the page is told it."""
    if error["kind"] == "lookup":
        return NOT_LIVE
    return {key: str(error.get(key, "")) for key in ("code", "message", "hint")}


def _int(value: str) -> int:
    try:
        return max(0, int(value))
    except ValueError:
        return 0
