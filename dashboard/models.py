"""What the dashboard keeps: runs, the steps they recorded, every event they emitted,
scenarios (steps kept to replay) with the history of their healed identities, and the LLM
profiles runs can choose from."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from automation.llm.keys import key_env_refusal
from automation.secrets import SECRET_ENV_PREFIX, SECRET_NAME_RE

ENV_NAME_RE = re.compile(r"[A-Z_][A-Z0-9_]*\Z")  # fullmatch: "$" would let a name end in "\n"
_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
DOMAIN_RE = re.compile(rf"{_LABEL}(\.{_LABEL})*")
# Prefixes of well-known API keys (compared case-insensitively).
_KEY_PREFIXES = ("sk-", "sk_", "xai-", "gsk_", "ghp_", "github_pat_", "aiza", "akia")


def validate_env_name(value: str) -> None:
    """An environment variable's name (``OPENAI_API_KEY``), never a key.  The messages
    never repeat the value: it may be a key pasted by mistake."""
    if looks_like_key(value):
        raise ValidationError(
            "This looks like an API key. Enter the name of the environment variable that "
            "holds the key (e.g. OPENAI_API_KEY), never the key itself.",
            code="looks_like_key",
        )
    if not ENV_NAME_RE.fullmatch(value):
        raise ValidationError(
            "Enter an environment variable name: capital letters, digits and underscores, "
            "not starting with a digit (e.g. ANTHROPIC_API_KEY).",
            code="invalid_env_name",
        )
    # Only a variable meant to hold an LLM key: never Tabwright's own or another secret
    # (automation/llm/keys.py; the runner checks again when it reads the key).
    refusal = key_env_refusal(value, allowed=settings.TABWRIGHT["LLM_KEY_VARIABLES"])
    if refusal:
        raise ValidationError(refusal[0].upper() + refusal[1:] + ".", code="key_env_refused")


def looks_like_key(value: str) -> bool:
    """A known key prefix, a dash (names have none, keys often do), mixed case with digits,
    or a long run of letters and digits with no underscore."""
    if value.lower().startswith(_KEY_PREFIXES) or "-" in value:
        return True
    has_digit = any(c.isdigit() for c in value)
    if has_digit and value != value.upper() and value != value.lower():
        return True
    return len(value) >= 24 and "_" not in value and has_digit


class LLMProfile(models.Model):
    """A model runs can choose: provider, endpoint, model, and the NAME of the environment
    variable that holds its key (the key itself stays in the server's environment)."""

    class Provider(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible"
        ANTHROPIC = "anthropic", "Anthropic"

    class NativeTools(models.TextChoices):
        AUTO = "auto", "Auto"
        ON = "on", "On"
        OFF = "off", "Off"

    DEFAULT_BASE_URLS = {
        Provider.OPENAI: "https://api.openai.com/v1",
        Provider.ANTHROPIC: "https://api.anthropic.com",
    }

    name = models.CharField(max_length=100, unique=True)
    provider = models.CharField(max_length=20, choices=Provider.choices, default=Provider.OPENAI)
    base_url = models.CharField(
        max_length=2000,
        blank=True,
        help_text="Empty: the provider's own API (https://api.openai.com/v1, "
        "https://api.anthropic.com). Ollama: http://127.0.0.1:11434/v1",
    )
    model = models.CharField(max_length=200)
    api_key_env = models.CharField(
        "API key variable",
        max_length=100,
        blank=True,
        validators=[validate_env_name],
        help_text="The NAME of the server's environment variable that holds the key "
        "(e.g. ANTHROPIC_API_KEY), never the key. Empty: no key is sent.",
    )
    temperature = models.FloatField(default=0.0)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    native_tools = models.CharField(
        max_length=4,
        choices=NativeTools.choices,
        default=NativeTools.AUTO,
        help_text="Native tool calls instead of <action> tags; auto: when the model offers them.",
    )
    is_default = models.BooleanField(
        "default", default=False, help_text="Preselected for new runs; one profile at most."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "LLM profile"
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"],
                condition=models.Q(is_default=True),
                name="llm_profile_one_default",
            )
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        url = self.base_url.strip()
        if url and not re.fullmatch(r"https?://[^/\s]+(/\S*)?", url):
            raise ValidationError({"base_url": "Enter an http:// or https:// URL."})
        self.base_url = url
        if not 0 <= self.temperature <= 2:
            raise ValidationError({"temperature": "Enter a value from 0 to 2."})

    def validate_constraints(self, exclude: Any = None) -> None:
        # Saving a profile as the default clears the others (services.llm_profile_save),
        # so a second default is not a form error.
        super().validate_constraints(exclude={*(exclude or ()), "is_default"})

    @property
    def endpoint(self) -> str:
        return self.base_url or self.DEFAULT_BASE_URLS[self.Provider(self.provider)]

    @property
    def key_is_set(self) -> bool | None:
        """Whether the key's variable is set (non-empty) on this server; None: no key used."""
        if not self.api_key_env:
            return None
        if key_env_refusal(self.api_key_env, allowed=settings.TABWRIGHT["LLM_KEY_VARIABLES"]):
            return False  # a refused name (a row from before the rule) says nothing of it
        return bool(os.environ.get(self.api_key_env))

    @property
    def native_tools_option(self) -> bool | None:
        return {self.NativeTools.ON: True, self.NativeTools.OFF: False}.get(self.native_tools)


def worker_name(holder: str) -> str:
    """A run holder's name for people: a worker's holder is its channel, named
    ``<the layer's process prefix>!<host>.worker<pid>`` (dashboard.worker), and its name is
    what follows the ``!``; any other holder is its own name."""
    return holder.rpartition("!")[2]


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"  # waits for a worker with room to claim it (dashboard.worker)
        PENDING = "pending"  # claimed by a worker, starting
        RUNNING = "running"
        PAUSED = "paused"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        STOPPED = "stopped"

    FINAL = frozenset({Status.SUCCEEDED, Status.FAILED, Status.STOPPED})
    LIVE = frozenset({Status.PENDING, Status.RUNNING, Status.PAUSED})  # a worker's slot each

    class Kind(models.TextChoices):
        AGENT = "agent", "conversation"  # with the agent, one stretch of work per message
        REPLAY = "replay", "replay"
        MCP = "mcp", "MCP session"  # an MCP client's calls, on a tab a person can watch

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.AGENT)
    # A replay: the scenario it replays and its parameter values (never secrets).
    scenario = models.ForeignKey(
        "Scenario", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    params = models.JSONField(default=dict, blank=True)
    task = models.TextField()
    start_url = models.URLField(max_length=2000, blank=True)
    # The sign-in profile whose state the run's browser context starts with.
    signin_profile = models.ForeignKey(
        "SigninProfile", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    # Its name when it was chosen: a profile deleted since is told (signin_refusal), never
    # silently left out.
    signin_profile_name = models.CharField(max_length=100, blank=True)
    # rules / openai / anthropic / replay: what the run uses; empty until the runner picks
    # for a run that chose nothing (the default profile, else the settings).
    planner = models.CharField(max_length=20, blank=True, default="")
    llm_profile = models.ForeignKey(
        LLMProfile, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    # A replay's model for changed pages by the name it was chosen under: a profile deleted
    # before the replay starts fails it, saying so (dashboard.engineconf.heal_planner_for_run).
    llm_profile_name = models.CharField(max_length=100, blank=True)
    # Totals over the run's LLM rounds (each round's own usage is in its llm.message event);
    # 64 bits: a round's count is kept up to MAX_TOKEN_COUNT (10**12), past PostgreSQL's
    # 32-bit integer, whose overflow failed the round's write there (SQLite's are 64 bits).
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    status_reason = models.TextField(blank=True)
    summary = models.TextField(blank=True)
    # An agent run may end in data: its done's output, checked against this JSON Schema.
    output_schema = models.JSONField(null=True, blank=True)
    output = models.JSONField(null=True, blank=True)
    # A mark of each password the run typed literally (never the password itself:
    # automation.recording.passwords), to keep it out of a scenario saved from the run,
    # whose suggested name is the person's words.
    password_marks = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # When the latest stretch of work ended (None while one goes on).
    finished_at = models.DateTimeField(null=True, blank=True)

    class Session(models.TextChoices):
        """An agent run is a conversation: its browser tab stays open between messages for
        a while (open), then is closed (closed) until the next message restores it."""

        NONE = "", "none"
        OPEN = "open"
        CLOSED = "closed"

    session = models.CharField(max_length=10, choices=Session.choices, blank=True, default="")
    session_reason = models.TextField(blank=True)  # why the session closed
    # The process that drives the run (host:pid:boot), and until when it vouches for it: it
    # renews the lease while the run (or its conversation's tab) lives.  A lease that runs
    # out means that process is gone: any other marks the run lost (runner.sweep_lost).
    holder = models.CharField(max_length=200, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True, db_index=True)
    # A closed conversation queued again by a message (sent through a process that is not
    # a worker): the worker that claims it restores the page, then goes on with this.
    queued_message = models.TextField(blank=True)
    # A batch's replay of one of its rows (dashboard.jobs.batches); every attempt of the row.
    batch_row = models.ForeignKey(
        "BatchRow", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    # Nobody watches it (a schedule's firing, a batch's row): a replay that needs a person
    # waits BATCH_PERSON_WAIT_S for one, then fails, its worker's slot free again.
    unattended = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["owner", "-created_at"]),
            models.Index(fields=["status", "created_at"]),  # the queue, oldest first
        ]

    def __str__(self) -> str:
        return f"Run {self.pk}: {self.task[:60]}"

    @property
    def title(self) -> str:
        """A conversation's title: the first line of its first message."""
        first = next((line.strip() for line in self.task.splitlines() if line.strip()), "")
        return first[:80] + ("…" if len(first) > 80 else "") or f"Run {self.pk}"

    @property
    def is_final(self) -> bool:
        return self.status in self.FINAL

    @property
    def worker_name(self) -> str:
        """The worker that holds the run, or last held it, as its log names it ("" before
        one claimed it): :func:`worker_name` of ``holder``."""
        return worker_name(self.holder)

    @property
    def heal_model_label(self) -> str:
        return heal_model_label(self)

    @property
    def planner_label(self) -> str:
        """The profile's name, else the planner's."""
        if self.llm_profile_id is not None:
            return self.llm_profile.name  # type: ignore[union-attr]
        return PLANNER_LABELS.get(self.planner, self.planner)


PLANNER_LABELS = {
    "": "server default",
    "rules": "Rule planner",
    "openai": "OpenAI-compatible (server settings)",
    "anthropic": "Anthropic (server settings)",
    "replay": "Replay",
}


class Step(models.Model):
    """One executed action, with how to find its element again (taken before it ran)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    action = models.CharField(max_length=40)
    args = models.JSONField(default=dict)
    ref = models.CharField(max_length=20, blank=True)
    role = models.CharField(max_length=40, blank=True)
    name = models.TextField(blank=True)
    selector = models.TextField(blank=True)
    # automation.browser.identity.ElementIdentity as JSON: how replay finds the element.
    identity = models.JSONField(null=True, blank=True)
    url = models.TextField(blank=True)
    led_to = models.TextField(blank=True)  # as StepRecorded.led_to: where it led
    sent = models.TextField(blank=True)  # as StepRecorded.sent: the write it sent
    ok = models.BooleanField(default=True)
    error = models.JSONField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    screenshot = models.CharField(max_length=300, blank=True)  # its name in the default storage
    # As StepRecorded.by: "agent", "person" (in the tab while the run was paused), "mcp",
    # "replay" (a scenario's step, its args the scenario's own), "call" (a called one's).
    by = models.CharField(max_length=10, default="agent")
    # Which stretch of the conversation recorded it (1: the first message's work).
    stretch = models.PositiveIntegerField(default=1)
    # As StepRecorded.dialogs: the dialogs an earlier dialog step's arming answered in it.
    dialogs = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="step_unique_index")]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.index} {self.action}"


class RunEvent(models.Model):
    """Every stored engine event, numbered per run so a page can resume from the last one."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=40)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="event_unique_seq")]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.seq} {self.type}"


class Scenario(models.Model):
    """Steps kept to replay (automation.recording.scenario.Scenario, stored row by row)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scenarios"
    )
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    base_url = models.CharField(max_length=2000, blank=True)  # where it was recorded
    params = models.JSONField(default=dict, blank=True)  # name -> {"default": ...}
    source_run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="saved_scenarios"
    )
    # Replayed in the same tab when a replay of this one meets a sign-in page (its sign-in
    # profile expired); the profile is then saved again (dashboard.runs.live).  Not
    # deleted while a scenario signs in with it (as a called one), unless with them.
    login_scenario = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.RESTRICT, related_name="+"
    )
    # Interruptions its replays clear (automation.recording.handlers), as the scenario
    # format writes them: [{"name", "when", "steps"}].
    handlers = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"])]
        # A call (and a sign-in) finds its scenario by name: each of a person's has its own.
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="scenario_unique_name")
        ]

    def __str__(self) -> str:
        return f"Scenario {self.pk}: {self.name}"


class ScenarioStep(models.Model):
    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    action = models.CharField(max_length=40)
    args = models.JSONField(default=dict, blank=True)  # without a ref; may hold ${placeholders}
    identity = models.JSONField(null=True, blank=True)  # ElementIdentity as JSON
    # Steps stored before identities are found by these.
    role = models.CharField(max_length=40, blank=True)
    name = models.TextField(blank=True)
    selector = models.TextField(blank=True)
    url = models.TextField(blank=True)
    note = models.TextField(blank=True)
    # What the step is for, in words ("open the form to add a customer"): recorded with it,
    # told to the replay's model when the recorded element is gone.
    intent = models.TextField(blank=True)
    # Where it led when recorded (the page's address once it settled): a replay fails the
    # step when it sent a write and ended elsewhere.  Blank in steps stored before it.
    led_to = models.TextField(blank=True)
    # The write a click or key sent when recorded ("POST /api/profile"): a replay fails
    # the step when it sends none.  Blank when none (or stored before it).
    sent = models.TextField(blank=True)
    # How the latest replay that reached this step did: its status (passed, failed,
    # needs_person, skipped), the strategy that found the element and its score.
    last_status = models.CharField(max_length=20, blank=True)
    last_strategy = models.CharField(max_length=20, blank=True)
    last_score = models.FloatField(null=True, blank=True)
    last_run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_replayed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["scenario", "index"]
        constraints = [
            models.UniqueConstraint(fields=["scenario", "index"], name="scenario_step_unique_index")
        ]

    @property
    def version(self) -> str:
        """What the step does, in a few characters: a form that shows the step sends it
        back, and a step changed since (in another tab) is not written over."""
        done = json.dumps([self.action, self.args, self.identity], sort_keys=True, default=str)
        return hashlib.sha256(done.encode()).hexdigest()[:16]

    def __str__(self) -> str:
        return f"{self.scenario_id}#{self.index} {self.action}"


class ScenarioCall(models.Model):
    """``caller`` has a call step that runs ``callee`` (by its name; see
    automation.recording.calls): kept whenever the caller's steps are saved, so that a
    scenario another calls is not deleted from under it, and a renamed one is renamed in
    its callers' steps."""

    caller = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="calls")
    callee = models.ForeignKey(Scenario, on_delete=models.RESTRICT, related_name="callers")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["caller", "callee"], name="scenario_call_unique")
        ]

    def __str__(self) -> str:
        return f"{self.caller_id} calls {self.callee_id}"


