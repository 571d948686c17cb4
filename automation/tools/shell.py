"""The agent's shell tool: one program from the operator's allow-list, in a run's workspace.

The program runs with plain arguments, no shell in between, in the workspace with a minimal
environment, under a supervisor (subreaper.py beside this) that kills every process the
program started, even one that left its group or was orphaned, when the program ends or its
time is up.  Arguments that are paths are not checked: an allowed program may read and write
whatever the server's user can, so the operator allows only programs they trust with that.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

from automation.actionspec import ActionSpec, Param
from automation.budget import Budget
from automation.errors import ActionFailed, ActionInvalid, BudgetExceeded

__all__ = [
    "MAX_OUTPUT_BYTES",
    "SHELL_ACTIONS",
    "SHELL_PATH",
    "command_argv",
    "command_check",
    "shell_run",
]

SHELL_PATH = "/usr/local/bin:/usr/bin:/bin"
MAX_OUTPUT_BYTES = 20_000  # of a command's output: its start and its end
_OUTPUT_TAIL_BYTES = 5_000
_COLLECT_MS = 500  # kept back from the budget to stop the command and read the rest
# The supervisor that runs each command and kills all it started (see subreaper.py).
_SUBREAPER = str(Path(__file__).with_name("subreaper.py"))
# Time for the supervisor to kill and reap everything once told to; it takes milliseconds,
# so running out means it is stuck, and its process group is killed instead.
_STOP_MS = 5_000

_NO_SHELL_HINT = (
    "there is no shell: run one program with plain arguments, and quote text that "
    "holds such characters, like python3 -c 'print(1 | 2)'"
)


def _refuse_shell_syntax(command: str) -> None:
    """Refuse what a shell would have read as syntax: without one it would reach the
    program as plain text and do something else than the model meant."""
    quote = ""
    at_word_start = True
    i = 0
    while i < len(command):
        c, after = command[i], command[i + 1 : i + 2]
        what = ""
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            i += 2
            at_word_start = False
            continue
        elif c == "`" or (c == "$" and after in ("(", "{")):
            what = "`...`, $(...) or ${...}"
        elif c == "$" and after and (after.isalnum() or after in "_@*#?$!-"):
            what = "a $variable"
        elif quote == '"':
            quote = "" if c == '"' else quote
        elif c in "|&;<>()":
            what = f"{c!r} (pipes, redirections, command lists)"
        elif c in "\n\r":
            what = "a line break outside quotes"
        elif c in "*?[":
            what = f"the wildcard {c!r}"
        elif c == "~" and at_word_start:
            what = "~"
        elif c in "'\"":
            quote = c
        if what:
            raise ActionInvalid(f"shell: {what} is shell syntax", hint=_NO_SHELL_HINT)
        at_word_start = not quote and c in " \t"
        i += 1


def command_argv(command: str) -> list[str]:
    """The program and arguments of ``command``, split like a shell would split plain words."""
    if "\x00" in command:
        raise ActionInvalid("shell: the command can't contain NUL bytes")
    _refuse_shell_syntax(command)
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ActionInvalid(f"shell: {exc}", hint="close every quote") from None
    if not argv:
        raise ActionInvalid("shell: the command is empty")
    if "/" in argv[0]:
        raise ActionInvalid(
            f"shell: {argv[0]!r} is a path", hint="give the program's bare name, like wc"
        )
    return argv


def command_check(args: dict[str, Any]) -> None:
    command_argv(args["command"])


class _Command(asyncio.SubprocessProtocol):
    """One running command: its output, kept within MAX_OUTPUT_BYTES (its start and its
    end), and two moments: the program ended, and its output pipe closed (later, when a
    child left in the background still holds it)."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.ended = asyncio.Event()
        self.closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | bytearray) -> None:
        self.total += len(data)
        room = MAX_OUTPUT_BYTES - _OUTPUT_TAIL_BYTES - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        if len(self.tail) > _OUTPUT_TAIL_BYTES:
            del self.tail[: len(self.tail) - _OUTPUT_TAIL_BYTES]

    def process_exited(self) -> None:
        self.ended.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        middle = f"\n[… {cut} bytes cut …]\n".encode() if cut else b""
        return bytes(self.head + middle + self.tail).decode("utf-8", "replace")


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # nothing of it is left


