"""The browser actions an agent may ask for, as one registry.

Each :class:`ActionSpec` names its parameters once; the same spec validates a request,
documents the tool in the system prompt and dispatches to the :class:`Tab` method.
Adding an action here is all it takes to offer it to the model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import ActionInvalid

__all__ = ["ACTIONS", "ActionSpec", "Param", "execute", "validate"]


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    description: str
    required: bool = True


@dataclass(frozen=True)
class ActionSpec:
    name: str
    description: str
    params: tuple[Param, ...]
    run: Callable[[Tab, dict[str, Any], Budget], Awaitable[str]]
    targets_ref: bool = False  # the step keeps a selector for its element

    def signature(self) -> str:
        fields = ", ".join(
            f'"{p.name}": {p.type.__name__}{"" if p.required else "?"}' for p in self.params
        )
        return f'{{"action": "{self.name}"{", " if fields else ""}{fields}}}'


ACTIONS: dict[str, ActionSpec] = {
    spec.name: spec
    for spec in (
        ActionSpec(
            "navigate",
            "open a URL (http or https) in the tab",
            (Param("url", str, "absolute URL"),),
            lambda tab, a, b: tab.navigate(a["url"], budget=b),
        ),
        ActionSpec(
            "click",
            "click the element with this ref",
            (Param("ref", str, "ref from the latest snapshot, like e5"),),
            lambda tab, a, b: tab.click(a["ref"], budget=b),
            targets_ref=True,
        ),
        ActionSpec(
            "type",
            "replace the text of a field; submit=true presses Enter after",
            (
                Param("ref", str, "ref of a textbox"),
                Param("text", str, "the text to enter"),
                Param("submit", bool, "press Enter after typing", required=False),
            ),
            lambda tab, a, b: tab.type(
                a["ref"], a["text"], submit=a.get("submit", False), budget=b
            ),
            targets_ref=True,
        ),
        ActionSpec(
            "press",
            "press a key on the focused element (Enter, Tab, Escape, Control+A)",
            (Param("key", str, "key name"),),
            lambda tab, a, b: tab.press(a["key"], budget=b),
        ),
        ActionSpec(
            "wait_for",
            "wait until a text is visible on the page",
            (Param("text", str, "text to wait for"),),
            lambda tab, a, b: tab.wait_for_text(a["text"], budget=b),
        ),
    )
}


def validate(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Check ``args`` against the action's params; return only the known ones."""
    spec = ACTIONS.get(name)
    if spec is None:
        raise ActionInvalid(
            f"unknown action {name!r}",
            hint="known actions: " + ", ".join(sorted(ACTIONS)),
        )
    clean: dict[str, Any] = {}
    for param in spec.params:
        if param.name not in args or args[param.name] is None:
            if param.required:
                raise ActionInvalid(f"{name} needs {param.name!r} ({param.description})")
            continue
        value = args[param.name]
        if param.type is str and isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)  # a model writing 42 for "42" is harmless
        if not isinstance(value, param.type):
            raise ActionInvalid(
                f"{name}: {param.name!r} must be {param.type.__name__}, not {type(value).__name__}"
            )
        clean[param.name] = value
    return clean


async def execute(tab: Tab, name: str, args: dict[str, Any], *, budget: Budget) -> str:
    """Validate and run one action; returns the result line for the model."""
    clean = validate(name, args)
    return await ACTIONS[name].run(tab, clean, budget)
