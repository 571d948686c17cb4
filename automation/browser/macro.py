"""Several safe steps on one tab in one call: click → wait → read without a model round trip.

A macro is a list of at most :data:`MAX_STEPS` steps of five kinds only: ``wait_for``,
``read_page``, ``click`` and ``fill`` (by ref, or by backend node id) and ``navigate`` (an
explicit url, under the URL policy).  No scripts, no other tabs, no dialogs answered.  The
whole macro is validated before anything runs; then each step runs through the same
action code, refs checked fail-closed, inside the caller's budget (and, when given,
``per_step_timeout_ms`` each).  With ``fail_fast`` (the default) the first failure skips
the rest.  ``return_mode`` says which pages come back: the ``final`` read_page, ``all`` of
them, or the final one as a ``delta`` since the tab's previous snapshot.

Each step runs as its single action (:data:`automation.browser.actions.BROWSER_ACTIONS`),
validated by that action's own spec; the macro is offered as the ``steps`` action
(:data:`MACRO_ACTIONS`), which the registry (:mod:`automation.actions`) lists with the others.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Error as PlaywrightError

from automation.actionspec import ActionSpec, Param, optional
from automation.browser.actions import BROWSER_ACTIONS, read_page
from automation.browser.tab import Tab, Target
from automation.budget import Budget, timeout_ms_of
from automation.errors import (
    ActionInvalid,
    BrowserClosed,
    Cancelled,
    RefNotFound,
    StepFailed,
    TabwrightError,
)

__all__ = [
    "MACRO_ACTIONS",
    "MAX_STEPS",
    "RETURN_MODES",
    "STEP_KINDS",
    "Macro",
    "MacroResult",
    "StepResult",
    "read_page",
    "run_macro",
]

MAX_STEPS = 10
STEP_KINDS = ("wait_for", "read_page", "click", "fill", "navigate")
RETURN_MODES = ("final", "all", "delta")
_WAIT_KEYS = ("text", "text_gone", "ref", "state", "url", "load_state", "time_ms")


@dataclass(frozen=True)
class StepResult:
    index: int
    type: str
    ok: bool
    duration_ms: int = 0
    url: str = ""
    error: dict[str, str] | None = None
    skipped: bool = False
    page: str = ""  # a read_page's text, when the return mode keeps it
    # For recording, not sent back: the step's args as it ran (a backend node id turned
    # into its ref) and the element it acted on, taken before it ran.
    args: dict[str, Any] = field(default_factory=dict, compare=False)
    target: Target | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "type": self.type,
            "ok": self.ok,
            "skipped": self.skipped,
            "duration_ms": self.duration_ms,
            "url": self.url,
            "error": self.error,
        }


@dataclass(frozen=True)
class MacroResult:
    steps: list[StepResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)

    @property
    def failed_index(self) -> int | None:
        return next((s.index for s in self.steps if not s.ok and not s.skipped), None)

    def error(self) -> StepFailed:
        """The failure of the whole call: the first failing step, by index and error."""
        index = self.failed_index
        assert index is not None, "the macro did not fail"
        failed = self.steps[index]
        assert failed.error is not None
        return StepFailed(
            f"step {index} ({failed.type}) failed: [{failed.error['code']}] "
            f"{failed.error['message']}",
            index=index,
            hint=failed.error.get("hint", ""),
        )

    def answer(self) -> dict[str, Any]:
        """The act entry points' answer: ok, the text the model would read, each step's
        outcome, and on failure the failing step's index and error."""
        answer: dict[str, Any] = {"ok": self.ok, "result": self.to_text()}
        if not self.ok:
            answer["error"] = self.error().to_dict()
            answer["failed_index"] = self.failed_index
        answer["steps"] = [s.to_dict() for s in self.steps]
        return answer

    def to_text(self) -> str:
        """The small answer the model reads: one line a step, then the pages kept."""
        lines = []
        for s in self.steps:
            if s.skipped:
                lines.append(f"{s.index} {s.type}: skipped")
            elif s.ok:
                lines.append(f"{s.index} {s.type}: ok ({s.duration_ms} ms) {s.url}")
            else:
                assert s.error is not None
                lines.append(f"{s.index} {s.type}: ERROR [{s.error['code']}] {s.error['message']}")
        pages = [s.page for s in self.steps if s.page]
        return "\n".join(lines + pages)


