"""Runs that must not lose anything: a crashed Chromium fails its run at once (even a
paused one) and the next run gets a fresh browser; four runs at once keep their events
apart; a run's console errors and failed requests are kept with it."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from channels.db import database_sync_to_async

from automation import BrowserConfig
from dashboard.engineconf import browser_config
from dashboard.models import Run, RunEvent
from dashboard.runs import browsers as browsers_module
from dashboard.runs.runner import RunManager, runner
from tests.automation.browser.test_session import browser_pids
from tests.dashboard.conftest import OpenSocket, Runs
from tests.dashboard.runs.test_consumer import (
    load_run,
    of_type,
    receive_until,
    start_watched,
    stored_steps,
    types,
)

pytestmark = pytest.mark.django_db(transaction=True)


def sign_up_as(name: str) -> str:
    return f"type {name} into Name\ntype {name.lower()}@example.org into Email\n" \
        f"click Sign up\nwait for Welcome, {name}!"  # fmt: skip


@pytest_asyncio.fixture(loop_scope="session")
async def marked_runner(
    media_root: Any, fast_actions: None, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Runs, str]]:
    """A runner of its own whose Chromium carries a marker, so the test can find it and
    kill it without touching the shared one."""
    manager = RunManager()
    marker = f"--tabwright-test={uuid.uuid4().hex}"

    def marked() -> BrowserConfig:
        config = browser_config()
        return dataclasses.replace(config, args=(*config.args, marker))

    monkeypatch.setattr(browsers_module, "browser_config", marked)
    runs = Runs(manager)
    yield runs, marker
    await runs.stop_all()
    await manager.shutdown()


def browser_pid(marker: str) -> int:
    """The run's Chromium."""
    return browser_pids(marker)[0]


async def wait_final(run_id: int, timeout_s: float = 15) -> Run:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        run = await load_run(run_id)
        if run.is_final:
            return run
        assert loop.time() < deadline, (run.status, run.status_reason)
        await asyncio.sleep(0.1)


async def test_a_crashed_browser_fails_its_paused_run_and_the_next_run_gets_a_fresh_one(
    marked_runner: tuple[Runs, str], owner: Any, fixture_url: str
) -> None:
    runs, marker = marked_runner
    manager = runs.manager
    run = await runs.start(await runs.create(
        owner=owner, task="click Delete\nwait for Order #1003 deleted",
        start_url=f"{fixture_url}/demo/list.html",
    ))  # fmt: skip
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 15
    while (await load_run(run.pk)).status != Run.Status.PAUSED:
        assert loop.time() < deadline
        await asyncio.sleep(0.1)

    os.kill(browser_pid(marker), signal.SIGKILL)
    failed = await wait_final(run.pk)  # paused, yet it notices at once
    assert failed.status == Run.Status.FAILED
    assert "the browser went away" in failed.status_reason, failed.status_reason
    assert [s.action for s in await stored_steps(run.pk)] == ["navigate"]  # kept
    await manager.wait(run.pk)
    assert not manager.is_live(run.pk)

    after = await runs.start(await runs.create(
        owner=owner, task=sign_up_as("Ada"), start_url=f"{fixture_url}/demo/form.html"
    ))  # fmt: skip
    done = await wait_final(after.pk)
    assert done.status == Run.Status.SUCCEEDED, done.status_reason
    assert manager.browser_restarts == 1
    assert browser_pid(marker)  # a new Chromium, with the same switches


async def test_four_runs_at_once_keep_their_events_apart(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    names = ["Ada", "Grace", "Alan", "Edsger"]
    form = f"{fixture_url}/demo/form.html"
    watched = [
        await start_watched(runs, open_socket, owner, sign_up_as(name), form) for name in names
    ]
    contexts = set()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 15
    while len(contexts) < len(names):  # each run in a browser context of its own
        contexts = {
            id(live.tab.context)
            for run, _ in watched
            if (live := runner._live.get(run.pk)) is not None and live.tab is not None
        }
        assert loop.time() < deadline, contexts
        await asyncio.sleep(0.02)

    heard = await asyncio.gather(
        *(receive_until(comm, of_type("run.finished"), timeout_s=60) for _, comm in watched)
    )
    for name, (run, _), messages in zip(names, watched, heard, strict=True):
        assert messages[-1]["status"] == "succeeded", messages[-1]
        assert "frame" in types(messages)  # each page watched its own run's tab
        text = json.dumps([m for m in messages if m["type"] != "frame"])
        assert name in text
        for other in names:
            if other != name:
                assert other not in text, (name, other)
        stored = await database_sync_to_async(list)(
            RunEvent.objects.filter(run_id=run.pk).values_list("data", flat=True)
        )
        assert name in json.dumps(stored)
        assert all(other not in json.dumps(stored) for other in names if other != name)
        steps = await stored_steps(run.pk)
        assert [s.action for s in steps] == ["navigate", "type", "type", "click", "wait_for"]


async def test_console_errors_and_failed_requests_are_kept_with_the_run(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str
) -> None:
    # The page's text never says "all loaded": the run waits, pauses, and is stopped,
    # by when every problem the page makes on load has long happened.
    run, comm = await start_watched(
        runs, open_socket, owner, "wait for all loaded", f"{fixture_url}/problems/problems.html"
    )
    await receive_until(comm, of_type("run.paused"))
    await comm.send_json_to({"command": "stop"})
    messages = await receive_until(comm, of_type("run.finished"))
    await runs.manager.wait(run.pk)
    assert messages[-1]["status"] == "stopped", messages[-1]
    stored = await database_sync_to_async(list)(
        RunEvent.objects.filter(run_id=run.pk, type="page.problem").order_by("seq")
    )
    problems = [(e.data["kind"], e.data["text"]) for e in stored]
    assert ("console", "console error on purpose") in problems, problems
    assert any(kind == "pageerror" and "uncaught on purpose" in text for kind, text in problems)
    assert any(kind == "request" and "missing.json" in text and "404" in text
               for kind, text in problems), problems  # fmt: skip
    assert all(e.data["page_url"].endswith("/problems/problems.html") for e in stored)
