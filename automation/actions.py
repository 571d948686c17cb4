"""The one registry of the actions an agent may call: the browser's
(:mod:`automation.browser.actions`) and their macro (:mod:`automation.browser.macro`), the
workspace files' (:mod:`automation.tools.files`) and the shell (:mod:`automation.tools.shell`).
Adding a spec to one of those tuples is all it takes to offer it: the system prompt, the
native tool definitions, validation and the act entry points (HTTP, WebSocket, command line)
all read :data:`ACTIONS`.  Each spec validates and runs itself (:mod:`automation.actionspec`);
this module finds it by name.

Every action also takes ``timeout_ms``: it narrows the caller's budget for that one call.
"""

from __future__ import annotations

from typing import Any

from automation.actionspec import ActionSpec, Param
from automation.browser.actions import BROWSER_ACTIONS, EVALUATE_ACTIONS
from automation.browser.config import BrowserConfig
from automation.browser.emulation import EMULATION_ACTIONS
from automation.browser.fieldops import OnField
from automation.browser.lookup import LOOKUP_ACTIONS
from automation.browser.macro import MACRO_ACTIONS, Macro, MacroResult, OnStep, run_macro
from automation.browser.tab import Tab
from automation.budget import MAX_TIMEOUT_MS, Budget
from automation.errors import ActionInvalid
from automation.recording.verify import VERIFY_ACTIONS
from automation.tools.files import FILE_ACTIONS
from automation.tools.shell import SHELL_ACTIONS

__all__ = [
    "ACTIONS",
    "MAX_TIMEOUT_MS",
    "OPENED_WAIT_MS",
    "ActionSpec",
    "Param",
    "act",
    "available",
    "execute",
    "execute_form",
    "execute_steps",
    "opened_since",
    "tabs_known",
    "validate",
]

OPENED_WAIT_MS = 5_000  # how long a tab an action opened is waited for

ACTIONS: dict[str, ActionSpec] = {
    spec.name: spec
    for spec in (
        *BROWSER_ACTIONS, *MACRO_ACTIONS, *EVALUATE_ACTIONS, *LOOKUP_ACTIONS,
        *EMULATION_ACTIONS, *VERIFY_ACTIONS, *FILE_ACTIONS, *SHELL_ACTIONS,
    )
}  # fmt: skip


def available(config: BrowserConfig) -> list[ActionSpec]:
    """The actions this browser config offers the model (evaluate only when the operator
    allows it)."""
    return [spec for spec in ACTIONS.values() if spec.for_agent and spec.enabled(config)]


def validate(
    name: str, args: dict[str, Any], *, strict: bool = False, exact: bool = False
) -> dict[str, Any]:
    """Check ``args`` against the action's params; return only the known ones (and a
    valid ``timeout_ms``); ``strict``: refuse one it doesn't take; ``exact``: refuse a
    number given for a text (:meth:`ActionSpec.validate`)."""
    return _spec(name).validate(args, strict=strict, exact=exact)


def _spec(name: str) -> ActionSpec:
    spec = ACTIONS.get(name)
    if spec is None:
        raise ActionInvalid(
            f"unknown action {name!r}",
            hint="known actions: " + ", ".join(sorted(ACTIONS)),
        )
    return spec


async def execute(tab: Tab, name: str, args: dict[str, Any], *, budget: Budget) -> str:
    """Validate and run one action; returns the result line for the model."""
    return await _spec(name).execute(tab, args, budget=budget)


async def execute_steps(
    tab: Tab,
    args: dict[str, Any],
    *,
    budget: Budget,
    on_step: OnStep | None = None,
    record: bool = False,
) -> MacroResult:
    """A ``steps`` call with each step's outcome (``execute`` gives only the text, and
    raises StepFailed when a step failed)."""
    clean, call_budget = _spec("steps").prepare(args, budget)
    macro = Macro.parse(clean)
    return await run_macro(tab, macro, budget=call_budget, on_step=on_step, record=record)


async def execute_form(
    tab: Tab, args: dict[str, Any], *, budget: Budget, on_field: OnField | None = None
) -> str:
    """A ``fill_form`` call that tells ``on_field`` of each field as the step it is."""
    clean, call_budget = _spec("fill_form").prepare(args, budget)
    return await tab.fill_form(clean["fields"], budget=call_budget, on_field=on_field)


async def act(tab: Tab, name: str, args: dict[str, Any], *, budget: Budget) -> dict[str, Any]:
    """The answer of the act entry points (HTTP, WebSocket, command line) to one call:
    ``{"ok": true, "result": text}``; a ``steps`` call adds each step's outcome and, when
    one failed, ``"ok": false`` with its index and error.  A failing single action raises,
    for the entry point to answer.  A tab the call opened is told at the result's end
    (:func:`opened_since`)."""
    known = await tabs_known(tab)
    if name != "steps":
        result = await execute(tab, name, args, budget=budget)
        return {"ok": True, "result": result + await opened_since(tab, known, budget)}
    answer = (await execute_steps(tab, args, budget=budget)).answer()
    answer["result"] += await opened_since(tab, known, budget)
    return answer


async def tabs_known(tab: Tab) -> set[str]:
    """The tabs of ``tab``'s group before an action, to tell the ones it opens."""
    if tab.group is None:
        return set()
    await tab.group.sync()
    return tab.group.target_ids()


async def opened_since(
    tab: Tab, known: set[str], budget: Budget, *, wait_ms: float = OPENED_WAIT_MS
) -> str:
    """What an action's result adds of the tabs ``tab``'s page opened since ``known``
    (:func:`tabs_known` before it): a popup, a ``target=_blank`` page, each waited for (up
    to ``wait_ms``) until the group holds it, so a ``tabs`` select right after finds it
    (:meth:`~automation.browser.tabs.TabGroup.opened_by`); "" for none.  The current tab
    stays current: whoever acts is told where to go."""
    group = tab.group
    if group is None:
        return ""
    opened, loading = await group.opened_by(
        tab, known, budget.child(wait_ms, label="a tab the action opened")
    )
    said = [
        f"\nit opened tab {group.tabs.index(new)} ({new.url}); this one stays current: "
        f"tabs with op select and index {group.tabs.index(new)} acts there"
        for new in opened
    ]
    said += [
        f"\nit opened a tab still loading{' ' + url if url else ''}: tabs with op list "
        "shows it once its page has come"
        for url in loading
    ]
    return "".join(said)
