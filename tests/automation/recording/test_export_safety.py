"""The pytest export is code generated from untrusted input: a corpus of hostile scenarios
is either refused with a typed error or exported to a module that parses to the fixed
header plus ONE test function whose body holds only calls on ``page`` / ``expect``; and an
identity read from a page is made safe, or refused, before it is kept.  (A real page that
tampers with the registry: test_registry_safety.py.)"""

from __future__ import annotations

import ast
import copy
import json
from dataclasses import replace
from typing import Any

import pytest

from automation import ActionFailed, ActionInvalid
from automation.browser.identity import MAX_TEXT_CHARS, ElementIdentity
from automation.browser.snapshot import SNAPSHOT_JS
from automation.errors import ScenarioInvalid
from automation.recording.export import to_pytest
from automation.recording.roles import ARIA_ROLES, ROLES
from automation.recording.scenario import Scenario, ScenarioStep

EVIL_ROLE = "button\nimport os\nos.system('x')"
INJECT = "'); import os; os.system('x') #"
BREAK = '"""\nimport os\nos.system("x")\n"""'
LINE_BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"]


# -- what an exported module may hold -------------------------------------------------

# Names the test function's body may use, and the only attributes of os and re it may read.
BODY_NAMES = {"page", "expect", "re", "os", "url", "frame_of", "served", "words", "DIALOGS",
              "expect_text", "expect_rows", "sent_to_sign_in", "where_it_led", "sent",
              "asked", "not_answered_again", "expect_items", "expect_seen",
              "check_params", "address_given", "press_key", "expect_url",
              "uploaded", "attach", "writes_answered", "kept_change", "checks_answered",
              "kept_tick", "rows_showing", "read_again", "answered_ok", "one_of",
              "fits", "left_ticked", "left_value", "kept_value", "went_on", "documents", "held",
              "address", "ACTED", "refused_in_place", "shown", "errors_then", "THEN",
              "form_sent", "sending", "choose", "typing_met", "before",
              "rows_holding_most", "EDITABLE", "DISCLOSURE", "whole", "released",
              "sent_again", "own", "OWN_WROTE", "unchanged", "was", "field_state",
              "written"}  # fmt: skip
# What a step that may send a write keeps before it (the writes sent, whether the page
# asked to sign in, the errors it shows), the only statements of the body that are not a
# call.
KEPT_BEFORE_A_STEP = {
    "sent = len(WROTE)",
    "asked = asks_sign_in(page)",
    "documents, address = (len(DOCUMENT), page.url)",
    "shown = errors_before(page)",
    "sending = before_send(page)",
    "before = still_to_come(page)",
    "own = len(OWN_WROTE)",
    "unchanged = {}",
}
# The one condition: the checks read again at the end, on the page they read.
READ_AGAIN_IF = "not went_on(page, documents, address)"
MODULE_ATTRS = {"os": {"environ"}, "re": {"compile", "escape", "I"}}
BODY_NODES = (ast.Expr, ast.Call, ast.Attribute, ast.Name, ast.Load, ast.Constant,
              ast.keyword, ast.List, ast.BinOp, ast.Add, ast.Subscript, ast.UnaryOp,
              ast.USub, ast.Lambda, ast.arguments)  # fmt: skip
# Module constants written from the scenario (their values only: literals).
CONSTANTS = {"SCENARIO", "BASE_URL", "RECORDED_BASE"}


