"""One step of a scenario as the lines of its pytest export (:mod:`automation.recording.export`):
its comment in the dashboard's words, its call on its element's locator (a click, a fill and
the check that the field took it all, a tick kept, an option chosen as replay judges it), a
wait, and a check as the assertion that reads the page as replay reads it
(:mod:`automation.recording.exportseen`).  Every value of the step reaches the file through
:mod:`automation.recording.exportliterals` (a literal on one line, a number made by
``int()``); one that can't refuses the export with
:class:`~automation.errors.ScenarioInvalid`."""

from __future__ import annotations

from typing import Any

from automation.browser.dialogs import DIALOG_KINDS
from automation.browser.interact import MODIFIERS, MOUSE_BUTTONS
from automation.errors import ScenarioInvalid
from automation.recording import expect
from automation.recording.calls import CALL
from automation.recording.expect import KINDS
from automation.recording.exportliterals import arg as _arg
from automation.recording.exportliterals import ident as _ident
from automation.recording.exportliterals import plain as _plain
from automation.recording.exportliterals import query_value as _query_value
from automation.recording.exportliterals import quote as _quote
from automation.recording.exportliterals import text as _text
from automation.recording.exportliterals import url as _url
from automation.recording.exportliterals import value as _value
from automation.recording.exportliterals import whole as _int
from automation.recording.exportlocators import element as _element
from automation.recording.exportlocators import known_role as _role
from automation.recording.replaytabs import TABS
from automation.recording.scenario import BOX_ROLES, ScenarioStep
from automation.wording import step_words

__all__ = ["arm_sign_in", "comment", "step_lines"]


def arm_sign_in(where: str) -> str:
    """The line that hands signing in again to Playwright when ``where`` (the login
    scenario's first element) shows before an action.  Not waited gone after it: a page
    that does not ask to sign in may show one like it (a form's "User" field), and
    ``sign_in_again`` then leaves it, armed for a sign-in page later."""
    return f"page.add_locator_handler({where}, sign_in_again, no_wait_after=True)"


def comment(index: int, step: ScenarioStep) -> str:
    """``# step 3: tick the checkbox in row 'Buy milk'``, ``# step 4: expect 1 row(s)
    show 'Buy milk'``: the step in the words the dashboard uses (automation.wording), of
    its action (one of the known), the role (one of the list) and texts as repr() writes
    them (one line, whatever they hold)."""
    target = step.target()
    if target is not None and target.role:
        _role(target.role)
    args = dict(step.args)
    if step.action == "expect":
        args["kind"] = _kind(step.args)
        if "count" in args:
            args["count"] = _int(args["count"], "count")
    line = f"# step {index}: {step_words(step.action, args, target, quote=_quote)}"
    if len(line.splitlines()) != 1:  # repr() escapes every line break: never true
        raise ScenarioInvalid("its comment would not stay on one line")
    return line


def step_lines(step: ScenarioStep, params: dict[str, dict[str, Any]]) -> list[str]:
    """The lines that do ``step`` (an action, a dialog armed, a call of another
    scenario's function, a switch of tabs, a wait or a check)."""
    args = step.args
    value = lambda key: _value(_arg(args, key), params)  # noqa: E731
    if step.action == "expect":
        return _expect(step, params)
    if step.action == "dialog":  # armed before the step that opens the dialog
        accept = bool(args.get("accept", True))
        text = value("prompt_text") if accept and "prompt_text" in args else "None"
        kind = args.get("kind")
        if kind is not None and kind not in DIALOG_KINDS:
            raise ScenarioInvalid(f"unknown kind of dialog {str(kind)[:40]!r}")
        times = _int(args.get("times", 1), "times")
        return [f"DIALOGS.arm({accept}, {text}, {times}{'' if kind is None else f', {kind!r}'})"]
    if step.action == "navigate":
        address = _url(_query_value(_arg(args, "url"), params), params)
        if getattr(params, "opened", False):  # the test's, when it signs in again
            return [f"opened.append({address})", "page.goto(opened[-1])"]
        return [f"page.goto({address})"]
    if step.action == CALL:
        function = params.calls.get(str(args.get("scenario")))  # type: ignore[attr-defined]
        if function is None:
            raise ScenarioInvalid(f"the scenario it calls, {args.get('scenario')!r}, is not there")
        given = ", ".join(f"{_text(k, 'a parameter')}: {_value(v, params)}"
                          for k, v in args.get("params", {}).items())  # fmt: skip
        signs_in = getattr(params, "signs_in", None)
        if signs_in is not None and signs_in[0] == args.get("scenario"):
            # Its own sign-in page is no sign that the session ended: the handler is off.
            return [f"page.remove_locator_handler({signs_in[1]})",
                    f"{function}(page, {{{given}}})",
                    arm_sign_in(signs_in[1])]  # fmt: skip
        return [f"{function}(page, {{{given}}})"]
    if step.action == TABS:  # where the steps after it happen (exportpopups)
        if args["op"] == "popup":
            return ["page = WINDOWS.into(page)"]
        if args["op"] == "first":
            return ["page = WINDOWS.first(page)"]
        closed, changed = bool(args.get("closed")), bool(args.get("changed"))
        return [f"page = WINDOWS.back(page, {closed}, {changed})"]
    if step.action in ("back", "forward", "reload"):
        return [f"page.go_{step.action}()" if step.action != "reload" else "page.reload()"]
    target = step.target()
    if step.action == "wait_for" and target is None:
        return _wait(args, params)
    if target is None:  # press or scroll on the page
        if step.action == "press":
            return [f"press_key(page, {value('key')})"]
        dx, dy = _int(args.get("dx", 0), "dx"), _int(args.get("dy", 0), "dy")
        return [f"page.mouse.wheel({dx}, {dy})"]
    notes, el = _element(target, params)
    return [*notes, *_act(step, el, params)]


