"""What an action is: its name, its parameters, and the function that runs it.

One :class:`ActionSpec` names an action's parameters once; the same spec validates a request,
documents the action to the model (system prompt or native tool) and runs it.  The specs are
written beside what they drive (:mod:`automation.browser.actions`, :mod:`automation.tools`)
and assembled into one registry in :mod:`automation.actions`.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from automation.budget import timeout_ms_of
from automation.errors import ActionInvalid
from automation.limits import cut_text

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

    def validate(
        self, args: dict[str, Any], *, strict: bool = False, exact: bool = False
    ) -> dict[str, Any]:
        """Check ``args`` against the params; return only the known ones (and a valid
        ``timeout_ms``).  ``strict`` (a client that reads the tool's schema): an argument
        the action doesn't take is refused, not left out (a misnamed option would
        otherwise run the action with its default, and say done).  ``exact`` (a file, not
        a model): a number given for a text is refused, not taken as its text (a
        navigate's ``"url": 5`` is a mistake in the file, not the page ``5``)."""
        name = self.name
        if strict:
            self.refuse_unknown(args)
        clean: dict[str, Any] = {}
        for param in self.params:
            if param.name not in args or args[param.name] is None:
                if param.required:
                    raise ActionInvalid(f"{name} needs {param.name!r} ({param.description})")
                continue
            value = args[param.name]
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if param.type is str and number and not exact:
                if not math.isfinite(value):  # "inf" typed into a field was never meant
                    raise ActionInvalid(
                        f"{name}: {param.name!r} must be text, not {value} (no JSON number)"
                    )
                value = str(value)  # a model writing 42 for "42" is harmless
            wrong_bool = isinstance(value, bool) and param.type is int
            if not isinstance(value, param.type) or wrong_bool:
                raise ActionInvalid(
                    f"{name}: {param.name!r} must be {param.type_name}, not {type(value).__name__}"
                )
            if not _finite(value):  # kept as a step's args: JSON (and PostgreSQL) has no NaN
                raise ActionInvalid(f"{name}: {param.name!r} holds a number JSON can't hold")
            clean[param.name] = value
        if self.check is not None:
            self.check(clean)
        if _timeout(name, args) is not None:  # kept, checked: it narrows the call's budget
            clean["timeout_ms"] = args["timeout_ms"]
        return clean

    def refuse_unknown(self, args: dict[str, Any]) -> None:
        """ActionInvalid naming the arguments of ``args`` the action doesn't take."""
        taken = {p.name for p in self.params} | {"timeout_ms"}
        unknown = sorted(set(args) - taken)
        if unknown:
            said = ", ".join(repr(cut_text(str(key), 40)) for key in unknown[:5])
            raise ActionInvalid(
                f"{self.name} takes no {said}",
                hint=f"{self.name} takes: " + ", ".join(sorted(taken)),
            )

    def prepare(self, args: dict[str, Any], budget: Budget) -> tuple[dict[str, Any], Budget]:
        """The validated args, and the budget of the call: the caller's, narrowed by the
        call's own ``timeout_ms`` when it gives one."""
        clean = self.validate(args)
        timeout_ms = clean.pop("timeout_ms", None)
        return clean, (budget.child(timeout_ms, label=self.name) if timeout_ms else budget)

    async def execute(self, tab: Tab, args: dict[str, Any], *, budget: Budget) -> str:
        """Validate and run the action; returns the result line for the model."""
        clean, call_budget = self.prepare(args, budget)
        if not self.enabled(tab.config):
            raise ActionInvalid(
                f"{self.name} is turned off",
                hint=f"the operator can turn it on (BrowserConfig.{self.switch})",
            )
        if self.name != "downloads" and tab.downloads is not None:
            tab.downloads.action_begins()
        return await self.run(tab, clean, call_budget)

    def signature(self) -> str:
        """``click(ref, button?, modifiers?: list)``: the action as the model reads it (a
        parameter is a string unless its type is given)."""
        params = ", ".join(
            f"{p.name}{'' if p.required else '?'}{'' if p.type is str else ': ' + p.type_name}"
            for p in self.params
        )
        return f"{self.name}({params})"


def _timeout(name: str, args: dict[str, Any]) -> float | None:
    value = args.get("timeout_ms")
    return None if value is None else timeout_ms_of(value, what=f"{name}: timeout_ms")


def optional(name: str, kind: type | tuple[type, ...], description: str) -> Param:
    return Param(name, kind, description, required=False)


def _finite(value: Any) -> bool:
    """Whether every number in ``value`` (a list's, a mapping's, however deep) is one JSON
    can hold."""
    stack = [value]
    while stack:
        each = stack.pop()
        if isinstance(each, float) and not math.isfinite(each):
            return False
        if isinstance(each, list | tuple):
            stack.extend(each)
        elif isinstance(each, dict):
            stack.extend(each.values())
    return True
