"""Element identities on real Chromium: taken from a ref, found again after the page
changed (ids, classes, wrappers, order, wording, synonyms, shadow roots, frames, cards),
abstaining when the element is gone and only look-alikes remain, and saying why when a page
breaks the matcher; and every pair of the healing corpus (fixtures/healing/, measured by
bench/healing.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from automation import ActionInvalid, Tab
from automation.browser.identity import IDENTITY_VERSION, ElementIdentity, Located, locate
from automation.browser.snapshot import Snapshot
from bench.healing import load_cases, run_case
from tests.bounds import room
from tests.refs import ref_of

pytestmark = pytest.mark.long  # one of the longest files: dealt out first


@pytest.fixture
async def page(tab: Tab, fixture_url: str) -> Snapshot:
    await tab.navigate(f"{fixture_url}/engine/identity.html")
    return await tab.snapshot()


async def identity_of(tab: Tab, page: Snapshot, role: str, name: str, nth: int = 0) -> Any:
    target = await tab.target(ref_of(page, role, name, nth))
    assert target.identity is not None
    return target.identity


async def find(tab: Tab, identity: ElementIdentity) -> Located:
    return await locate(tab.page, identity, budget=room())


async def html_of(located: Located) -> str:
    assert located.element is not None, located.reason
    return str(await located.element.evaluate("(e) => e.outerHTML"))


async def test_an_identity_is_taken_from_a_ref(tab: Tab, page: Snapshot) -> None:
    csv = await identity_of(tab, page, "button", "Export CSV")
    assert (csv.role, csv.name, csv.tag, csv.id) == ("button", "Export CSV", "button", "export-csv")
    assert csv.test_ids == {"data-testid": "export-csv"}
    assert csv.selectors[0] == '[data-testid="export-csv"]' and "#export-csv" in csv.selectors
    assert csv.section == "Export" and csv.name_count == 1 and csv.version == IDENTITY_VERSION
    assert csv.box is not None and csv.box[2] > 0 and csv.look and csv.captured_at
    delete = await identity_of(tab, page, "button", "Delete", 2)
    assert delete.row == "#1003 Alan Turing" and delete.name_count == 3
    email = await identity_of(tab, page, "textbox", "Email", 1)
    assert email.section == "Shipping address" and email.type == "email"
    # A button has no placeholder, label or autocomplete to prove unique: the page's other
    # elements are not each asked whether they are visible (a layout query each), which
    # on a page of 10,000 nodes is most of taking a step's target.
    asked = """() => {
      const own = Element.prototype.checkVisibility;
      window.visibilityAsked = 0;
      Element.prototype.checkVisibility = function (...args) {
        window.visibilityAsked += 1;
        return own.apply(this, args);
      };
      return document.getElementsByTagName("*").length;
    }"""
    elements = await tab.page.evaluate(asked)
    assert (await identity_of(tab, page, "button", "Export CSV")).id == "export-csv"
    assert 0 < await tab.page.evaluate("window.visibilityAsked") < elements / 2


async def test_an_identity_survives_json_and_refuses_what_it_cannot_read(
    tab: Tab, page: Snapshot
) -> None:
    csv = await identity_of(tab, page, "button", "Export CSV")
    assert ElementIdentity.from_dict(csv.to_dict()) == csv
    old = ElementIdentity.from_dict({"role": "button", "name": "Go"})  # before card and alike
    assert old.version == 1 and old.card == "" and old.alike == ()
    alike = replace(csv, alike=("Export PDF",), card="Orders")
    assert alike.to_dict()["alike"] == ["Export PDF"]
    assert ElementIdentity.from_dict(alike.to_dict()) == alike
    with pytest.raises(ActionInvalid, match="newer than this Tabwright reads"):
        ElementIdentity.from_dict({**csv.to_dict(), "version": IDENTITY_VERSION + 1})
    with pytest.raises(ActionInvalid, match="box"):
        ElementIdentity.from_dict({"box": [1, 2]})
    with pytest.raises(ActionInvalid, match="name must be text"):
        ElementIdentity.from_dict({"name": 5})
    with pytest.raises(ActionInvalid, match="JSON object"):
        ElementIdentity.from_dict(["button"])


async def test_renamed_ids_and_regenerated_classes_are_found_by_role_and_name(
    tab: Tab, page: Snapshot
) -> None:
    save = await identity_of(tab, page, "button", "Save changes")
    await tab.page.evaluate(
        """() => { const b = document.getElementById('save');
        b.id = 'settings-submit-btn'; b.className = 'css-9f8e7d';
        const wrap = document.createElement('div'); b.replaceWith(wrap); wrap.appendChild(b); }"""
    )
    found = await find(tab, save)
    assert found.strategy == "role_name" and 'id="settings-submit-btn"' in await html_of(found)
    assert any(c.startswith("id: 'save'") for c in found.changes)


async def test_a_reworded_button_is_found_by_similarity(tab: Tab, page: Snapshot) -> None:
    save = await identity_of(tab, page, "button", "Save changes")
    await tab.page.evaluate(
        """() => { const b = document.getElementById('save');
        b.textContent = 'Save all changes'; b.id = 'btn-1';
        const wrap = document.createElement('div'); b.replaceWith(wrap); wrap.appendChild(b); }"""
    )
    found = await find(tab, save)
    assert found.strategy == "similarity" and found.score >= 0.6
    assert "Save all changes" in await html_of(found)
    assert "name: 'Save changes' -> 'Save all changes'" in found.changes


async def test_a_row_action_follows_its_row_and_abstains_when_the_row_is_gone(
    tab: Tab, page: Snapshot
) -> None:
    delete = await identity_of(tab, page, "button", "Delete", 2)
    await tab.page.evaluate(
        """() => { const body = document.querySelector('tbody');
        body.insertBefore(body.children[2], body.children[0]); }"""
    )
    found = await find(tab, delete)
    assert found.element is not None
    assert await found.element.evaluate("(e) => e.closest('tr').cells[0].textContent") == "#1003"
    await tab.page.evaluate("() => document.querySelector('tbody').children[0].remove()")
    gone = await find(tab, delete)
    # Two Delete buttons remain, and the old selector now points at one of them.
    assert not gone.ok and "another row" in gone.reason
    assert [c["name"] for c in gone.candidates[:2]] == ["Delete", "Delete"]


async def test_a_removed_button_is_not_replaced_by_its_neighbour(tab: Tab, page: Snapshot) -> None:
    csv = await identity_of(tab, page, "button", "Export CSV")
    await tab.page.evaluate("() => document.getElementById('export-csv').remove()")
    gone = await find(tab, csv)
    assert not gone.ok and gone.element is None
    assert "name" in gone.reason and gone.candidates[0]["name"] == "Export PDF"


async def test_a_shared_name_is_told_apart_by_its_section(tab: Tab, page: Snapshot) -> None:
    shipping = await identity_of(tab, page, "textbox", "Email", 1)
    await tab.page.evaluate(
        """() => { const main = document.querySelector('main');
        const [billing, ship] = document.querySelectorAll('section');
        main.insertBefore(ship, billing);
        for (const input of document.querySelectorAll('input[type=email]')) input.id = ''; }"""
    )
    found = await find(tab, shipping)
    assert found.ok and found.strategy == "similarity"
    section = await found.element.evaluate(
        "(e) => e.closest('section').querySelector('h2').textContent"
    )  # type: ignore[union-attr]
    assert section == "Shipping address"


async def test_elements_in_shadow_roots_and_frames_are_found(tab: Tab, page: Snapshot) -> None:
    follow = await identity_of(tab, page, "button", "Follow")
    pay = await identity_of(tab, page, "button", "Pay now")
    assert pay.frame_url.endswith("/engine/identity-frame.html")
    found = await find(tab, follow)
    assert found.strategy == "role_name" and found.element is not None
    assert await found.element.evaluate("(e) => e.getRootNode() instanceof ShadowRoot")
    in_frame = await find(tab, pay)
    assert in_frame.ok and in_frame.frame is not None and in_frame.frame.parent_frame is not None


@pytest.mark.parametrize("case", load_cases(), ids=lambda c: c["id"])
async def test_every_pair_of_the_healing_corpus(
    module_tab: Tab, fixture_url: str, case: dict[str, Any]
) -> None:
    """Recorded on v1, found on v2 (the same element), or abstained when it is gone; the
    pairs share a tab, as bench.healing runs them (each opens its pages afresh)."""
    result = await run_case(module_tab, fixture_url, case)
    assert result["ours"].verdict == "correct", (
        f"{result['ours'].verdict} via {result['strategy']} ({result['reason']}) "
        f"{result['ours'].detail}"
    )


# -- controls repeated per card, out of tables and lists ---------------------------------

CARD_TITLE = "(e) => e.closest('.task').querySelector('.task-title').textContent"


@pytest.fixture
async def cards(tab: Tab, fixture_url: str) -> Snapshot:
    await tab.navigate(f"{fixture_url}/engine/identity-cards.html")
    return await tab.snapshot()


async def test_a_card_menu_is_told_apart_by_its_card(tab: Tab, cards: Snapshot) -> None:
    menu = await identity_of(tab, cards, "button", "Card actions", 3)
    assert menu.row == "" and menu.card == "Fix flaky login test QA-19"
    # The lane title and the card title are divs, not headings: the card's tells it apart.
    assert menu.section == "Fix flaky login test" and menu.name_count == 6
    (path,) = menu.selectors  # only a structural path: no attribute tells the menus apart
    assert ":nth-of-type(" in path
    await tab.page.evaluate(
        """() => { const [, review, done] = document.querySelectorAll('.lane');
        done.insertBefore(review.querySelectorAll('.task')[1], done.children[1]); }"""
    )
    # The path now leads to the next card's menu: refused, the moved card's is found.
    on_path = await tab.page.evaluate(f"(s) => ({CARD_TITLE})(document.querySelector(s))", path)
    assert on_path == "Dark mode tokens"
    found = await find(tab, menu)
    assert found.ok and found.strategy == "similarity", found.reason
    assert await found.element.evaluate(CARD_TITLE) == "Fix flaky login test"  # type: ignore[union-attr]


async def test_a_removed_cards_menu_is_not_replaced_by_the_next_one(
    tab: Tab, cards: Snapshot
) -> None:
    menu = await identity_of(tab, cards, "button", "Card actions", 3)
    await tab.page.evaluate(
        """() => [...document.querySelectorAll('.task')]
        .find((t) => t.textContent.includes('Fix flaky')).remove()"""
    )
    gone = await find(tab, menu)  # the stored path finds "Dark mode tokens"' menu at 1.0
    assert not gone.ok and "another card" in gone.reason


async def test_a_lane_button_follows_its_lane(tab: Tab, cards: Snapshot) -> None:
    add = await identity_of(tab, cards, "button", "+ Add a card", 1)
    assert add.section == "Review" and add.card.startswith("Review Checkout redesign")
    await tab.page.evaluate(
        """() => { const board = document.querySelector('.board');
        board.prepend(board.children[1]); }"""
    )
    found = await find(tab, add)
    assert found.ok, found.reason
    lane = "(e) => e.closest('.lane').querySelector('.lane-title').textContent"
    assert await found.element.evaluate(lane) == "Review"  # type: ignore[union-attr]


async def test_a_removed_saved_card_is_not_replaced_by_another(tab: Tab, cards: Snapshot) -> None:
    remove = await identity_of(tab, cards, "button", "Remove", 1)
    assert remove.card == "Mastercard ending 5454 Expires 11/26"
    await tab.page.evaluate("() => document.querySelectorAll('.saved')[1].remove()")
    gone = await find(tab, remove)
    assert not gone.ok and "another card" in gone.reason


# -- reworded names and look-alikes ------------------------------------------------------


@pytest.fixture
async def buttons(tab: Tab, fixture_url: str) -> Snapshot:
    await tab.navigate(f"{fixture_url}/engine/identity-words.html")
    return await tab.snapshot()


async def reword(tab: Tab, before: str, after: str) -> None:
    """Rename the button and wrap it, so that neither its words nor its path still fit."""
    await tab.page.evaluate(
        """([before, after]) => {
        const b = [...document.querySelectorAll('button')].find((b) => b.textContent === before);
        b.textContent = after;
        const wrap = document.createElement('span'); b.replaceWith(wrap); wrap.append(b); }""",
        [before, after],
    )


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("Send for approval", "Submit for approval"),
        ("Next", "Continue"),
        ("Sign out", "Log out"),
        ("Sign in", "Log in"),
        ("Delete", "Remove"),
        ("Search", "Find"),
        ("Close", "Dismiss"),
        ("OK", "Confirm"),
    ],
)
async def test_a_button_reworded_with_a_synonym_is_found(
    tab: Tab, buttons: Snapshot, before: str, after: str
) -> None:
    button = await identity_of(tab, buttons, "button", before)
    await reword(tab, before, after)
    found = await find(tab, button)
    assert found.ok and found.strategy == "similarity", found.reason
    assert await found.element.evaluate("(e) => e.textContent") == after  # type: ignore[union-attr]


async def test_other_words_are_not_synonyms(tab: Tab, buttons: Snapshot) -> None:
    save = await identity_of(tab, buttons, "button", "Save")
    await reword(tab, "Save", "Apply")  # they often sit side by side doing different things
    await tab.page.evaluate(
        """() => [...document.querySelectorAll('button')]
        .find((b) => b.textContent === 'Save draft').remove()"""
    )  # (a look-alike: refused anyway, see below)
    gone = await find(tab, save)
    assert not gone.ok and gone.reason.startswith("no candidate fits: name")


async def test_a_removed_button_is_not_replaced_by_a_look_alike_from_its_time(
    tab: Tab, buttons: Snapshot
) -> None:
    archive = await identity_of(tab, buttons, "button", "Archive")
    save = await identity_of(tab, buttons, "button", "Save")
    assert archive.alike == ("Archive all read",) and save.alike == ("Save draft",)
    await tab.page.evaluate(
        """() => { for (const b of document.querySelectorAll('button'))
        if (b.textContent === 'Archive' || b.textContent === 'Save') b.remove(); }"""
    )
    for identity, other in ((archive, "Archive all read"), (save, "Save draft")):
        gone = await find(tab, identity)
        assert not gone.ok and f'look-alike "{other}"' in gone.reason
        assert gone.candidates[0]["name"] == other
    # Without what it saw beside it (an identity from before look-alikes were kept), the
    # name alone refuses them too: words added to a one-word name make another action.
    for identity, other in ((archive, "Archive all read"), (save, "Save draft")):
        older = await find(tab, replace(identity, alike=()))
        assert not older.ok and f'name "{other}"' in older.reason, older.reason


async def test_a_one_word_name_that_gained_words_is_another_action(
    tab: Tab, fixture_url: str
) -> None:
    """The next release has no "Save", "Delete" or "Approve", only "Save draft", "Delete
    all" and "Approve all" (none of them there at recording): each step waits for a
    person.  A longer name that gains a word is still the element ("Save all changes"), as
    is one that only urges ("Sign in now"); an id kept across the rename proves it."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(
        "<main><button>Save</button> <button>Delete</button> <button>Approve</button>"
        " <button>Save changes</button> <button id='send'>Send</button>"
        " <button>Sign in</button></main>"
    )
    snapshot = await tab.snapshot()
    names = ("Save", "Delete", "Approve", "Save changes", "Send", "Sign in")
    recorded = {n: await identity_of(tab, snapshot, "button", n) for n in names}
    await tab.page.set_content(
        "<main><button>Save draft</button> <button>Delete all</button>"
        " <button>Approve all</button> <button>Save all changes</button>"
        " <button id='send'>Send now</button> <button>Sign in now</button></main>"
    )
    for name in ("Save", "Delete", "Approve"):
        gone = await find(tab, recorded[name])
        assert not gone.ok, (name, await html_of(gone))
    kept = await find(tab, recorded["Save changes"])
    assert kept.ok and await html_of(kept) == "<button>Save all changes</button>"
    urged = await find(tab, recorded["Sign in"])
    assert urged.ok and await html_of(urged) == "<button>Sign in now</button>"
    proven = await find(tab, recorded["Send"])
    assert proven.ok and await html_of(proven) == '<button id="send">Send now</button>'


