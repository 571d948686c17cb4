"""Whether a page shows a sign-in form, in a real browser, on a corpus of small pages
(fixtures/signin/ and the demo's sign-up form): sign-ins and a one-time code step are;
sign-ups, a change of password and a page with no password shown are not."""

from __future__ import annotations

from automation.browser.signin import SignInForm, sign_in_form
from automation.browser.tab import Tab
from tests.bounds import room

CORPUS = {
    "signin/login.html": (True, "a sign-in form: a user name and a password field"),
    "signin/email-login.html": (True, "a sign-in form: a user name and a password field"),
    "signin/unlabeled-login.html": (True, "a sign-in form: a user name and a password field"),
    "signin/tenant-login.html": (True, "a sign-in form: a user name and a password field"),
    "signin/shadow-login.html": (True, "a sign-in form: a user name and a password field"),
    "backoffice/login.html": (True, "a sign-in form: a user name and a password field"),
    "signin/totp.html": (True, "a one-time code field"),
    "backoffice/otp.html": (True, "a one-time code field"),
    "signin/signup-confirm.html": (
        False, "not a sign-in form: 2 password fields: a sign-up or a change of password"),
    "signin/signup-new-password.html": (
        False, "not a sign-in form: a new password field (autocomplete=new-password)"),
    "signin/signup-short.html": (False, 'not a sign-in form: its button says "Sign up"'),
    "demo/form.html": (
        False, "not a sign-in form: more fields beside the password than a user name and one more"),
    "signin/change-password.html": (
        False, "not a sign-in form: 3 password fields: a sign-up or a change of password"),
    "signin/search.html": (False, "no visible password or one-time code field"),
}  # fmt: skip


async def test_the_sign_in_judgement_on_each_page_of_the_corpus(tab: Tab, fixture_url: str) -> None:
    judged = {}
    for page in CORPUS:
        await tab.navigate(f"{fixture_url}/{page}")
        found = await sign_in_form(tab.page, room())
        judged[page] = (found.shown, found.why)
    assert judged == CORPUS

    # What shows counts: the dialog's sign-in form once it opens; a sign-up whose
    # confirmation field is hidden is still a sign-up, by its button.
    await tab.navigate(f"{fixture_url}/signin/search.html")
    await tab.page.evaluate("document.getElementById('login').showModal()")
    assert (await sign_in_form(tab.page, room())).shown
    await tab.navigate(f"{fixture_url}/signin/signup-confirm.html")
    await tab.page.evaluate("document.getElementById('pw2').hidden = true")
    found = await sign_in_form(tab.page, room())
    assert found == SignInForm(False, 'not a sign-in form: its button says "Create account"')
