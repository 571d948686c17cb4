"""Forms of scenarios: import, replay, save a run as one, edit."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from django import forms

from automation.actions import ACTIONS, Param
from automation.errors import ScenarioInvalid, UrlBlocked
from automation.recording import downloads, expect
from automation.recording.calls import CALL, call_args
from automation.recording.fromrun import Planned
from automation.recording.passwords import TypedPasswords
from automation.recording.propose import Proposal
from automation.recording.replaytabs import TABS
from automation.recording.scenario import EXPECT, MAX_TEXT_CHARS, TYPED_ARG
from automation.recording.scenario import Scenario as Document
from automation.recording.scenario import ScenarioStep as DocumentStep
from automation.recording.takes import replay_takes
from dashboard.engineconf import base_url_checked
from dashboard.lib import jsonin
from dashboard.lib.jsonin import JsonRefused
from dashboard.lib.urls import UrlInvalid
from dashboard.models import Scenario, ScenarioStep
from dashboard.runs.forms import heal_model_field, signin_field

MAX_SCENARIO_BYTES = 20 * 1024 * 1024


class ImportScenarioForm(forms.Form):
    file = forms.FileField(label="Scenario file (.json)")

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        upload = cleaned.get("file")
        if upload is None:
            return cleaned
        if upload.size > MAX_SCENARIO_BYTES:
            raise forms.ValidationError(f"the file is over {MAX_SCENARIO_BYTES} bytes")
        try:
            cleaned["data"] = jsonin.loads(
                upload.read(), max_bytes=MAX_SCENARIO_BYTES, what="the file", no_nul=True
            )
        except JsonRefused as exc:
            message = f"not a JSON file: {exc}" if exc.code == "bad_json" else str(exc)
            raise forms.ValidationError(message) from None
        return cleaned


class ReplayForm(forms.Form):
    """Where to replay a scenario, and a field for each parameter a replay of it takes
    (secrets come from the server's environment, never from a form): its own, then its
    login scenario's in a group of their own, each optional (needed if it signs in again:
    automation.recording.takes)."""

    base_url = forms.CharField(label="Base URL", max_length=2000, required=False)

    def __init__(
        self, *args: object, document: Document, user: Any = None, **kwargs: object
    ) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        if user is not None:  # the profiles the person may start with
            self.fields["signin_profile"] = signin_field(user)
        self.fields["llm_profile"] = heal_model_field()
        self.fields["base_url"].initial = document.base_url
        self.fields["base_url"].help_text = "where it runs (recorded at " + (
            document.base_url or "an unknown address") + ")"  # fmt: skip
        takes = replay_takes(document)
        self.login_name = next((taken.login for taken in takes.values() if taken.login), "")
        self.login_keys = [f"param_{name}" for name, taken in takes.items() if taken.login]
        for name, taken in takes.items():
            self.fields[f"param_{name}"] = forms.CharField(  # typed as given, spaces too
                label=name,
                required=taken.needed,
                initial=taken.default,
                max_length=10_000,
                strip=False,
            )

    def own_fields(self) -> list[forms.BoundField]:
        return [self[key] for key in self.fields if key not in self.login_keys]

    def login_fields(self) -> list[forms.BoundField]:
        """The login scenario's parameters, for when the replay signs in again."""
        return [self[key] for key in self.login_keys]

    def clean_base_url(self) -> str:
        url = self.cleaned_data["base_url"].strip()
        if not url:
            return ""
        try:
            return base_url_checked(url)
        except (UrlInvalid, UrlBlocked) as exc:
            raise forms.ValidationError(str(exc)) from None

    def signin_profile_id(self) -> int | None:
        profile = self.cleaned_data.get("signin_profile")
        return profile.pk if profile is not None else None

    def llm_profile_id(self) -> int | None:
        profile = self.cleaned_data.get("llm_profile")
        return profile.pk if profile is not None else None

    def params(self) -> dict[str, str]:
        """The values given (a login scenario's left empty: none, it takes its default)."""
        return {
            key.removeprefix("param_"): value
            for key, value in self.cleaned_data.items()
            if key.startswith("param_") and (value or key not in self.login_keys)
        }


