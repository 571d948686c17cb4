"""What daphne lets in, held where daphne reads it: request bodies and socket messages.

**Bodies.** daphne (4.2) takes a request's whole body before the application sees the
request: Twisted writes it to a file as it arrives, then daphne queues all of it, in
memory, for the application, and Django reads it back on the event loop.  So a limit the
application checks (each API call's: dashboard.api.bodylimit) comes after the memory and
the time are spent: one anonymous 1.5 GB POST took 1.6 GB and held every page for 7 s.
Here, past the server's limit (by its Content-Length, or as a chunked body arrives), the
request is answered at once, 413 with the API's JSON error, and its connection closed:
nothing more of it is read.  The limit is above every page's and call's own, which still
apply.

**Socket messages.** daphne queues every message a WebSocket client sends for its
consumer, unbounded, as fast as the bytes come: one client sending small messages in a
loop (a million in 15 s) held the event loop and hundreds of MiB, and other people's
pages and runs slowed to seconds.  A page sends a few a second (dashboard.lib.rate);
here each connection gets a :class:`~dashboard.lib.rate.Bucket`: messages past its pace
are dropped before they are queued, and a connection that keeps on is cut.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from daphne import http_protocol, ws_protocol

from dashboard.lib.rate import Bucket

__all__ = ["install"]

log = logging.getLogger("dashboard.daphnelimits")


def install(*, body_limit: int, messages_per_s: float, burst: int) -> None:
    """Hold every request daphne reads in this process to ``body_limit`` bytes of body,
    and every WebSocket connection to ``messages_per_s`` messages a second after a first
    ``burst`` (a connection with ``burst`` messages dropped is cut)."""
    if not issubclass(http_protocol.WebRequest, _Capped):
        # daphne's HTTPFactory makes each request of the class this module name holds
        http_protocol.WebRequest = type("CappedRequest", (_Capped, http_protocol.WebRequest), {})
    http_protocol.WebRequest.body_limit = body_limit
    factory = ws_protocol.WebSocketFactory
    if not issubclass(factory.protocol, _Paced):
        factory.protocol = type("PacedWebSocket", (_Paced, factory.protocol), {})
    factory.protocol.messages_per_s = messages_per_s
    factory.protocol.burst = burst


class _Capped:
    """Mixed into daphne's WebRequest: counts the body as Twisted hands it over."""

    body_limit: int
    channel: Any

    def gotLength(self, length: int | None) -> None:
        self._received = 0
        self._refused = False
        super().gotLength(length)  # type: ignore[misc]
        if length is not None and length > self.body_limit:
            self._refuse(length)

    def handleContentChunk(self, data: bytes) -> None:
        if self._refused:
            return
        self._received += len(data)
        if self._received > self.body_limit:
            self._refuse(self._received)
            return
        super().handleContentChunk(data)  # type: ignore[misc]

    def _refuse(self, size: int) -> None:
        self._refused = True
        mib = f"{self.body_limit / (1024 * 1024):g} MiB"
        message = (
            f"the body has {size} bytes or more; this server takes at most {self.body_limit} "
            f"({mib}) in any request, and read no further"
        )
        error = {"code": "too_large", "message": message, "hint": "", "fields": {"body": message}}
        body = json.dumps({"error": error}).encode()
        head = (
            "HTTP/1.1 413 Content Too Large\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        transport = self.channel.transport
        transport.write(head + body)
        transport.loseConnection()  # reads nothing more; closes once the answer is out


class _Paced:
    """Mixed into daphne's WebSocketProtocol: paces the messages it queues."""

    messages_per_s: float
    burst: int
    client_addr: Any
    _pace: Bucket | None = None

    def onMessage(self, payload: bytes, isBinary: bool) -> None:
        if self._pace is None:
            self._pace = Bucket(per_s=self.messages_per_s, burst=self.burst)
        if self._pace.take():
            super().onMessage(payload, isBinary)  # type: ignore[misc]
            return
        if self._pace.refused == self.burst:  # it keeps on: cut, nothing more is read
            log.warning("a WebSocket client (%s) sent past %g messages a second: cut",
                        self.client_addr, self.messages_per_s)  # fmt: skip
            self.dropConnection(abort=True)  # type: ignore[attr-defined]
