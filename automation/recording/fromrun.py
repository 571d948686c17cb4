"""A run's recorded steps as a scenario: what is kept, what is left out and why.

Saving a run must never drop a step silently: a replay of a scenario that lost a step may
pass while the page ends up wrong.  :func:`plan` reads every recorded step
(``StepRecorded`` as stored) and says for each whether it becomes a scenario step or why
it is left out:

- it failed (its error is the reason): left out, unless the person keeps it because its
  effect is visible on the page (a tick reported failed that did tick), which is only
  possible when its element was identified;
- it only read the page (read_page, page_log, screenshot, a list of the tabs...), or it
  is an action replay can't do (evaluate, files, shell);
- it switched to a tab the run's own steps did not open as a popup (``tabs`` open, a
  select of another tab), or it ran in such a tab: a replay could not find that tab, so
  such a step would act in the wrong window (the popup's name typed into the main form).
  A move into a popup a kept step opened, back to its opener (a popup that closed itself,
  its Save), or back to the first tab is kept as a ``tabs`` step, and the steps there
  with it (:mod:`automation.recording.replaytabs`);
- its element was never identified, or the step can't be read back as a scenario step.

:func:`from_run_steps` builds the scenario from the plan, the steps the person keeps, and
the outcome checks they tick (``expect`` steps, appended at the end).  A value typed into a
password field becomes a secret named after the field, a value typed into a one-time code
field (``autocomplete="one-time-code"``) a ``${TOTP:…}`` of that name.  A ``dialog`` step
answers, replayed, the kind of dialog its arming answered in the run (the ``dialogs`` of
the steps after it): a dialog of another kind is then one no step armed.

What a run types is text as it is, but for its ``${SECRET:…}`` and ``${TOTP:…}``; in a
scenario, ``${name}`` is a parameter too.  So the steps of a conversation, of a person and
of an MCP client have every other ``${`` written ``$${`` (:func:`~automation.recording.
scenario.literal`): replayed, they type what the run typed.  The steps a replay recorded
(``by="replay"``) hold its scenario's own args, placeholders and all, and are kept as they
are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urlsplit, urlunsplit

from automation.actions import ACTIONS, validate
from automation.browser.dialogs import DIALOG_KINDS
from automation.browser.identity import ElementIdentity
from automation.errors import ActionInvalid, ScenarioInvalid, TabwrightError
from automation.recording.calls import CALL
from automation.recording.pageevents import is_web
from automation.recording.params import MIN_CARRIED_CHARS
from automation.recording.placeholders import hide, spells
from automation.recording.rebase import first_folder
from automation.recording.replaytabs import TABS
from automation.recording.scenario import (
    READ_ONLY_ACTIONS,
    STEP_ACTIONS,
    TYPED_ARG,
    Scenario,
    ScenarioStep,
    literal,
    map_texts,
)
from automation.secrets import MASK, SECRET_RE

__all__ = ["Planned", "from_run_steps", "plan", "typed_passwords"]


@dataclass(frozen=True)
class Planned:
    """One recorded step of the run and what saving does with it."""

    index: int  # the run's step index
    action: str
    step: ScenarioStep | None  # what it becomes (also for a failed step that could be kept)
    reason: str = ""  # why it is left out ("" when it is kept)
    keepable: bool = False  # left out, but the person may keep it

    @property
    def kept(self) -> bool:
        return not self.reason

    def describe(self) -> str:
        if self.step is None:
            return self.action
        return self.step.summary()


def plan(rows: Sequence[Mapping[str, Any]], *, passwords: Sequence[str] = ()) -> list[Planned]:
    """Every recorded step, in order, with what saving does with it.  ``passwords``: more
    that the run typed, which its steps show masked (found in the person's words), kept
    out of the scenario as those its steps show."""
    out = []
    typed_at: dict[str, tuple[int | None, str]] = {}  # a typed password: its step, its secret
    where = _Where()  # the tab the steps run in, as a replay can follow it
    for position, row in enumerate(rows):
        index = int(row.get("index", position))
        action = str(row.get("action", ""))
        if row.get("by") == "call":  # kept as the call step that ran it
            out.append(Planned(index, action, None, "a step of a scenario it called"))
            continue
        # Left out because it failed, whatever else it lacks: one whose ref was not found
        # has no element identity, a fill_form that failed whole was never split into fills.
        failed = _failure(row)
        if action == TABS:
            out.append(Planned(index, TABS, None, failed) if failed else where.move(index, row))
            continue
        if not where.known and action in STEP_ACTIONS:
            out.append(Planned(index, action, None, failed or _OTHER_TAB))
            continue
        if action not in STEP_ACTIONS:
            why = (
                "it only read the page"
                if action in READ_ONLY_ACTIONS
                else f"replay can't do {action!r} steps"
            )
            out.append(Planned(index, action, None, failed or why))
            continue
        args = dict(row.get("args") or {})
        identity = row.get("identity")
        if "ref" in args and not identity and not row.get("selector"):
            out.append(Planned(index, action, None, failed or "its element was not identified"))
            continue
        args = {k: v for k, v in args.items() if k not in ("ref", "timeout_ms")}
        if action == "dialog" and "kind" not in args and (kind := _answered_kind(rows, position)):
            args["kind"] = kind  # another kind of dialog fails its replay: not this answer's
        data = {
            "action": action,
            "args": args,
            "identity": identity,
            "url": row.get("url", ""),
            "led_to": row.get("led_to") or "",
            "sent": row.get("sent") or "",
        }
        if not identity:
            data.update(role=row.get("role", ""), name=row.get("name", ""),
                        selector=row.get("selector", ""))  # fmt: skip
        try:
            if row.get("by") != "replay":
                data["args"] = _as_written(_as_taken(action, args))
            typed = ScenarioStep.from_dict(data, index=index)
            step = _secret_if_password(typed)
            if step is not typed and _typed(step).startswith("${SECRET:"):
                typed_at[str(typed.typed_value())] = (index, _typed(step))
        except ScenarioInvalid as exc:
            why = f"it can't be replayed: {exc.message}"
            out.append(Planned(index, action, None, failed or why))
            continue
        if failed:  # the person may keep it: its effect may show on the page all the same
            out.append(Planned(index, action, step, failed, keepable=True))
            continue
        out.append(Planned(index, action, step))
    # One the steps show masked was typed by the first password field's step, if any.
    first = next(iter(typed_at.values()), (None, "${SECRET:PASSWORD}"))
    for value in passwords:
        typed_at.setdefault(value, first)
    return [_password_hidden(planned, typed_at) for planned in out]


def _answered_kind(rows: Sequence[Mapping[str, Any]], position: int) -> str:
    """The kind of dialog (alert, confirm, prompt) the dialog step at ``position`` answered
    in the run: the steps after it, up to the next dialog step (which replaces its
    arming), answered dialogs of that kind alone; "" when none, or of several kinds."""
    kinds = set()
    for row in rows[position + 1 :]:
        if row.get("action") == "dialog":
            break
        answered = row.get("dialogs")
        for dialog in answered if isinstance(answered, list) else []:
            kinds.add(dialog.get("type") if isinstance(dialog, dict) else None)
    kind = kinds.pop() if len(kinds) == 1 else None
    return kind if kind in DIALOG_KINDS else ""


def _failure(row: Mapping[str, Any]) -> str:
    """Why a recorded step that failed is left out, in its error's words; "" if it did not."""
    if row.get("ok", True):
        return ""
    error = row.get("error") or {}
    message = error.get("message", "") if isinstance(error, dict) else str(error)
    return f"it failed: {message or 'no reason given'}"


def typed_passwords(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The passwords the run's steps typed as they are (into a field the run did not
    mask: a "show password" switch made it text), in order."""
    out = []
    for row in rows:
        key = TYPED_ARG.get(str(row.get("action", "")))
        value = (row.get("args") or {}).get(key) if key else None
        if not isinstance(value, str) or not value or MASK in value or SECRET_RE.search(value):
            continue
        try:
            if ElementIdentity.from_dict(row.get("identity")).holds_password():
                out.append(value)
        except TabwrightError:
            continue
    return list(dict.fromkeys(out))


_SWITCHED = (
    "it switched to a tab the run's own steps did not open as a popup: replay can't follow it "
    "(the steps there are left out)"
)
_OTHER_TAB = (
    "it ran in a tab the run's own steps did not open as a popup (one it opened itself, or "
    "one a step not kept opened): replay can't act there"
)


class _Where:
    """Where a run's steps happen, as its ``tabs`` steps say (their ``to``: where the move
    went, :func:`~automation.recording.replaytabs.moved_to`): the run's first tab, a popup
    its kept steps opened (``depth`` of them entered), or another tab (not ``known``)."""

    def __init__(self) -> None:
        self.depth = 0
        self.known = True

    def move(self, index: int, row: Mapping[str, Any]) -> Planned:
        """A ``tabs`` step that did not fail (one that did is left out as failed)."""
        args = dict(row.get("args") or {})
        op = args.get("op", "list")
        if op == "list":
            return Planned(index, TABS, None, "it only read the page")
        # A replay's and a person's (the recorder's) tabs steps say where they went.
        said = row.get("by") in ("replay", "person") and op in ("popup", "opener", "first")
        to = op if said else None
        to = to or args.get("to") or ("first" if op == "select" and args.get("index") == 0 else "")
        step_args: dict[str, Any] = {"op": to}
        if to == "popup" and self.known:
            self.depth += 1
        elif to == "opener" and self.known and self.depth:
            self.depth -= 1
            if op in ("closed", "opener") and (args.get("closed") or op == "closed"):
                step_args.update(closed=True, changed=bool(args.get("changed")))
        elif to == "first":
            self.known, was = True, self.depth
            self.depth = 0
            if not was:  # the replay is there already
                return Planned(index, TABS, None, "it went back to the tab the replay is in")
        else:
            self.known = False
            return Planned(index, TABS, None, _SWITCHED)
        return Planned(index, TABS, ScenarioStep.from_dict({"action": TABS, "args": step_args}))


def from_run_steps(
    rows: Sequence[Mapping[str, Any]],
    *,
    name: str,
    base_url: str = "",
    keep: Sequence[int] = (),
    checks: Sequence[ScenarioStep] = (),
    placed_checks: Sequence[tuple[int, ScenarioStep]] = (),
    passwords: Sequence[str] = (),
) -> Scenario:
    """A scenario from a run's recorded steps: those :func:`plan` keeps, the failed ones
    whose run index is in ``keep``, then ``checks``.  ``placed_checks`` go where they were
    proposed: ``(index, check)`` right after the run's step ``index`` (a conversation's
    earlier stretch ended there); ``passwords`` as :func:`plan` takes them.  Its
    description lists every step left out, with why."""
    kept: list[tuple[int, ScenarioStep]] = []  # (run index, step)
    left_out: list[str] = []
    for planned in plan(rows, passwords=passwords):
        if planned.kept or (planned.keepable and planned.index in keep):
            assert planned.step is not None
            kept.append((planned.index, planned.step))
        else:
            left_out.append(f"step {planned.index} ({planned.describe()}): {planned.reason}")
    last = max((index for index, _ in kept), default=-1)
    for after, check in [*placed_checks, *((last, check) for check in checks)]:
        if not check.is_check:
            raise ScenarioInvalid(f"{check.action} is not a check")
        # After every kept step up to ``after`` and the checks placed there before it.
        at = sum(1 for index, _ in kept if index <= after)
        kept.insert(at, (after, check))
    note = ""
    if left_out:
        note = f"Left out of the run's {len(rows)} steps: " + "; ".join(left_out)
    steps = _starting_where_it_acted(tuple(step for _, step in kept))
    return Scenario(
        name=name, steps=steps, base_url=base_url or first_folder(steps), description=note[:4000]
    )


def _starting_where_it_acted(steps: tuple[ScenarioStep, ...]) -> tuple[ScenarioStep, ...]:
    """``steps`` going first to the page their first step acted on, where that step is no
    navigation (a later request of a conversation saved alone began where the one before
    it left the tab): a replay starts on a blank tab."""
    first = next((step for step in steps if not step.is_check), None)
    if first is None or first.action in ("navigate", CALL, TABS) or not is_web(first.url):
        return steps
    return (ScenarioStep("navigate", {"url": first.url}, url=first.url), *steps)


def _as_taken(action: str, args: dict[str, Any]) -> dict[str, Any]:
    """A run's args with a number a model gave for a text as the text the action took
    (a fill of 42 typed "42"): a scenario file takes texts only."""
    numbers = [k for k, v in args.items() if isinstance(v, int | float) and not isinstance(v, bool)]
    if not numbers or action not in ACTIONS:
        return args
    try:
        taken = validate(action, {**args, "ref": "e1"})
    except ActionInvalid:
        return args  # (refused as the file's step, saying why)
    return {**args, **{k: taken[k] for k in numbers if isinstance(taken.get(k), str)}}


def _as_written(args: dict[str, Any]) -> dict[str, Any]:
    """A run's args (texts as they are, but for their secrets' placeholders) in the
    scenario format."""
    return map_texts(args, _text_as_written)


def _text_as_written(text: str) -> str:
    """ScenarioInvalid where a ``$`` stands right before a secret's placeholder: the
    scenario format has no way to write that."""
    out, at = [], 0
    for match in SECRET_RE.finditer(text):
        before = text[at : match.start()]
        if before.endswith("$"):
            raise ScenarioInvalid(
                f"a '$' right before {match.group(0)} can't be written in a scenario"
            )
        out += [literal(before), match.group(0)]
        at = match.end()
    return "".join([*out, literal(text[at:])])


def _secret_if_password(step: ScenarioStep) -> ScenarioStep:
    """A value typed into a password field becomes a ``${SECRET:…}``, into a field the
    page marks as a one-time code's (``autocomplete="one-time-code"``) a ``${TOTP:…}``,
    named after the field; one the run took from a secret (or a replay from a parameter)
    keeps its placeholder: the secret it named is the one granted."""
    identity = step.identity
    key = TYPED_ARG.get(step.action)
    if identity is None or key is None or step.typed_value() is None:
        return step
    one_time = "one-time-code" in identity.autocomplete.split()
    if not identity.holds_password() and not one_time:
        return step
    kind, default = ("TOTP", "OTP") if one_time else ("SECRET", "PASSWORD")
    label = identity.name_attr or identity.id or identity.name or default
    name = re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_").upper() or default
    return replace(step, args={**step.args, key: f"${{{kind}:{name}}}"})


def _typed(step: ScenarioStep) -> str:
    return str(step.args.get(TYPED_ARG.get(step.action, ""), ""))


def _password_hidden(planned: Planned, passwords: Mapping[str, tuple[int | None, str]]) -> Planned:
    """``planned`` with no password of the run's in what it does: another field that types
    it types its secret; a parameter of an address (where it ran, where it led: a form
    sent by GET) that holds it is dropped (a parameter the app adds names no other place);
    a step whose args still spell it out (a check, an address to go to) is left out,
    saying so."""
    step = planned.step
    for value, (at, secret) in passwords.items():
        if step is None or len(value) < MIN_CARRIED_CHARS:
            continue
        key = TYPED_ARG.get(step.action, "")
        text = step.args.get(key)
        if isinstance(text, str):
            step = replace(step, args={**step.args, key: hide(text, value, secret)})
        step = replace(step, url=_unsent(step.url, value), led_to=_unsent(step.led_to, value),
                       sent="" if value in step.sent else step.sent)  # fmt: skip
        if _spells(_args_spelled(step), value):
            typed = f"the password typed at step {at}" if at is not None else "a password typed"
            why = f"it spells out {typed}, which a scenario can't keep"
            return Planned(planned.index, planned.action, None, why)
    return replace(planned, step=step)


def _unsent(url: str, value: str) -> str:
    """``url`` without the query parameters whose value holds ``value``."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(k, v) for k, v in pairs if value not in v]
    if len(kept) == len(pairs):
        return url
    return urlunsplit(parts._replace(query=urlencode(kept)))


def _args_spelled(step: ScenarioStep) -> dict[str, Any]:
    """A step's args where a password would be spelled out: a navigate's address only in
    its query (a password "admin" is no reason to leave out a visit to /admin/)."""
    if step.action != "navigate":
        return step.args
    return {**step.args, "url": urlsplit(str(step.args.get("url", ""))).query}


def _spells(data: Any, value: str) -> bool:
    """Whether a text in ``data`` spells ``value`` out: as it is, written literally, or
    URL-encoded."""
    return any(spells(data, form) for form in {value, quote(value, safe=""), quote_plus(value)})