def _root(node: ast.expr) -> ast.expr:
    """Where a chain of calls starts: ``page`` in ``page.get_by_role(...).click()``."""
    while isinstance(node, ast.Call | ast.Attribute | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _without_values(module: ast.Module) -> str:
    """The module's shape without the test function and with the scenario's constants
    blanked: what must be the same for every scenario."""
    kept = []
    for stmt in module.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name.startswith("test_"):
            continue
        if (
            isinstance(stmt, ast.Assign)
            and {getattr(t, "id", "") for t in stmt.targets} & CONSTANTS
        ):
            stmt = copy.deepcopy(stmt)
            for node in ast.walk(stmt.value):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    node.value = "" if node.value not in ("BASE_URL", "/") else node.value
        kept.append(stmt)
    return ast.dump(ast.Module(body=kept, type_ignores=[]))


def _reference(*steps: dict[str, Any]) -> str:
    plain = Scenario.from_dict({"version": 1, "name": "Plain", "base_url": "http://a",
                                "steps": list(steps)})  # fmt: skip
    return _without_values(ast.parse(to_pytest(plain)))


# The fixed header, and with what a step of some actions brings (an upload's files).
UPLOAD = {"action": "upload", "args": {"files": ["a.txt"]},
          "identity": {"role": "button", "name": "File", "tag": "input"}}  # fmt: skip
REFERENCES = {_reference(), _reference(UPLOAD)}


def assert_safe_module(code: str) -> ast.FunctionDef:
    """``code`` compiles, is the fixed header (imports, helpers, the scenario's constants
    as literals) plus one test function whose statements are each one call on ``page`` or
    ``expect``, built only of literals and the allowed names."""
    compile(code, "exported.py", "exec")
    module = ast.parse(code)
    assert _without_values(module) in REFERENCES
    # Each name the module binds at its top is bound once: a rule's script copied in
    # under a name another's took runs the wrong rule (an option read as a select).
    bound = [t.id for s in module.body if isinstance(s, ast.Assign)
             for t in s.targets if isinstance(t, ast.Name)]  # fmt: skip
    bound += [s.name for s in module.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))]
    assert not {name for name in bound if bound.count(name) > 1}, "a name bound twice"
    for stmt in module.body:  # the constants hold literals (and BASE_URL's env lookup)
        if (
            isinstance(stmt, ast.Assign)
            and {getattr(t, "id", "") for t in stmt.targets} & CONSTANTS
        ):
            names = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
            assert names <= {"os"}, names
    tests = [
        s for s in module.body if isinstance(s, ast.FunctionDef) and s.name.startswith("test_")
    ]
    assert len(tests) == 1
    test = tests[0]
    assert test.name.isascii() and test.name.isidentifier()
    assert [a.arg for a in test.args.args] == ["page"] and not test.decorator_list
    body = list(test.body)
    while body:
        stmt = body.pop(0)
        if isinstance(stmt, ast.Pass) or ast.unparse(stmt) in KEPT_BEFORE_A_STEP:
            continue
        if isinstance(stmt, ast.If) and ast.unparse(stmt.test) == READ_AGAIN_IF:
            assert not stmt.orelse
            body[:0] = stmt.body  # its statements are held to the same rules
            continue
        if isinstance(stmt, ast.Assign) and ast.unparse(stmt.targets) == "was":
            stmt = ast.Expr(stmt.value)  # was = field_state(locator, ticks): held as a call
        assert isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call), ast.dump(stmt)
        root = _root(stmt.value)
        # frame_of(page, path): the header's helper for the page's frame at that path;
        # served(page): its check that no write was refused, last; expect_text(page, text)
        # and expect_rows(page, text, count): its checks of what a person sees.
        roots = (
            "page",
            "expect",
            "frame_of",
            "served",
            "writes_answered",  # writes_answered(page): a write under way answered, unrefused
            "attach",  # attach(locator, uploaded([...]), ...): files attached, not refused
            "kept_change",  # kept_change(locator, 'select', [...], checks_answered): not put back
            "kept_tick",  # kept_tick(locator, ticked): the last step's box read again
            "rows_showing",  # rows_showing(scope, pattern, ...): rows read as row checks read
            "fits",  # fits(locator, value): the field typed into took the whole value
            "left_ticked",  # left_ticked(locator): the box the last step clicked, as left
            "left_value",  # left_value(locator): the field the last step writes, before/after
            "kept_value",  # kept_value(locator): ... read again: not put back
            "went_on",  # went_on(page, documents, address): the page it went on to: no error
            "answered_ok",  # answered_ok(): no write answered in JSON that it failed
            "one_of",  # one_of(locator, in_row).click(): the one in its row, where several
            "held",  # held(page): what the steps left for later done, before leaving the page
            "typing_met",  # typing_met(page, before): what a step that typed left, done
            "rows_holding_most",  # rows_holding_most(scope, word, ...): a sole row's, by its words
            "expect_text",
            "expect_rows",
            "sent_to_sign_in",
            "where_it_led",
            "refused_in_place",  # refused_in_place(page, sent, shown, [...]): no new error
            "errors_then",  # errors_then(page, sent, shown, [...]): the last step's, kept
            "form_sent",  # form_sent(page, sending): the browser did not refuse to send it
            "choose",  # choose(locator, name): an option clicked, the combobox showing it
            "not_answered_again",
            "expect_items",
            "expect_seen",
            "check_params",  # the parameters it reads that have no default: given?
            "press_key",  # press_key(page, key): a key where the focus is, as replay presses it
            "expect_url",  # expect_url(page, address): the address read as replay reads it
            "DIALOGS",  # DIALOGS.arm(...): a dialog step; DIALOGS.none_unexpected(...)
            "ACTED",  # ACTED.add(path): a step acts in the frame at that path (its writes)
            "released",  # released(page, value): a fill's last key released
            "field_state",  # was = field_state(locator, ticks): a field before a step
            "written",  # written(unchanged, index, was, now): whether it changed
            "sent_again",  # sent_again(page, own, sent, unchanged, [...]): it sent again
        )  # (and what a write answered is judged by)
        assert isinstance(root, ast.Name) and root.id in roots
        for node in ast.walk(stmt):
            assert isinstance(node, BODY_NODES), ast.dump(node)
            if isinstance(node, ast.Name):
                assert node.id in BODY_NAMES, node.id
            if isinstance(node, ast.Attribute):
                assert not node.attr.startswith("_"), node.attr
                base = node.value
                if isinstance(base, ast.Name) and base.id in MODULE_ATTRS:
                    assert node.attr in MODULE_ATTRS[base.id], node.attr
            if isinstance(node, ast.Lambda):  # read_again(lambda: locator): takes nothing
                assert not ast.unparse(node.args), ast.dump(node)
            if isinstance(node, ast.Subscript):  # os.environ['NAME'] only
                assert ast.unparse(node.value) == "os.environ", ast.dump(node)
    return test


