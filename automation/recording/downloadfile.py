"""A downloaded file against a download check (automation.recording.downloads): its
name, type, size, a CSV's header and rows, a phrase.

Only the standard library, so that a scenario's pytest export (automation.recording.export)
writes the code below its marker into the exported file as it is: the exported test
asserts what the replay checks, in the same words.
"""

from __future__ import annotations

__all__ = ["MAX_READ_BYTES", "csv_table", "file_type", "fold_text", "holds_file"]

# -- written into an exported pytest file as it is ----------------------------------
import csv
import fnmatch
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

MAX_READ_BYTES = 20 * 1024 * 1024
CSV_SNIFF_BYTES = 64 * 1024
CSV_DELIMITERS = ",;\t|"


def file_type(name: str, head: bytes) -> str:
    """What a file is: by its first bytes, then by its name."""
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    lower = name.lower()
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError:
        if len(head) >= 4:  # a multi-byte character cut at the end of what was read
            try:
                text = head[:-3].decode("utf-8-sig")
            except UnicodeDecodeError:
                return "other"
        else:
            return "other"
    if "\x00" in text:
        return "other"
    if lower.endswith((".csv", ".tsv")):
        return "csv"
    if lower.endswith(".json") or text.lstrip()[:1] in ("{", "["):
        return "json" if _is_json_start(text) else "text"
    return "text"


def _is_json_start(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return text.lstrip()[:1] in ("{", "[")  # cut short: its start is JSON's
    return True


def holds_file(path: Path, name: str, args: dict[str, Any]) -> tuple[bool, str]:
    """Whether the file at ``path`` (named ``name``) has what the check ``args`` asks,
    and what it has instead."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        data = handle.read(MAX_READ_BYTES)
    kind = file_type(name, data[:CSV_SNIFF_BYTES])
    if args.get("name") and not fnmatch.fnmatchcase(name.lower(), str(args["name"]).lower()):
        return False, f"the download is named {name!r}"
    if args.get("type") and args["type"] != kind:
        return False, f"{name!r} is {kind}"
    if size < args.get("min_bytes", 0) or size > args.get("max_bytes", size):
        return False, f"{name!r} has {size} bytes"
    wants_text = "header" in args or "rows" in args or "text" in args
    if not wants_text:
        return True, ""
    if kind not in ("csv", "text", "json"):
        return False, f"{name!r} is {kind}, not text"
    if size > MAX_READ_BYTES:
        return False, f"{name!r} is larger than {MAX_READ_BYTES} bytes, too large to read"
    text = data.decode("utf-8-sig", errors="replace")
    if "text" in args and fold_text(args["text"]) not in fold_text(text):
        return False, f"{name!r} does not say {args['text']!r}"
    if "header" in args or "rows" in args:
        try:
            header, rows = csv_table(text)
        except csv.Error as exc:
            return False, f"{name!r} can't be read as CSV: {exc}"
        if "header" in args and [h.strip() for h in header] != [h.strip() for h in args["header"]]:
            return False, f"{name!r} has the columns {header!r}"
        if "rows" in args and rows != args["rows"]:
            return False, f"{name!r} has {rows} row(s) of data"
    return True, ""


def csv_table(text: str) -> tuple[list[str], int]:
    """A CSV's header and how many non-empty rows follow it; csv.Error if it can't be
    read (a field over csv's limit, a NUL)."""
    reader = csv.reader(io.StringIO(text, newline=""), **csv_dialect(text[:CSV_SNIFF_BYTES]))
    header = next(reader, [])
    return header, sum(1 for row in reader if any(cell.strip() for cell in row))


def csv_dialect(sample: str) -> dict[str, Any]:
    """Excel's dialect with the delimiter (of CSV_DELIMITERS) that splits most rows of
    ``sample`` alike, in more than one column (a comma when none does).  Each delimiter
    is tried by csv's own reader, in time linear in the sample: csv.Sniffer's patterns
    take time quadratic in it, with the interpreter held, so a file of quotes and line
    breaks held every thread of the process for minutes."""
    cut = len(sample) >= CSV_SNIFF_BYTES  # its last row may be cut short: not counted
    best, most = ",", (0, 0)
    for delimiter in CSV_DELIMITERS:
        try:
            rows = list(csv.reader(io.StringIO(sample, newline=""), delimiter=delimiter))
        except csv.Error:
            continue
        widths = Counter(len(row) for row in rows[: -1 if cut else None] if row)
        if not widths:
            continue
        width, alike = widths.most_common(1)[0]
        if width > 1 and (alike, width) > most:
            best, most = delimiter, (alike, width)
    return {"delimiter": best, "skipinitialspace": f'{best} "' in sample}


def fold_text(text: str) -> str:
    return " ".join(text.split()).casefold()
