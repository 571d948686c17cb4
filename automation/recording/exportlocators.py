"""How an exported step finds its element: a Playwright locator for its identity, as
replay finds it (:mod:`automation.recording.replay`): by role and name, told apart from
the alike by its row, its card or the title it sits under, else by its test id, selector,
placeholder or text; one alternative per identity it was known by.  Part of
:func:`automation.recording.export.to_pytest`; each value written as a literal
(:mod:`automation.recording.exportliterals`), a role outside the list refused.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any
from urllib.parse import urlsplit

from automation.browser.identity import ElementIdentity
from automation.browser.textmatch import has_glyphs
from automation.errors import ActionInvalid, ScenarioInvalid
from automation.recording.exportliterals import holds_param, params_shown
from automation.recording.exportliterals import ident as _ident
from automation.recording.exportliterals import number_pattern as _number_pattern
from automation.recording.exportliterals import quote as _quote
from automation.recording.exportliterals import row_pattern as _row_pattern
from automation.recording.exportliterals import text as _text
from automation.recording.roles import check_role, is_aria_role
from automation.recording.scenario import BOX_ROLES
from automation.wording import element_words

__all__ = ["element", "frame_path", "known_role", "locator"]


def element(identity: ElementIdentity, params: dict[str, dict[str, Any]]) -> tuple[list[str], str]:
    """The element's locator, one alternative per identity it was known by (joined with
    ``.or_()``), and comments on the releases where it won't find it."""
    main = identity.plain()
    # (Under the title recorded: for one identity.  Known by several, in releases whose
    # titles differ, it is found by any, as its variants were confirmed.)
    placed = not identity.variants
    found = [locator(main, params, placed=placed)]
    notes = []
    for variant in identity.variants:
        known_role(variant.role)  # a role that would be code refuses the export
        where = f"it was {element_words(variant, quote=_quote)} (an earlier release)"
        if variant.frame_url != main.frame_url:
            notes.append(f"# where {where} in another frame, this line won't find it")
            continue
        try:
            renamed = _renamed_link(main, variant) and not _told_by_value(main, params)
            alternative = _where_it_leads(main, params) if renamed else None
            alternative = alternative or locator(variant, params, placed=False)
        except ScenarioInvalid:
            notes.append(f"# where {where}, this line won't find it: nothing to find it by")
            continue
        if alternative not in found:
            found.append(alternative)
    return notes, found[0] + "".join(f".or_({other})" for other in found[1:])


def _renamed_link(main: ElementIdentity, variant: ElementIdentity) -> bool:
    """Whether ``variant`` is the link ``main`` is, known by another name: it leads to the
    same address.  A name a record's data made ("Edit Acme", healed to "Edit Alpha" once
    the record was renamed) may be another record's another day."""
    same = main.role == variant.role == "link" and main.target == variant.target != ""
    return same and main.name != variant.name


def _told_by_value(identity: ElementIdentity, params: dict[str, dict[str, Any]]) -> bool:
    """Whether a parameter's value tells which record the element acts on (its row, card,
    section or name holds one): where it led is the record it was recorded (or healed)
    on, another value's, never a way to find it."""
    texts = (identity.name, identity.row, identity.card, identity.section)
    return any(holds_param(text, params) for text in texts)


def _where_it_leads(identity: ElementIdentity, params: dict[str, dict[str, Any]]) -> str | None:
    """A locator of the links leading where ``identity`` led (the end of their ``href``:
    its path and query, whatever the site's address), as replay's ``target`` finds it
    (:mod:`automation.browser.identity`); None where the address is none or holds a
    parameter."""
    try:
        parts = urlsplit(identity.target)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or holds_param(identity.target, params):
        return None
    end = parts.path + (f"?{parts.query}" if parts.query else "")
    if not end.strip("/"):
        return None  # (every link to the site's root would match)
    quoted = end.replace("\\", "\\\\").replace('"', '\\"')
    selector = 'a[href$="' + quoted + '"]'
    return f"{_scope(identity)}.locator({_text(selector, 'target')})"


def _scope(identity: ElementIdentity) -> str:
    """Where the element is looked for: the page, or the frame it was in."""
    if identity.frame_url:
        return f"frame_of(page, {_text(frame_path(identity.frame_url), 'frame_url')})"
    return "page"


def frame_path(frame_url: str) -> str:
    try:
        return urlsplit(frame_url).path
    except ValueError:
        raise ScenarioInvalid(f"frame_url {frame_url[:80]!r} is no address") from None


# Fields one types into or chooses in (identity.js's kinds "text" and "list"): an older
# identity has no kind.
_FIELD_ROLES = frozenset({"textbox", "searchbox", "combobox", "spinbutton", "listbox"})