# -- the corpus -----------------------------------------------------------------------


def identity(**fields: Any) -> dict[str, Any]:
    return {"role": "button", "name": "Save", "tag": "button", "selectors": ["#save"],
            "name_count": 1, **fields}  # fmt: skip


def scenario(*steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"format": "tabwright.scenario", "version": 1, "name": "Hostile",
            "base_url": "http://shop.test", "steps": list(steps), **top}  # fmt: skip


def click(**fields: Any) -> dict[str, Any]:
    return {"action": "click", "args": {}, "identity": identity(**fields)}


# Each: (id, the scenario as a file holds it, "refused" at import or "exported").
CORPUS: list[tuple[str, dict[str, Any], str]] = [
    ("base_url breaks the docstring", scenario(base_url="http://x/" + BREAK), "refused"),
    (
        "base_url closes the docstring on its line",
        scenario(base_url='http://x/"""; import os; os.system("x") #'),
        "exported",
    ),
    ("base_url with quotes", scenario(base_url="http://x/'\"\\"), "exported"),
    ("name breaks the docstring", scenario(name='x"""\nimport os\n"""'), "refused"),
    ("name closes the docstring", scenario(name='"""; import os; """ \\N'), "exported"),
    ("name of no ASCII letters", scenario(name="²³ Größe 名前"), "exported"),
    ("role with line breaks", scenario(click(role=EVIL_ROLE)), "refused"),
    ("role that closes the string", scenario(click(role="button" + INJECT)), "refused"),
    ("role of another case", scenario(click(role="Button")), "refused"),
    ("kind with a line break", scenario(click(kind="press\nimport os")), "refused"),
    (
        "legacy role",
        scenario({"action": "click", "args": {}, "role": EVIL_ROLE, "selector": "#x"}),
        "refused",
    ),
    (
        "element name with quotes and backslashes",
        scenario(click(name='Say "hi" it\'s \\ \\n \\x00 \'\'\' """')),
        "exported",
    ),
    ("element name that closes the comment line", scenario(click(name="a" + INJECT)), "exported"),
    *[
        (f"element name with {br!r}", scenario(click(name=f"Save{br}import os")), "refused")
        for br in LINE_BREAKS
    ],
    ("element name with NUL", scenario(click(name="Save\x00")), "refused"),
    ("selector with a line break", scenario(click(selectors=["#a')\nimport os #"])), "refused"),
    ("selector that closes the string", scenario(click(selectors=["#a" + INJECT])), "exported"),
    (
        "test id",
        scenario(click(role="", name="", selectors=[], test_ids={"data-testid": "t" + INJECT})),
        "exported",
    ),
    (
        "placeholder",
        scenario(click(role="", name="", selectors=[], placeholder="p" + INJECT)),
        "exported",
    ),
    ("row", scenario(click(name="Edit", name_count=3, row="#1 " + INJECT)), "exported"),
    ("frame address", scenario(click(frame_url="http://f.test/a'''" + INJECT)), "exported"),
    (
        "frame address with a line break",
        scenario(click(frame_url="http://f/\nimport os")),
        "refused",
    ),
    (
        "note with a line break",
        scenario({**click(), "note": "fine\nimport os"}),
        "refused",
    ),
    ("unknown step type", scenario({"action": "__import__", "args": {}}), "refused"),
    (
        "fill value",
        scenario(
            {
                "action": "fill",
                "identity": identity(role="textbox"),
                "args": {"value": "v\n" + INJECT + "\u2028\x00"},
            }
        ),
        "exported",
    ),
    (
        "typed text",
        scenario(
            {
                "action": "type",
                "identity": identity(role="textbox"),
                "args": {"text": BREAK, "submit": True},
            }
        ),
        "exported",
    ),
    (
        "parameter default",
        scenario(
            {"action": "fill", "identity": identity(role="textbox"), "args": {"value": "${email}"}},
            params={"email": {"default": "a\n" + INJECT}},
        ),
        "exported",
    ),
    (
        "parameter name that is no identifier",
        scenario(params={"a b); import os #": {"default": "x"}}),
        "refused",
    ),
    (
        "secret",
        scenario(
            {
                "action": "fill",
                "identity": identity(role="textbox"),
                "args": {"value": "${SECRET:PW}" + INJECT},
            }
        ),
        "exported",
    ),
    ("press key", scenario({"action": "press", "args": {"key": "Enter" + INJECT}}), "exported"),
    (
        "select labels",
        scenario(
            {
                "action": "select_option",
                "identity": identity(role="combobox"),
                "args": {"values": ["a" + INJECT, "b\n"]},
            }
        ),
        "exported",
    ),
    (
        "upload file names",
        scenario({"action": "upload", "identity": identity(), "args": {"files": ["f" + INJECT]}}),
        "exported",
    ),
    (
        "navigate url",
        scenario({"action": "navigate", "args": {"url": "http://x/" + INJECT}}),
        "exported",
    ),
    (
        "dialog prompt",
        scenario({"action": "dialog", "args": {"accept": True, "prompt_text": BREAK}}),
        "exported",
    ),
    (
        "dialog times as code",
        scenario({"action": "dialog", "args": {"times": "1); import os #"}}),
        "refused",
    ),
    ("scroll by infinity", scenario({"action": "scroll", "args": {"dy": float("inf")}}), "refused"),
    (
        "scroll by code",
        scenario({"action": "scroll", "args": {"dy": "__import__('os')"}}),
        "refused",
    ),
    (
        "wait time as code",
        scenario({"action": "wait_for", "args": {"time_ms": "1) or (2"}}),
        "refused",
    ),
    ("wait text", scenario({"action": "wait_for", "args": {"text": BREAK}}), "exported"),
    (
        "check text",
        scenario({"action": "expect", "args": {"kind": "text_visible", "text": "t" + INJECT}}),
        "exported",
    ),
    (
        "check items",
        scenario(
            {
                "action": "expect",
                "args": {"kind": "items", "items": [INJECT, BREAK]},
                "identity": identity(role="list", name="L" + INJECT),
            }
        ),
        "exported",
    ),
    (
        "check rows count as code",
        scenario(
            {"action": "expect", "args": {"kind": "rows", "text": "a", "count": "1)\nimport os"}}
        ),
        "refused",
    ),
    (
        "check url",
        scenario({"action": "expect", "args": {"kind": "url", "url": BREAK}}),
        "exported",
    ),
    (
        "check value",
        scenario(
            {
                "action": "expect",
                "identity": identity(role="textbox"),
                "args": {"kind": "value", "value": "\u2029" + INJECT},
            }
        ),
        "exported",
    ),
    ("click button as code", scenario({**click(), "args": {"button": "left" + INJECT}}), "refused"),
    (
        "click modifiers as code",
        scenario({**click(), "args": {"modifiers": ["Shift" + INJECT]}}),
        "refused",
    ),
]


