"""The element a person points at on the dashboard's live view, found over CDP.

``DOM.getNodeForLocation`` (which takes the point in the document, so the scroll is added)
-> ``Accessibility.getPartialAXTree`` to climb to the nearest interactive node ->
``DOM.describeNode`` -> ``DOM.getBoxModel``; its identity is taken with ``DOM.resolveNode``
+ ``Runtime.callFunctionOn`` running identity.js, the capture replay compares against.
Hit testing enters frames of the page's process by itself; an out-of-process frame
(another site's) is entered through its own session, the point moved by the frame's
offset.  Used by :class:`~automation.recording.recorder.Recorder` (``click_at``,
``check_at``, ``identity_at``)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

from playwright.async_api import CDPSession, Frame
from playwright.async_api import Error as PlaywrightError

from automation.browser.frames import left_to_end, silent_note, unanswering
from automation.browser.identity import IDENTITY_JS, ElementIdentity
from automation.browser.pwcall import call
from automation.browser.snapshot import SNAPSHOT_JS
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import ActionFailed, BudgetExceeded

__all__ = ["element_at", "quietly"]

T = TypeVar("T")

# Roles of the accessibility tree (Chromium's names, lowercased) that a person acts on.
_AX_INTERACTIVE = frozenset({
    "button", "link", "checkbox", "radio", "textbox", "combobox", "menuitem", "menuitemcheckbox",
    "menuitemradio", "tab", "option", "switch", "searchbox", "slider", "spinbutton", "treeitem",
    "listbox", "togglebutton", "popupbutton", "menulistoption", "listboxoption",
    "disclosuretriangle",
})  # fmt: skip
_HIT_OPTIONS = {"includeUserAgentShadowDOM": False, "ignorePointerEventsNone": True}
_PAGE_NODES = frozenset({"HTML", "BODY", "#document"})
_FRAME_NODES = frozenset({"IFRAME", "FRAME"})

# Runs on the chosen node (``this``) over CDP.  The registry is installed first if the
# document predates the session's init script; a label acts through its control.
_CAPTURE_FN = f"""function (climbed) {{
  ;{SNAPSHOT_JS};
  let el = this.nodeType === 1 ? this : this.parentElement;
  const label = climbed ? null : el.closest("label");
  if (label && label.control) el = label.control;
  const toggle = el.tagName === "INPUT" && (el.type === "checkbox" || el.type === "radio");
  return {{
    found: ({IDENTITY_JS})(el, {{ op: "capture" }}),
    top: window === window.top, url: document.URL, scroll: [scrollX, scrollY],
    moved: el !== this, checked: toggle ? (el.type === "radio" || !el.checked) : null,
  }};
}}"""


async def element_at(
    tab: Tab, x: float, y: float, budget: Budget
) -> tuple[ElementIdentity, bool | None]:
    """The identity of the element a person acts on at (x, y), viewport CSS px of the top
    page, and, for a checkbox or radio, its state after a click; ActionFailed when
    nothing but the page's background is there."""
    tab.core.check_alive()
    session = tab.cdp or await _call(tab, "identity", budget, tab.core.cdp_session())
    cdp, left, top = _Cdp(tab, session, budget), x, y
    where, opened = f"({x:g}, {y:g})", []  # sessions of out-of-process frames, this call
    silent = False  # the last frame entered did not answer
    try:
        while True:
            # The point is in the viewport; hit testing takes it in the document.
            view = (await cdp("Page.getLayoutMetrics"))["cssVisualViewport"]
            at = {"x": round(left + view["pageX"]), "y": round(top + view["pageY"])}
            try:
                hit = await cdp("DOM.getNodeForLocation", **at, **_HIT_OPTIONS)
            except ActionFailed:
                raise ActionFailed(f"no element at {where}: outside the page") from None
            node_id, climbed = await _actionable(cdp, hit["backendNodeId"])
            node = (await cdp("DOM.describeNode", backendNodeId=node_id))["node"]
            if node.get("nodeName") in _PAGE_NODES:
                raise ActionFailed(f"no element at {where}: only the page's background")
            # Hit testing enters frames of the page's process by itself, not the others.
            inner = None
            if node.get("nodeName") in _FRAME_NODES:
                inner = await _frame_session(tab, str(node.get("frameId", "")), budget)
            if inner is None:
                break
            frame, inner = inner
            opened.append(inner)
            # A frame whose script hangs (a widget) would hold the person's act, and their
            # next ones behind it, for the whole of its time: it is asked first, beside the
            # page, as every read of the page's frames does.
            if silent := bool(await unanswering([frame], budget)):
                raise ActionFailed(f"nothing at {where} can be acted on: {silent_note(frame)}")
            box = (await cdp("DOM.getBoxModel", backendNodeId=node_id))["model"]
            content = box["content"]  # x, y of four corners, clockwise from top left
            dx, dy = left - content[0], top - content[1]
            if not (0 <= dx < content[2] - content[0] and 0 <= dy < content[5] - content[1]):
                break  # on the frame's border: the <iframe> itself
            # The frame's own target hit-tests in its own viewport.
            cdp, left, top = _Cdp(tab, inner, budget), dx, dy
        return await _capture(tab, cdp, node_id, climbed, where)
    finally:
        for session in opened:
            if silent and session is opened[-1]:  # its detach waits for the frame
                left_to_end(session.detach(), "a silent frame's session's detach")
            else:
                await quietly(budget, session.detach())


