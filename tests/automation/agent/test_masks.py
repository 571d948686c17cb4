"""A password the model typed literally is masked also on a page slow to answer: whether
its field is a password field is the page's answer (its type, its marks), waited for as
the action waits, not a name guessed when a fixed time ran out.  A field named "PIN" was
stored in clear, in the model's reply and in the recorded form step, whenever the page
took more than 2 s to describe it (its script busy, a loaded machine)."""

from __future__ import annotations

import json

from automation import Tab
from automation.agent.masks import form_targets, hide_typed_passwords, masked
from automation.agent.parser import Action
from automation.secrets import MASK, Secrets
from tests.bounds import room
from tests.busypage import busy_once
from tests.refs import ref_of

PIN = "4711-typed-literally"


async def _form(tab: Tab, fixture_url: str) -> tuple[str, str]:
    await tab.navigate(f"{fixture_url}/demo/form.html", budget=room())
    await tab.page.set_content(
        "<form><label>Name <input id=name></label>"
        "<label>PIN <input id=pin type=password></label></form>"
    )
    snapshot = await tab.snapshot()
    return ref_of(snapshot, "textbox", "Name"), ref_of(snapshot, "textbox", "PIN")


async def test_a_reply_typing_into_a_busy_page_s_password_field_is_stored_masked(
    tab: Tab, fixture_url: str
) -> None:
    _, pin = await _form(tab, fixture_url)
    secrets = Secrets({})
    reply = f"<action>{json.dumps({'action': 'fill', 'ref': pin, 'value': PIN})}</action>"
    await tab.page.evaluate(busy_once(3_000))
    await hide_typed_passwords(tab, secrets, reply, room())
    assert PIN not in secrets.redact(reply)


async def test_a_form_filled_on_a_busy_page_records_its_password_masked(
    tab: Tab, fixture_url: str
) -> None:
    name, pin = await _form(tab, fixture_url)
    secrets = Secrets({})
    fields = [{"ref": pin, "value": PIN}, {"ref": name, "value": "Ada"}]
    await tab.page.evaluate(busy_once(3_000))
    shown, targets = await form_targets(
        tab, secrets, Action("fill_form", {"fields": fields}), room()
    )
    assert [field["value"] for field in shown["fields"]] == [MASK, "Ada"]
    # Each field's own step is recorded with its target: the password's masked there too.
    assert masked(secrets, "fill", {"value": PIN}, targets[0])["value"] == MASK
    assert masked(secrets, "fill", {"value": "Ada"}, targets[1])["value"] == "Ada"