def _act(step: ScenarioStep, el: str, params: dict[str, dict[str, Any]]) -> list[str]:
    """The step's call on its element's locator ``el``."""
    args = step.args
    value = lambda key: _value(_arg(args, key), params)  # noqa: E731
    calls = {
        "click": lambda: f"{el}.click({_click_options(args)})",
        # (Playwright's dblclick does not wait for the navigation it starts; this does,
        # with the same events: a form it sends is judged where it led, as in replay.)
        "double_click": lambda: f"{el}.click(click_count=2)",
        "hover": lambda: f"{el}.hover()",
        "check": lambda: (
            f"kept_change({el}, 'check', {bool(args.get('checked', True))}, checks_answered)"
        ),
        "press": lambda: f"{el}.press({value('key')})",
        "scroll": lambda: f"{el}.scroll_into_view_if_needed()",
        "wait_for": lambda: f"expect({el}).to_be_visible()",
    }
    target = step.target()
    if (
        step.action == "click"
        and target is not None
        and target.role == "option"
        and not (args.get("button", "left") != "left" or args.get("modifiers"))
    ):  # an option of a combobox's list: the choice taken, as replay judges it
        return [f"choose({el}, {_ident(target.name, params, 'name')})"]
    if step.action in calls:
        if step.action == "press" and "key" not in args:
            raise ScenarioInvalid("press needs its key")
        return [calls[step.action]()]
    if step.action == "fill":  # (the whole value taken, as replay judges typing)
        out = [
            f"{el}.fill({value('value')})",
            f"released(page, {value('value')})",
            f"fits({el}, {value('value')})",
        ]
        return out + ([f"{el}.press('Enter')"] if args.get("submit") else [])
    if step.action == "type":  # key by key into the field emptied first, as replay types
        clear = args.get("clear", True)
        first = f"{el}.fill('')" if clear else f"{el}.press('Control+End')"
        out = [first, f"{el}.press_sequentially({value('text')})"]
        out += [f"fits({el}, {value('text')})"] if clear else []
        return out + ([f"{el}.press('Enter')"] if args.get("submit") else [])
    if step.action == "select_option":
        labels = _arg(args, "values")
        labels = labels if isinstance(labels, list) else [labels]
        labels = ", ".join(_value(v, params) for v in labels)
        return [f"kept_change({el}, 'select', [{labels}], checks_answered)"]
    if step.action == "upload":
        if not isinstance(args.get("files", []), list):
            raise ScenarioInvalid("files must be a list of file names")
        for name in args.get("files", []):
            _text(name, "a file name")  # (a name is text)
        files = ", ".join(_value(f, params) for f in args.get("files", []))
        return [
            f"attach({el}, uploaded([{files}]), checks_answered, writes_answered)"
            "  # from TABWRIGHT_UPLOAD_DIR"
        ]
    raise ScenarioInvalid(f"{step.action} steps are not exported")


def _expect(step: ScenarioStep, params: dict[str, dict[str, Any]]) -> list[str]:
    """An expect step as Playwright's web-first assertion (it waits, as replay does)."""
    target = step.target()
    if step.args.get("kind") in expect.ELEMENT_KINDS and target is not None:
        notes, el = _element(target, params)
        return [*notes, _assertion(step, params, el)]
    return [_assertion(step, params, "")]


