"""A tab's refs resolved to their elements, fail closed.

Refs are issued by the snapshot (:mod:`automation.browser.pagewalk`) and resolved here: a
ref acts only on the very element it was issued for, and only while that element still has
the role and name it had then and sits in a row (or named container) that reads as it did.
The check runs in the page (the ``tabwright=`` selector engine asks the document's
registry), so a re-rendered, renamed or removed element, one a list drawn again by index now
shows in another row, or a page that was left, gives ``StaleRef`` (saying what changed:
:mod:`automation.browser.refcheck`) and nothing is touched.

Each function takes the tab's :class:`~automation.browser.core.TabCore`;
:class:`~automation.browser.tab.Tab` offers them as its methods.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from playwright.async_api import CDPSession, ElementHandle, Frame, Locator, Page
from playwright.async_api import Error as PlaywrightError

from automation.browser.cdp import backend_node_id_of
from automation.browser.identity import IDENTITY_JS, ElementIdentity, frame_url, locate
from automation.browser.refcheck import RESOLVE_JS, STATE_JS, check_actionable, stale_ref
from automation.browser.snapshot import RefEntry
from automation.budget import Budget
from automation.errors import ActionFailed, StaleRef, TabwrightError

if TYPE_CHECKING:
    from automation.browser.core import TabCore

__all__ = [
    "REFUSED",
    "SELECTOR_ENGINE",
    "Target",
    "backend_node_id",
    "follow",
    "handle_of",
    "refusal",
    "resolve",
    "target",
    "to_act",
]


# Registered once per Playwright instance as "tabwright", in Playwright's utility world
# (content script): resolves a ref through the document's registry, which re-checks role,
# name and row first (fail closed).  The registry lives in the page's main world; the engine
# reaches it through the DOM they share (snapshot.js answers "tabwright:resolve" with a
# "tabwright:found" event on the element).  Run there, Playwright acts on the element it
# found without moving it between worlds first (two CDP round trips per step of an action).
# A ref followed by " act" (:func:`to_act`) is refused there, with an error naming
# REFUSED, when it does not resolve or its element is hidden or disabled: an action takes
# its element and proves it in the same round trip, and fails at once instead of waiting.
SELECTOR_ENGINE = """{
  queryAll(root, body) {
    const [ref, mode] = String(body).split(" ");
    let found = null;
    const grab = (e) => { if (!found) found = e.composedPath()[0]; };
    window.addEventListener("tabwright:found", grab, true);
    try {
      window.dispatchEvent(new CustomEvent("tabwright:resolve", { detail: ref }));
    } finally {
      window.removeEventListener("tabwright:found", grab, true);
    }
    const element = found instanceof Element ? found : null;
    if (mode === "act") {
      const state = element && (STATE_JS)([element])[0];
      if (!state || !state.visible || state.disabled) throw new Error("REFUSED");
    }
    if (!element) return [];
    return root === document || root === found || root.contains(found) ? [found] : [];
  },
  query(root, ref) { return this.queryAll(root, ref)[0] || null; }
}"""


# What the engine's refusal says (see SELECTOR_ENGINE).
REFUSED = "tabwright: not actionable"
SELECTOR_ENGINE = SELECTOR_ENGINE.replace("STATE_JS", STATE_JS).replace("REFUSED", REFUSED)

# The element of a ref, in the page's main world (where the handles given out live), or null.
_HANDLE_JS = "(ref) => (window.__tabwright ? window.__tabwright.resolve(ref) : null)"
# RESOLVE_JS's answer and, when the ref resolves, its element's identity (identity.js).
_TARGET_JS = f"""(ref) => {{
  const reg = window.__tabwright;
  const el = reg ? reg.resolve(ref) : null;
  if (!el) return {{ stale: reg ? reg.staleness(ref) : ["unknown"] }};
  return {{ state: ({STATE_JS})([el])[0], identity: ({IDENTITY_JS})(el, {{ op: "capture" }}) }};
}}"""


@dataclass(frozen=True)
class Target:
    """The element a recorded step acted on: its ref then, role, name, a CSS selector and
    its full identity (how replay finds it again)."""

    ref: str = ""
    role: str = ""
    name: str = ""
    selector: str = ""
    identity: ElementIdentity | None = None


async def resolve(
    core: TabCore, ref: str, *, budget: Budget | None = None, action: str = ""
) -> tuple[Locator, RefEntry]:
    """The locator for ``ref``, proven to be its element with its role and name, in its
    row, and able to take ``action`` (visible; enabled; editable for typing)."""
    budget = core.budget(budget, "resolve")
    core.check_alive()  # a dead tab is BrowserClosed, not a stale ref
    locator, entry = core.locator(ref)
    try:
        found = await budget.run(core.frame_of(entry).evaluate(RESOLVE_JS, entry.ref))
    except PlaywrightError:
        found = None  # the frame or the element's document is gone
    state = found.get("state") if isinstance(found, dict) else None
    if not isinstance(state, dict):
        why = found.get("stale") if isinstance(found, dict) else ["gone"]
        raise stale_ref(entry.describe(), why)
    if action:
        check_actionable(action, entry, state)
    return locator, entry


def to_act(core: TabCore, ref: str) -> tuple[Locator, RefEntry]:
    """The locator of ``ref`` for an action that proves its element as it takes it: the
    selector engine refuses (:data:`REFUSED`) a ref that does not resolve or an element
    that is hidden or disabled, in the action's own first round trip instead of one of
    :func:`resolve`'s before it.  On a refusal, :func:`resolve` says why."""
    core.check_alive()  # a dead tab is BrowserClosed, not a stale ref
    entry = core.entry(ref)
    return core.frame_of(entry).locator(f"tabwright={entry.ref} act"), entry


