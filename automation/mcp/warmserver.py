"""The warm server (:mod:`automation.mcp.warm` says why): one browser kept running, and a
context opened ahead of the next session, for the MCP clients of one user and one set of
launch settings; each session is a relay's connection on a Unix socket.

    python -m automation.mcp.warmserver --key KEY [the stdio server's launch options]

A relay starts it (its stdout a pipe): it takes the key's lock, listens on the key's
socket, says ``ready`` on stdout and goes on alone; ``taken`` when another holds the lock
(that one listens).  Each connection, from a process of the same user only, first sends a
hello, one JSON line: ``scenario_out`` (an absolute path, or null), ``scenario_name``
and ``secrets`` (the client's ``TABWRIGHT_SECRET_*``); the server answers ``{"ok": true}``
and then speaks MCP on it, one message a line, as over stdio, in a fresh context of its
own (cookies, storage, downloads) with its own secrets and file.  The session ends when the
relay shuts its side: the scenario is written and the context closed, then the
connection.  With no session for ``--warm-for`` seconds, or on SIGTERM, SIGHUP or SIGINT,
the server stops listening (a relay then starts another), ends its sessions so, and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import importlib
import json
import logging
import os
import signal
import socket
import struct
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from automation.loading import pause_gc, resume_gc
from automation.mcp.warm import HELLO_MAX_BYTES, PROTOCOL, folder, socket_address
from automation.secrets import Secrets, SecretsLogFilter

__all__ = ["main"]

log = logging.getLogger("automation.mcp")

_LINE_MAX_BYTES = 256 * 1024 * 1024  # one MCP message (a megabytes-long argument fits)
_HELLO_WAIT_S = 10.0


def main(argv: Sequence[str] | None = None) -> int:
    pause_gc()  # while the server loads (resumed once the browser's modules have)
    from automation.mcp.__main__ import config_of, parser  # the stdio server's options

    server_parser = parser()
    server_parser.prog = "python -m automation.mcp.warmserver"
    server_parser.add_argument("--key", required=True, help="the relay's name for this server")
    options = server_parser.parse_args(argv)
    logging.basicConfig(  # its log, kept on disk: no session's secret in it
        stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s"
    )
    logging.getLogger().handlers[0].addFilter(SecretsLogFilter())
    log.setLevel(logging.INFO)  # its own comings and goings, and each session's file
    where = folder()
    if where is None or not options.key.isalnum():
        print("no private folder", flush=True)
        return 2
    lock = open(where / f"mcp-{options.key}.lock", "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print("taken", flush=True)  # that server listens (or is about to)
        return 0
    lock.truncate(0)
    lock.write(f"{os.getpid()}\n")  # who holds it, for a person (or a test) to stop it
    lock.flush()
    path = where / f"mcp-{options.key}.sock"
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a server that died left it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with socket_address(path) as address:
        listener.bind(address)
    listener.listen(64)
    bound = os.stat(path).st_ino  # the name is given up only while it is still ours
    print("ready", flush=True)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the relay reads no more; nor may we write
    warm = WarmServer(
        config_of(options), listener, (path, bound), lock, warm_for_s=options.warm_for
    )
    asyncio.run(warm.serve())
    return 0


class WarmServer:
    def __init__(
        self,
        config: Any,
        listener: socket.socket,
        name: tuple[Path, int],
        lock: Any,
        *,
        warm_for_s: float,
    ) -> None:
        self.config = config
        self.listener = listener
        self.path, self._bound = name
        self.lock = lock
        self.warm_for_s = warm_for_s
        self.sessions: set[asyncio.Task[None]] = set()
        self.closing = False
        self._idle: asyncio.TimerHandle | None = None
        self.server: asyncio.Server | None = None
        self._done = asyncio.Event()

    async def serve(self) -> None:
        from automation.browser.session import BrowserSession  # Playwright: after "ready"

        loop = asyncio.get_running_loop()
        self.browser = BrowserSession(self.config)
        warming = loop.create_task(self.browser.warm())
        try:
            self.stdio = await asyncio.to_thread(importlib.import_module, "automation.mcp.stdio")
        finally:
            resume_gc()
        self.server = await asyncio.start_unix_server(
            self._serve_one, sock=self.listener, limit=_LINE_MAX_BYTES
        )
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            loop.add_signal_handler(signum, self.stop)
        self._arm_idle()
        try:
            await warming
        except Exception as exc:  # each session's first call says why (and tries again)
            log.warning("the browser did not start: %s", exc)
        log.info("serving on %s", self.path)
        await self._done.wait()
        await asyncio.gather(*self.sessions, return_exceptions=True)
        await self.browser.close()
        log.info("stopped")

    def stop(self) -> None:
        """Stop listening and give the name up (a relay from now on starts another server),
        then end the sessions as their clients leaving would."""
        if self.closing:
            return
        self.closing = True
        log.info("stopping with %d sessions", len(self.sessions))
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._bound:
                self.path.unlink()
        if self.server is not None:
            self.server.close()  # and its socket
        self.lock.close()  # the lock goes last: the next server finds the name free
        for task in self.sessions:
            task.cancel()
        self._done.set()

    def _arm_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._idle = None
        if not self.sessions and not self.closing:
            self._idle = asyncio.get_running_loop().call_later(self.warm_for_s, self.stop)

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        try:
            if self.closing or not _same_user(writer):
                return
            hello = await _hello(reader)
            if hello is None or self.closing:
                return
            self.sessions.add(task)
            self._arm_idle()
            writer.write(b'{"ok": true}\n')
            await writer.drain()
            await self._session(hello, reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            log.info("a session's connection ended: %s", exc)
        except Exception:
            log.exception("a session failed")
        finally:
            self.sessions.discard(task)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            if not self.closing:
                self._arm_idle()

    async def _session(
        self, hello: dict[str, Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        from mcp.server.stdio import stdio_server

        from automation.mcp.ahead import TabAhead

        out = hello["scenario_out"]
        session = self.stdio.StdioSession(
            self.config,
            TabAhead(self.config, self.browser),
            secrets=Secrets(dict(hello["secrets"])),
            scenario_out=Path(out) if out else None,
            scenario_name=hello["scenario_name"],
        )
        lines: Any = _Lines(reader, writer)
        try:
            async with stdio_server(stdin=lines, stdout=lines) as (read, write):
                await session.run(read, write)
        finally:
            await asyncio.shield(session.finish())


class _Lines:
    """A connection as the MCP SDK's stdio transport reads and writes its streams."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self.reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()


def _same_user(writer: asyncio.StreamWriter) -> bool:
    """Whether the peer runs as this server's user (the folder keeps others out too)."""
    sock = writer.get_extra_info("socket")
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid == os.getuid()


async def _hello(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The connection's hello, checked; None (and the connection closed) otherwise."""
    try:
        async with asyncio.timeout(_HELLO_WAIT_S):
            line = await reader.readline()
    except (TimeoutError, ValueError):
        return None
    if len(line) > HELLO_MAX_BYTES:
        return None
    try:
        hello = json.loads(line)
    except ValueError:
        return None
    if not isinstance(hello, dict) or hello.get("protocol") != PROTOCOL:
        return None
    out, name, secrets = hello.get("scenario_out"), hello.get("scenario_name"), hello.get("secrets")
    if out is not None and not (isinstance(out, str) and os.path.isabs(out)):
        return None
    if not isinstance(name, str) or not isinstance(secrets, dict):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in secrets.items()):
        return None
    return hello


if __name__ == "__main__":
    sys.exit(main())