@dataclass(frozen=True)
class Macro:
    steps: tuple[dict[str, Any], ...]
    fail_fast: bool = True
    return_mode: str = "final"
    per_step_timeout_ms: float | None = None

    @classmethod
    def parse(cls, args: dict[str, Any]) -> Macro:
        """Check the whole macro before any step runs; ActionInvalid names what is wrong."""
        steps = args.get("steps")
        if not isinstance(steps, list) or not steps:
            raise ActionInvalid("steps must be a non-empty list")
        if len(steps) > MAX_STEPS:
            raise ActionInvalid(f"at most {MAX_STEPS} steps in one call, got {len(steps)}")
        fail_fast = args.get("fail_fast", True)
        if not isinstance(fail_fast, bool):
            raise ActionInvalid("fail_fast must be true or false")
        mode = args.get("return_mode", "final")
        if mode not in RETURN_MODES:
            raise ActionInvalid(f"return_mode must be one of {', '.join(RETURN_MODES)}")
        per_step = args.get("per_step_timeout_ms")
        if per_step is not None:
            per_step = timeout_ms_of(per_step, what="per_step_timeout_ms")
        checked = tuple(_check_step(i, step) for i, step in enumerate(steps))
        return cls(checked, fail_fast, mode, per_step)


def _check_step(index: int, step: object) -> dict[str, Any]:
    if not isinstance(step, dict):
        raise ActionInvalid(f"step {index}: expected an object")
    kind = step.get("type")
    if kind is None:  # ("action": "click", as a scenario's step says it, is the usual slip)
        raise ActionInvalid(
            f"step {index}: it has no type (its keys: {', '.join(map(str, step)) or 'none'})",
            hint='each step names its type: {"type": "click", "ref": "e3"}; types: '
            + ", ".join(STEP_KINDS),
        )
    if kind not in STEP_KINDS:
        raise ActionInvalid(
            f"step {index}: {kind!r} is not a step type",
            hint="steps may only be " + ", ".join(STEP_KINDS),
        )
    if kind in ("click", "fill"):
        ref, node = step.get("ref"), step.get("backend_node_id")
        if not (isinstance(ref, str) and ref) and not (
            isinstance(node, int) and not isinstance(node, bool) and node > 0
        ):
            raise ActionInvalid(f"step {index}: {kind} needs a ref or a backend_node_id")
    if kind == "fill" and not isinstance(step.get("value"), str):
        raise ActionInvalid(f"step {index}: fill needs a value (text)")
    if kind == "read_page" and not isinstance(step.get("link_urls", False), bool):
        raise ActionInvalid(f"step {index}: read_page's link_urls must be true or false")
    if kind == "navigate" and not (isinstance(step.get("url"), str) and step["url"]):
        raise ActionInvalid(f"step {index}: navigate needs an explicit url")
    if kind == "wait_for" and not any(step.get(k) is not None for k in _WAIT_KEYS):
        raise ActionInvalid(f"step {index}: wait_for needs one of {', '.join(_WAIT_KEYS)}")
    return dict(step)


OnStep = Callable[[StepResult], Awaitable[None]]

# The single actions a step runs as (read_page aside: the macro keeps its text).
_STEP_ACTIONS: dict[str, ActionSpec] = {s.name: s for s in BROWSER_ACTIONS if s.name in STEP_KINDS}