async def test_an_id_on_a_button_named_otherwise_does_not_prove_it(
    tab: Tab, fixture_url: str
) -> None:
    """The next release moved "Approve" into a closed menu and put "Reject" where it stood,
    with its id and classes: the step once clicked Reject (a confident heal).  A button's
    name says what it does: an id or a name attribute on a button named otherwise proves
    nothing, and the step waits for a person.  A test id still proves a renamed button, and
    an id still proves a field whose label changed."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(
        "<main><button id='approve' class='primary'>Approve</button>"
        " <button id='reject' class='secondary'>Reject</button>"
        " <button data-testid='go'>Continue</button>"
        " <label>Email <input id='email'></label></main>"
    )
    snapshot = await tab.snapshot()
    approve = await identity_of(tab, snapshot, "button", "Approve")
    go = await identity_of(tab, snapshot, "button", "Continue")
    email = await identity_of(tab, snapshot, "textbox", "Email")
    await tab.page.set_content(
        "<main><button id='approve' class='primary'>Reject</button>"
        " <details><summary>More</summary><button>Approve</button></details>"
        " <button data-testid='go'>Proceed to payment</button>"
        " <label>Work e-mail <input id='email'></label></main>"
    )
    wrong = await find(tab, approve)
    assert not wrong.ok, await html_of(wrong)
    assert (await find(tab, go)).ok  # its test id follows it
    field = await find(tab, email)
    assert field.ok and await html_of(field) == '<input id="email">'


async def test_an_id_on_an_option_or_radio_named_otherwise_does_not_prove_it(
    tab: Tab, fixture_url: str
) -> None:
    """A typeahead's suggestions have ids by their place ("opt-0"), a form's radio buttons
    too ("id_plan_0"): picked "Acme Ltd" at recording, the step took "Acme Holdings" the
    next day (the only suggestion, in "opt-0"), a confident heal.  An option's name says
    what it picks, as a button's what it does: a renamed one waits for a person; the one
    named as recorded is found wherever its place."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(
        "<main><label>Customer <input role=combobox aria-controls=list></label>"
        "<ul role=listbox id=list><li role=option id=opt-0>Acme Ltd Leeds</li></ul>"
        "<fieldset><legend>Plan</legend><label><input type=radio name=plan id=id_plan_0>"
        " Basic</label><label><input type=radio name=plan id=id_plan_1> Pro</label>"
        "</fieldset></main>"
    )
    snapshot = await tab.snapshot()
    acme = await identity_of(tab, snapshot, "option", "Acme Ltd Leeds")
    basic = await identity_of(tab, snapshot, "radio", "Basic")
    await tab.page.set_content(
        "<main><label>Customer <input role=combobox aria-controls=list></label>"
        "<ul role=listbox id=list><li role=option id=opt-0>Acme Holdings Hull</li></ul>"
        "<fieldset><legend>Plan</legend><label><input type=radio name=plan id=id_plan_0>"
        " Starter</label><label><input type=radio name=plan id=id_plan_1> Pro</label>"
        "</fieldset></main>"
    )
    for gone in (acme, basic):
        wrong = await find(tab, gone)
        assert not wrong.ok, await html_of(wrong)
    await tab.page.set_content(
        "<main><label>Customer <input role=combobox aria-controls=list></label>"
        "<ul role=listbox id=list><li role=option id=opt-0>Acme Holdings Hull</li>"
        "<li role=option id=opt-1>Acme Ltd Leeds</li></ul></main>"
    )
    found = await find(tab, acme)
    assert found.ok and await html_of(found) == '<li role="option" id="opt-1">Acme Ltd Leeds</li>'


