from __future__ import annotations

from django import forms
from django.conf import settings

from automation.errors import UrlBlocked
from dashboard.runner import url_policy

PLANNERS = [
    ("rules", "Rule planner (offline: one explicit command per line)"),
    ("openai", "LLM (OpenAI-compatible endpoint)"),
]


class NewRunForm(forms.Form):
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
        self.fields["planner"].initial = settings.TABWRIGHT["PLANNER"]

    def clean_start_url(self) -> str:
        url = self.cleaned_data["start_url"].strip()
        if not url:
            return ""
        try:
            return url_policy().check(url)  # no DNS here: the run's URL guard resolves
        except UrlBlocked as exc:
            raise forms.ValidationError(str(exc)) from None
