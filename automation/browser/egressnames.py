"""The egress proxy's names (:mod:`automation.browser.egress`): each looked up once in a
while, in threads of the proxy's own, and no site's names holding every thread.

The system's resolver tells no TTL: a name's answer is kept for :data:`RESOLVED_S`, so a
page's hundred requests to one host cost one lookup (the proxy checks the addresses again
for each connection all the same).  A lookup in a thread can't be stopped: one whose name
servers never answer holds its thread until the resolver gives up, long after its
asker's budget ended.  So a name asked for again while it is being looked up waits for
that lookup, and one site's names (``*.example.com``) have at most
:data:`LOOKUPS_PER_SITE` lookups under way, each counted until its thread is done.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from automation.browser.url_policy import LOOKUP_THREADS, IPAddress, system_lookup
from automation.budget import Budget

__all__ = ["LOOKUPS_PER_SITE", "RESOLVED_S", "RESOLVE_TIMEOUT_MS", "Names"]

RESOLVE_TIMEOUT_MS = 5_000
RESOLVED_S = 30.0  # a name's addresses are looked up again after this long
MAX_RESOLVED = 1_024  # names remembered; the oldest is forgotten past this
# Lookups of one site's names under way at once, at most (of the proxy's LOOKUP_THREADS):
# a page asking for name after name of a site whose name servers never answer (random
# names under a domain of its own) holds this many threads, not every one, and the names
# of other sites, other runs' pages among them, are looked up meanwhile.
LOOKUPS_PER_SITE = 2
# Second-level labels under which a country's domains are registered (example.co.uk).
_SHARED_SECOND_LEVELS = frozenset({"ac", "co", "com", "edu", "gov", "ltd", "net", "or", "org"})


class Names:
    """The addresses names resolved to, each answer kept for :data:`RESOLVED_S`: what the
    policy checks (every time) and the proxy connects to.  A failed lookup is not kept.
    The proxy's lookups have threads of their own: names a page asks for that resolve
    slowly hold these, never the threads of another proxy's or of the outbox's lookups.
    A name asked for again while it is being looked up waits for that lookup, each asker
    within its own budget: a page's first requests to a host (a connection each, up to
    Chromium's dozens through a proxy) hold one thread, not one each, and a page asking
    for one slow name again and again can't take every thread from the other pages; nor
    one asking for many names of one site (:data:`LOOKUPS_PER_SITE`)."""

    def __init__(self) -> None:
        self._answers: OrderedDict[tuple[str, int], tuple[float, list[IPAddress]]] = OrderedDict()
        self._asking: dict[tuple[str, int], asyncio.Task[list[IPAddress]]] = {}
        self.looked_up = 0  # lookups asked of the system's resolver (one a name at a time)
        self._threads: ThreadPoolExecutor | None = None
        self._sites: dict[str, _Site] = {}  # the sites with lookups under way or waiting

    def close(self) -> None:
        for asking in self._asking.values():
            asking.cancel()
        self._asking.clear()
        threads, self._threads = self._threads, None
        if threads is not None:  # a lookup in one ends when the resolver answers
            threads.shutdown(wait=False, cancel_futures=True)

    async def lookup(self, host: str, port: int, budget: Budget) -> list[IPAddress]:
        key = (host, port)
        kept = self._answers.get(key)
        if kept is not None and time.monotonic() < kept[0]:
            return list(kept[1])
        asking = self._asking.get(key)
        if asking is None:
            asking = self._asking[key] = asyncio.create_task(self._look_up(key))
            asking.add_done_callback(_retrieved)  # its askers may all have gone
        # Shielded: an asker whose budget ends (or whose connection goes) leaves the
        # lookup to those still waiting for it.
        return list(await budget.run(asyncio.shield(asking)))

    async def _look_up(self, key: tuple[str, int]) -> list[IPAddress]:
        """One lookup of ``key``, within a bound of its own (not its first asker's), once
        its site has a lookup free: held until the resolver's thread is done with it,
        which may be long after the bound (a lookup in a thread can't be stopped)."""
        name = _site_of(key[0])
        site = self._sites.get(name)
        if site is None:
            site = self._sites[name] = _Site(asyncio.Semaphore(LOOKUPS_PER_SITE))
        site.users += 1
        looking = False
        try:
            self.looked_up += 1
            if self._threads is None:
                self._threads = ThreadPoolExecutor(
                    LOOKUP_THREADS, thread_name_prefix="tabwright-proxy"
                )
            budget = Budget(RESOLVE_TIMEOUT_MS, label="proxy resolve")
            try:
                async with asyncio.timeout(budget.remaining_ms() / 1000):
                    await site.free.acquire()
            except TimeoutError:
                raise budget.exceeded() from None
            looking = True
            found = await system_lookup(
                *key, budget, threads=self._threads, done=lambda: self._done(name, site)
            )
        finally:
            self._asking.pop(key, None)
            if not looking:
                self._left(name, site)
        self._answers.pop(key, None)
        self._answers[key] = (time.monotonic() + RESOLVED_S, found)
        while len(self._answers) > MAX_RESOLVED:
            self._answers.popitem(last=False)
        return found

    def _done(self, name: str, site: _Site) -> None:
        """A lookup's thread is done: its site may have another one under way."""
        site.free.release()
        self._left(name, site)

    def _left(self, name: str, site: _Site) -> None:
        site.users -= 1
        if not site.users and self._sites.get(name) is site:
            del self._sites[name]


@dataclass
class _Site:
    free: asyncio.Semaphore  # its lookups that may be under way
    users: int = 0  # its lookups waiting, under way, or whose thread is not done yet


def _site_of(host: str) -> str:
    """The site a name belongs to, near enough: its last two labels, three under a
    country's shared second level (``shop.example.co.uk``: ``example.co.uk``).  Names
    grouped too widely only wait for each other while one of them resolves slowly."""
    labels = host.lower().rstrip(".").split(".")
    keep = (
        3 if len(labels) > 2 and len(labels[-1]) == 2 and labels[-2] in _SHARED_SECOND_LEVELS else 2
    )
    return ".".join(labels[-keep:])


def _retrieved(task: asyncio.Task[list[IPAddress]]) -> None:
    if not task.cancelled():
        task.exception()  # told to whoever still waited; not "never retrieved"