def _sole_row(identity: ElementIdentity) -> list[str]:
    """The words of its row, when it is a button, a box or a choice in a row that was its
    list's only one at recording (its own name's aside): its row is looked for by them,
    as replay takes no row of half of them or fewer ("More actions" of Acme's row, only
    Globex's listed then).  [] for any other."""
    acts = identity.kind in ("press", "toggle", "choice")
    if not acts or identity.row_words or identity.name_count > 1:
        return []
    return identity.row_beside_name()[:12]


def locator(
    identity: ElementIdentity, params: dict[str, dict[str, Any]], *, placed: bool = True
) -> str:
    scope = _scope(identity)
    role = known_role(identity.role)
    name = _named(identity.name, params, "name", identity.name_own)
    # Playwright finds only ARIA roles; a clickable <div> or a frame goes by what else it has.
    if is_aria_role(role) and (identity.name or identity.row):
        by_role = (
            f"get_by_role({_text(role, 'role')}, name={name}, exact=True)"
            if identity.name
            else f"get_by_role({_text(role, 'role')})"
        )
        if identity.tag == "summary" and role == "button" and identity.name:
            # A details' summary: a button to replay, no role to Playwright's engine.
            by_role = f"locator(DISCLOSURE).filter(has_text=whole({name}))"
        elif role == "textbox" and identity.tag not in ("", "input", "textarea") and identity.name:
            # An element typed into by its contenteditable, which may have no role to
            # Playwright's engine (a bare one): found by the label that names it too.
            bare = f"{scope}.get_by_label({name}, exact=True).and_({scope}.locator(EDITABLE))"
            by_role = f"{by_role}.or_({bare})"
        if identity.column:  # told from its row's others of its name by its column's header
            cells = _text("tabwright-column=" + json.dumps(identity.column), "column")
            by_role = f"locator({cells}).{by_role}"
        # Its row's first words (its fields' values as the app wrote them), and as
        # replay tells rows apart: the numbers that told its row from the one most like
        # it, whole (past the row's first words it keeps).
        patterns = [_row_pattern(identity.row, params, identity.name)] + [
            _number_pattern(w) for w in identity.row_words if re.fullmatch(r"[0-9]+", w)
        ] if identity.row else []  # fmt: skip
        sole = _sole_row(identity)
        if sole and not holds_param(identity.row, params) and not identity.shows.get("row"):
            recorded = ", ".join(_text(word, "row") for word in sole)
            return f"rows_holding_most({scope}, {recorded}).{by_role}"
        if identity.row and (identity.name_count != 1 or not identity.name
                             or holds_param(identity.row, params)
                             or identity.shows.get("row")
                             or role in ("cell", "gridcell")):  # fmt: skip
            # A parameter's row is looked for even where its name was the page's only
            # one: the row shows the value given whole, or the step acts on another
            # record; so is one that showed a value the scenario types (its search's:
            # params.typed_shown); so is a cell's, named by the record's value it holds.
            found = f"rows_showing({scope}, {', '.join(patterns)}).{by_role}"
            if identity.section and not identity.row_words and identity.name_count != 1:
                # Rows alike word for word: told apart by the title each sits under (a
                # grouped table's header row, its caption), as replay tells them.
                section = _as_recorded(identity.section, params, "section")
                return f"in_section({found}, {section}, otherwise={found})"
            return found
        if identity.name and identity.name_count <= 1:
            found = f"{scope}.{by_role}"
            if identity.row:  # several now (another row's cell the same): its row's
                found = f"one_of({found}, rows_showing({scope}, {', '.join(patterns)}).{by_role})"
            fills = identity.kind in ("text", "list") or role in _FIELD_ROLES
            if not identity.row and not fills and holds_param(identity.card, params):
                # Its card holds a parameter: where the card is one record's tile, the
                # tile of the value given (a search left one), as replay tells it.
                card = _as_recorded(identity.card, params, "card")
                found = f"card_showing({found}, {card})"
            if holds_param(identity.section, params):
                # The title it sits under holds a parameter: one record's page or part
                # (the heading over the Delete a search opened), shown with the value.
                section = _as_recorded(identity.section, params, "section")
                found = f"section_showing({found}, {section})"
            elif placed and identity.section and not identity.row and _placed(identity):
                # Under the title it was recorded under, as replay holds it (a field's
                # while one of its name sits under that title; a day's always):
                # the same name under another is another element, but for one its id,
                # name or test id still proves.
                section = _ident(identity.section, params, "section")
                proven = {"id": identity.id, "name": identity.name_attr, **identity.test_ids}
                kept = ", ".join(
                    f"{_text(k, 'test id')}: {_text(v, 'id')}" for k, v in proven.items() if v
                )
                twins = "None" if identity.name.strip().isdigit() else (
                    f"{scope}.get_by_role({_text(role, 'role')}, name={name}, exact=True, "
                    "include_hidden=True)"
                )  # fmt: skip
                found = f"under_section({found}, {section}, {{{kept}}}, {twins})"
            return found
        if identity.name and identity.card and not identity.row_peers:
            # One of several alike, each in a card (tile) of its own: the one in the card
            # that reads as its card did, as replay tells them apart (never by where it
            # stood: a tile added before it moves it), a parameter's value in it whole.
            card = _as_recorded(identity.card, params, "card")
            if identity.section:  # (cards alike are told apart by their titles)
                card += f", section={_ident(identity.section, params, 'section')}"
            return f"in_card({scope}.{by_role}, {card})"
        if identity.name and identity.row_peers and not identity.row:
            # One of several alike in rows, its own reading as nothing (a line just added):
            # its id, name attribute or path numbers rows (form-2-qty), and another day
            # finds another row by it.  Strict: several such fail rather than pick one.
            return f"{scope}.{by_role}"
        if identity.name and identity.section and not identity.card:
            # One of several alike, in no row or card of its own: the one under the title
            # that reads as its section did, as replay tells them apart, a parameter's
            # value in it whole (where every one reads so, what else it has).
            section = _as_recorded(identity.section, params, "section")
            otherwise = _plain_locator(identity, params, scope, role, name)
            return f"in_section({scope}.{by_role}, {section}, otherwise={otherwise})"
    return _plain_locator(identity, params, scope, role, name)


