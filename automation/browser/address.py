"""Whether a page's address holds an expected one: the one rule of a URL check, of a wait
for an address (the ``wait_for`` action's ``url``), live, in replay and in a pytest
export, so a wait can't pass where a check of the same address then fails, nor on another
page whose address only spells it somewhere (``/login?next=/orders/done`` does not hold
``/orders/done``).

The export writes the code below the marker into the file as it is.
"""

from __future__ import annotations

from urllib.parse import quote, unquote, unquote_plus

__all__ = ["address_holds", "same_page"]


# -- written into an exported pytest file as it is ----------------------------------
def address_holds(expected: str, url: str) -> bool:
    """Whether the address ``url`` holds ``expected`` (a URL check's), each of its parts
    whole, however the page encodes the same thing:

    - its scheme and host, when it names them, are the address's;
    - what it has before the ``?`` is the address's host and path, or a run of whole
      segments of it (``/orders`` holds on ``/app/orders/12``, not on ``/orders-old``),
      decoded and encoded again (a path's ``Zo%C3%AB`` is ``Zoë``);
    - each field of its query is a field of the address's, in any order, its name and
      value whole once decoded as a form sends them (``Grace+Hopper`` is ``Grace%20Hopper``;
      ``name=Ada`` is not ``name=Adam``); fields are split before they are decoded
      (``a%26b`` is never ``a&b``);
    - its fragment, when it has one, is the address's.

    (The rule of a URL check and of a wait for an address, live, in replay and in an
    export.)"""
    want_scheme, want_path, want_fields, want_fragment = _address_parts(expected)
    scheme, path, fields, fragment = _address_parts(url)
    if want_scheme is not None and want_scheme != scheme:
        return False
    if want_fragment is not None and want_fragment != fragment:
        return False
    if not _segments_hold(want_path, path, at_start=want_scheme is not None):
        return False
    unmatched = list(fields)
    for field in want_fields:
        if field not in unmatched:
            return False
        unmatched.remove(field)
    return True


def _address_parts(url: str) -> tuple[str | None, str, list[tuple[str, str]], str | None]:
    """scheme (None when not written), host and path written one way, the query's
    fields decoded, the fragment (None when not written)."""
    url, hashed, fragment = url.partition("#")
    rest, _, query = url.partition("?")
    scheme, named, after = rest.partition("://")
    if not named:
        scheme, after = "", rest
    elif "/" not in after:  # http://host is http://host/
        after += "/"
    host, slash, path = after.partition("/") if named else ("", "", after)
    where = host.lower() + slash + quote(unquote(path), safe="/:@!$&'()*+,;=~")
    pieces = (piece.partition("=") for piece in query.split("&") if piece)
    fields = [(unquote_plus(name), unquote_plus(value)) for name, _, value in pieces]
    return (
        (scheme.lower() if named else None),
        where,
        fields,
        (unquote(fragment) if hashed else None),
    )


def _segments_hold(want: str, where: str, *, at_start: bool) -> bool:
    """``want`` is ``where``'s beginning (``at_start``), or a run of whole segments of it."""
    if not want:
        return True
    index = where.find(want)
    while index >= 0:
        end = index + len(want)
        starts = index == 0 or (not at_start and (want[0] == "/" or where[index - 1] in "/."))
        ends = end == len(where) or want[-1] == "/" or where[end] in "/"
        if starts and ends:
            return True
        if at_start:
            return False
        index = where.find(want, index + 1)
    return False


def same_page(url: str, other: str) -> bool:
    """Whether two addresses name the same page: the same but for their fragment (a page
    loaded again, a form's page answered again)."""
    return url.split("#")[0] == other.split("#")[0]
