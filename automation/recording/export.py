"""A scenario as a runnable Playwright pytest file, with role-first locators.

Each element step becomes the most readable locator its identity supports, in this order:
``get_by_role(role, name=..., exact=True)`` (narrowed to its row when the name was shared
by several elements, or when the element has no name and its row tells it apart),
``get_by_test_id``, its stored CSS selector, ``get_by_placeholder``.  Elements of a frame
are looked up in the frame with the same path.  The scenario's ``expect`` checks become
Playwright's ``expect(...)`` assertions, so the exported test fails where replay would.

The file stands alone: it launches Chromium itself (``TABWRIGHT_CHROMIUM_PATH`` or the
``CHROMIUM`` environment variable, else Playwright's own), reads ``BASE_URL`` for where to
run (default: where it was recorded), parameters from environment variables named after
them (default: their recorded default), and secrets from ``TABWRIGHT_SECRET_<NAME>``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from automation.browser.identity import ElementIdentity
from automation.recording.scenario import PLACEHOLDER, SECRET_ENV_PREFIX, Scenario, ScenarioStep

__all__ = ["to_pytest"]

_HEADER = '''"""{title}

Exported from a Tabwright scenario (format version {version}).  Run it with:

    BASE_URL={base_url} python -m pytest {{this file}}
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect, sync_playwright

BASE_URL = os.environ.get("BASE_URL", {base_url!r}).rstrip("/")
RECORDED_BASE = {base_url!r}


def url(recorded: str) -> str:
    """A recorded address moved to BASE_URL (other sites stay as they are)."""
    if RECORDED_BASE and recorded.startswith(RECORDED_BASE):
        return BASE_URL + recorded[len(RECORDED_BASE):]
    return recorded


def frame_of(page: Page, path: str):  # noqa: ANN201 (a Frame)
    """The frame whose address ends with the recorded path."""
    frame = page.frame(url=re.compile(re.escape(path) + "$"))
    assert frame is not None, f"no frame at {{path}}"
    return frame


@pytest.fixture
def page() -> Iterator[Page]:
    executable = os.environ.get("TABWRIGHT_CHROMIUM_PATH") or os.environ.get("CHROMIUM") or None
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable)
        page = browser.new_page()
        page.set_default_timeout(float(os.environ.get("TIMEOUT_MS", "15000")))
        yield page
        browser.close()


def test_{func}(page: Page) -> None:
'''


def to_pytest(scenario: Scenario) -> str:
    """The scenario as the text of a pytest module."""
    lines = [
        _HEADER.format(
            title=f"{scenario.name}: replayed with Playwright.".replace('"""', "'''"),
            version=scenario.version,
            base_url=scenario.base_url,
            func=_identifier(scenario.name),
        ).rstrip("\n")
    ]
    for index, step in enumerate(scenario.steps):
        lines.append(f"    # step {index}: {step.describe()}")
        lines.extend(f"    {line}" for line in _step(step, scenario.params))
    if not scenario.steps:
        lines.append("    pass")
    return "\n".join(lines) + "\n"


def _step(step: ScenarioStep, params: dict[str, dict[str, Any]]) -> list[str]:
    args = step.args
    value = lambda key: _value(args[key], params)  # noqa: E731
    if step.action == "expect":
        return [_expect(step, params)]
    if step.action == "dialog":  # armed before the step that opens the dialog
        how = "dialog.dismiss()"
        if args.get("accept", True):
            how = f"dialog.accept({value('prompt_text') if 'prompt_text' in args else ''})"
        on = "once" if int(args.get("times", 1)) == 1 else "on"
        return [f"page.{on}('dialog', lambda dialog: {how})"]
    if step.action == "navigate":
        return [f"page.goto(url({value('url')}))"]
    if step.action in ("back", "forward", "reload"):
        return [f"page.go_{step.action}()" if step.action != "reload" else "page.reload()"]
    target = step.target()
    if step.action == "wait_for" and target is None:
        return _wait(args, params)
    if target is None:  # press or scroll on the page
        if step.action == "press":
            return [f"page.keyboard.press({value('key')})"]
        return [f"page.mouse.wheel({int(args.get('dx', 0))}, {int(args.get('dy', 0))})"]
    el = _locator(target)
    calls = {
        "click": f"{el}.click({_click_options(args)})",
        "double_click": f"{el}.dblclick()",
        "hover": f"{el}.hover()",
        "check": f"{el}.set_checked({bool(args.get('checked', True))})",
        "press": f"{el}.press({value('key')})" if "key" in args else "",
        "scroll": f"{el}.scroll_into_view_if_needed()",
        "wait_for": f"expect({el}).to_be_visible()",
    }
    if step.action in calls:
        return [calls[step.action]]
    if step.action == "fill":
        out = [f"{el}.fill({value('value')})"]
        return out + ([f"{el}.press('Enter')"] if args.get("submit") else [])
    if step.action == "type":
        out = [f"{el}.press_sequentially({value('text')})"]
        return out + ([f"{el}.press('Enter')"] if args.get("submit") else [])
    if step.action == "select_option":
        labels = args["values"] if isinstance(args["values"], list) else [args["values"]]
        return [f"{el}.select_option(label=[{', '.join(_value(v, params) for v in labels)}])"]
    if step.action == "upload":
        files = ", ".join(repr(f) for f in args.get("files", []))
        return [f"{el}.set_input_files([{files}])  # from the upload folder"]
    return [f"# {step.action}: not exported"]


