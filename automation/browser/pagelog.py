"""What a page said and did: console messages, uncaught errors and network requests.

An agent that only sees the accessibility tree cannot tell why a button "did nothing"; the
console error or the failed request behind it usually can.  :class:`PageLog` listens to the
page's events and keeps the latest of each kind in bounded ring buffers, so a run of hours
holds a fixed amount of memory and a query answers from memory without a browser call.

Listeners run inside Playwright's event dispatch: they only copy a few properties, cut long
texts, and swallow their own errors, because an exception there would surface in someone
else's await and a slow listener delays every other event of the page.

Code that wants to hear of entries as they come (the run's problem watcher, say) calls
:meth:`PageLog.subscribe`: its function is called with each new entry inside that same
dispatch, so it must be as cheap as the listeners, and it is shielded the same way.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from playwright.async_api import ConsoleMessage, Frame, Page, Request, Response
from playwright.async_api import Error as PlaywrightError

from automation.browser.consolelimit import MARK
from automation.browser.listen import follow, listener, unfollow
from automation.browser.served import WRITES, answer_read, refused_write, said_failed
from automation.errors import ActionInvalid

__all__ = [
    "CONSOLE_LEVELS",
    "RESOURCE_TYPES",
    "ConsoleDropped",
    "ConsoleEntry",
    "LogEntry",
    "LogSubscriber",
    "PageErrorEntry",
    "PageLog",
    "Refused",
    "RequestEntry",
]

log = logging.getLogger("automation.browser")

CONSOLE_LEVELS = frozenset(
    """assert clear count debug dir dirxml endGroup error info log profile profileEnd
    startGroup startGroupCollapsed table time timeEnd trace warning""".split()
)
RESOURCE_TYPES = frozenset(
    """document stylesheet image media font script texttrack xhr fetch eventsource websocket
    manifest other""".split()
)
_LEVEL_ALIASES = {"warn": "warning"}

# Pages log whole objects and data: URLs; the log is for reading, not for replaying them.
_MAX_TEXT_CHARS = 2_000
_MAX_URL_CHARS = 500
_STACK_LINES = 5
KEPT_REQUESTS = 200  # requests whose headers and bodies can still be read
_ANSWER_READ_S = 2.0  # the longest a write's JSON answer is read for (PageLog.said_failed)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class ConsoleEntry:
    level: str  # Playwright's console type: log, info, warning, error, debug ...
    text: str
    url: str
    line: int  # 1-based, like a stack trace; 0 when unknown
    time: float  # wall clock, seconds

    @property
    def location(self) -> str:
        return f"{self.url}:{self.line}" if self.url else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "text": self.text,
            "location": self.location,
            "time": self.time,
        }


@dataclass(frozen=True)
class ConsoleDropped:
    """The page wrote its console faster than it is kept (see
    :mod:`automation.browser.consolelimit`): of ``written`` messages since its last such
    count, ``dropped`` were not kept."""

    written: int
    dropped: int
    time: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PageErrorEntry:
    message: str  # "TypeError: x is undefined"
    stack: tuple[str, ...]  # the first frames, "at f (url:line:col)"
    time: float

    def to_dict(self) -> dict[str, Any]:
        return {"message": self.message, "stack": list(self.stack), "time": self.time}


@dataclass(frozen=True)
class RequestEntry:
    method: str
    url: str
    resource_type: str
    status: int | None  # None: no response (still pending, or failed before headers)
    failure: str | None  # network error text, like net::ERR_CONNECTION_REFUSED
    duration_ms: float | None  # None while pending
    from_cache: bool
    time: float  # when the request started, wall clock seconds
    number: int = 0  # the page's own count of its requests: details by number

    @property
    def pending(self) -> bool:
        return self.duration_ms is None

    @property
    def failed(self) -> bool:
        """A network failure or an HTTP error status: what a person would call "it failed"."""
        return self.failure is not None or (self.status is not None and self.status >= 400)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "pending": self.pending, "failed": self.failed}


LogEntry = ConsoleEntry | ConsoleDropped | PageErrorEntry | RequestEntry
# Called with each entry as it is recorded: a console message, a count of console messages
# not kept, an uncaught error, or a request when it ends (finished or failed), never when
# it starts.
LogSubscriber = Callable[[LogEntry], None]


@dataclass(frozen=True)
class Refused:
    """A request the server answered HTTP 4xx/5xx, or that got no answer (status 0, and
    the browser's ``failure``: a dropped connection), or a write answered in JSON that
    says it failed (``said``: its words) (see :meth:`PageLog.refused`)."""

    number: int
    status: int
    url: str
    method: str  # a write (a script's, a form's in a frame); "" for the page's own document
    failure: str = ""
    said: str = ""


@dataclass
class _Pending:
    method: str
    url: str
    resource_type: str
    time: float
    started: float  # monotonic, for the duration when the browser gives no timing
    number: int = 0


def _top_document(request: Request) -> bool:
    """Whether ``request`` loads the page's own document (a navigation of its top frame)."""
    try:
        return request.is_navigation_request() and request.frame.parent_frame is None
    except PlaywrightError:  # a service worker's request has no frame
        return False


def _frame_write(request: Request) -> bool:
    """Whether ``request`` is a form a frame of the page posted (a navigation of a frame
    inside it that writes): what it sent is refused as a script's write is."""
    try:
        return (
            request.is_navigation_request()
            and request.frame.parent_frame is not None
            and request.method in WRITES
        )
    except PlaywrightError:
        return False


class PageLog:
    """Ring buffers of one page's console, uncaught errors and requests; newest last."""

    def __init__(
        self,
        page: Page,
        *,
        console_size: int = 500,
        errors_size: int = 200,
        requests_size: int = 500,
    ) -> None:
        self.page = page
        self._console: deque[ConsoleEntry] = deque(maxlen=console_size)
        self._errors: deque[PageErrorEntry] = deque(maxlen=errors_size)
        self._requests: deque[RequestEntry] = deque(maxlen=requests_size)
        # Long polls and streams never finish; the cap keeps them from growing without end.
        self._pending: dict[Request, _Pending] = {}
        self._pending_cap = requests_size
        # The latest requests themselves, by number, for their headers and bodies.
        self._kept: dict[int, Request] = {}
        self._kept_size = KEPT_REQUESTS
        self._seen: Counter[str] = Counter()
        self._subscribers: list[LogSubscriber] = []
        # What the server refused: the page's own documents, and the writes its scripts
        # sent to its site (fetch, XHR), answered HTTP 4xx/5xx.
        self._refused: deque[Refused] = deque(maxlen=20)
        self._last_write = 0  # the number of the latest request that sent a write
        self._reading: set[asyncio.Task[None]] = set()  # writes' JSON answers being read
        self._said_failed: deque[Refused] = deque(maxlen=20)  # ... that said they failed
        # The child frames a step acted in (a widget of another site): their scripts'
        # writes to their own site are the task's, refused as the page's are.
        self._acted: weakref.WeakSet[Frame] = weakref.WeakSet()
        # How the page's document came: the method of the request it is the answer to
        # ("POST": the server's own answer to a form, not a redirect after it).
        self.document_method = ""
        self._listeners: dict[str, Callable[[Any], None]] = {
            "console": listener(self._on_console),
            "pageerror": listener(self._on_page_error),
        }
        for event, callback in self._listeners.items():
            page.on(event, callback)  # type: ignore[call-overload]
        # The request events, on the one listener a page has for each (listen.follow).
        self._followed: dict[str, Callable[[Any], None]] = {
            "request": self._on_request,
            "response": self._on_response,
            "requestfinished": self._on_request_finished,
            "requestfailed": self._on_request_failed,
        }
        for event, handler in self._followed.items():
            follow(page, event, handler)

    def detach(self) -> None:
        """Stop listening; what was recorded stays readable."""
        for event, callback in self._listeners.items():
            try:
                self.page.remove_listener(event, callback)
            except (KeyError, ValueError):
                pass  # already removed
        for event, handler in self._followed.items():
            unfollow(self.page, event, handler)
        self._listeners = {}
        self._followed = {}

    def subscribe(self, subscriber: LogSubscriber) -> None:
        """Call ``subscriber`` with each new entry from now on, inside Playwright's event
        dispatch: it must return at once (enqueue, don't await) and its errors are logged
        and swallowed.  Subscribing the same function twice calls it once."""
        if subscriber not in self._subscribers:
            self._subscribers.append(subscriber)

    def unsubscribe(self, subscriber: LogSubscriber) -> None:
        """Stop calling ``subscriber``; unknown ones are ignored, so twice is harmless."""
        if subscriber in self._subscribers:
            self._subscribers.remove(subscriber)

    def _record(self, buffer: deque[Any], entry: LogEntry) -> None:
        buffer.append(entry)
        self._tell(entry)

    def _tell(self, entry: LogEntry) -> None:
        # A copy: a subscriber may unsubscribe itself while it is being called.
        for subscriber in tuple(self._subscribers):
            try:
                subscriber(entry)
            except Exception:
                log.exception("a page log subscriber failed")

    # -- listeners (cheap, never raise) -------------------------------------------------

    def _on_console(self, message: ConsoleMessage) -> None:
        try:
            if message.type == "debug" and message.text.startswith(MARK):
                self._on_dropped(message.text)
                return
            where = message.location or {}
            url = str(where.get("url") or "")
            self._record(
                self._console,
                ConsoleEntry(
                    level=message.type,
                    text=_cut(message.text, _MAX_TEXT_CHARS),
                    url=_cut(url, _MAX_URL_CHARS),
                    # Playwright counts from 0; editors and stack traces count from 1.
                    line=int(where.get("lineNumber") or 0) + 1 if url else 0,
                    time=time.time(),
                ),
            )
            self._seen["console"] += 1
        except Exception:
            log.debug("console message not recorded", exc_info=True)

    def _on_dropped(self, text: str) -> None:
        written, dropped = (int(count) for count in text[len(MARK) :].split())
        self._seen["console_dropped"] += dropped
        self._tell(ConsoleDropped(written, dropped, time.time()))

    def _on_page_error(self, error: PlaywrightError) -> None:
        try:
            name, text = error.name or "Error", error.message or str(error)
            message = text if text.startswith(name) else f"{name}: {text}"
            lines = [line.strip() for line in (error.stack or "").splitlines() if line.strip()]
            frames = [line for line in lines if line.startswith("at ")][:_STACK_LINES]
            self._record(
                self._errors,
                PageErrorEntry(
                    message=_cut(message, _MAX_TEXT_CHARS),
                    stack=tuple(_cut(frame, _MAX_URL_CHARS) for frame in frames),
                    time=time.time(),
                ),
            )
            self._seen["errors"] += 1
        except Exception:
            log.debug("page error not recorded", exc_info=True)

    def _on_request(self, request: Request) -> None:
        try:
            if len(self._pending) >= self._pending_cap:
                self._pending.pop(next(iter(self._pending)))
            self._pending[request] = _Pending(
                method=request.method,
                url=_cut(request.url, _MAX_URL_CHARS),
                resource_type=request.resource_type,
                time=time.time(),
                started=time.monotonic(),
                number=self._seen["requests"] + 1,
            )
            self._seen["requests"] += 1
            self._keep(self._seen["requests"], request)
            if request.method in WRITES:
                self._last_write = self._seen["requests"]
        except Exception:
            log.debug("request not recorded", exc_info=True)

    def _on_response(self, response: Response) -> None:
        """A refusal is known from the answer's head: a script that never reads the
        body of a refused save leaves its request unfinished."""
        try:
            if not 300 <= response.status < 400 and _top_document(response.request):
                self.document_method = response.request.method
            request = response.request
            pending = self._pending.get(request)
            if pending is None:
                return
            if response.status < 400:
                self._read_answer(pending, request, response)
                return
            if _top_document(request):
                self._refused.append(Refused(pending.number, response.status, pending.url, ""))
            elif _frame_write(request) or self._script_write(request, response.status):
                self._refused.append(
                    Refused(pending.number, response.status, pending.url, request.method)
                )
        except Exception:
            log.debug("response not recorded", exc_info=True)

    def _read_answer(self, pending: _Pending, request: Request, response: Response) -> None:
        """Read the JSON answer to a write of a script's to its site (as :meth:`_script_write`
        tells one, whatever the status), in a task of its own: one saying the write failed
        (``{"ok": false}``, HTTP 200: :func:`~automation.browser.served.said_failed`) is
        kept for :meth:`said_failed`."""
        if not answer_read(response.headers) or not self._script_write(request, 400):
            return
        task = asyncio.ensure_future(self._answer(pending, request.method, response))
        self._reading.add(task)
        task.add_done_callback(self._reading.discard)

    async def _answer(self, pending: _Pending, method: str, response: Response) -> None:
        try:
            async with asyncio.timeout(_ANSWER_READ_S):
                body = await response.body()
        except (PlaywrightError, TimeoutError):
            return  # (the page went away, or the answer never ended: not read)
        said = said_failed(body)
        if said:
            self._said_failed.append(
                Refused(pending.number, response.status, pending.url, method, said=said)
            )

    async def said_failed(self, since: int) -> list[Refused]:
        """The writes after number ``since`` (of a script's, to its site) whose JSON answer
        said they failed (``{"ok": false}``, HTTP 200), once every such answer heard so
        far is read (each within :data:`_ANSWER_READ_S`)."""
        if self._reading:
            await asyncio.wait(set(self._reading))
        return [entry for entry in self._said_failed if entry.number > since]

    def acted_in(self, frame: Frame) -> None:
        """A step acts in ``frame``: when it is a child frame (a widget, of any site), a
        write its script sends to the frame's own site and the server refuses is refused
        as one of the page's own is."""
        if frame.parent_frame is not None:
            self._acted.add(frame)

    def _script_write(self, request: Request, status: int) -> bool:
        """Whether ``request``, answered ``status``, is a refused write of a script's to
        its site: the page's, or that of a child frame a step acted in."""
        if refused_write(request.method, request.resource_type, status, request.url,
                         self.page.url):  # fmt: skip
            return True
        frame = request.frame
        return frame in self._acted and refused_write(
            request.method, request.resource_type, status, request.url, frame.url
        )

    def _unanswered(self, request: Request, failure: str) -> None:
        """A request that got no answer (the connection dropped or was refused): the
        page's own document, a form a frame posted, or a write of its script's to its own
        site was not served, as one answered HTTP 5xx was not.  One the page gave up
        itself (a navigation away, a script's abort: ``net::ERR_ABORTED``) is not that."""
        try:
            pending = self._pending.get(request)
            if pending is None or "ERR_ABORTED" in failure:
                return
            script_write = self._script_write(request, 599)  # (599: an answer never got)
            if _top_document(request) or _frame_write(request) or script_write:
                method = "" if _top_document(request) else request.method
                self._refused.append(
                    Refused(pending.number, 0, pending.url, method, _cut(failure, 120))
                )
        except Exception:
            log.debug("failed request not recorded", exc_info=True)

    def _on_request_finished(self, request: Request) -> None:
        self._finish(request, failure=None)

    def _on_request_failed(self, request: Request) -> None:
        try:
            failure = request.failure or "failed"
        except Exception:
            failure = "failed"
        self._unanswered(request, failure)
        self._finish(request, failure=failure)

    def _finish(self, request: Request, *, failure: str | None) -> None:
        try:
            pending = self._pending.pop(request, None)
            if pending is None:  # started before we attached, or dropped by the cap
                pending = _Pending(
                    request.method,
                    _cut(request.url, _MAX_URL_CHARS),
                    request.resource_type,
                    time.time(),
                    time.monotonic(),
                )
            response = request.existing_response
            duration_ms = (time.monotonic() - pending.started) * 1000
            end = request.timing.get("responseEnd", -1) if failure is None else -1
            if end is not None and end >= 0:
                duration_ms = float(end)  # the browser's own measure, without event latency
            self._record(
                self._requests,
                RequestEntry(
                    method=pending.method,
                    url=pending.url,
                    resource_type=pending.resource_type,
                    status=response.status if response is not None else None,
                    failure=failure,
                    duration_ms=round(duration_ms, 1),
                    from_cache=_served_from_cache(request, response),
                    time=pending.time,
                    number=pending.number,
                ),
            )
        except Exception:
            log.debug("request end not recorded", exc_info=True)

    def _keep(self, number: int, request: Request) -> None:
        self._kept[number] = request
        if len(self._kept) > self._kept_size:
            self._kept.pop(next(iter(self._kept)))

    # -- queries ------------------------------------------------------------------------

    def request(self, number: int) -> Request:
        """The request the log numbered ``number`` (one of the latest KEPT_REQUESTS)."""
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ActionInvalid(f"a request number is a positive whole number, not {number!r}")
        found = self._kept.get(number)
        if found is None:
            raise ActionInvalid(
                f"no request #{number} is kept",
                hint=f"the latest {self._kept_size} are; list them with page_log kind=requests",
            )
        return found

    def console(
        self, *, level: str | None = None, contains: str | None = None, limit: int = 50
    ) -> list[ConsoleEntry]:
        """The latest console messages, optionally of one level or containing a text."""
        limit = _check_limit(limit)
        if level is not None:
            if not isinstance(level, str) or _LEVEL_ALIASES.get(level, level) not in CONSOLE_LEVELS:
                raise ActionInvalid(
                    f"unknown console level {level!r}",
                    hint="use one of: " + ", ".join(sorted(CONSOLE_LEVELS)),
                )
            level = _LEVEL_ALIASES.get(level, level)
        _check_text("contains", contains)
        found = [
            entry
            for entry in self._console
            if (level is None or entry.level == level)
            and (contains is None or contains.lower() in entry.text.lower())
        ]
        return found[-limit:]

    def errors(self, *, limit: int = 50) -> list[PageErrorEntry]:
        """The latest uncaught exceptions of the page."""
        return list(self._errors)[-_check_limit(limit) :]

    @property
    def requests_seen(self) -> int:
        """How many requests the page has made since the log began (each one's number)."""
        return self._seen["requests"]

    def wrote(self, since: int) -> bool:
        """Whether the page sent a write (POST, PUT, PATCH, DELETE: a form posted, a save)
        among the requests after number ``since``."""
        return self._last_write > since

    def refused(self, since: int) -> list[Refused]:
        """What the server refused of the requests after number ``since``: the page's own
        documents (its top frame's navigations) and the writes (POST, PUT, PATCH,
        DELETE) its scripts sent to its own site, answered HTTP 4xx/5xx (those answered
        in JSON saying they failed: :meth:`said_failed`)."""
        return [entry for entry in self._refused if entry.number > since]

    def requests(
        self,
        *,
        failed_only: bool = False,
        url_contains: str | None = None,
        resource_type: str | None = None,
        limit: int = 50,
    ) -> list[RequestEntry]:
        """The latest requests, finished and still pending, in the order they started."""
        limit = _check_limit(limit)
        _check_text("url_contains", url_contains)
        if resource_type is not None and resource_type not in RESOURCE_TYPES:
            raise ActionInvalid(
                f"unknown resource type {resource_type!r}",
                hint="use one of: " + ", ".join(sorted(RESOURCE_TYPES)),
            )
        if not isinstance(failed_only, bool):
            raise ActionInvalid("failed_only must be true or false")
        entries = list(self._requests) + [_as_entry(p) for p in self._pending.values()]
        entries.sort(key=lambda entry: entry.time)
        found = [
            entry
            for entry in entries
            if (not failed_only or entry.failed)
            and (url_contains is None or url_contains in entry.url)
            and (resource_type is None or entry.resource_type == resource_type)
        ]
        return found[-limit:]

    def summary(self) -> dict[str, Any]:
        """Counts plus the latest errors and failed requests: a page's health at a glance."""
        failed = [entry for entry in self._requests if entry.failed]
        return {
            "console": {
                "seen": self._seen["console"],
                "by_level": dict(Counter(entry.level for entry in self._console)),
                # Written past the page's console rate: counted, never seen here.
                "not_kept": self._seen["console_dropped"],
            },
            "page_errors": self._seen["errors"],
            "requests": {
                "seen": self._seen["requests"],
                "pending": len(self._pending),
                "failed": len(failed),
            },
            "errors": [entry.to_dict() for entry in list(self._errors)[-5:]],
            "failed_requests": [entry.to_dict() for entry in failed[-5:]],
        }


def _served_from_cache(request: Request, response: Response | None) -> bool:
    """Best effort: Chromium reports no connection timing for a response it served from cache.

    Playwright exposes no "from cache" flag; it blanks ``requestStart`` and ``responseStart``
    exactly when Chromium says the request was served from the memory or disk cache.
    """
    if response is None or response.from_service_worker:
        return False
    if not request.url.startswith(("http:", "https:")):
        return False
    timing = request.timing
    return timing.get("requestStart", 0) < 0 and timing.get("responseStart", 0) < 0


def _as_entry(pending: _Pending) -> RequestEntry:
    return RequestEntry(
        method=pending.method,
        url=pending.url,
        resource_type=pending.resource_type,
        status=None,
        failure=None,
        duration_ms=None,
        from_cache=False,
        time=pending.time,
        number=pending.number,
    )


def _check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ActionInvalid(f"limit must be a positive whole number, not {limit!r}")
    return limit


def _check_text(name: str, value: str | None) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ActionInvalid(f"{name} must be a non-empty text, not {value!r}")
