"""PostgreSQL can't store a NUL character: not in a text column, not as ``\\u0000`` in
jsonb.  A page's text may hold one (a title, a console line, a value a script returned, a
webhook receiver's answer), and a write that carries it would fail, ending the run or the
delivery that made it.  On PostgreSQL every string a query sends has its NULs replaced
with U+FFFD, the replacement character (in jsonb too), so the write goes through and
shows where one was.  SQLite stores them as they are.

:func:`register` adapts one psycopg connection (dashboard.apps does it for each
connection Django opens to PostgreSQL)."""

from __future__ import annotations

import re
from typing import Any

from psycopg import Connection
from psycopg.types.json import Jsonb, JsonbBinaryDumper, JsonbDumper
from psycopg.types.string import StrBinaryDumper, StrDumperUnknown

__all__ = ["REPLACEMENT", "register"]

REPLACEMENT = "\ufffd"
# ``\u0000`` in JSON text, not the escaped backslash of ``\\u0000`` (a string that says it).
_JSON_NUL = re.compile(rb"(?<!\\)((?:\\\\)*)\\u0000")


class _Text(StrDumperUnknown):
    def dump(self, obj: str) -> Any:
        return super().dump(obj.replace("\x00", REPLACEMENT))


class _TextBinary(StrBinaryDumper):
    def dump(self, obj: str) -> Any:
        return super().dump(obj.replace("\x00", REPLACEMENT))


def _json_without_nul(data: Any) -> Any:
    return _JSON_NUL.sub(rb"\1\\ufffd", bytes(data)) if data is not None else None


class _Jsonb(JsonbDumper):
    def dump(self, obj: Any) -> Any:
        return _json_without_nul(super().dump(obj))


class _JsonbBinary(JsonbBinaryDumper):
    def dump(self, obj: Any) -> Any:
        return _json_without_nul(super().dump(obj))


def register(connection: Connection[Any]) -> None:
    """Strings and jsonb sent on ``connection`` from now on carry no NUL."""
    for dumper in (_Text, _TextBinary):
        connection.adapters.register_dumper(str, dumper)
    for dumper in (_Jsonb, _JsonbBinary):
        connection.adapters.register_dumper(Jsonb, dumper)