@pytest.mark.parametrize(("data", "outcome"), [c[1:] for c in CORPUS], ids=[c[0] for c in CORPUS])
def test_a_hostile_scenario_file_is_refused_or_exported_safely(
    data: dict[str, Any], outcome: str
) -> None:
    data = json.loads(json.dumps(data))  # as a file holds it
    if outcome == "refused":
        with pytest.raises(ScenarioInvalid):
            Scenario.from_dict(data)
        return
    read = Scenario.from_dict(data)
    assert_safe_module(to_pytest(read))


def test_a_refused_role_names_the_step_and_the_field() -> None:
    data = scenario({"action": "navigate", "args": {"url": "http://shop.test/"}},
                    click(role=EVIL_ROLE))  # fmt: skip
    with pytest.raises(ScenarioInvalid) as refused:
        Scenario.from_dict(data)
    assert refused.value.index == 1
    assert refused.value.message.startswith("step 1: element identity: role ")
    assert refused.value.message.endswith(" is not an ARIA role")
    assert "\n" not in str(refused.value)


# Scenarios made in code (or read before this release) are not checked as files are: the
# export itself must be safe whatever they hold.
def _step(action: str, args: dict[str, Any] | None = None, **fields: Any) -> ScenarioStep:
    return ScenarioStep(action, args or {}, ElementIdentity(**{
        "role": "button", "name": "Save", "tag": "button", "selectors": ("#save",),
        "name_count": 1, **fields}))  # fmt: skip


