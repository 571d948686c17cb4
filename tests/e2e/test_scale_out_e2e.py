"""The dashboard scaled out as docs/deploying.md shows it (two web processes that drive
nothing, ``runworker`` processes, one PostgreSQL, one Redis) through what its operator
meets: Redis restarted under two live runs — both finish as they would have, and their
open pages reconnect and catch up on every event, once and in order; a worker killed
after it claimed a run but before the run started — the run goes back to the queue and
runs once on another; and which worker holds a run, told by the API, the run's page and
the workers' logs."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from tests.daphne import api_token, daphne, log_tail, migrated_postgres, new_run, runworker
from tests.daphne import log_in as http_log_in
from tests.e2e.ui import PASSWORD, SOCKET_SPY, UI_MS, USERNAME, log_in, save, start_run
from tests.fakellm import Reply, ScriptedLLMServer
from tests.servers import RedisServer, psql, restartable_redis, shared_settings
from tests.tasks import FORM_TASK
from tests.waiting import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.multiprocess]

USER = (USERNAME, PASSWORD)
# Bounds a hang only: each wait ends as soon as its condition holds.
WAIT_S = 120


@dataclass
class Site:
    a: str  # the two web processes
    b: str
    database_url: str
    redis: RedisServer
    settings: dict[str, str]  # what every process of the site is started with

    def sql(self, query: str) -> str:
        return psql(self.database_url, query)

    def status(self, run_id: int) -> str:
        return self.sql(f"select status from dashboard_run where id = {run_id}")

    def holder(self, run_id: int) -> str:
        return self.sql(f"select holder from dashboard_run where id = {run_id}")

    def events(self, run_id: int) -> list[str]:
        return self.sql(
            f"select type from dashboard_runevent where run_id = {run_id} order by seq"
        ).split()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, llm: ScriptedLLMServer) -> Iterator[Site]:
    with migrated_postgres() as database_url, restartable_redis() as redis:
        settings = shared_settings(
            database_url, redis.url, tmp_path_factory.mktemp("media"),
            EMBEDDED_WORKER="0", WORKER_RUNS="1",  # two runs on two workers: one each
            LEASE_S="10",  # a worker starved a few seconds (a busy machine) is not lost
            LLM_BASE_URL=llm.base_url, LLM_MODEL="test-model",
        )  # fmt: skip
        with (
            daphne(tmp_path_factory.mktemp("web-a"), USER, settings) as (a, _),
            daphne(tmp_path_factory.mktemp("web-b"), USER, settings, setup=False) as (b, _),
        ):
            yield Site(a, b, database_url, redis, settings)


async def until(what: str, done: Callable[[], bool], logs: list[Path]) -> None:
    """Until ``done()``; past WAIT_S the test fails with ``what`` and the workers' logs.
    Polled: the conditions are other processes' (a table, a log)."""
    await eventually(
        done,
        WAIT_S,
        f"not within {WAIT_S} s: {what}",
        said=lambda: "the workers said:\n" + "\n".join(log_tail(log) for log in logs),
        every_s=0.1,
    )


