"""The channel layer is a doorbell (dashboard.runs.doorbell): on a real Redis that stops and
starts again, a message it can't carry — a run's event, a wake-up, a call's answer — is
dropped, never raised to whoever sent it, and the outage is logged once, then its end; a
run page's socket under which the layer fails is closed with a code that says "catch up",
cleaned up like any other (its watch of the run ended), not torn down with 1011."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from django.test import AsyncClient
from django.utils import timezone

from automation.events import Observation
from dashboard.accounts.services import api_token_create
from dashboard.models import Run
from dashboard.routing import websocket_urlpatterns
from dashboard.runs import carry
from dashboard.runs.consumers import CLOSE_LAYER_LOST
from dashboard.runs.doorbell import ring, ring_group, wake
from dashboard.runs.messages import command_message, event_message
from dashboard.runs.runner import runner
from dashboard.runs.sink import DashboardSink
from tests.bounds import room
from tests.dashboard.conftest import Socket
from tests.dashboard.sockets import ANSWER_S
from tests.servers import RedisServer, restartable_redis

pytestmark = pytest.mark.django_db(transaction=True)


@pytest_asyncio.fixture
async def redis(settings: Any) -> AsyncIterator[RedisServer]:
    """The dashboard's layer on a Redis of the test's own (stopped and started by it)."""
    with restartable_redis() as server:
        settings.CHANNEL_LAYERS = {"default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [server.url], "prefix": "tabwright:"},
        }}  # fmt: skip
        layer = get_channel_layer()
        try:
            yield server
        finally:
            await layer.close_pools()


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "tabwright.layer"]


async def test_what_the_layer_cant_carry_is_dropped_and_the_outage_logged_once(
    redis: RedisServer, owner: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tabwright.layer")
    layer = get_channel_layer()
    channel = await layer.new_channel()
    assert await ring(channel, {"type": "run.watch", "run_id": 1, "viewer": "x"})
    assert (await layer.receive(channel))["type"] == "run.watch"
    run = await sync_to_async(Run.objects.create)(owner=owner, task="t", start_url="")

    redis.stop()
    assert await ring(channel, {"type": "run.watch", "run_id": 1, "viewer": "x"}) is False
    assert await ring_group("run_1", event_message({"type": "observation"})) is False
    await wake()  # the workers' poll finds the run instead
    # A run's event is stored, and its relay dropped: the run goes on.
    sink = DashboardSink(run.pk, 0)
    await sink.emit(Observation(1, "the page is still there"))
    stored = await sync_to_async(lambda: list(run.events.values_list("type", flat=True)))()
    assert stored == ["observation"]
    # A call for a run held by a worker elsewhere: answered "unreachable", not raised.
    answer = await carry.carry(
        command_message(run.pk, "pause"), room(), place=carry.Place(False, channel)
    )
    assert answer == carry.unreachable()
    # Over the API: a refusal that says to try again, not a 500.
    elsewhere = {"status": "running", "holder": channel, "lease_until": timezone.now()}
    await sync_to_async(Run.objects.filter(pk=run.pk).update)(**elsewhere)
    token = await sync_to_async(api_token_create)(owner=owner, name="script")
    stop = await AsyncClient().post(f"/api/runs/{run.pk}/stop",
                                    headers={"Authorization": f"Bearer {token[1]}"})  # fmt: skip
    assert stop.status_code == 503 and stop.json()["error"]["code"] == "unreachable"
    assert len(said(caplog)) == 1 and "the channel layer failed" in said(caplog)[0]

    redis.start()
    assert await ring_group("run_1", event_message({"type": "observation"}))
    assert len(said(caplog)) == 2
    assert said(caplog)[1].startswith("the channel layer takes messages again after")
    assert "(6 dropped or failed)" in said(caplog)[1]


async def test_a_page_whose_layer_fails_is_closed_to_catch_up_and_cleaned_up(
    redis: RedisServer, owner: Any
) -> None:
    run = await sync_to_async(Run.objects.create)(owner=owner, task="t", start_url="")
    comm = Socket(URLRouter(websocket_urlpatterns), f"/ws/runs/{run.pk}/")
    comm.scope["user"] = owner
    connected, _ = await comm.connect()
    assert connected
    assert (await comm.receive_json_from(timeout=ANSWER_S))["type"] == "state"
    assert runner.viewer_count(run.pk) == 1  # its page watches

    redis.stop()
    closed = await comm.receive_output(timeout=60)
    assert closed == {"type": "websocket.close", "code": CLOSE_LAYER_LOST}
    await comm.disconnect()  # as the browser's end of it goes
    assert runner.viewer_count(run.pk) == 0  # cleaned up: it watches no more
    assert comm.future.done() and comm.future.exception() is None

    # While the layer is down a page is not let in; once it is back, it is (and reads the
    # run's events it missed from the database).
    refused = Socket(URLRouter(websocket_urlpatterns), f"/ws/runs/{run.pk}/")
    refused.scope["user"] = owner
    assert (await refused.connect())[0] is False
    await refused.disconnect()
    redis.start()
    again = Socket(URLRouter(websocket_urlpatterns), f"/ws/runs/{run.pk}/")
    again.scope["user"] = owner
    assert (await again.connect())[0] is True
    assert (await again.receive_json_from(timeout=ANSWER_S))["type"] == "state"
    await again.disconnect()