async def run_macro(
    tab: Tab,
    macro: Macro,
    *,
    budget: Budget,
    on_step: OnStep | None = None,
    record: bool = False,
) -> MacroResult:
    """Run the steps in order.  ``on_step`` hears each step that ran as soon as it ends;
    with ``record`` each click and fill first takes its element's identity (a step whose
    ref went stale fails there, before acting)."""
    results: list[StepResult] = []
    last_read = max((i for i, s in enumerate(macro.steps) if s["type"] == "read_page"), default=-1)
    failed = False
    for index, step in enumerate(macro.steps):
        kind = step["type"]
        if failed and macro.fail_fast:
            results.append(StepResult(index, kind, False, skipped=True))
            continue
        step_budget = budget.child(macro.per_step_timeout_ms, label=f"step {index} {kind}")
        started = time.monotonic()
        args = {k: v for k, v in step.items() if k not in ("type", "backend_node_id")}
        target, page, error = None, "", None
        try:
            if kind in ("click", "fill") and not args.get("ref"):
                args["ref"] = await _ref_of_node(tab, step["backend_node_id"], step_budget)
            if kind in ("click", "fill"):
                target = await _target(tab, args["ref"], step_budget, record)
            if kind == "read_page":
                delta = macro.return_mode == "delta" and index == last_read
                links = step.get("link_urls", False)
                text = await read_page(tab, delta=delta, link_urls=links, budget=step_budget)
                if macro.return_mode == "all" or index == last_read:
                    page = text
            else:
                await _STEP_ACTIONS[kind].execute(tab, args, budget=step_budget)
        except (Cancelled, BrowserClosed):
            raise
        except TabwrightError as exc:
            failed, error = True, exc.to_dict()
        done = StepResult(
            index, kind, error is None, _ms(started), tab.url, error, False, page, args, target
        )
        results.append(done)
        if on_step is not None:
            await on_step(done)
    return MacroResult(results)


async def _target(tab: Tab, ref: str, budget: Budget, record: bool) -> Target:
    return await tab.target(ref, budget=budget) if record else tab.known_target(ref)


async def _ref_of_node(tab: Tab, backend_node_id: int, budget: Budget) -> str:
    """The ref the tab's latest snapshot gave the element with this backend node id."""
    for ref, known in tab.state.backend_ids.items():
        if known == backend_node_id and ref in tab.refs:
            return ref
    session = tab.cdp
    if session is None:
        raise RefNotFound(f"backend node {backend_node_id} can't be looked up in this tab")
    try:
        node = await budget.run(session.send("DOM.resolveNode", {"backendNodeId": backend_node_id}))
        found = await budget.run(
            session.send(
                "Runtime.callFunctionOn",
                {
                    "objectId": node["object"]["objectId"],
                    "functionDeclaration": "function () { return window.__tabwright ? "
                    "window.__tabwright.refOf(this) : null; }",
                    "returnByValue": True,
                },
            )
        )
    except PlaywrightError:  # the node is gone, or was never in this page
        found = {}
    ref = found.get("result", {}).get("value") if found else None
    if not ref or ref not in tab.refs:
        raise RefNotFound(
            f"backend node {backend_node_id} is not an element of the latest snapshot",
            hint="take a new snapshot and use its refs",
        )
    tab.state.backend_ids[ref] = backend_node_id
    return str(ref)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


async def _steps(tab: Tab, args: dict[str, Any], budget: Budget) -> str:
    result = await run_macro(tab, Macro.parse(args), budget=budget)
    if not result.ok:
        raise result.error()
    return result.to_text()


MACRO_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec(
        "steps",
        f"up to {MAX_STEPS} steps in one call: "
        '{"type": "click"|"fill", "ref", "value"?}, {"type": "wait_for", ...wait_for keys}, '
        '{"type": "navigate", "url"}, {"type": "read_page"}; one line a step back',
        (
            Param("steps", list, "the steps, in order"),
            optional("fail_fast", bool, "stop at the first failing step (default true)"),
            optional("return_mode", str, "final (default), all, or delta: which read_page"),
            optional("per_step_timeout_ms", int, "budget of each step"),
        ),
        _steps,
        check=Macro.parse,
    ),
)
