from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from django import forms
from django.contrib import admin, messages
from django.db import models, transaction
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from automation.errors import LLMError, ScenarioInvalid
from automation.secrets import SECRET_NAME_RE
from dashboard.engineconf import llm_profile_test
from dashboard.models import (
    ENV_NAME_RE,
    ApiToken,
    Batch,
    BatchRow,
    Delivery,
    IdentityHeal,
    LLMProfile,
    Run,
    RunEvent,
    Scenario,
    ScenarioStep,
    Schedule,
    ScheduleFiring,
    SecretGrant,
    SigninProfile,
    Step,
    UrlRule,
)
from dashboard.runs import services
from dashboard.scenarios import call_services
from dashboard.scenarios import services as scenario_services


def pretty_json(value: Any) -> str:
    """JSON indented in a <pre>, for reading a stored document rather than editing it."""
    if value in (None, "", {}, []):
        return "—"
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    return format_html('<pre class="json">{}</pre>', text)


class RecordInline(admin.TabularInline):
    """Rows the dashboard wrote while working (a run's steps, a batch's rows, a schedule's
    firings): shown with their parent, never typed in, changed or removed one by one."""

    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class StepInline(RecordInline):
    model = Step
    fields = ("index", "stretch", "action", "role", "name", "selector", "ok", "by", "duration_ms")
    readonly_fields = fields


class RecordAdmin(admin.ModelAdmin):
    """What the dashboard recorded (runs, their steps and events, batches): to read.  Made
    by the work itself, so never added here, and never edited: a status, holder, lease or
    token count typed in by hand would lie about what happened, or take a run from the
    worker that holds it."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def on_own_page(model_admin: admin.ModelAdmin, request: HttpRequest) -> bool:
    """Whether ``request`` is one of ``model_admin``'s own pages (not another model's page
    that deletes these rows with their parent)."""
    match = request.resolver_match
    own_page = f"{model_admin.opts.app_label}_{model_admin.opts.model_name}_"
    return match is not None and (match.url_name or "").startswith(own_page)


class PartOfRunAdmin(RecordAdmin):
    """A run's steps or events: removed only with their run (deleting the run, or its
    owner, takes them along), never one by one from their own pages."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if on_own_page(self, request):
            return False
        return super().has_delete_permission(request, obj)


def run_still_at_work(run: Run) -> str:
    """Why ``run`` can't be deleted now ("" when it can): a worker still writes to it, its
    tab is open, or a running batch would replay its row again."""
    if not run.is_final:
        return f"{run}: still {run.status}; stop it first"
    if run.session == Run.Session.OPEN:
        return f"{run}: its tab is still open; close it first"
    if BatchRow.objects.filter(run=run, batch__status=Batch.Status.RUNNING).exists():
        return f"{run}: its batch is still running and would replay the row again"
    return ""


class EnvNameInput(forms.TextInput):
    """Shows a value only if it is a variable name: a key pasted by mistake and refused is
    not sent back to the browser."""

    def format_value(self, value: Any) -> str | None:
        if isinstance(value, str) and value and not ENV_NAME_RE.fullmatch(value):
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

    @admin.action(description="Test: send each one tiny request and say what came back")
    def test_profiles(self, request: HttpRequest, queryset: QuerySet[LLMProfile]) -> None:
        for profile in queryset.order_by("name"):
            try:
                said = async_to_sync(llm_profile_test)(profile)
            except LLMError as exc:
                hint = f" ({exc.hint})" if exc.hint else ""
                self.message_user(request, f"{profile.name}: failed: {exc.message}{hint}",
                                  messages.ERROR)  # fmt: skip
            else:
                self.message_user(request, f"{profile.name}: {said}", messages.SUCCESS)

    actions = ["test_profiles"]


