"""What the recorder makes of what the page tells it: the step of an event of
recorder.js, the check of what an element shows, the intent in words of a step, and the
page's texts kept as one sane line (:mod:`automation.recording.recorder`)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from automation.browser.effect import TOGGLE_STATE_JS
from automation.browser.identity import CONTROL_CHARS
from automation.recording.expect import VALUE_JS
from automation.recording.scenario import ScenarioStep

__all__ = [
    "MAX_CHECK_TEXT",
    "SEEN_JS",
    "action_of",
    "check_of",
    "is_web",
    "now_ms",
    "page_line",
    "with_intent",
]

MAX_CHECK_TEXT = 200  # a longer text is not a check of its own (the element's presence is)

# What a check of an element reads: its toggle state, a field's value, its text.
SEEN_JS = f"""(e) => ({{
  toggle: ({TOGGLE_STATE_JS})(e),
  field: ["INPUT", "TEXTAREA", "SELECT"].includes(e.tagName) || e.isContentEditable,
  secret: e.tagName === "INPUT" && e.type === "password",
  value: ({VALUE_JS})(e),
  text: (e.innerText || "").replace(/\\s+/g, " ").trim(),
}})"""


def check_of(seen: dict[str, Any], *, interactive: bool) -> dict[str, Any]:
    """The expect args that say what the element shows now: a control's state or its
    being there, a text's being shown."""
    if seen.get("toggle") is not None:
        return {"kind": "checked" if seen["toggle"] else "unchecked"}
    if seen.get("field") and not seen.get("secret") and isinstance(seen.get("value"), str):
        return {"kind": "value", "value": seen["value"][:MAX_CHECK_TEXT]}
    text = str(seen.get("text") or "")
    if text and len(text) <= MAX_CHECK_TEXT and not interactive:
        return {"kind": "text_visible", "text": text}
    return {"kind": "visible"}


def action_of(event: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The step's action and args for one event of recorder.js (None: not a step)."""
    kind, button = event.get("kind"), str(event.get("button", "left"))
    if kind == "press" and not event.get("key"):
        return None
    return {
        "click": ("click", {} if button == "left" else {"button": button}),
        "fill": ("fill", {"value": str(event.get("value", ""))}),
        "select": ("select_option", {"values": [str(v) for v in event.get("values") or []]}),
        "check": ("check", {"checked": bool(event.get("checked"))}),
        "press": ("press", {"key": str(event.get("key", ""))}),
    }.get(str(kind))


def with_intent(step: ScenarioStep) -> ScenarioStep:
    """An element step with its intent in words (:meth:`ScenarioStep.purpose`)."""
    if not step.needs_element or step.intent:
        return step
    return replace(step, intent=page_line(step.purpose(), 300))


def page_line(value: object, most: int = 500) -> str:
    """A text the page sent, as one line of at most ``most`` characters."""
    return CONTROL_CHARS.sub(" ", str(value or ""))[:most]


def is_web(url: str) -> bool:
    return url.startswith(("http://", "https://"))


def now_ms() -> float:
    return time.time() * 1000
