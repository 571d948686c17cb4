"""What an action is: its name, its parameters, and the function that runs it.

One :class:`ActionSpec` names an action's parameters once; the same spec validates a request,
documents the action to the model (system prompt or native tool) and runs it.  The specs are
written beside what they drive (:mod:`automation.browser.actions`, :mod:`automation.tools`)
and assembled into one registry in :mod:`automation.actions`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from automation.browser.config import BrowserConfig
    from automation.browser.tab import Tab
    from automation.budget import Budget

__all__ = ["REF_DESCRIPTION", "ActionSpec", "Param", "optional"]

# The usual ref parameter; said once to the model (system prompt), not in every tool.
REF_DESCRIPTION = "ref from the latest snapshot, like e5"


_JSON_TYPE_NAMES: dict[type, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


@dataclass(frozen=True)
class Param:
    name: str
    type: type | tuple[type, ...]
    description: str
    required: bool = True

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of the param's type: ``{}`` when it takes any JSON value."""
        kinds = self.type if isinstance(self.type, tuple) else (self.type,)
        names = list(dict.fromkeys(_JSON_TYPE_NAMES[k] for k in kinds if k in _JSON_TYPE_NAMES))
        if not names or set(_JSON_TYPE_NAMES.values()) <= set(names):
            return {}
        return {"type": names[0] if len(names) == 1 else names}

    @property
    def type_name(self) -> str:
        types = self.type if isinstance(self.type, tuple) else (self.type,)
        return "|".join(t.__name__ for t in types)


@dataclass(frozen=True)
class ActionSpec:
    name: str
    description: str
    params: tuple[Param, ...]
    run: Callable[[Tab, dict[str, Any], Budget], Awaitable[str]]
    targets_ref: bool = False  # the step keeps a selector for its element
    # Off unless the operator turns it on: ``enabled(config)`` says whether it is offered.
    switch: str = ""
    # A whole-request check beyond the param types, run by ``validate`` before anything runs.
    check: Callable[[dict[str, Any]], object] | None = None
    # Offered to the model; read_page is not (the agent gets the page every round anyway).
    for_agent: bool = True
    # The step it is recorded as, when not its own name (verify is recorded as an expect).
    records_as: str = ""

    def enabled(self, config: BrowserConfig) -> bool:
        return not self.switch or bool(getattr(config, self.switch))

    def signature(self) -> str:
        """``click(ref, button?, modifiers?: list)``: the action as the model reads it (a
        parameter is a string unless its type is given)."""
        params = ", ".join(
            f"{p.name}{'' if p.required else '?'}{'' if p.type is str else ': ' + p.type_name}"
            for p in self.params
        )
        return f"{self.name}({params})"


def optional(name: str, kind: type | tuple[type, ...], description: str) -> Param:
    return Param(name, kind, description, required=False)
