"""HTTP/1.1 messages as the egress proxy (:mod:`automation.browser.egress`) reads and
writes them.

Reading is httptools' (llhttp, Node's parser, as uvicorn uses it): a request's head took
h11 about 50 µs of Python, llhttp takes a few, and a proxy reads two heads a request.
llhttp is strict where a proxy must be (request smuggling lives in the gaps between two
parsers' leniencies): lines end in CRLF only (no bare CR or LF), no obs-fold, no space
before a header's colon, names are tokens and values carry no control characters,
Content-Length is digits and comes once (a second one, equal or not, is refused), chunk
sizes are hex digits and fit.  On top of it, :class:`Incoming` refuses what h11 refused
and llhttp lets through: any HTTP version but 1.0 and 1.1, a Transfer-Encoding other than
one ``chunked``, an HTTP/1.1 request without Host, a request that asks to switch protocols
(or a CONNECT) with a body, and a head larger than :data:`MAX_HEAD_BYTES`.  A message with
both a Content-Length and chunks is read chunked (RFC 9112 6.3), and travels on chunked
alone.

llhttp can't be told that an answer is to a HEAD (no body, whatever its Content-Length
says): such answers' heads are found by their blank line (llhttp takes CRLF line ends
only, so a head ends at the first CRLFCRLF) and each is parsed on its own.

Writing is ours, a head's start line and framing as h11 wrote them: chunks where the
length is not known in advance (an answer read to its close), none for an answer that has
no body, and ``Connection: close`` where the connection ends after the answer; every other
header of a head goes on as it came but for the hop-by-hop ones (:func:`split_head`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

import httptools

__all__ = [
    "END",
    "MAX_HEAD_BYTES",
    "READ_CHUNK_BYTES",
    "BadMessage",
    "Cut",
    "Head",
    "Incoming",
    "answer_head",
    "chunk",
    "request_head",
    "split_head",
]

READ_CHUNK_BYTES = 65_536
# A head larger than this is refused.  Counted in whole reads after the one the head began
# in (that one may carry earlier pipelined messages): a head takes at most this much and a
# read more of memory, whatever a peer sends.
MAX_HEAD_BYTES = 65_536
# Hop-by-hop headers (RFC 9110 7.6.1) and the proxy's own: they are about the connection
# to the proxy and never travel on; Host is set from the URL that was checked.
_HOP_HEADERS = frozenset(
    {
        b"connection",
        b"proxy-connection",
        b"keep-alive",
        b"proxy-authorization",
        b"proxy-authenticate",
        b"te",
        b"trailer",
        b"upgrade",
        b"expect",  # the body follows the head unasked: nobody waits for a 100 Continue
        b"host",
    }
)
# How a message's body is delimited: written anew for the peer it goes to.
_FRAMING_HEADERS = frozenset({b"content-length", b"transfer-encoding"})
_NO_BODY_STATUSES = frozenset({204, 304})
_Fields = list[tuple[bytes, bytes]]


class BadMessage(Exception):
    """A message that is not HTTP/1.1 as the proxy takes it; the text says why."""


class Cut(BadMessage):
    """The peer closed its connection in the middle of a message."""


class _End:
    """The end of a message's body (or of a message that has none)."""

    def __repr__(self) -> str:
        return "END"


END = _End()


@dataclass(slots=True)
class Head:
    """A message's head as it was read: a request's (``method``, ``target``) or an
    answer's (``status``, ``reason``)."""

    method: bytes
    target: bytes
    status: int
    reason: bytes
    version: bytes  # b"1.1" or b"1.0"
    fields: _Fields  # names as the peer cased them, values without surrounding whitespace
    chunked: bool  # the body comes in chunks
    length: int | None  # the Content-Length, when not chunked
    keep_alive: bool  # the connection may carry another message after this one

    @property
    def bodiless_request(self) -> bool:
        return not self.chunked and self.length is None


