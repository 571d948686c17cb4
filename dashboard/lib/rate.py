"""A token bucket: how many messages a client may send, at what pace.

A page sends a few messages a second (a command, a frame's acknowledgement, the person's
input on the live view, their scrolls gathered every 120 ms); a client that sends
thousands has every one parsed and answered on the event loop every page and run of the
process shares.  :class:`Bucket` lets ``burst`` messages through at once and ``per_s`` a
second after that; what comes faster is refused, and the caller decides what a refusal
means (dropped, then the connection cut).
"""

from __future__ import annotations

import time

__all__ = ["MESSAGES_BURST", "MESSAGES_PER_S", "Bucket"]

# A socket's pace (dashboard.lib.daphnelimits): far past what a page sends, far short of a
# script's loop.
MESSAGES_PER_S = 50
MESSAGES_BURST = 200


class Bucket:
    def __init__(self, *, per_s: float, burst: int) -> None:
        self.per_s = per_s
        self.burst = burst
        self._tokens = float(burst)
        self._at = time.monotonic()
        self.refused = 0  # messages refused so far

    def take(self) -> bool:
        """Whether one more message may go through now."""
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.per_s)
        self._at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        self.refused += 1
        return False
