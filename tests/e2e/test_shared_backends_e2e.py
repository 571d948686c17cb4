"""Two dashboard processes on one real PostgreSQL and one real Redis (Debian's servers on
loopback ports of their own): a run started through one process is watched live from a
page of the other — its stored events from the shared database, then its live events over
the Redis channel layer — and everything it did is in PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from tests.daphne import daphne
from tests.e2e.ui import CHROMIUM, LIVE_MS, PASSWORD, USERNAME, log_in, save, start_run
from tests.servers import postgres_server, redis_server
from tests.tasks import AMBIGUOUS_TASK

pytestmark = [pytest.mark.e2e, pytest.mark.multiprocess]


@pytest.fixture(scope="module")
def backends() -> Iterator[tuple[str, str]]:
    with postgres_server() as database_url, redis_server() as redis_url:
        yield database_url, redis_url


@pytest.fixture(scope="module")
def two_servers(
    tmp_path_factory: pytest.TempPathFactory, backends: tuple[str, str]
) -> Iterator[tuple[str, str, str]]:
    """Two daphne processes of one dashboard: the same database, layer and secret key."""
    settings = shared_settings(backends)
    user = (USERNAME, PASSWORD)
    with (
        daphne(tmp_path_factory.mktemp("web-a"), user, settings) as (a, _),
        daphne(tmp_path_factory.mktemp("web-b"), user, settings, setup=False) as (b, _),
    ):
        yield a, b, backends[0]


def shared_settings(backends: tuple[str, str]) -> dict[str, str]:
    database_url, redis_url = backends
    return {
        "DATABASE_URL": database_url,
        "TABWRIGHT_REDIS_URL": redis_url,
        "TABWRIGHT_SECRET_KEY": "a-key-both-processes-share-" + "x" * 24,
        "TABWRIGHT_DEBUG": "1",
        "TABWRIGHT_BLOCK_PRIVATE_ADDRESSES": "0",
        "TABWRIGHT_PLANNER": "rules",
        "TABWRIGHT_ACTION_TIMEOUT_MS": "5000",
        "TABWRIGHT_CHROMIUM_PATH": CHROMIUM,
        "TABWRIGHT_SESSION_IDLE_S": "0",
        "TABWRIGHT_LEASE_S": "3",  # a lost process is noticed within seconds
    }


def psql(database_url: str, query: str) -> str:
    done = subprocess.run(
        ["psql", database_url, "-At", "-c", query], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


async def start_paused_run(page: Page, base_url: str) -> int:
    """From the home page of the dashboard at ``base_url``: a run that pauses to ask."""
    await page.goto(f"{base_url}/")
    run_id = await start_run(page, f"{base_url}/demo/list.html", AMBIGUOUS_TASK)
    await expect(page.locator("#status")).to_have_text("paused", timeout=LIVE_MS)
    return run_id


async def test_a_page_on_one_process_follows_a_run_of_the_other_live(
    ui_browser: Browser, two_servers: tuple[str, str, str]
) -> None:
    a, b, database_url = two_servers
    context = await ui_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    try:
        # The session lives in the shared database: logged in on A is logged in on B.
        on_a = await context.new_page()
        await log_in(on_a, a)
        run_id = await start_paused_run(on_a, a)

        # B never ran it: what it shows comes from PostgreSQL, then live over Redis.
        on_b = await context.new_page()
        await on_b.goto(f"{b}/runs/{run_id}/")
        await expect(on_b.locator("#status")).to_have_text("paused")
        await expect(on_b.locator("body")).to_have_attribute("data-live", "1")
        await expect(on_b.locator("#steps > li.step")).to_have_count(1)

        await on_a.locator("#reply-text").fill("click Delete #3")
        await on_a.get_by_role("button", name="Send", exact=True).click()
        await expect(on_a.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
        # The page on B was not reloaded: the events reached it through the Redis layer.
        await expect(on_b.locator("#status")).to_have_text("succeeded")
        await expect(on_b.locator("#steps > li.step .step-action")).to_have_text(
            ["navigate", "click", "wait_for"]
        )
        await expect(on_b.locator("#chat")).to_contain_text("click Delete #3")
        await save(on_b, "shared-backends-other-process.png")

        assert psql(database_url, f"select status from dashboard_run where id = {run_id}") == (
            "succeeded"
        )
        steps = psql(database_url, f"select count(*) from dashboard_step where run_id = {run_id}")
        assert steps == "3"
    finally:
        await context.close()


def daphne_pid(base_url: str) -> int:
    """The pid of the daphne serving ``base_url`` (found by its port)."""
    port = base_url.rsplit(":", 1)[1]
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if any(a.endswith(b"daphne") for a in args[:2]) and port.encode() in args:
            return int(proc.name)
    raise AssertionError(f"no daphne on port {port}")


async def test_a_killed_process_s_runs_are_marked_lost_by_another_within_the_lease(
    ui_browser: Browser,
    two_servers: tuple[str, str, str],
    backends: tuple[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    a, b, database_url = two_servers
    settings = shared_settings(backends)
    context = await ui_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    user = (USERNAME, PASSWORD)
    try:
        with daphne(tmp_path_factory.mktemp("web-c"), user, settings, setup=False) as (c, _):
            on_c = await context.new_page()
            await log_in(on_c, c)
            run_id = await start_paused_run(on_c, c)
            on_a = await context.new_page()
            a_run = await start_paused_run(on_a, a)  # the survivor's own: untouched
            on_b = await context.new_page()
            await on_b.goto(f"{b}/runs/{run_id}/")
            await expect(on_b.locator("#status")).to_have_text("paused")

            os.kill(daphne_pid(c), signal.SIGKILL)
            # B's page, not reloaded: another process noticed the lease run out.
            await expect(on_b.locator("#status")).to_have_text("failed", timeout=15_000)
            await expect(on_b.locator("#status-reason")).to_contain_text("lost")
            await save(on_b, "shared-backends-lost-process.png")
        row = psql(
            database_url, f"select status, status_reason from dashboard_run where id = {run_id}"
        )
        assert row.startswith("failed|lost")
        kept = psql(database_url, f"select count(*) from dashboard_step where run_id = {run_id}")
        assert kept == "1"  # its navigate step, kept
        # A's run goes on: A is alive and renews its lease.
        assert psql(database_url, f"select status from dashboard_run where id = {a_run}") == (
            "paused"
        )
        await on_a.locator("#reply-text").fill("click Delete #3")
        await on_a.get_by_role("button", name="Send", exact=True).click()
        await expect(on_a.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    finally:
        await context.close()
