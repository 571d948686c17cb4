"""A scenario as a runnable Playwright pytest file, with role-first locators.

Each element step becomes the most readable locator its identity supports, in this order:
``get_by_role(role, name=..., exact=True)`` (narrowed to its row when the name was shared
by several elements, or when the element has no name and its row tells it apart),
``get_by_test_id``, its stored CSS selector, ``get_by_placeholder``.  Elements of a frame
are looked up in the frame with the same path.  The scenario's ``expect`` checks become
Playwright's ``expect(...)`` assertions, so the exported test fails where replay would;
a check or a wait of a text (shown, gone, in rows) and a ``no_error`` check read the page
by replay's rule of what a person sees and what it reads as an error
(:mod:`automation.recording.exportseen`, its script written in as it is).

An element replay has found on several releases keeps what it was known as on each (its
identity's variants): its locator is one per identity, joined with ``.or_()``, so the file
runs wherever the replay does — on the release it was recorded on and on those it healed
on.  Alternatives that find two different elements fail Playwright's strict mode, as
replay abstains.  A variant in another frame can't join them: the step's comment says on
which release the line won't find its element.  A parameter carried into an identity
(``${item}`` in a row or a name) is read from the environment, as in a typed value.

The file stands alone: it launches Chromium itself (``TABWRIGHT_CHROMIUM_PATH`` or the
``CHROMIUM`` environment variable, else Playwright's own), reads ``BASE_URL`` for where to
run (default: where it was recorded), parameters from ``TABWRIGHT_PARAM_<name>`` (the
name as it is written: a parameter ``lang`` is not the machine's ``LANG``, nor ``Item``
``item``; default: their recorded default), and secrets from ``TABWRIGHT_SECRET_<NAME>``.

A scenario that brings its login scenario signs in again as its replay does: the login
scenario is a function of the file, which runs (once) when the element its first step
acts on shows before a step on a page that asks to sign in (its sign-in page: the session
ended; not a form that has a field like it), through Playwright's
``page.add_locator_handler``; the page the latest navigate step opened then opens again.
The interruption handlers in force clear what covers it meanwhile, as in replay
(:mod:`automation.recording.exporthandlers`).
Its parameters are the test's of the same names; a parameter the test reads with no
default, its own or its login scenario's, is checked before the first step (the test fails
naming each one not given: a handler's KeyError would only leave the step waiting).

A scenario may come from anywhere (an imported file, a page that lied about its elements),
so the module is generated safe by construction: every value of the scenario reaches it
through ``repr()`` (a Python literal on one line), or as a number made by ``int()``, or as
an identifier this module checked; nothing of the scenario is written into the docstring,
and a step's comment holds only its action, a role from the ARIA list and ``repr``'d text.
A role outside the list, a number that is not one, or a value no literal can hold refuses
the export with :class:`~automation.errors.ScenarioInvalid` naming the step.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Mapping
from dataclasses import replace
from types import ModuleType
from typing import Any

from automation.browser import (
    address,
    choice,
    effect,
    fieldops,
    frames,
    seen,
    served,
    textmatch,
    uploads,
)
from automation.browser.dialogs import unexpected_words
from automation.browser.identity import COLUMN_JS
from automation.browser.settle import END_HOLD_TIMER_MS, HOLD_TIMER_MS, NOT_SENT_JS
from automation.errors import ScenarioInvalid
from automation.recording import (
    basemove,
    downloadfile,
    expect,
    exportdialogs,
    exporthandlers,
    exportplaces,
    exportpopups,
    exportseen,
    exportsignin,
    exportuploads,
)
from automation.recording.answered import checks_after, judged_in_place
from automation.recording.calls import brought_login, called
from automation.recording.ensured import ticks_ensured
from automation.recording.exporthead import DOWNLOADS, HEADER, MARKER
from automation.recording.exportliterals import address as _address
from automation.recording.exportliterals import arg as _arg
from automation.recording.exportliterals import identifier as _identifier
from automation.recording.exportliterals import needed as _needed
from automation.recording.exportliterals import param as _param
from automation.recording.exportliterals import placeholders as _placeholders
from automation.recording.exportliterals import quote as _quote
from automation.recording.exportliterals import signs_in_with as _signs_in_with
from automation.recording.exportliterals import text as _text
from automation.recording.exportliterals import url as _url
from automation.recording.exportliterals import used as _used
from automation.recording.exportliterals import value as _value
from automation.recording.exportliterals import whole as _int
from automation.recording.exportlocators import element as _element
from automation.recording.exportlocators import frame_path as _frame_path
from automation.recording.exportlocators import locator as _locator
from automation.recording.exportsteps import arm_sign_in, comment, step_lines
from automation.recording.handlers import Handler
from automation.recording.params import typed_shown
from automation.recording.readagain import (
    acted_before,
    holds_before,
    last_acting,
    last_write,
    typed_before,
)
from automation.recording.relogin import SUBMITTING
from automation.recording.replaytabs import FORM_STATE_JS, TABS
from automation.recording.scenario import (
    SENDING_ACTIONS,
    STEP_ACTIONS,
    Scenario,
    ScenarioStep,
)
from automation.recording.sent import watched, written_before

__all__ = ["to_pytest"]


def to_pytest(
    scenario: Scenario, *, pending: Collection[int] = (),
    callees_pending: Mapping[str, Collection[int]] | None = None,
) -> str:  # fmt: skip
    """The scenario as the text of a pytest module; ScenarioInvalid (naming the step) for
    what can't be written safely.  ``pending``: the steps for whose element replay
    proposed another identity that waits for a person's approval; the file says that
    where the page changed so, their line won't find it.  Each scenario it calls is a
    function of its own, ``call_<name>(page, params)``, before the test;
    ``callees_pending``: their pending steps, by the called scenario's name."""
    header = HEADER.format(
        version=_int(scenario.version, "the format version"),
        name=_text(scenario.name, "the name"),
        base_url=_text(scenario.base_url, "base_url"),
        hold_ms=HOLD_TIMER_MS,
        end_ms=END_HOLD_TIMER_MS,
        met_ms=fieldops.ANSWER_MET_MS,
    ).rstrip("\n")
    scenario = ticks_ensured(_typed_shown(scenario))  # (a box clicked, then checked: ticked)
    callees = called(scenario)
    login = brought_login(scenario)  # a function too, when no step calls it: it signs in again
    if login is not None:  # and those it calls
        callees = {**callees, **called(login), login.name: login}
    callees = {name: ticks_ensured(_typed_shown(c)) for name, c in callees.items()}
    functions = _function_names(callees)
    every = [scenario, *callees.values()]
    steps = [step for one in every for step in one.steps]
    if any(m.group(1) == "TOTP" for s in steps for m in _placeholders(s.args)):
        # A one-time code is the seed's code of the moment the step runs (RFC 6238).
        at = header.index("\nimport pytest\n")
        header = header[:at] + "\nimport pyotp" + header[at:]
    # A text is found where it stands as words, and a write is refused, as replay finds
    # them: the same code.
    lines = [header]
    for module in (textmatch, served):
        lines.append(_copied(module))
    # What a person sees of the page, by replay's rule (its script, as it is).
    lines.append(f"\n\n# Tabwright's rule of what a person sees (automation/browser/visible.js)\n"
                 f"SEEN_JS = {_text(seen.SEEN_JS, 'the rule')}\n"
                 f"TYPED_JS = {_text(seen.TYPED_JS, 'the rule')}\n"
                 f"NOT_SENT_JS = {_text(NOT_SENT_JS, 'the rule')}\n"
                 f"BOX_JS = {_text(choice.BOX_JS, 'the rule')}\n"
                 f"SHOWN_JS = {_text(choice.SHOWN_JS, 'the rule')}\n"
                 f"OPTION_SELECTED_JS = {_text(choice.SELECTED_JS, 'the rule')}\n"
                 f"VALUE_JS = {_text(expect.VALUE_JS, 'the rule')}\n"
                 f"PLACES_JS = {_text(expect.PLACES_JS, 'the rule')}\n"
                 f"PLACE_NOW_JS = {_text(expect.PLACE_NOW_JS, 'the rule')}\n"
                 f"MAX_LENGTH_JS = {_text(fieldops.MAX_LENGTH_JS, 'the rule')}\n"
                 f"SELECTED_JS = {_text(fieldops.SELECTED_JS, 'the rule')}\n"
                 f"PLACEHOLDER_JS = {_text(fieldops.PLACEHOLDER_JS, 'the rule')}\n"
                 f"TOGGLE_STATE_JS = {_text(effect.TOGGLE_STATE_JS, 'the rule')}\n"
                 f"LABEL_INSTEAD_JS = {_text(effect.LABEL_INSTEAD_JS, 'the rule')}\n"
                 f"FOCUS_ON_FRAME_JS = {_text(frames.FOCUS_ON_FRAME_JS, 'the rule')}\n"
                 f"HOLDS_FOCUS_JS = {_text(frames.HOLDS_FOCUS_JS, 'the rule')}\n"
                 f"COLUMN_JS = {_text(COLUMN_JS, 'the rule')}\n"
                 f"{_copied(address)}{_copied(exportseen)}{_copied(exportplaces)}")  # fmt: skip
    lines.append(exportsignin.constants() + _copied(exportsignin))  # a sign-in page's judgement
    # Dialogs answered as replay answers them, one nobody armed said in its words.
    lines.append(f"\n\n{inspect.getsource(unexpected_words).rstrip()}{_copied(exportdialogs)}")
    if any(s.action == TABS for s in steps):  # popups followed as replay follows them
        js = _text(FORM_STATE_JS, "the rule")
        lines.append(f"\n\nFORM_STATE_JS = {js}\n{_copied(exportpopups)}")
        lines[0] = _in_fixture(lines[0], "        WINDOWS.watch(page)  # the popups it opens\n")
    handled = any(one.handlers for one in every)
    if handled:  # each in force where replay's is
        lines.append(_copied(exporthandlers))
    if any(s.is_check and s.args.get("kind") == "download" for s in steps):
        keep = '        keep_downloads(page)\n        page.context.on("page", keep_downloads)\n'
        lines[0] = _in_fixture(lines[0], keep)
        lines.append(DOWNLOADS + _copied(downloadfile).lstrip("\n"))
    if any(s.action == "upload" for s in steps):  # from the upload folder, as replay's
        lines += ["\n\nfrom pathlib import Path", _copied(uploads), _copied(exportuploads)]
    if callees:  # moved where the test is replayed, as replay moves them
        lines.append(_copied(basemove))
    params = _Params(scenario.params, calls=functions)
    again = [] if login is None else _sign_in_again(scenario, login, functions, params, handled)
    # The functions that run while it signs in again clear covers themselves (by_hand).
    signing: set[str] = set()
    if login is not None and params.signs_in is not None and handled:
        signing = {login.name, *called(login)}
    for name, callee in callees.items():
        where = _Params(callee.params, base=callee.base_url, calls=functions)
        where.uncovers = name in signing
        lines += ["", "", f"def {functions[name]}(page: Page, params: dict[str, str]) -> None:",
                  *_body(callee, where, (callees_pending or {}).get(name, ()))]  # fmt: skip
    lines += ["", "", f"def test_{_identifier(scenario.name)}(page: Page) -> None:",
              *_needed(scenario, login),
              *(f"    {line}" if line else "" for line in again),
              *_body(scenario, params, pending), *_end(scenario, params)]  # fmt: skip
    return "\n".join(lines) + "\n"