class Incoming:
    """The messages a peer sends on one connection, read as they arrive: each is a
    :class:`Head` (an answer's informational ones first), then its body's parts as
    ``bytes``, then :data:`END`.  ``answers`` reads answers, else requests."""

    def __init__(self, reader: asyncio.StreamReader, *, answers: bool) -> None:
        self.reader = reader
        self._answers = answers
        self._parser = self._new_parser()
        self._events: deque[Head | bytes | _End] = deque()
        self._eof = False
        self._in_message = False  # a message began and has not ended
        self._in_head = False  # ... and its head has not ended
        self._head_began_here = False  # ... in the read being fed
        self._head_bytes = 0  # bytes of reads fed since the one the head began in
        self._to_close = False  # the answer being read ends where the connection closes
        self._head_only = False  # the answer being read is to a HEAD
        self._buffer = b""  # read, not yet fed: after a switch of protocols or a HEAD's head
        self._error: BaseException | None = None  # raised in a callback of the parser
        # What the peer sent is not HTTP/1.1 from here on: raised once the messages (and
        # parts) before it are handed out, as a server answers the good requests before
        # a bad one.
        self._failed: BadMessage | None = None
        self._target: list[bytes] = []
        self._reason: list[bytes] = []
        self._fields: _Fields = []
        self._framing: list[tuple[bytes, bytes]] = []
        self._keep_alive = True
        self._informational = False  # the answer being read is a 1xx

    def _new_parser(self) -> httptools.HttpRequestParser | httptools.HttpResponseParser:
        kind = httptools.HttpResponseParser if self._answers else httptools.HttpRequestParser
        parser = kind(self)
        # Both a Content-Length and chunks: the body is chunked (RFC 9112 6.3), and goes
        # on chunked alone; llhttp would refuse the message.
        parser.set_dangerous_leniencies(lenient_chunked_length=True)
        return parser

    @property
    def idle(self) -> bool:
        """Between messages, nothing read that is not yet handed out: the connection can
        carry another exchange."""
        busy = self._events or self._in_message or self._buffer
        return not (busy or self._eof or self._failed)

    @property
    def ready(self) -> bool:
        """:meth:`next` answers without reading."""
        return bool(self._events)

    def expect_head_only(self) -> None:
        """The next answer is to a HEAD: its heads only, whatever their framing says."""
        self._head_only = True

    def take_rest(self) -> bytes:
        """What followed a CONNECT's head: the tunnel's first bytes."""
        rest, self._buffer = self._buffer, b""
        return rest

    async def next(self) -> Head | bytes | _End | None:
        """The next part of a message; None when the peer closed between messages.
        BadMessage when what it sent is not HTTP/1.1; Cut when it closed mid-message."""
        while not self._events:
            if self._failed is not None:
                raise self._failed  # after what came before the fault was handed out
            if self._head_only:
                await self._read_head_only()
                continue
            if self._buffer:
                data, self._buffer = self._buffer, b""
            elif self._eof:
                return self._at_eof()
            else:
                data = await self.reader.read(READ_CHUNK_BYTES)
                if not data:
                    self._eof = True
                    continue
            self._feed(data)
        return self._events.popleft()

    def _at_eof(self) -> _End | None:
        if not self._in_message:
            return None
        if self._to_close and not self._in_head:
            self._in_message = self._to_close = False
            return END  # an answer without a length ends where its connection does
        raise Cut("the peer closed its connection mid-message")

    def _feed(self, data: bytes) -> None:
        self._head_began_here = False
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade as switch:
            # llhttp stops after the head of a CONNECT or of a request asking to switch
            # protocols (bodiless, checked in on_headers_complete): what follows is the
            # tunnel's, or the next request once the proxy answered without switching.
            self._buffer = data[switch.args[0] :]
        except httptools.HttpParserError as exc:
            error, self._error = self._error, None
            if not isinstance(error, BadMessage):
                error = BadMessage(str(exc) or type(exc).__name__)
            self._failed = error
            return
        if self._in_head and not self._head_began_here:
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._failed = BadMessage(f"a head larger than {MAX_HEAD_BYTES} bytes")

    async def _read_head_only(self) -> None:
        """An answer to a HEAD: each of its heads parsed on its own, up to the final one,
        which is the whole answer.  What follows it is none of this exchange's."""
        while (end := self._buffer.find(b"\r\n\r\n")) < 0:
            if len(self._buffer) > MAX_HEAD_BYTES:
                raise BadMessage(f"a head larger than {MAX_HEAD_BYTES} bytes")
            if self._eof:
                if self._buffer:
                    raise Cut("the peer closed its connection mid-message")
                self._head_only = False  # closed without an answer: next() says so
                return
            data = await self.reader.read(READ_CHUNK_BYTES)
            if not data:
                self._eof = True
            self._buffer += data
        head, rest = self._buffer[: end + 4], self._buffer[end + 4 :]
        main, self._parser = self._parser, self._new_parser()
        self._feed(head)
        self._parser = main  # between messages: it has read nothing of this answer
        self._in_message = self._in_head = self._to_close = False
        self._buffer = rest
        if self._failed is None and not self._informational:
            self._events.append(END)
            self._head_only = False

    # httptools' callbacks, in the order it calls them.

    def on_message_begin(self) -> None:
        self._in_message = self._in_head = self._head_began_here = True
        self._head_bytes = 0
        self._target.clear()
        self._reason.clear()
        self._fields = []
        self._framing.clear()
        self._keep_alive = True
        self._informational = False

    def on_url(self, part: bytes) -> None:
        self._target.append(part)

    def on_status(self, part: bytes) -> None:
        self._reason.append(part)

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self._in_head:
            return  # a chunked body's trailer: nothing of it travels on
        value = value.rstrip(b" \t")  # llhttp left the whitespace before the line's end
        self._fields.append((name, value))
        lower = name.lower()
        if lower in _FRAMING_HEADERS:
            self._framing.append((lower, value))
        elif lower == b"connection" and b"close" in value.lower():
            tokens = {token.strip() for token in value.lower().split(b",")}
            if b"close" in tokens:
                self._keep_alive = False

    def on_headers_complete(self) -> None:
        try:
            self._events.append(self._head())
        except BadMessage as exc:
            self._error = exc
            raise
        self._in_head = False

    def _head(self) -> Head:
        parser = self._parser
        version = parser.get_http_version().encode()
        if version not in (b"1.1", b"1.0"):
            raise BadMessage(f"HTTP/{version.decode()} is not HTTP/1.1")
        chunked = False
        length: int | None = None
        for name, value in self._framing:
            if name == b"transfer-encoding":
                if chunked or value.lower() != b"chunked":
                    raise BadMessage("a Transfer-Encoding other than one chunked")
                chunked = True
            else:
                length = int(value)  # llhttp took it only as digits, and once
        if chunked:
            length = None
        keep_alive = self._keep_alive and version == b"1.1"
        if self._answers:
            status = parser.get_status_code()
            self._informational = status < 200
            self._to_close = not (
                chunked or length is not None or self._informational or self._head_only
                or status in _NO_BODY_STATUSES
            )  # fmt: skip
            if self._to_close:
                keep_alive = False
            return Head(b"", b"", status, b"".join(self._reason), version, self._fields,
                        chunked, length, keep_alive)  # fmt: skip
        method = parser.get_method()
        if version == b"1.1" and not any(n.lower() == b"host" for n, _ in self._fields):
            raise BadMessage("an HTTP/1.1 request without Host")
        if parser.should_upgrade() and (chunked or length is not None):
            # llhttp reads no body of these: what follows the head would pass for the
            # next request.
            raise BadMessage(
                f"a {method.decode()} request that asks to switch protocols, with a body"
            )
        return Head(method, b"".join(self._target), 0, b"", version, self._fields,
                    chunked, length, keep_alive)  # fmt: skip

    def on_body(self, part: bytes) -> None:
        self._events.append(part)

    def on_message_complete(self) -> None:
        self._in_message = self._to_close = False
        # An informational answer ends with its head: the answer proper follows.  An
        # answer to a HEAD ends with its head, where _read_head_only says so.
        if not (self._informational or self._head_only):
            self._events.append(END)


