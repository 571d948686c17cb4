"""Parameters beyond the typed value: in element identities and in the checks that use it.

When a typed value becomes a parameter (``"Buy milk"`` -> ``${item}``), the steps after it
that depend on that value must follow, or a replay with another value looks for the row
"Buy milk" and checks that one row shows "Buy milk".  :func:`carry` writes the placeholder
into what a later step holds of the value:

- its element's identity: the texts that name or place it (:data:`IDENTITY_FIELDS`: its
  name, label, text, row, card, section), variants included, and where it leads (its
  ``target``: the "Pay" link of Bob's row led to ``?customer=Bob``), the value URL-encoded
  there; a stored selector that spells the value out is dropped (it would find the old
  row, and a value can't be put into a selector safely), the other ways to find the
  element stay;
- a check's texts and value (``rows``, ``text_visible``, ``value``, ``items``…) and what a
  ``wait_for`` waits for;
- the addresses a step ran at and led to (its ``url``, ``led_to``: a search for the value
  led to ``?q=Delta``), where the value stands URL-encoded as a form sends it
  (:func:`carry_url`); replay fills them with the value encoded so (:func:`fill_url`).

In addresses the value is looked for past the host (a value "shop" is no part of
``http://shop.test/``).

The value is matched whole (not inside a longer word) and only when it is at least
:data:`MIN_CARRIED_CHARS` long: "1" typed into a quantity is not carried into "1 item left".

An identity is read from a page, which may show a literal ``${…}``; so in identities only
the ``${name}`` of a parameter the scenario declares is a placeholder (:func:`used_in`,
:func:`fill`), anything else is text.  A secret is never carried: its value must not be
written anywhere.  :func:`unfill` puts the placeholders back into an identity replay found
with the values filled in, so a heal written back keeps the parameter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import quote, quote_plus

from automation.browser.address import address_holds  # (one rule, export and replay)
from automation.browser.identity import ElementIdentity
from automation.browser.seen import find_words, fold
from automation.recording.placeholders import PARAM

__all__ = [
    "CHECK_ARGS",
    "IDENTITY_FIELDS",
    "MIN_CARRIED_CHARS",
    "address_holds",
    "carry",
    "carry_args",
    "carry_url",
    "fill",
    "fill_query",
    "fill_url",
    "holds_address",
    "typed_shown",
    "unfill",
    "unfill_url",
    "used_in",
]

# The texts of an identity that may hold a typed value: what names the element, and what
# tells its row, card or section from the others.
IDENTITY_FIELDS = ("name", "name_base", "aria_label", "label", "text", "row", "card", "section")
# The args of a check, or of a wait, that hold a text the page shows.
CHECK_ARGS = {"expect": ("text", "value", "items"), "wait_for": ("text", "text_gone")}
MIN_CARRIED_CHARS = 3
# What a browser leaves as it is in the query and the path of an address it writes (the
# URL standard's query and path percent-encode sets, for http and https).
_QUERY_SAFE = "!$%&()*+,-./:;=?@[\\]^_`{|}~"
_PATH_SAFE = "!$%&'()*+,-./:;=@[\\]^_|~"
_ORIGIN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")  # scheme and host
_IN_QUERY = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)\}")  # not a $${…}


def token(name: str) -> str:
    return "${" + name + "}"


def used_in(identity: ElementIdentity | None, known: Collection[str]) -> set[str]:
    """The declared parameters (of ``known``) the identity's texts (and where it leads)
    name."""
    if identity is None:
        return set()
    found: set[str] = set()
    for each in identity.every():
        for name in (*IDENTITY_FIELDS, "target"):
            found.update(m.group(1) for m in PARAM.finditer(getattr(each, name)))
    return found & set(known)


def fill(identity: ElementIdentity, values: Mapping[str, str]) -> ElementIdentity:
    """The identity with each ``${name}`` of ``values`` replaced by its value (variants
    too), URL-encoded where it leads (:func:`fill_target`); other ``${…}`` texts stay as
    the page showed them.  What each text was given is kept in its ``shows``: the element
    found must show those values whole there (the row of "Ann Lee", not of "Ann Leeds"),
    however like the rest of the text is."""
    filled = _each(identity, lambda text: _filled(text, values),
                   lambda url: fill_target(url, values))  # fmt: skip

    def given(each: ElementIdentity, template: ElementIdentity) -> ElementIdentity:
        shows = {}
        for name in IDENTITY_FIELDS:
            texts = [values[m.group(1)] for m in PARAM.finditer(getattr(template, name))
                     if values.get(m.group(1))]  # fmt: skip
            if texts:
                shows[name] = tuple(dict.fromkeys(texts))
        return replace(each, shows=shows) if shows else each

    plain = given(filled.plain(), identity.plain())
    variants = tuple(given(v, t) for v, t in zip(filled.variants, identity.variants, strict=True))
    return replace(plain, variants=variants)


# The texts of an identity that say which record it acts on.
_RECORD_FIELDS = ("row", "card")


def typed_shown(identity: ElementIdentity, typed: Collection[str]) -> ElementIdentity:
    """The identity with each value of ``typed`` (what its scenario types, as it is: a
    search for "1003") that its row or card showed whole when recorded kept in its
    ``shows``, as a parameter's value is (:func:`fill`): the element found must show it
    there too.  A search that finds another record leaves that record's row, and its one
    Archive is not the one the scenario meant, however alone on the page it is."""

    def shown(each: ElementIdentity) -> ElementIdentity:
        shows = dict(each.shows)
        for name in _RECORD_FIELDS:
            text = fold(getattr(each, name))
            held = [value for value in typed if text and find_words(text, fold(value))]
            if held:
                shows[name] = tuple(dict.fromkeys([*shows.get(name, ()), *held]))
        return replace(each, shows=shows) if shows != each.shows else each

    if not typed:
        return identity
    return replace(shown(identity.plain()), variants=tuple(map(shown, identity.variants)))


def fill_target(url: str, values: Mapping[str, str]) -> str:
    """Where a link or a form leads (an identity's ``target``), each ``${name}`` of
    ``values`` replaced by its value URL-encoded as the page's own link to it is: in its
    path as a path segment (``Ada%20L``), past its ``?`` as a form sends it."""
    path, sep, rest = url.partition("?")
    segment = _encoded(PARAM, path, values, lambda value: quote(value, safe=""))
    return segment + sep + _encoded(PARAM, rest, values)


def unfill(
    stored: ElementIdentity | None, found: ElementIdentity, values: Mapping[str, str]
) -> ElementIdentity:
    """``found`` (the element as replay saw it, values filled in) with the placeholders
    of ``stored`` put back where their value still stands, so a heal written back
    keeps the parameter.  As :func:`carry` does, a selector that spells such a value out
    is dropped, and a row or card that holds its placeholder again keeps the words
    ``stored`` told it apart by (``found``'s were the value's).  A text whose value no
    longer stands in it stays as stored: written so, it would name this replay's record
    for every value (the section "Edit ${who}" healed to "Edit Cy O'Neil").  Nor does an
    element told by a value take where it led here, unless the address holds the value:
    it leads to this value's record (``/edit/7``), which says nothing of another's, and a
    batch's rows would each write their record's number in turn."""
    if stored is None:
        return found
    changes: dict[str, Any] = {}
    put_back: set[str] = set()
    for name in IDENTITY_FIELDS:
        template, now = getattr(stored.plain(), name), getattr(found, name)
        names = [m.group(1) for m in PARAM.finditer(template) if m.group(1) in values]
        if not names:
            continue
        put_back.update(param for param in names if values[param])
        if now == _filled(template, values):
            changes[name] = template  # as it was: the placeholder stands for what is there
            continue
        for param in names:  # changed around the value: the value keeps its placeholder
            if values[param]:  # (however short: the stored text said it stood there)
                now = _whole(values[param]).sub(_literal(token(param)), now)
        lost = any(values[param] and token(param) not in now for param in names)
        changes[name] = template if lost else now
    template = stored.plain().target
    names = [m.group(1) for m in PARAM.finditer(template) if m.group(1) in values]
    if names and found.target:
        put_back.update(param for param in names if values[param])
        if found.target == fill_target(template, values):
            changes["target"] = template
        else:
            changes["target"] = _tokens_for(found.target, {p: values[p] for p in names})
    elif put_back and template and found.target != template:
        changes["target"] = template  # (a record's address: not this value's to write)
    if not changes:
        return found
    spelled = [way for param in sorted(put_back) for way in _spellings(values[param])]
    changes["selectors"] = tuple(
        s for s in found.selectors if not any(way.search(s) for way in spelled)
    )
    if (changes.get("row", found.row), changes.get("card", found.card)) != (found.row, found.card):
        changes["row_words"] = stored.plain().row_words
    return replace(found, **changes)


def unfill_url(stored: str, found: str, values: Mapping[str, str]) -> str:
    """``found`` (an address a replay reached, values filled in) with the placeholders of
    ``stored`` (the step's address as the scenario has it) put back where their values
    stand, URL-encoded as a form or a link writes them; any other parameter's value is
    carried as :func:`carry_url` carries a value made a parameter into the steps after it
    (a replay reached ``/paid?who=Bob`` with customer=Bob, where the scenario had no
    address for the step)."""
    names = {m.group(1) for m in _IN_QUERY.finditer(stored) if m.group(1) in values}
    if not found:
        return found
    if names and found == fill_url(stored, values):
        return stored
    for param, value in sorted(values.items()):
        if param not in names:
            found = carry_url(found, value, param)
            continue
        found = _tokens_for(found, {param: value})
    return found


def carry(identity: ElementIdentity, value: str, name: str) -> ElementIdentity:
    """The identity with ``value`` written as ``${name}`` wherever its texts hold it;
    selectors that spell the value out are dropped."""
    if len(value) < MIN_CARRIED_CHARS:
        return identity
    pattern = _whole(value)
    carried = _each(identity, lambda text: pattern.sub(_literal(token(name)), text),
                    lambda url: carry_url(url, value, name))  # fmt: skip
    spelled = _spellings(value)

    def kept(each: ElementIdentity, before: ElementIdentity) -> ElementIdentity:
        # A row that now holds the value's placeholder is told apart by the value given:
        # the words that told the recorded row from the others were the old value's.
        moved = (each.row, each.card) != (before.row, before.card)
        return replace(
            each, selectors=tuple(s for s in each.selectors
                                  if not any(way.search(s) for way in spelled)),
            row_words=() if moved else each.row_words,
        )  # fmt: skip

    plain = kept(carried.plain(), identity.plain())
    variants = tuple(kept(v, b) for v, b in zip(carried.variants, identity.variants, strict=True))
    return replace(plain, variants=variants)


def carry_args(action: str, args: Mapping[str, Any], value: str, name: str) -> dict[str, Any]:
    """A check's (or a wait's) args with ``value`` written as ``${name}`` in its texts; a
    call's, in the values it gives the called scenario (a check of the typed name there)."""
    out = dict(args)
    if len(value) < MIN_CARRIED_CHARS:
        return out
    pattern = _whole(value)
    given = out.get("params")
    if action == "call" and isinstance(given, Mapping):
        out["params"] = {key: pattern.sub(_literal(token(name)), text) if isinstance(text, str)
                         else text for key, text in given.items()}  # fmt: skip
    if holds_address(action, out) and isinstance(out.get("url"), str):
        out["url"] = carry_url(out["url"], value, name)
    for key in CHECK_ARGS.get(action, ()):
        text = out.get(key)
        if isinstance(text, str):
            out[key] = pattern.sub(_literal(token(name)), text)
        elif isinstance(text, list):
            out[key] = [
                pattern.sub(_literal(token(name)), t) if isinstance(t, str) else t for t in text
            ]
    return out


def holds_address(action: str, args: Mapping[str, Any]) -> bool:
    """Whether the step's ``url`` arg is an address: a ``navigate``'s, a ``wait_for``'s, a
    URL check's."""
    return action in ("navigate", "wait_for") or (action == "expect" and args.get("kind") == "url")


def carry_url(url: str, value: str, name: str) -> str:
    """``url`` with ``value``, URL-encoded as a form or a link writes it, as ``${name}``
    (matched whole, as in :func:`carry`), past its host."""
    if len(value) < MIN_CARRIED_CHARS or not url:
        return url
    return _tokens_for(url, {name: value})


def fill_url(url: str, values: Mapping[str, str]) -> str:
    """``url`` with each ``${name}`` of ``values`` replaced by its value URL-encoded as a
    form sends it; other ``${…}`` stay as they are."""
    return _encoded(PARAM, url, values)


def fill_query(url: str, values: Mapping[str, str]) -> str:
    """``url`` (a ``navigate``'s, a check's or a wait's address) with each ``${name}`` of
    ``values`` past its ``?`` replaced by its value URL-encoded as a form sends it: a value
    holding ``&``, ``=`` or ``#`` stays one value of one field.  Those before the ``?`` (a
    host, a path, a whole address a parameter gives) are left as they are, to be filled as
    any text is; so are ``$${…}`` (a literal ``${…}``)."""
    head, sep, query = url.partition("?")
    if not sep:
        return url
    return head + sep + _encoded(_IN_QUERY, query, values)


def _encoded(
    tokens: re.Pattern[str], text: str, values: Mapping[str, str],
    encode: Callable[[str], str] = quote_plus,
) -> str:  # fmt: skip
    """``text`` with each of ``tokens`` that names one of ``values`` replaced by its value
    URL-encoded (``encode``: as a form sends it); the others stay as they are."""
    return tokens.sub(lambda m: encode(values[m.group(1)]) if m.group(1) in values
                      else m.group(0), text)  # fmt: skip


def _spellings(value: str) -> list[re.Pattern[str]]:
    """The ways a selector may spell ``value`` out: as it is, in an address (an ``href``)."""
    return [_whole(way) for way in dict.fromkeys((value, *_in_addresses(value)))]


def _in_addresses(value: str) -> tuple[str, ...]:
    """The ways an address spells ``value``: as a form sends it (``Smith%2C+Bob``), as a
    script's encodeURIComponent does (``Smith%2C%20Bob``), as a browser writes a link's
    query and path (``Smith,%20Bob``, ``bob@example.org``: the URL standard's
    percent-encode sets)."""
    ways = (quote_plus(value), quote(value, safe=""), quote(value, safe=_QUERY_SAFE),
            quote(value, safe=_PATH_SAFE))  # fmt: skip
    return tuple(dict.fromkeys(ways))


def _tokens_for(url: str, values: Mapping[str, str]) -> str:
    """``url`` with each of ``values``, however an address spells it
    (:func:`_in_addresses`), as its ``${name}`` past its scheme and host (matched whole;
    an empty value is nowhere)."""
    origin = _ORIGIN.match(url)
    cut = origin.end() if origin else 0
    rest = url[cut:]
    for name, value in values.items():
        for encoded in _in_addresses(value) if value else ():
            rest = _whole(encoded).sub(_literal(token(name)), rest)
    return url[:cut] + rest


def _filled(text: str, values: Mapping[str, str]) -> str:
    return PARAM.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def _each(identity: ElementIdentity, change: Any, leads: Any = None) -> ElementIdentity:
    """The identity (variants too) with ``change`` made to each of its texts, and ``leads``
    to where it leads."""

    def one(each: ElementIdentity) -> ElementIdentity:
        texts = {name: change(getattr(each, name)) for name in IDENTITY_FIELDS}
        if leads is not None and each.target:
            texts["target"] = leads(each.target)
        return replace(each, **texts)

    return replace(one(identity.plain()), variants=tuple(one(v) for v in identity.variants))


def _whole(value: str) -> re.Pattern[str]:
    """``value`` as a whole: not inside a longer word (where it starts or ends with a
    letter or digit)."""
    before = r"(?<!\w)" if value[:1].isalnum() or value[:1] == "_" else ""
    after = r"(?!\w)" if value[-1:].isalnum() or value[-1:] == "_" else ""
    return re.compile(before + re.escape(value) + after)


def _literal(text: str) -> Any:
    """A replacement that is inserted as it is (no backslash escapes)."""
    return lambda _match: text
