"""Whether a ref still names its element, asked in one round trip, and what to say when not.

The page's registry decides (snapshot.js, ``resolve`` and ``staleness``): the ref's element
must still be in the page with the role and name it had, sitting in a row (or named
container) that reads as it did when the ref was issued.  :data:`RESOLVE_JS` asks it and,
in the same call, whether the element can take an action (visible, enabled, editable);
:func:`stale_ref` turns the registry's reason into the error the model reads, so a model
told ``its row changed from "Alpha" to "Beta"`` knows why its ref was refused.
"""

from __future__ import annotations

import re
from typing import Any

from automation.browser.snapshot import RefEntry
from automation.errors import ActionFailed, StaleRef

__all__ = ["RESOLVE_JS", "STATE_JS", "check_actionable", "stale_ref"]

# Can the element be acted on?  A function of a list of elements.
STATE_JS = """(els) => els.map((el) => ({
  visible: el.checkVisibility({ visibilityProperty: true }) &&
    (el.getClientRects().length > 0),
  disabled: Boolean(el.disabled) || el.getAttribute("aria-disabled") === "true" ||
    Boolean(el.closest("fieldset[disabled]")),
  editable: el.isContentEditable || ((el.tagName === "INPUT" || el.tagName === "TEXTAREA") &&
    !el.readOnly),
  tag: el.tagName.toLowerCase(),
  type: (el.getAttribute("type") || "").toLowerCase(),
}))"""

# One round trip before acting, in the ref's frame: {state} of its element, or {stale: why}.
RESOLVE_JS = f"""(ref) => {{
  const reg = window.__tabwright;
  const el = reg ? reg.resolve(ref) : null;
  if (!el) return {{ stale: reg ? reg.staleness(ref) : ["unknown"] }};
  return {{ state: ({STATE_JS})([el])[0] }};
}}"""

_HINT = "take a new snapshot"
_QUOTED_CHARS = 40  # of a row's text or a name from the page, in a message
_KIND_RE = re.compile(r"[a-z]{1,20}")


def stale_ref(what: str, reason: object) -> StaleRef:
    """The error for a ref that no longer resolves.  ``what`` names the ref
    (:meth:`RefEntry.describe`); ``reason`` is the registry's ``staleness``: page data,
    used only when it has the shape the registry gives."""
    why = reason if isinstance(reason, list) and all(isinstance(r, str) for r in reason) else []
    if len(why) == 3 and why[0] == "context":
        return StaleRef(f"ref {what}: {_context_change(why[1], why[2])}", hint=_HINT)
    detail = "it was removed, renamed or the page changed"
    if len(why) == 2 and why[0] == "role":
        detail = f"it is {'a ' + _kind(why[1]) if why[1] else 'of no role'} now"
    elif len(why) == 2 and why[0] == "name":
        detail = f"it is named {_quote(why[1])} now"
    elif why == ["gone"]:
        detail = "it was removed or replaced"
    return StaleRef(f"ref {what} no longer points at that element ({detail})", hint=_HINT)


def _context_change(then: str, now: str) -> str:
    """What became of the row (or named container) a ref's element sat in; each side is
    ``kind\\ttext``, or "" for none."""
    was_kind, _, was = then.partition("\t")
    now_kind, _, is_now = now.partition("\t")
    if then and now and was_kind == now_kind:
        return f"its {_kind(was_kind)} changed from {_quote(was)} to {_quote(is_now)}"
    if then and now:
        return (
            f"it was in the {_kind(was_kind)} {_quote(was)} and is in the "
            f"{_kind(now_kind)} {_quote(is_now)} now"
        )
    if then:
        return f"it is no longer in its {_kind(was_kind)} {_quote(was)}"
    return f"it is in the {_kind(now_kind)} {_quote(is_now)} now, and was in none"


def _kind(kind: str) -> str:
    return kind if _KIND_RE.fullmatch(kind) else "container"


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return f'"{text[:_QUOTED_CHARS]}…"' if len(text) > _QUOTED_CHARS else f'"{text}"'


def check_actionable(action: str, entry: RefEntry, state: dict[str, Any]) -> None:
    """Refuse at once what Playwright would wait the whole budget for."""
    what = f"{action} {entry.describe()}"
    if not state["visible"] and action not in {"scroll", "set_input_files", "select_option"}:
        raise ActionFailed(
            f"{what}: the element is hidden", hint="open the section that shows it, or scroll"
        )
    if state["disabled"] and action not in {"hover", "scroll", "highlight"}:
        raise ActionFailed(f"{what}: the element is disabled", hint="fill what it depends on first")
    if action in {"type", "fill"} and not state["editable"]:
        raise ActionFailed(f"{what}: the element does not take text", hint="pick a textbox")