# -- saving a run as a scenario ------------------------------------------------------------


class SaveScenarioForm(forms.Form):
    """Save a run: its name, which failed steps to keep (those whose element is known),
    and which proposed checks to add (the picked ones ticked to begin with).  A name
    holding a password the run typed (``typed``) is refused; the requests' labels show
    them masked."""

    name = forms.CharField(label="Name", max_length=200)
    keep = forms.TypedMultipleChoiceField(
        label="Keep these steps", required=False, coerce=int, widget=forms.CheckboxSelectMultiple
    )
    checks = forms.TypedMultipleChoiceField(
        label="Check the outcome", required=False, coerce=int,
        widget=forms.CheckboxSelectMultiple,
    )  # fmt: skip

    stretches = forms.TypedMultipleChoiceField(
        label="Requests to save", required=False, coerce=int,
        widget=forms.CheckboxSelectMultiple,
    )  # fmt: skip

    def __init__(
        self,
        *args: Any,
        plan: list[Planned],
        proposals: list[Proposal],
        requests: Sequence[str] = (),
        typed: TypedPasswords | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.typed = typed or TypedPasswords()
        # A conversation: the work of each message (its stretch) can be left out.
        if len(requests) > 1:
            self.fields["stretches"].choices = [  # type: ignore[attr-defined]
                (n, f"{n}. {' '.join(self.typed.mask(text).split())[:120]}")
                for n, text in enumerate(requests, start=1)
            ]
            if not self.is_bound:
                self.fields["stretches"].initial = list(range(1, len(requests) + 1))
        else:
            del self.fields["stretches"]
        keep = self.fields["keep"]
        keep.choices = [(p.index, p.describe()) for p in plan if p.keepable]  # type: ignore[attr-defined]
        checks = self.fields["checks"]
        checks.choices = [  # type: ignore[attr-defined]
            (i, p.check.words().target) for i, p in enumerate(proposals)
        ]
        if not self.is_bound:
            checks.initial = [i for i, p in enumerate(proposals) if p.picked]

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        try:
            self.typed.check_name(name)
        except ScenarioInvalid as exc:
            message = f"The name holds a password the run typed; {exc.hint}."
            raise forms.ValidationError(message) from None
        return name


# -- scenario edits ----------------------------------------------------------------------


class ScenarioEditForm(forms.Form):
    name = forms.CharField(label="Name", max_length=200)
    description = forms.CharField(
        label="Description",
        required=False,
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 3}),
    )


STEP_GONE = ("That step is gone, or has no element (changed in another tab?): "
             "choose the step again.")  # fmt: skip


class CheckForm(forms.Form):
    """A new check of a scenario's outcome: of the page, or of the element of a step."""

    KINDS = (
        ("text_visible", "text is shown"),
        ("text_hidden", "text is not shown"),
        ("rows", "rows showing a text"),
        ("url", "the address holds"),
        ("no_error", "the page shows no error"),
        ("visible", "the step's element is on the page"),
        ("checked", "the step's element is ticked"),
        ("unchecked", "the step's element is not ticked"),
        ("value", "the step's element shows a value"),
    )
    kind = forms.ChoiceField(label="Check", choices=KINDS)
    text = forms.CharField(label="Text", required=False, max_length=1_000)
    count = forms.IntegerField(label="Rows", required=False, min_value=0, max_value=10_000)
    url = forms.CharField(label="Address part", required=False, max_length=2_000)
    value = forms.CharField(label="Value", required=False, max_length=1_000, strip=False)
    # Its choices are steps by id (a page shown before the steps moved means the same one).
    step = forms.TypedChoiceField(label="Element of step", required=False, coerce=int,
                                  empty_value=None,
                                  error_messages={"invalid_choice": STEP_GONE})  # fmt: skip

    def __init__(self, *args: Any, element_steps: list[tuple[int, str]], **kwargs: Any) -> None:
        kwargs.setdefault("prefix", "check")
        super().__init__(*args, **kwargs)
        self.fields["step"].choices = [("", "—"), *element_steps]  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        kind = cleaned.get("kind")
        if kind is None:
            return cleaned
        needs = {name for name in expect.KINDS[kind] if name != "kind"}
        for name in needs:
            if cleaned.get(name) in (None, "") and not (name == "value"):
                self.add_error(name, f"This check needs its {self.fields[name].label.lower()}.")
        element = kind in expect.ELEMENT_KINDS
        if element and cleaned.get("step") is None:
            self.add_error("step", "Choose the step whose element the check is about.")
        return cleaned

    def args(self) -> dict[str, Any]:
        kind = self.cleaned_data["kind"]
        args: dict[str, Any] = {"kind": kind}
        for name in expect.KINDS[kind]:
            value = self.cleaned_data.get(name)
            args[name] = value if value is not None else ""
        return args

    def like_step(self) -> int | None:
        if self.cleaned_data["kind"] not in expect.ELEMENT_KINDS:
            return None
        return self.cleaned_data.get("step")


