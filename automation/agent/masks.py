"""A password the model typed literally into a password field is masked: in the action and
step shown, in its stored reply, and (hidden in the run's Secrets) everywhere after.

A ``${SECRET:NAME}`` placeholder is never masked: it is not the secret, and the run fills
it in only when the action runs (automation.secrets).
"""

from __future__ import annotations

from typing import Any

from automation.agent.parser import Action, parse_reply
from automation.browser.tab import Tab, Target
from automation.budget import Budget
from automation.errors import BrowserClosed, Cancelled, TabwrightError
from automation.recording.scenario import TYPED_ARG
from automation.secrets import MASK, SECRET_RE, Secrets

__all__ = ["form_targets", "hide_typed_passwords", "is_password", "masked", "masked_steps"]


def is_password(target: Target) -> bool:
    """A password field: by its identity (of type password, or marked as one, as a field
    its "show password" switch made text is), else by its name."""
    identity = target.identity
    if identity is not None and (identity.type or identity.autocomplete):
        return identity.holds_password()
    return "password" in target.name.casefold()


def masked(secrets: Secrets, name: str, args: dict[str, Any], target: Target) -> dict[str, Any]:
    """``args`` with a value typed literally into a password field masked (and hidden
    from everything shown later)."""
    key = TYPED_ARG.get(name)
    value = args.get(key) if key else None
    if not isinstance(value, str) or not value or not is_password(target):
        return args
    if SECRET_RE.fullmatch(value):
        return args
    secrets.hide(value)
    return {**args, key: MASK}  # type: ignore[dict-item]


async def hide_typed_passwords(tab: Tab, secrets: Secrets, reply: str, budget: Budget) -> None:
    """A password the model typed literally into a password field is masked in the
    stored reply too (its streamed tokens were already shown, and are not stored)."""
    typed: list[tuple[str, Any]] = []  # (ref, value typed into it)
    for action in parse_reply(reply).actions:
        key = TYPED_ARG.get(action.name)
        if key:
            typed.append((str(action.args.get("ref", "")), action.args.get(key)))
        fields = action.args.get("fields") if action.name == "fill_form" else None
        for one in fields if isinstance(fields, list) else ():
            if isinstance(one, dict):
                typed.append((str(one.get("ref", "")), one.get("value")))
    for ref, value in typed:
        if not isinstance(value, str) or not value or SECRET_RE.fullmatch(value):
            continue
        if is_password(await _target(tab, ref, budget)):
            secrets.hide(value)


async def masked_steps(
    tab: Tab, secrets: Secrets, action: Action, budget: Budget
) -> dict[str, Any]:
    """A macro's args with the fills into password fields masked."""
    steps = action.args.get("steps")
    if action.name != "steps" or not isinstance(steps, list):
        return action.args
    shown = []
    for step in steps:
        if isinstance(step, dict) and step.get("type") == "fill" and step.get("ref"):
            step = masked(secrets, "fill", step, await _target(tab, str(step["ref"]), budget))
        shown.append(step)
    return {**action.args, "steps": shown}


async def form_targets(
    tab: Tab, secrets: Secrets, action: Action, budget: Budget
) -> tuple[dict[str, Any], list[Target]]:
    """A fill_form's fields: each field's element (its identity, taken before anything
    changes; fill_form finds a field the page re-rendered by it, and each field is
    recorded as a step of its own), and the args with passwords masked."""
    fields = action.args.get("fields")
    if not isinstance(fields, list):
        return action.args, []
    targets: list[Target] = []
    shown = []
    for one in fields:
        ref = str(one.get("ref", "")) if isinstance(one, dict) else ""
        target = await _target(tab, ref, budget) if ref else tab.known_target(ref)
        targets.append(target)
        if isinstance(one, dict) and isinstance(one.get("value"), str):
            value = masked(secrets, "fill", {"value": one["value"]}, target)["value"]
            one = {**one, "value": value}
        shown.append(one)
    return {**action.args, "fields": shown}, targets


async def _target(tab: Tab, ref: str, budget: Budget) -> Target:
    """The ref's element with its identity, or what the tab knows of it when that can't
    be taken (the action reports the ref's problem when it gets there).  Within the
    caller's budget (an action's), as the action takes its own: a fixed time would run out
    on a page slow to answer, and a password field told only by its name ("PIN") would
    go unmasked."""
    try:
        return await tab.target(ref, budget=budget)
    except TabwrightError as exc:
        if isinstance(exc, Cancelled | BrowserClosed):
            raise
        return tab.known_target(ref)
