"""The shell tool kills every process a command started: one that called setsid (left the
process group) and a daemon that forked twice (orphaned) included, whether the command
ends, runs out of time, is cancelled, or the server itself dies."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from automation import Budget
from automation.errors import Cancelled
from automation.tools import subreaper
from automation.tools.shell import shell_run

# setsid.pid: a child in a session of its own; daemon.pid: forked by a shell that exits at
# once (orphaned) and in a session of its own too, as a daemon does.
SPAWN = """\
setsid sleep 300 &
echo $! > setsid.tmp && mv setsid.tmp setsid.pid
sh -c 'setsid sleep 301 & echo $! > daemon.tmp && mv daemon.tmp daemon.pid'
"""


def stat_of(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, session) of a live process; None once it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:  # gone: no file, or (gone as it was read) ESRCH
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[1]), int(fields[3])


def gone(pid: int) -> bool:
    return stat_of(pid) is None


def pids(ws: Path) -> list[int]:
    return [int((ws / f"{name}.pid").read_text()) for name in ("setsid", "daemon")]


def wait_spawned(ws: Path) -> list[int]:
    """The pids once the command wrote both and each runs in a session of its own (a pid is
    written as its process is forked, before that process calls setsid)."""
    deadline = time.monotonic() + 30
    while not ((ws / "setsid.pid").exists() and (ws / "daemon.pid").exists()):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    found = pids(ws)
    while not all((stat := stat_of(pid)) is not None and stat[2] == pid for pid in found):
        assert time.monotonic() < deadline, [stat_of(pid) for pid in found]
        time.sleep(0.02)
    return found


def adoptive_parent(pid: int) -> int:
    """The daemon's parent once the shell that forked it has exited (it writes the pid
    file just before it does)."""
    deadline = time.monotonic() + 60  # bounds a hang only
    while True:
        stat = stat_of(pid)
        assert stat is not None, f"{pid} is gone"
        try:
            forker = Path(f"/proc/{stat[1]}/cmdline").read_bytes().startswith(b"sh\0-c\0")
        except OSError:  # gone: no file, or (gone as it was read) ESRCH
            forker = False
        if not forker or time.monotonic() > deadline:
            return stat[1]
        time.sleep(0.02)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "spawn.sh").write_text(SPAWN)
    (folder / "spawn-and-wait.sh").write_text(SPAWN + "sleep 300\n")
    return folder


@pytest.fixture(autouse=True)
def no_strays(ws: Path):  # type: ignore[no-untyped-def]
    """Whatever the test asserts, no sleeper outlives it."""
    yield
    for name in ("setsid", "daemon"):
        path = ws / f"{name}.pid"
        if path.exists() and stat_of(pid := int(path.read_text())) is not None:
            os.kill(pid, signal.SIGKILL)


async def shell(ws: Path, command: str, *, timeout_ms: float, budget: Budget) -> str:
    return await shell_run(ws, command, allowed=("sh",), timeout_ms=timeout_ms, budget=budget)


async def test_a_command_that_ends_takes_its_setsid_child_and_its_daemon_along(ws: Path) -> None:
    answer = await shell(ws, "sh spawn.sh", timeout_ms=30_000, budget=Budget(30_000))
    assert answer == "exit status 0 (no output)"
    assert all(gone(pid) for pid in pids(ws))


async def test_a_command_past_its_time_is_killed_with_everything_it_started(ws: Path) -> None:
    answer = await shell(ws, "sh spawn-and-wait.sh", timeout_ms=1_500, budget=Budget(30_000))
    assert answer.startswith("timed out after ")
    assert all(gone(pid) for pid in pids(ws))


async def test_a_cancelled_command_is_killed_with_everything_it_started(ws: Path) -> None:
    budget = Budget(60_000)
    call = asyncio.ensure_future(
        shell(ws, "sh spawn-and-wait.sh", timeout_ms=60_000, budget=budget)
    )
    setsid_pid, daemon_pid = await asyncio.to_thread(wait_spawned, ws)
    setsid_stat, daemon_stat = stat_of(setsid_pid), stat_of(daemon_pid)
    assert setsid_stat is not None and daemon_stat is not None
    # They really did leave: sessions of their own, out of the command's process group,
    # and the daemon's parent is gone (it was handed to the supervisor, not to init).
    assert setsid_stat[2] == setsid_pid and daemon_stat[2] == daemon_pid
    supervisor = await asyncio.to_thread(adoptive_parent, daemon_pid)
    cmdline = await asyncio.to_thread(Path(f"/proc/{supervisor}/cmdline").read_text)
    assert supervisor != 1 and "subreaper.py" in cmdline
    budget.cancel("stop button")
    with pytest.raises(Cancelled):
        await call
    assert gone(setsid_pid) and gone(daemon_pid) and gone(supervisor)


async def test_the_programs_exit_status_and_signal_come_through(ws: Path) -> None:
    (ws / "exit3.sh").write_text("echo out; exit 3\n")
    (ws / "killed.sh").write_text("echo bye; kill -9 $$\n")
    budget = Budget(30_000)
    assert await shell(ws, "sh exit3.sh", timeout_ms=10_000, budget=budget) == (
        "exit status 3\nout\n"
    )
    assert await shell(ws, "sh killed.sh", timeout_ms=10_000, budget=budget) == (
        "killed by signal 9\nbye\n"
    )


def test_when_the_server_dies_the_supervisor_still_kills_everything(ws: Path) -> None:
    """The supervisor's parent (the server) is killed outright: the supervisor is told by
    the kernel (PDEATHSIG) and cleans up all the same."""
    server = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys, time\n"
         f"subprocess.Popen([sys.executable, '-I', '-S', {subreaper.__file__!r}, "
         "'/bin/sh', 'spawn-and-wait.sh'], start_new_session=True)\n"
         "time.sleep(300)"],
        cwd=ws,
    )  # fmt: skip
    try:
        spawned = wait_spawned(ws)
        assert all(not gone(pid) for pid in spawned)
    finally:
        server.kill()
        server.wait()
    deadline = time.monotonic() + 30
    while not all(gone(pid) for pid in spawned):
        assert time.monotonic() < deadline, [stat_of(pid) for pid in spawned]
        time.sleep(0.02)


def test_descendants_are_found_through_proc() -> None:
    child = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    try:
        deadline = time.monotonic() + 60  # bounds a hang only
        while len(found := subreaper.descendants(child.pid)) < 1:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert all(stat_of(pid) is not None for pid in found)
        assert child.pid not in found and os.getpid() not in found
    finally:
        for pid in subreaper.descendants(child.pid):
            os.kill(pid, signal.SIGKILL)
        child.kill()
        child.wait()