@admin.register(Run)
class RunAdmin(RecordAdmin):
    list_display = ("id", "task_short", "kind", "owner", "status", "session", "planner",
                    "llm_profile", "tokens", "created_at", "finished_at")  # fmt: skip
    list_filter = ("status", "kind", "session", "planner", "llm_profile", "owner", "created_at")
    search_fields = ("=id", "task", "start_url", "status_reason", "owner__username")
    date_hierarchy = "created_at"
    list_select_related = ("owner", "llm_profile")
    raw_id_fields = ("scenario",)
    readonly_fields = ("created_at",)
    inlines = [StepInline]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    @admin.display(description="task")
    def task_short(self, obj: Run) -> str:
        return obj.task[:80]

    @admin.display(description="LLM tokens")
    def tokens(self, obj: Run) -> int:
        return obj.prompt_tokens + obj.completion_tokens

    def has_delete_permission(self, request: HttpRequest, obj: Run | None = None) -> bool:
        if obj is not None and run_still_at_work(obj):
            return False
        return super().has_delete_permission(request, obj)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, ...]:
        """A run goes with its steps and events; a run still at work is not deleted (the
        page says why), whether alone or among the runs selected."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        # Steps and events go with their run; a run refused is refused for being at work
        # (only people who may delete runs get here), which ``protected`` says.
        perms_needed -= {m._meta.verbose_name for m in (Run, Step, RunEvent)}
        busy = [why for why in map(run_still_at_work, objs) if why]
        return deleted, counts, perms_needed, [*protected, *busy]


@admin.register(Step)
class StepAdmin(PartOfRunAdmin):
    list_display = ("run", "index", "stretch", "action", "role", "name", "selector", "ok", "by",
                    "duration_ms")  # fmt: skip
    list_filter = ("action", "ok", "by")
    search_fields = ("=run__id", "name", "selector", "url")
    list_select_related = ("run",)
    raw_id_fields = ("run",)


@admin.register(RunEvent)
class RunEventAdmin(PartOfRunAdmin):
    """The event log, to read: events are what a run emitted and are never edited."""

    list_display = ("run", "seq", "type", "created_at")
    list_filter = ("type", "created_at")
    search_fields = ("=run__id", "type")
    date_hierarchy = "created_at"
    list_select_related = ("run",)
    fields = ("run", "seq", "type", "created_at", "data_pretty")
    readonly_fields = fields

    @admin.display(description="data")
    def data_pretty(self, obj: RunEvent) -> str:
        return pretty_json(obj.data)


def service_refusal(write: Callable[[], object]) -> str:
    """What the service ``write`` (dashboard.scenarios) would refuse ("" when nothing): run
    and undone, so that an admin form says it beside its fields, and its save then runs
    the same service; the rules stay in one place."""

    class Undo(Exception):
        pass

    try:
        with transaction.atomic():
            write()
            raise Undo
    except Undo:
        return ""
    except ScenarioInvalid as exc:
        return f"{exc.message} ({exc.hint})" if exc.hint else exc.message


SCENARIO_PAGE_EDITS = (
    "Steps are changed here one at a time (their args, checked as the scenario's page "
    "checks them: the scenarios a call step calls stay linked), or on the scenario's page."
)


class ScenarioStepInline(admin.TabularInline):
    """A scenario's steps, to read; each opens on its own page to change its args."""

    model = ScenarioStep
    extra = 0
    can_delete = False
    show_change_link = True
    verbose_name_plural = "steps (" + SCENARIO_PAGE_EDITS + ")"
    fields = ("index", "action", "args", "role", "name", "selector", "url", "last_status",
              "last_strategy", "last_score")  # fmt: skip
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


OWNER_FIXED = (
    "A scenario calls, and signs in with, scenarios of its owner's: it is not given to "
    "someone else here. To give it, export it and have them import it (the scenarios it "
    "calls and its login scenario come with it)."
)


