from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from automation.actions import ACTIONS, Param
from automation.agent.output import MAX_SCHEMA_CHARS, check_schema
from automation.errors import OutputInvalid, UrlBlocked
from automation.llm.keys import key_env_refusal
from automation.recording import expect
from automation.recording.fromrun import Planned
from automation.recording.propose import Proposal
from automation.recording.scenario import EXPECT, TYPED_ARG
from automation.recording.scenario import Scenario as Document
from dashboard import jsonin, selectors
from dashboard.batchfile import MAX_BATCH_BYTES, BatchFileInvalid, read_rows
from dashboard.engineconf import url_policy
from dashboard.jsonin import JsonRefused
from dashboard.models import LLMProfile, Run, ScenarioStep

PLANNERS = [
    ("rules", "Rule planner (offline: one explicit command per line)"),
    ("openai", "LLM (OpenAI-compatible endpoint)"),
    ("anthropic", "LLM (Anthropic)"),
]
RULES_CHOICE = ("rules", "Rule planner (offline)")
PROFILE_PREFIX = "profile:"
# What the task field asks for follows the planner: the rule planner reads one command per
# line, a model reads the task in plain words (static/dashboard/newrun.js swaps them).
TASK_PLACEHOLDERS = {
    "rules": "One command per line, e.g.\ngo to https://shop.example/login\n"
    "type ada@example.org into Email\nclick Sign in\nwait for Welcome",
    "llm": "What should the agent do? In plain words, e.g. Sign in as ada@example.org and "
    "download last month's invoice.",
}


def planner_kind(value: str) -> str:
    """``rules`` for the rule planner, ``llm`` for any model (a profile or a provider)."""
    return "rules" if value == RULES_CHOICE[0] else "llm"


def profile_key_problem(profile: LLMProfile) -> str:
    """Why a run with ``profile`` can't get its API key ("" when it can, or sends none)."""
    name = profile.api_key_env
    if not name:
        return ""
    if key_env_refusal(name, allowed=settings.TABWRIGHT["LLM_KEY_VARIABLES"]):
        return f"key variable {name} may not be used"
    if not profile.key_is_set:
        return f"key variable {name} is not set"
    return ""


def _profile_label(profile: LLMProfile) -> str:
    label = f"{profile.name} ({profile.get_provider_display()} · {profile.model})"
    problem = profile_key_problem(profile)
    return f"{label} — {problem}" if problem else label


SCHEMA_PLACEHOLDER = (
    '{"type": "object", "properties": {"total": {"type": "number"}}, "required": ["total"]}'
)


class NewRunForm(forms.Form):
    """With LLM profiles: a choice of profile (the default preselected) or the rule
    planner; without: the planners of the server settings.  A profile whose key can't be
    read says so in its choice, and is refused: its run could not start."""

    start_url = forms.CharField(
        label="Start URL (optional)",
        required=False,
        max_length=2000,
        widget=forms.URLInput(attrs={"placeholder": "https://…"}),
    )
    task = forms.CharField(
        label="Message",
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 6, "placeholder": "What should the agent do?"}),
    )
    planner = forms.ChoiceField(choices=PLANNERS)
    output_schema = forms.CharField(
        label="Output schema",
        required=False,
        max_length=MAX_SCHEMA_CHARS,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 4, "placeholder": SCHEMA_PLACEHOLDER}),
    )

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.profiles = {f"{PROFILE_PREFIX}{p.pk}": p for p in selectors.llm_profile_list()}
        field = self.fields["planner"]
        if not self.profiles:
            field.initial = settings.TABWRIGHT["PLANNER"]
            return
        choices = [(value, _profile_label(p)) for value, p in self.profiles.items()]
        field.choices = [*choices, RULES_CHOICE]
        default = next((v for v, p in self.profiles.items() if p.is_default), None)
        field.initial = default or RULES_CHOICE[0]

    @property
    def planner_kind(self) -> str:
        """The kind of the planner chosen (when bound) or preselected: ``rules`` or ``llm``."""
        value = self.data.get("planner") if self.is_bound else None
        return planner_kind(str(value or self["planner"].initial or ""))

    def follow_planner(self, *, demo: dict[str, str] | None = None) -> None:
        """The task's placeholder (and the demo task, when given per kind) for the planner
        chosen; the page swaps them as the choice changes (static/dashboard/newrun.js)."""
        kind = self.planner_kind
        attrs = self.fields["task"].widget.attrs
        attrs["placeholder"] = TASK_PLACEHOLDERS[kind]
        attrs["aria-describedby"] = f"task-hint-{kind}"
        for each, text in TASK_PLACEHOLDERS.items():
            attrs[f"data-placeholder-{each}"] = text
        if demo:
            self.initial["task"] = demo[kind]
            for each, text in demo.items():
                attrs[f"data-demo-{each}"] = text

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        profile: LLMProfile | None = self.profiles.get(cleaned.get("planner", ""))
        cleaned["llm_profile"] = profile
        if profile is not None:
            problem = profile_key_problem(profile)
            if problem:
                self.add_error(
                    "planner",
                    f"{profile.name} can't start a run: its {problem} on this server. "
                    "Choose another planner, or ask an admin to fix the profile.",
                )
            cleaned["planner"] = profile.provider
        if cleaned.get("output_schema") is not None and self.planner_kind == "rules":
            self.add_error(
                "output_schema", "the rule planner ends in no data: choose a model for an output"
            )
        return cleaned

    def clean_output_schema(self) -> dict[str, Any] | None:
        text = self.cleaned_data["output_schema"]
        if not text:
            return None
        try:
            schema = json.loads(text)
        except ValueError as exc:
            raise forms.ValidationError(f"not JSON: {exc}") from None
        try:
            return check_schema(schema)
        except OutputInvalid as exc:
            raise forms.ValidationError(exc.message) from None

    def clean_start_url(self) -> str:
        url = self.cleaned_data["start_url"].strip()
        if not url:
            return ""
        try:
            return url_policy().check(url)  # no DNS here: the run's URL guard resolves
        except UrlBlocked as exc:
            raise forms.ValidationError(str(exc)) from None


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
                upload.read(), max_bytes=MAX_SCENARIO_BYTES, what="the file"
            )
        except JsonRefused as exc:
            message = f"not a JSON file: {exc}" if exc.code == "bad_json" else str(exc)
            raise forms.ValidationError(message) from None
        return cleaned