def split_head(head: Head) -> tuple[_Fields, _Fields]:
    """``head``'s framing headers (chunked alone when it had both) and the others that
    travel on, as they were received: hop-by-hop ones left out, and those its Connection
    header names."""
    passed: _Fields = []
    named: set[bytes] = set()
    for name, value in head.fields:
        lower = name.lower()
        if lower in _FRAMING_HEADERS:
            continue
        if lower not in _HOP_HEADERS:
            passed.append((name, value))
        elif lower == b"connection":
            named.update(token.strip().lower() for token in value.split(b","))
    if named:
        passed = [(name, value) for name, value in passed if name.lower() not in named]
    if head.chunked:
        framing = [(b"transfer-encoding", b"chunked")]
    elif head.length is not None:
        framing = [(b"content-length", str(head.length).encode())]
    else:
        framing = []
    return framing, passed


def request_head(request: Head, target: bytes, host: bytes) -> bytes:
    """The head of ``request`` as it goes upstream: to ``target`` (origin-form) on
    ``host``, HTTP/1.1 whatever the browser spoke."""
    framing, passed = split_head(request)
    parts = [request.method, b" ", target, b" HTTP/1.1\r\nhost: ", host, b"\r\n"]
    _add_fields(parts, framing)
    _add_fields(parts, passed)
    parts.append(b"\r\n")
    return b"".join(parts)


def answer_head(answer: Head, request: Head) -> tuple[bytes, bool, bool]:
    """The head of ``answer`` as it goes to the browser that sent ``request``, whether
    its body goes in chunks, and whether the connection ends after it.

    As h11 framed it: an answer whose length is not known in advance (chunked, or read
    to the close) goes chunked to an HTTP/1.1 client and as it is to an HTTP/1.0 one,
    whose connection then ends with it; the answer to a HEAD is framed as the GET's would
    be; a 1xx, 204 or 304 keeps the framing headers it came with."""
    framing, passed = split_head(answer)
    status = answer.status
    chunked = False
    close = not request.keep_alive
    if status >= 200 and status not in _NO_BODY_STATUSES and answer.length is None:
        if request.version == b"1.1":
            framing = [(b"transfer-encoding", b"chunked")]
            chunked = True
        else:
            framing = []
            close = True
    elif status < 200 or status in _NO_BODY_STATUSES:
        framing = [(n.lower(), v) for n, v in answer.fields if n.lower() in _FRAMING_HEADERS]
    parts = [b"HTTP/1.1 ", str(status).encode(), b" ", answer.reason, b"\r\n"]
    _add_fields(parts, framing)
    if close and status >= 200:
        parts.append(b"connection: close\r\n")
    _add_fields(parts, passed)
    parts.append(b"\r\n")
    has_body = request.method != b"HEAD" and status >= 200 and status not in _NO_BODY_STATUSES
    return b"".join(parts), chunked and has_body, close


def chunk(data: bytes) -> bytes:
    """``data`` as one chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def _add_fields(parts: list[bytes], fields: _Fields) -> None:
    for name, value in fields:
        parts += (name, b": ", value, b"\r\n")
