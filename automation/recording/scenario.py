"""The scenario format: steps to replay, each with how to find its element again.

A scenario is plain JSON with a format name and a version::

    {"format": "tabwright.scenario", "version": 1, "name": "Log in",
     "base_url": "http://shop.test", "params": {"email": {"default": "ada@example.org"}},
     "steps": [{"action": "navigate", "args": {"url": "http://shop.test/login"}},
               {"action": "fill", "args": {"value": "${email}"}, "identity": {...}},
               {"action": "fill", "args": {"value": "${SECRET:SHOP_PASSWORD}"}, ...},
               {"action": "click", "args": {}, "identity": {...}}]}

- A step is one action of :data:`STEP_ACTIONS` with its args (no ref: replay finds the
  element by the step's ``identity``, an :class:`ElementIdentity`; a step stored before
  identities existed keeps ``role``, ``name`` and ``selector`` and is found by those).
- ``${name}`` is a parameter: its value is given at replay, else its default.
- ``${SECRET:NAME}`` is a secret: at replay it is read from the environment variable
  ``TABWRIGHT_SECRET_NAME`` (only that prefix, so a scenario can't ask for any other
  variable).  Its value is never stored in a scenario, shown in an event or a result, nor
  sent to a model: :class:`Resolved` redacts it from whatever replay reports.
- ``${TOTP:NAME}`` types the current one-time code of the secret NAME (its TOTP seed),
  computed when the step runs (:func:`automation.secrets.totp_code`); the code is redacted
  as the secret's value is.
- ``$${`` writes a literal ``${``.
- ``led_to`` (optional, on a step): the page's address once the step had settled when it
  was recorded (``url`` is where a recorder's step was done, and where an agent's step
  ended): a step that sends a write and ends elsewhere at replay fails.
- ``sent`` (optional, on a click or a key): the write it sent when recorded ("POST
  /api/profile"): a replay fails the step when it sends none (:mod:`automation.recording.
  sent`).
- ``base_url`` is where it was recorded: replay against another base URL moves every
  navigation on that origin to the new one.
- ``handlers`` (optional): interruptions replay clears whenever they cover a step's
  element, each ``{"name", "when": <identity>, "steps": [...]}``
  (:mod:`automation.recording.handlers`).

:meth:`Scenario.from_dict` reads a scenario whole or refuses it with
:class:`~automation.errors.ScenarioInvalid` naming the step and field; nothing is partly read.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from automation.actions import validate
from automation.browser.address import same_page
from automation.browser.identity import CONTROL_CHARS, ElementIdentity
from automation.browser.interact import MODIFIERS, MOUSE_BUTTONS
from automation.browser.url_policy import http_url
from automation.errors import ActionInvalid, ParamMissing, ScenarioInvalid, UrlBlocked
from automation.limits import MAX_JSON_DEPTH
from automation.recording import expect, paramedits
from automation.recording import params as carried
from automation.recording.calls import CALL, call_args, check_calls, read_callees
from automation.recording.handlers import Handler, read_handlers
from automation.recording.paramedits import TYPED_ARG, renamed_in
from automation.recording.placeholders import (
    PLACEHOLDER,
    literal,
    map_texts,
    texts_in,
    unliteral,
)
from automation.recording.replaytabs import TABS, tab_args
from automation.recording.resolved import Resolved
from automation.recording.roles import check_role
from automation.recording.takes import replay_takes
from automation.secrets import SECRET_ENV_PREFIX, misplaced_secret
from automation.wording import Words, step_words, verb

__all__ = [
    "EXPECT",
    "FORMAT",
    "PLACEHOLDER",
    "SCENARIO_VERSION",
    "SECRET_ENV_PREFIX",
    "STEP_ACTIONS",
    "TYPED_ARG",
    "Resolved",
    "Scenario",
    "ScenarioStep",
    "literal",
    "map_texts",
    "plain_click",
    "renamed_in",
    "unliteral",
]

FORMAT = "tabwright.scenario"
SCENARIO_VERSION = 1
MAX_STEPS = 2_000
# What replay can do again.  Element steps find their element by identity; press, scroll
# and wait_for may have one; the others act on the page.
ELEMENT_ACTIONS = frozenset({"click", "double_click", "hover", "fill", "type", "select_option",
                             "check", "upload"})  # fmt: skip
OPTIONAL_ELEMENT_ACTIONS = frozenset({"press", "scroll", "wait_for"})
# Steps on the page as a whole ("dialog" arms the answer to the next dialog).
PAGE_ACTIONS = frozenset({"navigate", "back", "forward", "reload", "dialog"})
# An outcome check (automation.recording.expect): of the page, or of an element.
EXPECT = "expect"
# What a click ticks or unticks: its state is read before it, and again at the end.
BOX_ROLES = frozenset({"checkbox", "switch", "radio", "menuitemcheckbox", "menuitemradio"})
# What writes a field's value: what it shows is read before it and, when it is the last
# step that acts, again at the end (an app that puts the old value back fails it).
VALUE_ACTIONS = frozenset({"fill", "type", "select_option"})
# What may send a form the browser can refuse to send (a field not valid: form_not_sent),
# beside a fill whose Enter submits it.
SENDING_ACTIONS = frozenset({"click", "double_click", "press"})
# A step's ``sent``: a write's method and path (automation.recording.sent).
_SENT = re.compile(r"(?:POST|PUT|PATCH|DELETE) /\S{0,300}")
# Another scenario run at that point (automation.recording.calls); where the steps after
# it happen: a popup, its opener (automation.recording.replaytabs).
STEP_ACTIONS = ELEMENT_ACTIONS | OPTIONAL_ELEMENT_ACTIONS | PAGE_ACTIONS | {EXPECT, CALL, TABS}
# Recorded by a run but not part of what a scenario replays: they only read.
READ_ONLY_ACTIONS = frozenset({"read_page", "page_log", "highlight", "downloads", "tabs",
                               "cookies", "storage", "screenshot", "snapshot", "find",
                               "network_request"})  # fmt: skip

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # fullmatch: "$" would let a name end in "\n"
# A name, an address, a selector: one line of text.  Control characters and line breaks
# (CONTROL_CHARS) in them would break the line of a log, a listing or a terminal
# (``scenario_replay`` prints one line a step), so a scenario that has them is refused.
MAX_TEXT_CHARS = 10_000  # a step's name, selector, url or note; the scenario's base URL


def plain_click(args: Mapping[str, Any]) -> bool:
    """Whether a click step's ``args`` make a plain click: the left button, no modifier
    key (one that ticks a box, where another opens a menu or a tab)."""
    return args.get("button", "left") == "left" and not args.get("modifiers")


@dataclass(frozen=True)
class ScenarioStep:
    action: str
    args: dict[str, Any] = field(default_factory=dict)  # without a ref
    identity: ElementIdentity | None = None
    # Kept by steps stored before identities: how they are found then.
    role: str = ""
    name: str = ""
    selector: str = ""
    url: str = ""  # the page's address when it was recorded
    note: str = ""
    # What the step is for, in a few words ("set Tier to Gold", "open /customers/new
    # through 'Add'"): what replay reaches another way when the recorded path is gone.
    # Optional: steps stored without it read as their :meth:`describe`.
    intent: str = ""
    # Where the step led: the page's address once it settled, when recorded ("" in steps
    # stored before it).  A replay fails a step that sent a write and ended elsewhere
    # (:func:`automation.recording.answered.not_where_it_led`).
    led_to: str = ""
    # The write the step sent when recorded ("POST /api/profile"; "" when none or not
    # known): a replay fails the step when it sends none (automation.recording.sent).
    sent: str = ""

    @property
    def needs_element(self) -> bool:
        if self.action == EXPECT:
            return self.args.get("kind") in expect.ELEMENT_KINDS
        return self.action in ELEMENT_ACTIONS or (
            self.action in OPTIONAL_ELEMENT_ACTIONS and self.target() is not None
        )

    @property
    def is_check(self) -> bool:
        return self.action == EXPECT

    @property
    def judged_where_it_led(self) -> bool:
        """Whether a replay (and an export) judges where the step led, when it sent a
        write: a step with a ``led_to`` that acts on the page (a navigate goes where its
        address says, a check and a dialog's answer act on nothing, a call's steps are
        judged in the scenario it calls)."""
        return bool(self.led_to) and self.action not in ("navigate", "dialog", EXPECT, CALL, TABS)

    @property
    def leaves_the_page(self) -> bool:
        """Whether the step goes to another page (a navigation, back, forward, a reload,
        or a step whose recording led elsewhere than where it began, a link followed): a
        save the app left for later (a debounce) must be sent before it, as a person
        waits for "Saved" before going on, else it is never sent."""
        if self.action in ("navigate", "back", "forward", "reload"):
            return True
        moved = not same_page(self.led_to, self.url)
        return bool(self.led_to and self.url) and moved and self.action not in (EXPECT, CALL)

    def target(self) -> ElementIdentity | None:
        """How replay finds the step's element: its identity, else (older steps) its role,
        name and selector."""
        if self.identity is not None:
            return self.identity
        if self.selector or self.role:
            return ElementIdentity(
                role=self.role,
                name=self.name,
                selectors=(self.selector,) if self.selector else (),
                version=1,
            )
        return None

    def typed_value(self) -> str | None:
        """What a fill or type step types, when it is a value of its own (no placeholder
        in it): it can become a parameter or a secret."""
        value = self.args.get(TYPED_ARG.get(self.action, ""))
        if not isinstance(value, str):
            return None
        if any(match.group(0) != "$${" for match in PLACEHOLDER.finditer(value)):
            return None
        return unliteral(value)

    def words(self, quote: Callable[[str], str] = repr) -> Words:
        """The step in words (:func:`automation.wording.step_words`)."""
        return step_words(self.action, self.args, self.target(), quote=quote)

    def describe(self) -> str:
        """The step in words: ``click button 'Save'``, ``tick the checkbox in row 'Buy
        milk'`` (a check step ticks or unticks a box; "expect" asserts)."""
        return str(self.words())

    def verb(self) -> str:
        """The step's action as a person reads it: a ``check`` step *ticks* or *unticks*
        its box, an ``expect`` step *expects*."""
        return verb(self.action, self.args)

    def summary(self) -> str:
        """:meth:`describe` with where a navigate went, what a fill typed, the args of a
        step on no element."""
        return self.words().full

    def purpose(self) -> str:
        """The step's intent in words: as recorded, else made from what it does (a link
        or submit says where it leads; a choice, what it sets)."""
        if self.intent:
            return self.intent
        target = self.target()
        name = repr(target.name) if target and target.name else "the element"
        if self.action == "select_option":
            values = self.args.get("values")
            shown = ", ".join(values) if isinstance(values, list) else str(values)
            return f"set {name} to {shown}"
        if self.action == "check":
            return self.describe()
        if self.action in ("fill", "type"):
            return f"type into {name}"  # not what: it may become a parameter or a secret
        if self.action == "click" and target and target.target:
            where = urlsplit(target.target).path or "/"
            if target.method:
                return f"submit {name} ({target.method.upper()} {where})"
            return f"open {where} through {name}"
        return self.describe()

    def kept_state(self, left: bool | None = None) -> ScenarioStep | None:
        """The check of the state this step leaves, which the app keeps (a box it ticks
        is ticked; a box it clicks is as the click ``left`` it: the other way than it found
        it, a radio button on): read again at the end, as the checks after it are, should
        the app take it back once the save the step set off is answered.  None for other
        steps."""
        if self.identity is None:
            return None
        if self.action == "check":
            ticked = self.args.get("checked", True) is not False
        elif self.clicks_a_box() and left is not None:
            ticked = left
        else:
            return None
        kind = "checked" if ticked else "unchecked"
        return ScenarioStep(EXPECT, {"kind": kind}, self.identity, url=self.url)

    def clicks_a_box(self) -> bool:
        """Whether this step clicks a box (a checkbox, a switch, a radio button): what an
        agent or an MCP client does to tick one, where a person's recording says check."""
        role = self.identity.role if self.identity is not None else ""
        return self.action == "click" and plain_click(self.args) and role in BOX_ROLES

    def writes_a_value(self) -> bool:
        """Whether this step writes the value of a field it finds (types, picks an
        option): the app may put the old one back when the save it sets off fails."""
        return self.action in VALUE_ACTIONS and self.identity is not None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"action": self.action, "args": dict(self.args)}
        if self.identity is not None:
            data["identity"] = self.identity.to_dict()
        for key in ("role", "name", "selector", "url", "note", "intent", "led_to", "sent"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        return data

    @classmethod
    def from_dict(cls, data: object, *, index: int = 0) -> ScenarioStep:
        where = f"step {index}"
        if not isinstance(data, dict):
            raise ScenarioInvalid(f"{where}: a step is a JSON object", index=index)
        action = data.get("action")
        if not isinstance(action, str) or action not in STEP_ACTIONS:
            raise ScenarioInvalid(
                f"{where}: unknown step type {action!r}",
                index=index,
                hint="steps can be: " + ", ".join(sorted(STEP_ACTIONS)),
            )
        args = data.get("args", {})
        if not isinstance(args, dict):
            raise ScenarioInvalid(f"{where}: args must be an object", index=index)
        identity = None
        if data.get("identity") is not None:
            try:
                identity = ElementIdentity.from_dict(data["identity"])
            except ActionInvalid as exc:
                raise ScenarioInvalid(
                    f"{where}: {exc.message}", index=index, hint=exc.hint
                ) from None
        texts = {}
        for key in ("role", "name", "selector", "url", "note", "intent", "led_to", "sent"):
            value = data.get(key, "")
            if not isinstance(value, str):
                raise ScenarioInvalid(f"{where}: {key} must be text", index=index)
            _check_line(value, f"{where}: {key}", index=index)
            texts[key] = value
        if texts["sent"] and not _SENT.fullmatch(texts["sent"]):
            raise ScenarioInvalid(f"{where}: sent must be a write's method and path "
                                  "(\"POST /orders\")", index=index)  # fmt: skip
        try:
            check_role(texts["role"], what=f"{where}: role")
        except ActionInvalid as exc:
            raise ScenarioInvalid(exc.message, index=index, hint=exc.hint) from None
        step = cls(action, {k: v for k, v in args.items() if k != "ref"}, identity, **texts)
        if action == EXPECT:
            checked = expect.validate(step.args, has_element=step.target() is not None,
                                      index=index)  # fmt: skip
            return replace(step, args=checked)
        if action == CALL:
            return replace(step, args=call_args(step.args, where=where, index=index))
        if action == TABS:
            return replace(step, args=tab_args(step.args, where=where, index=index))
        if action in ELEMENT_ACTIONS and step.target() is None:
            raise ScenarioInvalid(
                f"{where}: {action} needs the element's identity (or at least its selector)",
                index=index,
            )
        return replace(step, args=step.check(index))

    def check(self, index: int = 0) -> dict[str, Any]:
        """The args fit the action (types, required values and their bounds: a wait of a
        minute at most, a key delay of 0 to 1000 ms), placeholders included; the args as
        the action takes them.  A number given for a text (``"url": 5``) is refused, not
        read as that text: a file says what it means (a model's call is forgiven it)."""
        self.check_secrets(index)
        if self.action == EXPECT:
            expect.validate(self.args, has_element=self.target() is not None, index=index)
            return self.args
        if self.action == CALL:
            call_args(self.args, where=f"step {index}", index=index)
            return self.args
        if self.action == TABS:
            tab_args(self.args, where=f"step {index}", index=index)
            return self.args
        probe = dict(self.args)
        if self.needs_element:
            probe["ref"] = "e1"  # found at replay; only its presence is checked here
        try:
            taken = validate(self.action, probe, exact=True)
        except ActionInvalid as exc:
            raise ScenarioInvalid(f"step {index}: {exc.message}", index=index) from None
        if self.action == "select_option":  # what it chooses, as replay takes it (str or list)
            values = self.args["values"]
            labels = [values] if isinstance(values, str) else values
            if not labels or not all(isinstance(label, str) for label in labels):
                raise ScenarioInvalid(
                    f"step {index}: select_option needs one option label or a list of labels",
                    index=index,
                )
        # What the click runs with is checked only when it runs; a scenario says it now
        # (the pytest export writes these values into code).
        # (null modifiers are none, as validate and the export take them)
        button, keys = self.args.get("button", "left"), self.args.get("modifiers") or []
        if button not in MOUSE_BUTTONS or not all(k in MODIFIERS for k in keys):
            raise ScenarioInvalid(
                f"step {index}: button must be one of {', '.join(MOUSE_BUTTONS)} and "
                f"modifiers of {', '.join(MODIFIERS)}",
                index=index,
            )
        return {key: taken.get(key, value) for key, value in self.args.items()}

    def check_secrets(self, index: int = 0) -> None:
        """ScenarioInvalid, naming the step and the arg, for a ``${SECRET:…}`` anywhere but
        in what a fill or type step types: in a URL, a key or a check it would be stored
        by the page, the server or the report."""
        if self.action == EXPECT:
            return  # expect.validate refuses a secret in a check, in its own words
        where = misplaced_secret(self.action, self.args)
        if where is not None:
            raise ScenarioInvalid(
                f"step {index} ({self.action}): ${{SECRET:…}} is allowed only in a typed "
                f"value (fill's value, type's text), not in {where}",
                index=index,
                hint="use a ${parameter} there, or type the secret into a field",
            )


@dataclass(frozen=True)
class Scenario:
    name: str
    steps: tuple[ScenarioStep, ...]
    description: str = ""
    base_url: str = ""
    params: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {default?}
    version: int = SCENARIO_VERSION
    # The scenarios its call steps call, and theirs, by name (automation.recording.calls).
    callees: dict[str, Scenario] = field(default_factory=dict)
    # The scenario (by name) that signs in again when a replay meets a sign-in page; every
    # replay runs it (automation.recording.relogin).
    login_scenario: str = ""
    handlers: tuple[Handler, ...] = ()  # interruptions it clears (automation.recording.handlers)

    # -- reading and writing -----------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        data = {
            "format": FORMAT,
            "version": SCENARIO_VERSION,
            "name": self.name,
            "description": self.description,
            "base_url": self.base_url,
            "params": {k: dict(v) for k, v in self.params.items()},
            "steps": [s.to_dict() for s in self.steps],
            **({"login_scenario": self.login_scenario} if self.login_scenario else {}),
            **({"callees": {name: {k: v for k, v in callee.to_dict().items() if k != "callees"}
                            for name, callee in self.callees.items()}}
               if self.callees else {}),
        }  # fmt: skip
        if self.handlers:
            data["handlers"] = [h.to_dict() for h in self.handlers]
        return data

    @classmethod
    def from_dict(cls, data: object) -> Scenario:
        """Read a whole scenario or refuse it: ScenarioInvalid says where and why."""
        if not isinstance(data, dict):
            raise ScenarioInvalid("a scenario is a JSON object")
        _check_json(data)
        if data.get("format", FORMAT) != FORMAT:
            raise ScenarioInvalid(f"not a Tabwright scenario (format {data.get('format')!r})")
        version = data.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ScenarioInvalid(f"bad scenario version {version!r}")
        if version > SCENARIO_VERSION:
            raise ScenarioInvalid(
                f"scenario version {version} is newer than this Tabwright reads "
                f"({SCENARIO_VERSION})",
                hint="upgrade Tabwright to use this scenario",
            )
        name = data.get("name", "")
        if not isinstance(name, str) or not name.strip():
            raise ScenarioInvalid("a scenario needs a name")
        for key in ("description", "base_url", "login_scenario"):
            if not isinstance(data.get(key, ""), str):
                raise ScenarioInvalid(f"{key} must be text")
        _check_line(name, "the name")
        _check_line(data.get("base_url", ""), "base_url")
        _check_base(data.get("base_url", ""))
        _check_line(data.get("login_scenario", ""), "login_scenario")
        steps = data.get("steps")
        if not isinstance(steps, list):
            raise ScenarioInvalid("steps must be a list")
        if len(steps) > MAX_STEPS:
            raise ScenarioInvalid(f"too many steps ({len(steps)}; at most {MAX_STEPS})")
        params = _params(data.get("params", {}))
        scenario = cls(
            name=name.strip(),
            steps=tuple(ScenarioStep.from_dict(s, index=i) for i, s in enumerate(steps)),
            description=data.get("description", ""),
            base_url=data.get("base_url", ""),
            params=params,
            callees=read_callees(data.get("callees", {}), cls.from_dict),
            login_scenario=data.get("login_scenario", "").strip(),
            handlers=read_handlers(data.get("handlers"), _read_step),
        )
        check_calls(scenario, missing_ok=True)  # a cycle, a parameter the callee lacks
        return scenario

    # -- parameters and secrets --------------------------------------------------------

    def placeholders(self) -> tuple[set[str], set[str]]:
        """The parameter names and the secret names its steps use: in their args, and
        (declared parameters only, :mod:`automation.recording.params`) in their
        elements' identities."""
        params: set[str] = set()
        secrets: set[str] = set()
        for step in self.steps:
            # A call's scenario is a name ("Promo ${code}" is no parameter): its values are.
            given = step.args.get("params", {}) if step.action == CALL else step.args
            for text in texts_in(given):
                for match in PLACEHOLDER.finditer(text):
                    if match.group(2):
                        (secrets if match.group(1) else params).add(match.group(2))
            params |= carried.used_in(step.target(), self.params)  # (a role and name too)
        return params, secrets

    def resolve(
        self, values: Mapping[str, str] | None = None, *, env: Mapping[str, str] | None = None
    ) -> Resolved:
        """Every placeholder's value, checked before the first step runs: ParamMissing
        names each parameter without a value and each secret without its variable.  A
        value for a parameter only its login scenario has is taken, not needed here
        (:mod:`automation.recording.takes`): the login scenario needs it if it signs in."""
        values = dict(values or {})
        env = os.environ if env is None else env
        params, secrets = self.placeholders()
        takes = replay_takes(self)
        unknown = sorted(set(values) - set(takes))
        if unknown:
            raise ScenarioInvalid(
                f"no such parameter: {', '.join(unknown)}",
                hint="parameters of this scenario: " + (", ".join(takes) or "none"),
            )
        resolved: dict[str, str] = {}
        missing: list[str] = []
        for name in sorted(params):
            if name in values:
                resolved[name] = str(values[name])
            elif self.params.get(name, {}).get("default") is not None:
                resolved[name] = str(self.params[name]["default"])
            else:
                missing.append(f"parameter {name!r}")
        secret_values: dict[str, str] = {}
        for name in sorted(secrets):
            value = env.get(SECRET_ENV_PREFIX + name)
            if value is None:
                missing.append(f"secret {name!r} (environment variable {SECRET_ENV_PREFIX}{name})")
            else:
                secret_values[name] = value
        if missing:
            raise ParamMissing("no value for " + "; ".join(missing))
        return Resolved(resolved, secret_values, typed=self.typed_values())

    def typed_values(self) -> tuple[str, ...]:
        """The values its steps type as they are (no placeholder in them), of
        :data:`~automation.recording.params.MIN_CARRIED_CHARS` or more: a search's."""
        typed = (step.typed_value() for step in self.steps)
        return tuple(
            dict.fromkeys(v for v in typed if v and len(v.strip()) >= carried.MIN_CARRIED_CHARS)
        )

    def with_param(self, index: int, name: str, *, secret: bool = False) -> Scenario:
        """The scenario with step ``index``'s typed value made a parameter (its value the
        default) or a secret (its value dropped): :func:`automation.recording.paramedits.
        with_param`."""
        return paramedits.with_param(self, index, name, secret=secret)

    def following(
        self, index: int, was: Mapping[str, Any], *, led_to: bool = True
    ) -> tuple[Scenario, dict[str, str]]:
        """The scenario, whose step ``index`` had args ``was`` before a person edited
        them, with the later steps following the edit, and the parameters they follow:
        :func:`automation.recording.paramedits.following`."""
        return paramedits.following(self, index, was, led_to=led_to)

    def spelling(self, value: str) -> list[str]:
        """Where the scenario spells ``value`` out, in words:
        :func:`automation.recording.paramedits.spelling`."""
        return paramedits.spelling(self, value)


