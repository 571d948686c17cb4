// Element identities, the card an element sits in out of rows: its text, without the
// records listed beside it, and what the fields in it show.
// identity.py puts this file into identity.js where its "@include" line is, inside
// the one closure: it uses the constants and helpers defined there (and describe's).

  // Out of table rows and list items, controls repeat per card, tile or column (a kanban
  // card's "Card actions", a saved card's "Remove") in plain divs.  Their context is the
  // text of the nearest ancestor with text besides their own and their label, unless that
  // ancestor is already the list (it holds another control of the same role and name:
  // we went past the card) or a region (too much text to be one card).
  // (The pytest export, which must stand alone, reads them by a copy of this rule:
  // CARDS_JS in automation/recording/exportplaces.py.  Change both.)
  function cardOf(e, name, peers) {
    return cut(cardTextOf(e, name, peers), 200);
  }

  function cardTextOf(e, name, peers) {
    return cardFound(e, name, peers).text;
  }

  // The card's text and element (none: "" and null); breaks: its text marked where a box
  // begins and ends (seenText's BREAK).
  // Its text leaves out the rows it lists that e is not in: those are records (the
  // customers listed beside a page's "New customer" link), which change with the data,
  // not what the card is; read with them, the link's card was the page's heading while
  // the list was empty and the heading and every customer once it was not.
  function cardFound(e, name, peers, breaks = false) {
    const none = { text: "", el: null };
    const own = [textOf(e), name].filter(Boolean);
    let steps = 0;
    for (let n = parentOf(e); n && steps < 12; n = parentOf(n), steps++) {
      if (peers.some((p) => within(n, p))) return none;
      const records = recordsIn(n);
      const mine = records.rows.size ? ownRow(e, n, records.rows) : null;
      const length = records.length +
        (mine && n.contains(mine) ? (mine.textContent || "").length : 0);
      if (length > 4 * CARD_TEXT) return none; // cheap, before layout
      // Through shadow roots: a card may be a custom element drawing its text inside.
      let text = n.shadowRoot ? seenText(n, new Set([...records.rows].filter((r) => r !== mine)))
        : textBeside(n, records, mine);
      for (const t of own) text = norm(text.replace(t, " "));
      if (text.length > CARD_TEXT) return none;
      if (!words(text).length) continue;
      if (!breaks) return { text, el: n };
      const skip = new Set([e, ...[...records.rows].filter((r) => r !== mine)]);
      return { text: seenText(n, skip, false, true), el: n };
    }
    return none;
  }

  // The rows (records) n lists, the outermost of them, but a table's row of column headers
  // (which says what the records are, whatever they hold); the length of n's text but
  // theirs in its light DOM (what its textContent holds); once per container in a call,
  // as every control out of rows on a page of a long list climbs through the same ones.
  const listed = new Map();
  function recordsIn(n) {
    if (!listed.has(n)) {
      const rows = new Set();
      let length = (n.textContent || "").length;
      for (const root of n.shadowRoot ? [n, n.shadowRoot] : [n]) {
        for (const r of root.querySelectorAll(ROW)) {
          if (headerRow(r)) continue;
          const up = r.parentElement && r.parentElement.closest(ROW);
          if (up && within(n, up)) continue; // left out with the row it is in
          rows.add(r);
          if (n.contains(r)) length -= (r.textContent || "").length;
        }
      }
      listed.set(n, { rows, length, holding: null, text: undefined });
    }
    return listed.get(n);
  }

  function headerRow(r) {
    return r.tagName === "TR" && r.cells.length > 0 &&
      [...r.cells].every((c) => c.tagName === "TH");
  }

  // Of the rows n lists, the one e is in (its own: read with the card), or null.
  function ownRow(e, n, rows) {
    let found = null;
    for (let x = parentOf(e); x && x !== n; x = parentOf(x)) if (rows.has(x)) found = x;
    return found;
  }

  // n's text as innerText reads it, but the records' (except ``mine``, e's own row).
  // Without one of its own, the same for every element in n: read once per call.
  function textBeside(n, records, mine) {
    const { rows } = records;
    if (!rows.size || (rows.size === 1 && mine)) return norm(n.innerText || "");
    if (!mine && records.text !== undefined) return records.text;
    if (!records.holding) { // the elements in n that hold a row
      records.holding = new Set();
      for (const r of rows) {
        for (let x = r.parentElement; x && x !== n; x = x.parentElement) records.holding.add(x);
      }
    }
    const parts = [];
    const walk = (x) => {
      for (const c of x.childNodes) {
        if (c.nodeType === 3) parts.push(c.data);
        if (c.nodeType !== 1 || (c !== mine && rows.has(c)) || !shown(c)) continue;
        // (a box-less wrapper's innerText is its textContent, hidden parts and all)
        if ((c !== mine && records.holding.has(c)) || !visible(c)) walk(c);
        else parts.push(" ", c.innerText || "", " ");
      }
    };
    walk(n);
    const text = norm(parts.join(""));
    if (!mine) records.text = text;
    return text;
  }

  // Whether a card holds a field one types into or chooses in (not ``e``): the form (or
  // the page) around a search box and its button, whose text may list records, is no
  // one record's tile.
  const FIELDS = "textarea, select, [contenteditable=''], [contenteditable=true], " +
    "input:not([type=hidden]):not([type=button]):not([type=submit]):not([type=reset])" +
    ":not([type=image]):not([type=checkbox]):not([type=radio])";
  // What the fields in ``card`` (but ``e``) show: a box's value, a list's chosen option.
  function fieldsShown(card, e) {
    return [...card.querySelectorAll(FIELDS)].filter((x) => x !== e).map((x) => {
      if (lower(x.tagName) === "select") {
        return norm([...x.selectedOptions].map((o) => o.textContent).join(" "));
      }
      return norm(x.isContentEditable ? x.innerText : x.value);
    });
  }