EXPORTED_IN_CODE: list[tuple[str, Scenario]] = [
    ("base_url breaks the docstring", Scenario("N", (), base_url="http://x/" + BREAK)),
    ("name breaks the docstring", Scenario('x"""\nimport os\n"""\\', ())),
    *[
        (
            f"names with {br!r}",
            Scenario(
                f"N{br}import os",
                (
                    _step(
                        "click",
                        name=f"Save{br}import os",
                        row=f"r{br}x",
                        frame_url=f"http://f/{br}",
                    ),
                    _step("fill", {"value": f"v{br}x"}, role="textbox", selectors=(f"#a{br}b",)),
                ),
            ),
        )
        for br in [*LINE_BREAKS, "\x00"]
    ],
    (
        "no role, a clickable, a frame",
        Scenario(
            "N",
            (
                _step("click", role=""),
                _step("click", role="clickable", selectors=()),
                _step("hover", role="iframe", selectors=("iframe",), name=""),
                _step("click", role="clickable", selectors=(), name="", placeholder="p" + INJECT),
            ),
        ),
    ),
    (
        "old steps",
        Scenario(
            "N",
            (
                ScenarioStep(
                    "click", {}, None, role="link", name="a" + INJECT, selector="#b" + INJECT
                ),
            ),
        ),
    ),
]
REFUSED_IN_CODE: list[tuple[str, Scenario]] = [
    ("role with line breaks", Scenario("N", (_step("click", role=EVIL_ROLE),))),
    ("role that closes the string", Scenario("N", (_step("click", role="link" + INJECT),))),
    (
        "legacy role",
        Scenario("N", (ScenarioStep("click", {}, None, role=EVIL_ROLE, selector="#x"),)),
    ),
    ("unknown action", Scenario("N", (ScenarioStep("__import__('os')", {}),))),
    ("a version that is code", replace(Scenario("N", ()), version="1; import os")),  # type: ignore[arg-type]
    ("scroll by NaN", Scenario("N", (ScenarioStep("scroll", {"dy": float("nan")}),))),
    ("scroll by a bool", Scenario("N", (ScenarioStep("scroll", {"dy": True}),))),
    ("wait by a fraction", Scenario("N", (ScenarioStep("wait_for", {"time_ms": 1.5}),))),
    ("load state as code", Scenario("N", (ScenarioStep("wait_for", {"load_state": INJECT}),))),
    ("a value that is an object", Scenario("N", (_step("fill", {"value": {"a": 1}}),))),
    ("a value that is NaN", Scenario("N", (_step("fill", {"value": float("nan")}),))),
    ("a check kind as code", Scenario("N", (ScenarioStep("expect", {"kind": INJECT}),))),
    ("button as code", Scenario("N", (_step("click", {"button": INJECT}),))),
    (
        "nothing to find it by",
        Scenario("N", (_step("click", role="clickable", name="", selectors=()),)),
    ),
]


