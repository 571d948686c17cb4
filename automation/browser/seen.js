// What a person sees of one document (the rule: visible.js): its text, how many rows show a
// text, whether a text is seen.  Open shadow roots and slots are read as they are drawn;
// what is not seen is not read, and hidden="until-found" shows its box, not what it holds.
// A field's value is page text only where the field can't be typed into (read-only,
// disabled): what a run typed into a field is there whether or not anything came of it.
// A row counts its fields' values as the app wrote them (their value attribute), not what
// was typed into them (typed.js, an init script, remembers it).
//
// Evaluated as (args) => ...:
//   args.op "text": the document's visible text, spaces squeezed (at most max characters;
//                   args.messages false: without the page's messages, MESSAGES below,
//                   nor its errors, isError);
//   args.op "finds": whether that text (all of it, however long: a check that a text is
//                   gone must not pass for not reading it) shows args.pattern, a RegExp's
//                   source, ignoring case (textmatch.words makes it);
//   args.op "rows": how many visible rows (table rows, list items) show a text (where
//                   args.pattern finds it in all of the row, however long), only the
//                   innermost row counting when rows
//                   hold rows; rows of the app's data only: an item of a message (MESSAGES)
//                   or of an error (ERROR) is no row ("Customer Zeta Corp was added");
//   args.op "errors": the texts of the errors the page shows (see isError), at most 5
//                   (args.named: only those a field's mark or an element's class or id
//                   names an error, not an alert saying words alone unless they refuse;
//                   args.hidden: and the marks in a form's parts nobody sees);
//   args.op "row": the text of args.element, a row, as op "rows" reads each row
//                   (args.cells: each cell's, block's or badge's text on a line of its own,
//                   without its controls' words, as an element's identity reads its row);
//   args.op "entries": the texts of args.element's entries (its list items, options or
//                   table rows, the outermost; a header row aside), each read as a row
//                   without its buttons' and boxes' words (a "Remove" in each line), the
//                   entries nobody sees left out; null when it has none;
//   args.op "frame": whether args.element, a frame's element, is seen (its ancestors too);
//   args.op "element": whether args.element is seen (its ancestors too; not its frame).
(args) => {
  const ROW = "tr, li, [role=row], [role=listitem], article";
  const ENTRY = "li, [role=listitem], [role=option], tr, [role=row]";
  // What acts on an entry of a list rather than says what it is.
  const CONTROLS = "button, [role=button], input[type=checkbox], input[type=radio], " +
    "input[type=button], input[type=submit], input[type=reset], input[type=image]";
  // What a page tells of what just happened (an error repeats what was typed, say).
  const MESSAGES = "[role=status], [role=alert], [aria-live=polite], [aria-live=assertive], output";
  // What names an error, as a word of an element's class or id: "errorlist", "errornote",
  // "has-error", "is-invalid", "alert-danger", "field-error".
  const ERROR_WORD = /(^|[-_])(err|error|errors|invalid|danger)/i;
  // What names a message that is no error ("alert alert-success": a role=alert banner).
  const FINE_WORD = /(^|[-_])(success|succeeded|ok|info|notice|saved)([-_]|$)/i;
  // What an alert that names nothing in its markup says when it refuses ("Email is
  // required", "That name is already taken"), and what it says when it does not.
  // (Words an action's own success may say are left out: "User locked", "Application
  // rejected", "Invitation declined" tell a lock, a rejection, a decline done.)
  const REFUSED_SAID = new RegExp("\\b(" + ["required", "invalid", "already", "must", "errors?",
    "failed", "cannot", "can[’']t", "can not", "could not", "couldn[’']t", "not allowed",
    "not valid", "taken", "denied", "refused", "incorrect", "missing", "unable",
    "too (long|short|many|few|large|small)",
    // a failure said in everyday words ("Something went wrong. Please try again.")
    "went wrong", "try again", "oops", "sorry", "there (was|is) a problem",
    "unsuccessful",
    // who may not ("You don't have permission to change prices")
    "permission", "not permitted", "forbidden", "unauthori[sz]ed", "not authori[sz]ed",
    // what stands in the way ("That slot is no longer available")
    "unavailable", "not available", "expired", "insufficient",
    "exceeds?", "exceeded", "not found", "do(es)? not (match|exist)",
    "(don|doesn)[’']t (match|exist)"].join("|") + ")\\b", "i");
  const FINE_SAID = new RegExp("\\b(" + ["saved", "success", "successfully", "updated",
    "created", "added", "thanks?", "done", "sent", "queued", "scheduled", "invited",
    "submitted", "published", "archived", "deleted", "removed", "imported", "uploaded",
    "confirmed", "completed", "approved", "resolved", "granted"].join("|") + ")\\b", "i");
  const NOT_SAID = /\b(not|nothing|never|no)\b/i; // "Nothing was saved": no success
  // What colours a text as an error, where the markup names none (Tailwind's
  // "text-red-600" under a field, shadcn's "text-destructive"): an error only beside a
  // field, in its form (a red badge in a list is a status).
  const RED_WORD = /^([\w-]+:)*text-(red|rose)-[4-9]00(\/\d+)?$|(^|[-_])destructive([-_]|$)/i;
  // (A library may name a message's kind in a data attribute, as Chakra's data-status
  // does, or as Semantic UI's "ui negative message".)
  const KIND_DATA = ["status", "severity", "intent", "type", "variant"];
  // What names a message box whose words tell its kind: Rails' flash[:alert] ("alert"),
  // a flash message ("flash"); read as an alert that names nothing in its markup is.
  const MESSAGE_WORD = /^(alert|flash)$/i;
  const ERROR = "[role=alert], [role=alertdialog], dialog[open], [role=dialog], " +
    "[class~=alert i], [class~=flash i], [id=alert i], [id=flash i], [role=status], " +
    "[aria-invalid=true], [class*=err i], [id*=err i], " +
    "[class*=invalid i], [id*=invalid i], [class*=danger i], [class*=text-red-], " +
    "[class*=text-rose-], [class*=destructive i], .message.negative, " +
    KIND_DATA.map((k) => `[data-${k}*=err i], [data-${k}*=danger i]`).join(", ");
  // What one acts with, not reads: a "Delete" button styled "btn-danger" says no error.
  const ACTS = "button, a[href], input[type=button], input[type=submit], input[type=reset], " +
    "input[type=image], summary, [role=button], [role=link], [role=menuitem], [role=tab]";
  // What names a status a row or a title wears, not a message: a "badge bg-danger" saying
  // "Overdue", a "tag is-danger" saying "Unpaid" (Bootstrap's, Bulma's badges): a class
  // that begins so ("error-label" is an error's), or a library's badge ("MuiChip-root",
  // "ant-tag", "chakra-badge").
  const BADGE_WORD = /^(badge|pill|tag|chip|label)([-_]|$)|^[a-z\d]+-*(badge|tag|chip)([-_]|$)/i;
  const UNSEEN = new Set(["SCRIPT", "STYLE", "TEMPLATE", "NOSCRIPT", "HEAD"]);
  const MAX_TEXT = 200000; // characters of a document's text told (op "text")
  const norm = (t) => (t || "").replace(/\s+/g, " ").trim();

  // @include visible.js

  function typable(e) {
    return !e.disabled && !e.readOnly;
  }

  // The value the app wrote in a field one types into: the one it had before typing
  // where it still shows what was typed (typed.js: even where the app copied the keys
  // into the value attribute), else its value attribute where the value is that, else
  // none (null: a value the app set since, never written as the attribute, or typed
  // into a page opened before the init script was there).
  function written(e) {
    const typed = window.__tabwrightTyped;
    const before = typed ? typed.before(e) : undefined;
    if (before !== undefined) return before;
    if (e.isContentEditable) return null;
    return e.value === e.defaultValue ? e.value : null;
  }

  // Whether a list shows the choice the page came with: its options chosen in the HTML,
  // else (one choice, shown as a drop-down) its first that can be chosen.
  function sentChoice(n) {
    const options = Array.from(n.options);
    if (n.multiple) return options.every((o) => o.selected === o.defaultSelected);
    let index = options.map((o) => o.defaultSelected).lastIndexOf(true);
    if (index < 0 && n.size <= 1) index = options.findIndex((o) => !o.disabled);
    return n.selectedIndex === index;
  }

  // Text of n as drawn: through shadow roots (a host shows its shadow tree, slots show
  // what is assigned to them), without what is not drawn.  A field shows its value.
  // cells: each box's text (a cell's, a block's, a badge's, a field's) on a line of its
  // own, where a person reads it apart from the text beside it.
  function seen(root, max, fields, messages = true, controls = true, cells = false) {
    const parts = [];
    let left = max;
    const walk = (n) => {
      const boxed = cells && n.nodeType === 1 && n !== root && !inline(n);
      const at = parts.length;
      read(n, boxed ? "\n" : " ");
      if (boxed && parts.length > at) parts.push("\n");
    };
    const read = (n, edge) => {
      if (left <= 0) return;
      if (n.nodeType === 3) {
        parts.push(n.data);
        // What it says counts, not the markup's indentation and blank lines (an error
        // list read for its first words past 600 blank characters).
        left -= norm(n.data).length + 1;
        return;
      }
      if (n.nodeType !== 1 && n.nodeType !== 11) return;
      if (n.nodeType === 1) {
        if (UNSEEN.has(n.tagName) || !seenHere(n)) return;
        if (!messages && (n.matches(MESSAGES) || (n.matches(ERROR) && isError(n)))) return;
        if (!controls && n !== root && n.matches(CONTROLS)) return;
        // hidden="until-found": drawn as a box, its contents not (until a search finds them).
        if (n.getAttribute("hidden") === "until-found") return;
        parts.push(edge);
        if (n.tagName === "INPUT" || n.tagName === "TEXTAREA") {
          const type = (n.getAttribute("type") || "").toLowerCase();
          // A row's field shows the value the app put there (written, or the value of
          // a field one can't type into), not one typed into it since.
          const shown = !typable(n) ? n.value : fields ? written(n) : null;
          if (type !== "password" && type !== "hidden" && shown) parts.push(shown);
          return;
        }
        // An editor's text (an element one types into) is a field's value: what the
        // replay typed there is no text of the page's (a row's keeps it: its cells may be
        // edited in place, and read as the app wrote them, not as typed).
        if (n.isContentEditable && !(n.parentElement || {}).isContentEditable) {
          if (!fields) return;
          const before = written(n);
          if (before !== null) { // typed into: the text the app wrote there before
            parts.push(before, " ");
            return;
          }
        }
        if (n.tagName === "SELECT") {
          // As a field's value: a row's list shows the choice the app sent (a choice made
          // since, its save refused, is no status of the row's), and a list one can change
          // is no text of the page's.
          const kept = !typable(n) || (fields && sentChoice(n));
          if (kept) parts.push(Array.from(n.selectedOptions, (o) => o.label).join(" "));
          return;
        }
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
    // One form of each letter: "é" stored as e and a combining accent (NFD) is the "é"
    // a check gives (NFC), as a person reads both.
    const text = parts.join("").normalize("NFC");
    if (!cells) return norm(text);
    return text.split("\n").map(norm).filter(Boolean).join("\n");
  }

  // Whether e's text runs on with its neighbours' ("Ann <b>Lee</b>"), not in a box of its
  // own (a cell, a block, a badge, a line broken before it).
  function inline(e) {
    if (e.tagName === "BR") return false;
    const display = getComputedStyle(e).display;
    return display === "inline" || display === "contents";
  }

  function entries(list) {
    const all = Array.from(list.querySelectorAll(ENTRY));
    const outer = all.filter((e) => {
      for (let p = e.parentElement; p && p !== list; p = p.parentElement) {
        if (p.matches(ENTRY)) return false;
      }
      return true;
    });
    if (!outer.length) return null;
    const heading = (e) => !!e.closest("thead") ||
      (!e.querySelector("td, [role=cell], [role=gridcell]") &&
        !!e.querySelector("th, [role=columnheader]"));
    return outer.filter((e) => !heading(e) && seenHere(e))
      .map((e) => seen(e, Infinity, true, true, false)).filter(Boolean);
  }

  // Whether a word of e's class, id or kind (KIND_DATA) matches, its camelCase words
  // apart too ("MuiAlert-standardSuccess" as "Mui-Alert-standard-Success").
  function named(e, pattern) {
    const kinds = KIND_DATA.map((k) => e.getAttribute(`data-${k}`));
    const words = [...e.classList, e.id, ...kinds].filter(Boolean);
    return words.some((w) => pattern.test(w) ||
      pattern.test(w.replace(/([a-z\d])([A-Z])/g, "$1-$2")));
  }

  // What a person reads as "it refused": a field marked invalid (aria-invalid), an element
  // whose class or id names an error ("errorlist", "is-invalid") or an alert (role=alert)
  // that says words and is not marked a success ("alert-success"), seen; not a button or
  // a link (ACTS), nor a badge (BADGE_WORD), whatever its class; an alertdialog is read
  // as an alert, a dialog holding no field only where its few words say it refused (one
  // that holds fields is a form, its errors read by their marks; a long one, a notice such
  // as a cookie banner), a message box its class names ("alert", "flash": Rails'
  // flash[:alert]) or a status (an autosave's "Failed to save") only where its few words
  // say it refused.  namedOnly: an alert
  // whose markup names nothing counts where its words say it refused (REFUSED_SAID), and
  // none says it went through (a toast "Saved" may be an alert); else one whose words say
  // it went through and none says it did not ("Saved"; not "Nothing was saved") is none.
  function isError(e, namedOnly = false) {
    if (!seenHere(e)) return false;
    if (e.getAttribute("aria-invalid") === "true") return true;
    if (e.matches(ACTS) || named(e, BADGE_WORD)) return false;
    if (named(e, ERROR_WORD) || e.matches(".message.negative") ||
        (named(e, RED_WORD) && besideField(e))) {
      return /\p{L}/u.test(seen(e, 400, false));
    }
    const role = e.getAttribute("role");
    const dialog = (role === "dialog" || (e.tagName === "DIALOG" && e.open && !role)) &&
      !e.querySelector("input:not([type=hidden]), select, textarea"); // (a form's: its marks)
    const alerting = role === "alert" || role === "alertdialog" || dialog;
    const box = named(e, MESSAGE_WORD) || role === "status";
    if ((!alerting && !box) || named(e, FINE_WORD)) return false;
    const said = seen(e, 400, false);
    const went = FINE_SAID.test(said) && !NOT_SAID.test(said); // "Invitation queued. … must…"
    // A message box its class names (flash[:alert]) or a status ("Failed to save"): where
    // its few words say it refused.
    if (!alerting) return said.length <= 300 && REFUSED_SAID.test(said) && !went;
    if (dialog) return said.length <= 300 && REFUSED_SAID.test(said) && !went; // (not a banner)
    if (namedOnly) return REFUSED_SAID.test(said) && !went; // its words name it
    return /\p{L}/u.test(said) && !went; // a bare "Saved" is none
  }

  // Whether e stands beside a field one fills (in the box around it) or in a form.
  function besideField(e) {
    if (e.closest("form")) return true;
    const box = e.parentElement;
    return !!box && !!box.querySelector("input:not([type=hidden]), select, textarea");
  }

  function errors(namedOnly, hidden) {
    const out = [];
    const roots = [document];
    for (let i = 0; i < roots.length && out.length < 5; i++) {
      for (const e of roots[i].querySelectorAll("*")) {
        if (e.shadowRoot) roots.push(e.shadowRoot);
        if (out.length >= 5 || !e.matches(ERROR)) continue;
        if (isError(e, namedOnly)) {
          const text = e.matches("input, select, textarea")
            ? "a field marked invalid" : seen(e, 200, false);
          out.push(text.slice(0, 200));
        } else if (hidden && hiddenMark(e)) {
          out.push(e.matches("input, select, textarea") ? "a field marked invalid"
            : norm(e.textContent).slice(0, 200));
        }
      }
    }
    return out;
  }

  // A mark of an error in a part of a form nobody sees (its panel of tabs not shown): a
  // field marked invalid, or an element its markup names an error that says words.  Read
  // only in a form the server drew again as its answer to it (args.hidden).
  function hiddenMark(e) {
    if (seenHere(e) || !e.closest("form") || e.matches(ACTS) || named(e, BADGE_WORD)) {
      return false;
    }
    if (e.getAttribute("aria-invalid") === "true") return true;
    return named(e, ERROR_WORD) && /\p{L}/u.test(e.textContent || "");
  }

  // Whether e stands in a message or an error: its items are no rows of the app's data.
  function told(e) {
    for (let at = e.parentElement; at; at = at.parentElement) {
      if (at.matches(MESSAGES) || (at.matches(ERROR) && isError(at))) return true;
    }
    return false;
  }

  function rows() {
    const out = [];
    const roots = [document];
    for (let i = 0; i < roots.length; i++) {
      for (const e of roots[i].querySelectorAll("*")) {
        if (e.shadowRoot) roots.push(e.shadowRoot);
        if (e.matches(ROW)) out.push(e);
      }
    }
    return out;
  }

  // The text looked for, its letters in the one form the page's text is read in.
  function wanted() {
    return new RegExp(args.pattern.normalize("NFC"), "i");
  }

  if (args.op === "text") {
    return seen(document.documentElement, args.max || MAX_TEXT, false, args.messages !== false);
  }
  if (args.op === "finds") {
    return wanted().test(seen(document.documentElement, Infinity, false));
  }
  if (args.op === "row") return seen(args.element, Infinity, true, true, !args.cells, !!args.cells);
  if (args.op === "entries") return entries(args.element);
  if (args.op === "frame") return seenFrame(args.element);
  if (args.op === "element") return seenAlone(args.element);
  if (args.op === "errors") return errors(Boolean(args.named), Boolean(args.hidden));
  if (args.op === "rows") {
    const want = wanted();
    const showing = rows().filter(
      (r) => seenHere(r) && want.test(seen(r, Infinity, true)) && !told(r),
    );
    const inner = showing.filter((r) => !showing.some((o) => o !== r && r.contains(o)));
    return inner.length;
  }
  return null;
}
