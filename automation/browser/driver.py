"""The Playwright driver a process's browser sessions share: one per event loop.

Playwright talks to Chromium through a driver, a Node process of its own: about half a
second and 0.3 s of CPU to start, and a process kept running.  A worker may hold several
browsers (sessions of other launch settings, one per remote Chrome), and each session
used to start a driver of its own; now the sessions of one event loop share one, started
by the first and stopped when the last lets it go.  A driver is bound to the loop it
started in, so a session in another loop (a thread's, a command's ``asyncio.run``) gets
another.  The ``tabwright`` selector engine is registered once, as the driver starts.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field

from playwright.async_api import Playwright, async_playwright

from automation.browser.launch import node_compile_cache
from automation.browser.refs import SELECTOR_ENGINE

__all__ = ["acquire_driver", "release_driver"]


@dataclass
class _Driver:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    playwright: Playwright | None = None
    users: int = 0


_drivers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Driver] = (
    weakref.WeakKeyDictionary()
)


async def acquire_driver() -> Playwright:
    """The running loop's driver, started if none runs; :func:`release_driver` it once
    done with it."""
    driver = _drivers.setdefault(asyncio.get_running_loop(), _Driver())
    async with driver.lock:
        if driver.playwright is None:
            node_compile_cache()
            playwright = await async_playwright().start()
            try:
                await playwright.selectors.register(
                    "tabwright", SELECTOR_ENGINE, content_script=True
                )
            except BaseException:
                await playwright.stop()
                raise
            driver.playwright = playwright
        driver.users += 1
        return driver.playwright


async def release_driver(playwright: Playwright) -> None:
    """One user of ``playwright`` is done with it: the last one stops the driver."""
    driver = next((d for d in list(_drivers.values()) if d.playwright is playwright), None)
    if driver is None:  # not one of ours any more: nobody else uses it
        await playwright.stop()
        return
    driver.users -= 1  # no await between this and the check: no other user slips in
    if driver.users > 0:
        return
    driver.playwright = None  # the next acquire starts another
    await playwright.stop()