class ScenarioAdminForm(forms.ModelForm):
    """A name as the scenario page takes it (one line, at most 200 characters); a login
    scenario among its owner's, set as the scenario page sets it."""

    class Meta:
        model = Scenario
        fields = "__all__"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        login = self.fields.get("login_scenario")
        if login is not None:
            mine = Scenario.objects.filter(owner_id=self.instance.owner_id)
            login.queryset = mine.exclude(pk=self.instance.pk).order_by("name", "pk")

    def clean_name(self) -> str:
        try:
            name = call_services.scenario_name_clean(self.cleaned_data.get("name"))
            if self.instance.pk is not None:
                call_services.scenario_name_free(scenario=self.instance, name=name)
        except ScenarioInvalid as exc:
            raise forms.ValidationError(exc.message) from None
        return name

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if "login_scenario" in self.changed_data and self.instance.pk is not None:
            login = cleaned.get("login_scenario")
            refused = service_refusal(lambda: call_services.login_set(
                scenario=self.instance, login_id=login.pk if login else None))  # fmt: skip
            if refused:
                self.add_error("login_scenario", refused)
        return cleaned


@admin.register(Scenario)
class ScenarioAdmin(admin.ModelAdmin):
    """Scenarios, made by saving a run or importing a file (never added here).  Its name
    and login scenario change through the services the scenario page uses; its owner,
    parameters and interruption handlers are shown only (the page edits them, checked
    against the steps and the scenarios that call it)."""

    list_display = ("id", "name", "owner", "base_url", "step_count", "updated_at")
    list_filter = ("owner", "updated_at")
    search_fields = ("=id", "name", "description", "base_url", "owner__username")
    date_hierarchy = "updated_at"
    list_select_related = ("owner",)
    raw_id_fields = ("source_run",)
    fields = ("name", "description", "owner_fixed", "base_url", "login_scenario", "source_run",
              "params", "handlers", "created_at", "updated_at")  # fmt: skip
    readonly_fields = ("owner_fixed", "params", "handlers", "created_at", "updated_at")
    inlines = [ScenarioStepInline]
    form = ScenarioAdminForm

    def get_queryset(self, request: HttpRequest) -> QuerySet[Scenario]:
        return super().get_queryset(request).annotate(step_count=Count("steps"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="owner")
    def owner_fixed(self, obj: Scenario) -> str:
        return format_html('{}<div class="help">{}</div>', obj.owner, OWNER_FIXED)

    def save_model(self, request: HttpRequest, obj: Scenario, form: Any, change: bool) -> None:
        if change and "name" in form.changed_data:
            # The one way a name changes: the scenarios that call it call the new name.
            call_services.scenario_rename(scenario=obj, name=obj.name)
        super().save_model(request, obj, form, change)
        if "login_scenario" in form.changed_data:
            login = obj.login_scenario_id
            call_services.login_set(scenario=obj, login_id=login)

    @admin.display(description="steps", ordering="step_count")
    def step_count(self, obj: Scenario) -> int:
        return obj.step_count


class ScenarioStepAdminForm(forms.ModelForm):
    """A step's args, changed as the scenario page changes them (the whole scenario read
    again, the scenario a call step calls linked, its callers checked)."""

    class Meta:
        model = ScenarioStep
        fields = ("args",)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        step = self.instance
        if "args" in self.changed_data and isinstance(cleaned.get("args"), dict):
            refused = service_refusal(lambda: scenario_services.scenario_step_update(
                scenario=step.scenario, index=step.index, args=cleaned["args"]))  # fmt: skip
            if refused:
                self.add_error("args", refused)
        elif "args" in self.changed_data and "args" in cleaned:
            self.add_error("args", "a step's args are a JSON object")
        return cleaned


@admin.register(ScenarioStep)
class ScenarioStepAdmin(admin.ModelAdmin):
    """A step, and its args to change; added, moved or deleted on the scenario's page (a
    step goes with its scenario here)."""

    form = ScenarioStepAdminForm
    list_display = ("scenario", "index", "action", "role", "name", "last_status",
                    "last_strategy", "last_score", "last_replayed_at")  # fmt: skip
    list_filter = ("action", "last_status", "last_strategy")
    search_fields = ("=scenario__id", "scenario__name", "name", "selector", "url")
    list_select_related = ("scenario",)
    fields = ("scenario", "index", "action", "args", "identity_pretty", "role", "name",
              "selector", "url", "led_to", "note", "intent", "last_status",
              "last_strategy", "last_score", "last_run", "last_replayed_at")  # fmt: skip
    readonly_fields = tuple(f for f in fields if f != "args")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if on_own_page(self, request):
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: ScenarioStep, form: Any, change: bool) -> None:
        if "args" in form.changed_data:
            scenario_services.scenario_step_update(
                scenario=obj.scenario, index=obj.index, args=obj.args
            )

    @admin.display(description="identity (as recorded or healed)")
    def identity_pretty(self, obj: ScenarioStep) -> str:
        return pretty_json(obj.identity)


