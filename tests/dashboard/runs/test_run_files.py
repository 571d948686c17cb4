"""A run's files: what its tabs downloaded, and its trace, kept through Django's storage
API when a stretch of work ends (so a web process on another machine than the worker
serves them), listed on the run page and live, served only as attachments, only to whoever
may see the run; a run that typed a secret keeps no trace."""

from __future__ import annotations

import zipfile
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.test import Client

from dashboard.models import Run, SecretGrant
from dashboard.runs.files import files_of
from dashboard.runs.runner import runner
from tests.automation.browser.test_downloads import SLOW_BODY, slow_download_site
from tests.dashboard.conftest import OpenSocket, Runs
from tests.dashboard.runs.test_consumer import start_watched
from tests.dashboard.sockets import of_type, receive_until

pytestmark = pytest.mark.django_db(transaction=True)

DOWNLOAD_TASK = "click Report (file)\nclick Notes (blob)"


async def test_downloads_are_kept_in_storage_listed_live_and_served_to_the_owner_only(
    runs: Runs, open_socket: OpenSocket, owner: Any, stranger: Any, fixture_url: str
) -> None:
    run, comm = await start_watched(
        runs, open_socket, owner, DOWNLOAD_TASK, f"{fixture_url}/engine/downloads.html"
    )
    told = await receive_until(comm, of_type("files"))
    listed = told[-1]["files"]
    assert [(f["kind"], f["name"]) for f in listed] == [
        ("downloads", "notes.txt"), ("downloads", "report.csv"),
    ]  # fmt: skip
    assert listed[1]["url"] == f"/runs/{run.pk}/downloads/report.csv"
    await runner.wait_closed(run.pk)
    assert (await sync_to_async(Run.objects.get)(pk=run.pk)).status == Run.Status.SUCCEEDED

    # In storage, not only on the worker's disk.
    storage = storages["default"]
    original = (Path(__file__).parents[3] / "fixtures/engine/files/report.csv").read_bytes()
    with storage.open(f"runs/{run.pk}/downloads/report.csv") as stored:
        assert stored.read() == original
    await sync_to_async(_served_to_the_owner_only)(run, owner, stranger, original)


def _served_to_the_owner_only(run: Run, owner: Any, stranger: Any, original: bytes) -> None:
    client = Client()
    client.force_login(owner)
    page = client.get(f"/runs/{run.pk}/")
    assert b'data-testid="files"' in page.content and b"report.csv" in page.content
    got = client.get(f"/runs/{run.pk}/downloads/report.csv")
    assert got.status_code == 200 and b"".join(got.streaming_content) == original
    # Whatever the page sent, it is a file to save, never a page of the dashboard.
    assert got["Content-Type"] == "application/octet-stream"
    assert got["Content-Disposition"] == 'attachment; filename="report.csv"'
    for bad in ["missing.csv", "..%2Fdb.sqlite3", ".hidden", "%2Fetc%2Fpasswd"]:
        assert client.get(f"/runs/{run.pk}/downloads/{bad}").status_code == 404, bad
    assert client.get(f"/runs/{run.pk}/trace.zip").status_code == 404  # none recorded
    other = Client()
    other.force_login(stranger)
    assert other.get(f"/runs/{run.pk}/downloads/report.csv").status_code == 404
    assert Client().get(f"/runs/{run.pk}/downloads/report.csv").status_code == 302


async def test_a_trace_is_kept_unless_the_run_typed_a_secret(
    runs: Runs,
    open_socket: OpenSocket,
    owner: Any,
    fixture_url: str,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "TRACE_RUNS": True}
    form = f"{fixture_url}/demo/form.html"
    run, comm = await start_watched(runs, open_socket, owner, "type Ada into Name", form)
    told = await receive_until(comm, of_type("files"))
    assert [(f["kind"], f["name"]) for f in told[-1]["files"]] == [("trace", "trace.zip")]
    await runner.wait_closed(run.pk)
    client = Client()
    await sync_to_async(client.force_login)(owner)
    got = await sync_to_async(client.get)(f"/runs/{run.pk}/trace.zip")
    assert got.status_code == 200
    body = b"".join(got.streaming_content)
    assert "trace.trace" in zipfile.ZipFile(BytesIO(body)).namelist()  # what the viewer opens

    monkeypatch.setenv("TABWRIGHT_SECRET_NAME", "Ada-s-secret-name")
    await sync_to_async(lambda: SecretGrant.objects.create(name="NAME").users.add(owner))()
    typed, _ = await start_watched(runs, open_socket, owner, "type ${SECRET:NAME} into Name", form)
    await runner.wait_closed(typed.pk)
    assert (await sync_to_async(Run.objects.get)(pk=typed.pk)).status == Run.Status.SUCCEEDED
    # A trace records the values typed: none was kept, in storage or on the worker's disk.
    assert not storages["default"].exists(f"runs/{typed.pk}/trace.zip")
    assert not (Path(settings.TABWRIGHT["WORKSPACE_DIR"]) / str(typed.pk) / "trace.zip").exists()


def test_a_file_whose_name_has_a_hash_or_an_escape_in_it_is_served_at_its_listed_address(
    owner: Any, media_root: Path
) -> None:
    run = Run.objects.create(owner=owner, task="t", status=Run.Status.SUCCEEDED)
    names = ["report#1.csv", "a%2Fb.csv", "100%.csv", "two words.csv"]
    for name in names:
        storages["default"].save(f"runs/{run.pk}/downloads/{name}", ContentFile(name.encode()))
    client = Client()
    client.force_login(owner)
    for listed in files_of(run.pk):
        got = client.get(listed.to_dict(run.pk)["url"])
        assert got.status_code == 200, listed
        assert b"".join(got.streaming_content) == listed.name.encode()
    assert sorted(f.name for f in files_of(run.pk)) == sorted(names)


async def test_a_download_the_run_s_last_click_began_is_kept_whole(
    runs: Runs, open_socket: OpenSocket, owner: Any
) -> None:
    """The run ends as the download begins; its file comes a second later, and is kept."""
    with slow_download_site() as site:
        run, comm = await start_watched(runs, open_socket, owner, "click Slow report", f"{site}/")
        told = await receive_until(comm, of_type("files"))
        await runner.wait_closed(run.pk)
    assert (await sync_to_async(Run.objects.get)(pk=run.pk)).status == Run.Status.SUCCEEDED
    assert [f["name"] for f in told[-1]["files"]] == ["slow.csv"]
    with storages["default"].open(f"runs/{run.pk}/downloads/slow.csv") as stored:
        assert stored.read() == SLOW_BODY