async def test_a_removed_button_s_place_does_not_choose_between_new_ones_of_other_names(
    tab: Tab, fixture_url: str
) -> None:
    """The next release has no "Save": "Save draft" stands where it stood and "Save as
    template" beside it; neither is the recorded button, and where one stands does not
    make it so: the step waits for a person."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content("<main><h1>Plan</h1><p><button>Save</button></p></main>")
    save = await identity_of(tab, await tab.snapshot(), "button", "Save")
    await tab.page.set_content(
        "<main><h1>Plan</h1><p><button>Save draft</button> "
        "<button>Save as template</button></p></main>"
    )
    located = await find(tab, save)
    assert not located.ok, await html_of(located)
    assert located.strategy != "coordinates"


# -- pages that used to break the matcher -----------------------------------------------


@pytest.fixture
async def payment(tab: Tab, fixture_url: str) -> Snapshot:
    await tab.navigate(f"{fixture_url}/engine/identity-redesign.html")
    return await tab.snapshot()


async def test_odd_names_ids_and_labels_are_captured_and_found(tab: Tab, payment: Snapshot) -> None:
    """Dots, brackets and quotes in ids, names and test ids; apostrophes in labels."""
    controls = [
        ("textbox", "Beneficiary's name"),
        ("textbox", "IBAN"),
        ("textbox", "Reference"),
        ("combobox", "When's it sent?"),
        ("checkbox", "Tell them by e-mail"),
        ("button", "Send payment"),
    ]
    for role, name in controls:
        identity = await identity_of(tab, payment, role, name)
        for selector in identity.selectors:
            count = "(s) => document.querySelectorAll(s).length"
            assert await tab.page.evaluate(count, selector) == 1, selector
        found = await find(tab, identity)
        assert found.strategy == "role_name", f"{name}: {found.reason}"
    iban = await identity_of(tab, payment, "textbox", "IBAN")
    assert iban.selectors[:3] == (
        '[data-testid="iban \\"main\\""]',
        "#beneficiary\\[iban\\]",
        'input[name="beneficiary[iban]"]',
    )
    # A form with a control named "id": its .id is that control, not a string.
    form = await identity_of(tab, payment, "form", "")
    assert form.id == "payment-form" and (await find(tab, form)).ok


async def test_abstaining_where_the_recorded_point_is_on_text_does_not_throw(
    tab: Tab, payment: Snapshot
) -> None:
    reference = await identity_of(tab, payment, "textbox", "Reference")
    await tab.page.evaluate(
        """() => { const notice = document.createElement('p');
        notice.style.height = '1500px'; notice.textContent = 'Payments are paused tonight';
        document.body.prepend(notice);  // the recorded point now falls on this text
        const field = document.getElementById('payment.reference').closest('.floating');
        field.after(field.cloneNode(true));  // and the field is there twice
        for (const input of document.querySelectorAll('[name="payment.reference"]')) {
          input.removeAttribute('id'); input.setAttribute('aria-label', 'Reference'); } }"""
    )
    gone = await find(tab, reference)  # used to throw: no element at the point to score
    assert not gone.ok and gone.reason == "ambiguous: 2 candidates score alike"


async def test_a_page_that_breaks_the_matcher_says_how(tab: Tab, payment: Snapshot) -> None:
    reference = await identity_of(tab, payment, "textbox", "Reference")
    await tab.page.evaluate(
        """() => { Element.prototype.checkVisibility = () => {
        throw new Error('patched by the page'); }; }"""
    )
    broken = await find(tab, reference)
    assert not broken.ok
    assert broken.reason == "could not search the page: locate failed: patched by the page"


# -- evidence across implementations: rows, names on one side, unique attributes ----------

ROWS_V1 = """<ul>
  <li><input type="checkbox" aria-label="Toggle Todo"> <span>Buy milk</span>
      <button>Delete</button></li>
  <li><input type="checkbox" aria-label="Toggle Todo"> <span>Walk the dog</span>
      <button>Delete</button></li>