def _read_step(data: object, index: int) -> ScenarioStep:
    return ScenarioStep.from_dict(data, index=index)


def _check_line(text: str, what: str, *, index: int | None = None) -> None:
    """ScenarioInvalid unless ``text`` is one line of sane length."""
    if len(text) > MAX_TEXT_CHARS:
        raise ScenarioInvalid(f"{what} is longer than {MAX_TEXT_CHARS}", index=index)
    if CONTROL_CHARS.search(text):
        raise ScenarioInvalid(f"{what} holds a control character or a line break", index=index)


def _check_base(url: str) -> None:
    """ScenarioInvalid unless the base URL is none or an http(s) address with a host:
    replay moves the scenario's navigations to it and opens it (a ``javascript:`` one
    would be refused then, after the file was taken)."""
    if not url.strip():
        return
    try:
        http_url(url)
    except UrlBlocked as exc:
        raise ScenarioInvalid(f"base_url: {exc.message}", hint=exc.hint) from None


def _check_json(data: object) -> None:
    """ScenarioInvalid for what no JSON text can be stored as: a number that is not finite
    (Python's parser reads 1e400 as inf, and NaN; a database's JSON refuses them, untyped)
    or values nested deeper than MAX_JSON_DEPTH, as JSON from outside may nest (each reader
    of args recurses).  Walked without recursion."""
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise ScenarioInvalid(f"a number is {value}: a scenario's numbers are finite")
        if isinstance(value, dict | list):
            if depth >= MAX_JSON_DEPTH:
                raise ScenarioInvalid(f"values are nested deeper than {MAX_JSON_DEPTH}")
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)


def _params(data: object) -> dict[str, dict[str, Any]]:
    if not isinstance(data, dict):
        raise ScenarioInvalid("params must be an object of name -> {default}")
    out = {}
    for name, spec in data.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ScenarioInvalid(f"params: {name!r} is not a parameter name (letters, digits, _)")
        if spec is None:
            spec = {}
        if not isinstance(spec, dict):
            raise ScenarioInvalid(f"parameter {name!r}: expected an object with a default")
        default = spec.get("default")
        if default is not None and not isinstance(default, str | int | float):
            raise ScenarioInvalid(f"parameter {name!r}: the default must be text")
        out[name] = {k: v for k, v in spec.items() if k in ("default", "description")}
        if default is not None:  # a number or true/false: its text, as the API takes values
            out[name]["default"] = _as_text(default)
    return out


def _as_text(value: str | int | float) -> str:
    """A parameter's value as a spreadsheet or JSON writes it: true/false, not Python's
    True/False (a bool is an int)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
