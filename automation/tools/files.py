"""The agent's file tools: files inside a run's workspace folder.

The agent names files by paths relative to the workspace (``downloads/report.csv``).
Nothing here reaches outside it: absolute paths, ``~``, ``..`` and NUL bytes are refused,
and every path is walked one component at a time from an open descriptor of the workspace,
each folder opened with ``O_NOFOLLOW`` and the file itself too.  So a symbolic link, made by
a page's download or by a shell command, is never followed, not even one swapped in after a
check; a link itself may be listed, checked and deleted.  A file with more than one hard
link is neither read nor written: its other name may be outside.
"""

from __future__ import annotations

import asyncio
import codecs
import errno
import hashlib
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from automation.actionspec import ActionSpec, Param, optional
from automation.budget import Budget
from automation.errors import ActionFailed, ActionInvalid, TabwrightError

__all__ = [
    "DEFAULT_READ_CHARS",
    "FILE_ACTIONS",
    "MAX_LIST_ENTRIES",
    "MAX_READ_CHARS",
    "MAX_WRITE_BYTES",
    "file_check",
    "file_delete",
    "file_list",
    "file_mkdir",
    "file_read",
    "file_write",
    "parse_path",
    "path_check",
    "read_check",
]

T = TypeVar("T")

MAX_PATH_CHARS = 1_000
MAX_LIST_ENTRIES = 200  # shown by file_list
_MAX_LIST_SCAN = 10_000  # read from one folder; past that, only counted
DEFAULT_READ_CHARS = 20_000
MAX_READ_CHARS = 100_000
_MIN_READ_CHARS = 16  # room for at least one whole UTF-8 character
MAX_WRITE_BYTES = 1_000_000  # one file_write call
MAX_HASH_BYTES = 64 * 1024 * 1024  # file_check hashes files up to this size

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO a command left behind must not hang the call.
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


# -- paths ---------------------------------------------------------------------------------


def parse_path(path: str, *, root_ok: bool = False) -> tuple[str, ...]:
    """The components of a workspace path; ActionInvalid for anything that could leave it."""
    if "\x00" in path:
        raise ActionInvalid("a path can't contain NUL bytes")
    if len(path) > MAX_PATH_CHARS:
        raise ActionInvalid(f"a path is at most {MAX_PATH_CHARS} characters")
    relative = "paths are relative to the workspace folder, like downloads/report.csv"
    if path.startswith("/"):
        raise ActionInvalid(f"{path!r} is an absolute path", hint=relative)
    if path.startswith("~"):
        raise ActionInvalid(f"{path!r}: ~ is not the workspace", hint=relative)
    if "\\" in path:
        raise ActionInvalid(f"{path!r}: separate folders with /", hint=relative)
    parts = tuple(p for p in path.split("/") if p not in ("", "."))
    if ".." in parts:
        raise ActionInvalid(f"{path!r}: '..' is not allowed", hint=relative)
    if not parts and not root_ok:
        raise ActionInvalid("this needs a path inside the workspace, not the workspace itself")
    return parts


def path_check(args: dict[str, Any]) -> None:
    """The ``check`` of the file actions: refuse a bad path before anything runs."""
    if "path" in args:
        parse_path(args["path"], root_ok=True)


def read_check(args: dict[str, Any]) -> None:
    path_check(args)
    if args.get("offset", 0) < 0:
        raise ActionInvalid("file_read: offset is a byte position, 0 or more")
    max_chars = args.get("max_chars", DEFAULT_READ_CHARS)
    if not _MIN_READ_CHARS <= max_chars <= MAX_READ_CHARS:
        raise ActionInvalid(
            f"file_read: max_chars must be between {_MIN_READ_CHARS} and {MAX_READ_CHARS}"
        )


def _root(workspace: Path | None) -> Path:
    if workspace is None:
        raise ActionInvalid("this tab has no workspace folder (files and the shell need one)")
    return Path(workspace)


def _shown(parts: tuple[str, ...]) -> str:
    return repr("/".join(parts)) if parts else "the workspace"