</ul>"""
SR_ONLY = "position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)"


async def row_box(tab: Tab, html: str, row: int = 0) -> ElementIdentity:
    await tab.page.set_content(html)
    snap = await tab.snapshot()
    boxes = [r.ref for r in snap.refs.values() if r.role == "checkbox"]
    target = await tab.target(boxes[row])
    assert target.identity is not None
    return target.identity


async def found_row(tab: Tab, identity: ElementIdentity, html: str) -> str | None:
    """The text of the row of the element found on ``html`` (None: it abstained)."""
    await tab.page.set_content(html)
    await tab.snapshot()
    located = await find(tab, identity)
    if located.element is None:
        return None
    return str(await located.element.evaluate("(e) => e.closest('li, tr').textContent.trim()"))


@pytest.mark.parametrize(
    "v2",
    [
        # no name at all: known by its row only
        """<ul><li><input type="checkbox"> Walk the dog <button>&times;</button></li>
           <li><input type="checkbox"> Buy milk <button>&times;</button></li></ul>""",
        # a visually hidden label repeating the title, in another order
        f"""<table><tr><td><input type="checkbox" id="a"><label for="a" style="{SR_ONLY}">
           Toggle Todo Walk the dog</label> Walk the dog</td></tr>
           <tr><td><input type="checkbox" id="b"><label for="b" style="{SR_ONLY}">
           Toggle Todo Buy milk</label> Buy milk</td></tr></table>""",
        # labelled by its own title
        """<ul><li><input type="checkbox" id="a"><label for="a">Walk the dog</label></li>
           <li><input type="checkbox" id="b"><label for="b">Buy milk</label></li></ul>""",
        # another wording of a row's checkbox
        """<ul><li><input type="checkbox" aria-label="Toggle the completion state of this todo">
           Walk the dog</li><li><input type="checkbox"
           aria-label="Toggle the completion state of this todo"> Buy milk</li></ul>""",
    ],
    ids=["unnamed", "sr-only-label", "own-title", "reworded"],
)
async def test_a_row_s_checkbox_is_found_by_its_row_whatever_it_is_called(
    tab: Tab, v2: str
) -> None:
    box = await row_box(tab, ROWS_V1)
    assert (box.name, box.row, box.row_peers) == ("Toggle Todo", "Buy milk", 1)
    row = await found_row(tab, box, v2)
    assert row is not None and "Buy milk" in row and "Walk" not in row


async def test_rows_in_open_shadow_roots_are_read_through(tab: Tab) -> None:
    shadow = """<todo-list></todo-list><script>
    customElements.define("todo-list", class extends HTMLElement { connectedCallback() {
      this.attachShadow({ mode: "open" }).innerHTML = ["Walk the dog", "Buy milk"].map((t) =>
        `<li><x-row><span>${t}</span></x-row></li>`).join(""); } });
    customElements.define("x-row", class extends HTMLElement { connectedCallback() {
      this.attachShadow({ mode: "open" }).innerHTML =
        '<input type="checkbox" aria-label="Toggle"> <slot></slot>'; } });
    </script>"""
    box = await row_box(tab, ROWS_V1)
    await tab.page.set_content(shadow)
    await tab.snapshot()
    located = await find(tab, box)
    assert located.found is not None and located.found.row == "Buy milk", located.reason


async def test_a_row_proves_only_its_one_checkbox(tab: Tab) -> None:
    """Where the row holds two boxes, or reads otherwise, an unnamed box is not taken."""
    box = await row_box(tab, ROWS_V1)
    two = """<ul><li><input type="checkbox"><input type="checkbox"> Buy milk</li>
             <li><input type="checkbox"><input type="checkbox"> Walk the dog</li></ul>"""
    assert await found_row(tab, box, two) is None
    other = """<ul><li><input type="checkbox"> Buy oat milk</li>
               <li><input type="checkbox"> Walk the dog</li></ul>"""
    assert await found_row(tab, box, other) is None
    # A button of the row is never taken for another whose name it lacks.
    await tab.page.set_content(ROWS_V1)
    delete = await tab.target(ref_of(await tab.snapshot(), "button", "Delete"))
    assert delete.identity is not None
    unnamed = """<ul><li><input type="checkbox"> Buy milk <button>✎</button></li>
                 <li><input type="checkbox"> Walk the dog <button>✎</button></li></ul>"""
    await tab.page.set_content(unnamed)
    assert not (await find(tab, delete.identity)).ok


async def test_a_renamed_field_is_proven_by_its_unique_placeholder_label_or_autocomplete(
    tab: Tab,
) -> None:
    await tab.page.set_content(
        '<input placeholder="What needs to be done?"> <input placeholder="Search">'
        '<label>Email <input autocomplete="email"></label>'
    )
    snap = await tab.snapshot()
    new = (await tab.target(ref_of(snap, "textbox", "What needs to be done?"))).identity
    email = (await tab.target(ref_of(snap, "textbox", "Email"))).identity
    assert new is not None and email is not None
    assert new.unique == ("placeholder",) and email.unique == ("label", "autocomplete")
    await tab.page.set_content(
        '<input placeholder="Search" aria-label="Search"><div><input aria-label="New Todo Input"'
        ' placeholder="What needs to be done?"></div><input aria-label="Your address"'
        ' autocomplete="email">'
    )
    for identity, attr in ((new, "placeholder"), (email, "autocomplete")):
        located = await find(tab, identity)
        assert located.strategy == "attribute", located.reason
        assert await located.element.evaluate(f"(e) => e.hasAttribute('{attr}')")  # type: ignore[union-attr]
    # Not unique now (two fields share it): no proof, and the renamed field is not taken.
    await tab.page.set_content(
        '<input aria-label="New Todo Input" placeholder="What needs to be done?">'
        '<input aria-label="Edit" placeholder="What needs to be done?">'
    )
    assert not (await find(tab, new)).ok


async def test_variants_that_point_at_different_elements_abstain(tab: Tab) -> None:
    await tab.page.set_content('<button id="a">Save</button><button id="b">Send</button>')
    snap = await tab.snapshot()
    save = (await tab.target(ref_of(snap, "button", "Save"))).identity
    send = (await tab.target(ref_of(snap, "button", "Send"))).identity
    assert save is not None and send is not None
    both = replace(save, variants=(send.plain(),))
    located = await find(tab, both)
    assert not located.ok and "variants point at different elements" in located.reason


async def identity_on(tab: Tab, html: str, role: str, name: str) -> ElementIdentity:
    await tab.page.set_content(html)
    target = await tab.target(ref_of(await tab.snapshot(), role, name))
    assert target.identity is not None
    return target.identity


async def found_on(tab: Tab, identity: ElementIdentity, html: str) -> Located:
    await tab.page.set_content(html)
    return await find(tab, identity)


async def test_the_page_s_only_field_is_proven_by_being_the_only_one(tab: Tab) -> None:
    field = await identity_on(
        tab, '<h1>todos</h1><input placeholder="What needs to be done?">',
        "textbox", "What needs to be done?",
    )  # fmt: skip
    assert "sole" in field.unique
    other = '<h2>Tasks</h2><input placeholder="Add a new todo" aria-label="Add todo">'
    located = await found_on(tab, field, other)
    assert located.ok and located.strategy == "sole_field", located.reason
    # Two fields now, or one that says it is something else: not taken.
    two = other + '<input aria-label="Search">'
    assert not (await found_on(tab, field, two)).ok
    assert not (await found_on(tab, field, '<input type="email" aria-label="Email">')).ok


FILTERS = ["All", "Active", "Completed"]


@pytest.mark.parametrize(
    "markup",
    [
        "".join(f"<button>{f}</button>" for f in FILTERS),
        "".join(f'<button role="tab">{f}</button>' for f in FILTERS),
        "".join(f'<label><input type="radio" name="f"> {f}</label>' for f in FILTERS),
        "".join(f'<button aria-pressed="false">{f}</button>' for f in FILTERS),
    ],
    ids=["buttons", "tabs", "radios", "pressed-buttons"],
)
async def test_a_filter_link_is_found_as_another_control_of_the_same_name(
    tab: Tab, markup: str
) -> None:
    links = "".join(f'<a href="#/{f.lower()}">{f}</a> ' for f in FILTERS)
    active = await identity_on(tab, f"<nav>{links}</nav>", "link", "Active")
    located = await found_on(tab, active, f"<nav>{markup}</nav>")
    assert located.ok and located.strategy in ("name", "similarity"), located.reason
    assert "Active" in await located.element.evaluate(
        "(e) => e.closest('label, button').textContent"
    )  # type: ignore[union-attr]
    # Another role is taken only where the name says the same.
    other = markup.replace("Active", "Archived")
    gone = await found_on(tab, active, f"<nav>{other}</nav>")
    assert not gone.ok, await html_of(gone)


async def test_a_toggle_button_and_a_checkbox_stand_for_each_other_in_their_row(
    tab: Tab,
) -> None:
    pressed = """<table><tr><td>Buy milk</td><td><button aria-pressed="false">Done</button>
      <button>Delete</button></td></tr><tr><td>Walk the dog</td><td>
      <button aria-pressed="false">Done</button><button>Delete</button></td></tr></table>"""
    done = await identity_on(tab, pressed, "button", "Done")
    assert done.kind == "toggle" and done.row == "Buy milk"
    located = await found_on(tab, done, ROWS_V1)
    assert located.ok and located.strategy == "row", located.reason
    row = await located.element.evaluate("(e) => e.closest('li').textContent")  # type: ignore[union-attr]
    assert "Buy milk" in row and "Walk" not in row


INVOICES = """<main><h1>Open invoices</h1><table>
<tr><td>INV-1041</td><td>Beta AG</td><td>2024-02-11</td><td>80.00 EUR</td>
  <td><button>Mark paid</button></td></tr>
