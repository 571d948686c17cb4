"""Property-based: a batch file, CSV or JSON, whatever its bytes (not UTF-8, a byte-order
mark, quotes, NULs, huge cells, ragged rows), gives rows of the scenario's parameters or
is refused with BatchFileInvalid (or ParamsInvalid); rows a spreadsheet writes are read
back as written."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from automation.recording.takes import Taken
from dashboard.jobs.batchfile import (
    MAX_VALUE_CHARS,
    ParamsInvalid,
    check_params,
    json_rows,
    read_rows,
)
from tests.jsonfuzz import FUZZ, json_values

# Needed, needed, with a default, its login scenario's (needed only when it signs in).
TAKES = {"name": Taken(), "greet": Taken(), "page": Taken("form.html"),
         "pw": Taken(login="Sign in")}  # fmt: skip
PIECES = ["name", "greet", "page", "pw", "nope", ",", ";", "\t", "|", '"', '""', "\n", "\r\n",
          "\r", "\x00", "\ufeff", "sep=;", "sep=", 'sep="', "sep=,,", " ", "x", "é", "[", "]",
          "{", "}", ":", "null", "1", "true", "\u2028", "\x85",
          "x" * (MAX_VALUE_CHARS + 1)]  # fmt: skip
HEADERS = ["", "name,greet\n", "name,greet,page,pw\r\n", "sep=;\nname;greet\n", "name,name\n",
           '[{"name": "Ada", "greet": ', "\ufeffname,greet\n", ",name\n"]  # fmt: skip
texts = st.builds(
    str.__add__,
    st.sampled_from(HEADERS),
    st.lists(st.sampled_from(PIECES) | st.text(max_size=5), max_size=30).map("".join),
)
blobs = (
    texts.map(str.encode) | st.binary(max_size=80) | texts.map(lambda t: t.encode("utf-16"))
    | texts.map(lambda t: b"\xef\xbb\xbf" + t.encode())
    | texts.map(lambda t: t.encode("latin-1", "replace"))
)  # fmt: skip
names = st.sampled_from(["rows.csv", "rows.json", "rows.txt", "ROWS.CSV", "rows"])


def check_rows(rows: list[dict[str, str]], *, given_only: bool) -> None:
    assert rows
    for row in rows:
        assert set(row) <= set(TAKES)
        assert all(isinstance(v, str) and len(v) <= MAX_VALUE_CHARS for v in row.values())
        assert row.get("name") and row.get("greet")  # no default: each row gives them
        if not given_only:
            assert row["page"] and check_params(row, takes=TAKES) == {**row}


@settings(FUZZ, max_examples=1_000)
@given(data=blobs, name=names, given_only=st.booleans())
def test_any_bytes_are_rows_or_refused(data: bytes, name: str, given_only: bool) -> None:
    try:
        rows = read_rows(data, name=name, takes=TAKES, given_only=given_only)
    except ParamsInvalid as exc:  # BatchFileInvalid is one
        assert str(exc) and exc.code in ("params_invalid", "batch_file_invalid")
        return
    check_rows(rows, given_only=given_only)


@FUZZ
@given(data=json_values | st.lists(st.dictionaries(st.sampled_from(sorted(TAKES)), json_values)))
def test_any_json_is_rows_or_refused(data: Any) -> None:
    try:
        rows = json_rows(data)
    except ParamsInvalid:
        return
    assert all(isinstance(v, str) for row in rows for v in row.values())


@FUZZ
@given(params=st.dictionaries(st.sampled_from(sorted(TAKES)) | st.text(max_size=4), json_values))
def test_any_values_of_a_replay_are_checked_or_refused(params: dict[str, Any]) -> None:
    try:
        values = check_params(params, takes=TAKES)
    except ParamsInvalid:
        return
    assert set(values) <= set(TAKES) and all(isinstance(v, str) for v in values.values())


# No NUL: a file holding one is refused (test_batches), as PostgreSQL keeps none.
given_text = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=20
)
rows_written = st.lists(
    st.fixed_dictionaries(
        {"name": given_text.filter(str.strip), "greet": given_text.filter(str.strip)},
        optional={"page": given_text, "pw": given_text},
    ),
    min_size=1,
    max_size=5,
)


@settings(FUZZ, max_examples=200)
@given(rows=rows_written, sep=st.sampled_from([",", ";", "\t"]), bom=st.booleans())
def test_rows_a_spreadsheet_writes_are_read_as_written(
    rows: list[dict[str, str]], sep: str, bom: bool
) -> None:
    """Quotes, separators, line breaks and spaces in a value are the value's."""
    out = io.StringIO(newline="")
    if sep != ",":
        out.write(f"sep={sep}\r\n")
    writer = csv.DictWriter(out, fieldnames=list(TAKES), delimiter=sep, restval="")
    writer.writeheader()
    writer.writerows(rows)
    data = ("\ufeff" if bom else "") + out.getvalue()
    wanted = [{**row, "page": row.get("page") or "form.html"} for row in rows]
    wanted = [{k: v for k, v in row.items() if v} for row in wanted]  # pw: no default
    assert read_rows(data.encode(), name="rows.csv", takes=TAKES) == wanted
    as_json = json.dumps(rows).encode()
    assert read_rows(as_json, name="rows.json", takes=TAKES) == wanted
