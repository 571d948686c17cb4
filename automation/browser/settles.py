"""Making a :class:`Tab` action settle before it returns: the ``@settles`` decorator.

The tab's turn is taken (one action a tab at a time), the tab's :class:`Settler` armed
before the action runs and asked to settle after it (see :mod:`automation.browser.settle`
for what settling waits for and what it leaves out).  An action that may send a form (a
click, a key, a fill that presses Enter) fails with :class:`FormNotSent` when the browser
refused to send it (a required field empty, a number past its maximum: settle.js hears the
fields' ``invalid`` events, the focus moved to one) and the page sent no write and went
nowhere meanwhile: the click happened, what it was for did not."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar, cast

from automation.browser.settle import Settler
from automation.budget import Budget
from automation.errors import (
    BrowserClosed,
    BudgetExceeded,
    Cancelled,
    FormNotSent,
    TabwrightError,
)

if TYPE_CHECKING:
    from automation.browser.tab import Tab

__all__ = ["Trigger", "settles"]


F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
# What an action sets off, told before it runs (see settles): the event the page fires
# once it is done, and the ref of the element that event is on; None when there is none
# to wait for.
Trigger = Callable[["Tab", tuple[Any, ...], dict[str, Any]], "tuple[str, str] | None"]
# Whether a call of an action may send a form (see settles: FormNotSent).
Sends = Callable[[tuple[Any, ...], dict[str, Any]], bool]


# The tabs (their settlers' ids) whose action the current task is inside: an action it
# runs there is part of that one, not one waiting for its turn.
_ACTING: ContextVar[tuple[int, ...]] = ContextVar("tabwright_acting", default=())


@asynccontextmanager
async def _turn(settler: Settler, budget: Budget | None) -> AsyncIterator[None]:
    """The tab's turn for one action: waited for within ``budget`` (its time counts)."""
    if budget is None:
        await settler.turn.acquire()
    else:
        await budget.run(settler.turn.acquire())
    try:
        yield
    finally:
        settler.turn.release()


def settles(
    method: F | None = None, *, early: Trigger | None = None, sends: Sends | None = None
) -> Any:
    """Make a :class:`Tab` action settle before it returns (see :mod:`automation.browser.settle`):
    armed before it runs, settled after it returns or fails (unless it was cancelled, its
    budget ran out or the tab closed), within the caller's ``budget`` keyword argument.
    An action called by another settling action leaves the settling to the outer one.

    With ``early`` (for an action whose first step resolves its ref in the page), the arm
    is sent without waiting for it; the event ``early`` names for the call, when there is
    one, brings the probe back in the same round trip as the action.  With ``sends``
    (for an action that may send a form), a call it says may send one fails with
    :class:`FormNotSent` when the browser refused to send it.
    """
    if method is None:
        return functools.partial(settles, early=early, sends=sends)

    @functools.wraps(method)
    async def acting(self: Tab, *args: Any, **kwargs: Any) -> Any:
        settler: Settler = self.settler
        inside = _ACTING.get()
        if id(settler) in inside:  # run by an action of this tab's (a macro's step)
            return await method(self, *args, **kwargs)
        given: Budget | None = kwargs.get("budget")
        token = _ACTING.set((*inside, id(settler)))
        try:
            async with _turn(settler, given):
                return await settled(self, settler, given, *args, **kwargs)
        finally:
            _ACTING.reset(token)

    async def settled(
        self: Tab, settler: Settler, given: Budget | None, *args: Any, **kwargs: Any
    ) -> Any:
        if not settler.enabled:
            return await method(self, *args, **kwargs)
        what = f"settle after {method.__name__.lstrip('_')}"
        writes = settler.traffic.writes
        if early is None:
            mark = await settler.arm(given)
        else:
            trigger, ref = early(self, args, kwargs) or ("", "")
            mark = settler.arm_early(given, trigger=trigger, ref=ref)
            await asyncio.sleep(0)  # the arm's message goes out first (Settler.arm_early)
        try:
            result = await method(self, *args, **kwargs)
        except (Cancelled, BrowserClosed, BudgetExceeded):
            if mark.early is not None:
                mark.early.cancel()
            raise
        except TabwrightError:
            await settler.settle(mark, budget=_settle_budget(self, given), what=what)
            raise
        report = await settler.settle(mark, budget=_settle_budget(self, given), what=what)
        if report.blocked and sends is not None and sends(args, kwargs):
            if not report.navigated and settler.traffic.writes == writes:
                raise _not_sent(report.blocked)
        return result

    return cast(F, acting)


def _not_sent(fields: tuple[tuple[str, str], ...]) -> FormNotSent:
    said = "; ".join(
        f"{name!r}: {message}" if name else message or "not valid" for name, message in fields
    )
    return FormNotSent(
        f"the browser refused to send the form, nothing was sent: {said}",
        fields=fields,
        hint="fill the field as it asks (or fix its value), then send the form again",
    )


def _settle_budget(tab: Tab, given: Budget | None) -> Budget:
    if given is None:
        return Budget(tab.config.action_timeout_ms, label="settle")
    return given.child(label="settle")