def wait_until(what: str, done: Callable[[], bool], logs: list[Path]) -> None:
    """:func:`until`, for a test without an event loop."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        if time.monotonic() > deadline:
            said = "\n".join(log_tail(log) for log in logs)
            raise AssertionError(f"not within {WAIT_S} s: {what}; the workers said:\n{said}")
        time.sleep(0.1)


def tag(action: dict[str, object]) -> str:
    """An action as the model writes it."""
    return "<action>" + json.dumps(action) + "</action>"


async def worker_shown(page: Page) -> str:
    """The worker the run page names as holding its run."""
    shown = page.locator("#worker")
    await expect(shown).to_have_text(re.compile(r"^worker [\w.-]+\.worker\d+$"))
    return (await shown.text_content() or "").removeprefix("worker ")


async def drew_every_event(site: Site, page: Page, run_id: int) -> None:
    """Until the run page has drawn every stored event of the run, in order (an event
    after the one that ended the run may still be on its way when the status shows it)."""
    seqs: dict[str, list[int]] = {}

    async def caught_up() -> bool:
        query = f"select seq from dashboard_runevent where run_id = {run_id} order by seq"
        stored = site.sql(query)
        seqs["stored"] = [int(seq) for seq in stored.split()]
        seqs["drawn"] = await handled_seqs(page)
        return seqs["drawn"] == seqs["stored"]

    await eventually(caught_up, what="the page drew every stored event", said=lambda: str(seqs))


async def handled_seqs(page: Page) -> list[int]:
    """The stored events the run page drew, in the order it drew them: those it rendered
    from the page's HTML, then each one its sockets brought that it had not seen (the
    page drops what it has seen by seq).  One it would drop unseen — older than the last
    it drew — is a lost event: this fails."""
    initial = json.loads(await page.locator("#initial-events").text_content() or "[]")
    heard = await page.evaluate("() => window.__socketEvents.filter((e) => e.seq)")
    seen = [event["seq"] for event in initial]
    for event in heard:
        if event["seq"] > (seen[-1] if seen else 0):
            seen.append(event["seq"])
        else:
            assert event["seq"] in seen, f"event {event['seq']} came after {seen[-1]}: lost"
    return seen


async def test_a_redis_restart_under_two_live_runs_ends_neither_and_their_pages_catch_up(
    ui_browser: Browser,
    site: Site,
    llm: ScriptedLLMServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    answered, finished = threading.Event(), threading.Event()
    look = tag({"action": "navigate", "url": f"{site.a}/demo/form.html"})
    done = tag({"action": "done", "summary": "looked at the form"})
    llm.script(Reply(text=look, gate=answered), Reply(text=look, gate=answered),
               Reply(text=done, gate=finished), Reply(text=done, gate=finished))  # fmt: skip
    asked = len(llm.requests)
    context = await ui_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(UI_MS)
    await context.add_init_script(SOCKET_SPY)
    workers = [tmp_path_factory.mktemp(f"worker-{n}") for n in (1, 2)]
    logs = [folder / "worker.log" for folder in workers]
    try:
        with runworker(workers[0], site.settings), runworker(workers[1], site.settings):
            pages: list[tuple[Page, int]] = []
            for base in (site.a, site.b):  # a page on each web process
                page = await context.new_page()
                if not pages:  # (logged in on one is logged in on both: one database)
                    await log_in(page, base)
                await page.goto(f"{base}/")
                run_id = await start_run(page, f"{base}/demo/list.html", "Look", "openai")
                pages.append((page, run_id))
            ids = [run_id for _, run_id in pages]
            # Both at work: each worker's run waits for the model.
            await until("both runs asked the model", lambda: len(llm.requests) >= asked + 2,
                        logs)  # fmt: skip
            for page, _ in pages:
                await expect(page.locator("#status")).to_have_text("running")
                await expect(page.locator("body")).to_have_attribute("data-live", "1")
            # Each page names the worker that took its run (told live), one each.
            names = [await worker_shown(page) for page, _ in pages]
            assert len(set(names)) == 2, names

            site.redis.stop()
            answered.set()  # the runs act, record steps, emit events: none can be relayed
            ended = "('succeeded', 'failed', 'stopped')"

            def went_on_or_ended() -> bool:
                if len(llm.requests) >= asked + 4:
                    return True
                listed = ",".join(map(str, ids))
                return site.sql(
                    f"select count(*) from dashboard_run where id in ({listed}) "
                    f"and status in {ended}"
                ) != "0"  # fmt: skip

            await until("both runs asked the model again", went_on_or_ended, logs)
            logged = "\n".join(log_tail(log) for log in logs)
            assert [site.status(run_id) for run_id in ids] == ["running", "running"], logged
            site.redis.start()
            finished.set()

            for page, run_id in pages:
                await expect(page.locator("#status")).to_have_text("succeeded", timeout=60_000)
                await expect(page.locator("#conn")).to_have_text("")
                await drew_every_event(site, page, run_id)
                sockets = await page.evaluate("() => window.__sockets.map((s) => s.url)")
                assert len(sockets) >= 2 and not sockets[-1].endswith("after=0"), sockets
                closes = await page.evaluate("() => window.__socketCloses")
                assert 1011 not in closes and 4503 in closes, closes  # said, not an error
                steps = page.locator("#steps > li.step .step-action")
                await expect(steps).to_have_text(["navigate", "navigate"])
                await expect(page.locator("#chat .msg.succeeded")).to_have_count(1)
                assert site.holder(run_id).endswith("!" + await worker_shown(page))
            await save(pages[0][0], "scale-out-redis-restarted.png")
            for run_id in ids:
                starts = site.sql(
                    "select count(*) from dashboard_runevent "
                    f"where run_id = {run_id} and type = 'run.started'"
                )
                assert starts == "1"
    finally:
        answered.set()
        finished.set()
        if not site.redis.running:
            site.redis.start()
        await context.close()


def worker_named(pid: int) -> str:
    """The name a worker process goes by (its host, its pid): the runs' holder says it."""
    return rf"^[\w.-]+\.worker{pid}$"


