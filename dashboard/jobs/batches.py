"""Batches at work: the database says which rows have a replay (services.batch_advance);
this starts the next ones when a row's replay ends, when a batch is made, and at every
worker's queue poll (so a row whose worker died, or a lost wake-up, only waits a poll),
and stops a batch's replays wherever they run."""

from __future__ import annotations

import logging
from typing import Any

from channels.db import database_sync_to_async

from dashboard.jobs import services
from dashboard.models import Batch, BatchRow, Run
from dashboard.runs.carry import command_where_it_runs
from dashboard.runs.doorbell import wake
from dashboard.runs.services import stopped_by

__all__ = ["advance", "advance_all", "advance_row", "run_ended", "scenario_deleted", "stop"]

log = logging.getLogger("tabwright.batches")


async def advance(batch_id: int) -> list[int]:
    """Start what the batch has room for; the runs made (queued for the workers)."""
    made = await database_sync_to_async(services.batch_advance)(batch_id=batch_id)
    if made:
        await wake()
    return made


async def advance_row(row_id: int) -> None:
    """A replay of the row ended: its batch's next rows may start."""
    batch_id = await database_sync_to_async(
        lambda: BatchRow.objects.filter(pk=row_id).values_list("batch_id", flat=True).first()
    )()
    if batch_id is not None:
        await advance(batch_id)


async def run_ended(run: Run) -> None:
    """A run ended (dashboard.runs.live.on_ended): when it replayed a batch's row, the
    batch's next rows may start."""
    if run.batch_row_id is not None:
        await advance_row(run.batch_row_id)


async def advance_all() -> None:
    """Every running batch (the workers' poll); a failure is logged, the next poll retries."""
    try:
        for batch_id in await database_sync_to_async(services.batches_running)():
            await advance(batch_id)
    except Exception:
        log.exception("advancing the running batches failed")


async def stop(batch: Batch, by: str = "") -> None:
    """No more rows start, and the replays still queued, at work or waiting for a person
    are stopped, on whichever worker holds each; ``by`` says who (their runs' reason)."""
    await stop_replays(await database_sync_to_async(services.batch_stop)(batch=batch), by)


async def scenario_deleted(run_ids: list[int], user: Any) -> None:
    """``user`` deleted a scenario, its batches with it: their replays still at work
    (``run_ids``, from dashboard.scenarios.services.scenario_delete) stop, as the batch's
    Stop would stop them, since no batch page is left to stop them from."""
    await stop_replays(run_ids, f"{stopped_by(user)}, who deleted its scenario")


async def stop_replays(run_ids: list[int], by: str) -> None:
    """Stop these replays of batches' rows, on whichever worker holds each (one that has
    ended meanwhile is left as it ended); ``by`` says who (their runs' reason)."""
    for run_id in run_ids:
        got = await command_where_it_runs(run_id, "stop", by)
        if "error" in got and got["error"]["kind"] != "lookup":  # lookup: it ended anyway
            log.warning("run %s was not stopped: %s", run_id, got["error"])
