"""The channel layer, a doorbell: what is sent on it is never the only copy of anything.

A run's events and status are in the database before they are relayed to its pages (a page
that reconnects reads what it missed by seq); the queue is in the database (every worker
polls it); a call for a run held elsewhere has a caller that stops waiting within its
budget.  So a message that can't be sent — Redis restarting, a connection dropped, a full
channel — must not end what sent it, least of all a run: :func:`ring` and
:func:`ring_group` drop it and say whether it went.  An outage is logged once, when the
first message is dropped, and once more when the layer takes messages again.

The workers' doorbell itself: a run was queued (or room was made), so a worker with room
claims it.  Channels delivers a wake-up at most once, and a full channel refuses it: the
database is what decides (dashboard.runs.services.run_claim), and every worker also looks at
the queue at each poll, so a lost wake-up only delays a run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer

from dashboard.runs.messages import wake_message

__all__ = ["RUNS_CHANNEL", "layer_failed", "ring", "ring_group", "wake"]

log = logging.getLogger("tabwright.layer")

RUNS_CHANNEL = "tabwright.runs"


class _Outage:
    """This process's view of the layer: since when it fails, and what was dropped."""

    since: float | None = None  # time.monotonic() of the first failure
    dropped = 0


def layer_failed(exc: BaseException, what: str) -> None:
    """The layer failed at ``what`` (a send, a page's socket, a worker's listener): the
    first failure of an outage is logged, the rest only counted."""
    if _Outage.since is None:
        _Outage.since, _Outage.dropped = time.monotonic(), 0
        log.warning(
            "the channel layer failed (%s: %s): messages are dropped until it answers again; "
            "runs go on, pages catch up from the database when they reconnect",
            what, f"{type(exc).__name__}: {exc}",
        )  # fmt: skip
    _Outage.dropped += 1


def _layer_answered() -> None:
    if _Outage.since is not None:
        log.warning(
            "the channel layer takes messages again after %.1f s (%d dropped or failed)",
            time.monotonic() - _Outage.since, _Outage.dropped,
        )  # fmt: skip
        _Outage.since = None


async def ring(channel: str, message: Mapping[str, Any]) -> bool:
    """Send ``message`` to ``channel``; False when it could not be sent (dropped)."""
    try:
        await get_channel_layer().send(channel, dict(message))
    except ChannelFull:  # its reader is behind, not the layer down: nothing to log
        return False
    except Exception as exc:  # the layer is down or its connection dropped
        layer_failed(exc, f"a {message.get('type')} message")
        return False
    _layer_answered()
    return True


async def ring_group(group: str, message: Mapping[str, Any]) -> bool:
    """Send ``message`` to every channel of ``group``; False when it could not be sent."""
    try:
        await get_channel_layer().group_send(group, dict(message))
    except Exception as exc:
        layer_failed(exc, f"a {message.get('type')} message to {group}")
        return False
    _layer_answered()
    return True


async def wake() -> None:
    """Ring the workers' doorbell: a run was queued (or room was made).  Unheard (a full
    channel, the layer down), the workers' next poll claims the run."""
    await ring(RUNS_CHANNEL, wake_message())
