"""A form the browser refuses to send (a required field empty, a number past its maximum, an
address that is none) stops the click or the Enter before anything leaves the page: the
page stays, the browser shows its bubble, and nothing tells a script that the form was not
sent.  The action fails with ``form_not_sent``, naming the field and the browser's words,
so an agent learns why and a replay (and its export, test_replay_form_not_sent) does not
pass a save that never happened.

The browser's own refusal is told by its two marks together: ``invalid`` events at the
form's fields and the focus moved to the first of them.  A page's script that only checks
(``checkValidity()`` as a field is left, a form with ``novalidate`` checked in its submit
handler) moves no focus, and a form sent all the same wrote something or went elsewhere:
none of those fails."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs

import pytest

from automation import Tab
from automation.errors import FormNotSent
from tests.bounds import room
from tests.net import QuietHandler, loopback_app
from tests.refs import ref_of

FORM = """<!doctype html><title>New order</title><h1>New order</h1>
<form method="post" action="/orders/"{novalidate}>
<label>Customer <input name="customer" required></label>
<label>Quantity <input name="qty" type="number" max="10"></label>
<label>Email <input name="email" type="email"></label>
<button{button}>Place order</button> <button type="button" id="more">More options</button>
</form><p id="said"></p>{script}"""
# A page that checks a field as it is left (no bubble, no focus moved).
CHECKS_ON_BLUR = """<script>for (const f of document.querySelectorAll("input"))
  f.addEventListener("blur", () => f.checkValidity());
document.getElementById("more").onclick = () => { said.textContent = "More options shown"; };
</script>"""
# A form whose script sends it (by fetch) and says so on the page.
SENT_BY_FETCH = """<script>document.querySelector("form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const body = new URLSearchParams(new FormData(e.target));
  const r = await fetch("/orders/", {method: "POST", body});
  said.textContent = r.ok ? "Order placed" : "Refused";
});</script>"""
# A form with novalidate checked by its own script, which shows why (Bootstrap's way).
CHECKED_BY_SCRIPT = """<script>document.querySelector("form").addEventListener("submit", (e) => {
  if (!e.target.checkValidity()) { e.preventDefault(); said.textContent = "Please fix the form"; }
});</script>"""
# A button of type button whose script asks the browser to say what is wrong.
REPORTS = """<script>const b = document.querySelector("button");
b.onclick = () => { if (b.form.reportValidity()) b.form.requestSubmit(); };</script>"""


class Orders:
    def __init__(self) -> None:
        self.placed: list[dict[str, list[str]]] = []
        self.novalidate, self.button, self.script = "", "", ""


@pytest.fixture
def orders() -> Iterator[tuple[Orders, str]]:
    state = Orders()

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            html = FORM.format(novalidate=state.novalidate, button=state.button,
                               script=state.script)  # fmt: skip
            self.send(200, html.encode())

        def do_POST(self) -> None:
            state.placed.append(parse_qs(self.rfile.read(int(self.headers["Content-Length"]))
                                         .decode()))  # fmt: skip
            self.send(303, Location=f"/orders/{len(state.placed)}")

    with loopback_app(Handler) as url:
        yield state, f"{url}/orders/new"


async def _fill(tab: Tab, label: str, value: str, *, submit: bool = False) -> None:
    ref = ref_of(await tab.snapshot(), "spinbutton" if label == "Quantity" else "textbox", label)
    await tab.fill(ref, value, submit=submit, budget=room())


async def _place(tab: Tab) -> str:
    return await tab.click(ref_of(await tab.snapshot(), "button", "Place order"), budget=room())


async def test_a_required_field_left_empty_fails_the_click(
    tab: Tab, orders: tuple[Orders, str]
) -> None:
    state, url = orders
    await tab.navigate(url)
    with pytest.raises(FormNotSent) as caught:
        await _place(tab)
    assert caught.value.code == "form_not_sent"
    [(name, said)] = caught.value.fields
    assert name == "Customer" and said, caught.value.fields
    assert "the browser refused to send the form" in str(caught.value)
    assert said in str(caught.value) and state.placed == [] and tab.url == url
    # Filled as it asks, the same click sends it.
    await _fill(tab, "Customer", "Acme")
    await _place(tab)
    assert [order["customer"] for order in state.placed] == [["Acme"]]
    assert tab.url.endswith("/orders/1")


@pytest.mark.parametrize(("label", "value"), [("Quantity", "11"), ("Email", "not an address")])
async def test_a_value_the_field_does_not_take_fails_the_click_and_the_enter(
    tab: Tab, orders: tuple[Orders, str], label: str, value: str
) -> None:
    state, url = orders
    await tab.navigate(url)
    await _fill(tab, "Customer", "Acme")
    await _fill(tab, label, value)
    with pytest.raises(FormNotSent) as caught:
        await _place(tab)
    assert [name for name, _ in caught.value.fields] == [label]
    with pytest.raises(FormNotSent):  # Enter in the field sends the form: refused alike
        await _fill(tab, label, value, submit=True)
    with pytest.raises(FormNotSent):
        await tab.press_key("Enter", budget=room())
    assert state.placed == [] and tab.url == url


@pytest.mark.parametrize(
    ("novalidate", "script", "placed"),
    [
        ("", CHECKS_ON_BLUR, None),  # a script checks a field as it is left: the click is
        # another's (the browser then refuses the form itself)
        (" novalidate", SENT_BY_FETCH, 1),  # the browser does not check: the app is sent it
        (" novalidate", CHECKED_BY_SCRIPT, 0),  # the app checks and says so itself
    ],
    ids=["checked on blur", "novalidate, sent", "novalidate, the app says why"],
)
async def test_a_script_that_only_checks_fails_nothing(
    tab: Tab, orders: tuple[Orders, str], novalidate: str, script: str, placed: int | None
) -> None:
    state, url = orders
    state.novalidate, state.script = novalidate, script
    await tab.navigate(url)
    await _fill(tab, "Quantity", "11")  # (Customer, required, left empty)
    if script == CHECKS_ON_BLUR:
        await tab.click(ref_of(await tab.snapshot(), "button", "More options"), budget=room())
        assert await tab.page.text_content("#said") == "More options shown"
        with pytest.raises(FormNotSent):
            await _place(tab)
        assert state.placed == []
        return
    await _place(tab)
    assert len(state.placed) == placed


async def test_a_script_asking_the_browser_to_say_why_fails_the_click(
    tab: Tab, orders: tuple[Orders, str]
) -> None:
    """A button of type button whose script calls reportValidity(): the browser shows its
    bubble and moves the focus, as for its own check."""
    state, url = orders
    state.button, state.script = ' type="button"', REPORTS
    await tab.navigate(url)
    with pytest.raises(FormNotSent) as caught:
        await _place(tab)
    assert [name for name, _ in caught.value.fields] == ["Customer"]
    await _fill(tab, "Customer", "Acme")
    await _place(tab)
    assert len(state.placed) == 1
