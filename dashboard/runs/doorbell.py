"""The workers' doorbell: a run was queued (or room was made), so a worker with room claims it.

Channels delivers a wake-up at most once, and a full channel refuses it: the database is
what decides (dashboard.runs.services.run_claim), and every worker also looks at the
queue at each poll, so a lost wake-up only delays a run.
"""

from __future__ import annotations

import logging

from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer

from dashboard.runs.messages import wake_message

__all__ = ["RUNS_CHANNEL", "wake"]

log = logging.getLogger("tabwright.worker")

RUNS_CHANNEL = "tabwright.runs"


async def wake() -> None:
    """Ring the workers' doorbell: a run was queued (or room was made)."""
    try:
        await get_channel_layer().send(RUNS_CHANNEL, wake_message())
    except ChannelFull:  # nobody has read the earlier ones yet: the next poll finds it
        log.info("the runs channel is full; the workers' next poll will claim the run")