def _name(name: str) -> str:
    return name if name.isprintable() else repr(name)


class _Missing(ActionInvalid):
    """A path that is not there, or runs through a file: file_check answers it, the other
    tools raise it."""


def _link_refused(parts: tuple[str, ...]) -> ActionInvalid:
    return ActionInvalid(
        f"{_shown(parts)} is a symbolic link; links are not followed",
        hint="use the path of the real file inside the workspace",
    )


def _lstat(name: str, dir_fd: int) -> os.stat_result:
    return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)


def _open_root(root: Path, *, create: bool) -> int:
    if create:
        root.mkdir(parents=True, exist_ok=True)
    try:
        return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise _Missing("the workspace folder does not exist yet") from None


def _open_folder(fd: int, parts: tuple[str, ...], *, create: bool) -> int:
    """Open ``parts[-1]`` as a folder of ``fd`` (made first when ``create``), never a link."""
    name = parts[-1]
    try:
        st = _lstat(name, fd)
    except FileNotFoundError:
        if not create:
            raise _Missing(
                f"no such folder: {_shown(parts)}", hint="file_list shows what is there"
            ) from None
        try:
            os.mkdir(name, 0o755, dir_fd=fd)
        except FileExistsError:
            pass
        st = _lstat(name, fd)
    if stat.S_ISLNK(st.st_mode):
        raise _link_refused(parts)
    if not stat.S_ISDIR(st.st_mode):
        raise _Missing(f"{_shown(parts)} is not a folder")
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # replaced by a link since the check
            raise _link_refused(parts) from None
        raise


