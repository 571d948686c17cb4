// Tabwright's in-page role snapshot: one pass over one document (open shadow roots
// included), returning the text the model reads and the table of refs.
//
// This script installs a registry on the document's window (non-enumerable, and
// installed by an init script before the page's own scripts run, so the page cannot put
// its own in its place).  The page's scripts can reach it, so it is frozen all the way
// down: the window property can't be redefined, the registry is a frozen object without a
// prototype whose functions are frozen too, and its state lives in this closure, out of
// reach.  The roles it gives are checked against a frozen table that has no prototype, so
// a page that rewrites String.prototype or Set.prototype can't make it hand back another
// role.  What it says is still read as untrusted input on the Python side (identity.py).
// Later snapshots of the same document reuse refs (same element,
// same role, same name => same ref) and the "tabwright=" selector engine resolves refs
// through it.  An element the page re-created (a list drawn again with innerHTML) takes
// over the ref of the one it replaced when nothing else could be that element (see
// settleRefs in snapshot_changes.js, which snapshot.py puts in this closure where the
// "@include" line is); a ref moves to the new node only in a snapshot, which shows the
// model the page again, so between snapshots a ref to a replaced node still resolves to
// nothing.
// A new document starts a new registry; the caller seeds its counter so ref numbers are
// never reused within a tab.
(() => {
  if (Object.prototype.hasOwnProperty.call(window, "__tabwright")) return;
  Object.defineProperty(window, "__tabwright", {
    value: makeRegistry(), enumerable: false, writable: false, configurable: false,
  });

  function makeRegistry() {
    const INTERACTIVE = new Set([
      "button", "checkbox", "combobox", "link", "listbox", "menuitem", "menuitemcheckbox",
      "menuitemradio", "option", "radio", "searchbox", "slider", "spinbutton", "switch",
      "tab", "textbox", "treeitem", "clickable",
    ]);
    const NAME_FROM_CONTENT = new Set([
      "button", "cell", "checkbox", "columnheader", "gridcell", "heading", "link", "menuitem",
      "menuitemcheckbox", "menuitemradio", "option", "radio", "row", "rowheader", "switch",
      "tab", "tooltip", "treeitem",
    ]);
    const CONTENT_NAMED_BOXES = new Set(["row", "cell", "gridcell", "rowheader", "columnheader"]);
    // The cells a table row may show on its own line (a grid's cells are targets: not these).
    const LINE_CELLS = new Set(["cell", "columnheader", "rowheader"]);
    const ARIA_ROLES = new Set((
      "alert alertdialog application article banner blockquote button caption cell checkbox " +
      "code columnheader combobox complementary contentinfo definition deletion dialog " +
      "directory document emphasis feed figure form generic grid gridcell group heading img " +
      "insertion link list listbox listitem log main marquee math meter menu menubar menuitem " +
      "menuitemcheckbox menuitemradio navigation none note option paragraph presentation " +
      "progressbar radio radiogroup region row rowgroup rowheader scrollbar search searchbox " +
      "separator slider spinbutton status strong subscript superscript switch tab table " +
      "tablist tabpanel term textbox time timer toolbar tooltip tree treegrid treeitem"
    ).split(" "));
    // Never rendered, never named: skip the whole subtree without looking.
    const SKIP = new Set([
      "SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "META", "LINK", "TITLE", "BASE",
    ]);
    const LANDMARK_PARENTS = "article, aside, main, nav, section";
    const MAX_NAME = 200;
    let compact = true; // per call: structural elements without a role are left out
    // Per call: when the walk must give up (opts.timeMs), and how many elements it visited.
    // A page too big to walk in time gets a reduced snapshot instead of a lost budget.
    let deadline = Infinity;
    let visited = 0;
    const OUT_OF_TIME = Object.freeze({ outOfTime: true });
    // What one can act on, found by selector instead of by walking every element.
    const ACTIONABLE = "a[href], area[href], button, input, select, textarea, summary, " +
      "[role], [onclick], [tabindex], [contenteditable], iframe, frame";
    // Every role roleOf may give, as own properties of an object without a prototype:
    // looking one up calls nothing a page can replace.
    const ROLE_TABLE = Object.create(null);
    for (const role of ARIA_ROLES) ROLE_TABLE[role] = true;
    ROLE_TABLE.iframe = true;
    Object.freeze(ROLE_TABLE);
    // What a ref's context is read from (see contextOf).
    const CONTEXT_CHARS = 100;
    const ROW_CHARS = 1000; // of a row's text read (whitespace too), before it is cut
    const ROW_ROLES = new Set(["row", "listitem", "option", "treeitem"]);
    const ROWS = "tr, li, option, [role~=row], [role~=listitem], [role~=option], " +
      "[role~=treeitem]";
    const NAMED_ROLES = new Set(["dialog", "alertdialog", "region", "group", "article", "form"]);
    const NAMED = "[aria-label], [aria-labelledby], fieldset, dialog, form, article, " +
      "[role~=dialog], [role~=alertdialog], [role~=region], [role~=group], [role~=article], " +
      "[role~=form]";
    const UNREAD = new Set([...SKIP, "SELECT", "TEXTAREA", "DATALIST", "OUTPUT", "PROGRESS",
      "METER"]);
    const LIVE_ROLES = new Set(["status", "timer", "log", "marquee", "progressbar", "meter"]);

    // The registry's state: in this closure, where the page's scripts can't reach it.
    let nextRef = 1;
    let refPrefix = "";
    const byEl = new WeakMap(); // element -> {ref, role, name, ctx}
    const byRef = new Map(); // ref -> {el: WeakRef, role, name, ctx} (ctx: see contextOf)
    let prevWalk = null; // ref -> {hash, own, line} of the last full walk, for deltas
    // The last whole-page walk's tree: where a re-created element's old self is looked
    // for.  Its keys are worked out only when a walk meets an element it has not seen, so
    // a page that did not re-create anything costs nothing; the price is that the
    // elements of that walk stay in memory until the next one.
    let prevRoot = null;
    // Per walk, for contextOf: the row read last and what was read of it, the last climb's
    // start and the row it found, and the named container's context at or above each
    // element climbed through.
    let walkMemo = null;

    // Names (nameOf, contentText…) and what lines show besides them; here, so that their
    // tables are set before use.
    // @include snapshot_names.js
    // @include snapshot_lines.js
    // @include snapshot_brief.js
    // @include visible.js

    // The "tabwright=" selector engine runs in Playwright's utility world (an element found
    // there is acted on without being carried across worlds), which shares the DOM with
    // this one but not its objects: it asks for a ref with an event, and the element the
    // registry resolves answers with one of its own, which the engine catches on its way
    // down.  What it calls is taken now, before the page's scripts could replace it.  Each
    // snapshot listens again (the same listener, so once): document.open() erases the
    // window's listeners, not this registry.
    const call = Function.prototype.call;
    const detailOf = call.bind(Object.getOwnPropertyDescriptor(CustomEvent.prototype, "detail").get);
    const dispatch = call.bind(EventTarget.prototype.dispatchEvent);
    const listen = call.bind(EventTarget.prototype.addEventListener);
    const NativeEvent = Event;
    const onResolve = (e) => {
      const ref = detailOf(e);
      const el = typeof ref === "string" ? resolve(ref) : null;
      if (el) dispatch(el, new NativeEvent("tabwright:found", { composed: true }));
    };
    const answerEngine = () => listen(window, "tabwright:resolve", onResolve, true);
    answerEngine();

    const reg = Object.create(null);
    // roleOf, nameOf and ownInName: the same roles and names for element identities
    // (identity.js).
    for (const [key, fn] of [["snapshot", snapshotCall], ["resolve", resolve], ["refOf", refOf],
      ["roleOf", roleOf], ["nameOf", nameOf], ["ownInName", ownInName],
      ["staleness", staleness]]) {
      Object.defineProperty(reg, key, {
        value: Object.freeze(fn), enumerable: true, writable: false, configurable: false,
      });
    }
    return Object.freeze(reg);

    // @include snapshot_roles.js

    // -- refs -------------------------------------------------------------------------

    function refFor(el, role, name, ctx) {
      return knownRef(el, role, name, ctx) || issue(el, role, name, ctx);
    }

    // The ref the element already holds with this role, name and context, or "".  An
    // element now in another row is another element to the model: it gets a new ref.
    function knownRef(el, role, name, ctx) {
      const known = byEl.get(el);
      if (!known || known.role !== role || known.name !== name || known.ctx !== ctx) return "";
      return byRef.get(known.ref) === known ? known.ref : "";
    }

    function issue(el, role, name, ctx) {
      return bindRef(refPrefix + "e" + nextRef++, el, role, name, ctx);
    }

    function bindRef(ref, el, role, name, ctx) {
      const entry = { ref, role, name, ctx, el: new WeakRef(el) };
      byEl.set(el, entry);
      byRef.set(ref, entry);
      return ref;
    }

    function refOf(el) {
      return byEl.get(el)?.ref || null;
    }

    // The element a ref was issued for, only if it still has that ref's role and name and
    // sits in a row (or named container) that reads as it did (see contextOf).
    function resolve(ref) {
      return staleness(ref) ? null : byRef.get(ref).el.deref();
    }

    // Why a ref does not resolve, for the error the model reads: null when it does;
    // ["unknown"] (not issued in this document), ["gone"] (removed, or given a new ref),
    // ["role", now], ["name", now], or ["context", then, now].
    function staleness(ref) {
      const entry = byRef.get(ref);
      if (!entry) return ["unknown"];
      const el = entry.el.deref();
      if (!el || !el.isConnected || byEl.get(el) !== entry) return ["gone"];
      const pseudo = entry.role === "generic" || entry.role === "clickable";
      const role = roleOf(el) || (pseudo ? entry.role : null);
      if (role !== entry.role) return ["role", role || ""];
      const name = nameOf(el, role);
      if (name !== entry.name) return ["name", name];
      const ctx = contextOf(el, role, false);
      return ctx === entry.ctx ? null : ["context", entry.ctx, ctx];
    }

    // @include snapshot_context.js

    // -- the walk ---------------------------------------------------------------------

    function snapshot(opts) {
      refPrefix = opts.prefix || "";
      nextRef = Math.max(nextRef, opts.seed || 1);
      compact = opts.compact !== false;
      brief = opts.brief === true;
      briefPage(null, [], false); // the reduced walk's lines know nothing of the page
      deadline = opts.timeMs > 0 ? performance.now() + opts.timeMs : Infinity;
      visited = 0;
      // What an earlier walk found is not this walk's: the page may have changed since.
      walkMemo = { row: null, read: null, start: null, found: null, boxes: new Map() };
      let start = document.documentElement;
      if (opts.scope) {
        start = /^(f\d+)?e\d+$/.test(opts.scope) ? resolve(opts.scope) : queryScope(opts.scope);
        if (!start) return { error: "scope", scope: opts.scope };
      }
      if (opts.reduced) return reduced(start, opts.maxChars || Infinity);
      const root = { role: "", kids: [] };
      try {
        if (start) walk(start, root, "auto", true, true);
      } catch (e) {
        if (e !== OUT_OF_TIME) throw e;
        return { outOfTime: true, visited };
      }
      if (performance.now() > deadline) return { outOfTime: true, visited };
      const rebound = settleRefs(root, !opts.scope);
      // nth among equal role+name pairs, in document order; count of each pair.
      const refs = [];
      const seen = new Map();
      forEach(root, (n) => {
        const key = n.role + "\u0000" + n.name;
        n.nth = seen.get(key) || 0;
        seen.set(key, n.nth + 1);
        refs.push(n);
      });
      const table = refs.map((n) => [
        n.ref, n.role, n.name, n.nth, seen.get(n.role + "\u0000" + n.name),
      ]);
      briefPage(root, refs, !opts.scope);
      const top = pageTop(root, !opts.scope);
      const frames = [];
      const lines = [];
      const hashes = new Map();
      hashTree(root, hashes);
      const removed = [];
      const delta = Boolean(opts.delta && prevWalk && !opts.scope);
      let paths = [];
      if (delta) {
        renderDelta(top, lines, frames);
        for (const [ref, old] of prevWalk) {
          if (ref && !old.unseen && !hashes.has(ref)) removed.push([ref, old.gone]);
        }
        if (refs.some((n) => n.frame)) paths = framePaths(top);
      } else if (opts.interactive) {
        renderInteractive(root, lines, frames);
      } else {
        renderTree(top, 0, lines, frames, opts.maxDepth || 0);
      }
      if (!opts.scope) {
        prevWalk = hashes;
        prevRoot = root;
      }
      return { text: lines.join("\n"), refs: table, frames, removed, delta, rebound, paths };
    }

    function queryScope(selector) {
      try { return document.querySelector(selector); } catch (e) { return null; }
    }

    function forEach(node, fn) {
      for (const k of node.kids) {
        if (typeof k === "string") continue;
        fn(k);
        forEach(k, fn);
      }
    }

    // Adds the element's node (or, for a structural element, its children) to `parent`.
    // `parentVisible`: in the accessibility tree; `parentSeen`: where a person could see
    // it (visible.js).  Text is shown only where it is seen, and so is an element's line,
    // but for controls (a styled checkbox's real input is transparent, its label drawn
    // over it) and a frame, whose element must be seen for its walk to be shown.
    function walk(el, parent, parentCursor, parentVisible, parentSeen) {
      if ((++visited & 255) === 0 && performance.now() > deadline) throw OUT_OF_TIME;
      const tag = el.tagName;
      if (SKIP.has(tag) || el.getAttribute("aria-hidden") === "true") return;
      const inSelect = tag === "OPTION" || tag === "OPTGROUP";
      let visible = parentVisible;
      if (!inSelect) {
        if (!el.checkVisibility()) {
          if (!isContents(el)) return; // display:none here or above: nothing below renders
        } else {
          // What checkVisibility's visibilityProperty reads, from the style the cursor
          // is read from too: one style lookup instead of a second visibility check.
          visible = styleOf(el).visibility === "visible";
        }
      }
      const frame = tag === "IFRAME" || tag === "FRAME";
      const seen = visible && parentSeen && (inSelect || (frame ? seenFrameHere(el) : seenHere(el)));
      if (frame && !seen) return;
      let role = visible ? roleOf(el) : null;
      if (role && !seen && !INTERACTIVE.has(role)) role = null;
      let cursor = parentCursor;
      let clickable = false;
      if (visible) {
        // A click handler, or a pointer cursor of its own: one its parent has too is
        // inherited (what is inside a link, or a clickable row, is no target of its own).
        cursor = styleOf(el).cursor;
        if (!INTERACTIVE.has(role)) {
          clickable = el.hasAttribute("onclick") ||
            (cursor === "pointer" && parentCursor !== "pointer");
        }
        if (!role || role === "generic") { // plain elements one can click get a role
          clickable = clickable || (el.tabIndex >= 0 && el.hasAttribute("tabindex"));
          if (clickable) role = "clickable";
          else if (!compact && tag !== "HTML" && tag !== "BODY") role = "generic";
        }
      }
      let node = parent;
      if (role) {
        const name = nameOf(el, role);
        const ctx = contextOf(el, role, true);
        // Refs are settled after the walk (settleRefs): whether a re-created element may
        // take over a known ref depends on all of its siblings.
        node = { role, name, ctx, ref: knownRef(el, role, name, ctx), fresh: !byEl.has(el),
          kids: [], el, clickable, tag, gapBefore: parent.gap === true };
        parent.kids.push(node);
        if (frame) { node.frame = true; return; }
        if (tag === "SELECT" || tag === "INPUT" || tag === "TEXTAREA") node.value = valueOf(el);
      }
      if (tag === "SLOT") {
        const assigned = el.assignedNodes({ flatten: true });
        if (assigned.length) {
          for (const a of assigned) visit(a, node, cursor, visible, seen);
          return;
        }
      }
      const holder = el.shadowRoot || el;
      for (let c = holder.firstChild; c; c = c.nextSibling) visit(c, node, cursor, visible, seen);
    }

    // Text joins the text before it as the page lays it out: with a space where there
    // was one, or where a block (a <div>, a table cell, an inline-block button) stood
    // between them; without one across inline elements ("<b>Bold</b>er" reads "Bolder").
    function visit(c, node, cursor, visible, seen) {
      const kids = node.kids;
      if (c.nodeType === 1) {
        if (endsInText(kids) && breaksText(c)) node.gap = true;
        walk(c, node, cursor, visible, seen);
        if (endsInText(kids) && breaksText(c)) node.gap = true;
      } else if (c.nodeType === 3 && seen) {
        const text = c.data;
        if (!/\S/.test(text)) {
          node.gap = true;
          return;
        }
        const last = kids.length - 1;
        if (last >= 0 && typeof kids[last] === "string") kids[last] += (node.gap ? " " : "") + text;
        else kids.push(text);
        node.gap = false;
      }
    }

    function endsInText(kids) {
      return kids.length > 0 && typeof kids[kids.length - 1] === "string";
    }

    function breaksText(el) {
      if (el.tagName === "BR") return true;
      const display = styleOf(el).display;
      return display !== "inline" && display !== "contents" && display !== "none";
    }

    function valueOf(el) {
      if (el.tagName === "SELECT") return Array.from(el.selectedOptions, (o) => norm(o.textContent)).join(", ");
      const type = (el.getAttribute("type") || "").toLowerCase();
      if (type === "password") return el.value ? "••••" : "";
      if (type === "checkbox" || type === "radio" || type === "file") return null;
      return el.value || "";
    }

    // A node's states, read once per walk: its line, its hash and its place key share them.
    function stateList(n) {
      if (!n.states) n.states = states(n);
      return n.states;
    }

    function states(n) {
      const el = n.el;
      const out = [];
      if (n.role === "heading") {
        const level = el.getAttribute("aria-level") || (/^H[1-6]$/.test(n.tag) ? n.tag[1] : "");
        if (level) out.push("level=" + level);
      }
      if (n.role === "checkbox" || n.role === "radio" || n.role === "switch" ||
          n.role === "menuitemcheckbox" || n.role === "menuitemradio") {
        const aria = el.getAttribute("aria-checked");
        if (aria === "mixed" || el.indeterminate) out.push("checked=mixed");
        else if (aria === "true" || el.checked) out.push("checked");
      }
      if (el.disabled || el.getAttribute("aria-disabled") === "true") out.push("disabled");
      const expanded = el.getAttribute("aria-expanded") ||
        (n.tag === "SUMMARY" && n.role === "button" ? String(el.parentElement.open) : null);
      if (expanded === "true") out.push("expanded");
      else if (expanded === "false") out.push("collapsed");
      if (el.getAttribute("aria-pressed") === "true") out.push("pressed");
      if (n.role === "option" && (el.selected || el.getAttribute("aria-selected") === "true")) {
        out.push("selected");
      } else if (el.getAttribute("aria-selected") === "true") out.push("selected");
      return out;
    }

    // A node's line, built once per walk (the delta's hashes and the text both read it).
    function lineOf(n) {
      if (n.line === undefined) n.line = lineText(n);
      return n.line;
    }

    function lineText(n) {
      let line = n.role;
      if (n.name && !nameRepeatsKids(n)) line += " " + JSON.stringify(n.name.length > 100 ? n.name.slice(0, 99) + "…" : n.name);
      if (showsRef(n)) line += " [" + n.ref + "]";
      for (const s of stateList(n)) if (shownState(s)) line += " [" + s + "]";
      line += lineExtras(n);
      if (n.value) line += ": " + JSON.stringify(n.value.length > 100 ? n.value.slice(0, 99) + "…" : n.value);
      return line + briefExtras(n);
    }

    // A row or cell named by its content whose children are shown as lines of their own
    // would say its words twice: its line leaves the name out (its ref keeps it, for
    // finding it again).  Playwright's snapshot does the same.
    function nameRepeatsKids(n) {
      if (brief && NAME_FROM_CONTENT.has(n.role) && !labelled(n) && !showsRef(n)) {
        return shownKids(n).some((k) => typeof k !== "string");
      }
      if (!CONTENT_NAMED_BOXES.has(n.role) || labelled(n)) return false;
      if (n.clickable) return cellsOf(n) !== null; // a target: named, unless its cells say it
      return shownKids(n).some((k) => typeof k !== "string");
    }

    function labelled(n) {
      const el = n.el;
      return Boolean(el && (el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby")));
    }

    // In the brief format, a table row is one line when its cells are plain (no target
    // of their own) and hold only text and elements without children: its cells' words
    // between " | ", each element with its ref ("- row [e9]: 1003 | link "Alan Turing"
    // [e10] | button "Edit" [e11]").  The cells' refs are not shown; the row's stands for
    // them.  null: the row's lines are its cells', as for any element.
    function cellsOf(n) {
      if (n.cells === undefined) {
        n.cells = brief && n.role === "row" && !n.frame ? lineCells(n) : null;
      }
      return n.cells;
    }

    function lineCells(n) {
      const kids = shownKids(n);
      if (!kids.length) return null;
      const out = [];
      for (const c of kids) {
        if (typeof c === "string" || !LINE_CELLS.has(c.role) || c.clickable || c.frame ||
            labelled(c) || stateList(c).length || lineExtras(c)) return null;
        const words = [];
        for (const k of shownKids(c)) {
          if (typeof k === "string") {
            words.push(cellWords(norm(k)));
            continue;
          }
          if (k.frame) return null;
          const [line, open] = head(k);
          if (open) return null;
          words.push(line.slice(2));
        }
        out.push(words.length ? words.join(" ") : cellWords(c.name));
      }
      return out;
    }

    // A cell's text as its part of a row's line: quoted when it holds the separator.
    function cellWords(text) {
      return text.includes("|") ? JSON.stringify(text) : text;
    }

    // The one rule for what is shown under a node, which the full snapshot, the delta and
    // the delta's hashes all follow: its children, without text that only repeats the
    // node's own name or labels the control beside it.
    function shownKids(n) {
      if (!n.shown) n.shown = brief ? briefKids(n, shownOf(n)) : shownOf(n);
      return n.shown;
    }

    function shownOf(n) {
      const kids = n.kids;
      if (n.name && kids.length === 1 && typeof kids[0] === "string" && norm(kids[0]) === n.name) return [];
      if (n.name && kids.length && NAME_FROM_CONTENT.has(n.role) &&
          kids.every((k) => typeof k === "string")) return [];
      if (kids.every((k) => typeof k !== "string")) return kids;
      return kids.filter((k, i) => typeof k !== "string" || !labelsNeighbour(kids, i));
    }

    // A node's line as the snapshot shows it (a single text child joins it), and whether
    // its shown children follow as lines of their own.
    function head(n) {
      const line = "- " + lineOf(n);
      if (n.frame) return [line + ":", false]; // the frame's own lines are stitched in
      const kids = shownKids(n);
      if (!kids.length) return [line, false];
      if (kids.length === 1 && typeof kids[0] === "string" && !n.value) {
        return [textHead(n, line, norm(kids[0])), false];
      }
      const cells = cellsOf(n);
      if (cells) return [textHead(n, line, cells.join(" | ")).trimEnd(), false];
      const inline = inlineOf(n);
      if (inline !== null) return [textHead(n, line, inline, n.lead), false];
      return [line + ":", true];
    }

    // A label's text next to the control it names says nothing new.
    function labelsNeighbour(kids, i) {
      const text = norm(kids[i]);
      for (const j of [i - 1, i + 1]) {
        const k = kids[j];
        if (k && typeof k !== "string" && INTERACTIVE.has(k.role) && k.name === text) return true;
      }
      return false;
    }

    function renderTree(node, depth, lines, frames, maxDepth) {
      const pad = indentOf(depth);
      for (const k of shownKids(node)) {
        if (typeof k === "string") {
          lines.push(pad + textLine(norm(k)));
          continue;
        }
        const [line, open] = head(k);
        if (k.frame) frames.push({ ref: k.ref, line: lines.length, depth: depth + 1 });
        if (open && maxDepth && depth + 1 >= maxDepth) {
          let below = 0;
          forEach(k, (d) => { if (d.ref) below++; });
          lines.push(pad + line.slice(0, -1) + (below ? ` … (${below} refs below)` : " …"));
          continue;
        }
        lines.push(pad + line);
        if (open) renderTree(k, depth + 1, lines, frames, maxDepth);
      }
    }

    // @include snapshot_reduced.js

    // @include snapshot_changes.js
  }
})();
