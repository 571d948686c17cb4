"""Shared test fixtures: real Chromium, real loopback servers, a real database."""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest
import pytest_asyncio
from mcp.client.stdio import StdioServerParameters
from playwright.async_api import async_playwright

from automation import BrowserConfig, BrowserSession, Tab, UrlPolicy
from automation.agent.outputcheck import check_output_isolated
from automation.browser.config import QUIET_CHROMIUM_ARGS, default_chromium
from automation.budget import Budget
from automation.errors import BudgetExceeded
from automation.recording.recorder import Recorder
from automation.tools.shell import shell_run
from tests import fakellm, rewritten, tiers
from tests.fakellm import ScriptedLLMServer, llm_server  # noqa: F401  (a fixture)
from tests.net import free_port
from tests.refs import fresh_snapshot

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CHROMIUM = os.environ.get("TABWRIGHT_CHROMIUM_PATH") or default_chromium()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/hang"):  # a page that starts and never finishes loading
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<!doctype html><title>Hanging</title><p>Still loading")
            self.wfile.flush()
            time.sleep(30)
            return
        if self.path.startswith("/redirect?to="):  # a server redirect to anywhere
            self.send_response(302)
            self.send_header("Location", unquote(self.path.split("=", 1)[1]))
            self.end_headers()
            return
        super().do_GET()


# A hung test ends the suite (pytest-timeout, ``timeout`` in pyproject.toml, prints every
# thread's stack); shortly before, the stacks of the session loop's asyncio tasks are
# printed too, since a hang in a coroutine shows in no thread's stack.
_session_loop: list[asyncio.AbstractEventLoop] = []


@pytest_asyncio.fixture(scope="session", loop_scope="session", autouse=True)
async def _remember_session_loop() -> None:
    _session_loop[:] = [asyncio.get_running_loop()]


def _print_tasks_soon() -> None:
    if _session_loop:  # the tasks are read in the loop's own thread
        _session_loop[0].call_soon_threadsafe(_print_tasks)


def _print_tasks() -> None:
    print("\n--- asyncio tasks of the hung test ---", file=sys.stderr)
    for task in asyncio.all_tasks():
        print(f"{task!r}", file=sys.stderr)
        task.print_stack(limit=12, file=sys.stderr)
    sys.stderr.flush()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier",
        choices=("all", "fast", "slow"),
        default="all",
        help="fast: only the tests that reach no browser and no server (tests/tiers.py; "
        "in any run, each of them is guarded against starting one); slow: only the others",
    )


