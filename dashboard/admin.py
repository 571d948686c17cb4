from __future__ import annotations

from django.contrib import admin
from django.db import models

from dashboard.models import IdentityHeal, Run, RunEvent, Scenario, ScenarioStep, Step


class StepInline(admin.TabularInline):
    model = Step
    extra = 0
    fields = ("index", "action", "role", "name", "selector", "ok", "duration_ms")
    readonly_fields = fields
    can_delete = False


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "task_short", "owner", "planner", "status", "created_at", "finished_at")
    list_filter = ("status", "planner", "owner")
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