def _expect(step: ScenarioStep, params: dict[str, dict[str, Any]]) -> str:
    """An expect step as Playwright's web-first assertion (it waits, as replay does)."""
    args = step.args
    kind = args["kind"]
    value = lambda key: _value(args[key], params)  # noqa: E731
    if kind in ("text_visible", "text_hidden"):
        shown = (
            f"page.get_by_text(re.compile(re.escape({value('text')}), re.I)).filter(visible=True)"
        )
        if kind == "text_visible":
            return f"expect({shown}.first).to_be_visible()"
        return f"expect({shown}).to_have_count(0)"
    if kind == "rows":
        text = f"re.compile(re.escape({value('text')}), re.I)"
        rows = (
            f"page.locator({_ROWS!r}).filter(has_text={text}, visible=True)"
            f".filter(has_not=page.locator({_ROWS!r}))"
        )
        return f"expect({rows}).to_have_count({int(args['count'])})"
    if kind == "url":
        return f"expect(page).to_have_url(re.compile(re.escape(url({value('url')}))))"
    target = step.target()
    assert target is not None
    el = _locator(target)
    if kind == "visible":
        return f"expect({el}).to_be_visible()"
    if kind in ("checked", "unchecked"):
        return f"expect({el}).{'' if kind == 'checked' else 'not_'}to_be_checked()"
    if target.tag == "select":
        return f"expect({el}.locator('option:checked')).to_have_text({value('value')})"
    return f"expect({el}).to_have_value({value('value')})"


def _locator(identity: ElementIdentity) -> str:
    scope = "page"
    if identity.frame_url:
        scope = f"frame_of(page, {urlsplit(identity.frame_url).path!r})"
    if identity.role and (identity.name or identity.row):
        by_role = (
            f"get_by_role({identity.role!r}, name={identity.name!r}, exact=True)"
            if identity.name
            else f"get_by_role({identity.role!r})"
        )
        if identity.row and (identity.name_count != 1 or not identity.name):
            # Cells' texts may touch ("#1002Grace Hopper"): words apart by any space.
            row = r"\s*".join(re.escape(w) for w in identity.row.split()[:8])
            rows = f"{scope}.locator({_ROWS!r}).filter(has_text=re.compile({row!r}))"
            return f"{rows}.{by_role}"
        if identity.name and identity.name_count <= 1:
            return f"{scope}.{by_role}"
    if "data-testid" in identity.test_ids:
        return f"{scope}.get_by_test_id({identity.test_ids['data-testid']!r})"
    if identity.selectors:
        return f"{scope}.locator({identity.selectors[0]!r})"
    if identity.placeholder:
        return f"{scope}.get_by_placeholder({identity.placeholder!r}, exact=True)"
    return f"{scope}.get_by_role({identity.role!r}, name={identity.name!r}, exact=True).first"


_ROWS = "tr, li, [role=row], [role=listitem], article"


def _click_options(args: dict[str, Any]) -> str:
    options = []
    if args.get("button", "left") != "left":
        options.append(f"button={args['button']!r}")
    if args.get("modifiers"):
        options.append(f"modifiers={list(args['modifiers'])!r}")
    return ", ".join(options)


def _wait(args: dict[str, Any], params: dict[str, dict[str, Any]]) -> list[str]:
    if "text" in args:
        return [f"expect(page.get_by_text({_value(args['text'], params)}).first).to_be_visible()"]
    if "text_gone" in args:
        gone = _value(args["text_gone"], params)
        return [f"expect(page.get_by_text({gone})).to_have_count(0)"]
    if "url" in args:
        return [f"expect(page).to_have_url(re.compile(re.escape({_value(args['url'], params)})))"]
    if "load_state" in args:
        return [f"page.wait_for_load_state({args['load_state']!r})"]
    return [f"page.wait_for_timeout({int(args.get('time_ms', 0))})"]


def _value(text: Any, params: dict[str, dict[str, Any]]) -> str:
    """A Python expression for a recorded value: a literal, or its placeholders read from
    the environment at run time."""
    if not isinstance(text, str):
        return repr(text)
    parts: list[str] = []
    last = 0
    for match in PLACEHOLDER.finditer(text):
        if match.start() > last:
            parts.append(repr(text[last : match.start()]))
        if match.group(0) == "$${":
            parts.append(repr("${"))
        elif match.group(1):
            parts.append(f"os.environ[{SECRET_ENV_PREFIX + match.group(2)!r}]")
        else:
            name = match.group(2)
            default = params.get(name, {}).get("default")
            parts.append(
                f"os.environ.get({name.upper()!r}, {str(default)!r})"
                if default is not None
                else f"os.environ[{name.upper()!r}]"
            )
        last = match.end()
    if last < len(text) or not parts:
        parts.append(repr(text[last:]))
    return " + ".join(parts)


def _identifier(name: str) -> str:
    ident = re.sub(r"\W+", "_", name.lower()).strip("_")
    return ident if ident and not ident[0].isdigit() else f"scenario_{ident}"