@contextmanager
def _walk(root: Path, parts: tuple[str, ...], *, create: bool = False) -> Iterator[int]:
    """An open descriptor of the folder ``parts`` (the workspace for no parts)."""
    fd = _open_root(root, create=create)
    try:
        for i in range(len(parts)):
            inner = _open_folder(fd, parts[: i + 1], create=create)
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def _open_file(
    dir_fd: int, parts: tuple[str, ...], flags: int, *, for_write: bool = False
) -> tuple[int, os.stat_result]:
    """Open the regular file ``parts[-1]`` of ``dir_fd`` without following a link."""
    name = parts[-1]
    try:
        st = _lstat(name, dir_fd)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise _Missing(
                f"no such file: {_shown(parts)}", hint="file_list shows what is there"
            ) from None
    else:
        if stat.S_ISLNK(st.st_mode):
            raise _link_refused(parts)
        if stat.S_ISDIR(st.st_mode):
            raise ActionInvalid(
                f"{_shown(parts)} is a folder", hint="file_list shows what is in it"
            )
        if not stat.S_ISREG(st.st_mode):
            raise ActionInvalid(f"{_shown(parts)} is not a regular file")
    try:
        fd = os.open(name, flags | _FILE_FLAGS, 0o644, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link put there since the check
            raise _link_refused(parts) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ActionInvalid(f"{_shown(parts)} is not a regular file")
        if st.st_nlink > 1:
            what = "written" if for_write else "read"
            raise ActionInvalid(
                f"{_shown(parts)} has {st.st_nlink} hard links and is not {what}: another "
                "of its names may be outside the workspace"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _oserror(exc: OSError, parts: tuple[str, ...]) -> TabwrightError:
    shown = _shown(parts)
    if exc.errno == errno.ENOENT:
        return ActionInvalid(f"{shown} does not exist", hint="file_list shows what is there")
    if exc.errno == errno.ENOTDIR:
        return ActionInvalid(f"{shown}: a part of the path is not a folder")
    if exc.errno == errno.EISDIR:
        return ActionInvalid(f"{shown} is a folder", hint="file_list shows what is in it")
    if exc.errno == errno.ENOTEMPTY:
        return ActionInvalid(f"{shown} is not empty", hint="recursive=true deletes it all")
    if exc.errno == errno.EEXIST:
        return ActionInvalid(f"{shown} already exists")
    if exc.errno == errno.ELOOP:
        return _link_refused(parts)
    if exc.errno == errno.ENAMETOOLONG:
        return ActionInvalid(f"{shown}: a name in it is too long")
    return ActionFailed(f"{shown}: {exc.strerror or exc}")


async def _in_thread(
    budget: Budget, work: Callable[..., T], root: Path, parts: tuple[str, ...], *args: object
) -> T:
    """Run blocking file work off the event loop, within the budget."""

    def guarded() -> T:
        try:
            return work(root, parts, *args)
        except OSError as exc:
            raise _oserror(exc, parts) from None

    return await budget.run(asyncio.to_thread(guarded))


def _entries(count: int) -> str:
    return "1 entry" if count == 1 else f"{count} entries"


def _mtime(st: os.stat_result) -> str:
    return datetime.fromtimestamp(st.st_mtime, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _describe(name: str, st: os.stat_result, dir_fd: int) -> str:
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return f"{_name(name)}/"
    if stat.S_ISREG(mode):
        return f"{_name(name)}  {st.st_size} bytes"
    if stat.S_ISLNK(mode):
        target = os.readlink(name, dir_fd=dir_fd)
        return f"{_name(name)} -> {_name(target)}  (link, not followed)"
    return f"{_name(name)}  (special file)"


# -- the file tools ------------------------------------------------------------------------


def _list(root: Path, parts: tuple[str, ...]) -> str:
    if not parts and not root.exists():
        return "the workspace is empty"
    with _walk(root, parts) as fd:
        names: list[str] = []
        more = 0
        with os.scandir(fd) as entries:
            for entry in entries:
                if len(names) < _MAX_LIST_SCAN:
                    names.append(entry.name)
                else:
                    more += 1
        names.sort()
        rows = []
        for name in names[:MAX_LIST_ENTRIES]:
            try:
                rows.append(_describe(name, _lstat(name, fd), fd))
            except FileNotFoundError:
                continue  # deleted while listing
        more += len(names) - min(len(names), MAX_LIST_ENTRIES)
    if not rows:
        return f"{_shown(parts)} is empty"
    head = f"{_shown(parts)}: {_entries(len(rows) + more)}"
    tail = [f"… and {more} more"] if more else []
    return "\n".join([head, *rows, *tail])


async def file_list(workspace: Path | None, path: str = "", *, budget: Budget) -> str:
    """The entries of a workspace folder: folders end with /, files show their size,
    links show where they point (never followed)."""
    return await _in_thread(budget, _list, _root(workspace), parse_path(path, root_ok=True))


def _read(root: Path, parts: tuple[str, ...], offset: int, max_chars: int) -> str:
    with _walk(root, parts[:-1]) as dir_fd:
        fd, st = _open_file(dir_fd, parts, os.O_RDONLY)
        try:
            size = st.st_size
            if offset > size:
                raise ActionInvalid(f"{_shown(parts)} has only {size} bytes; offset is past it")
            data = bytearray()
            while len(data) < max_chars:
                chunk = os.pread(fd, max_chars - len(data), offset + len(data))
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
    if size == 0:
        return f"{_shown(parts)} is empty"
    if offset == size:
        return f"(end of {_shown(parts)}: {size} bytes)"
    if b"\x00" in data:
        raise ActionInvalid(
            f"{_shown(parts)} looks binary ({size} bytes); file_read shows text only",
            hint="file_check gives its size and sha256",
        )
    start = 0
    while offset and start < min(3, len(data)) and data[start] & 0xC0 == 0x80:
        start += 1  # the offset falls inside a character: begin at the next one
    end_of_file = offset + len(data) >= size
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text = decoder.decode(bytes(data[start:]), final=end_of_file)
    end = offset + len(data) - len(decoder.getstate()[0])
    if text.count("\ufffd") > max(8, len(text) // 10):
        raise ActionInvalid(
            f"{_shown(parts)} is not UTF-8 text ({size} bytes)",
            hint="file_check gives its size and sha256",
        )
    if end < size:
        text += f"\n… ({size - end} more bytes; continue with offset={end})"
    return text


async def file_read(
    workspace: Path | None,
    path: str,
    *,
    offset: int = 0,
    max_chars: int = DEFAULT_READ_CHARS,
    budget: Budget,
) -> str:
    """A text file's content as UTF-8 (bad bytes become U+FFFD), from byte ``offset``, at
    most ``max_chars`` characters; a cut answer ends with the offset to continue from."""
    read_check({"offset": offset, "max_chars": max_chars})
    return await _in_thread(budget, _read, _root(workspace), parse_path(path), offset, max_chars)


def _write(root: Path, parts: tuple[str, ...], data: bytes, append: bool) -> str:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else 0)
    with _walk(root, parts[:-1], create=True) as dir_fd:
        fd, _ = _open_file(dir_fd, parts, flags, for_write=True)
        try:
            if not append:
                os.ftruncate(fd, 0)  # only now: a refused file is left as it was
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
    verb = "appended" if append else "wrote"
    return f"{verb} {len(data)} bytes to {_shown(parts)} (now {size} bytes)"


async def file_write(
    workspace: Path | None, path: str, content: str, *, append: bool = False, budget: Budget
) -> str:
    """Write ``content`` as UTF-8 (or add it at the end with ``append``), at most
    MAX_WRITE_BYTES a call; missing folders on the way are made."""
    root, parts = _root(workspace), parse_path(path)
    data = content.encode("utf-8", "replace")
    if len(data) > MAX_WRITE_BYTES:
        raise ActionInvalid(
            f"file_write: {len(data)} bytes is too much for one call (at most {MAX_WRITE_BYTES})",
            hint="write it in parts with append=true",
        )
    return await _in_thread(budget, _write, root, parts, data, append)


def _sha256(dir_fd: int, parts: tuple[str, ...], st: os.stat_result) -> str:
    fd = os.open(parts[-1], os.O_RDONLY | _FILE_FLAGS, dir_fd=dir_fd)
    try:
        if not os.path.samestat(st, os.fstat(fd)):
            return "(changed while checking)"
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def _check(root: Path, parts: tuple[str, ...]) -> str:
    try:
        with _walk(root, parts[:-1]) as dir_fd:
            if not parts:
                st = os.fstat(dir_fd)
                with os.scandir(dir_fd) as entries:
                    count = sum(1 for _ in entries)
                return f"the workspace: folder, {_entries(count)}, modified {_mtime(st)}"
            st = _lstat(parts[-1], dir_fd)
            shown, mode = _shown(parts), st.st_mode
            if stat.S_ISREG(mode):
                digest = (
                    f"sha256 {_sha256(dir_fd, parts, st)}"
                    if st.st_size <= MAX_HASH_BYTES
                    else f"too large to hash (over {MAX_HASH_BYTES} bytes)"
                )
                return f"{shown}: file, {st.st_size} bytes, modified {_mtime(st)}, {digest}"
            if stat.S_ISDIR(mode):
                return f"{shown}: folder, modified {_mtime(st)}"
            if stat.S_ISLNK(mode):
                target = _name(os.readlink(parts[-1], dir_fd=dir_fd))
                return f"{shown}: symbolic link to {target} (not followed)"
            return f"{shown}: special file (not a regular file, folder or link)"
    except (_Missing, FileNotFoundError):
        return f"{_shown(parts)} does not exist"


async def file_check(workspace: Path | None, path: str, *, budget: Budget) -> str:
    """Whether ``path`` exists, and its type, size, modification time and sha256."""
    return await _in_thread(budget, _check, _root(workspace), parse_path(path, root_ok=True))


def _mkdir(root: Path, parts: tuple[str, ...], parents: bool) -> str:
    root.mkdir(parents=True, exist_ok=True)
    with _walk(root, parts[:-1], create=parents) as dir_fd:
        try:
            os.mkdir(parts[-1], 0o755, dir_fd=dir_fd)
        except FileExistsError:
            st = _lstat(parts[-1], dir_fd)
            if stat.S_ISLNK(st.st_mode):
                raise _link_refused(parts) from None
            if not stat.S_ISDIR(st.st_mode):
                raise ActionInvalid(f"{_shown(parts)} exists and is not a folder") from None
            return f"folder {_shown(parts)} already exists"
    return f"made folder {_shown(parts)}"


async def file_mkdir(
    workspace: Path | None, path: str, *, parents: bool = True, budget: Budget
) -> str:
    """Make a folder (and with ``parents`` the missing ones above it); one that already
    exists is fine."""
    return await _in_thread(budget, _mkdir, _root(workspace), parse_path(path), parents)


def _delete(root: Path, parts: tuple[str, ...], recursive: bool) -> str:
    name = parts[-1]
    with _walk(root, parts[:-1]) as dir_fd:
        st = _lstat(name, dir_fd)
        if stat.S_ISDIR(st.st_mode):
            if recursive:
                shutil.rmtree(name, dir_fd=dir_fd)  # fd-based: never follows a link inside
            else:
                os.rmdir(name, dir_fd=dir_fd)
            return f"deleted folder {_shown(parts)}"
        os.unlink(name, dir_fd=dir_fd)  # a link goes, never what it points to
    if stat.S_ISLNK(st.st_mode):
        return f"deleted the link {_shown(parts)} (what it pointed to is untouched)"
    return f"deleted {_shown(parts)}"


async def file_delete(
    workspace: Path | None, path: str, *, recursive: bool = False, budget: Budget
) -> str:
    """Delete a file, a link or an empty folder (any folder with ``recursive``); never the
    workspace itself."""
    return await _in_thread(budget, _delete, _root(workspace), parse_path(path), recursive)


FILE_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec(
        "file_list",
        "list a workspace folder (downloads land in downloads/); paths are relative to "
        "the workspace",
        (optional("path", str, "folder, like downloads (default: the workspace itself)"),),
        lambda tab, a, b: file_list(tab.workspace, a.get("path", ""), budget=b),
        check=path_check,
    ),
    ActionSpec(
        "file_read",
        "read a workspace text file from a byte offset; a long one comes in parts",
        (
            Param("path", str, "file, like downloads/report.csv"),
            optional("offset", int, "byte to start at (default 0)"),
            optional("max_chars", int, f"characters at most (default {DEFAULT_READ_CHARS})"),
        ),
        lambda tab, a, b: file_read(
            tab.workspace,
            a["path"],
            offset=a.get("offset", 0),
            max_chars=a.get("max_chars", DEFAULT_READ_CHARS),
            budget=b,
        ),
        check=read_check,
    ),
    ActionSpec(
        "file_write",
        f"write a workspace file (at most {MAX_WRITE_BYTES} bytes a call), or add to its "
        "end (append)",
        (
            Param("path", str, "file, like notes/summary.txt"),
            Param("content", str, "the text"),
            optional("append", bool, "add to the end instead of replacing"),
        ),
        lambda tab, a, b: file_write(
            tab.workspace, a["path"], a["content"], append=a.get("append", False), budget=b
        ),
        check=path_check,
    ),
    ActionSpec(
        "file_check",
        "whether a workspace path exists: type, size, time, sha256",
        (Param("path", str, "file or folder"),),
        lambda tab, a, b: file_check(tab.workspace, a["path"], budget=b),
        check=path_check,
    ),
    ActionSpec(
        "file_mkdir",
        "make a workspace folder (and missing parents unless parents=false)",
        (Param("path", str, "folder"), optional("parents", bool, "make missing parents too")),
        lambda tab, a, b: file_mkdir(
            tab.workspace, a["path"], parents=a.get("parents", True), budget=b
        ),
        check=path_check,
    ),
    ActionSpec(
        "file_delete",
        "delete a workspace file, link or empty folder (recursive: a whole folder)",
        (Param("path", str, "what to delete"), optional("recursive", bool, "a whole folder")),
        lambda tab, a, b: file_delete(
            tab.workspace, a["path"], recursive=a.get("recursive", False), budget=b
        ),
        check=path_check,
    ),
)