@admin.register(IdentityHeal)
class IdentityHealAdmin(admin.ModelAdmin):
    list_display = ("id", "step", "status", "strategy", "score", "run", "created_at", "decided_by")
    list_filter = ("status", "strategy", "created_at")
    search_fields = ("=id", "=run__id", "step__scenario__name", "strategy")
    date_hierarchy = "created_at"
    list_select_related = ("step", "run", "decided_by")
    readonly_fields = ("step", "run", "strategy", "score", "changes", "before_pretty",
                       "after_pretty", "created_at")  # fmt: skip
    exclude = ("before", "after")

    @admin.display(description="before")
    def before_pretty(self, obj: IdentityHeal) -> str:
        return pretty_json(obj.before)

    @admin.display(description="after")
    def after_pretty(self, obj: IdentityHeal) -> str:
        return pretty_json(obj.after)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a heal is what a replay found; people approve or reject it


class UrlRuleForm(forms.ModelForm):
    class Meta:
        model = UrlRule
        fields = "__all__"
        help_texts = {
            "domain": "A host name such as example.com (it covers its subdomains), or "
            "host:port for that port only, e.g. intranet.example:8443 or 127.0.0.1:8000.",
            "kind": "Allow: runs may open it; once any Allow rule exists, runs open only "
            "the allowed domains (a private address needs one). Block: runs never open "
            "it, whatever else allows it.",
        }


@admin.register(UrlRule)
class UrlRuleAdmin(admin.ModelAdmin):
    """Rules that apply as soon as they are saved.  A new rule is an Allow rule unless
    chosen otherwise: the one people add (the new-run form links here with its host)."""

    form = UrlRuleForm
    list_display = ("domain", "kind", "enabled", "note", "created_at")
    list_editable = ("enabled",)
    list_filter = ("kind", "enabled")
    search_fields = ("domain", "note")
    readonly_fields = ("created_at",)

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        return {"kind": UrlRule.Kind.ALLOW, **super().get_changeform_initial_data(request)}


class SecretNameInput(forms.TextInput):
    """Shows a value only if it is a secret's name: a value pasted by mistake and refused
    is not sent back to the browser."""

    def format_value(self, value: Any) -> str | None:
        if isinstance(value, str) and value and not SECRET_NAME_RE.fullmatch(value):
            return None
        return super().format_value(value)


class SecretGrantForm(forms.ModelForm):
    class Meta:
        model = SecretGrant
        fields = "__all__"
        widgets = {"name": SecretNameInput(attrs={"autocomplete": "off"})}


@admin.register(SecretGrant)
class SecretGrantAdmin(admin.ModelAdmin):
    """Who may use which ``${SECRET:NAME}``; the values stay in the server's environment."""

    form = SecretGrantForm
    list_display = ("name", "env_name", "is_set", "note", "created_at")
    search_fields = ("name", "note")
    filter_horizontal = ("users", "groups")
    readonly_fields = ("created_at",)

    @admin.display(boolean=True, description="set on the server")
    def is_set(self, obj: SecretGrant) -> bool:
        return obj.is_set

    @admin.display(description="environment variable")
    def env_name(self, obj: SecretGrant) -> str:
        return obj.env_name


