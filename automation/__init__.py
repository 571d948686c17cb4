"""Tabwright's engine: drive a real Chromium by role snapshots and refs, with budgets.

Usable as a library without the dashboard::

    from automation import BrowserSession, Budget

    async with BrowserSession() as browser:
        tab = await browser.new_tab()
        await tab.navigate("https://example.org")
        snap = await tab.snapshot()
        await tab.click("e3", budget=Budget(5_000))

``python -m automation`` runs one action from a shell (see :mod:`automation.cli`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from automation.lazy import lazy_names

if TYPE_CHECKING:  # what type checkers and editors see; at run time each name loads on first use
    from automation.actions import ACTIONS
    from automation.agent.loop import AgentConfig, AgentRun
    from automation.agent.parser import Action, parse_reply
    from automation.browser.config import BrowserConfig
    from automation.browser.problems import ProblemWatcher
    from automation.browser.session import BrowserSession
    from automation.browser.snapshot import RefEntry, Snapshot, SnapshotOptions
    from automation.browser.tab import Tab
    from automation.browser.tabs import TabGroup
    from automation.browser.url_policy import UrlPolicy
    from automation.budget import Budget
    from automation.control import RunControl
    from automation.errors import (
        ActionFailed,
        ActionInvalid,
        BrowserClosed,
        BrowserError,
        BudgetExceeded,
        CallCycle,
        CallMissing,
        Cancelled,
        CheckFailed,
        EvaluateCancelled,
        EvaluateError,
        EvaluateTimeout,
        HttpStatus,
        LedElsewhere,
        LLMError,
        LLMResponseError,
        LLMUnavailable,
        NeedsPerson,
        NothingSent,
        PageHung,
        ParamMissing,
        RefError,
        RefNotFound,
        RefusedInPlace,
        RefusedWhereItLed,
        ScenarioInvalid,
        StaleRef,
        StepFailed,
        TabwrightError,
        UnexpectedDialog,
        UrlBlocked,
    )
    from automation.events import Event, EventSink, ListSink
    from automation.llm.base import Planner, PlannerReply, PlannerRequest
    from automation.recording.recorder import Recorder
    from automation.recording.replay import Replay, ReplayConfig, ReplayResult
    from automation.recording.scenario import Scenario, ScenarioStep

# Each public name and the module that defines it.  Importing one module of the engine (say
# automation.errors) must not load Playwright, the agent loop and the LLM clients with it, so
# a name's module is imported only when the name is first asked for (PEP 562).
_MODULE_OF: dict[str, str] = {
    "ACTIONS": "automation.actions",
    "AgentConfig": "automation.agent.loop",
    "AgentRun": "automation.agent.loop",
    "Action": "automation.agent.parser",
    "parse_reply": "automation.agent.parser",
    "BrowserConfig": "automation.browser.config",
    "BrowserSession": "automation.browser.session",
    "ProblemWatcher": "automation.browser.problems",
    "RefEntry": "automation.browser.snapshot",
    "Snapshot": "automation.browser.snapshot",
    "SnapshotOptions": "automation.browser.snapshot",
    "Tab": "automation.browser.tab",
    "TabGroup": "automation.browser.tabs",
    "UrlPolicy": "automation.browser.url_policy",
    "Budget": "automation.budget",
    "RunControl": "automation.control",
    "ActionFailed": "automation.errors",
    "ActionInvalid": "automation.errors",
    "BrowserClosed": "automation.errors",
    "BrowserError": "automation.errors",
    "BudgetExceeded": "automation.errors",
    "CallCycle": "automation.errors",
    "CallMissing": "automation.errors",
    "Cancelled": "automation.errors",
    "CheckFailed": "automation.errors",
    "EvaluateCancelled": "automation.errors",
    "EvaluateError": "automation.errors",
    "EvaluateTimeout": "automation.errors",
    "HttpStatus": "automation.errors",
    "LedElsewhere": "automation.errors",
    "LLMError": "automation.errors",
    "LLMResponseError": "automation.errors",
    "LLMUnavailable": "automation.errors",
    "NeedsPerson": "automation.errors",
    "NothingSent": "automation.errors",
    "PageHung": "automation.errors",
    "ParamMissing": "automation.errors",
    "RefusedInPlace": "automation.errors",
    "RefusedWhereItLed": "automation.errors",
    "RefError": "automation.errors",
    "RefNotFound": "automation.errors",
    "ScenarioInvalid": "automation.errors",
    "StaleRef": "automation.errors",
    "StepFailed": "automation.errors",
    "TabwrightError": "automation.errors",
    "UnexpectedDialog": "automation.errors",
    "UrlBlocked": "automation.errors",
    "Event": "automation.events",
    "EventSink": "automation.events",
    "ListSink": "automation.events",
    "Planner": "automation.llm.base",
    "PlannerReply": "automation.llm.base",
    "PlannerRequest": "automation.llm.base",
    "Recorder": "automation.recording.recorder",
    "Replay": "automation.recording.replay",
    "ReplayConfig": "automation.recording.replay",
    "ReplayResult": "automation.recording.replay",
    "Scenario": "automation.recording.scenario",
    "ScenarioStep": "automation.recording.scenario",
}

__all__ = [
    "ACTIONS",
    "Action",
    "ActionFailed",
    "ActionInvalid",
    "AgentConfig",
    "AgentRun",
    "BrowserClosed",
    "BrowserConfig",
    "BrowserError",
    "BrowserSession",
    "Budget",
    "BudgetExceeded",
    "CallCycle",
    "CallMissing",
    "Cancelled",
    "CheckFailed",
    "EvaluateCancelled",
    "EvaluateError",
    "EvaluateTimeout",
    "Event",
    "EventSink",
    "HttpStatus",
    "LLMError",
    "LLMResponseError",
    "LLMUnavailable",
    "LedElsewhere",
    "ListSink",
    "NeedsPerson",
    "NothingSent",
    "PageHung",
    "ParamMissing",
    "Planner",
    "PlannerReply",
    "PlannerRequest",
    "ProblemWatcher",
    "Recorder",
    "RefEntry",
    "RefError",
    "RefNotFound",
    "RefusedInPlace",
    "RefusedWhereItLed",
    "Replay",
    "ReplayConfig",
    "ReplayResult",
    "RunControl",
    "Scenario",
    "ScenarioInvalid",
    "ScenarioStep",
    "Snapshot",
    "SnapshotOptions",
    "StaleRef",
    "StepFailed",
    "Tab",
    "TabGroup",
    "TabwrightError",
    "UnexpectedDialog",
    "UrlBlocked",
    "UrlPolicy",
    "parse_reply",
]


__getattr__, __dir__ = lazy_names(__name__, _MODULE_OF, globals())