class StepValuesForm(forms.Form):
    """A scenario step's values: a field for each arg its action takes (never a ref: replay
    finds the element by the step's identity).  Lists are written one item per line."""

    def __init__(self, *args: object, step: ScenarioStep, **kwargs: object) -> None:
        kwargs.setdefault("prefix", f"step{step.index}")
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.action = step.action
        self.stored = dict(step.args)
        self.types: dict[str, Any] = {}
        spec = ACTIONS.get(step.action)
        params = list(spec.params) if spec else []
        if step.action == EXPECT:  # a check's values: its text, count, URL, value, items
            params = check_params(str(step.args.get("kind", "")))
        if step.action == TABS:  # where the steps after it happen, as the run went: no values
            params = []
        if step.action == CALL:  # the values it passes to the scenario it calls
            given = step.args.get("params") or {}
            self.fields["params"] = param_lines_field(
                initial="\n".join(f"{k} = {v}" for k, v in given.items())
            )
        for param in params:
            field = _value_field(step.action, param, step.args.get(param.name))
            if field is not None:
                self.fields[param.name] = field
                self.types[param.name] = param.type
        if DocumentStep(step.action, led_to="-").judged_where_it_led:
            self.fields[LED_TO] = forms.CharField(
                label="led to", required=False, max_length=MAX_TEXT_CHARS, initial=step.led_to,
                help_text="where it led when recorded: a replay fails the step when what it "
                "sends ends on another page (numbers and added query parameters aside); "
                "empty: not judged so",
            )  # fmt: skip
        if step.sent:
            self.fields[SENT] = forms.CharField(
                label="sent", required=False, max_length=MAX_TEXT_CHARS, initial=step.sent,
                help_text="the write it sent when recorded (POST /path): a replay fails the "
                "step when it sends none; empty: not judged so",
            )  # fmt: skip

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        url = cleaned.get("url")
        if self.action == "navigate" and url and not _URL_OR_PLACEHOLDER.fullmatch(str(url)):
            self.add_error("url", "Enter an http:// or https:// address (or a ${parameter}).")
        led_to = str(cleaned.get(LED_TO) or "")
        if led_to and not _WEB_ADDRESS.fullmatch(led_to):
            self.add_error(LED_TO, "Enter an http:// or https:// address (or leave it empty).")
        for name, kind in self.types.items():  # lines kept as written, but some are needed
            value, field = cleaned.get(name), self.fields[name]
            if kind in (list, (str, list)) and field.required and value is not None:
                if not str(value).strip():
                    self.add_error(name, field.error_messages["required"])
        return cleaned

    def led_to(self) -> str | None:
        """Where the step leads, as the form says (None: the form has no such field)."""
        return str(self.cleaned_data.get(LED_TO) or "") if LED_TO in self.fields else None

    def sent(self) -> str | None:
        """The write the step sends, as the form says (None: the form has no such field)."""
        return str(self.cleaned_data.get(SENT) or "").strip() if SENT in self.fields else None

    def clean_params(self) -> dict[str, str]:
        return param_lines(self.cleaned_data["params"])

    def args(self) -> dict[str, Any]:
        """The step's args with this form's values (args it has no field for are kept, and
        so is each value the person left as the page showed it: exactly as stored)."""
        if self.action == CALL:
            if self._unchanged("params"):
                return dict(self.stored)
            return {**self.stored, "params": self.cleaned_data["params"]}
        values = {k: v for k, v in self.stored.items() if k not in self.fields}
        for name, value in self.cleaned_data.items():
            if name in (LED_TO, SENT):
                continue
            typed = self.stored.get(name) if self._unchanged(name) else self._typed(name, value)
            if typed is not None:
                values[name] = typed
        return values

    def _unchanged(self, name: str) -> bool:
        """Whether field ``name`` came back as the page showed it (a textarea sends its
        line breaks as CRLF: a value shown with LF is the same value)."""
        if name not in self.stored:
            return False
        sent = self.data.get(self.add_prefix(name))
        shown = self.fields[name].initial
        return isinstance(sent, str) and _lf(sent) == _lf("" if shown is None else str(shown))

    def _typed(self, name: str, value: object) -> Any:
        if TYPED_ARG.get(self.action) == name or (self.action == EXPECT and name == "value"):
            return _lf(value or "")  # typing nothing is a value: it clears the field
        if not isinstance(value, str):
            return value
        value = _lf(value)  # what a textarea sends as CRLF, as the page holds it
        lines = [line for line in value.split("\n") if line.strip()]  # as written
        if self.types[name] is list:
            return lines or None
        if self.types[name] == (str, list):  # one line: a text, more: a list
            return (lines[0] if len(lines) == 1 else lines) or None
        return value or None


