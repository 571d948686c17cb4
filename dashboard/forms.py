from __future__ import annotations

import json

from django import forms
from django.conf import settings

from automation.errors import UrlBlocked
from automation.recording.scenario import Scenario as Document
from dashboard import selectors
from dashboard.models import LLMProfile
from dashboard.runner import url_policy

PLANNERS = [
    ("rules", "Rule planner (offline: one explicit command per line)"),
    ("openai", "LLM (OpenAI-compatible endpoint)"),
    ("anthropic", "LLM (Anthropic)"),
]
RULES_CHOICE = ("rules", "Rule planner (offline)")
PROFILE_PREFIX = "profile:"


class NewRunForm(forms.Form):
    """With LLM profiles: a choice of profile (the default preselected) or the rule
    planner; without: the planners of the server settings."""

    start_url = forms.CharField(
        label="Start URL",
        required=False,
        max_length=2000,
        widget=forms.URLInput(attrs={"placeholder": "https://…"}),
    )
    task = forms.CharField(
        label="Task",
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 6, "placeholder": "What should the agent do?"}),
    )
    planner = forms.ChoiceField(choices=PLANNERS)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.profiles = {f"{PROFILE_PREFIX}{p.pk}": p for p in selectors.llm_profile_list()}
        field = self.fields["planner"]
        if not self.profiles:
            field.initial = settings.TABWRIGHT["PLANNER"]
            return
        choices = [
            (value, f"{p.name} ({p.get_provider_display()} · {p.model})")
            for value, p in self.profiles.items()
        ]
        field.choices = [*choices, RULES_CHOICE]
        default = next((v for v, p in self.profiles.items() if p.is_default), None)
        field.initial = default or RULES_CHOICE[0]

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        profile: LLMProfile | None = self.profiles.get(cleaned.get("planner", ""))
        cleaned["llm_profile"] = profile
        if profile is not None:
            cleaned["planner"] = profile.provider
        return cleaned

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
            cleaned["data"] = json.loads(upload.read().decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise forms.ValidationError(f"not a JSON file: {exc}") from None
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