def _end(scenario: Scenario, params: _Params) -> list[str]:
    """The end of the test, as replay's verdict (:func:`_judged_at_end`), and last a write
    answered in JSON saying it failed (``answered_ok``), the page having said nothing."""
    return [*_judged_at_end(scenario, params), "    answered_ok()"]


def _judged_at_end(scenario: Scenario, params: _Params) -> list[str]:
    """What the end of the test judges first, as replay's verdict: what the last steps
    left for later done (``served``), the checks after them of a state the app keeps, and
    the box the last step ticked or the field it wrote, read again, unless the app went on
    to another page meanwhile (a save it took back fails them)."""
    steps = scenario.steps
    again = _kept_checks(steps, len(steps))
    acting = last_acting(steps)  # the box it ticked, or clicked (as left_ticked read it)
    state = steps[acting].kept_state(left=True) if acting >= 0 else None
    written, committed = last_write(steps)  # the field it wrote, or its key committed
    wrote = written >= 0 and params.base is None and steps[written].writes_a_value()
    # Its write refused on the same page, read once what it left is (as replay's confirm).
    judged = acting >= 0 and judged_in_place(steps, acting)
    refused = [_refused_in_place(steps, acting, params, then=True)] if judged else []
    lines = ["    documents, address = len(DOCUMENT), page.url", "    served(page)"]
    if not again and state is None and not wrote:  # the page it went on to: no error
        return [*lines, "    went_on(page, documents, address)", *(f"    {r}" for r in refused)]
    lines += [f"    {line}" for line in _read_again(again, params)]
    if state is not None:
        assert state.identity is not None
        ticked = "" if _toggles(steps[acting]) else f", {state.args['kind'] == 'checked'}"
        lines += [
            "        " + comment(acting, steps[acting]).replace(":", ", its box read again:", 1),
            f"        kept_tick({_locator(state.identity, params)}{ticked})",
        ]
    if wrote:
        identity = steps[written].identity
        assert identity is not None
        lines += [
            "        "
            + comment(written, steps[written]).replace(":", ", its field read again:", 1),
            f"        kept_value(read_again(lambda: {_locator(identity, params)})"
            + (", committed=True)" if committed else ")"),
        ]
    return lines + [f"        {r}" for r in refused]