@pytest.mark.parametrize(
    "made", [c[1] for c in EXPORTED_IN_CODE], ids=[c[0] for c in EXPORTED_IN_CODE]
)
def test_a_hostile_scenario_made_in_code_exports_to_a_safe_module(made: Scenario) -> None:
    assert_safe_module(to_pytest(made))


@pytest.mark.parametrize(
    "made", [c[1] for c in REFUSED_IN_CODE], ids=[c[0] for c in REFUSED_IN_CODE]
)
def test_what_no_literal_can_hold_refuses_the_export_naming_the_step(made: Scenario) -> None:
    with pytest.raises(ScenarioInvalid) as refused:
        to_pytest(made)
    if made.steps:
        assert refused.value.index == 0 and refused.value.message.startswith("step 0 ")


def test_hostile_texts_are_kept_as_the_literals_they_were() -> None:
    """Safe is not lossy: each value reaches the test as the same string."""
    name = 'Say "hi" it\'s \\ \'\'\' """' + INJECT
    sent = "POST /" + INJECT.replace(" ", "").replace("\n", "")  # (its path as a write's)
    code = to_pytest(Scenario("N\u2028x", (
        _step("click", name=name), _step("fill", {"value": BREAK}, role="textbox"),
        replace(_step("click", name="Save"), sent=sent),
    ), base_url='http://x/"""'))  # fmt: skip
    test = assert_safe_module(code)
    literals = {n.value for n in ast.walk(test) if isinstance(n, ast.Constant)}
    assert {name, BREAK, sent} <= literals
    module = ast.parse(code)
    assigned = {t.id: s.value for s in module.body if isinstance(s, ast.Assign)
                for t in s.targets if isinstance(t, ast.Name)}  # fmt: skip
    assert ast.literal_eval(assigned["SCENARIO"]) == "N\u2028x"
    assert ast.literal_eval(assigned["RECORDED_BASE"]) == 'http://x/"""'
    assert "# step 0: click button " + repr(name) in code


