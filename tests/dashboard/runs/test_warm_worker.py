"""A worker keeps one browser running and gives each run a context of its own: two runs
one after the other share no cookies, storage or downloads; the contexts of ended runs
are closed (none left over many runs); a browser that crashes is started again before the
next run asks; a run keeps the URL policy it started with while a later run gets the new
one, each in a browser of its own, and the outdated one closes once unused, while runs
whose settings differ only in a tab's own (its action timeout, its tab limit) share one;
a tab that crashes fails its own run only."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from playwright.async_api import Error as PlaywrightError

from automation import BrowserSession
from dashboard.models import Run, UrlRule
from dashboard.runs import files as runfiles
from dashboard.runs.runner import RunManager
from tests.automation.browser.test_session import browser_pids
from tests.bounds import room
from tests.dashboard.conftest import Runs
from tests.dashboard.runs.test_consumer import load_run
from tests.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)

STORAGE = "/engine/storage.html"


def browser_pid(browser: BrowserSession) -> int:
    """The worker's Chromium: the one process sent through this session's egress proxy."""
    assert browser.egress is not None
    return browser_pids(f"--proxy-server={browser.egress.url}")[0]


async def settled(run_id: int, timeout_s: float = 60, *, final: bool = False) -> Run:
    """The run once it ended or (unless ``final``) waits for a person."""
    async with asyncio.timeout(timeout_s):
        while True:
            run = await load_run(run_id)
            if run.is_final or (run.status == Run.Status.PAUSED and not final):
                return run
            await asyncio.sleep(0.05)


async def test_two_runs_of_one_worker_share_no_cookies_storage_or_downloads(
    runs: Runs, worker: RunManager, owner: Any, fixture_url: str
) -> None:
    first = await runs.start(await runs.create(
        owner=owner, start_url=f"{fixture_url}/engine/downloads.html",
        task=f"click Report (file)\ngo to {fixture_url}{STORAGE}\nclick Log in\n"
             "wait for logged in with abc123, cookie",
    ))  # fmt: skip
    done = await settled(first.pk)
    assert done.status == Run.Status.SUCCEEDED, done.status_reason
    await worker.wait_closed(first.pk)
    kept = await asyncio.to_thread(runfiles.files_of, first.pk)
    assert [file.name for file in kept] == ["report.csv"]

    second = await runs.start(await runs.create(
        owner=owner, start_url=f"{fixture_url}{STORAGE}", task="wait for logged out, no cookie"
    ))  # fmt: skip
    done = await settled(second.pk)
    assert done.status == Run.Status.SUCCEEDED, done.status_reason
    await worker.wait_closed(second.pk)
    assert await asyncio.to_thread(runfiles.files_of, second.pk) == []


async def test_ended_runs_leave_no_context_open(
    runs: Runs, worker: RunManager, owner: Any, fixture_url: str
) -> None:
    browser = await worker.browser()
    for n in range(4):
        run = await runs.start(await runs.create(
            owner=owner, start_url=f"{fixture_url}{STORAGE}?n={n}",
            task="wait for logged out, no cookie",
        ))  # fmt: skip
        done = await settled(run.pk)
        assert done.status == Run.Status.SUCCEEDED, done.status_reason
        await worker.wait_closed(run.pk)
        assert browser.in_use == 0
    # Only the context held ahead for the next run is open, in the browser as we see it.
    await eventually(lambda: browser.contexts_in_browser == 1, what="one context held ahead")
    assert browser.contexts_open == 1


async def test_a_warm_worker_starts_a_crashed_browser_again_before_the_next_run(
    runs: Runs, worker: RunManager, owner: Any, fixture_url: str
) -> None:
    browser = await worker.browser()
    await eventually(lambda: browser.connected, what="the browser up")
    restarts = browser.restarts
    run = await runs.start(await runs.create(
        owner=owner, start_url=f"{fixture_url}{STORAGE}", task="click Nowhere at all"
    ))  # fmt: skip
    assert (await settled(run.pk)).status == Run.Status.PAUSED  # it waits, in its context
    os.kill(browser_pid(browser), signal.SIGKILL)
    failed = await settled(run.pk, final=True)
    assert failed.status == Run.Status.FAILED
    assert "the browser went away" in failed.status_reason, failed.status_reason
    await eventually(lambda: browser.restarts == restarts + 1, what="a new browser, unasked")
    await eventually(lambda: browser.contexts_in_browser == 1, what="up, a context held ahead")

    after = await runs.start(await runs.create(
        owner=owner, start_url=f"{fixture_url}{STORAGE}", task="wait for logged out, no cookie"
    ))  # fmt: skip
    done = await settled(after.pk)
    assert done.status == Run.Status.SUCCEEDED, done.status_reason
    assert browser.restarts == restarts + 1


async def test_each_run_keeps_its_own_url_policy(
    runs: Runs, worker: RunManager, owner: Any, fixture_url: str
) -> None:
    before = await runs.start(await runs.create(
        owner=owner, start_url=f"{fixture_url}{STORAGE}", task="click Nowhere at all"
    ))  # fmt: skip
    assert (await settled(before.pk)).status == Run.Status.PAUSED  # live, in its context
    host = fixture_url.removeprefix("http://")
    await sync_to_async(UrlRule.objects.create)(domain=host, kind=UrlRule.Kind.BLOCK)

    after = await runs.start(await runs.create(
        owner=owner, start_url=f"{fixture_url}{STORAGE}", task="wait for logged out, no cookie"
    ))  # fmt: skip
    refused = await settled(after.pk)
    assert refused.status != Run.Status.SUCCEEDED
    events = await database_sync_to_async(list)(
        refused.events.values_list("data", flat=True)  # type: ignore[attr-defined]
    )
    assert "blocked" in repr(events), events

    # The run that started before the rule goes on under the policy it started with,
    # its requests through its own browser's proxy, not the later run's.
    answer = await worker.act(
        before.pk, "navigate", {"url": f"{fixture_url}{STORAGE}?again"}, budget=room()
    )
    assert answer["ok"], answer
    assert len(worker.browsers.open) == 2
    await worker.end(before.pk, "the test ended")
    await worker.end(after.pk, "the test ended")
    await worker.browser()  # the settings of now: the outdated browser, unused, closes
    assert len(worker.browsers.open) == 1
    await sync_to_async(UrlRule.objects.all().delete)()


async def test_runs_whose_settings_differ_only_in_a_tab_s_own_share_the_browser(
    runs: Runs, worker: RunManager, owner: Any, fixture_url: str, settings: Any
) -> None:
    made = []
    for timeout_ms, max_tabs in ((5_000, 20), (7_000, 3)):
        settings.TABWRIGHT = {
            **settings.TABWRIGHT, "ACTION_TIMEOUT_MS": timeout_ms, "MAX_TABS": max_tabs
        }  # fmt: skip
        run = await runs.start(await runs.create(
            owner=owner, start_url=f"{fixture_url}{STORAGE}", task="click Nowhere at all"
        ))  # fmt: skip
        assert (await settled(run.pk)).status == Run.Status.PAUSED  # live, in its context
        made.append(run.pk)
    assert len(worker.browsers.open) == 1
    tabs = [worker._live[run_id].tab for run_id in made]
    assert [tab.config.action_timeout_ms for tab in tabs] == [5_000, 7_000]  # type: ignore[union-attr]
    assert [tab.group.max_tabs for tab in tabs] == [20, 3]  # type: ignore[union-attr]
    for run_id in made:
        await worker.end(run_id, "the test ended")


async def test_a_tab_that_crashes_fails_its_run_only(
    runs: Runs, worker: RunManager, owner: Any, fixture_url: str
) -> None:
    made = []
    for n in range(2):
        made.append(await runs.create(
            owner=owner, start_url=f"{fixture_url}{STORAGE}?run={n}", task="click Nowhere at all"
        ))  # fmt: skip
    crashing, going_on = [await runs.start(run) for run in made]
    for run in (crashing, going_on):
        assert (await settled(run.pk)).status == Run.Status.PAUSED  # both live, one browser
    tab = worker._live[crashing.pk].current_tab()
    assert tab is not None
    session = await tab.context.new_cdp_session(tab.page)
    with contextlib.suppress(PlaywrightError):  # the page goes down with the call
        await session.send("Page.crash")
    failed = await settled(crashing.pk, final=True)
    assert failed.status == Run.Status.FAILED
    assert "the tab crashed" in failed.status_reason, failed.status_reason

    assert worker.is_live(going_on.pk)
    answer = await worker.act(
        going_on.pk, "navigate", {"url": f"{fixture_url}{STORAGE}?on"}, budget=room()
    )
    assert answer["ok"], answer
    assert (await load_run(going_on.pk)).status == Run.Status.PAUSED