def param_lines_field(initial: str = "") -> forms.CharField:
    """The values a call step passes: one ``name=value`` a line."""
    return forms.CharField(
        label="Parameters", required=False, max_length=20_000, initial=initial,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "user=${email}"}),
        help_text="one name=value a line; ${name} passes this scenario's parameter",
    )  # fmt: skip


def param_lines(text: str) -> dict[str, str]:
    """``name=value`` lines as the params of a call step (ValidationError says which line
    or value is wrong)."""
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, equals, value = line.partition("=")
        if not equals:
            raise forms.ValidationError(f"line {number}: write name=value")
        # "name = value" reads best: one space each side of "=" sets it apart; the value's
        # own spaces are what it gives.
        values[name.strip()] = value.removeprefix(" ")
    try:
        return call_args({"scenario": "-", "params": values}, where="the call", index=0)["params"]
    except ScenarioInvalid as exc:
        raise forms.ValidationError(exc.message) from None


_URL_OR_PLACEHOLDER = re.compile(r"^(https?://\S+|\S*\$\{.*)$")
_WEB_ADDRESS = re.compile(r"^https?://\S+$")
LED_TO = "led_to"  # the field for where a step led, beside its args
SENT = "sent"  # ... and for the write it sent
_CHECK_PARAMS = {
    "text": Param("text", str, "the text (case and spaces are ignored)"),
    "count": Param("count", int, "how many rows show the text"),
    "at_least": Param("at_least", bool, "that many rows or more", required=False),
    "url": Param("url", str, "the address, its path's whole segments or ?field=value"),
    "value": Param("value", str, "what the field shows (empty: an empty field)", required=False),
    "items": Param("items", list, "its entries, in order"),
    "among_others": Param(
        "among_others", bool, "each an entry, others between them", required=False
    ),
}
# A download check's args, each optional (automation.recording.downloads).
_DOWNLOAD_PARAMS = {
    "name": Param("name", str, "its file name, a pattern (orders-*.csv)", required=False),
    "type": Param("type", str, "its type: " + ", ".join(downloads.TYPES), required=False),
    "min_bytes": Param("min_bytes", int, "its size at least", required=False),
    "max_bytes": Param("max_bytes", int, "its size at most", required=False),
    "header": Param("header", list, "a CSV's first row: its columns", required=False),
    "rows": Param("rows", int, "a CSV's rows of data", required=False),
    "text": Param("text", str, "a phrase the text holds", required=False),
}
# Values that are an address or a word of a list: spaces around them mean nothing.  Any
# other text is kept as written (a key " " is a space; a value may end with one).
_TRIMMED = frozenset({"url", "state", "load_state", "button", "type"})
# Texts that may hold line breaks: a field, a textarea's value, a prompt's answer.
_MULTILINE = frozenset({"text", "value", "text_gone", "prompt_text"})