class IdentityHeal(models.Model):
    """A replay found a step's element changed: the identity before and after, and whether
    it was written to the step (at once when confident, or when a person approved it)."""

    class Status(models.TextChoices):
        APPLIED = "applied"
        PROPOSED = "proposed"
        REJECTED = "rejected"

    step = models.ForeignKey(ScenarioStep, on_delete=models.CASCADE, related_name="heals")
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="heals"
    )
    status = models.CharField(max_length=10, choices=Status.choices)
    strategy = models.CharField(max_length=20, blank=True)
    score = models.FloatField(null=True, blank=True)
    changes = models.JSONField(default=list, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"heal of {self.step} ({self.status})"


class UrlRule(models.Model):
    """A domain runs may (allow) or may not (block) open, on top of the server's settings.
    Any allow rule (here or in TABWRIGHT_ALLOWED_DOMAINS) limits runs to the allowed
    domains; a block always wins.  A domain covers its subdomains."""

    class Kind(models.TextChoices):
        ALLOW = "allow", "Allow"
        BLOCK = "block", "Block"

    domain = models.CharField(
        max_length=253, help_text="A host name such as example.com (covers its subdomains)."
    )
    kind = models.CharField(max_length=5, choices=Kind.choices, default=Kind.BLOCK)
    enabled = models.BooleanField(default=True)
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "domain"]
        verbose_name = "URL rule"
        constraints = [
            models.UniqueConstraint(fields=["domain", "kind"], name="url_rule_unique_domain")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.domain}"

    def clean(self) -> None:
        # A host name or an address, and optionally a port: "intranet.example:8443" or
        # "127.0.0.1:8000" holds for that port only (automation/browser/url_policy.py).
        domain = self.domain.strip().lower()
        if domain.startswith("*."):
            domain = domain[2:]
        if "/" in domain:
            raise ValidationError({"domain": "Enter a host name such as example.com, not a URL."})
        host, port = domain, ""
        if domain.startswith("["):  # [IPv6] or [IPv6]:port
            host, _, port = domain[1:].partition("]")
            if port and not port.startswith(":"):
                raise ValidationError({"domain": "Write an IPv6 address as [address]:port."})
            port = port[1:]
        elif domain.count(":") == 1:  # more than one: a bare IPv6 address, no port
            host, _, port = domain.partition(":")
        if port:
            if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
                raise ValidationError({"domain": f"{port!r} is not a port (1-65535)."})
            port = f":{int(port)}"
        host = host.rstrip(".")
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            if domain.startswith("[") or not DOMAIN_RE.fullmatch(host):
                raise ValidationError(
                    {"domain": "Enter a host name such as example.com, or host:port."}
                ) from None
        else:
            host = f"[{address}]" if address.version == 6 and port else str(address)
        self.domain = host + port


