"""A settle's knobs take whole milliseconds within their limits, and say which one is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from automation.browser.settle import QUIET_MAX_MS, Settler
from automation.errors import ActionInvalid


class _NoPage:
    """Settler listens to a page's events; configuring it needs none of them."""

    def on(self, *_: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("knob", "value"),
    [("bound_ms", 0), ("quiet_ms", 5_001), ("quiet_max_ms", 10_001), ("quiet_max_ms", 1.5),
     ("quiet_max_ms", True), ("short_quiet_ms", -1)],
)  # fmt: skip
def test_a_knob_out_of_range_is_refused_naming_it(knob: str, value: object) -> None:
    settler = Settler(_NoPage())  # type: ignore[arg-type]
    with pytest.raises(ActionInvalid, match=knob):
        settler.configure(**{knob: value})  # type: ignore[arg-type]
    assert settler.quiet_max_ms == QUIET_MAX_MS  # nothing changed


def test_the_cap_of_a_quiet_wait_is_set_alone() -> None:
    settler = Settler(_NoPage())  # type: ignore[arg-type]
    quiet = settler.quiet_ms
    settler.configure(quiet_max_ms=2_000)
    assert (settler.quiet_max_ms, settler.quiet_ms) == (2_000, quiet)


def test_the_short_quiet_may_be_turned_off() -> None:
    settler = Settler(_NoPage())  # type: ignore[arg-type]
    settler.configure(short_quiet_ms=0)
    assert settler.short_quiet_ms == 0
