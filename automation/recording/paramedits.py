"""A scenario's typed values made parameters or secrets, and its later steps following an
edit of them: what :meth:`~automation.recording.scenario.Scenario.with_param`,
:meth:`~automation.recording.scenario.Scenario.following` and
:meth:`~automation.recording.scenario.Scenario.spelling` do (the scenario page's "make a
parameter" and "make a secret", a step's edit).  A parameter is carried into the later
steps that depend on its value (:mod:`automation.recording.params`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from automation.errors import ScenarioInvalid
from automation.recording import params as carried
from automation.recording.placeholders import (
    PARAM,
    PLACEHOLDER,
    hide,
    map_texts,
    spells,
    texts_in,
    unliteral,
)

if TYPE_CHECKING:
    from automation.recording.scenario import Scenario, ScenarioStep

__all__ = ["TYPED_ARG", "following", "renamed_in", "spelling", "with_param"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # fullmatch: "$" would let a name end in "\n"

# The arg that holds what a step types.
TYPED_ARG = {"fill": "value", "type": "text"}
_VALUE_ARG = {**TYPED_ARG, "navigate": "url"}


def _typing_secret(step: ScenarioStep, value: str, secret: str) -> ScenarioStep:
    """``step`` typing ``secret`` wherever what it types holds ``value``."""
    key = TYPED_ARG.get(step.action, "")
    text = step.args.get(key)
    if not isinstance(text, str) or hide(text, value, secret) == text:
        return step
    return replace(step, args={**step.args, key: hide(text, value, secret)})


def _carried(step: ScenarioStep, value: str, name: str) -> ScenarioStep:
    """``step`` with the typed ``value`` written as ``${name}`` where it depends on it
    (``value`` as the scenario writes it, as its checks do; an identity holds the text)."""
    identity = carried.carry(step.identity, unliteral(value), name) if step.identity else None
    return replace(step, identity=identity, args=carried.carry_args(step.action, step.args,
                                                                     value, name),
                   url=carried.carry_url(step.url, unliteral(value), name),
                   led_to=carried.carry_url(step.led_to, unliteral(value), name))  # fmt: skip


_USE = r"(?<!\$)\$\{%s\}"  # a parameter's placeholder, not a literal $${…}


def _typed_text(step: ScenarioStep) -> str:
    text = step.args.get(TYPED_ARG.get(step.action, ""))
    return text if isinstance(text, str) else ""


def _typed(step: ScenarioStep) -> set[str]:
    """The parameters ``step`` types (no secret: nothing but its typing spells it)."""
    return {m.group(2) for m in PLACEHOLDER.finditer(_typed_text(step))
            if m.group(2) and not m.group(1)}  # fmt: skip


def _uses(data: Any, name: str) -> bool:
    """Whether ``data`` (a step as the format writes it) holds ``${name}``."""
    use = re.compile(_USE % re.escape(name))
    return any(use.search(text) for text in texts_in(data))


def renamed_in(data: Any, name: str, new: str) -> Any:
    """``data`` (a step, or an element's identity, as the format writes it) with
    ``${name}`` written ``${new}``."""
    use = re.compile(_USE % re.escape(name))
    return map_texts(data, lambda text: use.sub(lambda _m: "${" + new + "}", text))


def with_param(scenario: Scenario, index: int, name: str, *, secret: bool = False) -> Scenario:
    """The scenario with step ``index``'s typed value made a parameter (its value the
    default) or a secret (its value dropped).  A parameter is carried into the later
    steps that depend on the value: their elements' identities and the checks that
    use it (:func:`automation.recording.params.carry`); a secret is typed wherever
    the value was, and refused while anything else spells it out."""
    if not _NAME.fullmatch(name):
        raise ScenarioInvalid(f"{name!r} is not a parameter name (letters, digits, _)")
    if not 0 <= index < len(scenario.steps):
        raise ScenarioInvalid(f"no step {index}", index=index)
    step = scenario.steps[index]
    key = _VALUE_ARG.get(step.action)
    if key is None or not isinstance(step.args.get(key), str):
        raise ScenarioInvalid(f"step {index} ({step.action}) has no value to replace")
    old = step.args[key]
    if secret and key not in TYPED_ARG.values():
        raise ScenarioInvalid(
            f"step {index} ({step.action}): only a typed value can be a secret",
            hint="make it a parameter instead",
        )
    if any(match.group(0) != "$${" for match in PLACEHOLDER.finditer(old)):
        raise ScenarioInvalid(f"step {index} already takes its value from {old!r}")
    if secret:
        return _with_secret(scenario, index, name, unliteral(old))
    new_step = replace(step, args={**step.args, key: f"${{{name}}}"})
    later = scenario.steps[index + 1 :]
    if key in TYPED_ARG.values():
        later = tuple(_carried(step, old, name) for step in later)
        # where the step itself led (a search typed and sent at once)
        led_to = carried.carry_url(step.led_to, unliteral(old), name)
        new_step = replace(new_step, led_to=led_to)
    steps = (*scenario.steps[:index], new_step, *later)
    params = dict(scenario.params)
    default = unliteral(old)  # a value is typed as it is
    known = params.get(name)
    if known is not None and known.get("default") != default:
        # Taken over, its default would change what the steps using it type.
        raise ScenarioInvalid(
            f"the scenario has a parameter {name!r} already, whose default is "
            f"{known.get('default')!r}, not {default!r}",
            index=index, hint="give this value another name",
        )  # fmt: skip
    params[name] = {**(known or {}), "default": default}
    return replace(scenario, steps=steps, params=params)


def following(
    scenario: Scenario, index: int, was: Mapping[str, Any], *, led_to: bool = True
) -> tuple[Scenario, dict[str, str]]:
    """The scenario, whose step ``index`` had args ``was`` before a person edited
    them, with the later steps following the edit; and the parameters they follow
    (old name: new name).

    A step that typed a parameter nothing else types, and now types another one,
    takes the later steps that used the first along (what :func:`with_param` carried
    into them, or a person wrote: their elements, checks, addresses, what a call
    gives): they use the new one, as does where the step itself led (``led_to``:
    unless the edit gave that too).  One that no longer types a parameter later
    steps use (a plain value instead, or more than one parameter) is refused
    (ScenarioInvalid), naming those steps: they would look for that parameter's
    default, not for what the step types now.

    The new parameter, where the scenario declares none of that name, takes the one it
    replaces' declaration (its default): the step, and those that follow it, do what
    they did with no value given, as a rename does."""
    step = scenario.steps[index]
    before = replace(step, args=dict(was))
    others = set().union(*(_typed(s) for i, s in enumerate(scenario.steps) if i != index))
    gone = sorted(_typed(before) - _typed(step) - others)
    now = _typed_text(step)
    given = PARAM.fullmatch(now) if len(gone) == 1 else None
    followed = _declared_as(scenario, gone[0], given.group(1)) if given else scenario
    renamed: dict[str, str] = {}
    for name in gone:
        users = [i for i, later in enumerate(followed.steps)
                 if i > index and _uses(later.to_dict(), name)]  # fmt: skip
        if not users:
            continue
        if given is None:
            where = ", ".join(f"step {i} ({scenario.steps[i].verb()})" for i in users)
            default = scenario.params.get(name, {}).get("default")
            raise ScenarioInvalid(
                f"step {index} typed ${{{name}}}, and {where} use it: typing "
                f"{now!r} instead, they would still look for ${{{name}}}"
                + (f" (its default {default!r})" if default is not None else ""),
                index=index, hint=f"to type another value, keep ${{{name}}} and change "
                "its default; or type one other parameter, which they then follow",
            )  # fmt: skip
        data = followed.to_dict()
        for i in users + ([index] if led_to else []):
            data["steps"][i] = renamed_in(data["steps"][i], name, given.group(1))
        followed, renamed[name] = type(scenario).from_dict(data), given.group(1)
    return followed, renamed


def _declared_as(scenario: Scenario, name: str, new: str) -> Scenario:
    """``scenario`` with ``new`` declared as ``name`` is, unless it declares ``new``
    already (or ``name`` not at all)."""
    if new in scenario.params or name not in scenario.params:
        return scenario
    return replace(scenario, params={**scenario.params, new: dict(scenario.params[name])})


def _with_secret(scenario: Scenario, index: int, name: str, value: str) -> Scenario:
    """Step ``index``'s typed ``value`` made the secret ``name``: every step that
    types the value types the secret (what it types is the same).  Spelled out
    anywhere else (a check, an address, an element's name, a default) it would stay
    in the scenario, its exports and its page, where no secret can stand: ScenarioInvalid
    names each place, and nothing changes."""
    secret, short = f"${{SECRET:{name}}}", len(value) < carried.MIN_CARRIED_CHARS
    steps = tuple(
        _typing_secret(step, value, secret) if i == index or not short else step
        for i, step in enumerate(scenario.steps)
    )
    hidden = replace(scenario, steps=steps)
    spelled = [] if short else spelling(hidden, value)
    if spelled:
        raise ScenarioInvalid(
            f"step {index}'s value can't be made a secret while it is spelled out "
            f"elsewhere: {'; '.join(spelled)}",
            index=index, hint="change or delete those first (a check can't hold a "
            "secret: it would show its value), then make it a secret",
        )  # fmt: skip
    return hidden


def spelling(scenario: Scenario, value: str) -> list[str]:
    """Where the scenario spells ``value`` out, in words (``step 4 (expect: its
    value)``): its steps' args and elements, its parameters' defaults, its name,
    description, address and interruptions."""
    where = []
    for i, step in enumerate(scenario.steps):
        data = step.to_dict()
        parts = [key for key, arg in data.pop("args").items() if spells(arg, value)]
        parts += [key.replace("identity", "element") for key, text in data.items()
                  if key != "action" and spells(text, value)]  # fmt: skip
        if parts:
            where.append(f"step {i} ({step.verb()}: its {', its '.join(parts)})")
    where += [f"the default of {p}" for p, spec in scenario.params.items() if spells(spec, value)]
    if spells([scenario.name, scenario.description, scenario.base_url], value):
        where.append("the scenario's name, description or base URL")
    handlers = [h for h in scenario.handlers if spells(h.to_dict(), value)]
    where += [f"the interruption {h.name!r}" for h in handlers]
    return where
