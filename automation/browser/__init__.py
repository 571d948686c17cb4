"""The browser layer: sessions, tab groups, role snapshots with refs, the browser's actions
(assembled with the other tools in :mod:`automation.actions`), URL policy, page problems."""

from __future__ import annotations

from automation.browser.config import BrowserConfig
from automation.browser.problems import ProblemWatcher
from automation.browser.session import BrowserSession
from automation.browser.snapshot import RefEntry, Snapshot, SnapshotOptions
from automation.browser.tab import Tab
from automation.browser.tabs import TabGroup
from automation.browser.url_policy import UrlPolicy

__all__ = [
    "BrowserConfig",
    "BrowserSession",
    "ProblemWatcher",
    "RefEntry",
    "Snapshot",
    "SnapshotOptions",
    "Tab",
    "TabGroup",
    "UrlPolicy",
]
