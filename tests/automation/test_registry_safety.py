"""Everything read from a page is untrusted: a page that tampers with Tabwright's in-page
registry (replacing it or its functions, or turning the built-ins it uses against it), or
forges the recorder's events, never gets a role off the list into a recorded step, and what
it recorded exports to a safe module (real Chromium)."""

from __future__ import annotations

import asyncio
import json

import pytest

from automation import ActionFailed, Budget, Tab
from automation.browser.identity import capture
from automation.browser.snapshot import SNAPSHOT_JS
from automation.recording.export import to_pytest
from automation.recording.recorder import Recorder
from automation.recording.roles import ROLES
from automation.recording.scenario import Scenario
from tests.automation.recording.test_export_safety import EVIL_ROLE, assert_safe_module
from tests.bounds import room

# -- a page that tampers with the registry --------------------------------------------

# Strict, so that a write the registry refuses throws instead of doing nothing quietly.
TAMPER_JS = """(evil) => {
  "use strict";
  const tw = window.__tabwright;
  const tries = {};
  const attempt = (what, fn) => {
    try { fn(); tries[what] = "done"; } catch (err) { tries[what] = "refused"; }
  };
  attempt("redefine", () => Object.defineProperty(window, "__tabwright",
    { value: { roleOf: () => evil, nameOf: () => evil } }));
  attempt("assign", () => { window.__tabwright = { roleOf: () => evil }; });
  attempt("delete", () => { delete window.__tabwright; });
  attempt("roleOf", () => { tw.roleOf = () => evil; });
  attempt("defineRoleOf", () => Object.defineProperty(tw, "roleOf", { value: () => evil }));
  attempt("deleteRoleOf", () => { delete tw.roleOf; });
  attempt("prototype", () => Object.setPrototypeOf(tw, { roleOf: () => evil }));
  attempt("addFn", () => { tw.extra = 1; });
  attempt("fnProps", () => { tw.roleOf.call = () => evil; });
  // Built-ins the in-page code uses, turned against it.
  Set.prototype.has = function () { return true; };
  const split = String.prototype.split;
  String.prototype.split = function (...a) {
    return this.startsWith && this.startsWith("button") ? [evil] : split.apply(this, a);
  };
  String.prototype.trim = function () { return String(this).replace(/^ +| +$/g, ""); };
  Object.prototype.roleOf = () => evil;
  return { tries, same: window.__tabwright === tw, frozen: Object.isFrozen(tw),
           role: tw.roleOf(document.querySelector("#evil")), proto: Object.getPrototypeOf(tw) };
}"""