<tr><td>INV-1042</td><td>Acme GmbH</td><td>2024-03-01</td><td>120.00 EUR</td>
  <td><button>Mark paid</button></td></tr>
<tr><td>INV-1043</td><td>Acme GmbH</td><td>2024-03-01</td><td>120.00 EUR</td>
  <td><button>Mark paid</button></td></tr>
</table></main>"""


async def test_a_row_gone_is_not_replaced_by_the_row_most_like_it(
    tab: Tab, fixture_url: str
) -> None:
    """INV-1042 was paid and left the list; INV-1043 has the same customer, date and
    amount (four of its five words): its "Mark paid" is not the recorded one, whatever
    strategy finds it (its place, its selector).  The row's number is what told it from
    that row: a row keeping it is the row, its amount changed or its place."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(INVOICES)
    recorded = await identity_of(tab, await tab.snapshot(), "button", "Mark paid", 1)
    assert "inv1042" in recorded.row_words
    await tab.page.evaluate("document.querySelectorAll('tr')[1].remove()")
    gone = await find(tab, recorded)
    assert not gone.ok and "another row" in gone.reason, gone.reason
    before = "<td>INV-1042</td><td>Acme GmbH</td><td>2024-03-01</td><td>120.00 EUR</td>"
    await tab.page.set_content(INVOICES.replace(before, before.replace("120.00", "125.00")))
    last = "document.querySelectorAll('tr')[2]"  # INV-1043 first now
    await tab.page.evaluate(f"document.querySelector('tbody').prepend({last})")
    kept = await find(tab, recorded)
    assert kept.ok and kept.element is not None, kept.reason
    row = await kept.element.evaluate("(b) => b.closest('tr').cells[0].textContent")
    assert row == "INV-1042"


