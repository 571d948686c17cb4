"""How to reach a browser: launch Chromium through Playwright, or connect to one by CDP URL."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace

from automation.browser.url_policy import UrlPolicy

__all__ = [
    "CHROMIUM",
    "HEADLESS_SHELL",
    "QUIET_CHROMIUM_ARGS",
    "TAB_SETTINGS",
    "BrowserConfig",
    "default_chromium",
]

# Debian's Chromium, and its headless shell (package chromium-headless-shell): Chromium's
# headless mode as a program of its own, without the browser's UI and profile services --
# what Playwright itself launches for a headless browser.  Measured on Chromium 156: a new
# page costs about a quarter of the CPU in the shell (~80 ms against ~350 ms), a navigation
# about a third.  A headed browser needs the full one.
CHROMIUM = "/usr/bin/chromium"
HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell"  # (/usr/bin's wrapper doesn't exec it)


def default_chromium(*, headless: bool = True) -> str:
    """The Chromium to launch when none is named: the headless shell when headless and
    installed, else the full Chromium."""
    if headless and os.access(HEADLESS_SHELL, os.X_OK):
        return HEADLESS_SHELL
    return CHROMIUM


# Where Chromium sends what it would send home: an address on port 1, which Chromium refuses
# to connect to (an unsafe port), so the call ends inside the browser and reaches no proxy.
NOWHERE = "http://localhost:1/"

# Keep Chromium from calling home: on a closed network every such call fails noisily, and
# through the egress proxy it is a refused connection in the logs.  Measured on Chromium 156
# (test_egress.py watches an idle browser with a form filled in): the switches here and
# Playwright's own leave three kinds of call that no switch or policy turns off -- the
# account consistency check (accounts.google.com/ListAccounts), an on-demand component
# update (update.googleapis.com, despite --disable-component-update and the
# ComponentUpdatesEnabled policy) and autofill's form queries (content-autofill) -- so their
# servers are moved to NOWHERE.  No --disable-features here: it would replace the list
# Playwright passes (which turns off optimization hints and network time queries).
QUIET_CHROMIUM_ARGS = (
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
    f"--gaia-url={NOWHERE}",
    f"--component-updater=url-source={NOWHERE}",
    f"--autofill-server-url={NOWHERE}",
)


@dataclass(frozen=True)
class BrowserConfig:
    executable_path: str = ""  # empty: default_chromium() for the headless setting
    cdp_url: str = ""  # when set, connect instead of launching
    headless: bool = True
    args: tuple[str, ...] = QUIET_CHROMIUM_ARGS
    viewport_width: int = 1280
    viewport_height: int = 800
    launch_timeout_ms: int = 30_000
    action_timeout_ms: int = 15_000  # the default when a caller gives no budget
    url_policy: UrlPolicy = field(default_factory=UrlPolicy)
    # Chromium's own sandbox: None decides (on unless this process is root, where Chromium
    # refuses to start with it); True or False forces it (TABWRIGHT_CHROMIUM_SANDBOX=1|0).
    chromium_sandbox: bool | None = None
    upload_dir: str = ""  # files the agent may attach to file inputs; empty: uploads off
    # Running page JavaScript (the evaluate action) is for operators who trust their users
    # and models; when on, a launched Chromium also listens on a loopback debugging port.
    evaluate_enabled: bool = False
    evaluate_max_result_chars: int = 1_000_000
    # Programs the shell action may run in the run's workspace, by bare name ("wc", "python3");
    # empty: no shell.  An allowed program can read and write whatever the server's user can.
    shell_commands: tuple[str, ...] = ()
    shell_timeout_ms: int = 30_000  # one command's limit (the call's budget may be shorter)
    # Tabs one run may hold; a page the site opens past it is closed at once, and reported.
    max_tabs: int = 20
    # Bytes one download may take: past them it is cancelled as it comes, and said so.
    max_download_bytes: int = 1024 * 1024 * 1024
    # A launched browser is replaced after this many contexts (runs, replays, sessions): the
    # next context opens in a new one, the old closes after its last context.  0: never.
    contexts_per_browser: int = 200
    # How long a snapshot's full walk may take in the page before the snapshot is reduced
    # to the elements one can act on (0: half of the snapshot's budget).
    snapshot_full_pass_ms: int = 0

    def launch_settings(self) -> BrowserConfig:
        """This config with each tab's own settings (TAB_SETTINGS) at their defaults: two
        configs with equal launch settings can share a browser."""
        return replace(self, **_TAB_DEFAULTS)


# The settings of a tab, not of its browser: a browser launched with any of them serves a
# tab with any other (BrowserSession.new_tab's ``config``), so runs that differ only in
# these share one.  evaluate_enabled is not one: it also opens the browser's debugging port.
TAB_SETTINGS = frozenset({
    "action_timeout_ms",
    "upload_dir",
    "evaluate_max_result_chars",
    "shell_commands",
    "shell_timeout_ms",
    "max_tabs",
    "max_download_bytes",
    "snapshot_full_pass_ms",
})  # fmt: skip
_TAB_DEFAULTS = {f.name: f.default for f in fields(BrowserConfig) if f.name in TAB_SETTINGS}