class SecretGrantQuerySet(models.QuerySet["SecretGrant"]):
    def names_for(self, user: Any) -> frozenset[str] | None:
        """The secret names ``user`` may use in a run (None: all of them, a superuser)."""
        if user.is_superuser:
            return None
        granted = self.filter(
            models.Q(users=user) | models.Q(groups__in=user.groups.all())
        ).values_list("name", flat=True)
        return frozenset(granted)


class SecretGrant(models.Model):
    """Who may use the secret ``${SECRET:NAME}`` in their runs: the users and groups an
    admin granted it to (superusers may use every secret).  The value stays in the
    server's environment (``TABWRIGHT_SECRET_NAME``); it is never stored here."""

    name = models.CharField(
        max_length=100,
        unique=True,
        help_text="NAME of ${SECRET:NAME}: letters, digits and _ (the value is the "
        "environment variable TABWRIGHT_SECRET_NAME, never entered here).",
    )
    users = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="secret_grants"
    )
    groups = models.ManyToManyField("auth.Group", blank=True, related_name="secret_grants")
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = SecretGrantQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = "secret grant"

    def __str__(self) -> str:
        return self.name

    @property
    def env_name(self) -> str:
        return SECRET_ENV_PREFIX + self.name

    @property
    def is_set(self) -> bool:
        return self.env_name in os.environ

    def clean(self) -> None:
        # The message never repeats the value: it may be the secret pasted by mistake.
        if not SECRET_NAME_RE.fullmatch(self.name):
            raise ValidationError(
                {"name": "Enter the secret's name (letters, digits and _, e.g. SHOP_PW)."}
            )


