// Element identities, describing an element: what a step records of the element it
// acts on (capture).
// identity.py puts this file into identity.js where its "@include" line is, inside
// the one closure: it uses the constants and helpers defined there.

  function roots() {
    const out = [document];
    for (let i = 0; i < out.length; i++) {
      for (const e of out[i].querySelectorAll("*")) if (e.shadowRoot) out.push(e.shadowRoot);
    }
    return out;
  }

  function textOf(e) {
    if (e.tagName === "INPUT" || e.tagName === "TEXTAREA" || e.tagName === "SELECT") return "";
    return cut(norm(e.innerText || e.textContent || ""), 200);
  }

  // The row (table row or list item, through shadow roots) an element sits in.  A custom
  // element with a shadow root of its own, repeated beside others of its tag, is a row
  // too (a <todo-item> drawing its checkbox and title inside).
  function rowElOf(e) {
    for (let n = parentOf(e); n; n = parentOf(n)) {
      if (n.matches(ROW) || repeatedComponent(n)) return n;
    }
    return null;
  }

  function repeatedComponent(n) {
    if (!n.shadowRoot || !n.tagName.includes("-") || !n.parentElement) return false;
    let same = 0;
    for (const sibling of n.parentElement.children) if (sibling.tagName === n.tagName) same++;
    return same > 1;
  }

  // Its row's text as a person reads it: through open shadow roots and slots, without the
  // element itself, the row's buttons (their words name actions, not the row) and text
  // that is hidden or only there for screen readers (a checkbox's clipped "Toggle Todo
  // Buy milk" beside the visible "Buy milk").
  // A row of fields reads as the values the app wrote into them (their value attribute,
  // a select's option chosen in the page as sent, the value before typing where the app
  // copies keys into the attribute), never a value typed since: an order line "Part 25"
  // is told from "Part 24" by them, and a row just added reads as empty.
  // The row's text leaves out the element's own label ("Done" beside each box), unless
  // that label is all the row says (a box labelled by the item's title); and a row that is
  // all the element's own text (a role=checkbox div holding the title) is that text.
  // An identity keeps 200 characters of it; what tells rows apart is read in the whole
  // text (rows alike for their first 200 characters: a long note before the number).
  function rowOf(e) {
    return cut(rowTextOf(e), 200);
  }

  function rowTextOf(e, breaks = false) {
    const row = rowElOf(e);
    if (!row) return "";
    const labels = ownLabels(e);
    for (const skip of [new Set([e, ...labels]), new Set([e]), new Set()]) {
      const text = seenText(row, skip, true, breaks);
      if (words(text).length) return text;
    }
    return "";
  }

  // The texts of e's row (else its card) a person reads apart: each cell's, each block's,
  // each badge's ("Ann Lee" and "Bronze", where the row's text is "Ann Lee Bronze").
  function piecesOf(e, name) {
    const row = rowTextOf(e, true);
    const text = row || cardFound(e, name, [], true).text;
    return text.split(BREAK).map(norm).filter((t) => words(t).length);
  }

  // The elements that label e: its <label>s and what aria-labelledby points at.
  function ownLabels(e) {
    const out = e.labels ? Array.from(e.labels) : [];
    const ids = (e.getAttribute("aria-labelledby") || "").split(/\s+/).filter(Boolean);
    const root = e.getRootNode();
    for (const id of ids) {
      const label = root.getElementById ? root.getElementById(id) : null;
      if (label && !label.contains(e)) out.push(label);
    }
    return out;
  }

  // skip: a node, or a Set of nodes, left out with what they hold; fields: with the values
  // the app wrote into the fields; breaks: with BREAK where a box (a cell, a block, a
  // badge; a field) begins and ends, between the texts a person reads apart (see piecesOf).
  function seenText(root, skip, fields = false, breaks = false) {
    const skipped = skip instanceof Set ? skip : new Set(skip ? [skip] : []);
    const parts = [];
    let left = 2000;
    const walk = (n) => {
      if (left <= 0 || skipped.has(n)) return;
      if (n.nodeType === 3) {
        if (n.data.trim()) {
          parts.push(n.data);
          left -= n.data.length;
        }
        return;
      }
      let edge = " ";
      let kids = n.childNodes;
      if (n.nodeType === 1) {
        // (an editor typed into, as a field: the text the app wrote there before)
        const editor = n.isContentEditable && typedBefore(n) !== undefined;
        if (fields && (FIELD_TAGS.has(n.tagName) || editor) && shown(n)) {
          const value = writtenValue(n);
          if (value) {
            parts.push(breaks ? BREAK : " ", value, breaks ? BREAK : " ");
            left -= value.length;
          }
          return;
        }
        if (UNSEEN_TAGS.has(n.tagName) || !shown(n) || srOnly(n)) return;
        if (n !== root && (n.tagName === "BUTTON" || roleOf(n) === "button")) return;
        if (breaks && n !== root && !inline(n)) edge = BREAK;
        if (n.shadowRoot) kids = n.shadowRoot.childNodes;
        else if (n.tagName === "SLOT") {
          const assigned = n.assignedNodes({ flatten: true });
          if (assigned.length) kids = assigned;
        }
        parts.push(edge);
      }
      for (const c of kids) walk(c);
      if (edge === BREAK) parts.push(BREAK);
    };
    walk(root);
    return norm(parts.join(""));
  }

  // What seenText marks where a box begins or ends (no space: norm keeps it).
  const BREAK = "\uE000";

  // Whether n's text runs on with its neighbours' ("Ann <b>Lee</b>"), not in a box of its
  // own (a cell, a block, a badge, a line broken before it).
  function inline(n) {
    if (n.tagName === "BR") return false;
    const display = getComputedStyle(n).display;
    return display === "inline" || display === "contents";
  }

  const FIELD_TAGS = new Set(["INPUT", "SELECT", "TEXTAREA"]);
  const VALUELESS = new Set(["hidden", "password", "checkbox", "radio", "submit", "button",
    "reset", "image", "file"]);

  // The value n had before it was typed into, where it still shows what was typed.
  function typedBefore(n) {
    const typed = window.__tabwrightTyped;
    return typed ? typed.before(n) : undefined;
  }

  // The value the page was sent with (not one typed since, even where the app copied the
  // keys typed into the value attribute: typed.js remembers the value before); never a
  // password's.
  function writtenValue(n) {
    if (n.tagName === "SELECT") {
      const chosen = Array.from(n.options).filter((o) => o.defaultSelected);
      return norm(chosen.map((o) => o.textContent).join(" "));
    }
    const before = typedBefore(n);
    if (before !== undefined) return VALUELESS.has(lower(n.getAttribute("type"))) ? "" : norm(before);
    if (n.tagName === "TEXTAREA") return norm(n.defaultValue);
    return VALUELESS.has(lower(n.getAttribute("type"))) ? "" : norm(n.getAttribute("value") || "");
  }

  // Clipped to a pixel or so: text for screen readers only.
  function srOnly(n) {
    const r = n.getBoundingClientRect();
    if (r.width > 2 || r.height > 2) return false;
    const s = getComputedStyle(n);
    return s.overflow === "hidden" || s.clip !== "auto" || s.clipPath !== "none";
  }

  // How many controls of its kind its row holds, itself included (0: not in a row).
  function rowKindCount(e) {
    return rowKindPeers(e).length;
  }

  // The controls of its kind its row holds, itself included (none: not in a row).
  function rowKindPeers(e) {
    const row = rowElOf(e);
    if (!row) return [];
    const kind = kindOfEl(e);
    const found = [];
    const walk = (n) => {
      for (const c of n.children) {
        if (!shown(c)) continue;
        if (roleOf(c) && kindOfEl(c) === kind && visible(c)) found.push(c);
        if (c.shadowRoot) walk(c.shadowRoot);
        walk(c);
      }
    };
    walk(row.shadowRoot || row);
    return found;
  }

  // Its column's header, where that tells it from another control of its kind and name in
  // its row (a matrix's unnamed boxes, a "Yes" in each column); else "".
  function columnTelling(e, name) {
    const column = columnOf(e);
    if (!column) return "";
    const twins = rowKindPeers(e).filter((p) => p !== e && nameOf(p) === name);
    return twins.some((p) => columnOf(p) !== column) ? column : "";
  }

  // Rendered, or a box-less wrapper (display: contents) whose children may be.
  function shown(n) {
    return visible(n) || getComputedStyle(n).display === "contents";
  }

  // The words of a name that its row does not already say ("Toggle Todo" of "Toggle Todo
  // Buy milk" in the row "Buy milk"): what the name adds to the row.
  function nameCore(name, row) {
    const inRow = new Set(words(row));
    return words(name).filter((w) => !inRow.has(w)).join(" ");
  }

  // The titles it sits under, nearest first: each labelled group's (its name, else its
  // first heading), each container's whose first child is a heading or reads as one (a
  // kanban lane's "Review" div, a card's title; a disclosure's summary, a table's
  // caption), then the nearest heading before it (or term, group's header row, or title
  // of a series).
  // (The pytest export, which must stand alone, reads them by a copy of this rule:
  // TITLES_JS in automation/recording/exportplaces.py.  Change both.)
  function titlesOf(e, name) {
    const out = [];
    const push = (t) => {
      const title = cut(norm(t), 120);
      if (title && !out.includes(title)) out.push(title);
    };
    for (let n = parentOf(e); n && out.length < MAX_TITLES; n = parentOf(n)) {
      push(groupTitle(n) || firstChildTitle(n, e, name));
    }
    push(headingBefore(e));
    return out;
  }

  function groupTitle(n) {
    // A disclosure's summary titles it; a table's caption.
    const own = n.tagName === "DETAILS" ? n.querySelector(":scope > summary")
      : n.tagName === "TABLE" ? n.querySelector(":scope > caption") : null;
    if (own) return own.textContent;
    if (!n.matches(GROUP)) return "";
    const named = nameOf(n);
    if (named) return named;
    const heading = n.querySelector(HEADING);
    return heading && headsAll(n, heading) ? heading.textContent : "";
  }

  // Whether a container's first heading heads all of it: not where another heading of
  // its rank or higher follows in it (a <main> or a <div> with an <h2> over each
  // address: each heads its part, the nearest heading before an element says which).
  // Asked once per container in a call.
  const heads = new Map();
  function headsAll(n, heading) {
    if (heading.tagName === "LEGEND") return true;
    if (!heads.has(n)) {
      const rank = rankOf(heading);
      heads.set(n, ![...n.querySelectorAll(RANKED)]
        .some((h) => h !== heading && !within(heading, h) && rankOf(h) <= rank));
    }
    return heads.get(n);
  }

  function rankOf(h) {
    const level = /^H([1-6])$/.exec(h.tagName);
    return level ? Number(level[1]) : parseInt(h.getAttribute("aria-level"), 10) || 2;
  }

  // A container's first child, as its title: a heading, or short text set bold or larger
  // than the container's, without controls, and not the element's own label.
  function firstChildTitle(n, e, name) {
    const first = n.firstElementChild;
    if (!first || within(first, e) || first.matches(NOT_TITLE)) return "";
    const text = norm(first.textContent);
    if (!text || text.length > TITLE_TEXT || !words(text).length) return "";
    const label = words(name);
    if (words(text).every((w) => label.includes(w))) return "";
    if (first.querySelector(CONTROL) || !visible(first)) return "";
    if (first.matches(HEADING)) return headsAll(n, first) ? text : "";
    return styledTitle(first, n) && !inSeries(first) ? text : "";
  }

  // Whether t is set as a title in its container n: bold, or larger type.
  // <div class="title"><strong>Review</strong></div>: the style is the inner element's.
  function styledTitle(t, n) {
    const inner = t.children.length === 1 ? t.firstElementChild : null;
    const styled = inner && norm(inner.textContent) === norm(t.textContent) ? [t, inner] : [t];
    return styled.some((x) => looksLikeTitle(x, n));
  }

  // Whether t is one of a series of titles side by side: another child of its parent of
  // its tag and class is short text without controls, set as a title too (each address's
  // bold name over its text and its Delete).  Then t titles its part, not its container:
  // headingBefore finds it for the elements after it.  (The lines of each tag and class
  // are counted once per parent in a call.)
  const series = new Map();
  function inSeries(t) {
    const n = t.parentElement;
    if (!n) return false;
    if (!series.has(n)) series.set(n, new Map());
    const counts = series.get(n);
    const kind = `${t.tagName} ${t.className}`;
    if (!counts.has(kind)) {
      counts.set(kind, [...n.children].filter((o) => o.tagName === t.tagName &&
        o.className === t.className && shortTitle(o) && styledTitle(o, n)).length);
    }
    const self = shortTitle(t) && styledTitle(t, n) ? 1 : 0;
    return counts.get(kind) - self > 0;
  }

  function groupRow(s) {
    return s.tagName === "TR" && s.cells.length === 1 && s.cells[0].tagName === "TH";
  }

  // Short text without controls, as a title is; a title is text or one inner element.
  function shortTitle(t) {
    if (t.childElementCount > 1 || (t.firstElementChild && t.firstElementChild.childElementCount)) {
      return false;
    }
    const text = norm(t.textContent);
    return !!text && text.length <= TITLE_TEXT && words(text).length > 0 &&
      !t.matches(NOT_TITLE) && !t.querySelector(CONTROL);
  }

  function looksLikeTitle(t, container) {
    const s = getComputedStyle(t);
    const bold = (parseInt(s.fontWeight, 10) || 400) >= 600;
    return bold || parseFloat(s.fontSize) > 1.1 * parseFloat(getComputedStyle(container).fontSize);
  }

  function headingBefore(e) {
    let steps = 0;
    for (let n = e; n && steps < 200; n = parentOf(n)) {
      for (let s = n.previousElementSibling; s && steps < 200; s = s.previousElementSibling) {
        steps++;
        // A heading; a description list's term (over its dd); a table's row of one
        // header cell (over the rows of its group); a title of a series.
        if (s.matches(HEADING) || s.tagName === "DT" || groupRow(s)) return s.textContent;
        const p = s.parentElement;
        if (p && shortTitle(s) && styledTitle(s, p) && inSeries(s)) return s.textContent;
        const inner = s.querySelectorAll(HEADING);
        if (inner.length) return inner[inner.length - 1].textContent;
      }
    }
    return "";
  }

  // Its section: the first of its titles that none of the controls sharing its role and
  // name has (what tells it from them), else its nearest title.
  function sectionOf(titles, peerTitles) {
    const theirs = new Set(peerTitles.flat().map(lower));
    return titles.find((t) => !theirs.has(lower(t))) || titles[0] || "";
  }

  function look(e) {
    const s = getComputedStyle(e);
    const r = e.getBoundingClientRect();
    return [s.backgroundColor, s.color, s.fontSize, s.fontWeight, s.borderRadius,
      Math.round(r.width / 8), Math.round(r.height / 8)].join("|");
  }

  function selectorsOf(e) {
    const root = e.getRootNode();
    const count = (sel) => {
      try {
        return root.querySelectorAll(sel).length;
      } catch (err) {
        return 0; // a value this document can't put in a selector
      }
    };
    const unique = (sel) => count(sel) === 1 && root.querySelector(sel) === e;
    const q = (v) => JSON.stringify(v);
    const tag = lower(e.tagName);
    const out = [];
    const add = (sel) => { if (!out.includes(sel) && unique(sel)) out.push(sel); };
    for (const attr of TEST_ATTRS) if (e.getAttribute(attr)) add(`[${attr}=${q(e.getAttribute(attr))}]`);
    if (idOf(e)) add("#" + cssEscape(idOf(e)));
    for (const attr of ["aria-label", "name", "placeholder"]) {
      if (e.getAttribute(attr)) add(`${tag}[${attr}=${q(e.getAttribute(attr))}]`);
    }
    // A path, anchored at the nearest ancestor with a unique test id or id.
    const parts = [];
    for (let n = e; n && n.nodeType === 1; n = n.parentElement) {
      if (n !== e) {
        const tid = n.getAttribute("data-testid");
        if (tid && count(`[data-testid=${q(tid)}]`) === 1) {
          parts.unshift(`[data-testid=${q(tid)}]`);
          break;
        }
        if (idOf(n) && count("#" + cssEscape(idOf(n))) === 1) {
          parts.unshift("#" + cssEscape(idOf(n)));
          break;
        }
      }
      let part = lower(n.tagName);
      const parent = n.parentElement;
      if (parent) {
        const same = Array.from(parent.children).filter((c) => c.tagName === n.tagName);
        if (same.length > 1) part += `:nth-of-type(${same.indexOf(n) + 1})`;
      }
      parts.unshift(part);
    }
    add(parts.join(" > "));
    return out;
  }

  // What locate compares; peers are the other visible elements with its role and name.
  function features(e, peers) {
    const role = roleOf(e);
    const name = nameOf(e);
    const r = e.getBoundingClientRect();
    const tests = {};
    for (const attr of TEST_ATTRS) if (e.hasAttribute(attr)) tests[attr] = e.getAttribute(attr);
    const rowText = rowTextOf(e);
    const card = rowText ? { text: "", el: null } : cardFound(e, name, peers);
    const cardText = card.text;
    return {
      role,
      kind: kindOfEl(e),
      name,
      name_base: badgeFree(e, name),
      name_own: name && tw.ownInName ? tw.ownInName(e) : "",
      aria_label: norm(e.getAttribute("aria-label") || ""),
      test_ids: tests,
      name_attr: e.getAttribute("name") || "",
      id: idOf(e),
      placeholder: norm(e.getAttribute("placeholder") || ""),
      label: labelOf(e),
      autocomplete: autocompleteOf(e),
      type: lower(e.getAttribute("type")),
      tag: lower(e.tagName),
      text: textOf(e),
      ...targetOf(e),
      row: cut(rowText, 200),
      card: cut(cardText, 200),
      around: rowText || cardText, // not kept: the row's or card's whole text, in the page
      // not kept: what the fields its card holds show (see recordCard)
      card_fields: card.el ? fieldsShown(card.el, e) : [],
      titles: titlesOf(e, name), // not kept: the section is chosen from them
      box: [r.left + scrollX, r.top + scrollY, r.width, r.height].map((v) => Math.round(v)),
      look: look(e),
    };
  }

  // Where a link or a submit leads: the link's address, or the address its form posts
  // (or gets) to, with the method.  Empty for other elements.
  function targetOf(e) {
    const tag = e.tagName;
    if ((tag === "A" || tag === "AREA") && e.hasAttribute("href")) {
      // A link to this very page (a fragment, "#", a script) leads nowhere it can be told by.
      const here = location.href.split("#")[0];
      const web = /^https?:$/.test(e.protocol || "");
      return { target: web && e.href.split("#")[0] !== here ? e.href : "", method: "" };
    }
    const submits = (tag === "BUTTON" && lower(e.getAttribute("type") || "submit") === "submit") ||
      (tag === "INPUT" && ["submit", "image"].includes(lower(e.getAttribute("type"))));
    if (!submits || !e.form) return { target: "", method: "" };
    const form = e.form;
    const action = e.getAttribute("formaction") || form.getAttribute("action") || "";
    const method = e.getAttribute("formmethod") || form.getAttribute("method") || "get";
    try {
      return { target: new URL(action, document.baseURI).href, method: lower(method) };
    } catch (err) {
      return { target: "", method: "" };
    }
  }

  // Whether a candidate leads where the recorded element led: the same address (its path,
  // and its fragment when either has one; the recorded query's parameters, and others
  // besides), and the same method.  Read decoded, however each was encoded (a page writes
  // "a@b.org", "a%40b.org" or "a+b" for what a form sends as "a%2Bb").
  function sameTarget(id, f) {
    if (!id.target || !f.target) return false;
    if ((id.method || "") !== (f.method || "")) return false;
    let a;
    let b;
    try {
      a = new URL(id.target);
      b = new URL(f.target);
    } catch (err) {
      return false;
    }
    const path = (u) => {
      const p = u.pathname.replace(/\/+$/, "") || "/";
      try {
        return decodeURIComponent(p);
      } catch (err) {
        return p;
      }
    };
    const value = (v) => (v === null ? null : v.replace(/\+/g, " "));
    if (a.origin !== b.origin || path(a) !== path(b) || a.hash !== b.hash) return false;
    for (const [k, v] of a.searchParams) {
      if (value(b.searchParams.get(k)) !== value(v)) return false;
    }
    return true;
  }

  function describe(e, all) {
    const peers = peersOf(e, all);
    const f = features(e, peers);
    f.section = sectionOf(f.titles, peers.map((p) => titlesOf(p, nameOf(p))));
    f.selectors = selectorsOf(e);
    f.name_count = f.name ? peers.length + (visible(e) ? 1 : 0) : 0;
    f.alike = alikeOf(e, f, all);
    f.row_peers = rowKindCount(e);
    f.column = columnTelling(e, f.name);
    f.row_words = rowWordsOf(e, f, peers);
    f.unique = uniqueOf(e, f, all);
    delete f.titles;
    delete f.around;
    delete f.card_fields;
    return f;
  }

  // What tells its row (or card) from the one most like it among those holding a control
  // of its role and name (the invoice's number beside the same customer, date and amount):
  // the words of its whole text that one lacks.  A row that has none of them now is
  // another row.  Of a card, only its numbers: its other words may be those of the part
  // of a form it sits in ("Profile" beside "Billing"), which a redesign changes; its
  // number is its record's (order 1002's card gone, 1003's is not it).
  const MAX_ROW_PEERS = 300;
  function rowWordsOf(e, f, peers) {
    if (!f.around || !peers.length) return [];
    const others = (p) => [e, ...peers.filter((o) => o !== p)];
    const aroundOf = (p) => (f.row ? rowTextOf(p) : cardTextOf(p, f.name, others(p)));
    const mine = new Set(words(f.around));
    let nearest = null;
    for (const p of peers.slice(0, MAX_ROW_PEERS)) { // (a capture stays quick on long lists)
      const theirs = new Set(words(aroundOf(p)));
      if (!theirs.size) continue;
      const apart = [...mine].filter((w) => !theirs.has(w));
      if (apart.length && (nearest === null || apart.length < nearest.length)) nearest = apart;
    }
    if (!nearest) return [];
    return (f.row ? nearest : nearest.filter((w) => /^\d+$/.test(w))).slice(0, 8);
  }

  // The text of the <label>s of a form control.
  function labelOf(e) {
    const labels = e.labels ? Array.from(e.labels) : [];
    return cut(norm(labels.map((l) => l.innerText || l.textContent || "").join(" ")), 120);
  }

  // An autocomplete token says what a field is for ("email", "new-password"); on/off don't.
  function autocompleteOf(e) {
    const value = lower(norm(e.getAttribute("autocomplete") || ""));
    return value === "on" || value === "off" ? "" : value;
  }

  // Which of its placeholder, label and autocomplete no other visible element has: each
  // such one picks it out (and, if it still does at replay, anchors it).
  function uniqueOf(e, f, all) {
    const out = [];
    // Whether no other visible element has it: the page's elements are asked whether they
    // are visible (a layout query each) only when there is something to compare.
    let shown = null;
    const none = (fn) => !(shown ||= all.filter((o) => o !== e && visible(o))).some(fn);
    if (f.placeholder && none((o) => norm(o.getAttribute("placeholder") || "") === f.placeholder)) {
      out.push("placeholder");
    }
    if (f.label && none((o) => o.labels && o.labels.length && labelOf(o) === f.label)) {
      out.push("label");
    }
    if (f.autocomplete && none((o) => autocompleteOf(o) === f.autocomplete)) {
      out.push("autocomplete");
    }
    // The page's only field: the todo app's one text box, whatever it is called.
    if (f.kind === "text" && none((o) => roleOf(o) && kindOfEl(o) === "text")) {
      out.push("sole");
    }
    return out;
  }

  function peersOf(e, all) {
    const role = roleOf(e);
    const name = nameOf(e);
    return all.filter((o) => o !== e && roleOf(o) === role && nameOf(o) === name && visible(o));
  }

  // Controls of its kind whose names share a word with its name ("Archive all read" beside
  // "Archive"), the most similar first: if it goes, replay must not take one for it.
  // (A shared word, not a textSim floor: textSim gives 0.5 to "Bold" / "Hiring plan 2025".)
  function alikeOf(e, f, all) {
    const kind = f.kind;
    if (!f.name || !kind) return [];
    const mine = key(f.name);
    const found = new Map();
    for (const o of all) {
      const role = roleOf(o);
      if (o === e || !role || kindOfEl(o) !== kind) continue;
      const name = nameOf(o);
      const k = key(name);
      if (!k || k === mine || found.has(k)) continue;
      if (sharesWord(f.name, name) && visible(o)) found.set(k, { name, sim: textSim(f.name, name) });
    }
    return Array.from(found.values()).sort((a, b) => b.sim - a.sim)
      .slice(0, MAX_ALIKE).map((a) => a.name);
  }

  const elements = (rs) => rs.flatMap((r) => Array.from(r.querySelectorAll("*")));
