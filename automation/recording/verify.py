"""``verify``: a check of the page now, recorded as the ``expect`` step a replay must pass.

The same checks as a scenario's outcome checks (:mod:`automation.recording.expect`): page
checks (``text_visible``, ``text_hidden``, ``rows``, ``url``) and, with a ref, element
checks (``visible``, ``checked``, ``unchecked``, ``value``, ``items``).  The check reads
the page until it holds or its budget ends, as a replay does; a session saved as a
scenario keeps each passed check where it was made.
"""

from __future__ import annotations

from typing import Any

from automation.actionspec import ActionSpec, Param, optional
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import ActionInvalid, CheckFailed, ScenarioInvalid
from automation.recording import expect

__all__ = ["VERIFY_ACTIONS", "check_args"]


def check_args(args: dict[str, Any]) -> dict[str, Any]:
    """The expect check a verify call asks for; ActionInvalid saying what is wrong."""
    check = {k: v for k, v in args.items() if k not in ("ref", "timeout_ms")}
    try:
        return expect.validate(check, has_element=bool(args.get("ref")))
    except ScenarioInvalid as exc:
        raise ActionInvalid(
            "verify: " + exc.message.removeprefix("step 0: "),
            hint="page checks: text_visible, text_hidden, rows, url; with a ref: "
            "visible, checked, unchecked, value, items",
        ) from None


async def _verify(tab: Tab, args: dict[str, Any], budget: Budget) -> str:
    check = check_args(args)
    identity = None
    if args.get("ref"):
        identity = (await tab.target(args["ref"], budget=budget)).identity
        if identity is None:
            raise ActionInvalid(f"verify: the element of {args['ref']} could not be identified")
    try:
        return await expect.check(tab, check, identity, budget=budget)
    except CheckFailed as exc:  # said of a replay's check; here the page is the session's
        raise CheckFailed(
            exc.message, hint="the page does not show it now: act on it, or verify again later"
        ) from None


VERIFY_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec(
        "verify",
        "check the page, recorded as a check the replay must pass: kind text_visible|"
        "text_hidden (text), rows (text, count), url (url); with ref: visible, checked, "
        "unchecked, value (value), items (items: its entries in order; among_others)",
        (
            Param("kind", str, "the check"),
            optional("ref", str, "the element, for element checks"),
            optional("text", str, "text_visible, text_hidden, rows"),
            optional("count", int, "rows: how many rows show text"),
            optional("url", str, "url: part of the address"),
            optional("value", str, "value: the field's value"),
            optional("items", list, "items: the list's entries, in order"),
            optional("among_others", bool, "items: each an entry, other entries between"),
        ),
        _verify,
        targets_ref=True,
        check=check_args,
        for_agent=False,
        records_as="expect",
    ),
)
