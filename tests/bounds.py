"""A budget for a call a test expects to end well.

Such a call's budget is not what the test is about: it only ends a hang.  On a busy
machine (a test run on every core, beside other work) a call that takes milliseconds
alone can take seconds, so the bound is wide.  A test about a budget running out gives its
own, and one about how long something takes measures it instead.
"""

from __future__ import annotations

from automation.budget import Budget

ROOM_MS = 60_000


def room(label: str = "test") -> Budget:
    """A fresh budget of :data:`ROOM_MS`."""
    return Budget(ROOM_MS, label=label)
