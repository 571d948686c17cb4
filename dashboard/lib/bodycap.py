"""The most bytes any request may carry, held where daphne reads them.

daphne (4.2) takes a request's whole body before the application sees the request:
Twisted writes it to a file as it arrives, then daphne queues all of it, in memory, for
the application, and Django reads it back on the event loop.  So a limit the application
checks (each API call's: dashboard.api.bodylimit) comes after the memory and the time are
spent: one anonymous 1.5 GB POST took 1.6 GB and held every page for 7 s.  Here, past the
server's limit (by its Content-Length, or as a chunked body arrives), the request is
answered at once, 413 with the API's JSON error, and its connection closed: nothing more
of it is read.  The limit is above every page's and call's own, which still apply.
"""

from __future__ import annotations

import json
from typing import Any

from daphne import http_protocol

__all__ = ["install"]


def install(limit: int) -> None:
    """Hold every request daphne reads in this process to ``limit`` bytes of body."""
    original = http_protocol.WebRequest
    if getattr(original, "body_limit", None) is not None:  # installed already
        original.body_limit = limit
        return
    http_protocol.WebRequest = type(
        "CappedRequest", (_Capped, original), {"body_limit": limit}
    )  # daphne's HTTPFactory makes each request of the class this module name holds


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
