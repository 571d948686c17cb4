"""Forms of runs: a new run, the run list's filters, an act request (HTTP or socket)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode, urlsplit

from django import forms
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from automation.agent.output import MAX_SCHEMA_CHARS, check_schema
from automation.budget import timeout_ms_of
from automation.errors import ActionInvalid, OutputInvalid, UrlBlocked
from dashboard.engineconf import heal_model_problem, profile_key_problem, url_policy
from dashboard.lib import jsonin
from dashboard.models import LLMProfile, Run, UrlRule
from dashboard.runs import selectors
from dashboard.runs.signins import signins_usable_by
from dashboard.scenarios import selectors as scenario_selectors

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


def _profile_label(profile: LLMProfile) -> str:
    label = f"{profile.name} ({profile.get_provider_display()} · {profile.model})"
    problem = profile_key_problem(profile)
    return f"{label} — {problem}" if problem else label


SCHEMA_PLACEHOLDER = (
    '{"type": "object", "properties": {"total": {"type": "number"}}, "required": ["total"]}'
)


def signin_field(user: Any) -> forms.ModelChoiceField:
    """A choice of the sign-in profiles ``user`` may start runs with (none by default)."""
    return forms.ModelChoiceField(
        queryset=signins_usable_by(user), required=False, label="Sign-in profile",
        empty_label="none", help_text="start signed in with a saved sign-in",
    )  # fmt: skip


class _HealModelChoice(forms.ModelChoiceField):
    """A profile whose key the server can't read is refused, saying why."""

    def label_from_instance(self, obj: Any) -> str:
        return _profile_label(obj)

    def validate(self, value: Any) -> None:
        super().validate(value)
        if problem := heal_model_problem(value):
            raise forms.ValidationError(
                f"{problem}. Choose another model, or none, or ask an admin to fix the profile."
            )


def heal_model_field() -> forms.ModelChoiceField:
    """The choice of the model that may reach a step's intent when the recorded path is
    gone (none by default: such a step needs a person), for a replay, a batch or a
    schedule; a profile whose key can't be read is refused with the reason."""
    return _HealModelChoice(
        queryset=LLMProfile.objects.order_by("name"), required=False,
        label="Model for changed pages", empty_label="none: a person decides",
        help_text="when a recorded element is gone, this model may reach the step's intent "
        "in a few actions; what it did is checked and shown for a person to confirm",
    )  # fmt: skip


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

    def __init__(self, *args: object, user: Any = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        if user is not None:  # the sign-in profiles the person may start with
            self.fields["signin_profile"] = signin_field(user)
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
        try:  # bounded: objects nested thousands deep are refused, not a RecursionError
            schema = jsonin.loads(text, max_bytes=4 * MAX_SCHEMA_CHARS, what="the schema")
        except jsonin.JsonRefused as exc:
            raise forms.ValidationError(exc.message) from None
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
            raise forms.ValidationError(url_refusal(url, exc)) from None


def url_refusal(url: str, exc: UrlBlocked) -> str | SafeString:
    """Why ``url`` is refused, and where an admin changes that: the URL rules page (a
    rule there applies at once; the settings' variables need a restart)."""
    if exc.rule == "blocked":
        return format_html(
            '{}. An admin can turn that rule off on the <a href="{}">URL rules</a> page.',
            exc.message,
            f"{reverse('admin:dashboard_urlrule_changelist')}?kind__exact={UrlRule.Kind.BLOCK}",
        )
    if exc.rule not in ("not_allowed", "private"):
        return str(exc)
    host = _rule_for(url)
    add = (
        reverse("admin:dashboard_urlrule_add") + "?" + urlencode({"kind": "allow", "domain": host})
    )
    # A private address is refused by a setting, not a rule: the first Allow rule for it
    # would also limit every run to the allowed domains.
    limits = " (once any Allow rule exists, runs open only the allowed domains)"
    return format_html(
        "{}. An admin can allow it with an Allow rule for <code>{}</code> on the "
        '<a href="{}">URL rules</a> page{}.',
        exc.message,
        host,
        add,
        limits if exc.rule == "private" else "",
    )


def _rule_for(url: str) -> str:
    """The rule that allows ``url``'s host: ``host``, or ``host:port`` when the URL names
    a port (``[address]:port`` for IPv6)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:
        port = None
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{port}" if port else host


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
    # Unticked (the default): the MCP sessions that ended with no step are left out.
    empty_mcp = forms.BooleanField(label="Empty MCP sessions", required=False)

    def __init__(self, *args: object, user: AbstractBaseUser, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        # Only scenarios the person may see: another's id is "not a valid choice".
        scenario = self.fields["scenario"]
        scenario.queryset = scenario_selectors.scenario_choices(user=user)
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
        """The valid filters (an invalid field is left out, and shown as an error), as
        :func:`selectors.run_list` takes them."""
        cleaned = getattr(self, "cleaned_data", {})
        chosen = {name: cleaned[name] for name in self.fields if cleaned.get(name)}
        chosen["hide_empty_mcp"] = not chosen.pop("empty_mcp", False)
        return chosen


def act_request(data: object) -> tuple[str, dict[str, Any], float]:
    """``{"action": name, "args": {...}, "timeout_ms": N}`` (or a macro, ``{"steps": [...],
    "fail_fast", "return_mode", "per_step_timeout_ms", "timeout_ms"}``) from an HTTP body
    or a socket command, checked: the action's name, its args, and the whole call's budget."""
    if not isinstance(data, dict):
        raise ActionInvalid("an act request is a JSON object")
    if "steps" in data and "action" not in data:  # a macro: {"steps": [...], options...}
        options = ("steps", "fail_fast", "return_mode", "per_step_timeout_ms")
        data = {**data, "action": "steps", "args": {k: data[k] for k in options if k in data}}
    action, args = data.get("action"), data.get("args", {})
    if not isinstance(action, str) or not action:
        raise ActionInvalid('an act request needs "action"')
    if not isinstance(args, dict):
        raise ActionInvalid('"args" must be an object')
    timeout_ms = timeout_ms_of(
        data.get("timeout_ms", settings.TABWRIGHT["ACTION_TIMEOUT_MS"]), what='"timeout_ms"'
    )
    # The request's timeout is the budget of the whole call; a second one in args would
    # only narrow it, so it is dropped rather than left to confuse.
    args = {k: v for k, v in args.items() if k != "timeout_ms"}
    return action, args, timeout_ms