def pytest_configure(config: pytest.Config) -> None:
    # Compiled files are written and read as make test writes them (the Makefile): a run of
    # pytest where PYTHONDONTWRITEBYTECODE is set compiled the project again in each of its
    # processes (each pytest-xdist process: ~8 s of CPU collecting) and in each daphne,
    # worker and manage.py it starts.
    if not hasattr(config, "workerinput") and os.environ.pop("PYTHONDONTWRITEBYTECODE", ""):
        sys.dont_write_bytecode = False
    # The process that deals the tests out to pytest-xdist's processes (make test)
    # rewrites the test modules' asserts once, before they start (tests/rewritten.py).
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        rewritten.rewrite_once(config, Path(__file__).parent)
    # A folder for what the run's processes share (tests/daphne.py: a migrated
    # PostgreSQL cluster), named to the processes it starts; removed when the run ends.
    if not hasattr(config, "workerinput") and "TABWRIGHT_TESTS_SHARED" not in os.environ:
        shared = tempfile.mkdtemp(prefix="tabwright-tests-")
        os.environ["TABWRIGHT_TESTS_SHARED"] = shared
        config.add_cleanup(functools.partial(shutil.rmtree, shared, ignore_errors=True))


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The test database is a SQLite file of this process's own, as the dashboard's is,
    not SQLite's in-memory database shared between threads: there a thread reading a table
    made another's write to it fail at once ("database table is locked": a run crashed
    while its test looked at it), where a file makes the writer wait, and with the file's
    write-ahead log (dashboard.apps) a reader never holds a writer up."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        name = str(tmp_path_factory.mktemp("database") / "test.sqlite3")
        database["TEST"] = {**database.get("TEST", {}), "NAME": name}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test is marked with the tiers it reaches (tests/tiers.py); --tier selects."""
    tier = config.getoption("--tier")
    selected, deselected = [], []
    for item in items:
        found = tiers.tiers_of(item)
        for name in found:
            item.add_marker(name)
        fast = not found
        if tier == "all" or (tier == "fast") == fast:
            selected.append(item)
        else:
            deselected.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected
    # Dealt out to several processes (make test's slow tier: pytest-xdist's loadfile), the
    # longest files come first, the end-to-end files, then those marked long, then the rest
    # (and in a run of every tier, the fast tier last): the many short files fill the other
    # processes around the long ones, and no long one runs alone at the end.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(
            key=lambda item: (
                not item.nodeid.startswith("tests/e2e/"),
                item.get_closest_marker("long") is None,
                _in_fast_tier(item),
            )
        )


def _in_fast_tier(item: pytest.Item) -> bool:
    return not any(item.get_closest_marker(tier) for tier in tiers.TIERS)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    timeout = float(item.config.getini("timeout") or 0)
    timer = None
    if timeout > 30:
        timer = threading.Timer(timeout - 15, _print_tasks_soon)
        timer.daemon = True
        timer.start()
    if _in_fast_tier(item):  # in any run: a fast-tier test starts no browser and no server
        with tiers.guard_fast_tier(item.nodeid):
            yield
    else:
        yield
    if timer is not None:
        timer.cancel()
    for llm in fakellm.running():  # a module's scripted model outlives its tests
        llm.end_test(failed=item.stash.get(_failed, False))


_failed = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Iterator[None]:
    report = yield
    if report.failed:
        item.stash[_failed] = True
    return report


@pytest.fixture(scope="session")
def fixture_url() -> Iterator[str]:
    """Base URL of fixtures/ served on 127.0.0.1, e.g. f"{fixture_url}/demo/form.html"."""
    handler = functools.partial(_QuietHandler, directory=str(FIXTURES))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def browser_config(**overrides: object) -> BrowserConfig:
    """The engine as the tests run it; a test changes only what it is about.  A call given
    no budget gets the product's default (a test expects it to end well, and on a busy
    machine one on a big page can take seconds)."""
    settings: dict[str, object] = {
        "executable_path": CHROMIUM,
        "url_policy": UrlPolicy(block_private=False),  # the test pages are on 127.0.0.1
        "upload_dir": str(FIXTURES / "uploads"),
    }
    return BrowserConfig(**{**settings, **overrides})  # type: ignore[arg-type]


@contextmanager
def chromium_cdp() -> Iterator[str]:
    """A Chromium started by hand with a debugging port, as an operator would run one;
    yields its http:// debugging address."""
    port = free_port()
    profile = tempfile.mkdtemp(prefix="tabwright-cdp-")
    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", *QUIET_CHROMIUM_ARGS,
         f"--remote-debugging-port={port}", f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _until_listening(proc, url)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


def _until_listening(proc: subprocess.Popen[bytes], url: str) -> None:
    """Until the Chromium ``proc`` answers on its debugging address ``url`` (it opens
    the port a moment after it starts; longer on a busy machine)."""
    deadline = time.monotonic() + 60  # bounds a hang only
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy of env
    while True:
        assert proc.poll() is None, f"the Chromium for {url} exited: {proc.returncode}"
        try:
            with direct.open(f"{url}/json/version", timeout=5):
                return
        except OSError:
            assert time.monotonic() < deadline, f"no Chromium answered at {url}"
            time.sleep(0.05)


tiers.BROWSER.extend([BrowserSession, browser_config, chromium_cdp, async_playwright])
# The engine's shell tool, an MCP server over stdio and an output's check start processes.
tiers.SERVERS.extend([shell_run, StdioServerParameters, check_output_isolated])
tiers.FAST.append(ScriptedLLMServer)


@pytest.fixture
def chromium_with_cdp() -> Iterator[str]:
    with chromium_cdp() as url:
        yield url


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[BrowserSession]:
    session = BrowserSession(browser_config())
    await session.start()
    yield session
    await session.close()


@pytest_asyncio.fixture(loop_scope="session")
async def tab(browser: BrowserSession) -> AsyncIterator[Tab]:
    tab = await browser.new_tab()
    yield tab
    await tab.close()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def module_tab(browser: BrowserSession) -> AsyncIterator[Tab]:
    """One tab for a module's many small cases that leave it as they found it (a refusal,
    a reading): a context of its own costs a case more than its work."""
    tab = await browser.new_tab()
    yield tab
    await tab.close()


@pytest_asyncio.fixture(loop_scope="session")
async def form_refs(browser: BrowserSession, fixture_url: str) -> dict[str, str]:
    """Refs of the sign-up form as a fresh tab numbers them (a run's tab is fresh too)."""
    snap = await fresh_snapshot(browser, f"{fixture_url}/demo/form.html")
    return {r.name: r.ref for r in snap.refs.values() if r.interactive and r.name}


@pytest.fixture
def recorder_cannot_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Recorder's start fails as one whose page never answered its install does."""

    async def cannot_start(self: Recorder, *, budget: Budget | None = None) -> None:
        raise BudgetExceeded("the start recording ran out of its 30000 ms budget")

    monkeypatch.setattr(Recorder, "start", cannot_start)