class SigninProfileQuerySet(models.QuerySet["SigninProfile"]):
    def usable_by(self, user: Any) -> SigninProfileQuerySet:
        """The profiles ``user`` may start runs with: their own and those granted to them
        or their groups (a superuser: every one)."""
        if user.is_superuser:
            return self.all()
        return self.filter(
            models.Q(owner=user) | models.Q(users=user) | models.Q(groups__in=user.groups.all())
        ).distinct()


class SigninProfile(models.Model):
    """The signed-in state of a site (cookies and each origin's storage) saved from a
    run's tab under a name, for runs to start signed in.  ``state`` is encrypted with
    the server's key (dashboard.runs.signins) and never shown or exported; the owner and
    those granted it (users, groups) may start runs with it."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="signin_profiles"
    )
    name = models.CharField(max_length=100)
    site = models.CharField(max_length=300, blank=True)  # the origin of the tab it was saved from
    state = models.BinaryField(editable=False)  # Fernet token of the storage state's JSON
    cookies = models.PositiveIntegerField(default=0)  # counts, shown instead of the state
    origins = models.PositiveIntegerField(default=0)
    users = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="granted_signin_profiles"
    )
    groups = models.ManyToManyField("auth.Group", blank=True, related_name="signin_profiles")
    saved_from = models.ForeignKey(
        "Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SigninProfileQuerySet.as_manager()

    class Meta:
        ordering = ["name", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="signin_profile_unique_name")
        ]
        verbose_name = "sign-in profile"

    def __str__(self) -> str:
        return self.name


class ApiToken(models.Model):
    """A person's key to the JSON API (dashboard/api/): it acts as its owner, seeing
    only what the owner sees.  Only a hash is kept; the token is shown once, when made."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the token is for (a script, a CI job).")
    # The token's first characters, to tell tokens apart in lists; not enough to use it.
    prefix = models.CharField(max_length=16, editable=False)
    digest = models.CharField(max_length=64, unique=True, editable=False)  # SHA-256, hex
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


