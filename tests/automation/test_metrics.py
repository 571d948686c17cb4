"""The Prometheus text the /metrics page serves: names, labels, escaping, histograms."""

from __future__ import annotations

import pytest

from automation.metrics import Counter, Histogram, Registry


def test_counters_and_histograms_render_as_prometheus_text() -> None:
    registry = Registry()
    calls = registry.add(Counter("demo_calls_total", "Calls made.", ("route", "outcome")))
    seconds = registry.add(Histogram("demo_seconds", "Call time.", ("route",), buckets=(0.1, 1)))
    assert isinstance(calls, Counter) and isinstance(seconds, Histogram)
    calls.inc(route="cdp", outcome="ok")
    calls.inc(2, route="cdp", outcome="ok")
    calls.inc(route='we"ird\\', outcome="timeout")
    seconds.observe(0.05, route="cdp")
    seconds.observe(0.5, route="cdp")
    seconds.observe(3, route="cdp")
    text = registry.render()
    assert text.endswith("\n")
    lines = text.splitlines()
    assert lines[:2] == ["# HELP demo_calls_total Calls made.", "# TYPE demo_calls_total counter"]
    assert 'demo_calls_total{route="cdp",outcome="ok"} 3' in lines
    assert 'demo_calls_total{route="we\\"ird\\\\",outcome="timeout"} 1' in lines
    assert "# TYPE demo_seconds histogram" in lines
    assert 'demo_seconds_bucket{route="cdp",le="0.1"} 1' in lines
    assert 'demo_seconds_bucket{route="cdp",le="1"} 2' in lines
    assert 'demo_seconds_bucket{route="cdp",le="+Inf"} 3' in lines
    assert 'demo_seconds_sum{route="cdp"} 3.55' in lines
    assert 'demo_seconds_count{route="cdp"} 3' in lines
    assert calls.value(route="cdp", outcome="ok") == 3 and seconds.count(route="cdp") == 3


def test_labels_must_match_the_declared_names() -> None:
    calls = Counter("demo_total", "Calls.", ("route",))
    with pytest.raises(ValueError, match="route"):
        calls.inc(reason="x")
    with pytest.raises(ValueError):
        calls.inc()
