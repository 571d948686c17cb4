"""The warm MCP servers of a test: in a runtime folder of the test's own (the relay's
``XDG_RUNTIME_DIR``), stopped and waited for when the test ends, so none outlives it."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Collection, Iterator
from pathlib import Path

from tests.automation.browser.test_session import processes

__all__ = [
    "alive",
    "runtime_folder",
    "servers_in",
    "servers_started_meanwhile",
    "stop_servers",
    "warm_servers",
]

STOP_WAIT_S = 60.0  # a warm server closes its browser, then exits: a hang past this


def runtime_folder(base: Path) -> Path:
    folder = base / "run"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def servers_in(runtime: Path, *, folder: Path | None = None) -> dict[str, int]:
    """key -> the pid of the warm server holding its lock (as it wrote it there), of the
    relays whose XDG_RUNTIME_DIR is ``runtime`` (or whose folder is ``folder``)."""
    found = {}
    for lock in (folder or runtime / "tabwright").glob("mcp-*.lock"):
        text = lock.read_text().strip()
        if text.isdigit() and alive(int(text)):
            found[lock.stem.removeprefix("mcp-")] = int(text)
    return found


def alive(pid: int) -> bool:
    """A process that runs (not a zombie left for whoever inherited it to reap)."""
    entry = processes().get(pid)
    return entry is not None and entry[1] != "Z"


def stop_servers(
    runtime: Path, *, sparing: Collection[int] = (), folder: Path | None = None
) -> None:
    """SIGTERM each warm server of ``runtime`` (or ``folder``) but those ``sparing``
    names; back once each is gone (or fail)."""
    pids = [pid for pid in servers_in(runtime, folder=folder).values() if pid not in sparing]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            raise AssertionError(f"warm servers {pids} did not stop within {STOP_WAIT_S} s")
        time.sleep(0.05)


@contextlib.contextmanager
def servers_started_meanwhile() -> Iterator[None]:
    """The warm servers started in the user's own folder (that of a relay run without
    XDG_RUNTIME_DIR, as the MCP SDK's client runs one) while this held are stopped."""
    shared = Path(f"/tmp/tabwright-{os.getuid()}")
    before = set(servers_in(shared, folder=shared).values())
    try:
        yield
    finally:
        stop_servers(shared, sparing=before, folder=shared)


@contextlib.contextmanager
def warm_servers(base: Path) -> Iterator[Path]:
    runtime = runtime_folder(base)
    try:
        yield runtime
    finally:
        stop_servers(runtime)
