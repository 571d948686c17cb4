"""How a session launches Chromium: its switches, its sandbox, and the Playwright driver's
compile cache.

Every launched Chromium gets the config's switches (``QUIET_CHROMIUM_ARGS`` by default:
no calls home), the egress proxy's (:func:`proxy_args`: every connection through it,
loopback included, and no WebRTC UDP around it), and site isolation
(:data:`ISOLATION_ARGS`), and keeps the limits Playwright's own switches turn off
(:data:`KEPT_LIMITS`).  Chromium's sandbox is on unless this process is root
(:func:`chromium_sandbox`).  Playwright's driver (the Node.js process it talks to) starts
with Node.js's compile cache, in the user's own cache folder (:func:`node_compile_cache`):
each start after the first reuses the code V8 compiled before (about half the start, a
fifth of its CPU).
"""

from __future__ import annotations

import os

__all__ = [
    "ISOLATION_ARGS",
    "KEPT_LIMITS",
    "SANDBOX_HINT",
    "chromium_sandbox",
    "node_compile_cache",
    "proxy_args",
]

SANDBOX_HINT = (
    "Chromium's sandbox could not start: run the server as a user other than root with "
    "unprivileged user namespaces allowed (sysctl kernel.unprivileged_userns_clone=1; on "
    "Ubuntu also kernel.apparmor_restrict_unprivileged_userns=0), or turn the sandbox off "
    "with TABWRIGHT_CHROMIUM_SANDBOX=0"
)


def chromium_sandbox(forced: bool | None, *, euid: int | None = None) -> bool:
    """Whether Chromium runs sandboxed: as forced, else whenever we are not root, where
    Chromium refuses to start sandboxed (it wants an unprivileged user to drop to)."""
    if forced is not None:
        return forced
    return (os.geteuid() if euid is None else euid) != 0


# Each site's frames in a process of their own (a page's cross-site iframes too): the full
# Chromium does so by default, its headless shell only when told.  The engine's frame
# handling (an out-of-process frame's own CDP session, the evaluate engine's watch on
# them) is then the same with either, and a renderer a page took over reads no other site.
ISOLATION_ARGS = ("--site-per-process",)


# Playwright launches Chromium with ``--disable-ipc-flooding-protection`` (for its test
# runner's speed); that turns off Chromium's limit on a page's navigations (200 per 10 s a
# frame: ``history.pushState``, ``location.hash``...).  Measured on Chromium 156: a page
# calling pushState in a loop then floods the browser process's UI thread, which every
# context of the browser shares: another context's tab neither evaluates nor clicks, a new
# tab doesn't open, the flooding tab doesn't close (not even a DevTools command of our own
# connection is answered within 10 s).  With the limit kept, all of it answers within a
# second, and the page gets what a person's browser gives it.
KEPT_LIMITS = ("--disable-ipc-flooding-protection",)


def node_compile_cache() -> None:
    """Playwright's driver inherits this process's environment (it has no other way in):
    ``NODE_COMPILE_CACHE`` there, unless it is set, names the user's own folder for it
    (``$XDG_CACHE_HOME`` or ``~/.cache``, then ``tabwright/node-compile-cache``, made
    private; never a shared one, whose entries would be another user's code to run).  A
    folder that can't be made leaves the cache off."""
    if "NODE_COMPILE_CACHE" in os.environ:
        return
    home = os.path.expanduser("~")
    base = os.environ.get("XDG_CACHE_HOME") or (os.path.join(home, ".cache") if home != "~" else "")
    if not os.path.isabs(base):
        return
    folder = os.path.join(base, "tabwright", "node-compile-cache")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if os.stat(folder).st_uid != os.getuid():
            return
    except OSError:
        return
    os.environ["NODE_COMPILE_CACHE"] = folder


def proxy_args(proxy_url: str) -> list[str]:
    """Chromium's switches that send every connection through the egress proxy."""
    return [
        f"--proxy-server={proxy_url}",
        # Chromium sends loopback hosts around any proxy unless told not to: <-loopback>
        # takes that implicit exception away, so 127.0.0.1 and localhost are judged too.
        "--proxy-bypass-list=<-loopback>",
        # WebRTC would otherwise send UDP (STUN, media) straight to any address a page
        # names.  Measured on Chromium 156: the full Chromium obeys the first switch and
        # ignores the second, its headless shell the other way round; each stops it.
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    ]