def test_a_pseudo_role_is_found_by_what_else_it_has() -> None:
    """Playwright finds no element by a role that is not ARIA's ("clickable")."""
    code = to_pytest(Scenario("N", (_step("click", role="clickable", selectors=("#go",)),)))
    assert "page.locator('#go').click()" in code and "get_by_role('clickable'" not in code


# A field of a line a person added (its row read as nothing), among others of its name:
# its id, name attribute and path number the rows (form-2-*), and another day's page has
# another line there.  The export must not find it by them, nor take the first of its name.
NUMBERED_LINE = {
    "role": "textbox", "name": "Product", "tag": "input", "name_count": 3, "row_peers": 2,
    "name_attr": "form-2-product", "id": "id_form-2-product",
    "selectors": ("#id_form-2-product", 'input[name="form-2-product"]',
                  "#lines > tbody > tr:nth-of-type(4) > td:nth-of-type(1) > input"),
}  # fmt: skip


@pytest.mark.parametrize("action, args", [("fill", {"value": "Screw"}), ("click", {})])
def test_a_field_of_a_line_just_added_is_not_found_by_its_row_number(
    action: str, args: dict[str, Any]
) -> None:
    code = to_pytest(Scenario("N", (_step(action, args, **NUMBERED_LINE),)))
    assert "form-2" not in code and "nth-of-type" not in code, code
    locator = "page.get_by_role('textbox', name='Product', exact=True)"
    assert f"{locator}.{action}(" in code, code  # strict: several such fail, none is picked


# -- identities read from a page ------------------------------------------------------


def test_a_page_s_description_is_made_safe_before_it_is_kept() -> None:
    found = {
        "role": "button", "kind": "press", "name": "Save\nnow\x00\u2028", "text": "x" * 5_000,
        "test_ids": {"data-testid": "t\r1", "onclick": "evil"},
        "selectors": ["#ok", "#a\nb", "#" + "x" * 5_000, *[f"#s{i}" for i in range(40)]],
        "alike": ["Save\x85all"], "variants": [{"role": EVIL_ROLE}],
    }  # fmt: skip
    kept = ElementIdentity.from_page(found)
    assert kept.name == "Save now  " and kept.role == "button"
    assert len(kept.text) == MAX_TEXT_CHARS
    assert kept.test_ids == {"data-testid": "t 1"}
    assert kept.selectors[0] == "#ok" and len(kept.selectors) == 12
    assert all("\n" not in s and len(s) < 100 for s in kept.selectors)
    assert kept.alike == ("Save all",) and kept.variants == ()
    # Kept, it reads back as a stored identity.
    assert ElementIdentity.from_dict(kept.to_dict()) == kept


@pytest.mark.parametrize("role", [EVIL_ROLE, "Button", "button ", "a" * 10_000, 3, None])
def test_a_role_off_the_list_refuses_the_capture(role: object) -> None:
    with pytest.raises(ActionFailed, match="can't be kept: element identity: role"):
        ElementIdentity.from_page({"role": role, "name": "x"})
    with pytest.raises(ActionInvalid):
        ElementIdentity.from_dict({"role": role, "name": "x"})


def test_every_role_the_registry_gives_is_on_the_list() -> None:
    """One list: the roles snapshot.js knows (its ARIA set and its implicit roles) and the
    recorder's pseudo-roles are all accepted, so no honest capture is refused."""
    js_roles = SNAPSHOT_JS.split("const ARIA_ROLES = new Set((", 1)[1].split(").split", 1)[0]
    words = "".join(p.split('"')[1] for p in js_roles.split("+")).split()
    assert set(words) == ARIA_ROLES
    # The strings implicitRole() returns (the rest of the script returns other strings).
    body = SNAPSHOT_JS.split("function implicitRole(", 1)[1].split("function roleOf(", 1)[0]
    implicit = {w.split('"')[1] for w in body.split("return ")[1:] if w.startswith('"')}
    assert {"button", "checkbox", "radio"} <= implicit  # the scan found the function
    assert implicit - {""} <= ROLES, implicit - ROLES
    assert {"clickable", "generic", "iframe"} <= ROLES
