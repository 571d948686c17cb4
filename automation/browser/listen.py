"""Event listeners that Playwright calls at little cost.

Playwright (1.65) passes a listener as many of an event's arguments as it takes, and finds
out how many by calling ``inspect.signature`` on the listener for every event it
delivers: for a bound method that builds a new ``Signature`` each time.  A page's request
events (``request``, ``response``, ``requestfinished``, ``requestfailed``: a tab's settle
and page log listen to them) come several to a request, so that was about a third of the
CPU Python spent on each request's events (py-spy, bench.egress).  ``inspect.signature``
returns a callable's own ``__signature__`` as it is (PEP 362): a listener that carries one
is called without that cost.  Remove such a listener by the function :func:`listener`
returned, not by the handler it wraps.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["listener"]

# Every event these listeners hear has one argument (the request, the page, the frame...).
_ONE_ARGUMENT = inspect.Signature([inspect.Parameter("event", inspect.Parameter.POSITIONAL_ONLY)])


def listener(handler: Callable[[Any], object]) -> Callable[[Any], Any]:
    """``handler``, called with an event's one argument, as a function that carries its
    signature."""

    def call(event: Any) -> Any:
        return handler(event)

    call.__signature__ = _ONE_ARGUMENT  # type: ignore[attr-defined]
    return call
