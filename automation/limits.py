"""How much of a big thing is kept: a model's reply, an event, a message to the run page.

The run page follows a run over one WebSocket.  Daphne refuses a WebSocket message over
1 MiB (its ``websocket_max_message_size``, which autobahn applies to the messages the
server *sends* as well as to those it receives) and drops the connection; the page then
reconnects, is sent the same stored event again, and loops without ever showing what came
after.  channels_redis, for a layer across machines, moves each message as one msgpack
blob in Redis and is no place for megabytes either.  So there is one limit,
:data:`MAX_MESSAGE_BYTES`, half of that 1 MiB (room for the channel layer's envelope and
the WebSocket framing), and everything that becomes one message is fitted to it where it
is made:

- the model's reply is cut to :data:`MAX_REPLY_CHARS` in its event (the streamed tokens
  stop there too; the model's context keeps past replies far shorter on its own).  Even
  written entirely in characters JSON escapes (``\\uXXXX``, 6 bytes each) it stays under
  the message limit;
- every event is fitted by :func:`fit` before it is stored or relayed;
- the dashboard's socket fits every message it sends, so an event stored before these
  limits (or anything else) can't break the page either.

What is cut says so where it was cut: ``…[cut: N more chars]``.  Sizes are measured as
the message is sent: ``json.dumps`` with its default ASCII escaping.

And what is fitted can be stored and sent: JSON has no number for NaN or infinity (Python
writes them anyway, as ``NaN``), and UTF-8 no bytes for half of a UTF-16 pair alone, which
a page's JavaScript strings may hold.  :func:`fit` writes them as text where it meets them
(``"NaN"``, U+FFFD); JSON a model writes is read with :func:`loads_finite`, which refuses
such numbers, so the model hears it and writes them again.  (A NUL, which PostgreSQL's
text refuses, is PostgreSQL's adapter's to replace: dashboard.lib.pgtext.)
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = [
    "MAX_FIELD_CHARS",
    "MAX_JSON_DEPTH",
    "MAX_MESSAGE_BYTES",
    "MAX_REPLY_CHARS",
    "TRANSPORT_LIMIT_BYTES",
    "cut_text",
    "fit",
    "json_size",
    "loads_finite",
    "storable",
    "whole_text",
]

# How deep JSON from outside may nest (a body, a command, a scenario file): Tabwright's own
# documents nest about 8 deep (a scenario's step's identity's variants); 64 leaves room for
# any args a person sends and is far below the parser's recursion limit.
MAX_JSON_DEPTH = 64

# Daphne's websocket_max_message_size (and max frame size): its default, which we run with.
TRANSPORT_LIMIT_BYTES = 1024 * 1024
# The most one message to the page (one event, one answer) may be, as sent.
MAX_MESSAGE_BYTES = TRANSPORT_LIMIT_BYTES // 2
# What is kept of one model reply: 64 Ki chars, at most 6 bytes each as JSON, is 384 KiB.
MAX_REPLY_CHARS = 64 * 1024
# One text column of a stored row (a step's name, selector or URL, a run's reason).
MAX_FIELD_CHARS = 64 * 1024

_MARKER_ROOM = 48  # "…[cut: 1234567 more chars]" and its JSON escaping
_STUB_CHARS = 200  # what is left of a string that could not absorb the whole excess
_MAX_PASSES = 64
_LIST_MARKER = re.compile(r"…\[cut: (\d+) more items\]")
# In JSON as json.dumps writes it: half of a UTF-16 pair alone (a whole pair is an astral
# character, an emoji: written as two escapes, and stored as it is).
_UNSTORABLE_TEXT = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F]"
)


def json_size(value: Any) -> int:
    """Bytes of ``value`` as the socket sends it (ASCII-escaped JSON, so chars = bytes)."""
    return len(json.dumps(value, default=str))


def cut_text(text: str, max_chars: int, *, tail_chars: int = 0) -> str:
    """``text`` at most ``max_chars`` long, marker included, and :func:`whole_text`.  With
    ``tail_chars``, the end is kept too and the cut is in the middle (a reply's actions
    come last)."""
    text = whole_text(text)
    if len(text) <= max_chars:
        return text
    room = max(0, max_chars - _MARKER_ROOM)
    tail = min(tail_chars, room // 2)
    head = room - tail
    left_out = len(text) - head - tail
    marker = f"…[cut: {left_out} more chars]"
    return text[:head] + marker + (("…" + text[len(text) - tail :]) if tail else "")


def loads_finite(text: str) -> Any:
    """The value of the JSON text ``text``, as ``json.loads`` reads it, but a ValueError
    (as its JSONDecodeError is) for a number JSON has none for: ``NaN``, ``Infinity``, a
    number past a float's range (``1e400``) or of more digits than Python reads."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite, parse_int=_whole)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON number: write a finite number, or text")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(
            f"{_short(text)} is no JSON number: past the largest a float holds (about 1.8e308)"
        )
    return value


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # more than sys.get_int_max_str_digits() digits
        raise ValueError(f"{_short(text)} is no JSON number: {len(text)} digits") from None


