from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from automation import Budget
from automation.errors import BudgetExceeded, Cancelled


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_remaining_and_headroom_arithmetic() -> None:
    clock = Clock()
    budget = Budget(1_000, _clock=clock)
    assert budget.remaining_ms() == pytest.approx(1_000)
    clock.now += 0.25
    assert budget.remaining_ms() == pytest.approx(750)
    assert budget.remaining_ms(headroom_ms=50) == pytest.approx(700)
    assert budget.playwright_timeout(headroom_ms=50) == pytest.approx(700)
    clock.now += 0.76
    assert budget.remaining_ms() == 0 and budget.expired
    with pytest.raises(BudgetExceeded, match="1000 ms"):
        budget.check()


def test_child_never_outlives_parent() -> None:
    clock = Clock()
    parent = Budget(500, _clock=clock)
    assert parent.child(10_000).remaining_ms() == pytest.approx(500)
    assert parent.child(200).remaining_ms() == pytest.approx(200)
    clock.now += 0.4
    assert parent.child().remaining_ms() == pytest.approx(100)


def test_reserve_keeps_time_back_inside_the_deadline() -> None:
    clock = Clock()
    budget = Budget(1_000, label="evaluate", _clock=clock)
    clock.now += 0.2
    window = budget.reserve(100)
    assert window.remaining_ms() == pytest.approx(700)  # 1000 - 200 spent - 100 kept back
    assert window.label == "evaluate"
    clock.now += 0.7
    assert window.expired and budget.remaining_ms() == pytest.approx(100)
    # Less left than the reserve: the window is empty, never negative or past the deadline.
    assert budget.reserve(500).remaining_ms() == 0
    window.cancel("stop")
    assert budget.cancelled  # one cancellation path for the window and its parent


def test_extend_moves_the_deadline() -> None:
    clock = Clock()
    budget = Budget(100, _clock=clock)
    clock.now += 1
    budget.extend(1_000)
    assert budget.remaining_ms() == pytest.approx(100)


def test_cancel_reaches_children_and_parents() -> None:
    parent = Budget(1_000)
    child = parent.child(500)
    grandchild = child.child(100)
    grandchild.cancel("stop pressed")
    assert parent.cancelled and child.cancelled
    with pytest.raises(Cancelled, match="stop pressed"):
        parent.check()


async def test_run_bounds_an_awaitable() -> None:
    assert await Budget(1_000).run(asyncio.sleep(0.01, result=7)) == 7
    started = time.monotonic()
    with pytest.raises(BudgetExceeded):
        await Budget(100).run(asyncio.sleep(10))
    assert time.monotonic() - started < 5  # not the awaitable's 10 s


async def test_run_ends_on_cancel() -> None:
    budget = Budget(10_000)
    asyncio.get_running_loop().call_later(0.05, budget.cancel, "dropped socket")
    started = time.monotonic()
    with pytest.raises(Cancelled, match="dropped socket"):
        await budget.run(asyncio.sleep(10))
    assert time.monotonic() - started < 5  # not the awaitable's 10 s


async def test_run_cancels_the_inner_work() -> None:
    cancelled = asyncio.Event()

    async def work() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(BudgetExceeded):
        await Budget(50).run(work())
    assert cancelled.is_set()


def test_negative_timeout_is_refused() -> None:
    with pytest.raises(ValueError):
        Budget(-1)


def test_engine_does_not_import_django() -> None:
    code = (
        "import sys, automation, automation.llm.openai, automation.llm.rules;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'dashboard'));"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


async def test_refused_work_is_closed_not_leaked() -> None:
    budget = Budget(1_000)
    budget.cancel()
    work = asyncio.sleep(1)
    with pytest.raises(Cancelled):
        await budget.run(work)
    assert work.cr_frame is None  # closed: no "never awaited" warning later


def test_the_error_names_the_budget_that_ran_out() -> None:
    """A snapshot's own 10 s running out is reported as the snapshot's, not as the run's
    30 minutes; a child the run's deadline cut short reports the run."""
    clock = Clock()
    run = Budget(1_800_000, label="run", _clock=clock)
    snapshot = run.child(10_000, label="snapshot")
    clock.now += 10.5
    with pytest.raises(BudgetExceeded) as caught:
        snapshot.check()
    assert caught.value.message == "the snapshot ran out of its 10000 ms budget"
    late = Budget(5_000, label="run", _clock=clock)
    cut_short = late.child(10_000, label="snapshot").child(label="snapshot")
    clock.now += 6
    with pytest.raises(BudgetExceeded, match="the run ran out of its 5000 ms budget"):
        cut_short.check()
    # A run extended while it waited for a person no longer binds the child made before.
    paused = Budget(1_000, label="run", _clock=clock)
    step = paused.child(1_000, label="click")
    paused.extend(60_000)
    clock.now += 2
    assert step.binding() is step
    assert "the click ran out of its 1000 ms budget" in str(step.exceeded())
    # A child with a timeout of its own and no name does not pass for its parent.
    lookup = Budget(1_800_000, label="run", _clock=clock).child(2_000)
    clock.now += 3
    assert str(lookup.exceeded()).startswith("the part of the run ran out of its 2000 ms")


async def test_run_reports_the_budget_that_ran_out() -> None:
    run = Budget(60_000, label="run")
    with pytest.raises(BudgetExceeded, match=r"^the llm ran out of its 20 ms budget"):
        await run.child(20, label="llm").run(asyncio.sleep(5))