async def _capture(
    tab: Tab, cdp: _Cdp, node_id: int, climbed: bool, where: str
) -> tuple[ElementIdentity, bool | None]:
    """The node's identity by identity.js, its box by CDP."""
    try:
        model = (await cdp("DOM.getBoxModel", backendNodeId=node_id))["model"]
    except ActionFailed:
        model = None  # no box of its own (display: contents): the page's box is kept
    group = "tabwright-recorder"
    try:
        obj = await cdp("DOM.resolveNode", backendNodeId=node_id, objectGroup=group)
        answer = await cdp("Runtime.callFunctionOn", objectId=obj["object"]["objectId"],
                           functionDeclaration=_CAPTURE_FN, arguments=[{"value": climbed}],
                           returnByValue=True)  # fmt: skip
    finally:
        if tab.core.alive:
            await cdp("Runtime.releaseObjectGroup", objectGroup=group)
    result = answer.get("result", {}).get("value")
    if not isinstance(result, dict) or "error" in result.get("found", {"error": 1}):
        raise ActionFailed(f"could not describe the element at {where}", hint=str(answer)[:300])
    found, own = dict(result["found"]), cdp.session is tab.cdp
    if model is not None and not result["moved"]:
        # CDP's box is the rendered one (transforms included), in the viewport of its
        # target; identities keep boxes in their own document, so scroll is added.
        xs, ys = model["border"][0::2], model["border"][1::2]
        x0, y0 = found["box"][:2]
        if own and result["top"]:
            x0, y0 = min(xs) + result["scroll"][0], min(ys) + result["scroll"][1]
        found["box"] = [round(v) for v in (x0, y0, max(xs) - min(xs), max(ys) - min(ys))]
    identity = ElementIdentity.from_page(
        found,
        frame_url="" if result["top"] else str(result["url"]),
        # A backend node id means something only in the page's own target.
        backend_node_id=node_id if own and not result["moved"] else None,
    )
    return identity, result["checked"]


async def _frame_session(
    tab: Tab, frame_id: str, budget: Budget
) -> tuple[Frame, CDPSession] | None:
    """The out-of-process frame ``frame_id`` (its target id) and its session, if it is
    one: only those can have a session of their own."""
    for frame in tab.page.frames:
        if frame.parent_frame is None or frame.is_detached():
            continue
        try:
            inner = await budget.run(tab.context.new_cdp_session(frame))
        except PlaywrightError:
            continue  # a frame of the page's own process
        info = await quietly(budget, inner.send("Target.getTargetInfo"))
        if info and info["targetInfo"]["targetId"] == frame_id:
            return frame, inner
        await quietly(budget, inner.detach())
    return None


class _Cdp:
    """One CDP session within one budget: ``await cdp("DOM.describeNode", backendNodeId=1)``."""

    def __init__(self, tab: Tab, session: CDPSession, budget: Budget) -> None:
        self.tab, self.session, self.budget = tab, session, budget

    async def __call__(self, method: str, **params: Any) -> Any:
        return await _call(self.tab, method, self.budget, self.session.send(method, params))


async def _actionable(cdp: _Cdp, backend_id: int) -> tuple[int, bool]:
    """The nearest node at or above ``backend_id`` in the accessibility tree whose role is
    interactive, and whether there was one (else the hit node itself)."""
    try:
        tree = await cdp(
            "Accessibility.getPartialAXTree", backendNodeId=backend_id, fetchRelatives=True
        )
    except ActionFailed:
        return backend_id, False  # not in the accessibility tree: act on what was hit
    nodes = {n["nodeId"]: n for n in tree.get("nodes", [])}
    node = next((n for n in nodes.values() if n.get("backendDOMNodeId") == backend_id), None)
    while node is not None:  # ancestors come with fetchRelatives
        role = str(node.get("role", {}).get("value", "")).lower()
        if not node.get("ignored") and role in _AX_INTERACTIVE and node.get("backendDOMNodeId"):
            return int(node["backendDOMNodeId"]), True
        node = nodes.get(node.get("parentId", ""))
    return backend_id, False


async def quietly(budget: Budget, work: Awaitable[T], *, out_of_time: bool = True) -> T | None:
    """``work`` within the budget, or None: for what may fail because its frame or page
    went away (or, when ``out_of_time``, time ran out) without that mattering.  A cancelled
    budget still raises."""
    try:
        return await budget.run(work)
    except PlaywrightError:
        return None
    except BudgetExceeded:
        if out_of_time:
            return None
        raise


async def _call(tab: Tab, what: str, budget: Budget, work: Awaitable[T]) -> T:
    return await call(what, budget, work, gone=lambda: not tab.core.alive)
