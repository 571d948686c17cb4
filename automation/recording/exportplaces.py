"""Where an exported step's element is (automation.recording.export): among elements alike
(one role, one name), the one in the row, the card (tile) or under the title (section)
that reads as the recorded one, read as replay reads them (:mod:`automation.browser.seen`'s
rule for a row's text, :mod:`automation.browser.identity`'s for cards and titles), so the
export and the replay can't take different elements.  The locators that call these are
written by :mod:`automation.recording.exportlocators`.

The export writes the code below the marker into the file as it is, after
:mod:`automation.recording.exportseen`'s (whose ``read_until`` and ``shows_text`` it uses).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from automation.browser.identity import COLUMN_JS
from automation.browser.seen import SEEN_JS
from automation.browser.textmatch import folded, words
from automation.recording.exportseen import read_until, shows_text

if TYPE_CHECKING:
    from playwright.sync_api import Frame, FrameLocator, Locator, Page

__all__ = [
    "CARDS_JS",
    "COLUMN_ENGINE_JS",
    "DISCLOSURE",
    "EDITABLE",
    "ROW_ENGINE_JS",
    "TITLES_JS",
    "card_showing",
    "in_card",
    "in_section",
    "one_of",
    "read_again",
    "rows_holding_most",
    "rows_showing",
    "section_showing",
    "under_section",
    "whole",
]

# -- written into an exported pytest file as it is
# Rows (table rows, list items) whose text, as a row check reads it (their fields with the
# values the app wrote into them), each pattern of a JSON list finds (of {"every": [...],
# "most": [...]}, each of the first and more than half of the others): a step's element is
# looked for in its row as replay tells the row (Playwright's has_text reads no field).
ROWS = "tr, li, [role=row], [role=listitem], article"
ROW_ENGINE_JS = f"""{{
  queryAll(root, body) {{
    const asked = JSON.parse(body);
    const regexps = (list) => list.map((p) => new RegExp(p.normalize("NFC")));
    const patterns = regexps(Array.isArray(asked) ? asked : asked.every || []);
    const most = regexps(asked.most || []);
    const text = (row) => ({SEEN_JS})({{ op: "row", element: row, cells: true }});
    const rows = [];
    const walk = (at) => {{
      for (const e of at.querySelectorAll("*")) {{
        if (e.matches({ROWS!r})) rows.push(e);
        if (e.shadowRoot) walk(e.shadowRoot);
      }}
    }};
    walk(root);
    return rows.filter((row) => {{
      const read = text(row);
      return patterns.every((p) => p.test(read)) &&
        (!most.length || most.filter((p) => p.test(read)).length * 2 > most.length);
    }});
  }},
}}"""


# The cells (of a table, of an ARIA grid or table) under a column whose header reads as the
# JSON text given, ignoring case, by replay's rule (COLUMN_JS): a box of a matrix's row,
# told from the others of its name by its column as replay tells it.
COLUMN_ENGINE_JS = f"""{{
  queryAll(root, body) {{
{COLUMN_JS}
    const asked = JSON.parse(body).toLowerCase();
    const cells = [];
    const walk = (at) => {{
      for (const e of at.querySelectorAll("*")) {{
        if (e.matches("td, th, [role=gridcell], [role=cell]")) cells.push(e);
        if (e.shadowRoot) walk(e.shadowRoot);
      }}
    }};
    walk(root);
    return cells.filter((cell) => columnOf(cell).toLowerCase() === asked);
  }},
}}"""


def rows_showing(scope: Page | Frame | FrameLocator, *patterns: str) -> Locator:
    """The rows in ``scope`` whose text (fields as the app wrote them) each pattern finds."""
    return scope.locator("tabwright-row=" + json.dumps(list(patterns)))


def rows_holding_most(scope: Page | Frame | FrameLocator, *recorded: str) -> Locator:
    """The rows in ``scope`` whose text holds the first of the ``recorded`` words and more
    than half of them, as replay tells the row of a control recorded while its list
    showed that row alone (a word of it changed since, its status: still its record's)."""
    patterns = [rf"(?<![\w]){re.escape(word)}(?![\w])" for word in recorded]
    return scope.locator("tabwright-row=" + json.dumps({"every": patterns[:1], "most": patterns}))


# The text of the card (tile) around each element, as replay reads it: the nearest
# ancestor with text besides the element's own and the rows (records) it lists that the
# element is not in, up to 300 characters, unless it holds another element of its tag with
# its text (past the card: the list of them) ("": none); what the fields in it one
# types into or chooses in show (see card_showing); and its texts read apart (each cell's,
# block's: see stands_in).
CARDS_JS = """(elements) => elements.map((element) => {
  const fields = "textarea, select, [contenteditable=''], [contenteditable=true], " +
    "input:not([type=hidden]):not([type=button]):not([type=submit]):not([type=reset])" +
    ":not([type=image]):not([type=checkbox]):not([type=radio])";
  const ROW = "tr, li, [role=row], [role=listitem], article";
  const norm = (t) => (t || "").replace(/\\s+/g, " ").trim();
  const visible = (x) => x.checkVisibility({ visibilityProperty: true }) &&
    x.getClientRects().length > 0;
  const drawn = (x) => visible(x) || getComputedStyle(x).display === "contents";
  // The outermost rows in n that the element is not in, but a row of column headers:
  // records, left out of its card.
  const header = (r) => r.tagName === "TR" && r.cells.length > 0 &&
    [...r.cells].every((c) => c.tagName === "TH");
  const rowsIn = (n) => new Set([...n.querySelectorAll(ROW)].filter((r) => {
    const up = r.parentElement && r.parentElement.closest(ROW);
    return !r.contains(element) && !header(r) &&
      (!up || !n.contains(up) || up.contains(element));
  }));
  // (its text as read, each box's on a line of its own: cells, blocks)
  const read = (n, rows) => {
    if (!rows.size) return n.innerText || "";
    const holding = new Set();
    for (const r of rows) {
      for (let x = r.parentElement; x && x !== n; x = x.parentElement) holding.add(x);
    }
    const parts = [];
    const walk = (x) => {
      for (const c of x.childNodes) {
        if (c.nodeType === 3) parts.push(c.data);
        if (c.nodeType !== 1 || rows.has(c) || !drawn(c)) continue;
        if (holding.has(c) || !visible(c)) walk(c);
        else parts.push("\\n", c.innerText || "", "\\n");
      }
    };
    walk(n);
    return parts.join("");
  };
  const pieces = (text) => text.split(/[\\n\\t]+/).map(norm).filter(Boolean);
  const shown = (n) => [...n.querySelectorAll(fields)].filter((x) => x !== element)
    .map((x) => norm(x.tagName === "SELECT"
      ? [...x.selectedOptions].map((o) => o.textContent).join(" ")
      : x.isContentEditable ? x.innerText : x.value));
  const said = [norm(element.innerText || element.textContent),
    norm(element.getAttribute("aria-label"))].filter(Boolean);
  // (and the labels that name it, as replay leaves out its name: "City" around its field)
  const labelled = (element.getAttribute("aria-labelledby") || "").split(/\\s+/)
    .map((id) => id && element.getRootNode().getElementById
      ? element.getRootNode().getElementById(id) : null);
  const labels = [...(element.labels || []), ...labelled].filter(Boolean)
    .map((label) => norm(label.innerText)).filter(Boolean);
  // (its text and its name, as replay leaves both out: a button's name is its text again,
  // taken out twice, "Cancel" left of "CancelDelete" where "Delete" is in the title too)
  const own = [...said, ...labels, ...(said.length === 1 && !labels.length ? said : [])];
  const alike = (other) => other !== element && norm(other.innerText) === said[0];
  let n = element.parentElement || element.getRootNode().host;
  for (let steps = 0; n && steps < 12; steps++) {
    const rows = rowsIn(n);
    const length = [...rows].reduce((l, r) => l - (r.textContent || "").length,
      (n.textContent || "").length);
    if (length > 1200) break;
    if (said.length && [...n.querySelectorAll(element.tagName)].some(alike)) break;
    const raw = read(n, rows);
    let text = norm(raw);
    for (const t of own) text = norm(text.replace(t, " "));
    if (text.length > 300) break;
    if (/[\\p{L}\\p{N}]/u.test(text)) return [text, shown(n), pieces(raw)];
    n = n.parentElement || n.getRootNode().host;
  }
  return ["", [], []];
})"""
CARD_ALIKE = 0.6  # of the recorded card's words and a card's, this share in common at least
RECORD_CARD = 0.8  # of the recorded card's words (but the values'), this share in a tile


AGAIN = [False]  # a field is being read again once its step is done (read_again)


def read_again(find: Callable[[], Locator]) -> Locator:
    """The element ``find`` locates, read again once the step that wrote it is done: a
    card's or a section's alike elements are not waited for there (an editor the app took
    away as the edit was committed is gone, not late), none left giving none."""
    AGAIN[0] = True
    try:
        return find()
    finally:
        AGAIN[0] = False


def _found(candidates: Locator) -> bool:
    """Whether ``candidates`` are there to choose from: waited for (TIMEOUT_MS), but for
    a field read again (:func:`read_again`), whose none is an answer."""
    if AGAIN[0]:
        return candidates.count() > 0
    timeout_ms = float(os.environ.get("TIMEOUT_MS", "15000"))
    candidates.first.wait_for(state="attached", timeout=timeout_ms)
    return True


# An element one types into by its contenteditable (a notes box drawn as a div): a textbox
# to replay, none to Playwright's role engine unless the page wrote the role.
EDITABLE = "[contenteditable]:not([contenteditable=false])"
# A details' summary, the one that opens and closes it: a button to replay (snapshot_roles.js),
# none to Playwright's role engine.
DISCLOSURE = "details > summary:first-of-type"


def whole(name: str | re.Pattern[str]) -> re.Pattern[str]:
    """A summary's name as its text must read whole (a ``named`` pattern as it is)."""
    if isinstance(name, re.Pattern):
        return name
    return re.compile(rf"^\s*{re.escape(' '.join(name.split()))}\s*$")


def one_of(found: Locator, in_row: Locator) -> Locator:
    """``found`` (the page's only one of its role and name when recorded), or where the
    page shows several now (another row's cell shows the same number), the one in its
    row (``in_row``: :func:`rows_showing`'s), as replay tells alike elements apart.  Not
    waited for: none or one yet, ``found`` is acted on as it always was."""
    return in_row if found.count() > 1 else found


def in_card(candidates: Locator, recorded: str, *values: str, section: str = "") -> Locator:
    """Of ``candidates`` (alike elements: one role, one name), the one in the card (tile)
    that reads most as the recorded one, ``recorded`` (its parameters' ``values`` in
    it), showing each value whole, as replay tells alike elements apart: the Delete of
    Bob's tile wherever his tile now stands, never another's.  Cards that read alike
    (each address's "1 Park Row") are told apart by the title each sits under, where the
    recorded one sat under ``section``."""
    if not _found(candidates):
        return candidates
    read = candidates.evaluate_all(CARDS_JS)
    cards = [text for text, _, _ in read]
    fits = [
        (_overlap(recorded, card), at)
        for at, (card, _, pieces) in enumerate(read)
        if all(stands_in(pieces, value, recorded, strict=True) for value in values)
    ]
    best = max(fits, default=(0.0, -1))
    if best[0] < CARD_ALIKE:
        raise AssertionError(f"no card reads as {recorded[:160]!r}: {cards[:5]!r}")
    tied = [at for fit, at in fits if fit == best[0]]
    if len(tied) > 1 and section:
        titles = candidates.evaluate_all(TITLES_JS)
        by_title = {at: _title_fit(section, titles[at]) for at in tied}
        top = max(by_title.values())
        if top < CARD_ALIKE:
            raise AssertionError(f"no section reads as {section[:160]!r}: {titles[:5]!r}")
        tied = [at for at, fit in by_title.items() if fit == top]
    if len(tied) > 1:
        raise AssertionError(f"more than one card reads as {recorded[:160]!r}")
    return candidates.nth(tied[0])


def card_showing(element: Locator, recorded: str, *values: str) -> Locator:
    """``element`` (the page's only one of its role and name) once found, where its card
    is one record's tile that reads as the recorded one (``recorded``, its parameters'
    ``values`` in it) but for them: the tile must show each value whole, as replay tells
    it (the Delete in the one tile a search left is Ann Leeds's, not "Ann Lee"'s).  A
    card holding a field that shows a value given or nothing (a search box) is a form's,
    or the page's, not a record's: not judged; a tile's own fields (its seats, as the
    app wrote them) leave it a tile."""
    if not _found(element):
        return element
    found = element.evaluate_all(CARDS_JS)
    if len(found) != 1:  # gone again, or several: the step's action says so
        return element
    [(card, fields, pieces)] = found
    given = set().union(*(_words(value) for value in values))
    rest = _words(recorded) - given
    form = any(
        not _words(shown) or any(re.search(words(folded(v)), folded(shown)) for v in values)
        for shown in fields
    )
    if form or not rest or len(rest & _words(card)) / len(rest) < RECORD_CARD:
        return element
    for value in values:
        if not stands_in(pieces, value, recorded, strict=True):
            raise AssertionError(f"its card reads {card[:160]!r}: no {value!r} in it")
    return element


# The titles each element sits under, nearest first, as replay reads them
# (identity_describe.js, titlesOf): each labelled group's (its name, else its first
# heading; a disclosure's summary, a table's caption), each container's whose first child
# is a heading or short bold or larger text (not the element's own words, holding no
# control), a heading only where none of its rank or higher follows in the container and
# styled text only where none like it does, then the nearest heading, description list
# term, table row of one header cell or title of such a series before it.
TITLES_JS = """(elements) => elements.map((element) => {
  const GROUP = "fieldset, section, form, dialog, nav, header, footer, aside, main, " +
    "[role=region], [role=group], [role=dialog], [role=toolbar], [role=navigation], " +
    "[role=form], [role=search], [role=tabpanel]";
  const HEADING = "h1, h2, h3, h4, h5, h6, legend, [role=heading]";
  const NOT_TITLE = "label, legend, button, a, input, select, textarea, td, th, tr, li";
  const CONTROL = "a[href], button, input, select, textarea, [tabindex], [role=button]";
  const norm = (t) => (t || "").replace(/\\s+/g, " ").trim();
  const words = (t) => norm(t).toLowerCase().match(/[\\p{L}\\p{N}]+/gu) || [];
  const parentOf = (e) => e.parentElement ||
    (e.getRootNode() instanceof ShadowRoot ? e.getRootNode().host : null);
  const within = (n, o) => { for (let x = o; x; x = parentOf(x)) if (x === n) return true;
    return false; };
  const visible = (e) =>
    e.checkVisibility({ visibilityProperty: true }) && e.getClientRects().length > 0;
  const named = (n) => {
    const ids = (n.getAttribute("aria-labelledby") || "").split(/\\s+/).filter(Boolean);
    const by = ids.map((id) => n.ownerDocument.getElementById(id)).filter(Boolean);
    if (by.length) return by.map((x) => x.textContent).join(" ");
    if (n.getAttribute("aria-label")) return n.getAttribute("aria-label");
    const legend = n.tagName === "FIELDSET" ? n.querySelector(":scope > legend") : null;
    return legend ? legend.textContent : "";
  };
  const rankOf = (h) => Number((/^H([1-6])$/.exec(h.tagName) || [])[1]) ||
    parseInt(h.getAttribute("aria-level"), 10) || 2;
  const headsAll = (n, h) => h.tagName === "LEGEND" ||
    ![...n.querySelectorAll("h1, h2, h3, h4, h5, h6, [role=heading]")]
      .some((o) => o !== h && !within(h, o) && rankOf(o) <= rankOf(h));
  const label = words(element.getAttribute("aria-label") || element.innerText ||
    element.textContent);
  const titled = (t, n) => {
    const s = getComputedStyle(t);
    return (parseInt(s.fontWeight, 10) || 400) >= 600 ||
      parseFloat(s.fontSize) > 1.1 * parseFloat(getComputedStyle(n).fontSize);
  };
  const styledTitle = (t, n) => {
    const inner = t.children.length === 1 ? t.firstElementChild : null;
    const styled = inner && norm(inner.textContent) === norm(t.textContent) ? [t, inner] : [t];
    return styled.some((x) => titled(x, n));
  };
  const shortTitle = (t) => {
    if (t.childElementCount > 1 || (t.firstElementChild && t.firstElementChild.childElementCount)) {
      return false;
    }
    const text = norm(t.textContent);
    return !!text && text.length <= 60 && words(text).length > 0 &&
      !t.matches(NOT_TITLE) && !t.querySelector(CONTROL);
  };
  const inSeries = (t) => !!t.parentElement && [...t.parentElement.children].some((o) =>
    o !== t && o.tagName === t.tagName && o.className === t.className && shortTitle(o) &&
    styledTitle(o, t.parentElement));
  const first = (n) => {
    const f = n.firstElementChild;
    if (!f || within(f, element) || f.matches(NOT_TITLE)) return "";
    const text = norm(f.textContent);
    if (!text || text.length > 60 || !words(text).length) return "";
    if (words(text).every((w) => label.includes(w))) return "";
    if (f.querySelector(CONTROL) || !visible(f)) return "";
    if (f.matches(HEADING)) return headsAll(n, f) ? text : "";
    return styledTitle(f, n) && !inSeries(f) ? text : "";
  };
  const before = () => {
    let steps = 0;
    for (let n = element; n && steps < 200; n = parentOf(n)) {
      for (let s = n.previousElementSibling; s && steps < 200; s = s.previousElementSibling) {
        steps++;
        const row = s.tagName === "TR" && s.cells.length === 1 && s.cells[0].tagName === "TH";
        if (s.matches(HEADING) || s.tagName === "DT" || row) return s.textContent;
        const p = s.parentElement;
        if (p && shortTitle(s) && styledTitle(s, p) && inSeries(s)) return s.textContent;
        const inner = s.querySelectorAll(HEADING);
        if (inner.length) return inner[inner.length - 1].textContent;
      }
    }
    return "";
  };
  const out = [];
  const push = (t) => { const title = norm(t).slice(0, 120);
    if (title && !out.includes(title)) out.push(title); };
  for (let n = parentOf(element); n && out.length < 6; n = parentOf(n)) {
    const own = n.tagName === "DETAILS" ? n.querySelector(":scope > summary")
      : n.tagName === "TABLE" ? n.querySelector(":scope > caption") : null;
    if (own) { push(own.textContent); continue; }
    const heading = n.matches(GROUP) ? n.querySelector(HEADING) : null;
    const headed = heading && headsAll(n, heading) ? heading.textContent : "";
    push((n.matches(GROUP) && (named(n) || headed)) || first(n));
  }
  push(before());
  return out;
})"""


def in_section(candidates: Locator, recorded: str, *values: str, otherwise: Locator) -> Locator:
    """Of ``candidates`` (alike elements: one role, one name, none in a row or a card of
    its own), the one under the title that reads most as the recorded one
    (``recorded``, its parameters' ``values`` in it), showing each value whole, as
    replay tells alike elements apart by their section: the Delete under "Work
    address", wherever that section now stands, or under the name given.  Where
    several read so and no value is given (a title they all sit under), ``otherwise``."""
    if not _found(candidates):
        return candidates
    titles = candidates.evaluate_all(TITLES_JS)
    fits = [
        (_title_fit(recorded, theirs), at)
        for at, theirs in enumerate(titles)
        if theirs
        and all(any(re.search(words(folded(v)), folded(t)) for t in theirs) for v in values)
    ]
    best = max(fits, default=(0.0, -1))
    if best[0] < CARD_ALIKE:
        raise AssertionError(f"no section reads as {recorded[:160]!r}: {titles[:5]!r}")
    if sum(1 for fit, _ in fits if fit == best[0]) > 1:
        if not values:
            return otherwise
        raise AssertionError(f"more than one section reads as {recorded[:160]!r}")
    return candidates.nth(best[1])


def _title_fit(recorded: str, titles: list[str]) -> float:
    """How well the recorded section reads as the best of an element's titles."""
    return max((_overlap(recorded, title) for title in titles), default=0.0)


def under_section(
    element: Locator, recorded: str, proven: dict[str, str], twins: Locator | None
) -> Locator:
    """``element`` (the page's only one of its role and name when recorded, under the
    title ``recorded``) once found, where it sits under a title that reads as the recorded
    one, or under none, read until it does, as replay holds it: under another title it is
    another element (the billing address's Street where the shipping address's was; a
    calendar's "15" under another month).  Held only while one of ``twins`` (those of its
    role and name, shown or not) sits under a title that reads as the recorded one: else
    another title is a new release's layout; held always where ``twins`` is None (a name
    that is a number).  One that still has an attribute of ``proven`` (its id, name or
    test id as recorded) is the element; of several now, the one that has, else the one
    under the title that reads most as the recorded one."""
    if not _found(element):
        return element
    marks = element.evaluate_all(
        "(all, proven) => all.map((e) => Object.entries(proven)"
        ".some(([k, v]) => e.getAttribute(k) === v))",
        proven,
    )
    if marks.count(True) == 1:
        return element.nth(marks.index(True))
    chosen = [element]

    def holds() -> tuple[bool, str]:
        titles = element.evaluate_all(TITLES_JS)
        fits = [_title_fit(recorded, theirs) if theirs else None for theirs in titles]
        if len(titles) > 1:  # the one under the title that reads most as it, if one does
            best = max((fit for fit in fits if fit is not None), default=0.0)
            if best >= CARD_ALIKE and fits.count(best) == 1:
                chosen[0] = element.nth(fits.index(best))
            return True, ""
        if not titles or fits[0] is None or fits[0] >= CARD_ALIKE:
            return True, ""
        if twins is not None and not any(
            theirs and _title_fit(recorded, theirs) >= CARD_ALIKE
            for theirs in twins.evaluate_all(TITLES_JS)
        ):
            return True, ""  # none of its name under that title: a new release's layout
        return False, f"it sits under {titles[0][0][:160]!r}"

    read_until(element.page, holds, f"it to sit under {recorded[:160]!r}")
    return chosen[0]


def section_showing(element: Locator, recorded: str, *values: str) -> Locator:
    """``element`` (the page's only one of its role and name) once found, where the
    title it was recorded under (``recorded``) held parameters' ``values``: a title it
    sits under shows each whole where the recorded one did (the Delete under the heading
    "Ann Leeds", on the page a search for "Ann Lee" opened, is not Ann Lee's, nor is
    "Edit Ann Lee" the page of "Ann"), read until it does, as replay holds its section;
    where no title holds the value's words at all, its page shows it whole."""
    if not _found(element):
        return element

    def shown(value: str, titles: list[str]) -> bool:
        if stands_in(titles, value, recorded, strict=False):
            return True
        held = any(_words(value) <= _words(title) for title in titles)
        return not held and shows_text(element.page, value)

    def holds() -> tuple[bool, str]:
        titles = (element.evaluate_all(TITLES_JS) or [[]])[0]
        missing = [value for value in values if not shown(value, titles)]
        return not missing, f"its page shows no {missing[0]!r}" if missing else ""

    read_until(element.page, holds, "its page to show " + " and ".join(map(repr, values)))
    return element


def _words(text: str) -> set[str]:
    return set(_word_list(text))


def _word_list(text: str) -> list[str]:
    joined = re.sub("(\\w)[-'\u2019](\\w)", r"\1\2", folded(text))
    return re.findall(r"[^\W_]+", joined)


KEPT = 200  # characters an identity keeps of a text (identity_describe.js: cut)


def stands_in(pieces: list[str], value: str, recorded: str, *, strict: bool) -> bool:
    """Whether ``value``'s words stand whole in one of ``pieces`` (a card's cells and
    blocks, or titles) as they stood in ``recorded`` (the recorded text, values in it),
    as replay tells it (identity_compare.js, standsIn): at a piece's edge where they
    stood at the text's ("Edit Ann" is not "Edit Ann Lee"), and where ``strict`` (a
    card's piece), beside no word but the one beside them then, or a number (the cell
    "Ann Lee" is not "Ann" of the card "Ann Gold")."""
    want = _word_list(value)
    if not want:
        return True
    had = _word_list(recorded)
    beside = [
        (had[at - 1] if at else "",
         had[at + len(want)] if at + len(want) < len(had) else None if len(recorded) >= KEPT
         else "")
        for at in range(len(had) - len(want) + 1) if had[at : at + len(want)] == want
    ]  # fmt: skip

    def fits(now: str | None, was: str | None) -> bool:
        return (
            now is None
            or was is None
            or (was != "" and (not strict or now == was or (now.isascii() and now.isdigit())))
        )

    for piece in pieces:
        have = _word_list(piece)
        for at in range(len(have) - len(want) + 1):
            if have[at : at + len(want)] != want:
                continue
            before = have[at - 1] if at else None
            after = have[at + len(want)] if at + len(want) < len(have) else None
            if (
                any(fits(before, b) and fits(after, a) for b, a in beside)
                if beside
                else after is None
            ):
                return True
    return False


def _overlap(a: str, b: str) -> float:
    """The words ``a`` and ``b`` have in common, of those either has (replay's rule)."""
    x, y = _words(a), _words(b)
    return len(x & y) / len(x | y) if x | y else 1.0