def signin_label(holder: Run | Batch | Schedule) -> str:
    """The sign-in profile of a run, a batch or a schedule as its page shows it: its name,
    marked when it was deleted since; "" for none."""
    if holder.signin_profile is not None:
        return holder.signin_profile.name
    return f"{holder.signin_profile_name} (deleted)" if holder.signin_profile_name else ""


def signin_fields(profile_id: int | None) -> dict[str, object]:
    """A run's, a batch's or a schedule's fields for the sign-in profile ``profile_id``
    (None: none); one deleted as it was chosen is kept as deleted (by its number)."""
    if profile_id is None:
        return {"signin_profile_id": None, "signin_profile_name": ""}
    name = SigninProfile.objects.filter(pk=profile_id).values_list("name", flat=True).first()
    if name is None:
        return {"signin_profile_id": None, "signin_profile_name": f"#{profile_id}"}
    return {"signin_profile_id": profile_id, "signin_profile_name": name}


def signin_refusal(holder: Run | Batch | Schedule) -> str:
    """Why the runs of a run, a batch or a schedule can't start with the sign-in profile
    chosen for them: it was deleted since; "" when it is there, or none was chosen."""
    if holder.signin_profile_id is None and holder.signin_profile_name:
        return (f"the sign-in profile {holder.signin_profile_name!r} was deleted: choose "
                "another one, or none")  # fmt: skip
    return ""