def test_a_run_claimed_by_a_worker_killed_before_it_started_goes_back_to_the_queue(
    site: Site, tmp_path_factory: pytest.TempPathFactory
) -> None:
    first, second = tmp_path_factory.mktemp("claims"), tmp_path_factory.mktemp("runs")
    logs = [first / "worker.log", second / "worker.log"]
    # The first worker's browser is a Chrome that never answers (a port that takes
    # connections and says nothing): a run it claims stays pending, opening its tab.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        hung = {**site.settings, "TABWRIGHT_CDP_URL": f"http://127.0.0.1:{silent.getsockname()[1]}"}
        with runworker(first, hung) as (claims, _), closing(http_log_in(site.a, USER)) as client:
            run_id = new_run(client, FORM_TASK, f"{site.a}/demo/form.html")
            claimed = f".worker{claims.pid}"
            wait_until("the first worker claimed the run",
                       lambda: site.holder(run_id).endswith(claimed), logs)  # fmt: skip
            # ... and said so (its log line comes a moment after the claim is stored).
            held = rf"run {run_id}: held by worker [\w.-]+\.worker{claims.pid}\n"
            wait_until("the first worker said it holds the run",
                       lambda: re.search(held, logs[0].read_text()) is not None, logs)  # fmt: skip
            assert site.status(run_id) == "pending"
            os.kill(claims.pid, signal.SIGKILL)
            claims.wait()
    # Another worker comes up: the run it finds is queued again (nothing of it ran), not
    # lost, and it runs there once.
    with (
        runworker(second, site.settings) as (runs, log),
        closing(http_log_in(site.a, USER)) as client,
    ):
        final = ("succeeded", "failed", "stopped")
        wait_until("the run ended", lambda: site.status(run_id) in final, logs)
        assert site.status(run_id) == "succeeded", site.events(run_id)
        events = site.events(run_id)
        assert events.count("run.requeued") == 1 and events.count("run.started") == 1, events
        assert events.index("run.requeued") < events.index("run.started")
        assert events.count("run.finished") == 1, events  # succeeded: never failed (lost)

        # Which worker held it, said alike by the API, the run's page and the worker's log
        # (its lease is let go as the run's session closes, a moment after its status).
        said_ended = rf"run {run_id}: ended succeeded on worker [\w.-]+\.worker{runs.pid}\n"
        wait_until("the worker said the run ended",
                   lambda: re.search(said_ended, log.read_text()) is not None, logs)  # fmt: skip
        token = api_token(client, "operations")
        bearer = {"Authorization": f"Bearer {token}"}
        got = httpx.get(f"{site.b}/api/runs/{run_id}", headers=bearer)
        name = got.json()["worker"]
        assert re.match(worker_named(runs.pid), name), got.json()
        assert site.holder(run_id).endswith(f"!{name}")
        assert got.json()["held_until"] is None  # ended: nobody vouches for it any more
        page = client.get(f"/runs/{run_id}/").text
        assert f'data-testid="worker">worker {name}<' in page
        said = log.read_text()
        assert f"run {run_id}: ended succeeded on worker {name}" in said
        assert said.count(f"run {run_id}: held by worker {name}") == 1, said
