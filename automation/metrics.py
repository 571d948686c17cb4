"""Process-wide counters and histograms, rendered in the Prometheus text format.

Small on purpose: the engine counts what an operator needs to see (evaluations, their
timeouts, terminations, fallbacks) and the dashboard serves :func:`render` at ``/metrics``.
Label values must come from small fixed sets, never from user input.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable

__all__ = [
    "EVALUATE_FALLBACKS",
    "EVALUATE_SECONDS",
    "EVALUATE_TERMINATIONS",
    "EVALUATIONS",
    "PAGE_PROBES",
    "REGISTRY",
    "Counter",
    "Histogram",
    "Registry",
]

LabelKey = tuple[str, ...]


def _labels(names: tuple[str, ...], values: LabelKey, extra: str = "") -> str:
    pairs = [f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True)]
    if extra:
        pairs.append(extra)
    return "{" + ",".join(pairs) + "}" if pairs else ""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class _Metric:
    kind = ""

    def __init__(self, name: str, help_text: str, labelnames: tuple[str, ...] = ()) -> None:
        self.name, self.help, self.labelnames = name, help_text, labelnames
        self._lock = threading.Lock()

    def _key(self, labels: dict[str, str]) -> LabelKey:
        if set(labels) != set(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, got {tuple(labels)}")
        return tuple(str(labels[n]) for n in self.labelnames)

    def lines(self) -> Iterable[str]:
        raise NotImplementedError


class Counter(_Metric):
    kind = "counter"

    def __init__(self, name: str, help_text: str, labelnames: tuple[str, ...] = ()) -> None:
        super().__init__(name, help_text, labelnames)
        self._values: dict[LabelKey, float] = {}

    def inc(self, amount: float = 1, **labels: str) -> None:
        key = self._key(labels)
        with self._lock:
            self._values[key] = self._values.get(key, 0) + amount

    def value(self, **labels: str) -> float:
        return self._values.get(self._key(labels), 0)

    def lines(self) -> Iterable[str]:
        for key, value in sorted(self._values.items()):
            yield f"{self.name}{_labels(self.labelnames, key)} {_number(value)}"


class Histogram(_Metric):
    kind = "histogram"

    def __init__(
        self,
        name: str,
        help_text: str,
        labelnames: tuple[str, ...] = (),
        buckets: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
    ) -> None:
        super().__init__(name, help_text, labelnames)
        self.buckets = (*sorted(buckets), math.inf)
        self._counts: dict[LabelKey, list[int]] = {}
        self._sums: dict[LabelKey, float] = {}

    def observe(self, value: float, **labels: str) -> None:
        key = self._key(labels)
        with self._lock:
            counts = self._counts.setdefault(key, [0] * len(self.buckets))
            for i, bound in enumerate(self.buckets):
                if value <= bound:
                    counts[i] += 1
            self._sums[key] = self._sums.get(key, 0) + value

    def count(self, **labels: str) -> int:
        counts = self._counts.get(self._key(labels))
        return counts[-1] if counts else 0

    def lines(self) -> Iterable[str]:
        for key, counts in sorted(self._counts.items()):
            for bound, count in zip(self.buckets, counts, strict=True):
                le = f'le="{_number(bound)}"'
                yield f"{self.name}_bucket{_labels(self.labelnames, key, le)} {count}"
            yield f"{self.name}_sum{_labels(self.labelnames, key)} {_number(self._sums[key])}"
            yield f"{self.name}_count{_labels(self.labelnames, key)} {counts[-1]}"


class Registry:
    def __init__(self) -> None:
        self._metrics: list[_Metric] = []

    def add(self, metric: _Metric) -> _Metric:
        self._metrics.append(metric)
        return metric

    def render(self) -> str:
        out: list[str] = []
        for metric in self._metrics:
            out.append(f"# HELP {metric.name} {metric.help}")
            out.append(f"# TYPE {metric.name} {metric.kind}")
            out.extend(metric.lines())
        return "\n".join(out) + "\n"


REGISTRY = Registry()

EVALUATIONS = Counter(
    "tabwright_evaluations_total",
    "Scripts evaluated in pages, by route (cdp, cdp_element, playwright) and outcome "
    "(ok, error, timeout, cancelled).",
    ("route", "outcome"),
)
EVALUATE_SECONDS = Histogram(
    "tabwright_evaluate_duration_seconds", "How long evaluations took, by route.", ("route",)
)
EVALUATE_TERMINATIONS = Counter(
    "tabwright_evaluate_terminations_total",
    "Runtime.terminateExecution sent after a timeout or cancel, by whether the page answered.",
    ("result",),
)
EVALUATE_FALLBACKS = Counter(
    "tabwright_evaluate_fallbacks_total",
    "Evaluations that took the Playwright path instead of the CDP engine, by reason.",
    ("reason",),
)
PAGE_PROBES = Counter(
    "tabwright_page_probes_total",
    "Pages asked whether they still answer after a call on them ran out of time or was "
    "cancelled, by what was found (alive; stopped: hung, its script terminated; still_hung; "
    "slow: the browser's own answer was late too, the page was not judged).",
    ("found",),
)
for _metric in (
    EVALUATIONS,
    EVALUATE_SECONDS,
    EVALUATE_TERMINATIONS,
    EVALUATE_FALLBACKS,
    PAGE_PROBES,
):
    REGISTRY.add(_metric)
