"""What the dashboard keeps: runs, the steps they recorded, every event they emitted, and
scenarios (steps kept to replay) with the history of their healed identities."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Run(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        PAUSED = "paused"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        STOPPED = "stopped"

    FINAL = frozenset({Status.SUCCEEDED, Status.FAILED, Status.STOPPED})

    class Kind(models.TextChoices):
        AGENT = "agent"
        REPLAY = "replay"

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
    planner = models.CharField(max_length=20, default="rules")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    status_reason = models.TextField(blank=True)
    summary = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "-created_at"])]

    def __str__(self) -> str:
        return f"Run {self.pk}: {self.task[:60]}"

    @property
    def is_final(self) -> bool:
        return self.status in self.FINAL


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
    ok = models.BooleanField(default=True)
    error = models.JSONField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    screenshot = models.CharField(max_length=300, blank=True)  # path under MEDIA_ROOT

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
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"])]

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

    class Meta:
        ordering = ["scenario", "index"]
        constraints = [
            models.UniqueConstraint(fields=["scenario", "index"], name="scenario_step_unique_index")
        ]

    def __str__(self) -> str:
        return f"{self.scenario_id}#{self.index} {self.action}"


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
