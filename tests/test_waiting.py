"""tests.waiting.eventually: a condition polled until it holds, or a failure that says
what never came."""

from __future__ import annotations

import pytest

from tests.waiting import eventually


async def test_a_coroutine_check_is_awaited_until_it_holds() -> None:
    looks: list[int] = []

    async def third_look() -> bool:
        looks.append(1)
        return len(looks) >= 3

    await eventually(third_look, every_s=0)
    assert len(looks) == 3


async def test_a_check_that_never_holds_fails_naming_it_and_what_was_said() -> None:
    with pytest.raises(AssertionError, match="the run ended; the worker said: nothing"):
        await eventually(lambda: False, 0, "the run ended", said=lambda: "the worker said: nothing")
