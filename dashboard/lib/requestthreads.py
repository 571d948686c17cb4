"""Each HTTP request's (and WebSocket's) thread for sync code, kept from one to the next.

Under ASGI, Django gives every request a thread of its own for the sync code it runs (its
middleware hooks, the ORM's queries, a sync view): asgiref's ``ThreadSensitiveContext``,
which starts a thread when the request first needs one and joins it when the request
ends.  Starting and joining a thread costs more than the rest of a small request (an act
call's snapshot, a JSON read): on a busy machine, milliseconds.  :class:`RequestThreads`
gives each request such a thread from a pool instead, through asgiref's own way of doing
it (``ThreadSensitiveContext(executor=...)``): requests at the same time still each have
their own thread, one after another share one.  Idle threads past ``keep`` are let go, and
so is a thread still busy when its request ends (a sync call the request gave up on, its
client gone): the next request must not wait behind it.  A new thread is started off the
event loop: starting one waits until it runs, and a hundred requests at once, each
starting its thread, held the loop for more than half a second on a busy machine.

A WebSocket is served the same way, as a request that lasts: its thread is its own while
it is open (an open socket holds one thread, and with SQLite that thread's connection),
so no socket's sync work waits behind another's, nor behind the process's own.

A task that a request starts and that outlives it (a run's session, a lease's renewal)
must not keep the request's thread: asgiref refuses the sync calls of such a task once
the request has ended.  :func:`process_task` starts it in a context of its own, as if
the process had started it; :func:`thread_task` does too, and gives its sync calls a
pooled thread of its own rather than the process's (where the runs' worker writes).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import ThreadSensitiveContext

__all__ = ["KEEP_THREADS", "RequestThreads", "process_task", "thread_task"]

T = TypeVar("T")

KEEP_THREADS = 8  # idle request threads kept for the next requests; more are let go


class Threads:
    """Threads for sync code, one to each piece of work at a time (its calls run there in
    turn), kept for the next piece of work when it ends."""

    def __init__(self, *, keep: int = KEEP_THREADS) -> None:
        self.keep = keep
        self._idle: list[_RequestThread] = []

    async def run(self, work: Awaitable[T]) -> T:
        """``work`` awaited, its sync calls on a thread of its own."""
        thread = self._idle.pop() if self._idle else await asyncio.to_thread(_RequestThread.started)
        try:
            async with ThreadSensitiveContext(executor=thread):
                return await work
        finally:
            if thread.busy == 0 and len(self._idle) < self.keep:
                self._idle.append(thread)
            else:
                thread.shutdown(wait=False)  # its thread ends once its call has

    @property
    def idle(self) -> int:
        return len(self._idle)


class RequestThreads(Threads):
    """ASGI middleware: the wrapped app's sync code runs on a thread from the pool, one
    thread per request at a time."""

    def __init__(self, app: Any, *, keep: int = KEEP_THREADS) -> None:
        super().__init__(keep=keep)
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self.run(self.app(scope, receive, send))


class _RequestThread(ThreadPoolExecutor):
    """One thread, and the calls given to it that have not ended yet."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="request")
        self._calls: set[Future[Any]] = set()  # (a set's add and discard are atomic)

    @classmethod
    def started(cls) -> _RequestThread:
        """One whose thread is running (and idle): a call given to it then starts none."""
        executor = cls()
        executor.submit(int).result()
        return executor

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future = super().submit(fn, *args, **kwargs)
        self._calls.add(future)
        future.add_done_callback(self._calls.discard)  # called on the thread that ends it
        return future

    @property
    def busy(self) -> int:
        return len(self._calls)


def process_task(coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
    """A task of the process, not of the request (or socket) that starts it: it runs in
    an empty context, so its sync calls go where a task started by the process sends
    them, not to a request's thread that ends with the request."""
    return asyncio.get_running_loop().create_task(coro, name=name, context=contextvars.Context())


def thread_task(coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
    """A task of the process (:func:`process_task`) whose sync calls run on a pooled
    thread of its own rather than the process's (where the runs' worker claims runs and
    writes their events): for work a request starts that may outlive it and must neither
    wait behind the process's thread nor hold it."""
    return process_task(_TASK_THREADS.run(coro), name=name)


_TASK_THREADS = Threads()  # thread_task's
