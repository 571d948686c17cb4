from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.http import HttpRequest

from dashboard import services
from dashboard.models import (
    ENV_NAME_RE,
    IdentityHeal,
    LLMProfile,
    Run,
    RunEvent,
    Scenario,
    ScenarioStep,
    Step,
)


class StepInline(admin.TabularInline):
    model = Step
    extra = 0
    fields = ("index", "action", "role", "name", "selector", "ok", "duration_ms")
    readonly_fields = fields
    can_delete = False


class EnvNameInput(forms.TextInput):
    """Shows a value only if it is a variable name: a key pasted by mistake and refused is
    not sent back to the browser."""

    def format_value(self, value: Any) -> str | None:
        if isinstance(value, str) and value and not ENV_NAME_RE.match(value):
            return None
        return super().format_value(value)


class LLMProfileForm(forms.ModelForm):
    class Meta:
        model = LLMProfile
        fields = "__all__"
        widgets = {"api_key_env": EnvNameInput(attrs={"autocomplete": "off"})}


@admin.register(LLMProfile)
class LLMProfileAdmin(admin.ModelAdmin):
    form = LLMProfileForm
    list_display = ("name", "provider", "model", "base_url", "api_key_env", "key_set",
                    "is_default")  # fmt: skip
    list_filter = ("provider", "is_default")
    search_fields = ("name", "model", "base_url")
    readonly_fields = ("created_at", "updated_at")

    @admin.display(description="key set on server", boolean=True)
    def key_set(self, obj: LLMProfile) -> bool | None:
        return obj.key_is_set

    def save_model(self, request: HttpRequest, obj: LLMProfile, form: Any, change: bool) -> None:
        services.llm_profile_save(profile=obj)


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "task_short", "owner", "planner", "llm_profile", "status",
                    "prompt_tokens", "completion_tokens", "created_at", "finished_at")  # fmt: skip
    list_filter = ("status", "planner", "llm_profile", "owner")
    search_fields = ("task", "start_url", "status_reason")
    date_hierarchy = "created_at"
    inlines = [StepInline]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    @admin.display(description="task")
    def task_short(self, obj: Run) -> str:
        return obj.task[:80]


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    list_display = ("run", "index", "action", "role", "name", "selector", "ok", "duration_ms")
    list_filter = ("action", "ok")
    search_fields = ("name", "selector", "url")


@admin.register(RunEvent)
class RunEventAdmin(admin.ModelAdmin):
    list_display = ("run", "seq", "type", "created_at")
    list_filter = ("type",)


class ScenarioStepInline(admin.TabularInline):
    model = ScenarioStep
    extra = 0
    fields = ("index", "action", "args", "role", "name", "selector", "url")


@admin.register(Scenario)
class ScenarioAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "owner", "base_url", "updated_at")
    list_filter = ("owner",)
    search_fields = ("name", "description", "base_url")
    inlines = [ScenarioStepInline]


@admin.register(IdentityHeal)
class IdentityHealAdmin(admin.ModelAdmin):
    list_display = ("id", "step", "status", "strategy", "score", "run", "created_at", "decided_by")
    list_filter = ("status", "strategy")
    readonly_fields = ("step", "run", "strategy", "score", "changes", "before", "after",
                       "created_at")  # fmt: skip
