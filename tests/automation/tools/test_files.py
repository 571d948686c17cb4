"""The file and shell actions, through the registry, on a real tab with a workspace folder:
normal use, size caps, and every way out of the folder (paths, links, hard links, races)."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from automation import BrowserSession, Budget, Tab
from automation.actions import available, execute, validate
from automation.agent.prompts import system_prompt
from automation.errors import ActionInvalid, Cancelled
from automation.tools import files as workspace
from automation.tools import shell
from tests.bounds import room
from tests.conftest import browser_config
from tests.waiting import eventually

FILE_TOOLS = ("file_list", "file_read", "file_write", "file_check", "file_mkdir", "file_delete")

WAIT_S = 60  # bounds a wait on processes; each ends as soon as its condition holds


async def run(tab: Tab, name: str, *, timeout_ms: float = 5_000, **args: object) -> str:
    return await execute(tab, name, dict(args), budget=Budget(timeout_ms))


def listing(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


@pytest.fixture
async def wtab(browser: BrowserSession, tmp_path: Path) -> AsyncIterator[Tab]:
    tab = await browser.new_tab(workspace=tmp_path / "ws")
    yield tab
    await tab.close()


@pytest.fixture
def ws(wtab: Tab) -> Path:
    assert wtab.workspace is not None
    return wtab.workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret\n")
    return folder


def shell_on(tab: Tab, *programs: str, timeout_ms: int = 30_000) -> None:
    tab.config = dataclasses.replace(
        tab.config, shell_commands=programs, shell_timeout_ms=timeout_ms
    )


# -- files ---------------------------------------------------------------------------------


async def test_files_round_trip(wtab: Tab, ws: Path) -> None:
    assert await run(wtab, "file_write", path="notes/a.txt", content="héllo\n") == (
        "wrote 7 bytes to 'notes/a.txt' (now 7 bytes)"
    )
    assert await run(wtab, "file_write", path="notes/a.txt", content="more\n", append=True) == (
        "appended 5 bytes to 'notes/a.txt' (now 12 bytes)"
    )
    assert await run(wtab, "file_read", path="notes/a.txt") == "héllo\nmore\n"
    assert (ws / "notes" / "a.txt").read_text() == "héllo\nmore\n"
    await run(wtab, "file_write", path="./notes//a.txt", content="new")  # replaces
    assert await run(wtab, "file_read", path="notes/a.txt") == "new"

    assert await run(wtab, "file_list") == "the workspace: 2 entries\ndownloads/\nnotes/"
    assert await run(wtab, "file_list", path="notes") == "'notes': 1 entry\na.txt  3 bytes"
    assert await run(wtab, "file_list", path="downloads") == "'downloads' is empty"

    checked = await run(wtab, "file_check", path="notes/a.txt")
    assert checked.startswith("'notes/a.txt': file, 3 bytes, modified 20")
    assert checked.endswith(f"sha256 {hashlib.sha256(b'new').hexdigest()}")
    assert (await run(wtab, "file_check", path="notes")).startswith("'notes': folder")
    assert (await run(wtab, "file_check", path=".")).startswith("the workspace: folder, 2 ")
    assert await run(wtab, "file_check", path="nope/x") == "'nope/x' does not exist"
    assert await run(wtab, "file_check", path="notes/a.txt/x") == "'notes/a.txt/x' does not exist"

    assert await run(wtab, "file_mkdir", path="x/y") == "made folder 'x/y'"
    assert await run(wtab, "file_mkdir", path="x/y") == "folder 'x/y' already exists"
    with pytest.raises(ActionInvalid, match="no such folder: 'q'"):
        await run(wtab, "file_mkdir", path="q/r", parents=False)
    with pytest.raises(ActionInvalid, match="not a folder"):
        await run(wtab, "file_mkdir", path="notes/a.txt")
    with pytest.raises(ActionInvalid, match="is a folder"):
        await run(wtab, "file_read", path="notes")
    with pytest.raises(ActionInvalid, match=r"no such file: 'notes/b\.txt'"):
        await run(wtab, "file_read", path="notes/b.txt")

    with pytest.raises(ActionInvalid, match="not empty"):
        await run(wtab, "file_delete", path="x")
    assert await run(wtab, "file_delete", path="x/y") == "deleted folder 'x/y'"
    assert await run(wtab, "file_delete", path="notes", recursive=True) == "deleted folder 'notes'"
    assert await run(wtab, "file_delete", path="x") == "deleted folder 'x'"
    with pytest.raises(ActionInvalid, match="does not exist"):
        await run(wtab, "file_delete", path="x")
    for root in ("", ".", "./", "/"):
        with pytest.raises(ActionInvalid):
            await run(wtab, "file_delete", path=root, recursive=True)
    assert listing(ws) == ["downloads"]


async def test_reads_come_in_parts_and_refuse_binary(wtab: Tab, ws: Path) -> None:
    text = "".join(f"{i} é€😀\n" for i in range(3_000))
    await run(wtab, "file_write", path="big.txt", content=text)
    size = len(text.encode())
    first = await run(wtab, "file_read", path="big.txt", max_chars=100)
    body, _, note = first.rpartition("\n… (")
    assert len(body) <= 100 and text.startswith(body)
    assert note == f"{size - 100} more bytes; continue with offset=100)"

    pieces, offset = [], 0
    while True:
        part = await run(wtab, "file_read", path="big.txt", offset=offset, max_chars=7_001)
        body, sep, note = part.rpartition("\n… (")
        if not sep:
            pieces.append(part)
            break
        pieces.append(body)
        more, _, next_offset = note.rstrip(")").partition(" more bytes; continue with offset=")
        assert int(more) == size - int(next_offset)
        offset = int(next_offset)
    assert "".join(pieces) == text  # no character lost or split at a boundary

    mid = await run(wtab, "file_read", path="big.txt", offset=4, max_chars=16)
    assert mid.startswith("€") or mid.startswith("😀")  # a cut character is skipped
    assert await run(wtab, "file_read", path="big.txt", offset=size) == (
        f"(end of 'big.txt': {size} bytes)"
    )
    with pytest.raises(ActionInvalid, match="past it"):
        await run(wtab, "file_read", path="big.txt", offset=size + 1)
    for bad in ({"offset": -1}, {"max_chars": 0}, {"max_chars": 1_000_000}):
        with pytest.raises(ActionInvalid):
            await run(wtab, "file_read", path="big.txt", **bad)

    (ws / "empty.txt").write_bytes(b"")
    assert await run(wtab, "file_read", path="empty.txt") == "'empty.txt' is empty"
    (ws / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(ActionInvalid, match="looks binary") as info:
        await run(wtab, "file_read", path="image.png")
    assert "sha256" in info.value.hint
    (ws / "latin.txt").write_bytes(bytes(range(0xA0, 0x100)) * 4)
    with pytest.raises(ActionInvalid, match="not UTF-8"):
        await run(wtab, "file_read", path="latin.txt")
    (ws / "mostly.txt").write_bytes("café crème\n".encode("latin-1"))
    assert await run(wtab, "file_read", path="mostly.txt") == "caf\ufffd cr\ufffdme\n"


async def test_writes_are_capped(wtab: Tab, ws: Path) -> None:
    with pytest.raises(ActionInvalid, match="too much for one call") as info:
        await run(
            wtab, "file_write", path="huge.txt", content="x" * (workspace.MAX_WRITE_BYTES + 1)
        )
    assert "append" in info.value.hint
    assert not (ws / "huge.txt").exists()
    limit = "x" * workspace.MAX_WRITE_BYTES
    assert "now 1000000 bytes" in await run(wtab, "file_write", path="ok.txt", content=limit)


async def test_listing_is_bounded(wtab: Tab, ws: Path) -> None:
    folder = ws / "many"
    folder.mkdir()
    for i in range(workspace.MAX_LIST_ENTRIES + 50):
        (folder / f"f{i:04}").write_text("")
    rows = (await run(wtab, "file_list", path="many")).splitlines()
    assert rows[0] == "'many': 250 entries" and rows[1] == "f0000  0 bytes"
    assert rows[-1] == "… and 50 more" and len(rows) == workspace.MAX_LIST_ENTRIES + 2


ESCAPES = ["..", "../../etc/passwd", "/etc/passwd", "a/../../x", "a/..", "~/x", "~", "a\\..\\x",
           "a\x00b", "x" * 2_000]  # fmt: skip


@pytest.mark.parametrize("path", ESCAPES)
async def test_paths_that_leave_the_workspace_are_refused(wtab: Tab, ws: Path, path: str) -> None:
    (ws / "a").mkdir()
    before = listing(ws.parent)
    args = {"path": path, "content": "x", "recursive": True}  # each tool takes what it knows
    for name in FILE_TOOLS:
        with pytest.raises(ActionInvalid):
            validate(name, args)  # the parser refuses it before anything runs
        with pytest.raises(ActionInvalid):
            await run(wtab, name, **args)
    assert listing(ws.parent) == before


async def test_links_are_never_followed(wtab: Tab, ws: Path, outside: Path) -> None:
    (ws / "etc").symlink_to("/etc")
    (ws / "out").symlink_to(outside)
    (ws / "secret").symlink_to(outside / "secret.txt")
    (ws / "dangling").symlink_to(outside / "new.txt")
    (ws / "self").symlink_to(".")
    (ws / "box").mkdir()
    (ws / "box" / "inner").symlink_to(outside)
    before = listing(outside)

    for name, args in [
        ("file_read", {"path": "etc/passwd"}),
        ("file_read", {"path": "secret"}),
        ("file_read", {"path": "out/secret.txt"}),
        ("file_list", {"path": "etc"}),
        ("file_list", {"path": "self"}),
        ("file_list", {"path": "box/inner"}),
        ("file_write", {"path": "out/new.txt", "content": "pwned"}),
        ("file_write", {"path": "secret", "content": "pwned"}),
        ("file_write", {"path": "dangling", "content": "pwned"}),
        ("file_write", {"path": "self/x.txt", "content": "pwned"}),
        ("file_mkdir", {"path": "out/sub"}),
        ("file_mkdir", {"path": "out"}),
        ("file_delete", {"path": "out/secret.txt"}),
        ("file_delete", {"path": "etc/hostname"}),
        ("file_check", {"path": "out/secret.txt"}),
    ]:
        with pytest.raises(ActionInvalid, match="symbolic link; links are not followed"):
            await run(wtab, name, **args)
    assert listing(outside) == before
    assert (outside / "secret.txt").read_text() == "top secret\n"

    rows = (await run(wtab, "file_list")).splitlines()
    assert f"secret -> {outside / 'secret.txt'}  (link, not followed)" in rows
    assert "etc -> /etc  (link, not followed)" in rows
    assert await run(wtab, "file_check", path="etc") == (
        "'etc': symbolic link to /etc (not followed)"
    )

    # Deleting a link removes the link, never what it points to.
    assert "untouched" in await run(wtab, "file_delete", path="etc", recursive=True)
    assert "untouched" in await run(wtab, "file_delete", path="out")
    assert "untouched" in await run(wtab, "file_delete", path="secret")
    assert await run(wtab, "file_delete", path="box", recursive=True) == "deleted folder 'box'"
    assert listing(outside) == before and "passwd" in os.listdir("/etc")
    assert listing(ws) == ["dangling", "downloads", "self"]


async def test_a_link_swapped_in_after_the_check_is_not_followed(
    wtab: Tab, ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "a.txt").write_text("mine")
    (ws / "d").mkdir()
    (ws / "d" / "secret.txt").write_text("mine too")
    real_lstat = workspace._lstat

    def lstat_then_swap(name: str, dir_fd: int) -> os.stat_result:
        found = real_lstat(name, dir_fd)
        target = {"a.txt": outside / "secret.txt", "d": outside}.get(name)
        if target is not None:  # between the check and the open, a link takes its place
            path = ws / name
            if path.is_dir() and not path.is_symlink():
                os.rename(path, ws / "d.old")
            else:
                path.unlink()
            path.symlink_to(target)
        return found

    monkeypatch.setattr(workspace, "_lstat", lstat_then_swap)
    with pytest.raises(ActionInvalid, match="links are not followed"):
        await run(wtab, "file_write", path="a.txt", content="pwned")
    with pytest.raises(ActionInvalid, match="links are not followed"):
        await run(wtab, "file_read", path="d/secret.txt")
    monkeypatch.setattr(workspace, "_lstat", real_lstat)
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert listing(outside) == ["secret.txt"]


async def test_hard_links_and_special_files_are_refused(wtab: Tab, ws: Path, outside: Path) -> None:
    os.link(outside / "secret.txt", ws / "hard")
    with pytest.raises(ActionInvalid, match="hard links and is not read"):
        await run(wtab, "file_read", path="hard")
    with pytest.raises(ActionInvalid, match="hard links and is not written"):
        await run(wtab, "file_write", path="hard", content="pwned")
    assert (outside / "secret.txt").read_text() == "top secret\n"

    os.mkfifo(ws / "fifo")
    started = time.monotonic()
    for name, args in [("file_read", {}), ("file_write", {"content": "x"})]:
        with pytest.raises(ActionInvalid, match="not a regular file"):
            await run(wtab, name, path="fifo", **args)
    assert time.monotonic() - started < 30  # no hanging on a pipe nobody writes
    assert "fifo  (special file)" in await run(wtab, "file_list")


async def test_without_a_workspace_the_tools_are_off(tab: Tab) -> None:
    assert tab.workspace is None
    for name in FILE_TOOLS:
        with pytest.raises(ActionInvalid, match="no workspace"):
            await run(tab, name, path="a.txt", content="x")
    shell_on(tab, "ls")
    with pytest.raises(ActionInvalid, match="no workspace"):
        await run(tab, "shell", command="ls")


# -- the shell -----------------------------------------------------------------------------


def sleepers(folder: Path) -> list[int]:
    """Live ``sleep`` processes working in ``folder``."""
    found, real = [], os.path.realpath(folder)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            program = (entry / "cmdline").read_bytes().split(b"\0")[0]
            if program.endswith(b"sleep") and os.readlink(entry / "cwd") == real:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def no_sleepers_left(folder: Path) -> None:
    """Once every ``sleep`` of ``folder`` has ended (a killed process takes a moment to go,
    longer on a busy machine); fails if one is still there after WAIT_S."""
    await eventually(lambda: not sleepers(folder), WAIT_S, "a sleep of the folder lives on")


async def test_the_shell_is_off_unless_the_operator_allows_programs(wtab: Tab) -> None:
    assert wtab.config.shell_commands == ()
    assert "shell" not in [s.name for s in available(wtab.config)]
    assert "\n- shell(" not in system_prompt(available(wtab.config))
    with pytest.raises(ActionInvalid, match="turned off"):
        await run(wtab, "shell", command="ls")
    on = browser_config(shell_commands=("ls",))
    assert "\n- shell(" in system_prompt(available(on))
    assert all(f"\n- {n}(" in system_prompt(available(wtab.config)) for n in FILE_TOOLS)


async def test_an_allowed_program_runs_in_the_workspace_without_secrets(
    wtab: Tab, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABWRIGHT_SECRET_X", "hunter2")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-nope")
    shell_on(wtab, "ls", "pwd", "printenv", "wc")
    await run(wtab, "file_write", path="a b.txt", content="one\ntwo\n")
    assert await run(wtab, "shell", command="ls") == "exit status 0\na b.txt\ndownloads\n"
    assert await run(wtab, "shell", command="pwd") == f"exit status 0\n{ws}\n"
    assert await run(wtab, "shell", command="wc -l 'a b.txt'") == "exit status 0\n2 a b.txt\n"
    env = await run(wtab, "shell", command="printenv")
    assert f"HOME={ws}\n" in env and "PATH=" in env
    assert "TABWRIGHT_SECRET_X" not in env and "hunter2" not in env and "sk-nope" not in env
    asked = await run(wtab, "shell", command="printenv TABWRIGHT_SECRET_X")
    assert asked == "exit status 1 (no output)"
    failed = await run(wtab, "shell", command="ls missing")
    assert failed.startswith("exit status 2\n") and "missing" in failed


async def test_programs_not_allowed_are_refused(wtab: Tab, ws: Path) -> None:
    shell_on(wtab, "ls")
    with pytest.raises(ActionInvalid, match="'cat' is not allowed") as info:
        await run(wtab, "shell", command="cat /etc/passwd")
    assert info.value.hint == "allowed: ls"
    for path in ("/bin/ls", "./ls", "../bin/ls"):
        with pytest.raises(ActionInvalid, match="is a path"):
            await run(wtab, "shell", command=path)
    for empty in ("", "   ", "''"):
        with pytest.raises(ActionInvalid):
            await run(wtab, "shell", command=empty)


SHELL_SYNTAX = ["ls | wc", "ls > out.txt", "ls >out.txt", "ls < x", "ls; rm -rf x", "ls && ls",
                "ls || ls", "ls &", "ls `id`", 'ls "`id`"', "ls $(id)", 'ls "$(id)"', "ls $HOME",
                'ls "$HOME"', "ls ${HOME}", "ls *.txt", "ls ?", "ls [ab]", "ls ~", "ls ~/x",
                "ls\nid", "(ls)", 'ls "unclosed']  # fmt: skip


@pytest.mark.parametrize("command", SHELL_SYNTAX)
async def test_shell_syntax_is_refused(wtab: Tab, ws: Path, command: str) -> None:
    shell_on(wtab, "ls", "rm", "id", "wc")
    with pytest.raises(ActionInvalid):
        validate("shell", {"command": command})
    with pytest.raises(ActionInvalid, match="shell"):
        await run(wtab, "shell", command=command)
    assert listing(ws) == ["downloads"]


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("ls 'a|b' \"c;d\" e\\&f", ["ls", "a|b", "c;d", "e&f"]),
        ("python3 -c 'print(\"$HOME\", 1 | 2)'", ["python3", "-c", 'print("$HOME", 1 | 2)']),
        ('sh -c "sleep 1 & sleep 1"', ["sh", "-c", "sleep 1 & sleep 1"]),
        ("echo 5$ a~b", ["echo", "5$", "a~b"]),
    ],
)
def test_quoted_text_is_plain_arguments(command: str, argv: list[str]) -> None:
    assert shell.command_argv(command) == argv


async def test_a_command_past_its_time_is_killed_with_its_children(wtab: Tab, ws: Path) -> None:
    shell_on(wtab, "sleep", "sh", timeout_ms=1_000)
    started = time.monotonic()
    answer = await run(wtab, "shell", command="sleep 60", timeout_ms=10_000)
    assert answer.startswith("timed out after ") and answer.endswith(" (no output)")
    assert time.monotonic() - started < 8  # its 1 s, not the call's 10 s

    started = time.monotonic()
    answer = await run(wtab, "shell", command='sh -c "sleep 30 & sleep 30"', timeout_ms=10_000)
    assert answer.startswith("timed out") and time.monotonic() - started < 8
    await no_sleepers_left(ws)

    # The program ended but left a child behind: the child goes too, and the answer comes.
    started = time.monotonic()
    answer = await run(wtab, "shell", command='sh -c "sleep 30 & echo started"')
    assert answer == "exit status 0\nstarted\n" and time.monotonic() - started < 8
    await no_sleepers_left(ws)

    answer = await run(wtab, "shell", command="sh -c 'echo bye; kill -9 $$'")
    assert answer == "killed by signal 9\nbye\n"


async def test_a_process_that_leaves_the_group_is_killed_too(wtab: Tab, ws: Path) -> None:
    shell_on(wtab, "setsid", timeout_ms=1_000)
    try:
        answer = await run(wtab, "shell", command="setsid sleep 20")
        assert answer.startswith("timed out")
        assert not sleepers(ws)  # the supervisor reaped it before answering
    finally:
        for pid in sleepers(ws):
            os.kill(pid, signal.SIGKILL)


async def test_the_budget_bounds_the_command_and_cancel_stops_it(wtab: Tab, ws: Path) -> None:
    shell_on(wtab, "sleep")
    started = time.monotonic()
    answer = await run(wtab, "shell", command="sleep 60", timeout_ms=1_500)
    assert answer.startswith("timed out") and time.monotonic() - started < 60  # not its end
    await no_sleepers_left(ws)

    budget = room()
    call = asyncio.ensure_future(execute(wtab, "shell", {"command": "sleep 60"}, budget=budget))
    await eventually(lambda: bool(sleepers(ws)), WAIT_S, "the sleep started")
    budget.cancel("stop button")
    with pytest.raises(Cancelled):
        await call
    await no_sleepers_left(ws)


async def test_output_is_capped_keeping_start_and_end(wtab: Tab) -> None:
    shell_on(wtab, "seq")
    answer = await run(wtab, "shell", command="seq 1 100000")
    assert answer.startswith("exit status 0\n1\n2\n3\n") and answer.endswith("99999\n100000\n")
    cut = 588_895 - shell.MAX_OUTPUT_BYTES
    assert f"[… {cut} bytes cut …]" in answer
    assert len(answer) < shell.MAX_OUTPUT_BYTES + 100