async def refusal(core: TabCore, ref: str, *, budget: Budget, action: str) -> TabwrightError:
    """Why the engine refused ``ref`` (:func:`to_act`): the error :func:`resolve` gives
    now, or, when the ref passes by then, that its element changed as it was taken."""
    try:
        _, entry = await resolve(core, ref, budget=budget, action=action)
    except (StaleRef, ActionFailed) as exc:
        return exc
    return ActionFailed(
        f"{action} {entry.describe()}: the element changed as it was taken",
        hint="take a new snapshot",
    )


async def follow(core: TabCore, ref: str, *, budget: Budget, action: str = "") -> ElementHandle:
    """The element of a ref whose node the page replaced, found again by the identity
    taken of it (:func:`target`) and able to take ``action``; StaleRef when there is no
    identity or it finds nothing.  For an action that re-rendered the page itself
    (fill_form's next field), never for a ref the model kept from an older page."""
    entry = core.entry(ref)
    identity = core.state.identities.get(entry.ref)
    if identity is None:
        raise StaleRef(
            f"ref {entry.describe()} no longer points at that element",
            hint="take a new snapshot",
        )
    located = await locate(core.page, identity, budget=budget)
    if located.element is None:
        raise StaleRef(
            f"ref {entry.describe()} no longer points at that element, and it could not be "
            f"found again: {located.reason}",
            hint="take a new snapshot",
        )
    try:
        state = await budget.run(located.element.evaluate(f"(el) => ({STATE_JS})([el])[0]"))
    except PlaywrightError:
        raise StaleRef(f"ref {entry.describe()}: the element found again went away") from None
    if action:
        check_actionable(action, entry, state)
    return located.element


async def target(core: TabCore, ref: str, *, budget: Budget | None = None) -> Target:
    """The ref's element as a recorded step keeps it: its identity and its best selector.
    Take it before acting (an action that navigates leaves the ref behind); StaleRef if
    the element is gone.  One round trip to the page: the ref proven (as :func:`resolve`
    does) and its element described in the same script."""
    budget = core.budget(budget, "identity")
    core.check_alive()  # a dead tab is BrowserClosed, not a stale ref
    entry = core.entry(ref)
    frame = core.frame_of(entry)
    try:
        found = await budget.run(frame.evaluate(_TARGET_JS, entry.ref))
    except PlaywrightError:
        found = None  # the frame or the element's document is gone
    if not isinstance(found, dict) or not isinstance(found.get("state"), dict):
        why = found.get("stale") if isinstance(found, dict) else ["gone"]
        raise stale_ref(entry.describe(), why)
    described = found.get("identity")
    if not isinstance(described, dict) or "error" in described:
        raise ActionFailed(f"could not describe the element: {described}")
    identity = ElementIdentity.from_page(described, frame_url=frame_url(frame))
    identity = replace(identity, backend_node_id=core.state.backend_ids.get(entry.ref))
    core.state.identities[entry.ref] = identity
    selector = identity.selectors[0] if identity.selectors else ""
    return Target(entry.ref, entry.role, entry.name, selector, identity)


async def handle_of(core: TabCore, entry: RefEntry, *, budget: Budget) -> ElementHandle:
    """The element of a ref just resolved (:func:`resolve`), or StaleRef when the page
    has replaced it since.  One query that never waits for an element to appear: an
    element the page replaced will not come back, and a page that is only slow to answer
    (a busy machine, a long task) is waited for within the budget, not taken for a
    changed one."""
    try:
        found = await budget.run(core.frame_of(entry).evaluate_handle(_HANDLE_JS, entry.ref))
    except PlaywrightError:
        handle = None  # the frame or the element's document is gone
    else:
        handle = found.as_element()
        if handle is None:
            await found.dispose()
    if handle is None:
        raise StaleRef(
            f"ref {entry.describe()}: the page replaced the element as it was taken",
            hint="take a new snapshot",
        )
    return handle


async def backend_node_id(core: TabCore, ref: str, *, budget: Budget | None = None) -> int:
    """CDP's backend node id of the ref's element: in the page's target (asked once, then
    remembered) or, for an element of an out-of-process frame, in the frame's."""
    budget = core.budget(budget, "backend node id")
    _, entry = await resolve(core, ref, budget=budget)
    known = core.state.backend_ids.get(entry.ref)
    if known is not None:
        return known
    what = f"backend node id of {entry.ref}"
    # An out-of-process frame can't be reached through the <iframe> chain and gets a
    # session of its own.
    attempts: list[tuple[Page | Frame, str]] = [(core.page, core.registry_path(entry.ref))]
    if entry.frame:
        attempts.append(
            (core.frame_of(entry), f"window.__tabwright.resolve({json.dumps(entry.ref)})")
        )
    for where, expression in attempts:
        session: CDPSession | None = None
        try:
            if where is core.page:
                session = await core.cdp_session(budget)
            else:
                session = await budget.run(core.context.new_cdp_session(where))
            backend_id = await backend_node_id_of(
                lambda method, params, s=session: budget.run(s.send(method, params)),
                expression,
            )
        except PlaywrightError:
            continue  # cross-origin hop or not an out-of-process frame: try the next way
        finally:
            if session is not None and session is not core.cdp:
                await _detach(session, budget)  # a frame's session is for this call only
        if backend_id is not None:
            if where is core.page:  # remembered only where the evaluate engine looks
                core.state.backend_ids[entry.ref] = backend_id
            return backend_id
    raise ActionFailed(f"{what}: the element can't be reached over CDP")


async def _detach(session: CDPSession, budget: Budget) -> None:
    try:
        await budget.run(session.detach())
    except (PlaywrightError, TabwrightError):
        pass  # the frame or browser is already gone, or time is up: the session goes with it
