"""The browser layer: sessions, tab groups, role snapshots with refs, the browser's actions
(assembled with the other tools in :mod:`automation.actions`), URL policy, page problems."""

from __future__ import annotations

from typing import TYPE_CHECKING

from automation.lazy import lazy_names

if TYPE_CHECKING:  # what type checkers and editors see; at run time each name loads on first use
    from automation.browser.config import BrowserConfig
    from automation.browser.problems import ProblemWatcher
    from automation.browser.session import BrowserSession
    from automation.browser.snapshot import RefEntry, Snapshot, SnapshotOptions
    from automation.browser.tab import Tab
    from automation.browser.tabs import TabGroup
    from automation.browser.url_policy import UrlPolicy

# Each public name and the module that defines it, imported when the name is first asked for
# (PEP 562): a module of this package that needs no Playwright (config, url_policy) loads
# without it.
_MODULE_OF: dict[str, str] = {
    "BrowserConfig": "automation.browser.config",
    "BrowserSession": "automation.browser.session",
    "ProblemWatcher": "automation.browser.problems",
    "RefEntry": "automation.browser.snapshot",
    "Snapshot": "automation.browser.snapshot",
    "SnapshotOptions": "automation.browser.snapshot",
    "Tab": "automation.browser.tab",
    "TabGroup": "automation.browser.tabs",
    "UrlPolicy": "automation.browser.url_policy",
}

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


__getattr__, __dir__ = lazy_names(__name__, _MODULE_OF, globals())
