"""JavaScript in the page, inside the caller's budget, on a CDP session a hung script can't wedge.

Routing, in order:

1. no ref: ``Runtime.evaluate`` on the page's own CDP session (:class:`PageRuntime`);
2. a ref whose element has a backend node id: ``DOM.resolveNode`` + ``Runtime.callFunctionOn``
   on that session, the function first proving the node is still the ref's element;
3. otherwise (no debugging endpoint, an element in an out-of-process frame): Playwright's
   evaluate, still bounded by the budget and still stopped through the engine's sessions.

The script gets the budget less :data:`RESERVED_MS`; when that window closes (or the budget
is cancelled) ``Runtime.terminateExecution`` goes to the session that was attached when the
page was created (the only kind that gets through to a spinning page) and to those of its
out-of-process frames, and the caller gets :class:`EvaluateTimeout` or
:class:`EvaluateCancelled` within its deadline.  The page stays usable: the next click on
the tab works without restarting anything.  If the engine's connection to the browser
dropped, the tab attaches a new session before its next script, while none of ours runs.

Every route returns the same shape: the script's value as JSON (``None`` for
``undefined``), DOM nodes as ``{"node": tag, "ref": ref-or-absent}``, capped at
``BrowserConfig.evaluate_max_result_chars`` by the page itself so an oversized result never
crosses the wire.  Each evaluation is counted in :mod:`automation.metrics` and kept on the
tab (:meth:`Tab.take_evaluations`) for the run's events.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from automation.browser.cdp import (
    CdpConnection,
    CdpError,
    backend_node_id_of,
    result_of,
    session_lost,
)
from automation.browser.refcheck import stale_ref
from automation.budget import DEFAULT_HEADROOM_MS, Budget
from automation.errors import (
    ActionInvalid,
    BrowserClosed,
    BudgetExceeded,
    Cancelled,
    EvaluateCancelled,
    EvaluateError,
    EvaluateTimeout,
    StaleRef,
    TabwrightError,
)
from automation.metrics import (
    EVALUATE_FALLBACKS,
    EVALUATE_SECONDS,
    EVALUATE_TERMINATIONS,
    EVALUATIONS,
)

if TYPE_CHECKING:
    from automation.browser.tab import Tab

__all__ = [
    "MAX_ARG_CHARS",
    "MAX_EXPRESSION_CHARS",
    "RESERVED_MS",
    "TERMINATE_WAIT_MS",
    "Evaluation",
    "PageRuntime",
    "evaluate",
    "is_function",
]

T = TypeVar("T")

MAX_EXPRESSION_CHARS = 100_000
MAX_ARG_CHARS = 100_000
# After the script's window closes: up to this long for the page to confirm the terminate ...
TERMINATE_WAIT_MS = 50
# ... and the usual headroom to hand back the answer; both inside the caller's deadline.
RESERVED_MS = TERMINATE_WAIT_MS + DEFAULT_HEADROOM_MS

_FUNCTION_RE = re.compile(r"^\s*(async\s+)?(function\b|\([^()]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)")

# Runs in the page: the value as capped JSON, so an oversized result never leaves the page.
_OUT_JS = """((value, cap) => {
  let json;
  try {
    json = JSON.stringify(value, (key, v) => {
      if (typeof v === "bigint") return v.toString();
      if (typeof Node !== "undefined" && v instanceof Node) {
        const ref = window.__tabwright ? window.__tabwright.refOf(v) : null;
        return ref ? { node: v.nodeName.toLowerCase(), ref } : { node: v.nodeName.toLowerCase() };
      }
      return v;
    });
  } catch (e) {
    return { error: "the result can't be turned into JSON: " + e.message };
  }
  if (json === undefined) json = "null";
  return json.length > cap ? { size: json.length } : { json };
})"""


def is_function(source: str) -> bool:
    """Whether the script is a function (called with the arg) rather than an expression."""
    return bool(_FUNCTION_RE.match(source))


def _value_of(source: str, call: str) -> str:
    """JS that yields the script's value: a function is called (``call`` gives its
    arguments), an expression or statement list is evaluated as it is."""
    if is_function(source):
        head = f"(\n{source.strip().rstrip(';')}\n)"  # a trailing ; would end the group
    else:
        head = f"(0, eval)({json.dumps(source)})"
    return f"let value = {head};\n  if (typeof value === 'function') value = value({call});"


def _page_program(source: str, arg: Any, cap: int) -> str:
    return (
        "(async () => {\n  "
        + _value_of(source, json.dumps(arg))
        + f"\n  return {_OUT_JS}(await value, {cap});\n}})()"
    )


def _element_program(source: str) -> str:
    """For ``Runtime.callFunctionOn`` with ``this`` the element: refuses (``stale``, with
    the registry's reason) unless the registry still resolves the ref to this very node,
    with its role and name, in its row."""
    return (
        "async function (ref, arg, cap) {\n"
        "  const reg = window.__tabwright;\n"
        "  if (ref && (!reg || reg.resolve(ref) !== this))\n"
        '    return { stale: (reg && reg.staleness(ref)) || ["gone"] };\n  '
        + _value_of(source, "this, arg")
        + f"\n  return {_OUT_JS}(await value, cap);\n}}"
    )


def _playwright_page_program(source: str) -> str:
    return (
        "async ([arg, cap]) => {\n  "
        + _value_of(source, "arg")
        + f"\n  return {_OUT_JS}(await value, cap);\n}}"
    )


def _playwright_element_program(source: str) -> str:
    return (
        "async (el, [arg, cap]) => {\n  "
        + _value_of(source, "el, arg")
        + f"\n  return {_OUT_JS}(await value, cap);\n}}"
    )


@dataclass(frozen=True)
class Evaluation:
    """One evaluation, as the run's events and the metrics see it."""

    route: str  # cdp | cdp_element | playwright
    outcome: str  # ok | error | timeout | cancelled
    duration_ms: int
    terminated: bool = False  # Runtime.terminateExecution was sent
    fallback_reason: str = ""  # why the Playwright route was taken
    error_code: str = ""


class _SessionLost(Exception):
    """The tab's session of the evaluate engine was unknown to the browser."""


@contextlib.contextmanager
def _session_kept() -> Iterator[None]:
    """A CdpError that says the browser lost the session becomes _SessionLost."""
    try:
        yield
    except CdpError as exc:
        if session_lost(exc):
            raise _SessionLost from None
        raise


class PageRuntime:
    """The evaluate engine's session on one page, attached when the page was created."""

    def __init__(self, conn: CdpConnection, session_id: str, target_id: str) -> None:
        self.conn = conn
        self.session_id = session_id
        self.target_id = target_id
        self.terminations = 0
        # Sessions on the page's out-of-process frames, attached as they appear: a script
        # stuck in one of those (on the Playwright path) is stopped there.
        self.frame_sessions: set[str] = set()
        self._posting: set[asyncio.Task[object]] = set()

    async def watch_frames(self, *, budget: Budget) -> None:
        self.conn.listen(self.session_id, self._on_event)
        await self._auto_attach(self.session_id, budget=budget)

    async def _auto_attach(self, session_id: str, *, budget: Budget) -> None:
        params = {
            "autoAttach": True,
            "waitForDebuggerOnStart": False,
            "flatten": True,
            "filter": [{"type": "iframe"}],
        }
        await self.conn.send("Target.setAutoAttach", params, session_id=session_id, budget=budget)

    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Target.attachedToTarget":
            session_id = str(params.get("sessionId", ""))
            self.frame_sessions.add(session_id)
            self.conn.listen(session_id, self._on_event)  # its own frames, in turn
            task = asyncio.ensure_future(
                self._auto_attach(session_id, budget=Budget(5_000, label="watch frames"))
            )
            self._posting.add(task)
            task.add_done_callback(_settle(self._posting))
        elif method == "Target.detachedFromTarget":
            self.frame_sessions.discard(str(params.get("sessionId", "")))

    @property
    def usable(self) -> bool:
        """False once the connection closed or the browser detached the session (then the
        tab attaches anew before its next script)."""
        return self.conn.attached(self.session_id)

    async def send(self, method: str, params: dict[str, Any], *, budget: Budget) -> dict[str, Any]:
        """A command on the page's session; _SessionLost when the browser no longer knows
        the session (the command never reached the page), else its CdpError."""
        with _session_kept():
            return await self.conn.send(method, params, session_id=self.session_id, budget=budget)

    async def run(self, method: str, params: dict[str, Any], *, budget: Budget) -> dict[str, Any]:
        """A command that runs page script: bounded by the budget less RESERVED_MS; if it
        outstays that or is cancelled, the script is terminated before the error is raised.
        _SessionLost as :meth:`send`."""
        future = await self.conn.post(method, params, session_id=self.session_id)
        with _session_kept():
            return result_of(
                method, await _stopping(budget, self, lambda window: window.run(future))
            )

    async def terminate(self) -> bool:
        """Stop the script running in the page (and in its out-of-process frames) now; True
        when the page confirmed it.  Sent even when nothing runs any more (a promise that
        never settles): then it is a no-op, measured not to touch the next script."""
        self.terminations += 1
        try:
            sent = [
                await self.conn.post("Runtime.terminateExecution", {}, session_id=session)
                for session in (self.session_id, *self.frame_sessions)
            ]
            answers = await Budget(TERMINATE_WAIT_MS, label="terminate").run(
                asyncio.gather(*sent, return_exceptions=True)
            )
            first = answers[0]
            confirmed = isinstance(first, dict) and "error" not in first
        except TabwrightError:
            confirmed = False
        EVALUATE_TERMINATIONS.inc(result="confirmed" if confirmed else "unanswered")
        return confirmed

    async def backend_node_id(self, expression: str, *, budget: Budget) -> int | None:
        """The backend node id of the element ``expression`` gives in the page's main world."""
        return await backend_node_id_of(
            lambda method, params: self.send(method, params, budget=budget), expression
        )

    async def close(self) -> None:
        await self.conn.detach(self.session_id)


async def evaluate(
    tab: Tab, expression: str, arg: Any = None, *, ref: str = "", budget: Budget
) -> Any:
    """Run ``expression`` (an expression, or a function called with ``arg`` — with a ref,
    called with the element and ``arg``) and return its value as JSON data."""
    if not tab.config.evaluate_enabled:
        raise ActionInvalid(
            "evaluate is turned off",
            hint="the operator can turn it on (BrowserConfig.evaluate_enabled)",
        )
    if not isinstance(expression, str) or not expression.strip():
        raise ActionInvalid("evaluate needs a script")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ActionInvalid(f"the script is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        arg_json = json.dumps(arg)
    except (TypeError, ValueError) as exc:
        raise ActionInvalid(f"evaluate: the arg must be JSON data ({exc})") from None
    if len(arg_json) > MAX_ARG_CHARS:
        raise ActionInvalid(f"evaluate: the arg is longer than {MAX_ARG_CHARS} characters")
    if ref and not is_function(expression):
        raise ActionInvalid(
            "with a ref, the script must be a function of the element",
            hint="like el => el.value, or (el, arg) => ...",
        )
    tab.core.check_alive()
    await _reattach_if_lost(tab)
    started = time.monotonic()
    taken = {"route": "playwright", "reason": ""}  # the route as chosen, also when it fails
    terminated_before = _terminations(tab)
    try:
        try:
            value = await _routed(tab, expression, arg, ref, budget, taken)
        except _SessionLost:
            # The browser had let go of the tab's session (the command never reached the
            # page, so nothing ran): attach anew and run the script once more.
            await _reattach_if_lost(tab, lost=True)
            try:
                value = await _routed(tab, expression, arg, ref, budget, taken)
            except _SessionLost:
                raise EvaluateError(
                    "evaluate: the browser lost the tab's debugging session twice",
                    hint="try again; if it keeps happening, the browser is in trouble",
                ) from None
        tab.dialogs_raise("evaluate")
    except BaseException as exc:
        _record(tab, taken["route"], exc, started, taken["reason"], terminated_before)
        raise
    _record(tab, taken["route"], None, started, taken["reason"], terminated_before)
    return value


async def _reattach_if_lost(tab: Tab, *, lost: bool = False) -> None:
    """A tab whose session dropped (its connection closed, the browser detached it, or
    ``lost``: a command found it unknown) attaches anew now, while no script of ours runs,
    so the next one can be stopped again if it hangs (when that fails the tab has no
    runtime, and scripts take the Playwright path)."""
    if tab.runtime is None or tab.reattach_runtime is None:
        return
    if lost or not tab.runtime.usable:
        tab.runtime = await tab.reattach_runtime()


async def _routed(
    tab: Tab, expression: str, arg: Any, ref: str, budget: Budget, taken: dict[str, str]
) -> Any:
    """The script's value on the route it can take; ``taken`` says which, and why not the
    CDP route."""
    if ref:
        entry = tab.core.entry(ref)
        backend_id, taken["reason"] = await _backend_id(tab, entry.ref, budget)
        if backend_id is not None:
            taken["route"] = "cdp_element"
            return await _cdp_element(tab, entry.ref, backend_id, expression, arg, budget)
        taken["route"] = "playwright"
        return await _playwright(tab, expression, arg, entry.ref, budget)
    if tab.runtime is not None and tab.runtime.usable:
        taken["route"], taken["reason"] = "cdp", ""
        return await _cdp_page(tab, expression, arg, budget)
    taken["route"], taken["reason"] = "playwright", "no_cdp_session"
    return await _playwright(tab, expression, arg, "", budget)


async def _backend_id(tab: Tab, ref: str, budget: Budget) -> tuple[int | None, str]:
    """The element's backend node id through the page's session, or why there is none."""
    runtime = tab.runtime
    if runtime is None or not runtime.usable:
        return None, "no_cdp_session"
    known = tab.state.backend_ids.get(ref)
    if known is not None:
        return known, ""
    try:
        found = await runtime.backend_node_id(
            tab.registry_path(ref), budget=budget.child(label="backend node id")
        )
    except CdpError:
        found = None  # an out-of-process frame on the way: the element is out of reach
    if found is None:
        return None, "no_backend_node"
    tab.state.backend_ids[ref] = found
    return found, ""


async def _cdp_page(tab: Tab, source: str, arg: Any, budget: Budget) -> Any:
    assert tab.runtime is not None
    params = {
        "expression": _page_program(source, arg, tab.config.evaluate_max_result_chars),
        "awaitPromise": True,
        "returnByValue": True,
        "userGesture": True,
    }
    try:
        found = await tab.runtime.run("Runtime.evaluate", params, budget=budget)
    except CdpError as exc:
        raise EvaluateError(f"evaluate: {exc.message}") from None
    return _unpack(found, tab)


async def _cdp_element(
    tab: Tab, ref: str, backend_id: int, source: str, arg: Any, budget: Budget
) -> Any:
    runtime = tab.runtime
    assert runtime is not None
    try:
        node = await runtime.send(
            "DOM.resolveNode", {"backendNodeId": backend_id}, budget=budget.child(label="resolve")
        )
    except CdpError:
        tab.state.backend_ids.pop(ref, None)
        raise StaleRef(
            f"ref {ref} no longer points at an element in the page", hint="take a new snapshot"
        ) from None
    object_id = node["object"]["objectId"]
    params = {
        "functionDeclaration": _element_program(source),
        "objectId": object_id,
        "arguments": [
            {"value": ref},
            {"value": arg},
            {"value": tab.config.evaluate_max_result_chars},
        ],
        "awaitPromise": True,
        "returnByValue": True,
        "userGesture": True,
    }
    try:
        found = await runtime.run("Runtime.callFunctionOn", params, budget=budget)
    except CdpError as exc:
        raise EvaluateError(f"evaluate on {ref}: {exc.message}") from None
    finally:
        if runtime.usable:
            await runtime.conn.post(
                "Runtime.releaseObject", {"objectId": object_id}, session_id=runtime.session_id
            )
    return _unpack(found, tab, ref=ref)


async def _playwright(tab: Tab, source: str, arg: Any, ref: str, budget: Budget) -> Any:
    """The bounded fallback: Playwright's evaluate, stopped through the page's session."""
    cap = tab.config.evaluate_max_result_chars
    if ref:
        locator, _entry = await tab.resolve(ref, budget=budget)
        work = locator.evaluate(_playwright_element_program(source), [arg, cap])
    else:
        work = tab.page.evaluate(_playwright_page_program(source), [arg, cap])
    runtime = tab.runtime if tab.runtime is not None and tab.runtime.usable else None
    try:
        value = await _stopping(
            budget, runtime, lambda window: tab.core.call("evaluate", window, work)
        )
    except (BrowserClosed, EvaluateTimeout, EvaluateCancelled):
        raise
    except TabwrightError as exc:
        raise EvaluateError(exc.message, hint=exc.hint) from None
    return _decode(value, cap, ref)


async def _stopping(
    budget: Budget, runtime: PageRuntime | None, run: Callable[[Budget], Awaitable[T]]
) -> T:
    """``run`` within the script's window (the budget less RESERVED_MS).  If it outstays the
    window or is cancelled, the script is stopped through ``runtime`` (when there is one)
    before EvaluateTimeout or EvaluateCancelled is raised, inside the caller's deadline."""
    try:
        return await run(budget.reserve(RESERVED_MS, label=budget.label))
    except BudgetExceeded:
        stopped = runtime is not None
        if runtime is not None:
            await runtime.terminate()
        raise EvaluateTimeout(
            f"{budget.label}: the script ran past its {budget.timeout_ms:.0f} ms budget"
            + (" and was stopped" if stopped else ""),
            hint="make the script quicker, or give it a larger timeout_ms",
        ) from None
    except Cancelled:
        if runtime is not None:
            await runtime.terminate()
        raise EvaluateCancelled(
            f"{budget.label}: the script was stopped ({budget.cancel_reason})"
        ) from None
    except asyncio.CancelledError:
        if runtime is not None:
            await asyncio.shield(runtime.terminate())
        raise


def _unpack(found: dict[str, Any], tab: Tab, *, ref: str = "") -> Any:
    details = found.get("exceptionDetails")
    if details:
        exception = details.get("exception", {})
        text = exception.get("description") or details.get("text") or "the script threw"
        raise EvaluateError(f"the script threw: {text.splitlines()[0][:500]}")
    what = tab.refs[ref].describe() if ref in tab.refs else ref
    return _decode(found.get("result", {}).get("value"), tab.config.evaluate_max_result_chars, what)


def _decode(out: Any, cap: int, what: str) -> Any:
    """The script's value; ``what`` names the ref it ran on (for a stale one's error)."""
    if not isinstance(out, dict):
        raise EvaluateError("the script's result came back malformed")
    if out.get("stale"):
        raise stale_ref(what, out["stale"])
    if "error" in out:
        raise EvaluateError(str(out["error"]).splitlines()[0][:500])
    if "size" in out:
        raise EvaluateError(
            f"the result is {out['size']} characters of JSON, more than the cap of {cap}",
            hint="return less: select fields, slice lists, or cut long text in the script",
        )
    try:
        return json.loads(out["json"])
    except RecursionError:  # JSON.stringify writes what Python's parser can't read back
        raise EvaluateError(
            "the result nests arrays and objects too deep to read",
            hint="return a flatter value: select fields in the script",
        ) from None


def _settle(tasks: set[asyncio.Task[object]]) -> Callable[[asyncio.Task[object]], None]:
    """A done-callback that forgets the task and swallows its error: the attach it made
    was best effort (the frame may be gone already)."""

    def done(task: asyncio.Task[object]) -> None:
        tasks.discard(task)
        if not task.cancelled():
            task.exception()

    return done


def _terminations(tab: Tab) -> int:
    return tab.runtime.terminations if tab.runtime is not None else 0


def _record(
    tab: Tab,
    route: str,
    error: BaseException | None,
    started: float,
    reason: str,
    terminated_before: int,
) -> None:
    if error is None:
        outcome, code = "ok", ""
    elif isinstance(error, EvaluateTimeout | BudgetExceeded):
        outcome, code = "timeout", getattr(error, "code", "")
    elif isinstance(error, Cancelled | asyncio.CancelledError):
        outcome, code = "cancelled", getattr(error, "code", "cancelled")
    else:
        outcome, code = "error", getattr(error, "code", "error")
    seconds = time.monotonic() - started
    EVALUATIONS.inc(route=route, outcome=outcome)
    EVALUATE_SECONDS.observe(seconds, route=route)
    if route == "playwright" and reason:
        EVALUATE_FALLBACKS.inc(reason=reason)
    tab.evaluations.append(
        Evaluation(
            route=route,
            outcome=outcome,
            duration_ms=int(seconds * 1000),
            terminated=_terminations(tab) > terminated_before,
            fallback_reason=reason if route == "playwright" else "",
            error_code=code,
        )
    )