def _refused_in_place(
    steps: tuple[ScenarioStep, ...], index: int, params: _Params, *, then: bool = False
) -> str:
    """The line that judges step ``index``'s write refused on the same page, as replay
    judges it (answered.refused_in_place): an error a check after it expects to see is the
    scenario's own.  ``then``: the last step's, at the end, with the errors it showed right
    after the step (:func:`_errors_then`'s)."""
    return f"refused_in_place({_in_place_args(steps, index, params)}{', THEN' if then else ''})"


def _errors_then(steps: tuple[ScenarioStep, ...], index: int, params: _Params) -> str:
    """The line that keeps the errors the last step's page shows right after it, for its
    judgement at the end (a toast that hides itself meanwhile)."""
    return f"errors_then({_in_place_args(steps, index, params)})"


def _in_place_args(steps: tuple[ScenarioStep, ...], index: int, params: _Params) -> str:
    """The arguments both take: the page, the writes sent before the step, what it showed
    then, and the texts the checks after it expect to see."""
    return f"page, sent, shown, {_expected(steps, index, params)}"


def _expected(steps: tuple[ScenarioStep, ...], index: int, params: _Params) -> str:
    """The list of the texts the checks right after step ``index`` expect to see."""
    expected = [_value(_arg(later.args, "text"), params)
                for later in checks_after(steps, index)
                if later.args.get("kind") == "text_visible"]  # fmt: skip
    return f"[{', '.join(expected)}]"


