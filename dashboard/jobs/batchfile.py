"""A batch's rows of parameter values, read from a CSV file (a header row naming the
scenario's parameters, then a row of values per replay) or a JSON list of objects.

Everything is checked before anything runs, and a refusal names what is wrong: a column
the scenario has no parameter for, a parameter without a default that no column gives, a
row whose value for such a parameter is empty, a double quote opened and never closed
(the line it opened on: read on, every line after it would be one value), a file that is
not UTF-8, too big, or holds no row.  A value left empty (or out of a JSON object, or
past the end of a CSV row shorter than the header) takes the parameter's default; any
other is typed as it is, spaces included.  A CSV whose first line is ``sep=;`` (Excel's)
is read with the separator it names.  The parameters are those a replay of the scenario
takes (:func:`automation.recording.takes.replay_takes`): its login scenario's too, needed
only when it signs in again (a row without one and without a default has no value).
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Mapping

from automation.errors import ActionInvalid
from automation.recording.takes import Taken
from dashboard.lib import jsonin

__all__ = ["MAX_BATCH_BYTES", "MAX_ROWS", "BatchFileInvalid", "ParamsInvalid", "check_params",
           "json_rows", "read_rows"]  # fmt: skip

MAX_BATCH_BYTES = 5 * 1024 * 1024
MAX_ROWS = 10_000
MAX_VALUE_CHARS = 10_000
MAX_COLUMNS = 1_000  # a row's values: a scenario's parameters, and room for notes


class ParamsInvalid(ActionInvalid):
    code = "params_invalid"


class BatchFileInvalid(ParamsInvalid):
    code = "batch_file_invalid"


_SEPARATORS = {";": "semicolons", "\t": "tabs", "|": "bars"}


def check_params(params: Mapping[str, str], *, takes: Mapping[str, Taken]) -> dict[str, str]:
    """One replay's values: every parameter the scenario's replay takes (``takes``), a
    missing or empty one taking its default; ParamsInvalid naming a parameter it does not
    take, one it needs that is not given, or a value longer than a replay's field takes."""
    unknown = sorted(set(params) - set(takes))
    if unknown:
        known = ", ".join(sorted(takes)) or "none"
        raise ParamsInvalid(f"the scenario has no parameter {unknown[0]!r}",
                            hint=f"its parameters: {known}")  # fmt: skip
    values = {}
    for name, taken in takes.items():
        value = str(params.get(name, "") or "") or taken.default
        if value is not None and len(value) > MAX_VALUE_CHARS:  # as a replay and a batch take it
            raise ParamsInvalid(f"the parameter {name!r} is over {MAX_VALUE_CHARS} characters")
        if value is None and taken.needed:
            raise ParamsInvalid(f"the parameter {name!r} has no default and no value")
        if value is not None:
            values[name] = value
    return values


def read_rows(
    data: bytes, *, name: str, takes: Mapping[str, Taken], given_only: bool = False
) -> list[dict[str, str]]:
    """The rows of ``data`` (a .json file, or CSV), each the full set of values for a
    replay of the scenario that takes the parameters ``takes``; with ``given_only``, each
    the values its row gives (a schedule's rows: an empty one takes the default of the
    day it fires), checked alike."""
    if len(data) > MAX_BATCH_BYTES:
        raise BatchFileInvalid(f"the file is over {MAX_BATCH_BYTES // (1024 * 1024)} MiB")
    try:
        text = data.decode("utf-8-sig")  # a spreadsheet's byte-order mark is not a column
    except UnicodeDecodeError as exc:
        raise BatchFileInvalid(
            f"the file is not UTF-8 text (byte {exc.start})",
            hint="save the spreadsheet as CSV UTF-8",
        ) from None
    if "\x00" in text:  # no spreadsheet writes one, nor can a field take one
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise BatchFileInvalid(
            f"line {line} holds a NUL character (U+0000): no text",
            hint="a NUL comes from a file that is not text: save the spreadsheet as CSV again",
        )
    # A .csv is CSV, whatever its first character ("[name],greet"); a file of another
    # name is JSON when it reads as a list.
    named = name.lower()
    if named.endswith(".json") or (not named.endswith(".csv") and text.lstrip().startswith("[")):
        given = _json_rows(text)
    else:
        given = _csv_rows(text)
    if not given:
        raise BatchFileInvalid("the file has no row of values")
    if len(given) > MAX_ROWS:
        raise BatchFileInvalid(f"the file has {len(given)} rows; a batch takes at most {MAX_ROWS}")
    columns = {column for row in given for column in row}
    unknown = sorted(columns - set(takes))
    if unknown:
        hint = f"its parameters: {', '.join(sorted(takes)) or 'none'}"
        split = next((c for c in ";\t|" if set(unknown[0].split(c)) & set(takes)), "")
        if split:  # "name;greet": a spreadsheet saved with another separator
            hint = f"the file's values seem separated by {_SEPARATORS[split]}: save it as CSV"
            hint += " with commas"
            if split != "\t":  # (a line sep= and a tab can't be told from sep= alone)
                hint += f", or make its first line sep={split}"
        raise BatchFileInvalid(
            f"the scenario has no parameter {unknown[0]!r}"
            + (f" (nor {', '.join(map(repr, unknown[1:]))})" if unknown[1:] else ""),
            hint=hint,
        )
    missing = sorted(p for p, taken in takes.items() if taken.needed and p not in columns)
    if missing:
        raise BatchFileInvalid(
            f"no column gives the parameter {missing[0]!r}, which has no default"
            + (f" (nor {', '.join(map(repr, missing[1:]))})" if missing[1:] else ""),
            hint="add a column named after it",
        )
    rows = []
    for number, row in enumerate(given, start=1):
        values: dict[str, str] = {}
        for param, taken in takes.items():
            value = row.get(param, "")
            if len(value) > MAX_VALUE_CHARS:
                raise BatchFileInvalid(
                    f"row {number}: {param} is over {MAX_VALUE_CHARS} characters"
                )
            if value == "":
                if taken.needed:
                    raise BatchFileInvalid(f"row {number}: {param} is empty and has no default")
                if taken.default is None or given_only:
                    continue  # its login scenario's: needed if it signs in again
                value = taken.default
            values[param] = value
        rows.append(values)
    return rows


