// Element identities, comparing: how alike a recorded identity and an element of the
// page now are, and why not.
// identity.py puts this file into identity.js where its "@include" line is, inside
// the one closure: it uses the constants and helpers defined there.

  // Words of a name: "E-mail" and "Email" are one word, case and punctuation ignored.
  function words(t) {
    return lower(t).normalize("NFC").replace(/(\w)[-'’](\w)/g, "$1$2")
      .split(/[^\p{L}\p{M}\p{N}]+/u).filter(Boolean);
  }

  // A name as compared: its words, case and punctuation ignored.
  const key = (t) => words(t).join(" ");

  // Words with their sense: synonyms (and two-word phrases such as "log in") share one.
  function tokens(t) {
    const w = words(t);
    const out = [];
    for (let i = 0; i < w.length; i++) {
      const pair = i + 1 < w.length ? `${w[i]} ${w[i + 1]}` : "";
      if (pair && SENSE.has(pair)) {
        out.push({ word: pair, sense: SENSE.get(pair) });
        i++;
      } else {
        out.push({ word: w[i], sense: SENSE.get(w[i]) || w[i] });
      }
    }
    return out;
  }

  // Words that add nothing to what a control does: "Sign in now" is "Sign in".
  const URGING = new Set(["now", "here", "please", "today"]);

  // 1 for the same words; a synonym costs a little, an added word little (but to a
  // one-word name, a lot), a dropped one more, a replaced one a lot ("Save changes" ~
  // "Save all changes", "Send for approval" ~ "Submit for approval"; "Save draft" is not
  // "Save", nor "Export CSV" "Export PDF").
  function textSim(a, b) {
    if (words(a).join("") === words(b).join("")) return 1; // also: both without words
    const x = tokens(a);
    const y = tokens(b);
    if (!x.length || !y.length) return 0;
    const ys = new Set(y.map((t) => t.sense));
    const xs = new Set(x.map((t) => t.sense));
    const yWords = new Set(y.map((t) => t.word));
    const missing = x.filter((t) => !ys.has(t.sense)).length;
    const extra = y.filter((t) => !xs.has(t.sense)).length;
    const swapped = x.filter((t) => ys.has(t.sense) && !yWords.has(t.word)).length;
    const replaced = Math.min(missing, extra);
    // A word added to a one-word name makes another action of it ("Save draft", "Delete
    // all", "Approve all"): it costs as a replaced word, unless it only urges ("Sign in
    // now").  Added to a longer name, a word narrows it little ("Save all changes").
    const urging = y.filter((t) => !xs.has(t.sense) && URGING.has(t.sense)).length;
    const added = x.length === 1 ? 1 : 0.25;
    const plain = Math.max(0, extra - replaced - urging);
    const cost = replaced + added * plain + 0.25 * (extra - replaced - plain) +
      0.6 * (missing - replaced) + SWAP * swapped;
    return Math.max(0, 1 - cost / Math.max(x.length, y.length));
  }

  // Whether name b holds a word (or a synonym of one) that name a lacks, other than a
  // little word or one that only urges.
  function gainsWords(a, b) {
    if (!a || !b) return false;
    const had = new Set(tokens(a).map((t) => t.sense));
    return tokens(b).some((t) => !had.has(t.sense) && !STOP.has(t.sense) && !URGING.has(t.sense));
  }

  // Whether two names share a word (or a synonym of one) other than a common little word.
  function sharesWord(a, b) {
    const mine = new Set(tokens(a).map((t) => t.sense).filter((s) => !STOP.has(s)));
    return tokens(b).some((t) => mine.has(t.sense));
  }

  // Overlap of the words (row texts, ids split at - _ and case changes).
  function overlap(a, b) {
    const x = new Set(words(a.replace(/([a-z])([A-Z])/g, "$1 $2")));
    const y = new Set(words(b.replace(/([a-z])([A-Z])/g, "$1 $2")));
    if (!x.size && !y.size) return 1;
    let both = 0;
    for (const w of x) if (y.has(w)) both++;
    return both / (x.size + y.size - both);
  }

  function lookSim(a, b) {
    const x = a.split("|");
    const y = b.split("|");
    return x.filter((v, i) => v === y[i]).length / x.length;
  }

  function distance(a, b) {
    const dx = a[0] + a[2] / 2 - (b[0] + b[2] / 2);
    const dy = a[1] + a[3] / 2 - (b[1] + b[3] / 2);
    return Math.sqrt(dx * dx + dy * dy);
  }

  function sameTestId(id, f) {
    return Object.entries(id.test_ids || {}).some(([k, v]) => v && f.test_ids[k] === v);
  }

  // The score (0..1) over what the recorded identity has, and whether the candidate may
  // be taken at all: a different role or a different name needs an attribute (or, for a
  // row's checkbox, its row) proving it is the element; a name that was shared at
  // recording needs its row, card or section; a look-alike that stood beside it at
  // recording is another element.
  function judge(id, f, anchors, alike, e) {
    let got = 0;
    let total = 0;
    const add = (weight, sim) => { total += weight; got += weight * sim; };
    const tests = Object.keys(id.test_ids || {}).length > 0;
    // Proven by an attribute that was unique at recording and is unique now: a test id,
    // id or name anchors it outright; a placeholder, label or autocomplete token proves a
    // renamed element but still yields to a look-alike from its time.
    const anchored = (anchors.test && sameTestId(id, f)) || (anchors.id && f.id === id.id) ||
      (anchors.name_attr && f.name_attr === id.name_attr && f.tag === id.tag);
    const attested = (anchors.placeholder && f.placeholder === id.placeholder) ||
      (anchors.label && f.label === id.label) ||
      (anchors.autocomplete && f.autocomplete === id.autocomplete) ||
      (anchors.target && sameTarget(id, f) && !otherForm(id, f)) ||
      (anchors.sole && f.kind === "text" && !contradicts(id, f));
    const name = compareNames(id, f);
    // A button's or a link's name says what it does, an option's or a radio button's what
    // it picks: an id or a name attribute now on a control named otherwise ("Reject"
    // where "Approve" stood, with its id; a suggestion "opt-0" that shows another
    // customer) proves nothing.  What still does: a test id, made to follow the control,
    // and where it leads (a link's address, a submit's form), which is what it does.
    // A toggle named for the press that undoes it ("Unpin" where "Pin" stood) is the
    // control in the other state: to press it (not to tick it: that reads its state
    // first), an id on it proves nothing, and its row proves nothing.
    const undoes = !!args.pressing && kindOfId(id) === "toggle" && name.sim !== null &&
      flipped(id.name, f.name);
    const renamedAct = renamedActOf(id, f, name) || undoes;
    // Nor does a submit's form under a name without a word of the recorded one: one
    // address takes many forms ("Go" of a list and "Yes, I'm sure" of its confirmation
    // both post to /orders/), where "Save changes" in place of "Save" is a renamed one.
    // A name or id numbered in a series (form-2-qty) proves no element: the number
    // counts rows.
    const leads = anchors.target && sameTarget(id, f) && !otherForm(id, f, name);
    const sameId = !!id.id && f.id === id.id && !anchors.numberedId;
    const sameNameAttr = !!id.name_attr && f.name_attr === id.name_attr && f.tag === id.tag &&
      !anchors.numberedName;
    const proven = (tests && sameTestId(id, f)) || leads ||
      (!renamedAct && (sameId || sameNameAttr || attested));
    // A renamed element an attribute proves: its old name says nothing against it.
    if (name.sim !== null && !(proven && name.sim < MIN_NAME)) add(W.name, name.sim);
    if (id.role) add(W.role, f.role === id.role ? 1 : 0);
    add(W.tag, f.tag === id.tag ? 1 : 0);
    if (id.type || f.type) add(W.type, f.type === id.type ? 1 : 0);
    if (tests) add(W.test, sameTestId(id, f) ? 1 : 0);
    if (id.id && !anchors.numberedId) add(W.id, f.id === id.id ? 1 : overlap(id.id, f.id) * 0.8);
    if (id.name_attr && !anchors.numberedName) add(W.name_attr, f.name_attr === id.name_attr ? 1 : overlap(id.name_attr, f.name_attr) * 0.8);
    if (id.placeholder) add(W.placeholder, textSim(id.placeholder, f.placeholder));
    if (id.label) add(W.label, textSim(id.label, f.label || ""));
    if (id.autocomplete) add(W.autocomplete, f.autocomplete === id.autocomplete ? 1 : 0);
    if (id.text) add(W.text, textSim(id.text, f.text));
    // A row may have become a card and back: compare the text around it either way.
    const rowSim = id.row ? overlap(id.row, f.row || f.card) : null;
    const cardSim = !id.row && id.card ? overlap(id.card, f.card || f.row) : null;
    // The recorded section may be any of the titles it sits under now.
    const sectionSim = id.section ? Math.max(0, ...f.titles.map((t) => textSim(id.section, t))) : null;
    if (rowSim !== null || cardSim !== null) add(W.row, rowSim !== null ? rowSim : cardSim);
    if (sectionSim !== null) add(W.section, sectionSim);
    if (id.box) add(W.position, Math.exp(-distance(id.box, f.box) / 400));
    if (id.look) add(W.look, lookSim(id.look, f.look));
    const why = [];
    // An attribute may prove a renamed element, or a role within its kind (a link that
    // became a button), never a different kind of control (a checkbox that became a field).
    // Its row proves a row's box or field: a row that reads the same, holding one control
    // of its kind now, as it did at recording.  Only for controls that hold a state: a
    // button's name says what it does, and the row's one button may do something else now.
    const kind = kindOfId(id);
    const rowProof = STATEFUL.has(kind) && kind === f.kind && rowSim !== null &&
      rowSim >= ROW_PROOF && !!f.row && (!id.row_peers || id.row_peers === 1) &&
      rowKindCount(e) === 1;
    // ... or, where the name says the same (or the row proves it), another control of its
    // kind or family: a filter link that became a button, a tab or a radio button; a
    // checkbox that became a toggle button.
    const sameName = name.sim !== null && !name.core && name.sim >= STRONG_NAME;
    const kindOk = !id.role || f.role === id.role ||
      (kind === f.kind && (proven || sameName || rowProof)) ||
      (sameName && familiesOf(kind, id.role).some((x) => familiesOf(f.kind, f.role).includes(x)));
    if (!kindOk) why.push(`role ${f.role || "none"}`);
    // A name that is a number alone says where, not which: a day of a month, a page of
    // a list ("15" under "December 2026" is not the 15 under "January 2027").  A table's
    // cell is named by what it holds, a record's value: its row says whose ("9.99" in
    // Widget's row, not the 9.99 of Gadget's, listed first another day).
    const isCell = kind === "cell" || id.role === "cell" || id.role === "gridcell";
    let needsContext = id.name_count > 1 || !id.name || args.crossing || name.core ||
      /^\d+$/.test(id.name.trim()) || (isCell && !!id.row);
    if (!proven && id.name && (name.gap || name.sim < MIN_NAME)) {
      // A name on one side only (or only repeating its row) is no mismatch where the row
      // proves the element; nor is another wording of a row's checkbox.
      if (rowProof && (name.gap || (kind === "toggle" && !undoes))) {
        needsContext = true;
      }
      else why.push(`name ${JSON.stringify(f.name)}`);
    }
    if (!anchored && alike.has(key(f.name))) why.push(`look-alike ${JSON.stringify(f.name)}`);
    // A choice's name says what it picks: one that gained a word picks another thing
    // ("Standard (legacy) billed monthly" where "Standard billed monthly" was chosen),
    // however alike the rest reads, unless a test id or a unique id proves it.
    if (kind === "choice" && !anchored && !why.some((w) => w.startsWith("name ")) &&
        gainsWords(baseName(id), baseName(f))) {
      why.push(`name ${JSON.stringify(f.name)}`);
    }
    // A link that leads where the recorded one led does what it did, wherever it sits (the
    // same link in a sidebar and a header); not a submit: forms posting to one address
    // differ by what they hold (each row's "Delete").
    const leadsThere = !id.method && sameTarget(id, f);
    if (needsContext && !anchored && !attested && !leadsThere) {
      why.push(...contextMisfits(id, rowSim, cardSim, sectionSim));
      // A row that read as nothing (a line just added, its fields still empty) is not a
      // row that reads as something now.
      if (!id.row && !id.card && id.row_peers > 0 && words(f.row).length) why.push("another row");
    } else if ((STATEFUL.has(kind) || kind === "list") && !id.row && id.section &&
               f.titles.length && sectionSim < MIN_CONTEXT && !anchored &&
               twinUnder(e, id)) {
      // A field (or a box, a choice) whose name the page showed once at recording,
      // found under another title while the page holds one of its name under the
      // recorded title, is that one's twin: its name says what it holds of its part
      // alone (the billing address's Street, where the shipping address's was, its part
      // now closed; a wizard's Name on the contact's step, the company's still to come;
      // a tab's Title).  Without such a twin another title says nothing (a new release's
      // layout); nor does a button's: its name says what it does, wherever it moved.
      why.push("another section");
    }
    // A control in a row acts on that row's record.  In a row that lacks every word that
    // told the recorded row from the one most like it, it is the other record's, whatever
    // an attribute or where it leads says: ids, addresses and test ids made of a record's
    // number point at whichever record has that number where the replay runs.
    if (id.row_words && id.row_words.length && (f.row || f.card) && !why.includes("another row")) {
      const theirs = new Set(words(f.around || f.row || f.card));
      // A number among them must be there itself: "Order 33 … 13.00" still says "13" of
      // "Order 3 … 13.00", and is order 33.
      const numbers = id.row_words.filter((w) => /^\d+$/.test(w));
      if (!id.row_words.some((w) => theirs.has(w)) || numbers.some((w) => !theirs.has(w))) {
        why.push("another row");
      } else if (e && !(id.shows && id.shows.row)) {
        // The text (its cell) that holds the first of those words reads as it did, or
        // with numbers more (a count): "New Globex" there, of York too, is another record
        // (Globex gone, New Globex listed).
        const first = id.row_words.find((w) => !/^\d+$/.test(w));
        const recorded = new Set(words(id.row));
        const cell = first && piecesOf(e, f.name).find((p) => words(p).includes(first));
        if (cell && words(cell).some((w) => !recorded.has(w) && !/^\d+$/.test(w))) {
          why.push("another row");
        }
      }
    }
    // A row that was the list's only one at recording has no other to be told from: its
    // record's words are all its words but the control's own name.  A button, a box or a
    // choice in a row now without the first of them (its record's name, number or date),
    // or of half of them or fewer, is another record's ("More actions" of Acme's row
    // where only Globex's was listed; "Globe Trotters York Active" is not "Globex York
    // Active"), whatever an attribute says; a row of which a word changed (its status)
    // is its record's.
    // (A row that shows a parameter's value is told by that value whole: notShown.)
    if (!(id.row_words || []).length && id.row && f.row && id.name_count <= 1 &&
        !(id.shows && id.shows.row) &&
        ["act", "toggle"].includes(familyOf(kind)) && !why.includes("another row")) {
      const own = new Set(words(baseName(id) || ""));
      const mine = words(id.row).filter((w) => !own.has(w));
      const theirs = new Set(words(f.around || f.row));
      const kept = mine.filter((w) => theirs.has(w)).length;
      if (mine.length && (!theirs.has(mine[0]) || kept * 2 <= mine.length)) {
        why.push("another row");
      }
    }
    // A control told from the others of its name in its row by its column's header (a
    // permissions matrix's box under "Write") is another under another header, whatever
    // an attribute says (a box numbered by its place): "Export", added before "Write".
    if (id.column && lower(columnOf(e)) !== lower(norm(id.column))) why.push("another column");
    // A parameter's value stands whole where its placeholder stood, whatever else says
    // which element it is: the row for "Ann Lee" is not Ann Leeds's, nor "Ann"'s Anna's,
    // however alike the rest of the row reads.
    why.push(...notShown(id, f, needsContext, e));
    const ok = why.length === 0;
    return {
      score: total ? got / total : 0, ok, why,
      attested: !!(anchored || attested), rowProof: ok && rowProof,
    };
  }

  // A button, a link or a choice (an option, a radio button) now named otherwise than the
  // recorded one.
  function renamedActOf(id, f, name = compareNames(id, f)) {
    return familyOf(kindOfId(id)) === "act" && name.sim !== null && !name.gap &&
      name.sim < MIN_NAME;
  }

  // A submit renamed to words none of which it had: another form's, wherever it posts.
  function otherForm(id, f, name = compareNames(id, f)) {
    return !!id.method && renamedActOf(id, f, name) && !sharesWord(baseName(id), baseName(f));
  }

  // A name without the count a badge inside the control shows ("Active 1" is "Active"):
  // counts change with the data, the control stays.
  const baseName = (x) => x.name_base || x.name;

  function badgeFree(e, name) {
    if (!name || !e.children.length) return "";
    let text = ` ${name} `;
    let found = false;
    for (const c of e.querySelectorAll("*")) {
      const t = norm(c.textContent);
      if (c.children.length || !/^[([]?\d+[)\]]?$/.test(t)) continue;
      const at = text.lastIndexOf(` ${t} `);
      if (at < 0) continue;
      text = text.slice(0, at) + text.slice(at + t.length + 1);
      found = true;
    }
    return found ? norm(text) : "";
  }

  // What rules out the page's only field being the recorded one: another input type
  // (email, password, number...), or another autocomplete token.
  function contradicts(id, f) {
    const textual = (t) => !t || t === "text" || t === "search";
    if (!(textual(id.type) && textual(f.type)) && id.type !== f.type) return true;
    return !!(id.autocomplete && f.autocomplete && id.autocomplete !== f.autocomplete);
  }

  // How the names compare: sim (null: nothing to compare), gap (one side has no name of its
  // own: none, or only its row's words) and core (equal only once the row's words are left
  // out, as "Toggle Todo Buy milk" in the row "Buy milk" is "Toggle Todo": then the row
  // must match).
  function compareNames(id, f) {
    if (!id.name && !f.name) return { sim: null, gap: false, core: false };
    if (!id.name || !f.name) return { sim: null, gap: true, core: false };
    const plain = textSim(baseName(id), baseName(f));
    if (plain >= MIN_NAME) return { sim: plain, gap: false, core: false };
    const a = nameCore(baseName(id), id.row);
    const b = nameCore(baseName(f), f.row);
    if (!a || !b) return { sim: null, gap: true, core: false };
    const core = textSim(a, b);
    return core >= MIN_NAME ? { sim: core, gap: false, core: true } : { sim: plain, gap: false, core: false };
  }

  // The values given to the identity's texts (its ``shows``) that the element does not
  // show whole where they stood (see standsIn): in its own texts or its row's (a name's,
  // a label's, a row's: "Delete" in the row of "Ann Lee", or named "Delete Ann Lee").  A
  // card's or a section's only where they tell it apart (``context``: see
  // contextMisfits), or where the card is one record's tile (:func:`recordCard`) or the
  // section one record's (:func:`recordSection`): the card around a form's only field
  // may hold a value typed before, and lose it on another release; the one around a
  // search box and its button may list records without the one searched for.
  const SHOWN_IN = { name: "name", name_base: "name", aria_label: "name", label: "label",
    text: "text", section: "section" }; // (and a row's or card's: "row")
  function notShown(id, f, context, e) {
    const out = [];
    let cells = null; // the row's (or card's) texts read apart, once asked for
    const pieces = () => (cells = cells || (e ? piecesOf(e, f.name) : [f.around || f.row || f.card || ""]));
    const mine = { name: [f.name, f.aria_label], label: [f.label], text: [f.text],
      section: f.titles || [] }; // (a row's or card's: its pieces)
    const own = [f.name, f.aria_label, f.label, f.text, f.around || f.row || f.card];
    for (const [text, values] of Object.entries(id.shows || {})) {
      const loose = text === "card" || text === "section";
      const held = text === "card" ? recordCard(id, f, values) : recordSection(id, f, values);
      if (loose && !context && !held) continue;
      const kind = SHOWN_IN[text] || "row";
      // (where not even a word of it stands, it is nowhere: no texts read apart for that)
      const anywhere = loose ? (text === "section" ? mine.section : [f.around || f.card]) : own;
      for (const value of values) {
        if (!anywhere.some((t) => holdsWhole(t, value))) {
          out.push(`${kind} without ${JSON.stringify(value)}`);
          continue;
        }
        const beside = besides(id[text], value);
        const there = kind === "row" ? pieces() : mine[kind];
        // Shown in another of its texts than the recorded one: ending a name, a label or
        // its text ("Delete Ann"), or a cell of its own (the name now beside the button).
        const elsewhere = () => !loose &&
          (standsIn(kind === "row" ? [] : pieces(), value, [["", ""]], true) ||
           standsIn(Object.entries(mine).filter(([k]) => k !== kind && k !== "section")
             .flatMap(([, texts]) => texts), value, [], false));
        if (!standsIn(there, value, beside, kind === "row") && !elsewhere()) {
          out.push(`${kind} without ${JSON.stringify(value)}`);
        }
      }
    }
    return out;
  }

  // Where ``value`` stands in ``text`` (an identity's text, the values filled in): for each
  // place, the word before it and the word after it ("" at the text's edge; null past
  // where a long text was cut: unknown).
  function besides(text, value) {
    const want = words(value);
    const have = words(text || "");
    const cutShort = (text || "").length >= MAX_TEXT;
    const out = [];
    for (let at = 0; want.length && at + want.length <= have.length; at++) {
      if (!want.every((w, i) => have[at + i] === w)) continue;
      const after = at + want.length < have.length ? have[at + want.length] : cutShort ? null : "";
      out.push([at > 0 ? have[at - 1] : "", after]);
    }
    return out;
  }
  const MAX_TEXT = 200; // characters an identity keeps of a text (cut)

  // Whether ``value``'s words stand whole in one of ``pieces`` as they stood in the
  // recorded text (``beside``: what besides found there): at the piece's edge where
  // they stood at the text's ("Edit Ann" is not "Edit Ann Lee"); and, in a row's or a
  // card's piece (``strict``: a cell, a badge), beside no word but the one beside them
  // then, or a number (the cell "Ann Lee" is another customer's than "Ann" in the row
  // "Ann Bronze", however like the rest of the row reads; "Buy milk 3" is the item "Buy
  // milk 2" was, its count in the same run of text).  Where they stood in no recorded
  // text (``beside`` empty): ending a piece ("Delete Ann", not "Delete Ann Lee").
  function standsIn(pieces, value, beside, strict) {
    const want = words(value);
    if (!want.length) return true;
    const fits = (now, was) => now === null || was === null ||
      (was !== "" && (!strict || now === was || /^\d+$/.test(now)));
    for (const piece of pieces) {
      const have = words(piece || "");
      for (let at = 0; at + want.length <= have.length; at++) {
        if (!want.every((w, i) => have[at + i] === w)) continue;
        const before = at > 0 ? have[at - 1] : null;
        const after = at + want.length < have.length ? have[at + want.length] : null;
        if (beside.length ? beside.some(([b, a]) => fits(before, b) && fits(after, a)) : after === null) {
          return true;
        }
      }
    }
    return false;
  }

  // Whether the element's card is one record's tile, whose value says which record the
  // element acts on (the Delete in the one tile a search left): the element acts (it is
  // no field one types into), its card is no form (a search box's, whose box shows a
  // value given or nothing: the page around it may list anyone; a tile's own fields,
  // its seats or its note as the app wrote them, leave it a tile), and it reads as the
  // recorded card but for the values (another person's tile, not another release's).
  // (The export's copy: card_showing in automation/recording/exportplaces.py.)
  function recordCard(id, f, values) {
    if (["text", "list"].includes(kindOfId(id))) return false;
    const typed = (shown) => !words(shown).length || values.some((v) => holdsWhole(shown, v));
    if ((f.card_fields || []).some(typed)) return false;
    const given = new Set(values.flatMap((v) => words(v)));
    const rest = new Set(words(id.card || "").filter((w) => !given.has(w)));
    if (!rest.size) return false;
    const have = new Set(words(f.around || f.card || ""));
    let kept = 0;
    for (const w of rest) if (have.has(w)) kept++;
    return kept / rest.size >= ROW_PROOF;
  }

  // Whether the element's section, holding a parameter's value, is one record's page or
  // part (the heading "Ann Leeds" over the only Delete, on the page a search opened):
  // a title it sits under reads as the recorded one but for the values, or the recorded
  // one was the values alone.
  // (The export's, more lenient: section_showing in automation/recording/exportplaces.py.)
  function recordSection(id, f, values) {
    const given = new Set(values.flatMap((v) => words(v)));
    const rest = words(id.section || "").filter((w) => !given.has(w));
    if (!rest.length) return true;
    return (f.titles || []).some((t) => {
      const have = new Set(words(t));
      return rest.filter((w) => have.has(w)).length / rest.length >= ROW_PROOF;
    });
  }

  // Whether ``value``'s words stand in ``text``, one after another, each whole.
  function holdsWhole(text, value) {
    const want = words(value);
    const have = words(text || "");
    if (!want.length) return true;
    for (let at = 0; at + want.length <= have.length; at++) {
      if (want.every((w, i) => have[at + i] === w)) return true;
    }
    return false;
  }

  // Whether the document of e holds another element of its tag named as recorded under
  // a title that reads as the recorded section, shown or not: its twin, the one the
  // page showed at recording (the shipping address's Street, its part closed; a wizard's
  // step still to come; a tab not chosen).  Asked once per element in a call.
  const twins = new Map();
  function twinUnder(e, id) {
    if (!twins.has(e)) {
      const name = key(id.name);
      twins.set(e, !!name && [...e.ownerDocument.querySelectorAll(e.tagName)].some((o) =>
        o !== e && key(nameOf(o)) === name &&
        titlesOf(o, nameOf(o)).some((t) => textSim(id.section, t) >= MIN_CONTEXT)));
    }
    return twins.get(e);
  }

  // Whether a toggle's name now says the press that undoes the recorded one: "Unpin"
  // for "Pin", "Mark as unread" for "Mark as read", "Not done" for "Done" (a word with
  // "un" before it, or "not" or "no" added), or the other way.
  function flipped(a, b) {
    const [x, y] = [words(a), words(b)];
    const undone = (p, q) => (q.length === p.length && q.some((w, i) => w === `un${p[i]}`) &&
        q.every((w, i) => w === p[i] || w === `un${p[i]}`)) ||
      (q.length === p.length + 1 && ["not", "no"].some((n) => {
        const at = q.indexOf(n);
        return at >= 0 && [...q.slice(0, at), ...q.slice(at + 1)].join(" ") === p.join(" ");
      }));
    return undone(x, y) || undone(y, x);
  }

  // A name shared at recording must keep its table row or list item; out of rows, its
  // card and its section (a card's text alone can be the same in two sections: the same
  // "Phone" field beside "Email" in the billing and the shipping address).
  // Rows alike word for word (its name shared, and no word told its row from the one most
  // like it: a grouped table's "1 Park Row" under "Home" and under "Work") are told apart
  // by their section.
  function contextMisfits(id, rowSim, cardSim, sectionSim) {
    if (rowSim !== null) {
      if (rowSim < MIN_CONTEXT) return ["another row"];
      const alike = id.name_count > 1 && !(id.row_words || []).length;
      return alike && sectionSim !== null && sectionSim < MIN_CONTEXT ? ["another section"] : [];
    }
    const out = [];
    if (cardSim !== null && cardSim < MIN_CONTEXT) out.push("another card");
    if (sectionSim !== null && sectionSim < MIN_CONTEXT) out.push("another section");
    return out;
  }