@admin.register(SigninProfile)
class SigninProfileAdmin(admin.ModelAdmin):
    """Sign-in profiles by name, owner, site and counts; who else may start runs with them
    (users, groups).  The state is never shown, nor made here: a person saves it from a
    run's page (Save sign-in)."""

    list_display = ("name", "owner", "site", "cookies", "origins", "updated_at")
    list_filter = ("owner",)
    search_fields = ("name", "owner__username", "site")
    fields = ("name", "owner", "site", "cookies", "origins", "users", "groups",
              "saved_from", "created_at", "updated_at")  # fmt: skip
    readonly_fields = ("name", "owner", "site", "cookies", "origins", "saved_from",
                       "created_at", "updated_at")  # fmt: skip
    filter_horizontal = ("users", "groups")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens by name, owner, when made and last used; never the token (only a hash is
    kept) and never made here: a person makes their own on the API tokens page."""

    list_display = ("name", "owner", "prefix", "created_at", "last_used_at")
    list_filter = ("owner",)
    search_fields = ("name", "owner__username", "prefix")
    fields = ("name", "owner", "prefix", "created_at", "last_used_at")
    readonly_fields = ("owner", "prefix", "created_at", "last_used_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


class BatchRowInline(RecordInline):
    model = BatchRow
    fields = ("index", "params", "run", "attempts")
    readonly_fields = fields


@admin.register(Batch)
class BatchAdmin(RecordAdmin):
    """Batches with their rows (made on a scenario's page or through the API, stopped or
    retried there); a batch is deleted once it no longer runs."""

    list_display = ("id", "scenario", "owner", "status", "concurrency", "created_at", "finished_at")
    list_filter = ("status",)
    search_fields = ("scenario__name", "owner__username", "source")
    inlines = [BatchRowInline]

    def has_delete_permission(self, request: HttpRequest, obj: Batch | None = None) -> bool:
        if obj is not None and obj.status == Batch.Status.RUNNING:
            return False
        return super().has_delete_permission(request, obj)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, ...]:
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        perms_needed.discard(Batch._meta.verbose_name)  # refused only while running: said below
        running = [f"{batch}: still running; stop it first" for batch in objs
                   if batch.status == Batch.Status.RUNNING]  # fmt: skip
        return deleted, counts, perms_needed, [*protected, *running]


class ScheduleFiringInline(RecordInline):
    """One row per schedule and due time is how exactly one worker starts it: a firing
    removed by hand could fire again."""

    model = ScheduleFiring
    fields = ("due_at", "fired_at", "run", "batch", "missed", "outcome", "error", "alerted_at")
    readonly_fields = fields
    ordering = ("-due_at",)


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    """Schedules with their firings; made on a scenario's page or through the API."""

    list_display = ("id", "scenario", "owner", "cron", "timezone", "enabled", "next_fire_at")
    list_filter = ("enabled", "timezone")
    search_fields = ("scenario__name", "owner__username", "cron")
    readonly_fields = ("owner", "scenario", "next_fire_at", "webhook_secret", "created_at")
    inlines = [ScheduleFiringInline]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    """The alerts' outbox: every webhook and e-mail, how it went, the log of each try."""

    list_display = ("id", "kind", "to", "status", "attempts", "next_attempt_at", "created_at",
                    "sent_at")  # fmt: skip
    list_filter = ("status", "kind")
    search_fields = ("to",)
    readonly_fields = ("firing", "kind", "to", "payload", "status", "attempts",
                       "next_attempt_at", "last_error", "log", "created_at",
                       "sent_at")  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
