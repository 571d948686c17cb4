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

from automation.actions import ACTIONS
from automation.agent.loop import AgentConfig, AgentRun
from automation.agent.parser import Action, parse_reply
from automation.browser import (
    BrowserConfig,
    BrowserSession,
    ProblemWatcher,
    RefEntry,
    Snapshot,
    SnapshotOptions,
    Tab,
    TabGroup,
    UrlPolicy,
)
from automation.budget import Budget
from automation.control import RunControl
from automation.errors import (
    ActionFailed,
    ActionInvalid,
    BrowserClosed,
    BrowserError,
    BudgetExceeded,
    Cancelled,
    CheckFailed,
    EvaluateCancelled,
    EvaluateError,
    EvaluateTimeout,
    HttpStatus,
    LLMError,
    LLMResponseError,
    LLMUnavailable,
    NeedsPerson,
    ParamMissing,
    RefError,
    RefNotFound,
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
    "ListSink",
    "NeedsPerson",
    "ParamMissing",
    "Planner",
    "PlannerReply",
    "PlannerRequest",
    "ProblemWatcher",
    "Recorder",
    "RefEntry",
    "RefError",
    "RefNotFound",
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
