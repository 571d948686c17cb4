"""Dashboard processes on one real PostgreSQL and one real Redis (Debian's servers on loopback
ports of their own). A web process without a worker (A) and one with a worker (B): a run
started through A waits queued, is claimed by B's worker, and is watched live (the picture
too), acted on (over its socket and over HTTP, a hung-up request's script stopped), taken
over on the live view, answered, paused at work and resumed from A's page — each crossing
the Redis layer to the worker that holds it. A second worker (C): each worker takes one run
(capacity 1); ``kill -9`` of the one holding a run marks that run lost within the lease, the
other's run goes on, and new runs go to the survivor. A web process (D) stopped and started
again mid-run: the run goes on, and D's page, reconnected, misses nothing."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, BrowserContext, Page, expect
from websockets.asyncio.client import connect

from tests.daphne import ROOT, START_TIMEOUT_S, daphne, migrated_postgres
from tests.e2e.ui import (
    ACT_JS,
    LIVE_MS,
    PASSWORD,
    SOCKET_SPY,
    UI_MS,
    USERNAME,
    click_picture,
    live_picture,
    log_in,
    save,
    start_run,
)
from tests.fakellm import Reply, ScriptedLLMServer
from tests.net import free_port
from tests.servers import psql, redis_server, shared_settings
from tests.tasks import AMBIGUOUS_TASK
from tests.waiting import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.multiprocess]


@pytest.fixture(scope="module")
def backends(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """The database, the layer and the media folder every process shares."""
    with migrated_postgres() as database_url, redis_server() as redis_url:
        yield database_url, redis_url, tmp_path_factory.mktemp("media")


@pytest.fixture(scope="module")
def two_servers(
    tmp_path_factory: pytest.TempPathFactory,
    backends: tuple[str, str, Path],
    llm: ScriptedLLMServer,
) -> Iterator[tuple[str, str, str]]:
    """Two daphne processes of one dashboard (the same database, layer and secret key): A
    serves pages only, B serves pages and runs them."""
    # Two runs, two workers: one each.  Scripts in the page, for the acts that run one.
    settings = shared_settings(*backends, WORKER_RUNS="1", ALLOW_EVALUATE="1",
                               LLM_BASE_URL=llm.base_url, LLM_MODEL="test-model")  # fmt: skip
    user = (USERNAME, PASSWORD)
    web_only = {**settings, "TABWRIGHT_EMBEDDED_WORKER": "0"}
    with (
        daphne(tmp_path_factory.mktemp("web-a"), user, web_only) as (a, _),
        daphne(tmp_path_factory.mktemp("web-b"), user, settings, setup=False) as (b, _),
    ):
        yield a, b, backends[0]


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
    context.set_default_timeout(UI_MS)
    await context.add_init_script(SOCKET_SPY)
    try:
        # The session lives in the shared database: logged in on A is logged in on B.
        on_a = await context.new_page()
        await log_in(on_a, a)
        run_id = await start_paused_run(on_a, a)
        assert holder_pid(database_url, run_id) == daphne_pid(b)  # A has no worker

        # The live view on A: no page watches on B, so B's worker streams because A's
        # page told it that it watches; the frames come over Redis.
        await live_picture(on_a)
        await expect(on_a.locator("#live-url")).to_have_text(f"{a}/demo/list.html")

        # An act from A's socket: B's worker reads its page and the answer comes back.
        cookie = next(c["value"] for c in await context.cookies() if c["name"] == "sessionid")
        answer = await act_over_socket(a, run_id, cookie, {"action": "read_page", "args": {}})
        assert answer["ok"] is True and answer["result"].startswith("Page: 'Orders'"), answer

        # An HTTP act through A that hangs up: its script on B's tab is stopped (had it
        # spun on, the next act would wait out its 60 s budget; it answers at once).
        spin = {"action": "evaluate", "args": {"expression": "while (true) {}"},
                "timeout_ms": 60_000}  # fmt: skip
        hung_up = await on_a.evaluate(ACT_JS, [run_id, spin, 500])
        assert hung_up.get("aborted"), hung_up
        where = {"action": "evaluate", "timeout_ms": 5_000, "args": {"expression": DELETE_3_BOX}}
        answer = await on_a.evaluate(ACT_JS, [run_id, where, 0])
        assert answer["status"] == 200 and answer["body"]["ok"], answer
        target = json.loads(answer["body"]["result"])
        # A NUL character from the page (a console line, a title, an answer): each write of
        # it failed on PostgreSQL and ended the run; it is stored as U+FFFD, the run goes on.
        nul = {"action": "evaluate", "timeout_ms": 5_000, "args": {"expression": NUL_JS}}
        answer = await on_a.evaluate(ACT_JS, [run_id, nul, 0])
        assert answer["status"] == 200 and answer["body"]["ok"], answer

        # The person takes over on A's live view: the click goes to B's worker.
        await click_picture(on_a, target["x"], target["y"], target["viewport"])
        await on_a.wait_for_function(
            "() => window.__socketEvents.some((e) => e.type === 'input.result' && e.ok)"
        )

        # B never ran a page of it: what it shows comes from PostgreSQL, then live.
        on_b = await context.new_page()
        await on_b.goto(f"{b}/runs/{run_id}/")
        await expect(on_b.locator("#status")).to_have_text("paused")
        await expect(on_b.locator("body")).to_have_attribute("data-live", "1")
        # (The person's click becomes a step when the pause ends.)
        await expect(on_b.locator("#steps > li.step")).to_have_count(1)

        # Answered on A: the reply goes over Redis to B's worker, which holds the run.
        # The click did its part in B's tab (read from A's socket).
        answer = await act_over_socket(a, run_id, cookie, {"action": "read_page", "args": {}})
        assert answer["ok"] is True and "Order #1003 deleted" in answer["result"], answer
        await on_a.locator("#reply-text").fill("skip")
        await on_a.get_by_role("button", name="Send", exact=True).click()
        try:
            await expect(on_a.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
        except AssertionError as exc:  # what the run said, where it did not succeed
            said = await on_a.locator("#chat").inner_text()
            raise AssertionError(f"{exc}\n#chat: {said}") from None
        # The page on B was not reloaded: the events reached it through the Redis layer.
        await expect(on_b.locator("#status")).to_have_text("succeeded")
        steps = on_b.locator("#steps > li.step")
        await expect(steps.locator(".step-action")).to_have_text(["navigate", "click", "wait_for"])
        await expect(steps.nth(1).locator(".step-by")).to_have_text("by the person")
        await expect(on_b.locator("#chat")).to_contain_text("Order #1003 deleted")
        await expect(on_b.locator("#problem-list")).to_contain_text("a NUL \ufffd here")
        await save(on_b, "shared-backends-other-process.png")

        assert psql(database_url, f"select status from dashboard_run where id = {run_id}") == (
            "succeeded"
        )
        steps = psql(database_url, f"select count(*) from dashboard_step where run_id = {run_id}")
        assert steps == "3"
    finally:
        await stop_live_runs(context, a, database_url)
        await context.close()


NUL_JS = "document.title += '\\u0000'; console.error('a NUL \\u0000 here'); 'a\\u0000b'"

# The centre of order #1003's Delete button in the run's tab, and the tab's width.
DELETE_3_BOX = """(() => {
  const box = document.querySelector('[data-testid="order-1003"] button.delete')
    .getBoundingClientRect();
  return {x: box.x + box.width / 2, y: box.y + box.height / 2, viewport: innerWidth};
})()"""


async def test_a_page_on_one_process_pauses_and_resumes_a_run_working_on_the_other(
    ui_browser: Browser, two_servers: tuple[str, str, str], llm: ScriptedLLMServer
) -> None:
    a, b, database_url = two_servers
    # The model thinks over its first answer until B's worker heard the Pause.
    heard = threading.Event()
    llm.script(
        Reply(text=tag({"action": "navigate", "url": f"{a}/demo/form.html"}), gate=heard),
        Reply(text=tag({"action": "done", "summary": "looked at the form"})),
    )
    context = await ui_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(UI_MS)
    try:
        on_a = await context.new_page()
        await log_in(on_a, a)
        await on_a.goto(f"{a}/")
        run_id = await start_run(on_a, f"{a}/demo/list.html", "Look at the form", "openai")
        assert holder_pid(database_url, run_id) == daphne_pid(b)
        asked = len(llm.requests)
        async with asyncio.timeout(LIVE_MS / 1000):  # B's worker asked the model: at work
            while True:
                if len(llm.requests) > asked:
                    break
                await asyncio.sleep(0.05)
        await expect(on_a.locator("#status")).to_have_text("running")
        await on_a.locator("[data-command=pause]").click()  # over Redis to B's worker
        await expect(on_a.locator("#status-reason")).to_have_text("pausing at the end of this step")
        await save(on_a, "shared-backends-pausing.png")
        heard.set()
        # At the end of the round under way: its action done, the model not asked again.
        await expect(on_a.locator("#status")).to_have_text("paused", timeout=LIVE_MS)
        await expect(on_a.locator("#status-reason")).to_contain_text("paused by the person")
        assert llm.pending == 1
        await on_a.locator("[data-command=resume]").click()
        await expect(on_a.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
        steps = on_a.locator("#steps > li.step .step-action")
        await expect(steps).to_have_text(["navigate", "navigate"])
        assert llm.pending == 0
    finally:
        heard.set()  # a failure above leaves no answer held for the module's next test
        await stop_live_runs(context, a, database_url)
        await context.close()


LIVE = "('queued', 'pending', 'running', 'paused')"


async def stop_live_runs(context: BrowserContext, base_url: str, database_url: str) -> None:
    """Stop what a test left live (a failure midway leaves its run paused): each worker
    takes one run, so a run left live keeps the module's next tests' runs queued."""
    live = psql(database_url, f"select id from dashboard_run where status in {LIVE}").split()
    session = next((c["value"] for c in await context.cookies() if c["name"] == "sessionid"), "")
    if not live or not session:
        return
    for run_id in live:
        async with run_socket(base_url, int(run_id), session) as socket:
            await socket.send(json.dumps({"command": "stop"}))
            still_live = f"select id from dashboard_run where id = {run_id} and status in {LIVE}"
            await eventually(
                lambda query=still_live: not psql(database_url, query),
                what=f"run {run_id} stopped after the test",
            )


def run_socket(base_url: str, run_id: int, session: str) -> connect:
    """The run's socket on the process at ``base_url``, opened with the ``session``
    cookie as the run page opens it."""
    uri = base_url.replace("http://", "ws://") + f"/ws/runs/{run_id}/"
    cookie = {"Cookie": f"sessionid={session}"}
    return connect(uri, origin=base_url, additional_headers=cookie)  # type: ignore[arg-type]


def tag(action: dict[str, object]) -> str:
    """An action as the model writes it."""
    return "<action>" + json.dumps(action) + "</action>"


async def act_over_socket(
    base_url: str, run_id: int, session: str, act: dict[str, Any]
) -> dict[str, Any]:
    """One act on the run's socket of the process at ``base_url``, as the act panel sends
    it; its act.result."""
    async with run_socket(base_url, run_id, session) as socket:
        await socket.send(json.dumps({"command": "act", "id": "a1", "timeout_ms": 10_000, **act}))
        async with asyncio.timeout(20):
            while True:
                message = json.loads(await socket.recv())
                if message["type"] == "act.result" and message["id"] == "a1":
                    return message


def holder_pid(database_url: str, run_id: int, timeout_s: float = 60) -> int:
    """The pid of the worker that claimed the run (its channel is named with it)."""
    deadline = time.monotonic() + timeout_s
    while not (
        holder := psql(database_url, f"select holder from dashboard_run where id = {run_id}")
    ):
        assert time.monotonic() < deadline, f"run {run_id} was never claimed"
        time.sleep(0.1)
    found = re.search(r"![\w.-]+\.worker(\d+)$", holder)
    assert found, holder
    return int(found.group(1))


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


async def test_a_killed_worker_s_run_is_lost_the_other_s_goes_on_and_new_runs_go_to_it(
    ui_browser: Browser,
    two_servers: tuple[str, str, str],
    backends: tuple[str, str, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    a, b, database_url = two_servers
    settings = shared_settings(*backends, WORKER_RUNS="1", ALLOW_EVALUATE="1")
    context = await ui_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(UI_MS)
    user = (USERNAME, PASSWORD)
    try:
        with daphne(tmp_path_factory.mktemp("web-c"), user, settings, setup=False) as (c, _):
            on_a = await context.new_page()
            await log_in(on_a, a)
            first = await start_paused_run(on_a, a)
            on_other = await context.new_page()
            await on_other.goto(f"{a}/")
            second = await start_paused_run(on_other, a)
            # Capacity 1 each: the two runs are on the two workers.
            holders = {holder_pid(database_url, first), holder_pid(database_url, second)}
            assert holders == {daphne_pid(b), daphne_pid(c)}
            lost, kept = (first, second) if holder_pid(database_url, first) == daphne_pid(c) \
                else (second, first)  # fmt: skip
            on_lost = on_a if lost == first else on_other
            on_kept = on_other if lost == first else on_a

            os.kill(daphne_pid(c), signal.SIGKILL)
            # A's page, not reloaded: another process noticed the lease run out.
            await expect(on_lost.locator("#status")).to_have_text("failed", timeout=60_000)
            await expect(on_lost.locator("#status-reason")).to_contain_text("lost")
            await save(on_lost, "shared-backends-lost-worker.png")
        row = psql(
            database_url, f"select status, status_reason from dashboard_run where id = {lost}"
        )
        assert row.startswith("failed|lost")
        steps = psql(database_url, f"select count(*) from dashboard_step where run_id = {lost}")
        assert steps == "1"  # its navigate step, kept
        # The survivor's run goes on: B is alive and renews its lease.
        assert psql(database_url, f"select status from dashboard_run where id = {kept}") == (
            "paused"
        )
        await on_kept.locator("#reply-text").fill("click Delete #3")
        await on_kept.get_by_role("button", name="Send", exact=True).click()
        await expect(on_kept.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
        # A new run goes to the survivor.
        after = await start_paused_run(on_kept, a)
        assert holder_pid(database_url, after) == daphne_pid(b)
        await on_kept.locator("[data-command=stop]").click()
        await expect(on_kept.locator("#status")).to_have_text("stopped", timeout=LIVE_MS)
    finally:
        await stop_live_runs(context, a, database_url)
        await context.close()


async def test_a_web_process_restarted_mid_run_touches_no_run_and_its_page_misses_nothing(
    ui_browser: Browser,
    two_servers: tuple[str, str, str],
    backends: tuple[str, str, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    _, b, database_url = two_servers
    web_only = shared_settings(*backends, EMBEDDED_WORKER="0")
    var, port, user = tmp_path_factory.mktemp("web-d"), free_port(), (USERNAME, PASSWORD)
    context = await ui_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(UI_MS)
    await context.add_init_script(SOCKET_SPY)
    try:
        on_d = await context.new_page()
        with daphne(var, user, web_only, setup=False, port=port) as (d, _):
            await log_in(on_d, d)
            run_id = await start_paused_run(on_d, d)
            assert holder_pid(database_url, run_id) == daphne_pid(b)
            await expect(on_d.locator("#steps > li.step")).to_have_count(1)
        # D is down and its page tries in vain to reconnect; the run, held by B's worker,
        # goes on: answered from a page on B, it finishes meanwhile.
        await expect(on_d.locator("#conn")).to_have_text("reconnecting…")
        on_b = await context.new_page()
        await on_b.goto(f"{b}/runs/{run_id}/")
        await on_b.locator("#reply-text").fill("click Delete #3")
        await on_b.get_by_role("button", name="Send", exact=True).click()
        await expect(on_b.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
        assert await on_d.locator("#status").text_content() == "paused"  # it heard nothing

        # D again, where the page looks for it: it reconnects and catches up, once.
        with daphne(var, user, web_only, setup=False, port=port):
            await expect(on_d.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
            await expect(on_d.locator("#conn")).to_have_text("")
            steps = on_d.locator("#steps > li.step .step-action")
            await expect(steps).to_have_text(["navigate", "click", "wait_for"])
            await expect(on_d.locator("#chat .msg.succeeded")).to_have_count(1)
            await expect(on_d.locator("#chat")).to_contain_text("click Delete #3")
            urls = await on_d.evaluate("() => window.__sockets.map((s) => s.url)")
            assert re.search(r"[?&]after=[1-9]\d*(&|$)", urls[-1]), urls  # only what it missed
            await save(on_d, "shared-backends-web-restarted.png")
        assert psql(database_url, f"select status from dashboard_run where id = {run_id}") == (
            "succeeded"
        )
    finally:
        await stop_live_runs(context, b, database_url)
        await context.close()


# A model server's counts of a finished run's rounds, added as a run's sink adds them.
TOKEN_TOTALS = """
from django.contrib.auth import get_user_model
from dashboard.models import Run
from dashboard.runs import services
owner = get_user_model().objects.get(username=%r)
run = Run.objects.create(owner=owner, task="counted", status=Run.Status.SUCCEEDED)
for _ in range(2):
    services.run_usage_add(run_id=run.pk, usage={"prompt_tokens": 3_000_000_000,
                                                 "completion_tokens": 10**12})
print(run.pk)
"""


def test_a_model_s_token_counts_past_32_bits_add_up_on_postgresql(
    two_servers: tuple[str, str, str], tmp_path: Path
) -> None:
    """A round's count is kept up to 10**12 (a server may report anything); the run's
    totals were PostgreSQL integers (32 bits), so a count past 2**31 failed the round's
    write there, which SQLite's 64-bit integers never showed."""
    database_url = two_servers[2]
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", TOKEN_TOTALS % USERNAME],
        cwd=ROOT, capture_output=True, text=True, timeout=START_TIMEOUT_S,
        env={**os.environ, "DATABASE_URL": database_url, "TABWRIGHT_VAR_DIR": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    run_id = int(done.stdout.strip().splitlines()[-1])
    totals = psql(database_url, f"select prompt_tokens, completion_tokens from dashboard_run "
                                f"where id = {run_id}")  # fmt: skip
    assert totals == f"{6_000_000_000}|{2 * 10**12}"
