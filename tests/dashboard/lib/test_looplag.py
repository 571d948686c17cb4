"""The event loop's watchdog: a call that holds the loop is logged, while it holds it, with
the code that holds it, and once it is done with how long it held it; the lag is kept for
/metrics."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from dashboard.lib.looplag import LoopWatch


def hold_the_loop(seconds: float) -> None:
    time.sleep(seconds)  # what a blocking call in a request or a run would do


async def test_a_held_loop_is_logged_with_the_code_that_holds_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    watch = LoopWatch(asyncio.get_running_loop(), interval_s=0.05, warn_ms=200)
    watch.start()
    try:
        with caplog.at_level(logging.WARNING, logger="dashboard.looplag"):
            await asyncio.sleep(0.2)  # a few beats on a free loop
            hold_the_loop(1.0)
            async with asyncio.timeout(30):
                while watch.stats().max_ms < 900:  # noqa: ASYNC110  (the next beat measures it)
                    await asyncio.sleep(0.05)
        # One report for the one stall, however long it held (a busy machine may hold the
        # loop's thread at other moments too: those are reported as well, without it).
        reports = [r.getMessage() for r in caplog.records if r.name == "dashboard.looplag"]
        held = [text for text in reports if "in hold_the_loop" in text]
        assert len(held) == 1, reports
        assert held[0].startswith("the event loop has been held for")
        assert "time.sleep(seconds)" in held[0]  # the line that holds it
        # Free again, the whole of it is told: the report came while it was still held.
        totals = [int(text.split()[6]) for text in reports if text.endswith("ms in all")]
        assert max(totals) >= 900, reports
        stacks = [text for text in reports if not text.endswith("ms in all")]
        assert watch.stalls == len(stacks)
    finally:
        await watch.stop()