_QUOTES_HINT = 'a value that starts with " ends with "; a " inside it is written ""'
_SEP_LINE = re.compile(r"sep=([^\r\n]*)(?:\r\n|\r|\n|$)", re.IGNORECASE)


def _csv_rows(text: str) -> list[dict[str, str]]:
    """A value is what stands between its commas (or its quotes), spaces and all; a line
    whose values are all empty or spaces (a spreadsheet's blank row) is no row; a row
    with fewer values than the header has the others empty."""
    delimiter, skipped = ",", 0
    if named := _SEP_LINE.match(text):  # Excel's first line naming the separator
        delimiter, text, skipped = named[1], text[named.end() :], 1
        if len(delimiter) != 1 or delimiter == '"':
            raise BatchFileInvalid(
                f"the first line, {named[0].strip()!r}, names no separator of one character",
                hint="Excel's first line names the separator, such as sep=, or sep=;",
            )
    lines = _csv_lines(text, delimiter, skipped)
    if not lines:
        return []
    header = [cell.strip() for cell in lines[0]]
    if any(not cell for cell in header):
        raise BatchFileInvalid(
            f"column {header.index('') + 1} of the header row has no name",
            hint="the first row names a parameter in each column",
        )
    if len(header) > MAX_COLUMNS:
        raise BatchFileInvalid(f"the header row has {len(header)} columns; at most {MAX_COLUMNS}")
    doubled = sorted(cell for cell, times in Counter(header).items() if times > 1)
    if doubled:
        raise BatchFileInvalid(f"the column {doubled[0]!r} is there twice")
    rows = []
    for number, line in enumerate(lines[1:], start=1):
        if len(line) > len(header):
            raise BatchFileInvalid(
                f"row {number} has {len(line)} values for {len(header)} columns",
                hint=f"a value with a {'comma' if delimiter == ',' else repr(delimiter)} in it "
                "goes in double quotes",
            )
        rows.append(dict(zip(header, line + [""] * (len(header) - len(line)), strict=True)))
    return rows


def _csv_lines(text: str, delimiter: str, skipped: int) -> list[list[str]]:
    """The lines of values of ``text``, but blank ones; a quote left open or a quoted
    value going on after its closing quote refused, naming the line of the file (past the
    ``skipped`` lines before ``text``) where it is.  Past the header and MAX_ROWS lines the
    file is refused as it is read: 5 MiB of one-character lines, read whole before they
    were counted, took 900 MiB and seconds of a thread to be refused."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    lines, read = [], 0
    try:
        for line in reader:
            if any(cell.strip() for cell in line):
                lines.append(line)
                if len(lines) > MAX_ROWS + 1:
                    raise BatchFileInvalid(
                        f"the file has more than {MAX_ROWS} rows; a batch takes at most {MAX_ROWS}"
                    )
            read = reader.line_num
    except csv.Error as exc:
        opened, at = skipped + read + 1, skipped + reader.line_num
        if str(exc) == "unexpected end of data":  # the end of the file, inside quotes
            raise BatchFileInvalid(
                f"line {opened}: a value opens a double quote that is never closed",
                hint=_QUOTES_HINT,
            ) from None
        if str(exc).endswith("expected after '\"'"):
            raise BatchFileInvalid(
                f"line {at}: a quoted value goes on after its closing double quote",
                hint=_QUOTES_HINT,
            ) from None
        raise BatchFileInvalid(f"line {opened}: the CSV can't be read there: {exc}") from None
    return lines


def _json_rows(text: str) -> list[dict[str, str]]:
    try:
        data = jsonin.loads(text, max_bytes=MAX_BATCH_BYTES, what="the file", no_nul=True)
    except jsonin.JsonRefused as exc:
        raise BatchFileInvalid(f"the JSON can't be read: {exc.message}") from None
    return json_rows(data)


def json_rows(data: object) -> list[dict[str, str]]:
    """Rows from a JSON list of objects whose values are texts (numbers and true/false are
    taken as their text)."""
    if not isinstance(data, list):
        raise BatchFileInvalid("a JSON batch is a list of objects, one per replay")
    if len(data) > MAX_ROWS:
        raise BatchFileInvalid(f"the file has {len(data)} rows; a batch takes at most {MAX_ROWS}")
    rows = []
    for number, item in enumerate(data, start=1):
        if not isinstance(item, dict):
            raise BatchFileInvalid(f"row {number} is not an object of parameter values")
        if len(item) > MAX_COLUMNS:
            raise BatchFileInvalid(f"row {number} has {len(item)} values; at most {MAX_COLUMNS}")
        row = {}
        for key, given in item.items():
            value = jsonin.as_text(given)
            if not isinstance(value, str):
                raise BatchFileInvalid(f"row {number}: {key} is not a text")
            if len(value) > MAX_VALUE_CHARS:
                raise BatchFileInvalid(f"row {number}: {key} is over {MAX_VALUE_CHARS} characters")
            row[str(key)] = value
        rows.append(row)
    return rows
