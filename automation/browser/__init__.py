"""The browser layer: sessions, tab groups, role snapshots with refs, actions, URL policy,
page problems."""

from __future__ import annotations

from automation.browser.actions import ACTIONS, ActionSpec, execute, validate
from automation.browser.config import BrowserConfig
from automation.browser.problems import ProblemWatcher
from automation.browser.session import BrowserSession
from automation.browser.snapshot import RefEntry, Snapshot, SnapshotOptions
from automation.browser.tab import Tab
from automation.browser.tabs import TabGroup
from automation.browser.url_policy import UrlPolicy

__all__ = [
    "ACTIONS",
    "ActionSpec",
    "BrowserConfig",
    "BrowserSession",
    "ProblemWatcher",
    "RefEntry",
    "Snapshot",
    "SnapshotOptions",
    "Tab",
    "TabGroup",
    "UrlPolicy",
    "execute",
    "validate",
]
