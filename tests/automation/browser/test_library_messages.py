"""Messages as the common UI libraries draw them, read as a person reads them: an error
the page says (a ``no_error`` check fails on it; a save answered on the same page with it
was refused), a message that says it went through or informs (no error), and a status a
row wears (a badge, a tag, a chip: no error, whatever its colour).  Each library names a
message's kind its own way: a class word ("ant-alert-success", "el-message--error"), a
camelCase one ("MuiAlert-standardSuccess"), a data attribute (Chakra's ``data-status``),
two words together (Semantic UI's "ui negative message").  The markup is each library's
as it renders, reduced to what names the kind."""

from __future__ import annotations

import pytest

from automation import Tab
from automation.browser.seen import errors_shown
from automation.recording import expect
from tests.bounds import room

SAID = "Stock changed meanwhile"  # words that name no refusal: the markup must
ERRORS = {
    "material ui alert": f'<div role=alert class="MuiAlert-root MuiAlert-colorError '
    f'MuiAlert-standardError"><div class=MuiAlert-message>{SAID}</div></div>',
    "material ui helper text": f'<p class="MuiFormHelperText-root Mui-error">{SAID}</p>',
    "ant design alert": f'<div role=alert class="ant-alert ant-alert-error">{SAID}</div>',
    "ant design form item": f'<div class="ant-form-item-explain-error">{SAID}</div>',
    "chakra alert": f'<div role=alert data-status=error class="chakra-alert">{SAID}</div>',
    "semantic ui message": f'<div class="ui negative message"><p>{SAID}</p></div>',
    "element plus message": f'<div role=alert class="el-message el-message--error">'
    f"<p class=el-message__content>{SAID}</p></div>",
    "element plus form item": f'<div class="el-form-item__error">{SAID}</div>',
    "vuetify alert": f'<div role=alert class="v-alert bg-error">{SAID}</div>',
    "carbon notification": f'<div role=status class="cds--inline-notification '
    f'cds--inline-notification--error">{SAID}</div>',
    "blueprint callout": f'<div class="bp5-callout bp5-intent-danger">{SAID}</div>',
    "bulma help": f'<p class="help is-danger">{SAID}</p>',
    "primereact message": f'<small class="p-error">{SAID}</small>',
    "mantine input error": f'<p class="mantine-InputWrapper-error">{SAID}</p>',
    "notistack snackbar": f'<div role=alert class="notistack-MuiContent '
    f'notistack-MuiContent-error">{SAID}</div>',
}
FINE = "Your changes are live"  # words that name no success either
NOT_ERRORS = {
    "material ui success": f'<div role=alert class="MuiAlert-root MuiAlert-colorSuccess '
    f'MuiAlert-standardSuccess">{FINE}</div>',
    "material ui info": f'<div role=alert class="MuiAlert-root MuiAlert-standardInfo">{FINE}</div>',
    "ant design success": f'<div role=alert class="ant-alert ant-alert-success">{FINE}</div>',
    "chakra success": f'<div role=alert data-status=success class="chakra-alert">{FINE}</div>',
    "chakra info": f'<div role=alert data-status=info class="chakra-alert">{FINE}</div>',
    "semantic ui positive": f'<div class="ui positive message">{FINE}</div>',
    "element plus success": f'<div role=alert class="el-message el-message--success">{FINE}</div>',
    "vuetify success": f'<div role=alert class="v-alert bg-success">{FINE}</div>',
    "bootstrap toast": f'<div role=alert class="toast text-bg-success">{FINE}</div>',
    "notistack success": f'<div role=alert class="notistack-MuiContent '
    f'notistack-MuiContent-success">{FINE}</div>',
    "a bare alert saying it saved": "<p role=alert>Changes saved</p>",
    # Statuses a row wears.
    "material ui chip": '<div class="MuiChip-root MuiChip-colorError">Overdue</div>',
    "ant design tag": '<span class="ant-tag ant-tag-error">Overdue</span>',
    "element plus tag": '<span class="el-tag el-tag--danger">Overdue</span>',
    "vuetify chip": '<span class="v-chip text-error">Overdue</span>',
    "primereact tag": '<span class="p-tag p-tag-danger">Overdue</span>',
    "blueprint tag": '<span class="bp5-tag bp5-intent-danger">Overdue</span>',
    "carbon tag": '<div class="cds--tag cds--tag--red">Overdue</div>',
    "bootstrap badge": '<span class="badge text-bg-danger">Overdue</span>',
}


def page(markup: str) -> str:
    """``markup`` in a list of orders, beside a form it may speak of."""
    return (
        "<main><h1>Orders</h1><form><label>Name <input name=name></label></form>"
        f"<table><tr><td>INV-1</td><td>{markup}</td></tr></table></main>"
    )


@pytest.mark.parametrize("markup", ERRORS.values(), ids=ERRORS.keys())
async def test_an_error_a_library_names_is_one(tab: Tab, markup: str) -> None:
    """A no_error check fails on it, and it is among the errors its markup names (a save
    answered on the same page with it was refused there)."""
    await tab.page.set_content(page(markup))
    held, said = await expect._once(tab, {"kind": "no_error"}, None, room())
    assert not held and SAID in said, said
    assert any(SAID in error for error in await errors_shown(tab, room(), named=True))