async def _stop_command(transport: asyncio.SubprocessTransport, command: _Command) -> None:
    """Tell the supervisor to kill and reap all the program started (it does so by itself
    when the program ends), and wait until it has.  Its own budget: the caller's may be
    spent or cancelled, and the processes must go all the same."""
    if not command.ended.is_set():
        with contextlib.suppress(ProcessLookupError):
            transport.send_signal(signal.SIGTERM)
    try:
        await Budget(_STOP_MS, label="shell stop").run(command.ended.wait())
    except BudgetExceeded:
        _kill_group(transport.get_pid())  # the supervisor is stuck: at least its group goes
        await command.ended.wait()


async def shell_run(
    workspace: Path | None,
    command: str,
    *,
    allowed: tuple[str, ...],
    timeout_ms: float,
    budget: Budget,
) -> str:
    """Run ``command`` (one program from ``allowed``, by its bare name) in the workspace,
    for at most ``timeout_ms`` and the budget; answer its exit status and output.

    The program gets PATH, LANG and HOME (the workspace) and nothing else of the server's
    environment, and no stdin; it runs under a supervisor (a child subreaper), so
    everything it started, even in a session of its own or orphaned, is killed when it
    ends or runs out of time.  Its path arguments are not checked.
    """
    if not allowed:
        raise ActionInvalid(
            "the shell is turned off",
            hint="the operator can allow programs (BrowserConfig.shell_commands)",
        )
    if workspace is None:
        raise ActionInvalid("this tab has no workspace folder (files and the shell need one)")
    root = Path(workspace)
    argv = command_argv(command)
    if argv[0] not in allowed:
        raise ActionInvalid(
            f"shell: {argv[0]!r} is not allowed", hint="allowed: " + ", ".join(allowed)
        )
    program = shutil.which(argv[0], path=SHELL_PATH)
    if program is None:
        raise ActionFailed(f"shell: {argv[0]!r} is not installed")
    limit = budget.reserve(_COLLECT_MS, label="shell").child(timeout_ms, label="shell")
    limit.check()
    await asyncio.to_thread(root.mkdir, parents=True, exist_ok=True)
    started = time.monotonic()
    transport, command_run = await asyncio.get_running_loop().subprocess_exec(
        _Command,
        sys.executable,
        "-I",  # the supervisor: no PYTHON* variables, no site packages, no engine import
        "-S",
        _SUBREAPER,
        program,
        *argv[1:],
        cwd=root,
        env={"PATH": SHELL_PATH, "HOME": str(root), "LANG": "C.UTF-8"},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    timed_out = False
    try:
        try:
            await limit.run(command_run.ended.wait())
        except BudgetExceeded:
            timed_out = True
        finally:
            await _stop_command(transport, command_run)  # with all it left in the background
        # Every process that held the pipe is gone, so it closes now.
        collect = budget.child(min(_COLLECT_MS, budget.remaining_ms()), label="shell")
        with contextlib.suppress(BudgetExceeded):
            await collect.run(command_run.closed.wait())
    finally:
        transport.close()
    elapsed_ms = (time.monotonic() - started) * 1000
    code = transport.get_returncode()
    if timed_out:
        status = f"timed out after {elapsed_ms:.0f} ms; stopped with all it had started"
    elif code is not None and code < 0:
        status = f"killed by signal {-code}"
    else:
        status = f"exit status {code}"
    text = command_run.text()
    return f"{status}\n{text}" if text else f"{status} (no output)"


SHELL_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec(
        "shell",
        "run one program the operator allowed, in the workspace folder, with plain "
        "arguments (no pipes, redirections, variables or wildcards); answers its exit "
        "status and output",
        (Param("command", str, "like: wc -l downloads/report.csv"),),
        lambda tab, a, b: shell_run(
            tab.workspace,
            a["command"],
            allowed=tab.config.shell_commands,
            timeout_ms=tab.config.shell_timeout_ms,
            budget=b,
        ),
        switch="shell_commands",
        check=command_check,
    ),
)