def _placed(identity: ElementIdentity) -> bool:
    """Whether replay holds the element under the title it was recorded under
    (identity_compare.js): a field, a box or a choice (not a button or a link: its name
    says what it does, wherever it moved), or one named by a number alone (a day, a
    page: the number says where, not which)."""
    if identity.name.strip().isdigit():
        return True
    if identity.kind:
        return identity.kind in ("text", "toggle", "choice", "list")
    return identity.role in _FIELD_ROLES | BOX_ROLES | {"option"}  # (taken before kinds)


def _as_recorded(shown: str, params: dict[str, dict[str, Any]], what: str) -> str:
    """A card's or section's text as the exported helpers take it: the recorded text
    (its parameters' values in it), then each of those values."""
    return ", ".join([_ident(shown, params, what), *params_shown(shown, params)])


def _plain_locator(
    identity: ElementIdentity, params: dict[str, dict[str, Any]], scope: str, role: str, name: str
) -> str:
    """A locator for ``identity`` by its test id, selector, placeholder, role and name,
    or text: what is left where its role and name alone, its row or card don't find it."""
    if "data-testid" in identity.test_ids:
        test_id = _text(identity.test_ids["data-testid"], "test id")
        return f"{scope}.get_by_test_id({test_id})"
    if identity.selectors:
        return f"{scope}.locator({_text(identity.selectors[0], 'selector')})"
    if identity.placeholder:
        placeholder = _named(identity.placeholder, {}, "placeholder")
        return f"{scope}.get_by_placeholder({placeholder}, exact=True)"
    if is_aria_role(role):
        return f"{scope}.get_by_role({_text(role, 'role')}, name={name}, exact=True).first"
    if identity.name:
        return f"{scope}.get_by_text({name}, exact=True).first"
    if identity.text:  # (its selector spelled a value made a parameter since: dropped)
        return f"{scope}.get_by_text({_named(identity.text, params, 'text')}, exact=True).first"
    raise ScenarioInvalid("its element has nothing a Playwright locator can find it by")


def _named(shown: str, params: dict[str, dict[str, Any]], what: str, own: str = "") -> str:
    """A name, placeholder or text of an identity as a locator's argument: where a
    parameter's value is in it, or a letter with two Unicode forms, ``named(...)`` (the
    exported textmatch's) takes either form, as replay does; else the literal.  A name
    its element's own text stands in for Playwright (``own``, an element its
    aria-labelledby lists: "Tier Silver" where replay reads "Tier") is ``named(...,
    own=...)``, any text taken there: its value another day."""
    found = _ident(shown, params, what)
    if own:
        return f"named({found}, own={_text(own, 'name_own')})"
    either = unicodedata.normalize("NFC", shown) != unicodedata.normalize("NFD", shown)
    if either or has_glyphs(shown) or holds_param(shown, params):
        return f"named({found})"
    return found


def known_role(role: str) -> str:
    """A role from the list (ScenarioInvalid for anything else: it would be code)."""
    try:
        return check_role(role)
    except ActionInvalid as exc:
        raise ScenarioInvalid(exc.message, hint=exc.hint) from None