@pytest.mark.parametrize("markup", NOT_ERRORS.values(), ids=NOT_ERRORS.keys())
async def test_a_success_a_notice_or_a_status_a_library_names_is_no_error(
    tab: Tab, markup: str
) -> None:
    """A no_error check holds beside it, and it is no error its markup names."""
    await tab.page.set_content(page(markup))
    assert await expect._once(tab, {"kind": "no_error"}, None, room()) == (True, "")
    assert await errors_shown(tab, room(), named=True) == []


# What a bare alert (role=alert, its markup naming nothing) or a dialog says: (its markup,
# the words it is read by, whether a no_error check fails on it, whether it is among the
# errors its markup or words name: a save answered so on the same page was refused).
WHY = "Couldn't save your change"
SAYS = {
    "saved": ("<p role=alert>Changes saved</p>", "", False, False),
    "queued, with a must": ("<p role=alert>Invitation queued. ada@example.org must accept it "
                            "within 7 days.</p>", "", False, False),
    "nothing saved": ("<p role=alert>Nothing was saved</p>", "Nothing was saved", True, False),
    "could not be placed": ("<p role=alert>The order could not be placed</p>",
                            "could not be placed", True, True),
    "required": ("<p role=alert>Email is required</p>", "Email is required", True, True),
    "not all saved": ("<p role=alert>Not all your changes were saved: the email is "
                      "invalid</p>", "Not all your changes", True, True),
    "an alertdialog saying why": (f"<div role=alertdialog aria-modal=true>{WHY}: the price "
                                  "is below cost <button>OK</button></div>", WHY, True, True),
    "a dialog saying why": (f"<dialog open>{WHY}: the price is below cost <button>OK</button>"
                            "</dialog>", WHY, True, True),
    "a modal div saying why": ('<div role=dialog aria-modal=true class="modal show" '
                               f'style="display:block">{WHY} <button>OK</button></div>',
                               WHY, True, True),
    "a dialog holding a form": ("<dialog open><form><label>Name (required) <input name=n>"
                                "</label> <button>Save</button></form></dialog>", "", False,
                                False),
    "a dialog saying it saved": ("<dialog open>Order saved <button>OK</button></dialog>", "",
                                 False, False),
    "a cookie banner": ("<div role=dialog>We use cookies. Strictly necessary cookies are "
                        "required for the site to work and cannot be switched off. "
                        + "Others measure how the site is used. " * 8
                        + "<button>Accept</button></div>", "", False, False),
    "a closed dialog saying why": (f"<dialog>{WHY}</dialog>", "", False, False),
}  # fmt: skip
# A refusal said in everyday words, by a bare alert, a status or a flash box: each an
# error its words name (a save answered so on the same page was refused).  Before, only
# "required", "failed", "could not"... were read so, and the save passed.
REFUSALS = [
    "Something went wrong. Please try again.",
    "Oops! We couldn\u2019t reach the server",
    "Sorry, that slot is no longer available",
    "There was a problem saving your changes",
    "You don't have permission to change prices",
    "You are not authorized to edit this invoice",
    "Forbidden",
    "Not permitted while the period is closed",
    "Your session has expired",
    "Insufficient stock for 12 units",
    "The quantity exceeds what is in stock",
    "Customer not found",
    "The passwords don\u2019t match",
    "Update unsuccessful",
]
# What a save, a lock, a rejection says when it went through: no error its words name
# (a no_error check still fails on a bare alert that says no success, as before).
WENT = {
    "Changes saved": False,
    "User ann locked": True,
    "Application rejected": True,
    "Invitation declined": True,
    "Permissions updated": False,
    "Access granted to ada@example.org": False,
    "Ticket resolved: the problem is gone": False,
    "Saved. No conflicts with other bookings": True,
}
for said in REFUSALS:
    SAYS[f"alert: {said}"] = (f"<p role=alert>{said}</p>", said, True, True)
SAYS[f"status: {REFUSALS[0]}"] = (f"<p role=status>{REFUSALS[0]}</p>", REFUSALS[0], True, True)
SAYS[f"flash: {REFUSALS[4]}"] = (f"<div class=flash>{REFUSALS[4]}</div>", REFUSALS[4], True,
                                 True)  # fmt: skip
for said, error in WENT.items():
    SAYS[f"alert: {said}"] = (f"<p role=alert>{said}</p>", "", error, False)


@pytest.mark.parametrize(("markup", "words", "error", "named"), SAYS.values(), ids=SAYS.keys())
async def test_a_message_naming_nothing_is_read_by_its_words(
    tab: Tab, markup: str, words: str, error: bool, named: bool
) -> None:
    """A bare alert saying it went through is no error; one saying it did not, is.  An
    alertdialog is read as an alert; a dialog holding no field is an error where its few
    words say it refused (a refusal told in a modal: the save answered so passed)."""
    await tab.page.set_content(page(markup))
    held, said = await expect._once(tab, {"kind": "no_error"}, None, room())
    assert held is not error and (not error or words in said), said
    errors = await errors_shown(tab, room(), named=True)
    assert bool(errors) is named and all(words in e for e in errors), errors
