"""Record a scenario from what a person does in a visible browser window.

    python manage.py scenario_record https://shop.example/login.html --name "Sign in"

Opens the page in a visible Chromium (with ``--cdp-url``, in a new window of a Chrome the
person started with ``--remote-debugging-port``) and records each click, fill, select,
check, key and navigation as a scenario step (see :mod:`automation.recording.recorder`),
printing each one as it comes.  The window is a fresh profile: the scenario carries its
own sign-in and replays the same way.  Recording ends when the person closes the tab or the
browser, presses Ctrl-C, or ``--timeout-ms`` passes.  The scenario is then stored for
``--owner`` (it appears on the dashboard's Scenarios page), or written to ``--output``.  A
value typed into a password field is kept as ``${SECRET:NAME}``, never as typed.

Exit status: 0 saved; 1 the browser could not run or nothing was recorded; 3 bad arguments
(a blocked URL, no display for a visible window, an unknown owner).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from automation import BrowserSession
from automation.browser.config import BrowserConfig
from automation.errors import ScenarioInvalid, TabwrightError, UrlBlocked
from automation.recording.rebase import first_folder
from automation.recording.recorder import Recorder
from automation.recording.scenario import Scenario as Document
from automation.recording.scenario import ScenarioStep
from dashboard.engineconf import browser_config
from dashboard.management.commands.scenario_import import owner_named
from dashboard.scenarios import services

MAX_RECORDING_MS = 24 * 3_600_000


class Command(BaseCommand):
    help = "Record what a person does in a browser window as a scenario."

    def add_arguments(self, parser: Any) -> None:
        add = parser.add_argument
        add("url", help="the page to start on")
        add("--name", required=True, help="the scenario's name")
        add("--owner", default="", help="username (default: the only admin)")
        add("--output", "-o", default="",
            help="write the scenario's JSON to this file instead of storing it")  # fmt: skip
        add("--cdp-url", default="",
            help="a Chrome run with --remote-debugging-port (http://host:port)")  # fmt: skip
        add("--timeout-ms", type=int, default=3_600_000, help="the longest recording")
        add("--allow-private", action="store_true",
            help="allow loopback and private addresses (a local test server)")  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        if not 0 < options["timeout_ms"] <= MAX_RECORDING_MS:
            message = f"--timeout-ms must be between 1 and {MAX_RECORDING_MS}"
            raise CommandError(message, returncode=3)
        name = options["name"].strip()
        if not name:
            raise CommandError("--name must not be empty", returncode=3)
        owner = None if options["output"] else owner_named(options["owner"])
        config = self._config(options)
        try:
            steps = asyncio.run(self._record(config, options["url"], options["timeout_ms"] / 1000))
        except UrlBlocked as exc:
            raise CommandError(str(exc), returncode=3) from None
        except TabwrightError as exc:
            raise CommandError(f"recording could not run: {exc}", returncode=1) from None
        if len(steps) <= 1 and all(step.action == "navigate" for step in steps):
            raise CommandError("nothing was recorded: no scenario saved", returncode=1)
        self._save(Document(name, tuple(steps), base_url=first_folder(steps)), owner, options)

    def _config(self, options: dict[str, Any]) -> BrowserConfig:
        config = browser_config()
        if options["cdp_url"]:
            config = dataclasses.replace(config, cdp_url=options["cdp_url"])
        if not config.cdp_url:
            if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
                raise CommandError(
                    "no display for a browser window (DISPLAY is not set): run this on a "
                    "desktop, or start Chrome there with --remote-debugging-port=9222 and "
                    "pass --cdp-url http://127.0.0.1:9222",
                    returncode=3,
                )
            config = dataclasses.replace(config, headless=False)
        if options["allow_private"]:
            policy = dataclasses.replace(config.url_policy, block_private=False)
            config = dataclasses.replace(config, url_policy=policy)
        return config

    async def _record(self, config: BrowserConfig, url: str, seconds: float) -> list[ScenarioStep]:
        ended = asyncio.Event()
        printer = _StepPrinter(self.stdout.write)
        async with BrowserSession(config) as browser:
            tab = await browser.new_tab()
            tab.page.on("close", lambda _page: ended.set())
            tab.context.on("close", lambda _context: ended.set())
            tab.context.on("page", lambda page: self.stderr.write(
                f"a new tab opened ({page.url}): recorded if the first opened it"))  # fmt: skip
            await tab.navigate(url)
            recorder = Recorder(tab, on_step=printer.notice)
            await recorder.start()
            if recorder.left_out:
                self.stderr.write(recorder.left_out)
            with _stop_on_signals(ended.set):
                self.stdout.write(
                    f"recording {tab.page.url}: close the tab or press Ctrl-C to finish"
                )
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(seconds):
                        await ended.wait()
                steps = await recorder.stop()
        printer.flush()
        return steps

    def _save(self, document: Document, owner: Any, options: dict[str, Any]) -> None:
        data = document.to_dict()
        try:
            document = Document.from_dict(data)  # the checks an import would make
        except ScenarioInvalid as exc:
            rescue = Path(options["output"] or f"recording-{os.getpid()}.json")
            rescue.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
            raise CommandError(f"{exc}; the steps are in {rescue}", returncode=1) from None
        secrets = sorted(document.placeholders()[1])
        if secrets:
            names = ", ".join(f"TABWRIGHT_SECRET_{s}" for s in secrets)
            self.stdout.write(f"secrets: replay reads {names} from the environment")
        if options["output"]:
            Path(options["output"]).write_text(
                json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8"
            )
            self.stdout.write(f"wrote {options['output']} ({len(document.steps)} steps)")
            return
        scenario = services.scenario_save(owner=owner, document=document)
        self.stdout.write(f"saved scenario {scenario.pk}: {scenario.name} "
                          f"({len(document.steps)} steps)")  # fmt: skip


class _StepPrinter:
    """Prints each recorded step once it is final: a fill is replaced while the person
    types, so it is printed when the next step comes (or at the end)."""

    def __init__(self, write: Any) -> None:
        self.write = write
        self.held: tuple[int, ScenarioStep] | None = None

    async def notice(self, index: int, step: ScenarioStep) -> None:
        if self.held is not None and self.held[0] != index:
            self.flush()
        if step.action == "fill":
            self.held = (index, step)
        else:
            self._print(index, step)

    def flush(self) -> None:
        if self.held is not None:
            self._print(*self.held)
            self.held = None

    def _print(self, index: int, step: ScenarioStep) -> None:
        self.write(f"step {index:>3} {step.summary()}")


@contextlib.contextmanager
def _stop_on_signals(stop: Any) -> Any:
    """Ctrl-C (and SIGTERM) end the recording instead of the process; only the main
    thread can take signals."""
    loop = asyncio.get_running_loop()
    taken = []
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop)
            taken.append(sig)
    try:
        yield
    finally:
        for sig in taken:
            loop.remove_signal_handler(sig)
