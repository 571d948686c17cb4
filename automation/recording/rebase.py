"""Where a scenario's URLs lead when it replays on another build or address.

A scenario's base URL is read as the folder it means (:func:`normalize_base`: without a
file name like ``index.html`` at its end, its query and fragment).  A navigation recorded
under it moves to the replay's base URL (:func:`rebase`), and so does where a step's
element leads (a link's target, and its variants': :func:`rebase_identity`), so the
identity found on one build is looked for as it is on the other; URLs of other origins
stay as they are.  :func:`first_folder` gives a recording its base URL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from automation.browser.identity import ElementIdentity
from automation.recording.basemove import normalize_base

if TYPE_CHECKING:
    from automation.recording.scenario import ScenarioStep

__all__ = ["first_folder", "normalize_base", "rebase", "rebase_identity"]


def rebase(url: str, recorded_base: str, base_url: str) -> str:
    """``url`` moved from the origin it was recorded on to ``base_url`` (other origins, and
    everything when either base is missing, stay as they are).  Both bases are read as
    folders (:func:`normalize_base`)."""
    if not recorded_base or not base_url:
        return url
    recorded_base, base_url = normalize_base(recorded_base), normalize_base(base_url)
    old, new, now = urlsplit(recorded_base), urlsplit(base_url), urlsplit(url)
    if (now.scheme, now.netloc) != (old.scheme, old.netloc) or recorded_base == base_url:
        return url
    prefix = old.path.rstrip("/")
    if prefix and now.path == prefix:  # the base's own page (http://app/login): no slash added
        return urlunsplit((new.scheme, new.netloc, new.path, now.query, now.fragment))
    inside = prefix and now.path.startswith(prefix + "/")  # a folder's, not /login-help
    path = now.path[len(prefix) :] if inside else now.path
    joined = new.path.rstrip("/") + (path if path.startswith("/") else "/" + path)
    return urlunsplit((new.scheme, new.netloc, joined, now.query, now.fragment))


def rebase_identity(
    identity: ElementIdentity, recorded_base: str, base_url: str
) -> ElementIdentity:
    """``identity`` with where it leads (and where its variants lead) moved as
    :func:`rebase` moves a navigation, when it leads under ``recorded_base`` (elsewhere
    it stays)."""
    if not recorded_base or not base_url or not any(i.target for i in identity.every()):
        return identity
    old = urlsplit(normalize_base(recorded_base))

    def moved(one: ElementIdentity) -> ElementIdentity:
        now = urlsplit(one.target)
        inside = (now.scheme, now.netloc) == (old.scheme, old.netloc) and (
            now.path + "/"
        ).startswith(old.path.rstrip("/") + "/")
        if not one.target or not inside:
            return one
        return replace(one, target=rebase(one.target, recorded_base, base_url))

    return replace(moved(identity), variants=tuple(moved(v) for v in identity.variants))


def first_folder(steps: Sequence[ScenarioStep]) -> str:
    """The folder of the first page navigated to ("" when none): a scenario's base URL,
    since an app may live under a path."""
    first = next((s.args.get("url", "") for s in steps if s.action == "navigate"), "")
    parts = urlsplit(str(first))
    if not (parts.scheme and parts.netloc):
        return ""
    return f"{parts.scheme}://{parts.netloc}{parts.path.rsplit('/', 1)[0]}"
