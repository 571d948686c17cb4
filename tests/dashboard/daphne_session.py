"""A person logged in to a real daphne (tests/daphne.py) with a run of their own, and the
run's socket opened as a browser would, for the tests of what the transport allows."""

from __future__ import annotations

import asyncio
import json
from contextlib import closing
from typing import Any

from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.daphne import log_in, new_run

__all__ = ["USER", "logged_in_run", "socket_messages"]

USER = ("olive", "pw-olive-1234")


def logged_in_run(base_url: str) -> tuple[int, str]:
    """Log in as USER and start a run of the rule planner; its id and the session key."""
    with closing(log_in(base_url, USER)) as client:
        return new_run(client, "press Enter"), client.cookies["sessionid"]


async def socket_messages(
    base_url: str, run_id: int, session: str, origin: str, *, until: str = "state"
) -> list[dict[str, Any]] | int:
    """Every message up to the first of type ``until``, or the HTTP status of a refused
    handshake.  No size limit on our side: what daphne sends is what a browser gets."""
    uri = base_url.replace("http://", "ws://") + f"/ws/runs/{run_id}/"
    got: list[dict[str, Any]] = []
    try:
        async with connect(
            uri,
            origin=origin,  # type: ignore[arg-type]
            additional_headers={"Cookie": f"sessionid={session}"},
            open_timeout=60,
            max_size=None,
        ) as socket:
            while True:
                got.append(json.loads(await asyncio.wait_for(socket.recv(), 60)))
                if got[-1]["type"] == until:
                    return got
    except InvalidStatus as exc:
        return exc.response.status_code
