"""Where a called scenario replays when the one that calls it replays elsewhere.

A scenario called by another (a ``call`` step, or its login scenario signing in again)
has a base URL of its own: the folder it was recorded in, which need not be its caller's
(a sign-in at ``http://app/login`` called by an orders scenario recorded under
``http://app/orders``).  When the caller replays at another base URL, the called one
moves as the caller moved (:func:`moved_base`), not into the caller's folder.

Only the standard library, so that a scenario's pytest export (automation.recording.export)
writes the code below its marker into the exported file as it is: the exported test
moves a called scenario's addresses as replay does.
"""

from __future__ import annotations

__all__ = ["moved_base", "normalize_base"]

# -- written into an exported pytest file as it is ----------------------------------
from urllib.parse import urlsplit, urlunsplit

# A last path segment with one of these endings names a file, not a folder.
_FILE_ENDINGS = (".html", ".htm", ".xhtml", ".shtml", ".php", ".asp", ".aspx", ".jsp", ".cgi")


def normalize_base(url: str) -> str:
    """A base URL as the folder it means: without a file name at its end (``index.html``),
    its query and fragment, and a trailing slash."""
    parts = urlsplit(url.strip())
    if not (parts.scheme and parts.netloc):
        return url.strip()
    path = parts.path
    if path.rsplit("/", 1)[-1].lower().endswith(_FILE_ENDINGS):
        path = path.rsplit("/", 1)[0]
    return urlunsplit((parts.scheme, parts.netloc, path.rstrip("/"), "", ""))


def moved_base(base: str, recorded_base: str, base_url: str) -> str:
    """Where a scenario recorded at ``base`` replays when the one that calls it, recorded
    at ``recorded_base``, replays at ``base_url`` (folders, with or without their last
    slash).  Under the caller's folder, it moves along with it; elsewhere on the caller's
    site, to the replay's site, its mount moved as the caller's was (``/orders`` replayed
    at ``/v2/orders``: ``/login`` at ``/v2/login``); on another site, or when nothing
    moved, it stays where it was recorded.  A caller recorded without a base (it only
    calls others) says only where the app is now: the called one moves there; one
    recorded without a base goes where its caller goes."""
    base, old, new = (normalize_base(one) for one in (base, recorded_base, base_url))
    if not base or not old:
        return new or base
    if not new or old == new:
        return base
    at, was, now = urlsplit(base), urlsplit(old), urlsplit(new)
    if (at.scheme, at.netloc) != (was.scheme, was.netloc):
        return base  # another site's: never moved
    if at.path == was.path or at.path.startswith(was.path + "/"):
        return new + at.path[len(was.path) :]
    mount_was, mount_now = was.path.split("/"), now.path.split("/")
    while len(mount_was) > 1 and len(mount_now) > 1 and mount_was[-1] == mount_now[-1]:
        mount_was, mount_now = mount_was[:-1], mount_now[:-1]
    was_mount, now_mount = "/".join(mount_was), "/".join(mount_now)
    path = at.path
    if path == was_mount or path.startswith(was_mount + "/"):
        path = now_mount + path[len(was_mount) :]
    return f"{now.scheme}://{now.netloc}{path}"
