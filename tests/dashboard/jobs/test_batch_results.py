"""A batch's results as CSV: whatever a row's values, reason or output hold, a spreadsheet
opening the file never runs a cell as a formula, whether it starts with = + - @ or with
their fullwidth and small forms (formula starts in some locales' spreadsheets)."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.test import Client

from dashboard.models import Batch, BatchRow, Run
from dashboard.scenarios import services as scenario_services
from tests.dashboard.api.test_api import token_of
from tests.dashboard.signup import sign_up

pytestmark = pytest.mark.django_db

# (a value, as the CSV must give it)
CELLS = [
    ("=HYPERLINK(1)", "'=HYPERLINK(1)"),
    ("\uff1dHYPERLINK(1)", "'\uff1dHYPERLINK(1)"),  # FULLWIDTH EQUALS SIGN
    ("\uff0b1+1", "'\uff0b1+1"),  # FULLWIDTH PLUS SIGN
    ("\uff0d1+1", "'\uff0d1+1"),  # FULLWIDTH HYPHEN-MINUS
    ("\uff20SUM(A1)", "'\uff20SUM(A1)"),  # FULLWIDTH COMMERCIAL AT
    ("\ufe661+1", "'\ufe661+1"),  # SMALL EQUALS SIGN
    ("\ufe621", "'\ufe621"),  # SMALL PLUS SIGN
    ("\ufe631", "'\ufe631"),  # SMALL HYPHEN-MINUS
    ("\ufe6bx", "'\ufe6bx"),  # SMALL COMMERCIAL AT
    ("+1", "'+1"),
    ("\tx", "'\tx"),
    ("Ada = Lovelace", "Ada = Lovelace"),  # only the first character counts
    ("Grüße", "Grüße"),
    ("", ""),
]


def test_no_cell_of_the_results_starts_a_formula(owner: Any) -> None:
    scenario = scenario_services.scenario_import(owner=owner, data=sign_up("http://shop.test"))
    batch = Batch.objects.create(owner=owner, scenario=scenario, status=Batch.Status.DONE)
    for index, (value, _) in enumerate(CELLS, start=1):
        run = Run.objects.create(
            owner=owner, task="t", status=Run.Status.FAILED, status_reason=value,
            output=value or None,
        )  # fmt: skip
        BatchRow.objects.create(batch=batch, index=index, params={"name": value}, run=run)

    page = Client()
    page.force_login(owner)
    script = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    for answer in (
        page.get(f"/batches/{batch.pk}/results.csv"),
        script.get(f"/api/batches/{batch.pk}/results.csv"),
    ):
        assert answer.status_code == 200
        lines = list(csv.reader(io.StringIO(answer.content.decode())))
        assert lines[0][1] == "name" and lines[0][6:] == ["reason", "output"]
        assert [line[1] for line in lines[1:]] == [want for _, want in CELLS]  # the values
        assert [line[6] for line in lines[1:]] == [want for _, want in CELLS]  # the reasons
        # The output is JSON: a string's quote comes first, never a formula's sign.
        assert all(not line[7][:1] or line[7][0] == '"' for line in lines[1:])


def test_a_parameter_named_as_a_column_of_the_results_keeps_its_name_and_the_column_moves(
    owner: Any,
) -> None:
    """Parameters named status, reason, row and run (names a scenario may well have): the
    file had two columns of each name, and a reader of it took a parameter's value for the
    row's status.  The row's own are written "result <name>"."""
    scenario = scenario_services.scenario_import(owner=owner, data=sign_up("http://shop.test"))
    batch = Batch.objects.create(owner=owner, scenario=scenario, status=Batch.Status.DONE)
    run = Run.objects.create(owner=owner, task="t", status=Run.Status.FAILED, status_reason="no")
    values = {"status": "gold", "reason": "renewal", "row": "99", "run": "late"}
    BatchRow.objects.create(batch=batch, index=1, params=values, run=run)
    page = Client()
    page.force_login(owner)
    text = page.get(f"/batches/{batch.pk}/results.csv").content.decode()
    header, line = list(csv.reader(io.StringIO(text)))
    assert len(set(header)) == len(header), header
    read = dict(zip(header, line, strict=True))
    assert {name: read[name] for name in values} == values
    assert (read["result row"], read["result status"], read["result reason"]) == (
        "1",
        "failed",
        "no",
    )
    assert read["result run"] == str(run.pk) and read["attempts"] == "0"
