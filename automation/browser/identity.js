// Element identities, in the page: what a recorded step knows about its element, and
// how replay finds that element again after the site changed.
//
// Evaluated on demand as (el, args) => ...:
//   args.op "capture": describe el (the element a step is about to act on);
//   args.op "locate":  find args.identity in this document (el is null), or abstain.
// Roles and names come from the snapshot registry (snapshot.js), so they are the ones the
// agent saw.  Open shadow roots are searched; each frame is searched by its own call.
// Whatever goes wrong comes back as {error: message}, never as an exception: the caller
// must be able to tell "this page broke the matcher" from "nothing here fits".
(el, args) => {
  const tw = window.__tabwright;
  if (!tw || !tw.roleOf) return { error: "no registry in this document" };
  const TEST_ATTRS = ["data-testid", "data-test", "data-qa", "data-cy"];
  const ROW = "tr, li, [role=row], [role=listitem], article";
  const GROUP = "fieldset, section, form, dialog, nav, header, footer, aside, main, " +
    "[role=region], [role=group], [role=dialog], [role=toolbar], [role=navigation], " +
    "[role=form], [role=search], [role=tabpanel]";
  const HEADING = "h1, h2, h3, h4, h5, h6, legend, [role=heading]";
  // Never a container's title: controls, labels, and table cells (rows have their text).
  const NOT_TITLE = "label, legend, button, a, input, select, textarea, td, th, tr, li";
  const CONTROL = "a[href], button, input, select, textarea, [tabindex], [role=button]";
  const UNSEEN_TAGS = new Set(["SCRIPT", "STYLE", "TEMPLATE", "NOSCRIPT", "INPUT", "SELECT",
    "TEXTAREA"]);
  const INTERACTIVE = new Set([
    "button", "checkbox", "combobox", "link", "listbox", "menuitem", "menuitemcheckbox",
    "menuitemradio", "option", "radio", "searchbox", "slider", "spinbutton", "switch",
    "tab", "textbox", "treeitem",
  ]);
  // Roles of the same kind of control.
  const KIND = {
    button: "press", link: "press", menuitem: "press", tab: "press", treeitem: "press",
    textbox: "text", searchbox: "text", combobox: "text", spinbutton: "text",
    checkbox: "toggle", switch: "toggle", menuitemcheckbox: "toggle",
    radio: "choice", menuitemradio: "choice", option: "choice",
    listbox: "list",
  };
  // What a control does, whatever its markup: a button with aria-pressed is a toggle.
  const kindOfEl = (e) => {
    const role = roleOf(e);
    if (role === "button" && e.hasAttribute("aria-pressed")) return "toggle";
    return KIND[role] || role;
  };
  // The kind recorded with an identity (older identities: from their role).
  const kindOfId = (id) => id.kind || KIND[id.role] || id.role;
  // Kinds that stand for one another when the name says the same: a filter may be a link,
  // a button, a tab or a radio button ("Active").
  const FAMILY = { press: "act", choice: "act" };
  const familyOf = (kind) => FAMILY[kind] || kind;
  // A toggle button (aria-pressed) is a toggle, and in a toolbar of filters a choice too.
  const familiesOf = (kind, role) =>
    kind === "toggle" && role === "button" ? ["toggle", "act"] : [familyOf(kind)];

  // Words UI writers put in one another's place on the same control ("Sign in" became
  // "Log in", "Next" became "Continue").  Only pairs that mean the same on a control:
  // "Save" / "Apply" or "Cancel" / "Close" often sit side by side doing different things.
  const SYNONYMS = [
    ["submit", "send"], ["next", "continue"], ["back", "previous"],
    ["sign in", "log in", "login", "signin", "logon"],
    ["sign out", "log out", "logout", "signout"], ["sign up", "register"],
    ["delete", "remove"], ["search", "find"], ["close", "dismiss"], ["ok", "okay", "confirm"],
    ["cart", "bag", "basket"], ["zip", "zip code", "postcode", "postal code"],
    ["phone", "telephone"], ["surname", "last name", "family name"],
    ["first name", "given name", "forename"],
  ];
  const SENSE = new Map();
  SYNONYMS.forEach((group, i) => group.forEach((phrase) => SENSE.set(phrase, `~${i}`)));
  // Words too common to make two names look alike.
  const STOP = new Set(["a", "an", "the", "to", "of", "for", "in", "on", "at", "by", "and",
    "or", "with", "all", "my", "your", "this"]);
  // How the decision is made (see identity.py for what each strategy means).
  const MIN_NAME = 0.75; // below this a name does not match, unless an attribute proves it
  const MIN_CONTEXT = 0.6; // a name shared at recording must keep its row, card or section
  const STATEFUL = new Set(["toggle", "text", "choice"]); // kinds whose row may prove them
  const STRONG_NAME = 0.9; // a name this alike lets a control change its role in its family
  const ROW_PROOF = 0.8; // a row this like the recorded one proves the row's only checkbox
  const MIN_FIT = 0.5; // no strategy takes an element that scores below this...
  // ...unless what it found proves it (a unique attribute, its name alone in its family,
  // its row): then only an element that has almost nothing else of it is refused.
  const MIN_PROVEN = 0.15;
  const MIN_SCORE = 0.6; // similarity: the best candidate's score at least this...
  const MARGIN = 0.06; // ...and this far ahead of the next one
  const SWAP = 0.15; // a synonym in place of a word costs this much of a word
  const MAX_ALIKE = 8; // look-alikes kept, the most similar first
  const CARD_TEXT = 300; // more text than this around it: a page region, not a card
  const TITLE_TEXT = 60; // a container's title is short
  const MAX_TITLES = 6;
  const W = {
    name: 0.3, role: 0.1, tag: 0.04, type: 0.04, test: 0.1, id: 0.06, name_attr: 0.08,
    placeholder: 0.03, label: 0.04, autocomplete: 0.03, text: 0.05, row: 0.12, section: 0.08,
    position: 0.05, look: 0.04,
  };

  const norm = (t) => (t || "").replace(/\s+/g, " ").trim();
  const cut = (t, n) => (t.length > n ? t.slice(0, n) : t);
  const lower = (t) => (t || "").toLowerCase();
  const visible = (e) =>
    e.checkVisibility({ visibilityProperty: true }) && e.getClientRects().length > 0;
  const parentOf = (e) => {
    if (e.parentElement) return e.parentElement;
    const root = e.getRootNode();
    return root instanceof ShadowRoot ? root.host : null;
  };
  // Whether o is n or inside it, across shadow roots.
  const within = (n, o) => {
    for (let x = o; x; x = parentOf(x)) if (x === n) return true;
    return false;
  };
  // The attribute, not the property: a form's .id is its control named "id", if it has one.
  const idOf = (e) => e.getAttribute("id") || "";

  const described = new Map(); // element -> its description, made once per call

  // Roles and names, each asked of the registry once per call.
  const roles = new Map();
  const names = new Map();
  const roleOf = (e) => {
    if (!roles.has(e)) roles.set(e, tw.roleOf(e) || "");
    return roles.get(e);
  };
  const nameOf = (e) => {
    if (!names.has(e)) names.set(e, norm(tw.nameOf(e, roleOf(e))));
    return names.get(e);
  };

  // Runs fn; on an exception notes its message in errors and gives null, so that one odd
  // element (or one odd selector) costs that element, not the whole search.
  function attempt(errors, fn) {
    try {
      return fn();
    } catch (err) {
      errors.push(String(err && err.message ? err.message : err));
      return null;
    }
  }

  // -- describing an element ----------------------------------------------------------

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
  // The row's text leaves out the element's own label ("Done" beside each box), unless
  // that label is all the row says (a box labelled by the item's title); and a row that is
  // all the element's own text (a role=checkbox div holding the title) is that text.
  function rowOf(e) {
    const row = rowElOf(e);
    if (!row) return "";
    const labels = ownLabels(e);
    for (const skip of [new Set([e, ...labels]), new Set([e]), new Set()]) {
      const text = seenText(row, skip);
      if (words(text).length) return cut(text, 200);
    }
    return "";
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

  // skip: a node, or a Set of nodes, left out with what they hold.
  function seenText(root, skip) {
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
      if (n.nodeType === 1) {
        if (UNSEEN_TAGS.has(n.tagName) || !shown(n) || srOnly(n)) return;
        if (n !== root && (n.tagName === "BUTTON" || roleOf(n) === "button")) return;
        parts.push(" ");
        if (n.shadowRoot) {
          for (const c of n.shadowRoot.childNodes) walk(c);
          return;
        }
        if (n.tagName === "SLOT") {
          const assigned = n.assignedNodes({ flatten: true });
          for (const c of assigned.length ? assigned : n.childNodes) walk(c);
          return;
        }
      }
      for (const c of n.childNodes) walk(c);
    };
    walk(root);
    return norm(parts.join(""));
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
    const row = rowElOf(e);
    if (!row) return 0;
    const kind = kindOfEl(e);
    let count = 0;
    const walk = (n) => {
      for (const c of n.children) {
        if (!shown(c)) continue;
        if (roleOf(c) && kindOfEl(c) === kind && visible(c)) count++;
        if (c.shadowRoot) walk(c.shadowRoot);
        walk(c);
      }
    };
    walk(row.shadowRoot || row);
    return count;
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

  // Out of table rows and list items, controls repeat per card, tile or column (a kanban
  // card's "Card actions", a saved card's "Remove") in plain divs.  Their context is the
  // text of the nearest ancestor with text besides their own and their label, unless that
  // ancestor is already the list (it holds another control of the same role and name:
  // we went past the card) or a region (too much text to be one card).
  function cardOf(e, name, peers) {
    const own = [textOf(e), name].filter(Boolean);
    let steps = 0;
    for (let n = parentOf(e); n && steps < 12; n = parentOf(n), steps++) {
      if (peers.some((p) => within(n, p))) return "";
      if ((n.textContent || "").length > 4 * CARD_TEXT) return ""; // cheap, before layout
      // Through shadow roots: a card may be a custom element drawing its text inside.
      let text = n.shadowRoot ? seenText(n, null) : norm(n.innerText || "");
      for (const t of own) text = norm(text.replace(t, " "));
      if (text.length > CARD_TEXT) return "";
      if (words(text).length) return cut(text, 200);
    }
    return "";
  }

  // The titles it sits under, nearest first: each labelled group's (its name, else its
  // first heading), each container's whose first child is a heading or reads as one (a
  // kanban lane's "Review" div, a card's title), then the nearest heading before it.
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
    if (!n.matches(GROUP)) return "";
    const named = nameOf(n);
    if (named) return named;
    const heading = n.querySelector(HEADING);
    return heading ? heading.textContent : "";
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
    if (first.matches(HEADING)) return text;
    // <div class="title"><strong>Review</strong></div>: the style is the inner element's.
    const inner = first.children.length === 1 ? first.firstElementChild : null;
    const styled = inner && norm(inner.textContent) === text ? [first, inner] : [first];
    return styled.some((t) => looksLikeTitle(t, n)) ? text : "";
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
        if (s.matches(HEADING)) return s.textContent;
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
    if (idOf(e)) add("#" + CSS.escape(idOf(e)));
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
        if (idOf(n) && count("#" + CSS.escape(idOf(n))) === 1) {
          parts.unshift("#" + CSS.escape(idOf(n)));
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
    const row = rowOf(e);
    return {
      role,
      kind: kindOfEl(e),
      name,
      name_base: badgeFree(e, name),
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
      row,
      card: row ? "" : cardOf(e, name, peers),
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
  // besides), and the same method.
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
    const path = (u) => u.pathname.replace(/\/+$/, "") || "/";
    if (a.origin !== b.origin || path(a) !== path(b) || a.hash !== b.hash) return false;
    for (const [k, v] of a.searchParams) if (b.searchParams.get(k) !== v) return false;
    return true;
  }

  function describe(e, all) {
    const peers = peersOf(e, all);
    const f = features(e, peers);
    f.section = sectionOf(f.titles, peers.map((p) => titlesOf(p, nameOf(p))));
    delete f.titles;
    f.selectors = selectorsOf(e);
    f.name_count = f.name ? peers.length + (visible(e) ? 1 : 0) : 0;
    f.alike = alikeOf(e, f, all);
    f.row_peers = rowKindCount(e);
    f.unique = uniqueOf(e, f, all);
    return f;
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

  // -- comparing ----------------------------------------------------------------------

  // Words of a name: "E-mail" and "Email" are one word, case and punctuation ignored.
  function words(t) {
    return lower(t).replace(/(\w)[-'’](\w)/g, "$1$2").split(/[^\p{L}\p{N}]+/u).filter(Boolean);
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

  // 1 for the same words; a synonym costs a little, an added word little, a dropped one
  // more, a replaced one a lot ("Save changes" ~ "Save all changes", "Send for approval"
  // ~ "Submit for approval"; "Save draft" is not "Save", nor "Export CSV" "Export PDF").
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
    const cost = replaced + 0.25 * (extra - replaced) + 0.6 * (missing - replaced) +
      SWAP * swapped;
    return Math.max(0, 1 - cost / Math.max(x.length, y.length));
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
      (anchors.target && sameTarget(id, f)) ||
      (anchors.sole && f.kind === "text" && !contradicts(id, f));
    const proven = (tests && sameTestId(id, f)) || (id.id && f.id === id.id) ||
      (id.name_attr && f.name_attr === id.name_attr && f.tag === id.tag) || attested;
    const name = compareNames(id, f);
    // A renamed element an attribute proves: its old name says nothing against it.
    if (name.sim !== null && !(proven && name.sim < MIN_NAME)) add(W.name, name.sim);
    if (id.role) add(W.role, f.role === id.role ? 1 : 0);
    add(W.tag, f.tag === id.tag ? 1 : 0);
    if (id.type || f.type) add(W.type, f.type === id.type ? 1 : 0);
    if (tests) add(W.test, sameTestId(id, f) ? 1 : 0);
    if (id.id) add(W.id, f.id === id.id ? 1 : overlap(id.id, f.id) * 0.8);
    if (id.name_attr) add(W.name_attr, f.name_attr === id.name_attr ? 1 : overlap(id.name_attr, f.name_attr) * 0.8);
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
    let needsContext = id.name_count > 1 || !id.name || args.crossing || name.core;
    if (!proven && id.name && (name.gap || name.sim < MIN_NAME)) {
      // A name on one side only (or only repeating its row) is no mismatch where the row
      // proves the element; nor is another wording of a row's checkbox.
      if (rowProof && (name.gap || kind === "toggle")) needsContext = true;
      else why.push(`name ${JSON.stringify(f.name)}`);
    }
    if (!anchored && alike.has(key(f.name))) why.push(`look-alike ${JSON.stringify(f.name)}`);
    // A link that leads where the recorded one led does what it did, wherever it sits (the
    // same link in a sidebar and a header); not a submit: forms posting to one address
    // differ by what they hold (each row's "Delete").
    const leadsThere = !id.method && sameTarget(id, f);
    if (needsContext && !anchored && !attested && !leadsThere) {
      why.push(...contextMisfits(rowSim, cardSim, sectionSim));
    }
    const ok = why.length === 0;
    return {
      score: total ? got / total : 0, ok, why,
      attested: !!(anchored || attested), rowProof: ok && rowProof,
    };
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

  // A name shared at recording must keep its table row or list item; out of rows, its
  // card and its section (a card's text alone can be the same in two sections: the same
  // "Phone" field beside "Email" in the billing and the shipping address).
  function contextMisfits(rowSim, cardSim, sectionSim) {
    if (rowSim !== null) return rowSim < MIN_CONTEXT ? ["another row"] : [];
    const out = [];
    if (cardSim !== null && cardSim < MIN_CONTEXT) out.push("another card");
    if (sectionSim !== null && sectionSim < MIN_CONTEXT) out.push("another section");
    return out;
  }

  // -- locating -----------------------------------------------------------------------

  // Which of the identity's attributes pick out one element, both when it was recorded
  // (its selectors list only unique ones) and among the candidates now.
  function anchorsOf(id, candidates) {
    const q = (v) => JSON.stringify(v);
    const stored = new Set(id.selectors || []);
    const unique = new Set(id.unique || []);
    const now = (match) => candidates.filter((c) => match(c.f)).length === 1;
    const tests = Object.entries(id.test_ids || {}).filter(([k, v]) => stored.has(`[${k}=${q(v)}]`));
    return {
      test: tests.length > 0 && now((f) => sameTestId(id, f)),
      id: !!id.id && stored.has("#" + CSS.escape(id.id)) && now((f) => f.id === id.id),
      name_attr: !!id.name_attr && stored.has(`${id.tag}[name=${q(id.name_attr)}]`) &&
        now((f) => f.name_attr === id.name_attr && f.tag === id.tag),
      placeholder: !!id.placeholder &&
        (unique.has("placeholder") || stored.has(`${id.tag}[placeholder=${q(id.placeholder)}]`)) &&
        now((f) => f.placeholder === id.placeholder),
      label: !!id.label && unique.has("label") && now((f) => f.label === id.label),
      autocomplete: !!id.autocomplete && unique.has("autocomplete") &&
        now((f) => f.autocomplete === id.autocomplete),
      target: !!id.target && now((f) => sameTarget(id, f)),
      sole: unique.has("sole") && kindOfId(id) === "text" &&
        candidates.filter((c) => c.f.kind === "text").length === 1,
    };
  }

  // The other candidates with the same role and name as each candidate.
  function peerIndex(pool) {
    const groups = new Map();
    for (const e of pool) {
      const k = `${roleOf(e)}\n${nameOf(e)}`;
      if (!groups.has(k)) groups.set(k, []);
      groups.get(k).push(e);
    }
    return (e) => groups.get(`${roleOf(e)}\n${nameOf(e)}`).filter((o) => o !== e);
  }

  // Find the element of any of the identities (the recorded one and the variants it was
  // confirmed in since), reading the page once.  They must not point at different elements.
  function locate(ids) {
    const errors = [];
    const rs = roots();
    const all = elements(rs).filter(visible);
    const tags = new Set(ids.map((id) => id.tag));
    const pool = all.filter((e) => INTERACTIVE.has(roleOf(e)) || tags.has(lower(e.tagName)));
    const peers = peerIndex(pool);
    const read = pool.map((e) => attempt(errors, () => ({ e, f: features(e, peers(e)) })))
      .filter(Boolean);
    const results = ids.map((id) => locateOne(id, read, rs, all, errors));
    const hits = results.map((r, i) => ({ ...r, variant: i })).filter((r) => r.el);
    if (!hits.length) return results[0];
    if (hits.some((h) => h.el !== hits[0].el)) {
      return {
        el: null,
        report: {
          strategy: "", score: hits[0].report.score, candidates: [],
          reason: "ambiguous: its recorded variants point at different elements",
        },
      };
    }
    // The identity it fits best says what changed (none, when it is a known variant).
    const best = hits.reduce((a, b) => (b.report.score > a.report.score ? b : a));
    best.report.variant = best.variant;
    return { el: best.el, report: best.report };
  }

  function locateOne(id, read, rs, all, errors) {
    const anchors = anchorsOf(id, read);
    const alike = new Set((id.alike || []).map(key).filter(Boolean));
    const judged = (c) => c && attempt(errors, () => ({ e: c.e, f: c.f, ...judge(id, c.f, anchors, alike, c.e) }));
    const candidates = read.map(judged).filter(Boolean);
    const byEl = new Map(candidates.map((c) => [c.e, c]));
    for (const [strategy, hits] of strategiesOf(id, candidates, rs, byEl, judged, errors, anchors)) {
      // An attribute unique then and now says which it is, however else it changed; so
      // does its very name, alone in its family.
      const sure = strategy === "name" || strategy === "row" ||
        (hits.length === 1 && hits[0].attested);
      const floor = sure ? MIN_PROVEN : MIN_FIT;
      if (hits.length === 1 && hits[0].ok && hits[0].score >= floor) {
        return found(strategy, hits[0], all, errors);
      }
    }
    // Similarity: among the candidates that may be taken, one clearly ahead.
    const ranked = candidates.slice().sort((a, b) => b.score - a.score);
    const fitting = ranked.filter((c) => c.ok);
    const best = fitting[0];
    const next = fitting[1];
    if (best && best.score >= MIN_SCORE && (!next || best.score - next.score >= MARGIN)) {
      return found("similarity", best, all, errors);
    }
    // Candidates that score alike are told apart by where they lead: the one that leads
    // where the recorded element led; or, when all of them do under the same name (a
    // sidebar's link and the header's), any of them does what the step did.
    if (best && best.score >= MIN_SCORE && id.target) {
      const tied = fitting.filter((c) => best.score - c.score < MARGIN);
      const same = tied.filter((c) => sameTarget(id, c.f));
      if (same.length === 1) return found("target", same[0], all, errors);
      if (same.length === tied.length && tied.every((c) => key(c.f.name) === key(best.f.name))) {
        return found("target", best, all, errors);
      }
    }
    const hit = atPoint(id, byEl, best);
    if (hit) return found("coordinates", hit, all, errors);
    return {
      el: null,
      report: {
        strategy: "", score: best ? best.score : 0, reason: whyNot(ranked, fitting, best, errors),
        candidates: top(ranked),
      },
    };
  }

  // The strategies before similarity, in order, each with the candidates it finds.
  function strategiesOf(id, candidates, rs, byEl, judged, errors, anchors) {
    const out = [];
    if (id.role && id.name) {
      out.push(["role_name", candidates.filter((c) => c.f.role === id.role && c.f.name === id.name)]);
      // The same name on another control of its family: the "Active" filter as a link,
      // a button, a tab or a radio button.
      const mine = familiesOf(kindOfId(id), id.role);
      const named = candidates.filter((c) => key(baseName(c.f)) === key(baseName(id)) &&
        familiesOf(c.f.kind, c.f.role).some((x) => mine.includes(x)));
      out.push(["name", named]);
    }
    if (id.aria_label) out.push(["aria_label", candidates.filter((c) => c.f.aria_label === id.aria_label)]);
    if (id.name_attr) {
      out.push(["name_attr", candidates.filter((c) => c.f.name_attr === id.name_attr && c.f.tag === id.tag)]);
    }
    if (Object.keys(id.test_ids || {}).length) {
      out.push(["test_id", candidates.filter((c) => sameTestId(id, c.f))]);
    }
    // The one link or submit that leads where the recorded one led.
    if (anchors.target) out.push(["target", candidates.filter((c) => sameTarget(id, c.f))]);
    if (anchors.placeholder || anchors.label || anchors.autocomplete) {
      const attests = (f) => (anchors.placeholder && f.placeholder === id.placeholder) ||
        (anchors.label && f.label === id.label) ||
        (anchors.autocomplete && f.autocomplete === id.autocomplete);
      out.push(["attribute", candidates.filter((c) => attests(c.f))]);
    }
    if (anchors.sole) out.push(["sole_field", candidates.filter((c) => c.f.kind === "text")]);
    // The one box or field of its row, the row reading as it did.
    out.push(["row", candidates.filter((c) => c.rowProof)]);
    // A stored selector is judged like any candidate: a structural path (nth-of-type)
    // that now lands on another card's button does not fit where the name was shared.
    for (const sel of id.selectors || []) {
      const hits = new Set();
      for (const r of rs) {
        try {
          for (const e of r.querySelectorAll(sel)) if (visible(e)) hits.add(e);
        } catch (err) { /* a selector this document can't parse finds nothing */ }
      }
      const fresh = (e) => judged(attempt(errors, () => ({ e, f: features(e, []) })));
      out.push(["selector", Array.from(hits, (e) => byEl.get(e) || fresh(e)).filter(Boolean)]);
    }
    return out;
  }

  // The candidate now at the recorded position, if it fits and scores near the best.
  function atPoint(id, byEl, best) {
    if (!id.box) return null;
    const [x, y, w, h] = id.box;
    let e = document.elementFromPoint(x + w / 2 - scrollX, y + h / 2 - scrollY);
    while (e && !byEl.has(e)) e = parentOf(e);
    const hit = e ? byEl.get(e) : null; // the point may be on text, or off the screen
    if (!hit || !hit.ok || hit.score < MIN_SCORE) return null;
    return !best || hit === best || hit.score >= best.score - MARGIN ? hit : null;
  }

  function whyNot(ranked, fitting, best, errors) {
    if (!ranked.length && errors.length) {
      return `could not read the page's elements (${errors.length} failed): ${errors[0]}`;
    }
    if (!best && ranked.length) return "no candidate fits: " + ranked[0].why.join(", ");
    if (best && best.score < MIN_SCORE) return `best score ${best.score.toFixed(2)} is too low`;
    if (best) {
      const alike = fitting.filter((c) => best.score - c.score < MARGIN).length;
      return `ambiguous: ${alike} candidates score alike`;
    }
    return "no candidate element";
  }

  function found(strategy, hit, all, errors) {
    // Should describing it fail, what was compared still says what it is now.
    const plain = () => {
      const { titles, ...f } = hit.f;
      return { ...f, section: titles[0] || "", selectors: [], name_count: 0, alike: [] };
    };
    if (!described.has(hit.e)) described.set(hit.e, attempt(errors, () => describe(hit.e, all)));
    const now = described.get(hit.e) || plain();
    return {
      el: hit.e,
      report: { strategy, score: hit.score, reason: "", found: now, candidates: [] },
    };
  }

  function top(ranked) {
    return ranked.slice(0, 3).map((c) => ({
      role: c.f.role, name: c.f.name, score: Math.round(c.score * 1000) / 1000, why: c.why,
    }));
  }

  try {
    if (args.op === "capture") return describe(el, elements(roots()));
    if (args.op === "locate") return locate(args.identities || [args.identity]);
    return { error: "unknown op " + args.op };
  } catch (err) {
    return { error: `${args.op} failed: ${err && err.message ? err.message : err}` };
  }
}
