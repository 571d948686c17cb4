"""One Playwright call inside a budget, its errors turned into ours.

Every module of the browser layer awaits Playwright through :func:`call`, so a timeout,
a closed page and a refused action read the same wherever they happen.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from playwright._impl._errors import TargetClosedError  # not re-exported by async_api
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from automation.budget import DEFAULT_HEADROOM_MS, Budget
from automation.errors import ActionFailed, BrowserClosed, BudgetExceeded

__all__ = ["brief", "call"]

T = TypeVar("T")


async def call(
    what: str, budget: Budget, work: Awaitable[T], *, gone: Callable[[], bool] | None = None
) -> T:
    """Await ``work`` within ``budget``.  ``gone`` tells whether the page or browser the
    call needed has gone away, which makes a failure BrowserClosed."""
    try:
        return await budget.run(work)
    except PlaywrightTimeout as exc:
        # Our Playwright timeouts are the budget less a headroom: near the end of the
        # budget a Playwright timeout is the budget running out.
        if budget.remaining_ms() <= 2 * DEFAULT_HEADROOM_MS:
            spent = budget.exceeded()  # names the budget that ran out: the step's or the run's
            raise BudgetExceeded(f"{what}: {spent.message}", hint=spent.hint) from None
        raise ActionFailed(f"{what} did not complete: {brief(exc)}") from None
    except TargetClosedError:
        raise BrowserClosed(f"{what}: the page, context or browser is closed") from None
    except PlaywrightError as exc:
        if gone is not None and gone():
            raise BrowserClosed(f"{what}: the tab or browser is gone") from None
        raise ActionFailed(f"{what} failed: {brief(exc)}") from None


def brief(exc: BaseException) -> str:
    """Playwright's first message line, without the call log noise."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    for marker in ("element is not visible", "element is not enabled", "element is not editable"):
        if marker in text and marker not in first:
            first += f" ({marker})"
    return first[:300]
