"""Forms of batches and schedules."""

from __future__ import annotations

from typing import Any

from django import forms

from automation.errors import SecretNotGranted, UrlBlocked
from automation.recording.scenario import Scenario as Document
from automation.recording.takes import replay_takes
from dashboard.engineconf import base_url_checked
from dashboard.jobs import schedules
from dashboard.jobs.batchfile import MAX_BATCH_BYTES, BatchFileInvalid, read_rows
from dashboard.jobs.services import heal_model_fields
from dashboard.lib.urls import UrlInvalid
from dashboard.runs.forms import heal_model_field, signin_field
from dashboard.scenarios.selectors import secrets_granted


class BatchForm(forms.Form):
    """A batch of replays: a file of parameter values (CSV with a header row, or a JSON
    list of objects), where they run, and how many rows at once."""

    file = forms.FileField(label="Rows (.csv or .json)")
    base_url = forms.CharField(label="Base URL", max_length=2000, required=False)
    concurrency = forms.IntegerField(label="Rows at once", min_value=1, max_value=20, initial=2)

    def __init__(
        self, *args: object, document: Document, user: Any = None, **kwargs: object
    ) -> None:
        kwargs.setdefault("auto_id", "id_batch_%s")  # beside the replay form on one page
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        if user is not None:
            self.fields["signin_profile"] = signin_field(user)
        self.fields["llm_profile"] = heal_model_field()
        self.document, self.user = document, user
        self.fields["base_url"].initial = document.base_url
        names = replay_takes(document)
        self.fields["file"].help_text = "a header row naming a column per parameter (" + (
            ", ".join(names) or "none yet") + "), then a row of values per replay"  # fmt: skip

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.user is not None:  # else every row would fail at once, saying so
            try:
                secrets_granted(owner=self.user, document=self.document)
            except SecretNotGranted as exc:
                self.add_error(None, f"{exc.message} ({exc.hint})")
        return cleaned

    def clean_base_url(self) -> str:
        url = self.cleaned_data["base_url"].strip()
        if not url:
            return self.document.base_url
        try:
            return base_url_checked(url)
        except (UrlInvalid, UrlBlocked) as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_file(self) -> list[dict[str, str]]:
        upload = self.cleaned_data["file"]
        if upload.size > MAX_BATCH_BYTES:
            raise forms.ValidationError(f"the file is over {MAX_BATCH_BYTES // 1024 // 1024} MiB")
        takes = replay_takes(self.document)
        if not takes:
            raise forms.ValidationError(
                "the scenario has no parameters to vary: make a typed value a parameter first"
            )
        try:
            return read_rows(upload.read(), name=upload.name or "", takes=takes)
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

    def __init__(
        self, *args: object, scenario: Any, document: Document, user: Any = None,
        **kwargs: object,
    ) -> None:  # fmt: skip
        kwargs.setdefault("auto_id", "id_schedule_%s")  # beside the replay form on one page
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        if user is not None:
            self.fields["signin_profile"] = signin_field(user)
        self.fields["llm_profile"] = heal_model_field()
        self.scenario = scenario
        # A default is shown, not filled in: a value left empty takes the scenario's
        # default of the day the schedule fires (filled in, today's was kept for good).
        self.takes = replay_takes(document)
        for name, taken in self.takes.items():
            shown = {"placeholder": taken.default} if taken.default else {}
            self.fields[f"param_{name}"] = forms.CharField(
                label=name, required=False, max_length=10_000,
                widget=forms.TextInput(attrs=shown),
                help_text=f"for signing in again ({taken.login})" if taken.login else "",
            )  # fmt: skip

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        rows = None
        upload = cleaned.get("file")
        if upload:
            try:
                data = upload.read()
                rows = read_rows(data, name=upload.name or "", takes=self.takes, given_only=True)
            except BatchFileInvalid as exc:
                self.add_error("file", exc.message)
                return cleaned
        params = {name: cleaned.get(f"param_{name}", "") for name in self.takes}
        try:
            self.checked = schedules.check_schedule(
                scenario=self.scenario, cron=cleaned["cron"], timezone=cleaned["timezone"],
                params={k: v for k, v in params.items() if v}, rows=rows,
                concurrency=cleaned["concurrency"], base_url=cleaned.get("base_url", ""),
                webhook_url=cleaned.get("webhook_url", ""), emails=cleaned.get("emails", ""),
            )  # fmt: skip
            profile = cleaned.get("signin_profile")
            self.checked["signin_profile_id"] = profile.pk if profile is not None else None
            self.checked.update(heal_model_fields(cleaned.get("llm_profile")))
        except schedules.ScheduleInvalid as exc:
            field = {"rows": "file"}.get(exc.field, exc.field)
            field = field if field in self.fields else None
            self.add_error(field, exc.message + (f" ({exc.hint})" if exc.hint else ""))
        return cleaned