def customers(*rows: tuple[int, str, str]) -> str:
    """A customer list whose each row's Delete posts to an address made of its record's
    number, with an id and a test id made of it too."""
    return "<main><h1>Customers</h1><table>" + "".join(
        f"<tr><td>{name}</td><td>{email}</td><td><form method=post "
        f'action="/customers/{pk}/delete"><button id="delete-{pk}" data-testid="delete-{pk}">'
        "Delete</button></form></td></tr>"
        for pk, name, email in rows
    ) + "</table></main>"  # fmt: skip


async def test_a_row_action_follows_its_record_not_the_number_it_had_where_it_was_recorded(
    tab: Tab, fixture_url: str
) -> None:
    """Recorded on one database, Acme Ltd is record 1; replayed on another, Globex is.
    Where the Delete posts to, its id and its test id all name record 1, and all point at
    Globex's Delete now: the row says which record the step acts on, so Acme Ltd's Delete
    is the one taken, and with Acme Ltd gone none is (it was taken, a "confident" heal
    that deleted Globex)."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(customers((1, "Acme Ltd", "a@acme.test"),
                                         (2, "Globex", "g@globex.test")))  # fmt: skip
    recorded = await identity_of(tab, await tab.snapshot(), "button", "Delete", 0)
    assert recorded.target.endswith("/customers/1/delete") and recorded.row_words
    await tab.page.set_content(customers((1, "Globex", "g@globex.test"),
                                         (2, "Acme Ltd", "a@acme.test")))  # fmt: skip
    found = await find(tab, recorded)
    assert found.ok and found.element is not None, found.reason
    assert "Acme Ltd" in await found.element.evaluate("(e) => e.closest('tr').textContent")
    await tab.page.set_content(customers((1, "Globex", "g@globex.test"),
                                         (3, "Initech", "i@initech.test")))  # fmt: skip
    gone = await find(tab, recorded)
    assert not gone.ok and "another row" in gone.reason, gone.reason


NOTE = (
    "Deliver to the loading bay behind the warehouse, ring twice, ask for the duty "
    "manager, never leave parcels outside, call ahead on public holidays, pallets "
    "go through gate B only, the forklift is shared with the bakery next door."
)


def long_notes(ids: list[int]) -> str:
    """Orders whose rows read alike for their first 200 characters and more: a long
    delivery note comes before the order's number."""
    return "<main><h1>Orders</h1><table>" + "".join(
        f"<tr><td>{NOTE}</td><td>Order {i}</td><td>Acme</td><td><button>Approve</button></td></tr>"
        for i in ids
    ) + "</table></main>"  # fmt: skip