def heal_model_label(holder: Run | Batch | Schedule) -> str:
    """The model for changed pages a replay, a batch or a schedule chose, as its page shows
    it: the profile's name, marked when it was deleted since; "" for none."""
    if holder.llm_profile is not None:
        return holder.llm_profile.name
    return f"{holder.llm_profile_name} (deleted)" if holder.llm_profile_name else ""


class Batch(models.Model):
    """One scenario replayed once per row of parameter values (a CSV or JSON list), a few
    rows at a time (``concurrency``); each row's replay is an ordinary run."""

    class Status(models.TextChoices):
        RUNNING = "running"
        STOPPED = "stopped"
        DONE = "done"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="batches"
    )
    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="batches")
    base_url = models.CharField(max_length=2000, blank=True)
    signin_profile = models.ForeignKey(
        "SigninProfile", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    signin_profile_name = models.CharField(max_length=100, blank=True)  # (as a run's)
    # The model for changed pages its replays get, and its name when it was chosen: a
    # profile deleted since is told (dashboard.engineconf.heal_model_refusal), never
    # silently left out.
    llm_profile = models.ForeignKey(
        LLMProfile, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    llm_profile_name = models.CharField(max_length=100, blank=True)
    concurrency = models.PositiveSmallIntegerField(default=2)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    source = models.CharField(max_length=200, blank=True)  # the file's name, or "api"
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["status"])]
        verbose_name_plural = "batches"

    def __str__(self) -> str:
        return f"Batch {self.pk} of scenario {self.scenario_id}"

    @property
    def heal_model_label(self) -> str:
        return heal_model_label(self)


