"""How a text is found on a page: where it stands as words.

An outcome check's text (:mod:`automation.recording.expect`), the ``wait_for`` action's
and the pytest export's are found where they stand as words, case and runs of spaces
ignored: not inside a longer word, so "Saved" is not found in "Unsaved changes", nor
"Order 100" in "Order 1001".  In a script that puts no spaces between words (Chinese,
Japanese, Thai) a text is found anywhere.  :func:`words` is one pattern for Python's
``re`` and JavaScript's ``RegExp`` alike (Playwright takes a Python pattern to the page);
the pytest export writes the code below its marker into the exported file as it is.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "WORD_CHARS",
    "folded",
    "has_glyphs",
    "last_key",
    "listed_as",
    "lists",
    "named",
    "shows_again",
    "words",
]

# -- written into an exported pytest file as it is ----------------------------------
# Letters and digits of the scripts that put spaces between words (Latin, Greek,
# Cyrillic, Armenian, Hebrew, Arabic), as a character class's insides: a check's text
# is not found inside a longer word of them (see words).
WORD_CHARS = (
    "0-9A-Za-z_\\u00aa\\u00b5\\u00ba\\u00c0-\\u00d6\\u00d8-\\u00f6\\u00f8-\\u024f"
    "\\u0370-\\u03ff\\u0400-\\u052f\\u0531-\\u0587\\u05d0-\\u05ea\\u0620-\\u064a"
)
_WORD = re.compile(f"[{WORD_CHARS}]")


def words(text: str) -> str:
    """The pattern (for Python's re and JavaScript's RegExp alike, with the ignore-case
    flag) that finds ``text`` where it stands as words: its spaces any run of spaces, and
    no letter or digit of a spaced script right before or after it.  Its letters in one
    form (NFC), as the page's text is read (seen.js)."""
    text = unicodedata.normalize("NFC", " ".join(text.split()))
    pattern = r"\s+".join(re.escape(part) for part in text.split(" "))
    if _WORD.match(text[:1]):
        pattern = f"(?<![{WORD_CHARS}])" + pattern
    if _WORD.match(text[-1:]):
        pattern += f"(?![{WORD_CHARS}])"
    return pattern


def folded(text: str) -> str:
    """Text as checks compare it: spaces squeezed, case folded, each letter in one form
    (NFC: an "é" stored as e and a combining accent is the "é" typed)."""
    return unicodedata.normalize("NFC", " ".join(text.split())).casefold()


def named(text: str, own: str = "") -> str | re.Pattern[str]:
    """A name (a link's, a button's, a placeholder's) as a Playwright locator finds it
    whole: the text itself, or, where a letter of it has two Unicode forms, a pattern
    that takes either form of each such letter, runs of spaces as any run.  Replay reads
    names in one form (:func:`folded`), so a page's "José" stored decomposed (NFD) is
    the "José" a parameter gives composed (NFC), and the other way round: the export
    finds what replay finds.

    ``own``: where the element's own text stands in the name Playwright reads, an
    element its aria-labelledby lists beside its labels (the WAI-ARIA combobox named
    "Tier Silver", recorded "Tier" as replay reads it): "end", "start" or "within"
    (between any two words, or on both sides).  Any text is taken there (its value
    another day), and only there: "Tier" at its end is not "Pricing tier" nor "Tiers"."""
    composed = unicodedata.normalize("NFC", " ".join(text.split()))
    drawn = has_glyphs(composed)
    if (
        not own
        and not drawn
        and composed == unicodedata.normalize("NFD", composed) == " ".join(text.split())
    ):
        return text

    def either(letter: str) -> str:
        apart = unicodedata.normalize("NFD", letter)
        return re.escape(letter) if apart == letter else f"(?:{letter}|{apart})"

    if own not in ("", "end", "start", "within"):
        raise ValueError(f"own is 'end', 'start' or 'within', not {own!r}")
    if drawn and not own:
        # Its words, as replay reads a name; a glyph drawn in it (the star of "☆ Star",
        # drawn filled once pressed) any glyph or none.
        pattern = ""
        for part in composed.split(" "):
            if all(_glyph(c) for c in part):
                pattern += r"(?:[^\w\s]+\s*)?"
            else:
                pattern += "".join(r"[^\w\s]?" if _glyph(c) else either(c) for c in part)
                pattern += r"\s*"
        return re.compile(r"^\s*" + pattern + "$")
    spelt = ["".join(either(letter) for letter in part) for part in composed.split(" ")]
    before = r"(?:.*\s)?" if own in ("start", "within") else ""
    after = r"(?:\s.*)?" if own in ("end", "within") else ""
    between = r"\s(?:.*\s)?" if own == "within" else r"\s+"
    return re.compile(r"^\s*" + before + between.join(spelt) + after + r"\s*$")


def _glyph(char: str) -> bool:
    """Whether ``char`` is a symbol drawn, not written (☆, ★, ✓, →: Unicode's S*)."""
    return unicodedata.category(char).startswith("S")


def has_glyphs(text: str) -> bool:
    """Whether ``text`` holds a symbol drawn (see :func:`named`)."""
    return any(_glyph(char) for char in text)


def last_key(text: str) -> str:
    """The key a person typing ``text`` into a field released last, which a fill releases
    too (a list that filters on keyup, as jQuery pages do): its last character when a
    key of its own (printable ASCII), Backspace when ``text`` is empty (a field cleared);
    "" for another character."""
    last = text[-1:]
    if not last:
        return "Backspace"
    return last if " " <= last <= "~" else ""


def lists(entries: list[str], items: list[str], among_others: bool = False) -> bool:
    """Whether a list's ``entries`` (as read: seen.js's "entries") are ``items``, each
    entry the whole item (as :func:`folded`): all of them, in order; or, ``among_others``,
    each item an entry of its own after the one before, other entries between."""
    have, want = [folded(e) for e in entries], [folded(i) for i in items]
    if not among_others:
        return have == want
    at = 0
    for item in want:
        if item not in have[at:]:
            return False
        at = have.index(item, at) + 1
    return True


def listed_as(entries: list[str]) -> str:
    """What a list's entries read, as a failed ``items`` check says it."""
    if not entries:
        return "it lists nothing"
    shown = ", ".join(repr(e[:80]) for e in entries[:10])
    return f"it lists {shown}{f' and {len(entries) - 10} more' if len(entries) > 10 else ''}"


def shows_again(shown: str, before: str, typed: str) -> bool:
    """Whether the place an edit's field stood in (a table's cell, a list's line, once the
    app took its editor away) shows the value from before the edit again, not the one
    typed: ``shown`` (its text as a person reads it) holds ``before`` as words, and
    ``typed`` nowhere.  A value the app writes its own way ("12.5" shown "12.50") holds
    neither: no put-back."""

    def holds(value: str) -> bool:
        return re.search(words(value), folded(shown), re.IGNORECASE) is not None

    return bool(before.strip()) and holds(before) and not (typed.strip() and holds(typed))