async def test_rows_alike_for_what_an_identity_keeps_are_told_apart_by_their_whole_text(
    tab: Tab, fixture_url: str
) -> None:
    """An identity keeps 200 characters of its row; the rows' long note fills them.  Order
    1002 approved and gone, order 1003's Approve (where 1002's stood, found by its
    selector) is not taken; with the orders in another order, 1002's is."""
    assert len(NOTE) > 200
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(long_notes([1001, 1002, 1003]))
    recorded = await identity_of(tab, await tab.snapshot(), "button", "Approve", 1)
    assert "1002" in recorded.row_words, recorded.row_words
    assert "1002" not in recorded.row  # the identity keeps the note only
    await tab.page.set_content(long_notes([1001, 1003]))
    gone = await find(tab, recorded)
    assert not gone.ok, f"took {await html_of(gone)} by {gone.strategy}"
    await tab.page.set_content(long_notes([1003, 1001, 1002]))
    kept = await find(tab, recorded)
    assert kept.ok and kept.element is not None, kept.reason
    assert "Order 1002" in await kept.element.evaluate("(e) => e.closest('tr').textContent")


def order_cards(ids: list[int], note: str = "") -> str:
    """Orders as cards (plain divs, no rows) alike but for their number."""
    return "<main><h1>Orders</h1><div class=board>" + "".join(
        f"<div class=card><p>{note}</p><p>Acme GmbH, pending, 120.00 EUR</p><p>Order {i}</p>"
        "<button>Approve</button></div>"
        for i in ids
    ) + "</div></main>"  # fmt: skip


