"""Links to a scenario's step on its page, whose steps are shown a page at a time."""

from __future__ import annotations

from typing import Any

from django import template

from dashboard.scenarios.pages import step_anchor

register = template.Library()


@register.simple_tag(takes_context=True)
def step_link(context: dict[str, Any], index: int) -> str:
    """The address of step ``index`` from the page of steps shown (``steps_page``)."""
    return step_anchor(int(index), getattr(context.get("steps_page"), "number", 1))