async def test_the_registry_can_t_be_replaced_or_made_to_give_another_role(
    tab: Tab, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/hostile/registry.html")
    got = await tab.page.evaluate(TAMPER_JS, EVIL_ROLE)
    assert got["same"] and got["frozen"] and got["proto"] is None
    assert set(got["tries"].values()) == {"refused"}, got["tries"]
    role = await tab.page.evaluate(
        "() => window.__tabwright.roleOf(document.querySelector('#evil'))"
    )
    assert role in ROLES or role is None
    assert role == got["role"] and role != EVIL_ROLE
    # The agent's capture of the element keeps a role off the list out, whatever it is now.
    handle = await tab.page.query_selector("#evil")
    assert handle is not None
    try:
        kept = await capture(handle, budget=room())
    except ActionFailed:
        pass  # refused (the page broke the capture, or what it gave can't be kept)
    else:
        assert kept.role in ROLES or kept.role == ""


async def test_a_registry_the_page_put_first_is_not_trusted(tab: Tab) -> None:
    """A document that predates the init script (the registry installed late, by
    evaluate): the page's own __tabwright stays, and its roles are refused."""
    context = await tab.context.browser.new_context()  # type: ignore[union-attr]
    try:
        page = await context.new_page()
        await page.set_content(
            "<script>Object.defineProperty(window, '__tabwright', {value: {"
            f"roleOf: () => {json.dumps(EVIL_ROLE)}, nameOf: () => 'Go',"
            "refOf: () => null, resolve: () => null, snapshot: () => ({})}})</script>"
            "<button id=go>Go</button>"
        )
        await page.evaluate(SNAPSHOT_JS)  # as tab.py installs it in such a document
        handle = await page.query_selector("#go")
        assert handle is not None
        with pytest.raises(ActionFailed, match="can't be kept: element identity: role"):
            await capture(handle, budget=Budget(5_000))
    finally:
        await context.close()


async def test_a_person_recording_on_a_tampering_page_keeps_no_role_off_the_list(
    tab: Tab, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/hostile/registry.html")
    recorder = Recorder(tab)
    await recorder.start()
    page = tab.page
    await page.locator("#good").click()  # before the page turns against the recorder
    await page.evaluate("() => window.turnEvil()")
    await page.locator("#evil").click()  # identity.js's role cache now answers evil
    await page.locator("#good").click()
    await page.evaluate("() => window.forge()")  # events sent on the recorder's binding
    await page.locator("#after").click()  # the last step: everything before it arrived
    deadline = asyncio.get_running_loop().time() + 5
    while not any(s.identity and s.identity.id == "after" for s in recorder.steps):
        assert asyncio.get_running_loop().time() < deadline, recorder.steps
        await asyncio.sleep(0.05)
    steps = await recorder.stop()
    assert await page.evaluate("() => window.forged") == 4  # the forgeries were sent
    clicked = [s.identity.id for s in steps if s.action == "click" and s.identity]
    assert clicked[0] == "good" and clicked[-1] == "after" and "evil" not in clicked
    # The forged click with a role off the list is not kept; the one with a fine role is,
    # its texts made safe; the forged press is kept without the identity it came with.
    names = [s.identity.name for s in steps if s.identity]
    assert "Fine import os " in names
    press = [s for s in steps if s.action == "press"]
    assert [(p.args["key"], p.identity) for p in press] == [("Enter'); import os #", None)]
    for step in steps:
        target = step.target()
        if target is not None:
            assert target.role in ROLES or target.role == "", target.role
            for text in (target.name, target.row, target.text, step.url, step.note):
                assert not any(c in text for c in "\n\r\x00\u2028"), text
    # Saved and read back as a scenario, then exported: nothing of the page is code.
    saved = Scenario.from_dict(json.loads(json.dumps(
        Scenario("Hostile page", tuple(steps), base_url=fixture_url).to_dict())))  # fmt: skip
    assert_safe_module(to_pytest(saved))


def test_refs_a_walk_reports_are_issued_only_when_well_formed() -> None:
    from automation.browser.snapshot import ref_entries

    reported = [
        ["e1", "button", "Save", 0, 1],
        ["e2", "button\nimport os", "Save", 0, 1],  # a role off the list
        ["e3", "made-up", "x", 0, 1],
        ["f2e4", "link", "Home", 0, 1],  # another frame's ref
        ["e5", "link", ["not", "text"], 0, 1],
        ["e6", "link", "Next", True, 1],  # a bool is not a count
        ["e7", "link", "Next", 0, 0],
        ["e8", "textbox"],
        "e9",
        ["e10", "checkbox", "Done", 1, 2],
    ]
    entries = ref_entries(reported, frame="", host="", backend_ids={"e10": 42})
    assert [(e.ref, e.role, e.name, e.nth, e.count) for e in entries] == [
        ("e1", "button", "Save", 0, 1),
        ("e10", "checkbox", "Done", 1, 2),
    ]
    assert entries[1].backend_node_id == 42
    framed = ref_entries([["f2e4", "link", "Home", 0, 1]], frame="f2", host="e7", backend_ids={})
    assert [(e.ref, e.frame, e.host) for e in framed] == [("f2e4", "f2", "e7")]
    assert ref_entries({"not": "a list"}, frame="", host="", backend_ids={}) == []