class BatchRow(models.Model):
    """A row of a batch: its parameter values and its latest replay (earlier attempts of
    a retried row keep pointing at it through Run.batch_row)."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="rows")
    index = models.PositiveIntegerField()  # 1 = the file's first row of values
    params = models.JSONField(default=dict)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["batch", "index"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "index"], name="batch_row_unique_index")
        ]

    def __str__(self) -> str:
        return f"Row {self.index} of batch {self.batch_id}"


class Schedule(models.Model):
    """A scenario replayed (with fixed parameter values) or run as a batch (rows kept with
    the schedule) at the times of a cron expression in a time zone; who to tell when a
    firing ends badly (dashboard/jobs/schedules.py, dashboard/jobs/alerts.py)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="schedules"
    )
    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="schedules")
    cron = models.CharField(max_length=100, help_text="minute hour day month weekday")
    timezone = models.CharField(max_length=64, default="UTC")
    params = models.JSONField(default=dict, blank=True)  # a replay's values
    rows = models.JSONField(null=True, blank=True)  # a batch's rows instead
    concurrency = models.PositiveSmallIntegerField(default=2)
    base_url = models.CharField(max_length=2000, blank=True)
    signin_profile = models.ForeignKey(
        "SigninProfile", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    signin_profile_name = models.CharField(max_length=100, blank=True)  # (as a run's)
    # The model for changed pages its replays get, and its name when it was chosen: a
    # profile deleted since is told (dashboard.engineconf.heal_model_refusal), never
    # silently left out.
    llm_profile = models.ForeignKey(
        LLMProfile, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    llm_profile_name = models.CharField(max_length=100, blank=True)
    enabled = models.BooleanField(default=True)
    next_fire_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # Alerts when a firing ends badly: a signed webhook and/or e-mail.
    webhook_url = models.URLField(max_length=2000, blank=True)
    webhook_secret = models.CharField(max_length=64, blank=True, editable=False)
    emails = models.CharField(max_length=500, blank=True, help_text="comma-separated")
    # The dashboard's origin as seen by the request that made or last changed the schedule:
    # its alerts' links, unless TABWRIGHT_PUBLIC_URL says otherwise.
    origin = models.CharField(max_length=300, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["scenario", "pk"]

    def __str__(self) -> str:
        return f"Schedule {self.pk} of scenario {self.scenario_id}: {self.cron} ({self.timezone})"

    @property
    def heal_model_label(self) -> str:
        return heal_model_label(self)


class ScheduleFiring(models.Model):
    """A time a schedule was due: the replay or batch it started, or a report of times
    missed while no worker was up.  One row per schedule and time, so of several workers
    exactly one starts it."""

    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="firings")
    due_at = models.DateTimeField()
    fired_at = models.DateTimeField(auto_now_add=True)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    batch = models.ForeignKey(
        Batch, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    missed = models.PositiveIntegerField(default=0)  # times skipped: due while all was down
    outcome = models.CharField(max_length=20, blank=True)  # "", ok, failed, stopped, needs_person…
    # Why it could not start (the scenario changed), or who stopped its replay.
    error = models.TextField(blank=True)
    alerted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-due_at"]
        constraints = [
            models.UniqueConstraint(fields=["schedule", "due_at"], name="firing_once_per_time")
        ]
        # The poll's firings still to judge (dashboard.jobs.schedules.judge_all), found
        # without reading every firing ever kept.
        indexes = [models.Index(fields=["outcome", "alerted_at"], name="firing_to_judge")]

    def __str__(self) -> str:
        return f"Firing of schedule {self.schedule_id} due {self.due_at:%Y-%m-%d %H:%M}"


class Delivery(models.Model):
    """One alert in the outbox: a webhook POST or an e-mail telling that a firing ended
    badly, sent by the workers apart from their schedules' poll, tried until sent (with
    backoff) or given up; the last error and every try are kept here
    (dashboard/jobs/outbox.py)."""

    class Kind(models.TextChoices):
        WEBHOOK = "webhook"
        EMAIL = "email", "e-mail"

    class Status(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"  # given up

    firing = models.ForeignKey(ScheduleFiring, on_delete=models.CASCADE, related_name="deliveries")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.WEBHOOK)
    to = models.CharField(max_length=2000)  # the webhook's URL, or the addresses (commas)
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(db_index=True)
    last_error = models.TextField(blank=True)
    log = models.JSONField(default=list)  # [{"at", "status_code" | "error"}] per try
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"{self.get_kind_display().capitalize()} {self.pk} to {self.to} ({self.status})"