def check_params(kind: str) -> list[Param]:
    """The values of a check of ``kind`` a person may change (those it needs, then those
    it may have): every kind the format takes has its form."""
    if kind == "download":
        return list(_DOWNLOAD_PARAMS.values())
    names = (*expect.KINDS.get(kind, ()), *expect.OPTIONAL.get(kind, ()))
    return [_CHECK_PARAMS[name] for name in names]


def _lf(text: str) -> str:
    """``text`` with its line breaks as the page holds them (a form sends CRLF)."""
    return text.replace("\r\n", "\n")


def _value_field(action: str, param: Param, value: object) -> forms.Field | None:
    """The form field for one arg of an action, holding its stored ``value``."""
    if param.name == "ref":
        return None
    label = param.name.replace("_", " ")
    help_text = param.description
    lines = forms.Textarea(attrs={"rows": 2})
    if TYPED_ARG.get(action) == param.name:
        return forms.CharField(label=label, required=False, strip=False, max_length=10_000,
                               initial=value, help_text=help_text, widget=lines)  # fmt: skip
    if param.type is bool:  # yes, no, or not set (the action's default)
        initial = "true" if value is True else "false" if value is False else ""
        return forms.TypedChoiceField(
            label=label, required=False, initial=initial, help_text=help_text,
            choices=[("", "not set"), ("true", "yes"), ("false", "no")],
            coerce=lambda choice: choice == "true", empty_value=None,
        )  # fmt: skip
    if param.type is int:
        return forms.IntegerField(label=label, required=param.required, initial=value,
                                  help_text=help_text)  # fmt: skip
    if param.type is list or param.type == (str, list):
        initial = "\n".join(map(str, value)) if isinstance(value, list) else value
        return forms.CharField(label=label, required=param.required, initial=initial,
                               widget=lines, strip=False,
                               help_text=f"{help_text} (one per line)")  # fmt: skip
    if param.type is str:
        return forms.CharField(
            label=label, required=param.required, initial=value, max_length=10_000,
            help_text=help_text, strip=param.name in _TRIMMED,
            widget=lines if param.name in _MULTILINE else None,
            error_messages={"required": f"{action} needs its {label} ({help_text})."},
        )  # fmt: skip
    return None


class ParamDefaultForm(forms.Form):
    default = forms.CharField(
        label="Default",
        required=False,
        strip=False,
        max_length=10_000,
        help_text="Empty: no default, replay asks for a value.",
    )


def call_choices(scenario: Scenario) -> list[tuple[int, str]]:
    """The owner's other scenarios, by name: what a call step or the login may name."""
    others = Scenario.objects.filter(owner_id=scenario.owner_id).exclude(pk=scenario.pk)
    return [(s.pk, s.name) for s in others.only("pk", "name").order_by("name", "pk")[:200]]


class CallForm(forms.Form):
    """A step that calls another scenario: which, its parameters' values (one
    ``name=value`` a line; ``${param}`` passes one of this scenario's), and where."""

    callee = forms.TypedChoiceField(label="Scenario", coerce=int)
    params = param_lines_field()
    position = forms.IntegerField(label="At step", required=False, min_value=0,
                                  help_text="empty: at the end")  # fmt: skip

    def __init__(self, *args: object, choices: list[tuple[int, str]], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["callee"].choices = choices  # type: ignore[attr-defined]

    def clean_params(self) -> dict[str, str]:
        return param_lines(self.cleaned_data["params"])
