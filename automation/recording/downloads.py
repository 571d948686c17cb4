"""Checks of a step's download: the ``expect`` kind ``download``.

A back-office task often ends in an export whose content is the point of the run.  A
check of kind ``download`` holds when the tab's latest finished download (the run's
folder keeps each one: :class:`automation.browser.downloads.DownloadKeeper`) has every
property it names:

- ``name``: a file-name pattern (``orders-*.csv``; ``*`` and ``?`` as in a shell, case
  ignored);
- ``type``: what the file is, by its content first and its name second: ``csv``,
  ``pdf``, ``json``, ``text``, ``zip`` (xlsx and docx are zips) or ``other``;
- ``min_bytes`` / ``max_bytes``: its size;
- for a CSV, ``header`` (its first row: these columns, in this order) and ``rows`` (how
  many rows of data follow it);
- for text (a CSV included), ``text``: a phrase it contains (spaces squeezed, case
  ignored).

The file is read off the event loop, at most :data:`MAX_READ_BYTES` of it, through the
standard library's ``csv`` module (which reads quoted fields, embedded line breaks and
the Excel dialect).  :func:`propose` describes a download as such a check, for the person
who saves a run that downloaded something.
"""

from __future__ import annotations

import asyncio
import csv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from automation.errors import ScenarioInvalid
from automation.recording.downloadfile import (
    CSV_SNIFF_BYTES,
    MAX_READ_BYTES,
    csv_table,
    file_type,
    holds_file,
)

__all__ = ["ARGS", "MAX_READ_BYTES", "TYPES", "file_type", "holds", "propose", "proposed",
           "validate"]  # fmt: skip

ARGS = ("name", "type", "min_bytes", "max_bytes", "header", "rows", "text")
TYPES = ("csv", "pdf", "json", "text", "zip", "other")
MAX_HEADER = 200
MAX_TEXT = 1_000
MAX_ROWS = 10_000_000
MAX_BYTES = 10**12  # a size bound's most


def validate(args: dict[str, Any], *, where: str, index: int) -> dict[str, Any]:
    """The args of a download check, checked; ScenarioInvalid names what is wrong."""
    unknown = set(args) - {"kind", *ARGS}
    if unknown:
        raise ScenarioInvalid(f"{where}: download takes no {', '.join(sorted(unknown))}",
                              index=index, hint="it takes " + ", ".join(ARGS))  # fmt: skip
    clean: dict[str, Any] = {"kind": "download"}
    for name in ("name", "text"):
        if name in args:
            value = args[name]
            if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
                raise ScenarioInvalid(f"{where}: download {name} must be text of 1 to "
                                      f"{MAX_TEXT} characters", index=index)  # fmt: skip
            clean[name] = value
    if "type" in args:
        if args["type"] not in TYPES:
            raise ScenarioInvalid(f"{where}: download type is one of {', '.join(TYPES)}",
                                  index=index)  # fmt: skip
        clean["type"] = args["type"]
    for name in ("min_bytes", "max_bytes", "rows"):
        if name in args:
            value = args[name]
            if (
                not isinstance(value, int)
                or isinstance(value, bool)
                or not 0 <= value <= (MAX_ROWS if name == "rows" else MAX_BYTES)
            ):
                raise ScenarioInvalid(f"{where}: download {name} must be a whole number, 0 or "
                                      "more", index=index)  # fmt: skip
            clean[name] = value
    if "header" in args:
        header = args["header"]
        if (
            not isinstance(header, list) or not 1 <= len(header) <= MAX_HEADER
            or not all(isinstance(h, str) and len(h) <= MAX_TEXT for h in header)
        ):  # fmt: skip
            raise ScenarioInvalid(f"{where}: download header must be a list of 1 to "
                                  f"{MAX_HEADER} column names", index=index)  # fmt: skip
        clean["header"] = list(header)
    if len(clean) == 1:
        raise ScenarioInvalid(f"{where}: a download check names at least one of "
                              + ", ".join(ARGS), index=index)  # fmt: skip
    if ("header" in clean or "rows" in clean) and clean.get("type", "csv") != "csv":
        raise ScenarioInvalid(f"{where}: header and rows are a CSV's", index=index)
    if clean.get("min_bytes", 0) > clean.get("max_bytes", MAX_BYTES):  # no file passes it
        raise ScenarioInvalid(f"{where}: download min_bytes is over its max_bytes",
                              index=index)  # fmt: skip
    return clean


# A check reads up to MAX_READ_BYTES of a file a page served, seconds of work for some:
# in threads of their own, so that none holds the event loop's default executor (what
# else the process reads, and big pages' parses, would wait behind it), nor waits on it.
_threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tabwright-download-check")


async def holds(path: Path, name: str, args: dict[str, Any]) -> tuple[bool, str]:
    """Whether the download at ``path`` (named ``name``) has what ``args`` asks, and
    what it has instead; read in a thread of the checks' own."""
    return await asyncio.get_running_loop().run_in_executor(_threads, holds_file, path, name, args)


async def proposed(path: Path, name: str) -> dict[str, Any]:
    """:func:`propose`, in a thread of the checks' own."""
    return await asyncio.get_running_loop().run_in_executor(_threads, propose, path, name)


def propose(path: Path, name: str) -> dict[str, Any]:
    """A download check for the file as it is: its name (its digits any), type, a size
    it must reach, and for a CSV its header; not its row count, which the next day's
    export has its own of."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        data = handle.read(MAX_READ_BYTES)
    kind = file_type(name, data[:CSV_SNIFF_BYTES])
    args: dict[str, Any] = {"kind": "download", "name": _pattern(name), "type": kind,
                            "min_bytes": 1 if size else 0}  # fmt: skip
    if kind == "csv" and size <= MAX_READ_BYTES:
        try:
            header, _rows = csv_table(data.decode("utf-8-sig", errors="replace"))
        except csv.Error:  # not a CSV after all: no header to check
            header = []
        if header and len(header) <= MAX_HEADER and all(len(h) <= MAX_TEXT for h in header):
            args.update(header=header)
    return args


def _pattern(name: str) -> str:
    """The name with its digit runs as ``*`` (a date or a number that changes each day)
    and its special characters escaped."""
    out, digits = [], False
    for char in name:
        if char.isdigit():
            if not digits:
                out.append("*")
            digits = True
            continue
        digits = False
        out.append(f"[{char}]" if char in "*?[]" else char)
    return "".join(out)[:MAX_TEXT]
