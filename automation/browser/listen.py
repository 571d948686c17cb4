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

A page's request events reach Python once per event however many follow them:
:func:`follow` puts one listener on the page per event, which calls each handler in turn.
"""

from __future__ import annotations

import inspect
import logging
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["PER_REQUEST_EVENTS", "follow", "listener", "unfollow"]

log = logging.getLogger("automation.browser")

# Every event these listeners hear has one argument (the request, the page, the frame...).
_ONE_ARGUMENT = inspect.Signature([inspect.Parameter("event", inspect.Parameter.POSITIONAL_ONLY)])


def listener(handler: Callable[[Any], object]) -> Callable[[Any], Any]:
    """``handler``, called with an event's one argument, as a function that carries its
    signature."""

    def call(event: Any) -> Any:
        return handler(event)

    call.__signature__ = _ONE_ARGUMENT  # type: ignore[attr-defined]
    return call


# A page's events that come several to a request: Playwright wraps each listener of the
# page anew for every event (it converts the event's objects for it, then calls it), so a
# page followed by a settle and a page log paid that twice per event.
PER_REQUEST_EVENTS = ("request", "response", "requestfinished", "requestfailed")


class _Fanout:
    """One listener of a page's event that calls, in order, every handler following it."""

    def __init__(self) -> None:
        self.handlers: list[Callable[[Any], object]] = []
        self.call = listener(self._dispatch)

    def _dispatch(self, event: Any) -> None:
        for handler in tuple(self.handlers):  # one may stop following while called
            try:
                handler(event)
            except Exception:
                log.exception("a listener of a page's event failed")


_fanouts: weakref.WeakKeyDictionary[Any, dict[str, _Fanout]] = weakref.WeakKeyDictionary()


def follow(page: Any, event: str, handler: Callable[[Any], object]) -> None:
    """Call ``handler`` with each ``event`` of ``page`` (one of :data:`PER_REQUEST_EVENTS`):
    however many handlers follow it, the page has one listener of the event, and none
    when no handler follows it (Playwright then stops sending the event)."""
    fanouts = _fanouts.setdefault(page, {})
    fanout = fanouts.get(event)
    if fanout is None:
        fanout = fanouts[event] = _Fanout()
        page.on(event, fanout.call)
    fanout.handlers.append(handler)


def unfollow(page: Any, event: str, handler: Callable[[Any], object]) -> None:
    """Stop calling ``handler`` (once, as it was followed); an unknown one is ignored."""
    fanout = _fanouts.get(page, {}).get(event)
    if fanout is None or handler not in fanout.handlers:
        return
    fanout.handlers.remove(handler)
    if not fanout.handlers:
        del _fanouts[page][event]
        page.remove_listener(event, fanout.call)
