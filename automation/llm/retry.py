"""Retrying an LLM call that failed for a passing reason, within the caller's budget.

Only :class:`~automation.errors.LLMUnavailable` is retried (refused or dropped connection,
HTTP 429, 5xx, an overloaded provider).  The wait is exponential backoff with full jitter,
or the server's ``Retry-After`` when it sends one.  No retry happens when:

- the wait would not end with enough budget left for another try;
- the retries are used up.

A connection that drops mid-reply is retried too: the part of the reply that already went
to ``on_token`` is abandoned, and ``on_retry`` says how many characters of it were shown,
so whoever showed them can mark them as discarded.  Only the last try's text is the reply.

``on_attempt`` hears of each try right before it is sent; ``on_retry`` of each retry
before its wait.  The wait runs through the budget, so the stop button ends it at once.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from automation.budget import Budget
from automation.errors import LLMUnavailable
from automation.llm.base import OnAttempt, OnRetry, OnToken, RetryNotice

__all__ = [
    "BACKOFF_BASE_S",
    "BACKOFF_CAP_S",
    "BACKOFF_FACTOR",
    "DEFAULT_RETRIES",
    "Attempt",
    "Backoff",
    "backoff_s",
    "retry_after_s",
    "with_retries",
]

log = logging.getLogger("automation.llm")

T = TypeVar("T")
Backoff = Callable[[int], float]

DEFAULT_RETRIES = 3
BACKOFF_BASE_S = 0.5
BACKOFF_FACTOR = 2.0
BACKOFF_CAP_S = 8.0
# A try that would start with less budget than this cannot get an answer anyway.
MIN_TRY_MS = 100


def backoff_s(
    retry: int,
    *,
    base_s: float = BACKOFF_BASE_S,
    factor: float = BACKOFF_FACTOR,
    cap_s: float = BACKOFF_CAP_S,
    rng: random.Random | None = None,
) -> float:
    """The wait before the ``retry``-th retry (1 for the first): full jitter, a uniform
    draw from 0 to ``min(cap_s, base_s * factor ** (retry - 1))``."""
    ceiling = min(cap_s, base_s * factor ** max(0, retry - 1))
    return (rng or random).uniform(0, ceiling)


def retry_after_s(value: str | None, *, now: float | None = None) -> float | None:
    """A ``Retry-After`` header as seconds to wait: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


@dataclass
class Attempt:
    """One try of a call: what the retry loop needs to know about how it went."""

    number: int  # 1 for the first try
    streamed_chars: int = 0  # how much of the reply already went to on_token
    retry_after_s: float | None = None  # the server said when to come back

    def watch(self, on_token: OnToken | None) -> OnToken | None:
        """``on_token`` that counts what this attempt streamed before passing it on."""
        if on_token is None:
            return None

        async def watched(piece: str) -> None:
            self.streamed_chars += len(piece)
            await on_token(piece)

        return watched


async def with_retries(
    call: Callable[[Attempt], Awaitable[T]],
    *,
    budget: Budget,
    retries: int = DEFAULT_RETRIES,
    backoff: Backoff = backoff_s,
    on_attempt: OnAttempt | None = None,
    on_retry: OnRetry | None = None,
) -> T:
    """Run ``call`` and retry it on :class:`LLMUnavailable` up to ``retries`` more times."""
    number = 1
    while True:
        attempt = Attempt(number)
        if on_attempt is not None:
            await on_attempt(number)
        try:
            return await call(attempt)
        except LLMUnavailable as exc:
            if number > retries:
                if number == 1:
                    raise
                raise _gave_up(exc, f"gave up after {number} attempts") from exc
            wait_s = attempt.retry_after_s
            if wait_s is None:
                wait_s = max(0.0, backoff(number))
            left_ms = budget.remaining_ms()
            if wait_s * 1000 + MIN_TRY_MS > left_ms:
                raise _gave_up(
                    exc,
                    f"not retried after {_attempts(number)}: the next try would start in "
                    f"{wait_s * 1000:.0f} ms, the budget has {left_ms:.0f} ms left",
                ) from exc
            log.info("LLM call failed (%s); try %d in %.2f s", exc.message, number + 1, wait_s)
            notice = RetryNotice(
                retry=number,
                retries=retries,
                wait_ms=round(wait_s * 1000),
                reason=exc.reason or "model server unavailable",
                discarded_chars=attempt.streamed_chars,
            )
        if on_retry is not None:
            await on_retry(notice)
        await budget.run(asyncio.sleep(wait_s))
        number += 1


def _attempts(n: int) -> str:
    return f"{n} attempt" if n == 1 else f"{n} attempts"


def _gave_up(exc: LLMUnavailable, why: str) -> LLMUnavailable:
    return LLMUnavailable(f"{exc.message}; {why}", reason=exc.reason, hint=exc.hint)