@pytest.mark.parametrize("note", ["", "Ring twice at the back door. " * 8], ids=["short", "long"])
async def test_a_card_gone_is_not_replaced_by_the_card_most_like_it(
    tab: Tab, fixture_url: str, note: str
) -> None:
    """Order 1002's card approved and gone, 1003's (alike but for its number, its Approve
    where 1002's stood) was taken by the selector: cards had no words that tell them apart.
    A card's number does now, read in its whole text (past the 200 characters kept); its
    other words do not (a form's "Profile" beside its "Billing" is a card too)."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(order_cards([1001, 1002, 1003], note))
    recorded = await identity_of(tab, await tab.snapshot(), "button", "Approve", 1)
    assert recorded.card and recorded.row_words == ("1002",), recorded
    await tab.page.set_content(order_cards([1001, 1003], note))
    gone = await find(tab, recorded)
    assert not gone.ok, f"took {await html_of(gone)} by {gone.strategy}"
    await tab.page.set_content(order_cards([1003, 1001, 1002], note))
    kept = await find(tab, recorded)
    assert kept.ok and kept.element is not None, kept.reason
    assert "Order 1002" in await kept.element.evaluate("(e) => e.parentElement.textContent")


CUSTOMERS = ["Juliet", "Acme", "Beta", "Acme", "Delta", "Echo", "Foxtrot", "Acme", "Hotel",
             "India"]  # fmt: skip


def order_list(ids: list[int]) -> str:
    """A change list: each row's box selects its order ("Order 3 Acme pending 13.00");
    order 33 reads as order 3 but for its number."""
    return "<main><h1>Orders</h1><form method=post action='/orders/'><table>" + "".join(
        f"<tr><td><input type=checkbox name=_selected_action value={i} aria-label='Select'></td>"
        f"<th><a href='/orders/{i}/'>Order {i}</a></th><td>{CUSTOMERS[i % 10]}</td>"
        f"<td>pending</td><td>{10 + i % 30}.00</td></tr>"
        for i in ids
    ) + "</table><button name=index value=0>Go</button></form></main>"  # fmt: skip


def order_lines(products: list[str], added: int = 0) -> str:
    """An inline formset: each line's fields as the app wrote them (form-<k>-product), and
    ``added`` lines a person added since, their fields still empty."""
    lines = [*products, *[""] * added]
    return "<main><h1>Change customer</h1><form method=post><table>" + "".join(
        f"<tr><td><input name=form-{k}-product id=id_form-{k}-product aria-label=Product "
        f'value="{p}"></td><td><input name=form-{k}-qty id=id_form-{k}-qty '
        f'aria-label=Quantity value="{len(p) if p else ""}"></td><td><input type=checkbox '
        f"name=form-{k}-DELETE id=id_form-{k}-DELETE aria-label=Delete></td></tr>"
        for k, p in enumerate(lines)
    ) + "</table><input type=submit value=Save></form></main>"  # fmt: skip


CONFIRM = """<main><h1>Are you sure?</h1><ul><li>Order 3</li></ul><form method=post
action='/orders/'><input type=hidden name=post value=yes>
<input type=submit value="Yes, I'm sure"> <a href='/orders/'>No, take me back</a></form></main>"""

PARTS = [f"Part {k}" for k in range(1, 41)]

# What was recorded (page, role, name, nth), the page another day, and what the element
# found then must be: None, none (the replay stops); else its row's first field's value.
# Found by a number that counts rows (form-2-*), by a row that says "13" of "Order 3 …
# 13.00", or by where a button of another name posts, it was another record's.
OTHER_RECORDS = {
    "order 3 on another page, order 33 here": (
        (order_list(list(range(1, 11))), "checkbox", "Select", 2),
        order_list(list(range(40, 20, -1))),
        None,
    ),
    "order 3 moved down the list": (
        (order_list(list(range(1, 11))), "checkbox", "Select", 2),
        order_list([33, *range(10, 0, -1)]),
        "3",
    ),
    "a line just added, another line since": (
        (order_lines(["Bolt", "Nut"], added=1), "textbox", "Product", 2),
        order_lines(["Bolt", "Nut", "Washer"], added=1),
        "",
    ),
    "a line's Delete, a line inserted before it": (
        (order_lines(PARTS), "checkbox", "Delete", 24),
        order_lines(["Part 0", *PARTS]),
        "Part 25",
    ),
    "a line's Delete, that line gone": (
        (order_lines(PARTS), "checkbox", "Delete", 24),
        order_lines([p for p in PARTS if p != "Part 25"]),
        None,
    ),
    "Yes, I'm sure, on the list whose Go posts to the same address": (
        (CONFIRM, "button", "Yes, I'm sure", 0),
        order_list([1, 2, 3]),
        None,
    ),
}


@pytest.mark.parametrize("case", list(OTHER_RECORDS))
async def test_an_element_of_another_record_is_never_taken(
    tab: Tab, fixture_url: str, case: str
) -> None:
    (before, role, name, nth), after, row = OTHER_RECORDS[case]
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(before)
    recorded = await identity_of(tab, await tab.snapshot(), role, name, nth)
    await tab.page.set_content(after)
    found = await find(tab, recorded)
    if row is None:
        assert not found.ok, f"took {await html_of(found)} by {found.strategy}"
        return
    assert found.ok, found.reason
    read = "(e) => e.closest('tr').querySelector('input').getAttribute('value') || ''"
    assert await found.element.evaluate(read) == row  # type: ignore[union-attr]
