"""The shell tool's supervisor: runs one program and, when it ends or is stopped, every
process it started, wherever they went.

A process group is not enough: a child that calls ``setsid()`` leaves it, and a daemon that
forks twice is handed to init.  This supervisor makes itself a *child subreaper*
(``prctl(PR_SET_CHILD_SUBREAPER)``, Linux 3.4+), so every orphan of its tree is re-parented
to it instead of to init, and stays a descendant it can find in ``/proc``.  When the program
ends, or the supervisor gets SIGTERM (time up, cancelled) or loses its parent (the server
died), it SIGKILLs every descendant, reaps them all and exits with the program's status.

It runs as a script of its own (``python -I -S subreaper.py PROGRAM ARG...``), from the
standard library only, so it starts in milliseconds without importing the engine.  Nothing
can escape it but a process another service starts on the program's behalf (a system
scheduler, a container runtime).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys

__all__ = ["descendants", "main"]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
EXIT_CANNOT_RUN = 127


class _Stop(Exception):
    """SIGTERM or SIGHUP: time is up, the call was cancelled or the server went away."""


def _stop(signum: int, frame: object) -> None:
    raise _Stop


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl({option}): {os.strerror(errno)}")


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, read from /proc (children before their own)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # it ended meanwhile
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _kill_all() -> None:
    """SIGKILL every descendant until none is left, reaping each.  A process that forks
    meanwhile leaves a child that the next pass finds (an orphan comes back to us)."""
    me = os.getpid()
    while True:
        for pid in descendants(me):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)  # at least one child ends; then look again
        except ChildProcessError:
            return  # no child left, hence no descendant either: orphans come to us


def _exit_like(status: int) -> None:
    """Exit as the program did: with its code, or killed by its signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # the two no handler can catch
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    sys.exit(os.WEXITSTATUS(status))


def main(argv: list[str]) -> None:
    parent = os.getppid()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _stop)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGHUP)  # the server died: clean up all the same
    if os.getppid() != parent:  # it died before we asked
        sys.exit(EXIT_CANNOT_RUN)
    status = 0
    try:
        try:
            program = subprocess.Popen(argv, close_fds=True)
        except OSError as exc:
            print(f"shell: cannot run {argv[0]}: {exc.strerror or exc}", file=sys.stderr)
            sys.exit(EXIT_CANNOT_RUN)
        while True:  # reap orphans handed to us until the program itself ends
            pid, status = os.waitpid(-1, 0)
            if pid == program.pid:
                program.returncode = 0  # reaped here: Popen must not wait for it again
                break
    except _Stop:
        status = signal.SIGKILL  # a wait status: killed by SIGKILL
    finally:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # the clean-up itself must finish
        _kill_all()
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