class ReplayForm(forms.Form):
    """Where to replay a scenario, and a field for each of its parameters (secrets come
    from the server's environment, never from a form)."""

    base_url = forms.CharField(label="Base URL", max_length=2000, required=False)

    def __init__(self, *args: object, document: Document, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["base_url"].initial = document.base_url
        self.fields["base_url"].help_text = "where it runs (recorded at " + (
            document.base_url or "an unknown address") + ")"  # fmt: skip
        for name in sorted(document.placeholders()[0] | set(document.params)):
            default = (document.params.get(name) or {}).get("default")
            self.fields[f"param_{name}"] = forms.CharField(
                label=name, required=default is None, initial=default, max_length=10_000
            )

    def clean_base_url(self) -> str:
        url = self.cleaned_data["base_url"].strip()
        if not url:
            return ""
        try:
            return url_policy().check(url)
        except UrlBlocked as exc:
            raise forms.ValidationError(str(exc)) from None

    def params(self) -> dict[str, str]:
        return {
            key.removeprefix("param_"): value
            for key, value in self.cleaned_data.items()
            if key.startswith("param_")
        }


class RunFilterForm(forms.Form):
    """The run history's filters, read from the query string; every field may be empty.
    Only staff get the owner field (the others see only their own runs anyway)."""

    owner = forms.ModelChoiceField(queryset=None, required=False, empty_label="Anyone")
    scenario = forms.ModelChoiceField(queryset=None, required=False, empty_label="Any")
    status = forms.ChoiceField(choices=[("", "Any"), *Run.Status.choices], required=False)
    kind = forms.ChoiceField(choices=[("", "Any"), *Run.Kind.choices], required=False)
    created_from = forms.DateField(
        label="From", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    created_to = forms.DateField(
        label="To", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )

    def __init__(self, *args: object, user: AbstractBaseUser, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        # Only scenarios the person may see: another's id is "not a valid choice".
        scenario = self.fields["scenario"]
        scenario.queryset = selectors.scenario_choices(user=user)
        scenario.label_from_instance = lambda s: s.name
        if user.is_staff:
            self.fields["owner"].queryset = selectors.run_owner_choices()
        else:
            del self.fields["owner"]

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        start, end = cleaned.get("created_from"), cleaned.get("created_to")
        if start and end and start > end:
            self.add_error("created_to", "The end date is before the start date.")
        return cleaned

    def filters(self) -> dict[str, object]:
        """The valid filters (an invalid field is left out, and shown as an error)."""
        cleaned = getattr(self, "cleaned_data", {})
        return {name: cleaned[name] for name in self.fields if cleaned.get(name)}


# -- saving a run as a scenario ------------------------------------------------------------


class SaveScenarioForm(forms.Form):
    """Save a run: its name, which failed steps to keep (those whose element is known),
    and which proposed checks to add (the picked ones ticked to begin with)."""

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
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        # A conversation: the work of each message (its stretch) can be left out.
        if len(requests) > 1:
            self.fields["stretches"].choices = [  # type: ignore[attr-defined]
                (n, f"{n}. {' '.join(text.split())[:120]}")
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
            (i, p.check.describe().removeprefix("expect ")) for i, p in enumerate(proposals)
        ]
        if not self.is_bound:
            checks.initial = [i for i, p in enumerate(proposals) if p.picked]


# -- scenario edits ----------------------------------------------------------------------


class ScenarioEditForm(forms.Form):
    name = forms.CharField(label="Name", max_length=200)
    description = forms.CharField(
        label="Description",
        required=False,
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 3}),
    )


class CheckForm(forms.Form):
    """A new check of a scenario's outcome: of the page, or of the element of a step."""

    KINDS = (
        ("text_visible", "text is shown"),
        ("text_hidden", "text is not shown"),
        ("rows", "rows showing a text"),
        ("url", "the address contains"),
        ("visible", "the step's element is on the page"),
        ("checked", "the step's element is checked"),
        ("unchecked", "the step's element is not checked"),
        ("value", "the step's element shows a value"),
    )
    kind = forms.ChoiceField(label="Check", choices=KINDS)
    text = forms.CharField(label="Text", required=False, max_length=1_000)
    count = forms.IntegerField(label="Rows", required=False, min_value=0, max_value=10_000)
    url = forms.CharField(label="Address part", required=False, max_length=2_000)
    value = forms.CharField(label="Value", required=False, max_length=1_000, strip=False)
    step = forms.TypedChoiceField(label="Element of step", required=False, coerce=int,
                                  empty_value=None)  # fmt: skip

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
            self.add_error("step", "Choose the step whose element is checked.")
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
        if step.action == EXPECT:  # a check's values: its text, count, URL or value
            kind = str(step.args.get("kind", ""))
            params = [_CHECK_PARAMS[name] for name in expect.KINDS.get(kind, ())]
        for param in params:
            field = _value_field(step.action, param, step.args.get(param.name))
            if field is not None:
                self.fields[param.name] = field
                self.types[param.name] = param.type

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        url = cleaned.get("url")
        if self.action == "navigate" and url and not _URL_OR_PLACEHOLDER.match(str(url)):
            self.add_error("url", "Enter an http:// or https:// address (or a ${parameter}).")
        return cleaned

    def args(self) -> dict[str, Any]:
        """The step's args with this form's values (args it has no field for are kept)."""
        values = {k: v for k, v in self.stored.items() if k not in self.fields}
        for name, value in self.cleaned_data.items():
            typed = self._typed(name, value)
            if typed is not None:
                values[name] = typed
        return values

    def _typed(self, name: str, value: object) -> Any:
        if TYPED_ARG.get(self.action) == name or (self.action == EXPECT and name == "value"):
            return value or ""  # typing nothing is a value: it clears the field
        if not isinstance(value, str):
            return value
        lines = [line.strip() for line in value.splitlines() if line.strip()]
        if self.types[name] is list:
            return lines or None
        if self.types[name] == (str, list):  # one line: a text, more: a list
            return (lines[0] if len(lines) == 1 else lines) or None
        return value or None


_URL_OR_PLACEHOLDER = re.compile(r"^(https?://\S+|\S*\$\{.*)$")
_CHECK_PARAMS = {
    "text": Param("text", str, "the text (case and spaces are ignored)"),
    "count": Param("count", int, "how many rows show the text"),
    "url": Param("url", str, "what the address contains"),
    "value": Param("value", str, "what the field shows (empty: an empty field)", required=False),
}


def _value_field(action: str, param: Param, value: object) -> forms.Field | None:
    """The form field for one arg of an action, holding its stored ``value``."""
    if param.name == "ref":
        return None
    label = param.name.replace("_", " ")
    help_text = param.description
    if TYPED_ARG.get(action) == param.name:
        return forms.CharField(label=label, required=False, strip=False, max_length=10_000,
                               initial=value, help_text=help_text)  # fmt: skip
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
        widget = forms.Textarea(attrs={"rows": 2})
        return forms.CharField(label=label, required=param.required, initial=initial,
                               widget=widget, help_text=f"{help_text} (one per line)")  # fmt: skip
    if param.type is str:
        return forms.CharField(
            label=label, required=param.required, initial=value, max_length=10_000,
            help_text=help_text,
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


class BatchForm(forms.Form):
    """A batch of replays: a file of parameter values (CSV with a header row, or a JSON
    list of objects), where they run, and how many rows at once."""

    file = forms.FileField(label="Rows (.csv or .json)")
    base_url = forms.CharField(label="Base URL", max_length=2000, required=False)
    concurrency = forms.IntegerField(label="Rows at once", min_value=1, max_value=20, initial=2)

    def __init__(self, *args: object, document: Document, **kwargs: object) -> None:
        kwargs.setdefault("auto_id", "id_batch_%s")  # beside the replay form on one page
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.document = document
        self.fields["base_url"].initial = document.base_url
        names = selectors.scenario_param_defaults(document=document)
        self.fields["file"].help_text = "a header row naming a column per parameter (" + (
            ", ".join(names) or "none yet") + "), then a row of values per replay"  # fmt: skip

    def clean_base_url(self) -> str:
        url = self.cleaned_data["base_url"].strip()
        if not url:
            return self.document.base_url
        try:
            return url_policy().check(url)
        except UrlBlocked as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_file(self) -> list[dict[str, str]]:
        upload = self.cleaned_data["file"]
        if upload.size > MAX_BATCH_BYTES:
            raise forms.ValidationError(f"the file is over {MAX_BATCH_BYTES // 1024 // 1024} MiB")
        defaults = selectors.scenario_param_defaults(document=self.document)
        if not defaults:
            raise forms.ValidationError(
                "the scenario has no parameters to vary: make a typed value a parameter first"
            )
        try:
            return read_rows(upload.read(), name=upload.name or "", defaults=defaults)
        except BatchFileInvalid as exc:
            raise forms.ValidationError(
                exc.message + (f" ({exc.hint})" if exc.hint else "")
            ) from None


class ScheduleForm(forms.Form):
    """A schedule of a scenario: when (cron, time zone), with what (the parameters, or a
    batch file), and who to tell when a firing ends badly."""

    cron = forms.CharField(label="When (cron)", max_length=100, initial="0 7 * * 1-5",
                           help_text="minute hour day month weekday: 0 7 * * 1-5 is 7:00 on "
                           "weekdays")  # fmt: skip
    timezone = forms.CharField(label="Time zone", max_length=64, initial="UTC")
    base_url = forms.CharField(label="Base URL", max_length=2000, required=False)
    file = forms.FileField(label="Batch rows (.csv or .json)", required=False,
                           help_text="optional: a batch of these rows at each time, instead "
                           "of one replay with the values below")  # fmt: skip
    concurrency = forms.IntegerField(label="Rows at once", min_value=1, max_value=20, initial=2)
    webhook_url = forms.CharField(label="Webhook URL", max_length=2000, required=False,
                                  help_text="told (signed JSON) when a firing fails or waits "
                                  "for a person")  # fmt: skip
    emails = forms.CharField(label="E-mail", max_length=500, required=False,
                             help_text="addresses told the same, separated by commas")  # fmt: skip

    def __init__(self, *args: object, scenario: Any, document: Document, **kwargs: object) -> None:
        kwargs.setdefault("auto_id", "id_schedule_%s")  # beside the replay form on one page
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.scenario = scenario
        for name, default in selectors.scenario_param_defaults(document=document).items():
            self.fields[f"param_{name}"] = forms.CharField(
                label=name, required=False, initial=default, max_length=10_000
            )

    def clean(self) -> dict[str, Any]:
        from dashboard import schedules

        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        rows = None
        upload = cleaned.get("file")
        if upload:
            try:
                data = upload.read()
                defaults = {name: "" for name in self._param_names()}  # checked again below
                rows = read_rows(data, name=upload.name or "", defaults=defaults)
            except BatchFileInvalid as exc:
                self.add_error("file", exc.message)
                return cleaned
        params = {name: cleaned.get(f"param_{name}", "") for name in self._param_names()}
        try:
            self.checked = schedules.check_schedule(
                scenario=self.scenario, cron=cleaned["cron"], timezone=cleaned["timezone"],
                params={k: v for k, v in params.items() if v}, rows=rows,
                concurrency=cleaned["concurrency"], base_url=cleaned.get("base_url", ""),
                webhook_url=cleaned.get("webhook_url", ""), emails=cleaned.get("emails", ""),
            )  # fmt: skip
        except schedules.ScheduleInvalid as exc:
            field = {"rows": "file"}.get(exc.field, exc.field)
            field = field if field in self.fields else None
            self.add_error(field, exc.message + (f" ({exc.hint})" if exc.hint else ""))
        return cleaned

    def _param_names(self) -> list[str]:
        return [key.removeprefix("param_") for key in self.fields if key.startswith("param_")]
