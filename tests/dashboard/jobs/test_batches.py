"""Batches: a scenario replayed once per row of a CSV or JSON list, a few rows at once, each
row an ordinary replay; a bad file is refused naming what is wrong before anything runs; a
row that waits for a person holds up no other; a batch stops, retries its failed rows
(earlier attempts kept) and gives its results as CSV — from the pages and the API."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import tracemalloc
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from automation.recording.takes import Taken, replay_takes
from dashboard.jobs import batches, schedules, selectors
from dashboard.jobs import services as job_services
from dashboard.jobs.batchfile import MAX_BATCH_BYTES, BatchFileInvalid, read_rows
from dashboard.models import Batch, BatchRow, Run, Scenario, ScheduleFiring
from dashboard.runs import services as run_services
from dashboard.runs.runner import RunManager, runner
from dashboard.scenarios import selectors as scenario_selectors
from dashboard.scenarios import services as scenario_services
from tests.dashboard.api.test_api import api, finished, refused, token_of
from tests.dashboard.conftest import Runs
from tests.dashboard.jobs.conftest import make
from tests.dashboard.signup import sign_up

# Rollback transactions, but for the async tests: their database work runs in another
# thread (sync_to_async), which must see the rows.
pytestmark = pytest.mark.django_db

TAKES = {"name": Taken(), "greet": Taken(), "page": Taken("form.html")}


# -- the file ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "name", "says"),
    [
        (b"name,greet,colour\nAda,Ada,red\n", "r.csv", "no parameter 'colour'"),
        (b"name\nAda\n", "r.csv", "no column gives the parameter 'greet'"),
        (b"name,greet\nAda,\n", "r.csv", "row 1: greet is empty and has no default"),
        (b"name,greet\n\xff\xfe,x\n", "r.csv", "not UTF-8"),
        (b"", "r.csv", "no row of values"),
        (b"name,greet\n", "r.csv", "no row of values"),
        (b"name,name\nAda,Ada\n", "r.csv", "the column 'name' is there twice"),
        (b"name,,greet\nAda,x,Ada\n", "r.csv", "column 2 of the header row has no name"),
        (b"name,greet\nAda,Ada,extra\n", "r.csv", "row 1 has 3 values for 2 columns"),
        (
            b'name,greet\nAda,Ada\n"Ada,Ada',
            "r.csv",
            "line 3: a value opens a double quote that is never closed",
        ),
        (
            b'name,greet\n"Ada" Lovelace,Ada\n',
            "r.csv",
            "line 2: a quoted value goes on after its closing double quote",
        ),
        # Fewer values than columns: the others are empty (the header has them all).
        (b"name,greet\nAda\n", "r.csv", "row 1: greet is empty and has no default"),
        (
            b"sep=;;\nname;greet\nAda;Ada\n",
            "r.csv",
            "the first line, 'sep=;;', names no separator of one character",
        ),
        (
            b'sep=;\nname;greet\n"Ada;Ada\n',
            "r.csv",
            "line 3: a value opens a double quote that is never closed",
        ),
        (b'{"name": "Ada"}', "r.json", "a list of objects"),
        (b'["Ada"]', "r.json", "row 1 is not an object"),
        (b'[{"name": "Ada", "greet": ["x"]}]', "r.json", "row 1: greet is not a text"),
        (b'[{"name": "Ada", "greet": 1e999}]', "r.json", "1e999 is no JSON number"),
        # A .csv is read as CSV, whatever its first character.
        (b"[name],greet\nAda,Ada\n", "r.csv", "no parameter '[name]'"),
        (b"[{", "r.json", "the JSON can't be read"),
        (b"name,greet\n" + b"a,b\n" * 10_001, "r.csv", "at most 10000"),
        # Counted before anything reads them (the doubles were once looked for in
        # quadratic time: 26 s for 40,000 columns, hours for 5 MiB of them).
        (
            ",".join(f"c{i}" for i in range(40_000)).encode() + b"\n",
            "r.csv",
            "the header row has 40000 columns; at most 1000",
        ),
        (b"[" + b"{}," * 10_001 + b"{}]", "r.json", "at most 10000"),
        (
            json.dumps([{f"c{i}": "x" for i in range(1_001)}]).encode(),
            "r.json",
            "row 1 has 1001 values; at most 1000",
        ),
        (b'[{"name": "Ada \\ud800", "greet": "x"}]', "r.json", "half of a UTF-16 pair"),
        # PostgreSQL keeps no NUL (a replay would type another character in its place).
        (b"name,greet\nAda,hi\nGrace,h\x00i\n", "r.csv", "line 3 holds a NUL character"),
        (b'[{"name": "Ada \\u0000", "greet": "x"}]', "r.json", "NUL character, U+0000"),
    ],
)
def test_a_bad_file_is_refused_naming_what_is_wrong(data: bytes, name: str, says: str) -> None:
    with pytest.raises(BatchFileInvalid) as refused_:
        read_rows(data, name=name, takes=TAKES)
    assert says in refused_.value.message, refused_.value.message


def test_a_file_of_millions_of_short_lines_is_refused_as_it_is_read() -> None:
    """5 MiB of one-character lines: each was read into a row of its own before they were
    counted (900 MiB at the peak, seconds of a request's thread), then refused."""
    data = b"name\n" + b"a\n" * (MAX_BATCH_BYTES // 2 - 8)
    tracemalloc.start()
    try:
        with pytest.raises(BatchFileInvalid, match="rows; a batch takes at most 10000"):
            read_rows(data, name="r.csv", takes=TAKES)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # The text and the reader's copy of it (4 bytes a character), not 2.6 million rows.
    assert peak < 8 * len(data), f"{peak} bytes at the peak for a file of {len(data)}"


@pytest.mark.parametrize(("separator", "said"), [(";", "semicolons"), ("\t", "tabs")])
def test_a_file_separated_otherwise_is_refused_saying_how_to_read_it(
    separator: str, said: str
) -> None:
    """A spreadsheet saved with semicolons (as in much of Europe) or tabs reads as one
    column named "name;greet": the refusal says what the file seems to be, and how to
    give it (a first line sep=; is read)."""
    data = f"name{separator}greet\nAda{separator}Ada\n".encode()
    with pytest.raises(BatchFileInvalid) as refused_:
        read_rows(data, name="r.csv", takes=TAKES)
    assert f"seem separated by {said}: save it as CSV with commas" in refused_.value.hint
    if separator == ";":  # told how, it reads
        assert "or make its first line sep=;" in refused_.value.hint
        rows = read_rows(b"sep=;\n" + data, name="r.csv", takes=TAKES)
        assert [(r["name"], r["greet"]) for r in rows] == [("Ada", "Ada")]


def test_good_files_read_with_defaults_quotes_and_a_byte_order_mark() -> None:
    text = '\ufeffname,greet\n"Lovelace, Ada","Lovelace, Ada"\n\n , \nGrace,  Grace \n'
    assert read_rows(text.encode(), name="people.csv", takes=TAKES) == [
        {"name": "Lovelace, Ada", "greet": "Lovelace, Ada", "page": "form.html"},
        # A value is typed as it is, as a JSON row's is; a line of only spaces is no row.
        {"name": "Grace", "greet": "  Grace ", "page": "form.html"},
    ]
    padded = b'name,greet\n"  padded  ",Bob\n'
    assert read_rows(padded, name="r.csv", takes=TAKES) == [
        {"name": "  padded  ", "greet": "Bob", "page": "form.html"}
    ]
    # A quoted value may hold line breaks (an address), and quotes written twice.
    multiline = b'name,greet\n"12 Main St\nSpringfield","say ""hi"""\nGrace,Grace\n'
    assert read_rows(multiline, name="r.csv", takes=TAKES) == [
        {"name": "12 Main St\nSpringfield", "greet": 'say "hi"', "page": "form.html"},
        {"name": "Grace", "greet": "Grace", "page": "form.html"},
    ]
    # A row shorter than the header: its values past the end take their defaults.
    short = b"name,greet,page\nAda,Ada\n"
    assert read_rows(short, name="r.csv", takes=TAKES) == [
        {"name": "Ada", "greet": "Ada", "page": "form.html"}
    ]
    # Excel's first line naming the separator is no header: the separator it names is.
    for excel in (b"sep=,\r\nname,greet\r\nAda,Ada\r\n", b"SEP=;\nname;greet\nAda;Ada\n"):
        assert read_rows(excel, name="r.csv", takes=TAKES) == [
            {"name": "Ada", "greet": "Ada", "page": "form.html"}
        ]
    semicolons = b'\xef\xbb\xbfsep=;\nname;greet\n"Lovelace; Ada";Ada, Countess\n'
    assert read_rows(semicolons, name="r.csv", takes=TAKES) == [
        {"name": "Lovelace; Ada", "greet": "Ada, Countess", "page": "form.html"}
    ]
    json_rows = b'[{"name": "Ada", "greet": 7, "page": ""}, {"name": "x", "greet": true}]'
    assert read_rows(json_rows, name="r.json", takes=TAKES) == [
        {"name": "Ada", "greet": "7", "page": "form.html"},
        {"name": "x", "greet": "true", "page": "form.html"},
    ]


# -- batches at work ---------------------------------------------------------------------


@pytest.fixture
def scenario(owner: Any, fixture_url: str) -> Scenario:
    return scenario_services.scenario_import(owner=owner, data=sign_up(fixture_url))


def upload(text: str, name: str = "people.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


async def batch_from_page(owner: Any, scenario: Scenario, rows: str, concurrency: int) -> Batch:
    """The batch of these rows (CSV), made on the scenario's page; its page is shown next."""
    page = Client()
    await sync_to_async(page.force_login)(owner)
    made = await sync_to_async(page.post)(
        f"/scenarios/{scenario.pk}/batches",
        {"file": upload(rows), "base_url": "", "concurrency": concurrency},
    )
    assert made.status_code == 302, made.content[:2000]
    batch = await Batch.objects.aget()
    assert made["Location"] == f"/batches/{batch.pk}/"
    return batch


async def until_batch(batch_id: int, wanted: set[str], timeout_s: float = 90) -> dict[str, Any]:
    """The batch's state once its status is one of ``wanted``; also the most rows seen
    queued or at work at once (``peak``)."""
    peak = 0
    async with asyncio.timeout(timeout_s):
        while True:
            state = await sync_to_async(
                lambda: selectors.batch_state(batch=Batch.objects.get(pk=batch_id))
            )()
            counts = state["progress"]["counts"]
            peak = max(peak, counts["running"] + counts["queued"] - _not_started(state))
            if state["status"] in wanted:
                return {**state, "peak": peak}
            await asyncio.sleep(0.05)


def _not_started(state: dict[str, Any]) -> int:
    return sum(1 for row in state["rows"] if row["run_id"] is None)


@pytest.mark.django_db(transaction=True)
async def test_a_csv_batch_runs_every_row_once_a_few_at_a_time_and_gives_its_results(
    worker: RunManager, runs: Runs, owner: Any, scenario: Scenario
) -> None:
    people = ["Ada", "Grace", "Katherine", "=HYPERLINK(1)", "Dorothy"]
    rows = "name,greet\n" + "".join(f"{p},{p}\n" for p in people)
    batch = await batch_from_page(owner, scenario, rows, concurrency=2)

    state = await until_batch(batch.pk, {"done"})
    assert state["peak"] <= 2  # never more than its concurrency at once
    assert [row["status"] for row in state["rows"]] == ["passed"] * 5, state["rows"]
    assert [row["params"]["name"] for row in state["rows"]] == people
    assert all(row["attempts"] == 1 for row in state["rows"])
    replayed = Run.objects.filter(batch_row__batch=batch).values_list("batch_row__index", flat=True)
    per_row = sorted([index async for index in replayed])
    assert per_row == [1, 2, 3, 4, 5]  # each row replayed exactly once
    assert state["progress"]["done"] == 5 and state["progress"]["seconds_left"] is None

    page = Client()
    await sync_to_async(page.force_login)(owner)
    shown = await sync_to_async(page.get)(f"/batches/{batch.pk}/")
    assert shown.status_code == 200 and b'id="batch-state"' in shown.content
    results = await sync_to_async(page.get)(f"/batches/{batch.pk}/results.csv")
    assert results["Content-Disposition"] == f'attachment; filename="batch-{batch.pk}-results.csv"'
    lines = list(csv.reader(io.StringIO(results.content.decode())))
    assert lines[0] == ["row", "greet", "name", "page", "status", "attempts", "run", "seconds",
                        "reason", "output"]  # fmt: skip
    assert [line[4] for line in lines[1:]] == ["passed"] * 5
    assert lines[4][2] == "'=HYPERLINK(1)"  # never a formula in a spreadsheet


@pytest.mark.django_db(transaction=True)
async def test_a_row_waiting_for_a_person_holds_up_no_other_and_a_stop_ends_it(
    worker: RunManager, runs: Runs, owner: Any, scenario: Scenario
) -> None:
    # Row 1's page has no Name field: its replay pauses for a person.  One row at a time,
    # yet the others go on.  The batch is a schedule's firing.
    rows = [{"name": "Ada", "greet": "Ada", "page": "list.html"},
            *({"name": n, "greet": n} for n in ("Grace", "Alan", "Edsger"))]  # fmt: skip
    client = api(await sync_to_async(token_of)(owner))
    schedule = await sync_to_async(make)(scenario, rows=rows, concurrency=1)
    firing = await sync_to_async(schedules.fire)(
        schedule.pk, schedule.next_fire_at + timedelta(seconds=1)
    )
    assert firing is not None and firing.batch_id is not None
    batch_id = firing.batch_id
    await batches.advance(batch_id)
    async with asyncio.timeout(90):
        while True:
            state = (await client.get(f"/api/batches/{batch_id}")).json()
            if [r["status"] for r in state["rows"]] == ["needs_person", *["passed"] * 3]:
                break
            await asyncio.sleep(0.1)
    assert state["status"] == "running"  # row 1 still waits for a person

    stopped = await client.post(f"/api/batches/{batch_id}/stop")
    assert stopped.status_code == 200
    state = await until_batch(batch_id, {"stopped"})
    async with asyncio.timeout(30):
        while state["rows"][0]["status"] != "stopped":
            await asyncio.sleep(0.1)
            state = (await client.get(f"/api/batches/{batch_id}")).json()
    await runner.wait_closed(state["rows"][0]["run_id"])  # its tab closes as it ends
    # The firing reads as the batch ended: stopped, by whom, as the row's run says.
    why = "stopped by olive while it waited for a person"
    assert state["rows"][0]["reason"] == why
    await sync_to_async(schedules.judge)(firing.pk)  # told now, or as it waited before
    firing = await ScheduleFiring.objects.aget(pk=firing.pk)
    assert (firing.outcome, firing.error) == ("stopped", why) and firing.alerted_at


@pytest.mark.django_db(transaction=True)
async def test_deleting_the_scenario_over_the_api_stops_its_batch_s_replays(
    worker: RunManager, runs: Runs, owner: Any, scenario: Scenario
) -> None:
    """Its batches go with the scenario; their replays went on waiting for a person,
    each holding a worker's room, with no batch page left to stop them."""
    client = api(await sync_to_async(token_of)(owner))
    rows = "name,greet,page\nAda,Ada,list.html\nGrace,Grace,list.html\n"  # no Name field
    batch = await batch_from_page(owner, scenario, rows, concurrency=2)
    async with asyncio.timeout(90):
        while True:
            state = (await client.get(f"/api/batches/{batch.pk}")).json()
            if [r["status"] for r in state["rows"]] == ["needs_person"] * 2:
                break
            await asyncio.sleep(0.1)
    replays = [row["run_id"] for row in state["rows"]]

    deleted = await client.delete(f"/api/scenarios/{scenario.pk}")
    assert deleted.status_code == 204, deleted.text
    assert not await Batch.objects.filter(pk=batch.pk).aexists()
    why = "stopped by olive, who deleted its scenario while it waited for a person"
    for run_id in replays:
        run = await finished(client, run_id)
        assert (run["status"], run["status_reason"]) == ("stopped", why)
        await runner.wait_closed(run_id)  # its tab closes as it ends


@pytest.mark.django_db(transaction=True)
async def test_rows_waiting_for_a_person_hold_no_more_workers_than_the_batch_may_use(
    worker: RunManager, runs: Runs, owner: Any, scenario: Scenario
) -> None:
    """Every row's page lacks its Name field: each replay waits for a person, holding a
    worker's slot.  One row at a time: a row waiting lets one more go on, no more (every
    row went on, until every worker's slots held a waiting row of this one person's
    batch and everyone else's runs queued behind them for a quarter of an hour)."""
    rows = [{"name": n, "greet": n, "page": "list.html"} for n in ("Ada", "Grace", "Alan", "Ed")]
    batch = await sync_to_async(job_services.batch_create)(
        owner=owner, scenario=scenario, rows=rows, base_url="", concurrency=1
    )
    client = api(await sync_to_async(token_of)(owner))
    await batches.advance(batch.pk)
    async with asyncio.timeout(90):
        while True:
            state = (await client.get(f"/api/batches/{batch.pk}")).json()
            waiting = [r for r in state["rows"] if r["status"] == "needs_person"]
            if len(waiting) == 2:
                break
            await asyncio.sleep(0.1)
    assert await sync_to_async(job_services.batch_advance)(batch_id=batch.pk) == []
    assert await BatchRow.objects.filter(batch=batch, run__isnull=False).acount() == 2
    await client.post(f"/api/batches/{batch.pk}/stop")
    await until_batch(batch.pk, {"stopped"})


@pytest.mark.django_db(transaction=True)
async def test_a_row_no_one_comes_to_ends_after_the_wait_for_a_person_and_the_batch_ends(
    worker: RunManager, runs: Runs, owner: Any, scenario: Scenario, settings: Any
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "BATCH_PERSON_WAIT_S": 1}
    # Row 1's page has no Name field: its replay needs a person, and no one comes.
    rows = [{"name": "Ada", "greet": "Ada", "page": "list.html"},
            {"name": "Grace", "greet": "Grace"}]  # fmt: skip
    batch = await sync_to_async(job_services.batch_create)(
        owner=owner, scenario=scenario, rows=rows, base_url="", concurrency=1
    )
    await batches.advance(batch.pk)
    state = await until_batch(batch.pk, {"done"})  # not "running" for ever
    assert [row["status"] for row in state["rows"]] == ["failed", "passed"], state["rows"]
    reason = state["rows"][0]["reason"]
    assert "can't tell which element it means" in reason, reason
    assert reason.endswith("; no one came to do it within 1 s"), reason
    await runner.wait_closed(state["rows"][0]["run_id"])


@pytest.mark.django_db(transaction=True)
async def test_failed_rows_are_retried_with_their_earlier_attempt_kept(
    worker: RunManager, runs: Runs, owner: Any, scenario: Scenario, stranger: Any
) -> None:
    rows = "name,greet\nAda,Ada\nGrace,Someone else\n"  # row 2 never sees its greeting
    client = api(await sync_to_async(token_of)(owner))
    made = await client.post(f"/api/scenarios/{scenario.pk}/batches", {"csv": rows})
    batch_id = made.json()["id"]
    state = await until_batch(batch_id, {"done"})
    assert [r["status"] for r in state["rows"]] == ["passed", "failed"]
    # The greeting's wait fails: in its own words, or by the step's budget on a busy machine.
    assert state["rows"][1]["reason"].startswith("step 4 (wait_for): "), state["rows"][1]
    first_try = state["rows"][1]["run_id"]

    retried = await client.post(f"/api/batches/{batch_id}/retry")
    assert retried.status_code == 200 and retried.json()["status"] == "running"
    state = await until_batch(batch_id, {"done"})
    assert [(r["status"], r["attempts"]) for r in state["rows"]] == [("passed", 1), ("failed", 2)]
    assert state["rows"][1]["run_id"] != first_try
    tries = Run.objects.filter(batch_row__index=2).order_by("pk").values_list("pk", flat=True)
    attempts = [pk async for pk in tries]
    assert attempts == [first_try, state["rows"][1]["run_id"]]  # the first one kept

    results = await client.get(f"/api/batches/{batch_id}/results.csv")
    assert results.status_code == 200 and "failed,2," in results.content.decode()
    other = api(await sync_to_async(token_of)(stranger))
    refused(await other.get(f"/api/batches/{batch_id}"), 404, "not_found")
    refused(await other.post(f"/api/batches/{batch_id}/stop"), 404, "not_found")
    refused(await other.post(f"/api/scenarios/{scenario.pk}/batches", {"csv": rows}),
            404, "not_found")  # fmt: skip


def test_a_bad_batch_is_refused_on_the_page_and_over_the_api_and_nothing_runs(
    owner: Any, scenario: Scenario
) -> None:
    page = Client()
    page.force_login(owner)
    answer = page.post(f"/scenarios/{scenario.pk}/batches",
                       {"file": upload("name,colour\nAda,red\n"), "concurrency": 2})  # fmt: skip
    assert answer.status_code == 400
    assert "the scenario has no parameter &#x27;colour&#x27;" in answer.content.decode()
    answer = page.post(f"/scenarios/{scenario.pk}/batches",
                       {"file": upload("name,greet\nAda,Ada\n"), "concurrency": 50})  # fmt: skip
    assert answer.status_code == 400

    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    url = f"/api/scenarios/{scenario.pk}/batches"
    for body, field, code in [
        ({"csv": "name\nAda\n"}, "csv", "batch_file_invalid"),
        ({"rows": [{"name": "Ada", "greet": "Ada", "colour": "red"}]}, "rows",
         "batch_file_invalid"),
        ({"rows": [], "csv": "name,greet\nAda,Ada\n"}, "rows", "invalid"),
        ({}, "rows", "invalid"),
        ({"csv": "name,greet\nAda,Ada\n", "concurrency": 0}, "concurrency", "invalid"),
        ({"csv": "name,greet\nAda,Ada\n", "base_url": "file:///etc"}, "base_url", "invalid"),
    ]:  # fmt: skip
        answer = client.post(url, body, content_type="application/json")
        error = refused(answer, 400, code)
        assert field in error["fields"], (body, error)
    assert not Batch.objects.exists() and not Run.objects.exists()


def test_a_quote_never_closed_refuses_the_file_naming_its_line_and_stores_nothing(
    owner: Any, scenario: Scenario
) -> None:
    """Read on, the quote opened on line 3 took every line after it into one value: a
    batch of 2 rows where the file has 100, row 2's name the text of rows 2 to 100."""
    lines = ["name,greet", "Ada Lovelace,Ada", '"Hopper, Grace,Grace']
    text = "\n".join(lines + [f"Person {i},P{i}" for i in range(3, 101)]) + "\n"
    says = "line 3: a value opens a double quote that is never closed"
    page = Client()
    page.force_login(owner)
    answer = page.post(f"/scenarios/{scenario.pk}/batches",
                       {"file": upload(text), "concurrency": 2})  # fmt: skip
    assert answer.status_code == 400 and says in answer.content.decode()
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    answer = client.post(f"/api/scenarios/{scenario.pk}/batches", {"csv": text},
                         content_type="application/json")  # fmt: skip
    error = refused(answer, 400, "batch_file_invalid")
    assert says in error["fields"]["csv"], error
    assert not Batch.objects.exists() and not Run.objects.exists()


@pytest.mark.parametrize(
    ("statuses", "batch_status", "offered"),
    [
        (["succeeded", "succeeded"], "done", False),
        (["succeeded", "paused"], "running", False),
        (["succeeded", "failed"], "done", True),
        (["stopped", None], "stopped", True),  # a stopped replay, a row never started
    ],
)
def test_retry_is_offered_only_with_a_row_to_retry(
    owner: Any, statuses: list[str | None], batch_status: str, offered: bool
) -> None:
    scenario = Scenario.objects.create(owner=owner, name="s")
    batch = Batch.objects.create(owner=owner, scenario=scenario, status=batch_status)
    for index, status in enumerate(statuses, start=1):
        run = None
        if status is not None:
            run = run_services.run_create(owner=owner, task="t", start_url="", planner="rules")
            Run.objects.filter(pk=run.pk).update(status=status)
        BatchRow.objects.create(batch=batch, index=index, run=run, attempts=int(bool(run)))
    page = Client()
    page.force_login(owner)
    html = page.get(f"/batches/{batch.pk}/").content.decode()
    form = re.search(r'<form [^>]*id="batch-retry-form"[^>]*>', html)
    assert form is not None and ("hidden" not in form.group(0)) == offered


def test_failed_rows_are_not_tried_again_with_a_parameter_the_scenario_lost(
    owner: Any, scenario: Scenario
) -> None:
    """A batch is done, its second row failed; the scenario's owner then deletes the step
    that waits for the greeting (a batch done gives no value any more: the edit goes), and
    ``greet`` is no parameter of it now.  Retrying the row would replay it with a value for
    a parameter it does not have: refused on the page and over the API, naming the row
    and the parameter, as a batch of such rows is; nothing waits again."""
    rows = [{"page": "form.html", "name": n, "greet": n} for n in ("Ada", "Bob")]
    batch = job_services.batch_create(owner=owner, scenario=scenario, rows=rows, base_url="",
                                      concurrency=1)  # fmt: skip
    for row in batch.rows.order_by("index"):
        row.run = run_services.run_create(owner=owner, task="t", start_url="", planner="rules")
        row.save(update_fields=["run"])
        status = Run.Status.FAILED if row.index == 2 else Run.Status.SUCCEEDED
        Run.objects.filter(pk=row.run.pk).update(status=status)
    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.DONE)
    page = Client()
    page.force_login(owner)
    wait = scenario.steps.get(index=4)
    page.post(f"/scenarios/{scenario.pk}/steps/4/delete", {"step_id": wait.pk})
    assert "greet" not in replay_takes(scenario_selectors.scenario_document(scenario=scenario))

    answer = page.post(f"/batches/{batch.pk}/retry", follow=True)
    said = "row 2 gives the parameter &#x27;greet&#x27;, which it no longer has"
    assert said in answer.content.decode()
    token = token_of(owner)
    answer = page.post(f"/api/batches/{batch.pk}/retry", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert "'greet'" in refused(answer, 400, "scenario_invalid")["message"]
    batch.refresh_from_db()
    assert batch.status == Batch.Status.DONE
    assert not batch.rows.filter(run__isnull=True).exists()  # nothing waits again


@pytest.mark.django_db(transaction=True)
async def test_the_poll_starts_rows_whose_replay_ended_unseen(
    runs: Runs, owner: Any, scenario: Scenario
) -> None:
    # No worker: the first row's replay waits queued; it is stopped behind the batch's
    # back (as a lost worker's run is swept), and the next poll starts row 2.
    batch = await sync_to_async(job_services.batch_create)(
        owner=owner, scenario=scenario, rows=[{"name": "A", "greet": "A"}] * 2,
        base_url="", concurrency=1,
    )  # fmt: skip
    assert len(await batches.advance(batch.pk)) == 1
    assert await batches.advance(batch.pk) == []  # its one place is taken
    first = await Run.objects.aget(batch_row__index=1)
    await sync_to_async(run_services.run_stop_queued)(run_id=first.pk)
    await batches.advance_all()
    assert await Run.objects.filter(batch_row__index=2).aexists()
