"""Links to a scenario's step on its page, whose steps are shown a page at a time."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()

STEPS_PER_PAGE = 100  # a scenario's steps shown at once (a 2,000-step page is 20 MB of HTML)


def steps_page_of(index: int) -> int:
    """The page of the scenario's steps (1 first) that shows step ``index``."""
    return index // STEPS_PER_PAGE + 1


@register.simple_tag(takes_context=True)
def step_link(context: dict[str, Any], index: int) -> str:
    """The address, on the scenario's page, of step ``index``: on this page of its steps,
    its anchor; on another, that page's too."""
    page = steps_page_of(int(index))
    here = getattr(context.get("steps_page"), "number", 1)
    return f"#step-{index}" if page == here else f"?steps={page}#step-{index}"
