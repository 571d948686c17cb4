"""A process that runs pytest exports one after another, as ``python -m pytest`` in the
export's folder would, on one Playwright driver and one Chromium kept between them.

The suite runs hundreds of exports; each in a process of its own started Python, pytest,
Playwright's driver and a Chromium (about a second of CPU) before its first step, nearly
half the CPU of the tests that run them.  A test process starts one host
(:func:`tests.exported.run_exported`) and hands it each export: its folder, its files,
its environment.  The host runs pytest on them in itself, where ``sync_playwright()``
gives the host's driver and ``chromium.launch()`` the host's browser for those
arguments, each page the export opens in a context of its own (as ``browser.new_page()``
always makes: its own cookies, storage and cache), closed where the export closes its
browser.  What an export does from its first step to its last runs as it would alone;
its fixture's own launch and close run in the tests that run an export alone
(``run_exported(..., alone=True)``; ``TABWRIGHT_EXPORT_ALONE=1`` runs every export so).

Requests and answers are one JSON line each on the host's stdin and stdout (pytest's own
output is read into the answer, not written there).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, BrowserContext, Page, Playwright
from playwright.sync_api import sync_playwright as real_sync_playwright


class _Selectors:
    """The driver's selector engines: each registered once (a driver refuses a name twice)."""

    def __init__(self, playwright: Playwright) -> None:
        self._playwright = playwright
        self._registered: dict[str, str | None] = {}

    def register(self, name: str, script: str | None = None, **options: Any) -> None:
        if name in self._registered:
            assert self._registered[name] == script, f"selector engine {name!r} changed"
            return
        self._playwright.selectors.register(name, script, **options)
        self._registered[name] = script


class _Lent:
    """The host's browser as one export's fixture sees it: its pages in contexts of their
    own, closed when it closes the browser."""

    def __init__(self, browser: Browser) -> None:
        self._browser = browser
        self._contexts: list[BrowserContext] = []

    def new_page(self, **options: Any) -> Page:
        page = self._browser.new_page(**options)
        self._contexts.append(page.context)
        return page

    def new_context(self, **options: Any) -> BrowserContext:
        context = self._browser.new_context(**options)
        self._contexts.append(context)
        return context

    def close(self) -> None:
        for context in self._contexts:
            context.close()
        self._contexts.clear()


class _Chromium:
    def __init__(self, host: Host) -> None:
        self._host = host

    def launch(self, *, executable_path: str | None = None, args: list[str] | None = None,
               **options: Any) -> _Lent:  # fmt: skip
        return _Lent(self._host.browser(executable_path, tuple(args or ()), options))


class _Playwright:
    def __init__(self, host: Host) -> None:
        self.selectors = _Selectors(host.playwright)
        self.chromium = _Chromium(host)


class Host:
    """The driver and the browsers (one per launch's arguments) kept between exports."""

    def __init__(self) -> None:
        self._manager = real_sync_playwright()
        self.playwright = self._manager.start()
        self._browsers: dict[str, Browser] = {}
        self._view = _Playwright(self)

    def browser(self, executable: str | None, args: tuple[str, ...], options: dict) -> Browser:
        key = json.dumps([executable, args, options], sort_keys=True, default=str)
        browser = self._browsers.get(key)
        if browser is None or not browser.is_connected():
            browser = self.playwright.chromium.launch(
                executable_path=executable, args=list(args), **options
            )
            self._browsers[key] = browser
        return browser

    @contextlib.contextmanager
    def sync_playwright(self) -> Iterator[_Playwright]:
        yield self._view

    def tidy(self) -> None:
        """Close what an export left open (its fixture did not reach its end)."""
        for browser in self._browsers.values():
            for context in browser.contexts if browser.is_connected() else ():
                with contextlib.suppress(Exception):
                    context.close()

    def close(self) -> None:
        for browser in self._browsers.values():
            with contextlib.suppress(Exception):
                browser.close()
        self._manager.__exit__(None, None, None)


def run(host: Host, request: dict[str, Any]) -> dict[str, Any]:
    """pytest on ``request["files"]`` in ``request["folder"]`` with ``request["env"]`` as
    the environment: its exit status and output."""
    import pytest  # (pytest's own modules, loaded once)

    folder = Path(request["folder"]).resolve()
    path, modules = list(sys.path), set(sys.modules)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(folder)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            status = pytest.main(["-q", "-p", "no:cacheprovider", *request["files"]])
    finally:
        host.tidy()
        sys.path[:] = path
        for name in set(sys.modules) - modules:
            file = getattr(sys.modules[name], "__file__", None) or ""
            if file and Path(file).resolve().is_relative_to(folder):
                del sys.modules[name]  # the export's own modules: the next export's are others
    return {"status": int(status), "out": out.getvalue()}


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    host = Host()
    # The exports' ``from playwright.sync_api import sync_playwright`` gets the host's.
    import playwright.sync_api

    playwright.sync_api.sync_playwright = host.sync_playwright  # type: ignore[assignment]
    try:
        for line in sys.stdin:
            answers.write(json.dumps(run(host, json.loads(line))) + "\n")
    finally:
        host.close()


if __name__ == "__main__":
    main()