def _in_fixture(header: str, line: str) -> str:
    """``header`` with ``line`` run in its ``page`` fixture, before the test starts."""
    at = header.index("        yield page\n")
    return header[:at] + line + header[at:]


def _copied(module: ModuleType) -> str:
    """The code of ``module`` below its marker, as it is (a line break before it)."""
    source = inspect.getsource(module)
    return "\n" + source[source.index(MARKER) :].rstrip("\n")


def _typed_shown(scenario: Scenario) -> Scenario:
    """The scenario whose elements' rows and cards that showed a value it types (a search's)
    must show it, as replay finds them (:func:`~automation.recording.params.typed_shown`)."""
    typed = scenario.typed_values()
    if not typed:
        return scenario
    steps = tuple(
        replace(step, identity=typed_shown(step.identity, typed)) if step.identity else step
        for step in scenario.steps
    )
    return replace(scenario, steps=steps)


class _Params(dict[str, dict[str, Any]]):
    """The parameters of the scenario a function is written for: read from the
    environment (the test's), or from the function's ``params`` (a called scenario's,
    whose navigations move from ``base``, where it was recorded); and the function each
    called scenario is."""

    def __init__(
        self, params: dict[str, dict[str, Any]], *, base: str | None = None,
        calls: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        super().__init__(params)
        self.base = base
        self.calls = calls or {}
        self.opened = False  # its navigations kept in ``opened`` (to go back after a sign-in)
        # The login scenario's name and what shows its page, when the test signs in again
        # with it: a step that calls it does so with that handler off.
        self.signs_in: tuple[str, str] | None = None
        # A function that runs while the test signs in again: it clears what covers each
        # step's element itself (Playwright runs no handler inside sign_in_again).
        self.uncovers = False


def _sign_in_again(
    scenario: Scenario, login: Scenario, functions: dict[str, str], params: _Params,
    handled: bool,
) -> list[str]:  # fmt: skip
    """The test's lines that sign in again with ``login``, as replay does: when the element
    its first step acts on shows before a step and the page asks to sign in (the session
    ended: not a form with a field like it), its function runs, once, then the page of the
    latest navigate step opens again (``params``: the test's, whose navigations are then
    kept).  ``handled``: the file has interruption handlers, run by hand meanwhile."""
    first = next((s.target() for s in login.steps if s.needs_element and not s.is_check), None)
    shown = f"# the login scenario {_quote(login.name)}"
    if first is None or first.frame_url:
        return [f"{shown} has no element of the main frame to know its page by: no sign-in"]
    _, where = _element(first, _Params(login.params))
    params.opened = True
    params.signs_in = (login.name, where)
    # Its parameters are the test's, from the environment, as a replay gives its own (a
    # name the scenario has too with the scenario's default).
    signing = _signs_in_with(scenario, login)
    given = ", ".join(f"{_text(name, 'a parameter')}: {_param(name, signing)}"
                      for name in _used(login))  # fmt: skip
    call = f"{functions[login.name]}(page, {{{given}}})"
    # Playwright runs no handler inside this one: the login's function runs them itself.
    signs_in = ["    with INTERRUPTIONS.by_hand():  # (its handlers, run by hand)",
                f"        {call}"] if handled else [f"    {call}"]  # fmt: skip
    return [
        f"{shown}: when its page shows before a step and asks to sign in, it signs in again (once)",
        "opened: list[str] = []  # what the navigate steps opened, the latest last",
        "signed_in_again = False",
        "",
        "def sign_in_again(_shown: object) -> None:",
        "    nonlocal signed_in_again",
        "    if signed_in_again or not asks_sign_in(page):",
        "        return  # (a field like its first on a form: no sign-in page)",
        "    signed_in_again = True",
        *signs_in,
        "    if opened:",
        "        page.goto(opened[-1])",
        "",
        arm_sign_in(where),
    ]


def _function_names(callees: Mapping[str, Scenario]) -> dict[str, str]:
    """A function name for each scenario called: ``call_`` and ASCII letters, digits, _."""
    names: dict[str, str] = {}
    for number, name in enumerate(callees, 1):
        function = "call_" + _identifier(name).removeprefix("scenario_")
        names[name] = function if function not in names.values() else f"{function}_{number}"
    return names


def _toggles(step: ScenarioStep) -> bool:
    """Whether the step clicks a box that a click turns the other way (not a radio button,
    which a click turns on): its state is read before the click (left_ticked)."""
    role = step.identity.role if step.identity is not None else ""
    return step.clicks_a_box() and role not in ("radio", "menuitemradio")


def _kept_checks(steps: tuple[ScenarioStep, ...], before: int) -> list[tuple[int, ScenarioStep]]:
    """The checks of a state the app keeps (rows, a box, a value, a text gone, the
    address) since the last step before ``before`` that acts, as replay reads them again."""
    return [(i, steps[i]) for i in range(acted_before(steps, before) + 1, before)
            if steps[i].args.get("kind") in expect.KEPT_KINDS]  # fmt: skip


def _read_again(checks: list[tuple[int, ScenarioStep]], params: _Params) -> list[str]:
    """``checks`` read again unless the app went on to another page since ``documents``
    and ``address`` were taken (the page they read: see went_on)."""
    lines = ["if not went_on(page, documents, address):  # the page the checks read: again"]
    for index, step in checks:
        lines += [
            "    " + comment(index, step).replace(":", ", read again:", 1),
            *(f"    {line}" for line in step_lines(step, params)),
        ]
    return lines


def _body(scenario: Scenario, params: _Params, pending: Collection[int]) -> list[str]:
    """The steps of ``scenario`` as the indented lines of a function."""
    lines = []
    scoped = bool(scenario.handlers) and params.base is not None  # a called scenario's
    if scoped:  # its handlers are in force until it returns, as in replay
        lines.append("    INTERRUPTIONS.enter()")
    if any(watched(scenario.steps, i) or step.sent for i, step in enumerate(scenario.steps)):
        lines.append("    unchanged = {}  # whether each value written was there already")
    for number, handler in enumerate(scenario.handlers):
        lines.extend(f"    {line}" for line in _handler(number, handler, params))
    checked = False  # a download check since the last step: the next step moves past it
    acting = last_acting(scenario.steps)  # its box, as it left it, read again at the end
    written, committed = last_write(scenario.steps)  # its field's value, read again too
    for index, step in enumerate(scenario.steps):
        try:
            if step.action not in STEP_ACTIONS:
                raise ScenarioInvalid(f"unknown step type {step.action!r}")
            does = step_lines(step, params)
            body = [comment(index, step), *does]
            if step.is_check and step.args.get("kind") == "download":
                checked = True
            elif checked and not step.is_check:  # as replay's DownloadKeeper.step_begins
                body[1:1] = ["downloads_step(page)"]
                checked = False
            if not step.is_check:  # a dialog it brought that no step armed fails it
                where = f"step {index}" + ("" if params.base is None else f" of {scenario.name!r}")
                body.append(f"DIALOGS.none_unexpected({_text(where, 'the step')})")
                body.append("writes_answered(page)")  # before the next step
            if params.base is None and index == acting and _toggles(step):
                assert step.identity is not None  # (read before it, and at the end: _end)
                body.insert(1, f"left_ticked({_locator(step.identity, params)})")
            if params.base is None and index == written and step.writes_a_value():
                assert step.identity is not None  # (read before it, after, and at the end)
                field = _locator(step.identity, params)
                read = f"left_value({field})"
                first = f"left_value({field}, said=True)" if committed else read
                # (one its own Enter commits: read before the Enter, as replay takes it)
                enter = 1 if committed and does[-1].endswith(".press('Enter')") else 0
                body[1 : 1 + len(does)] = [first, *does[: len(does) - enter], read,
                                           *does[len(does) - enter :]]  # fmt: skip
            sends = _sends_form(step)  # as replay judges it: answered with the sign-in page?
            in_place = judged_in_place(scenario.steps, index)  # as replay: refused in place?
            if in_place:
                body[1:1] = ["shown = errors_before(page)"]
            if sends is not None or step.judged_where_it_led or in_place:
                body[1:] = ["sent = len(WROTE)", *body[1:]]
            if sends is not None:
                body[1:1] = ["asked = asks_sign_in(page)  # (then the step signs in)"]
                body.append(f"sent_to_sign_in(page, sent, asked, {sends})")
            if step.judged_where_it_led:  # as replay judges it
                led_to = _url(_address(step.led_to, params), params)
                errors = f", shown, {_expected(scenario.steps, index, params)}" if in_place else ""
                body.append(f"where_it_led(page, sent, {led_to}{errors})")
            if in_place and (index != acting or params.base is not None):
                body.append(_refused_in_place(scenario.steps, index, params))
            elif in_place:  # judged at the end, with what it shows right after it
                body.append(_errors_then(scenario.steps, index, params))
            if step.is_check and step.url:  # not on a form the server answered with itself
                body.insert(
                    1, f"not_answered_again(page, {_url(_address(step.url, params), params)})"
                )
            if not step.is_check and step.identity is not None and step.identity.frame_url:
                path = _text(_frame_path(step.identity.frame_url), "frame_url")
                body.insert(1, f"ACTED.add({path})")  # its writes there are the step's
            if watched(scenario.steps, index):  # did it change the field? (replay's sent)
                assert step.identity is not None
                state = f"field_state({_locator(step.identity, params)}, {step.action == 'check'})"
                _around(body, does, f"was = {state}", f"written(unchanged, {index}, was, {state})")
            if step.sent and step.action in SENDING_ACTIONS:  # does it send again? (replay's,
                written = written_before(scenario.steps, index)  # once the rest is judged)
                body.insert(1, "own = len(OWN_WROTE)")
                body.append(f"sent_again(page, own, {_text(step.sent, 'sent')}, unchanged, "
                            f"{written})")  # fmt: skip
            if _may_send(step):  # the browser refused to send its form? (tab.click's)
                _around(body, does, "sending = before_send(page)", "form_sent(page, sending)")
            if index + 1 < len(scenario.steps) and typed_before(scenario.steps, index + 1):
                # (replay's hold before the next step)
                _around(body, does, "before = still_to_come(page)", "typing_met(page, before)")
            if holds_before(scenario.steps, index):  # a debounced save sent first, and
                again = _kept_checks(scenario.steps, index)  # the checks before it re-read
                held = ["documents, address = len(DOCUMENT), page.url", "held(page)",
                        *_read_again(again, params)] if again else ["held(page)"]  # fmt: skip
                body[1:1] = held
            if index in pending:
                body.insert(1, _PENDING)
            if params.uncovers and step.needs_element and not step.is_check:
                body.insert(1, "INTERRUPTIONS.uncover()  # (when signing in again)")
            if any(len(line.splitlines()) != 1 or "\x00" in line for line in body):
                raise ScenarioInvalid("a line of it would not stay one line")
        except ScenarioInvalid as exc:
            where = "" if params.base is None else f" of {scenario.name!r}"
            raise ScenarioInvalid(f"step {index}{where} can't be exported: {exc.message}",
                                  index=index, hint=exc.hint) from None  # fmt: skip
        lines.extend(f"    {line}" for line in body)
    if scoped:
        lines.append("    INTERRUPTIONS.leave(page)")
    return lines or ["    pass"]


def _around(body: list[str], does: list[str], before: str, after: str) -> None:
    """``before`` put in ``body`` before the step's own lines ``does`` (wherever the
    lines read around them stand), and ``after`` after them."""
    first = next(i for i, line in enumerate(body) if line is does[0])
    last = max(i for i, line in enumerate(body) if line is does[-1])
    body[last + 1 : last + 1] = [after]
    body[first:first] = [before]


def _may_send(step: ScenarioStep) -> bool:
    """Whether the step may send a form, so that replay fails it when the browser refused
    to (:class:`~automation.errors.FormNotSent`): a click, a key, a fill's Enter."""
    if step.action in SENDING_ACTIONS:
        return True
    return step.writes_a_value() and bool(step.args.get("submit"))


def _sends_form(step: ScenarioStep) -> str | None:
    """The name of the control a step that may send a form acts on (a click, a key: as
    replay's :func:`~automation.recording.relogin.sent_to_sign_in` judges), as code."""
    target = step.target()
    if step.action not in SUBMITTING or target is None:
        return None
    return _text(target.name or "", "name")


def _handler(number: int, handler: Handler, params: dict[str, dict[str, Any]]) -> list[str]:
    """An interruption handler as Playwright's own: ``page.add_locator_handler`` runs its
    steps whenever its element shows before an action (through ``INTERRUPTIONS``: one
    Playwright handler a locator, :mod:`automation.recording.exporthandlers`)."""
    try:
        _, when = _element(handler.when, params)
        body = [line for step in handler.steps for line in step_lines(step, params)]
    except ScenarioInvalid as exc:
        raise ScenarioInvalid(
            f"handler {number} can't be exported: {exc.message}", index=number, hint=exc.hint
        ) from None
    # In force while its scenario runs (a called one's: until it returns), as in replay.
    name, key = _text(handler.name, "the handler's name"), _text(when, "a locator")
    lines = [
        f"# handler {number}: {_quote(handler.name)}, cleared whenever it shows",
        f"def clear_{number}() -> None:",
        *(f"    {line}" for line in body),
        f"INTERRUPTIONS.add(page, {name}, {key}, {when}, clear_{number})",
    ]
    if any(len(line.splitlines()) != 1 or "\x00" in line for line in lines):
        raise ScenarioInvalid(f"handler {number} can't be exported: a line would not stay one")
    return lines


_PENDING = (
    "# replay proposed another identity for this element, which waits for approval on the "
    "scenario's page: where the page changed so, this line won't find it until it is approved"
)