def _assertion(step: ScenarioStep, params: dict[str, dict[str, Any]], el: str) -> str:
    args = step.args
    kind = _kind(args)
    if kind == "download":  # the page's latest download (the header keeps each)
        checked = ", ".join(f"{_text(k, 'a check arg')}: {_plain(v, params)}"
                            for k, v in args.items())  # fmt: skip
        return f"check_download(page, {{{checked}}})"
    value = lambda key: _value(_arg(args, key), params)  # noqa: E731
    if kind in ("text_visible", "text_hidden"):  # as replay sees it: automation.browser.seen
        hidden = "" if kind == "text_visible" else ", shown=False"
        return f"expect_text(page, {value('text')}{hidden})"
    if kind == "rows":
        count = _int(args.get("count"), "count")
        at_least = ", at_least=True" if args.get("at_least") else ""  # that many or more
        return f"expect_rows(page, {value('text')}, {count}{at_least})"
    if kind == "no_error":  # as replay reads it: automation.browser.seen's errors
        return "expect_no_error(page)"
    if kind == "url":
        return _expect_address(args, params)
    target = step.target()
    if target is None or not el:
        raise ScenarioInvalid(f"the check {kind} needs the element's identity")
    if kind == "visible":  # as replay sees it: automation.browser.seen's rule
        return f"expect_seen(page, {el})"
    if kind in ("checked", "unchecked"):
        if target.role not in BOX_ROLES:  # a button pressed in: as replay reads it
            return f"expect_ticked({el}, {kind == 'checked'})"
        return f"expect({el}).{'' if kind == 'checked' else 'not_'}to_be_checked()"
    if kind == "items":  # its text, each in turn, as replay reads it
        items = _arg(args, "items")
        if not isinstance(items, list):
            raise ScenarioInvalid("items must be a list of texts")
        among = ", among_others=True" if args.get("among_others") else ""
        listed = ", ".join(_value(i, params) for i in items)
        return f"expect_items(page, {el}, [{listed}]{among})"
    if target.tag == "select":
        return f"expect({el}.locator('option:checked')).to_have_text({value('value')})"
    return f"expect({el}).to_have_value({value('value')})"


_LOAD_STATES = frozenset({"load", "domcontentloaded", "networkidle"})


def _click_options(args: dict[str, Any]) -> str:
    options = []
    button = args.get("button", "left")
    if button not in MOUSE_BUTTONS:
        raise ScenarioInvalid(f"button {button!r} is not left, right or middle")
    if button != "left":
        options.append(f"button={_text(button, 'button')}")
    modifiers = args.get("modifiers") or []
    if not isinstance(modifiers, list) or not all(m in MODIFIERS for m in modifiers):
        raise ScenarioInvalid(f"modifiers {modifiers!r} are not of {', '.join(MODIFIERS)}")
    if modifiers:
        options.append(f"modifiers=[{', '.join(_text(m, 'a modifier') for m in modifiers)}]")
    return ", ".join(options)


def _wait(args: dict[str, Any], params: dict[str, dict[str, Any]]) -> list[str]:
    if "text" in args or "text_gone" in args:  # what a person sees, as replay waits
        wanted = _value(args.get("text", args.get("text_gone")), params)
        return [f"expect_text(page, {wanted}{'' if 'text' in args else ', shown=False'})"]
    if "url" in args:
        return [_expect_address(args, params)]
    if "load_state" in args:
        if args["load_state"] not in _LOAD_STATES:
            raise ScenarioInvalid(f"load_state {args['load_state']!r} is not a load state")
        return [f"page.wait_for_load_state({_text(args['load_state'], 'load_state')})"]
    return [f"page.wait_for_timeout({_int(args.get('time_ms', 0), 'time_ms')})"]


def _expect_address(args: dict[str, Any], params: dict[str, dict[str, Any]]) -> str:
    """A URL check, or a wait for an address, as replay reads both: the address moved to
    BASE_URL, held by automation.browser.address's rule (written into the file)."""
    address = _url(f"address_given({_query_value(_arg(args, 'url'), params)})", params)
    return f"expect_url(page, {address})"


def _kind(args: dict[str, Any]) -> str:
    kind = args.get("kind")
    if kind not in KINDS:
        raise ScenarioInvalid(f"unknown check {kind!r}")
    return str(kind)