def _short(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:12]}…{text[-4:]}"


def storable(value: Any) -> Any:
    """``value`` if every database and page can hold it as JSON; else a copy with each
    number that is not finite written as text (``"NaN"``, ``"Infinity"``, ``"-Infinity"``)
    and each half of a UTF-16 pair alone in a text (a key too) as U+FFFD."""
    try:
        text = json.dumps(value, default=str, allow_nan=False)
    except ValueError:
        return _storable(value)
    return _storable(value) if _UNSTORABLE_TEXT.search(text) else value


def _storable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, str):
        return whole_text(value)
    if isinstance(value, dict):
        return {whole_text(str(k)): _storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_storable(v) for v in value]
    return value


def whole_text(text: str) -> str:
    """``text`` with each half of a UTF-16 pair that stands alone as U+FFFD: a page's
    JavaScript strings may hold them (``"\\ud800"``), and UTF-8 has no bytes for them, so
    neither a database nor an HTTP body can carry them as they are."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
    return text


def fit(data: dict[str, Any], max_bytes: int = MAX_MESSAGE_BYTES) -> dict[str, Any]:
    """``data`` if it fits in ``max_bytes`` as sent; else a copy in which the biggest string
    or list is cut, again and again, until it fits: a string keeps its start and a marker,
    a list its first items and a marker item saying how many more there were.  ``type``
    and ``seq`` are never cut; what can't be made to fit becomes a marker of its own.
    Either way it is :func:`storable`."""
    data = storable(data)
    size = json_size(data)
    if size <= max_bytes:
        return data
    out: dict[str, Any] = json.loads(json.dumps(data, default=str))
    for _ in range(_MAX_PASSES):
        excess = size - max_bytes
        if excess <= 0:
            return out
        if not _cut_biggest(out, excess):
            break
        size = json_size(out)
    if size <= max_bytes:
        return out
    keep = {k: out[k] for k in ("type", "seq") if k in out}
    return {**keep, "cut": f"…[cut: the whole message, {size} bytes]"}


def _leaves(value: Any) -> list[tuple[Any, Any, int]]:
    """Every (container, key, size as JSON) of a string or list below ``value``."""
    found: list[tuple[Any, Any, int]] = []
    stack = [value]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            if isinstance(node, dict) and key in ("type", "seq"):
                continue
            if isinstance(child, str | list):
                found.append((node, key, json_size(child)))
            if isinstance(child, dict | list):
                stack.append(child)
    return found


def _cut_biggest(data: dict[str, Any], excess: int) -> bool:
    """Cut the biggest string or list that can still be cut; False when none can."""
    cuttable = [
        (node, key, size)
        for node, key, size in _leaves(data)
        if (isinstance(node[key], str) and len(node[key]) > _STUB_CHARS + _MARKER_ROOM)
        or (isinstance(node[key], list) and len(node[key]) > 1)
    ]
    if not cuttable:
        return False
    node, key, size = max(cuttable, key=lambda leaf: leaf[2])
    value = node[key]
    if isinstance(value, str):
        bytes_per_char = max(1.0, size / max(1, len(value)))
        drop_chars = int((excess + 2 * _MARKER_ROOM) / bytes_per_char) + 1
        keep = max(_STUB_CHARS, len(value) - drop_chars)
        node[key] = cut_text(value, keep + _MARKER_ROOM)
    else:
        # A list cut before ends with its marker: cut its items, and count on from it.
        before = 0
        if isinstance(value[-1], str) and (said := _LIST_MARKER.fullmatch(value[-1])):
            value, before = value[:-1], int(said.group(1))
            if len(value) < 2:
                return False
        per_item = size / len(value)
        drop = min(len(value) - 1, int((excess + _MARKER_ROOM) / per_item) + 1)
        node[key] = [*value[: len(value) - drop], f"…[cut: {before + drop} more items]"]
    return True
