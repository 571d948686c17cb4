"""A check's verdict when its budget ends during a read of the page (a busy machine): the
last reading decides; a check that never read the page ends on its budget."""

from __future__ import annotations

from typing import Any

import pytest

from automation import Budget
from automation.errors import BudgetExceeded, CheckFailed
from automation.recording import expect

HIDDEN = {"kind": "text_hidden", "text": "Email"}


def reads_that_hang_after(monkeypatch: pytest.MonkeyPatch, answered: int) -> list[int]:
    """The page answers ``answered`` reads ("it is shown"), then a read never ends."""
    reads: list[int] = []

    async def once(tab: Any, args: Any, identity: Any, budget: Budget) -> tuple[bool, str]:
        reads.append(1)
        if len(reads) > answered:
            await budget.run(expect.asyncio.sleep(3600))
        return False, "it is shown"

    monkeypatch.setattr(expect, "_once", once)
    return reads


async def test_a_read_cut_short_by_the_budget_leaves_the_last_reading_to_decide(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = reads_that_hang_after(monkeypatch, answered=1)
    with pytest.raises(CheckFailed, match="expected text 'Email' is not visible, but it is shown"):
        await expect.check(None, HIDDEN, None, budget=Budget(1_000))  # type: ignore[arg-type]
    assert len(reads) == 2


async def test_a_check_that_never_read_the_page_ends_on_its_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads_that_hang_after(monkeypatch, answered=0)
    with pytest.raises(BudgetExceeded):
        await expect.check(None, HIDDEN, None, budget=Budget(300))  # type: ignore[arg-type]
