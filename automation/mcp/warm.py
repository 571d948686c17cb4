"""The stdio server's warm start: a server process of the user's own keeps a browser
running between MCP sessions, so a client's next session starts in a context opened ahead
instead of waiting for Python, Playwright's driver and Chromium to start.

``python -m automation.mcp`` (the process a client spawns) is then a relay: it finds the
warm server for its settings (a Unix socket in a folder only its user can enter), starts
one if none answers, sends it the session's own part (the scenario file, the client's
``TABWRIGHT_SECRET_*`` values) and copies bytes between its stdin and stdout and the
socket.  The client's closing stdin, or SIGTERM, SIGHUP or SIGINT, ends the session as
in a server of its own: the relay exits, with status 0, once the warm server has written
the scenario file and closed the session's context.  The warm server exits after
``--warm-for`` seconds without a session (:mod:`automation.mcp.warmserver`).

A warm server serves one set of launch settings of one copy of the code: the socket's name
is a digest of both (:func:`key_of`), so a changed setting or an upgrade starts another.
Anything that keeps the warm path from working (no private folder, a server that does not
start) leaves the session to run in the client's process, as with ``--warm-for 0``.

This module loads only the standard library: it is on the path of every start.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["HELLO_MAX_BYTES", "PROTOCOL", "folder", "key_of", "relay_session", "socket_address"]

PROTOCOL = 1  # the hello's version: a server of another speaks the same key, never
HELLO_MAX_BYTES = 1024 * 1024  # a hello (its secrets' values) past this is refused
_CODE = Path(__file__).resolve().parents[1]  # the automation package
_TAKEN_WAIT_S = 5.0  # for the server that holds the name to listen
_CHUNK = 64 * 1024
_ADDRESS_MAX_BYTES = 100  # of a Unix socket's 108 (sun_path), with room to spare
_LOG_KEPT_BYTES = 1024 * 1024  # a warm server's log past this starts anew with the next


def folder(*, uid: int | None = None) -> Path | None:
    """The folder of the user's warm servers (``$XDG_RUNTIME_DIR/tabwright``, else
    ``/tmp/tabwright-UID``), made private if missing; None when it is not the user's own
    and private (another user made it first, or it is open to others)."""
    uid = os.getuid() if uid is None else uid
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    base = Path(runtime) / "tabwright" if os.path.isabs(runtime) else None
    if base is None:
        base = Path(f"/tmp/tabwright-{uid}")
    try:
        base.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(base)
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and not info.st_mode & 0o077
    return base if info.st_uid == uid and private else None


def key_of(launch: str) -> str:
    """The warm server's name for ``launch`` (a description of the launch settings) and
    this copy of the code (each module's path, size and time of change)."""
    digest = hashlib.sha256()
    digest.update(f"{PROTOCOL}\0{sys.executable}\0{launch}\0".encode())
    for path in sorted(_code_files(_CODE)):
        info = os.stat(path)
        digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    for name in sorted(os.environ):  # settings taken from the environment (not secrets)
        if name.startswith("TABWRIGHT_") and not name.startswith("TABWRIGHT_SECRET_"):
            digest.update(f"{name}={os.environ[name]}\0".encode())
    return digest.hexdigest()[:20]


def _code_files(top: Path) -> list[str]:
    found: list[str] = []
    for entry in os.scandir(top):
        if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
            found.extend(_code_files(Path(entry.path)))
        elif entry.name.endswith((".py", ".js")):
            found.append(entry.path)
    return found


def relay_session(
    launch: str, server_args: list[str], hello: dict[str, Any], *, timeout_s: float
) -> int | None:
    """Serve this process's client through the warm server for ``launch`` (started with
    ``server_args`` when none answers, within ``timeout_s``): the exit status, once the
    session ended; None (nothing sent, nothing read) when the warm path is not to be had."""
    if not hasattr(socket, "SO_PEERCRED"):  # (Linux's: who is at a socket's other end)
        return None
    where = folder()
    if where is None:
        _say("no private folder for the warm server; serving in this process")
        return None
    key = key_of(launch)
    path = where / f"mcp-{key}.sock"
    deadline = time.monotonic() + timeout_s
    sock = _greeted(path, hello, deadline)
    if sock is None:
        started = _start(where, key, server_args, deadline)
        if started is None:
            return None
        if started == "taken":  # that server binds its socket at once, or never will
            deadline = min(deadline, time.monotonic() + _TAKEN_WAIT_S)
        sock = _greeted(path, hello, deadline, wait=True)
        if sock is None:
            _say(f"the warm server did not answer (its log: {where / f'mcp-{key}.log'})")
            return None
    return _relay(sock)


def _greeted(
    path: Path, hello: dict[str, Any], deadline: float, *, wait: bool = False
) -> socket.socket | None:
    """A connection to the warm server at ``path`` that took ``hello``; with ``wait``,
    tried again until ``deadline`` while the server is still to listen."""
    while True:
        sock = _connect(path)
        if sock is not None:
            try:
                if _hello(sock, hello, deadline):
                    return sock
            except OSError:
                pass
            sock.close()  # closing: a server that took the hello is started next time
            return None
        if not wait or time.monotonic() >= deadline:
            return None
        time.sleep(0.02)  # a server that holds the lock binds its socket next


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with socket_address(path) as address:
            sock.connect(address)
    except OSError:  # no file, or nobody listening on it (a server that died)
        sock.close()
        return None
    return sock


@contextmanager
def socket_address(path: Path) -> Iterator[str]:
    """``path`` as a Unix socket's address: itself, or, past the 107 bytes an address
    holds (a deep runtime folder), the same file through a descriptor of its folder."""
    if len(os.fsencode(path)) <= _ADDRESS_MAX_BYTES:
        yield str(path)
        return
    folder_fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{folder_fd}/{path.name}"
    finally:
        os.close(folder_fd)


def _hello(sock: socket.socket, hello: dict[str, Any], deadline: float) -> bool:
    """Send the session's part; whether the server took it."""
    sock.settimeout(max(0.1, deadline - time.monotonic()))  # (it loads before it answers)
    sock.sendall(json.dumps(hello).encode() + b"\n")
    answer = b""
    while not answer.endswith(b"\n"):
        part = sock.recv(4096)
        if not part or len(answer) > 4096:
            return False
        answer += part
    sock.settimeout(None)
    try:
        return json.loads(answer).get("ok") is True
    except ValueError:
        return False


def _start(where: Path, key: str, server_args: list[str], deadline: float) -> str | None:
    """Start a warm server, on its own, past this process's life: ``ready`` (it listens)
    or ``taken`` (another holds the name); None if none will listen."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TABWRIGHT_SECRET_")}
    paths = [str(_CODE.parent), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(paths)  # this code, whatever made it importable here
    log = where / f"mcp-{key}.log"
    try:
        kept = os.path.getsize(log) < _LOG_KEPT_BYTES if log.exists() else False
        with open(log, "ab" if kept else "wb") as errors:
            proc = subprocess.Popen(
                [sys.executable, "-m", "automation.mcp.warmserver", "--key", key, *server_args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errors,
                cwd="/",
                env=env,
                start_new_session=True,  # a signal to the client's group is not its
            )
    except OSError as exc:
        _say(f"could not start the warm server: {exc}")
        return None
    assert proc.stdout is not None
    with proc.stdout:
        line = _line_within(proc.stdout.fileno(), deadline)
    if line in (b"ready", b"taken"):
        return line.decode()
    _say(f"the warm server did not start (its log: {log})")
    return None


def _line_within(fd: int, deadline: float) -> bytes:
    got = b""
    while b"\n" not in got:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return b""
        part = os.read(fd, 256)
        if not part:
            break
        got += part
    return got.split(b"\n", 1)[0].strip()


def _relay(sock: socket.socket) -> int:
    """Copy stdin to the socket and the socket to stdout until the server closes it."""
    ended = threading.Event()  # the client's side ended: stdin closed, or a signal

    def end_ours(*_: object) -> None:
        ended.set()
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def copy_in() -> None:
        while True:
            try:
                data = os.read(0, _CHUNK)
            except OSError:
                data = b""  # stdin unreadable: the client's side is over
            if not data:
                end_ours()
                return
            try:
                sock.sendall(data)
            except OSError:  # the server's side went: the copy out says so
                return

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, end_ours)
    threading.Thread(target=copy_in, daemon=True).start()
    try:
        while data := sock.recv(_CHUNK):
            _write_all(1, data)
    except OSError:  # our stdout is gone: the client left
        end_ours()
    if not ended.is_set():
        _say("the warm server ended the session")
        return 1
    return 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _say(text: str) -> None:
    print(f"tabwright-mcp: {text}", file=sys.stderr, flush=True)
