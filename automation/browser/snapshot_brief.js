// The brief format (see snapshot.js, which this file is put into by snapshot.py, inside the
// registry's closure; the `brief` option turns it on): the page for a model that reads it
// as a client of its own (MCP, the act API), in fewer characters a line.  Nothing a model
// acts on or reads is left out; what goes is what it never uses:
//
//   - a ref on a line nothing is done to: text, headings, paragraphs, list items, cells,
//     rows ("- heading "Orders" [level=1]"); elements one acts on, landmarks and other
//     containers one scopes to, frames, and whatever is clicked or dragged as a whole
//     keep theirs (showsRef);
//   - a line of its own for each part of a paragraph or an item: text and the elements
//     in it one line ("- listitem: link "Docs" [e7] — how it works"; inlineOf);
//   - a table row of plain cells on one line, its cells between " | " (cellsOf), and a
//     paragraph or a row its text alone ("- 1003 | link "Ada" [e9]"; textHead);
//   - "text: " before text (textLine), and half the indent: one space a level;
//   - a closed <select>'s options as lines: they follow its value ("- combobox "Plan"
//     [e7]: "Free" options: Free | Pro | Team"); select_option takes them by label;
//   - table sections (thead, tbody) and a caption that is the table's name;
//   - "listitem: " before an item's words (its list's line says what it is: "- list:"
//     then "- link "Docs" [e7] — how it works"), as for a paragraph or a row;
//   - the heading that names a region or a landmark (a <section> named by its <h2>):
//     the container's line says it ("- region "Items" [e5]:");
//   - a heading's level when every heading shown has the same one: it places no heading
//     under another ("- heading "Orders"", not "… [level=1]");
//   - the line of a landmark that holds the whole page (an unnamed <main> or <form> all
//     else is in): its lines come one level up, one character each the less (pageTop);
//   - on a small page (at most SMALL_PAGE elements, no frames: read whole, its snapshot
//     is a few hundred characters), the ref of a container one would only scope a
//     snapshot to (a landmark, a section, a form, a table: SCOPES); a dialog, a widget
//     (menu, tablist, listbox…) and what is clicked keep theirs, and on a page with
//     something to drag, every container does (it may be where the thing is dropped).
//
// The refs left out of the text stay in the ref table: the same element keeps the same
// ref, whichever format showed it.

// Containers one scopes a snapshot to, waits on or acts on as a whole: their refs show.
const TARGETS = new Set([
  "alertdialog", "application", "article", "banner", "complementary", "contentinfo",
  "dialog", "document", "feed", "figure", "form", "grid", "group", "img", "listbox", "main",
  "menu", "menubar", "navigation", "radiogroup", "region", "scrollbar", "search", "table",
  "tablist", "tabpanel", "toolbar", "tree", "treegrid",
]);
// Roles whose line may hold its text and elements on one line (inlineOf).
const INLINE_HOLDERS = new Set([
  "blockquote", "caption", "cell", "clickable", "code", "columnheader", "definition",
  "deletion", "emphasis", "generic", "gridcell", "heading", "insertion", "listitem", "mark",
  "note", "paragraph", "rowheader", "status", "alert", "log", "strong", "subscript",
  "superscript", "term", "time", "tooltip",
]);
// Roles that are words in a sentence: without a ref, their text joins the text around it.
const TEXT_LEVEL = new Set([
  "code", "deletion", "emphasis", "generic", "insertion", "mark", "strong", "subscript",
  "superscript", "time",
]);

let brief = false; // per call (snapshot): the brief format
// Per call (briefPage): the page is small (its containers' refs are left out), and the
// headings shown have more than one level (their levels are shown).
let smallPage = false;
let levelsShown = true;
// A page of at most this many elements (the walk's, a ref each) is small.
const SMALL_PAGE = 50;
// Containers one only scopes a snapshot to: no ref on a small page.
const SCOPES = new Set([
  "article", "banner", "complementary", "contentinfo", "document", "figure", "form",
  "group", "main", "navigation", "region", "search", "table",
]);
// Landmarks that, holding the whole page, say nothing of it.
const PAGE_WRAPPERS = new Set(["main", "form"]);
// Roles whose line, holding only text (or a paragraph's words and elements), is that text
// alone: "- Back office demo" for "- paragraph: Back office demo".
const BARE = new Set(["paragraph", "row", "listitem", ...TEXT_LEVEL]);

// The indent of a line `depth` levels down: one space a level in the brief format.
function indentOf(depth) {
  return (brief ? " " : "  ").repeat(depth);
}

// A line of text: bare in the brief format, unless it could be read as a line of an
// element (a role, then a name, a ref, a colon or nothing: "button "OK" …", "note: …")
// or of a delta ("… 3 unchanged"): then said to be text.
function textLine(text) {
  return brief && !looksLikeLine(text) ? "- " + text : "- text: " + text;
}

function looksLikeLine(text) {
  if (text.startsWith("…")) return true; // a delta's count of unchanged lines
  const word = /^([a-z]+)(?:$|:| "| \[)/.exec(text); // an element's line: role "name" [ref]…
  return word !== null && (ROLE_TABLE[word[1]] === true || word[1] === "text" ||
    word[1] === "clickable");
}

// The line of a node that shows `text` after its own line: a ref-less paragraph or row
// with nothing but its role to say is its text alone (one that begins with an element's
// line needs no check: the element is the page's).
function textHead(n, line, text, lead = false) {
  if (brief && BARE.has(n.role) && lineOf(n) === n.role && (lead || !looksLikeLine(text))) {
    return "- " + text;
  }
  return line + ": " + text;
}

function showsRef(n) {
  if (n.showsRef === undefined) n.showsRef = !brief || targetOf(n);
  return n.showsRef;
}

// An element one acts on or scopes to: a role of either kind, a click target, a frame,
// something dragged, selected, pressed or expanded, a grid's cell or row.
function targetOf(n) {
  if (INTERACTIVE.has(n.role) || n.clickable || n.frame) return true;
  if (TARGETS.has(n.role) && !(smallPage && SCOPES.has(n.role))) return true;
  if (n.role === "gridcell" || n.el.getAttribute("draggable") === "true") return true;
  if (stateList(n).some((s) => !s.startsWith("level="))) return true;
  return n.role === "row" && n.kids.some((k) => typeof k !== "string" && k.role === "gridcell");
}

// What the brief format needs to know of the whole walk before a line is made: whether
// the page is small (a whole-page walk of the top document, no frames, at most
// SMALL_PAGE elements: `nodes`, the walk's elements) and which heading levels show.
function briefPage(root, nodes, whole) {
  smallPage = brief && whole && window === window.top && nodes.length <= SMALL_PAGE &&
    !nodes.some((n) => n.frame || dragged(n));
  const levels = new Set();
  if (brief && root) {
    const visit = (n) => {
      for (const k of shownKids(n)) {
        if (typeof k === "string") continue;
        if (k.role === "heading") levels.add(stateList(k).find((s) => s.startsWith("level=")));
        visit(k);
      }
    };
    visit(root);
  }
  levelsShown = !brief || levels.size > 1;
}

// Something one drags, by the page's say (draggable, a drag library's aria attributes) or
// by its cursor: what it is dropped on may be any container, which keeps its ref.
function dragged(n) {
  const el = n.el;
  return el.getAttribute("draggable") === "true" || el.hasAttribute("aria-grabbed") ||
    /drag/i.test(el.getAttribute("aria-roledescription") || "") ||
    /grab|move/.test(styleOf(el).cursor);
}

// A state as a line shows it: a heading's level only where levels differ.
function shownState(s) {
  return levelsShown || !s.startsWith("level=");
}

// The node whose children are a whole-page walk's first lines: the root, or the landmark
// that holds all of the page (one with nothing of its own to say: no name, no state, not
// clicked or dragged), whose line is left out (its ref stays in the table).  `whole`: not
// a scoped walk, whose element keeps its line.
function pageTop(root, whole) {
  let top = root;
  while (brief && whole) {
    const kids = shownKids(top);
    const k = kids[0];
    if (kids.length !== 1 || typeof k === "string" || !PAGE_WRAPPERS.has(k.role) || k.name ||
        k.clickable || stateList(k).length || lineExtras(k) ||
        k.el.getAttribute("draggable") === "true") {
      return top;
    }
    top = k;
  }
  return top;
}

// The brief format's children of a node, of those shownOf keeps: a closed <select>'s
// options go on its line, a table's sections give way to their rows, and a caption
// or a first heading that only says the node's name goes.
function briefKids(n, kids) {
  if (selectChoices(n) !== null) return [];
  if (kids.length > 1 && namesHolder(n, kids[0])) kids = kids.slice(1);
  if (!kids.some((k) => typeof k !== "string" && (k.role === "rowgroup" || k.role === "caption"))) {
    return kids;
  }
  const out = [];
  for (const k of kids) {
    if (typeof k !== "string" && k.role === "rowgroup" && !showsRef(k) && !labelled(k) &&
        !stateList(k).length) out.push(...shownKids(k));
    else if (typeof k !== "string" && k.role === "caption" && n.name &&
        plainText(k) === n.name) continue;
    else out.push(k);
  }
  return out;
}

// A container's first child that is a heading saying the container's name and nothing
// else (no ref, no state but its level, nothing under it).
function namesHolder(n, k) {
  return Boolean(n.name) && TARGETS.has(n.role) && typeof k !== "string" &&
    k.role === "heading" && k.name === n.name && !showsRef(k) && !shownKids(k).length &&
    stateList(k).every((s) => s.startsWith("level=")) && !lineExtras(k);
}

// A closed <select>'s options, " | " between them, when each is a plain option (no
// state but selected, not in a group); else null (they are lines of their own).
function selectChoices(n) {
  if (n.choices === undefined) {
    n.choices = null;
    if (brief && n.tag === "SELECT" && n.role === "combobox" && n.kids.length) {
      const names = [];
      for (const k of n.kids) {
        if (typeof k === "string") continue;
        const states = stateList(k);
        if (k.role !== "option" || k.kids.some((c) => typeof c !== "string") || labelled(k) ||
            states.length > 1 || (states.length === 1 && states[0] !== "selected")) return null;
        names.push(cellWords(k.name));
      }
      for (const k of n.kids) if (typeof k !== "string") k.folded = true;
      n.choices = names.join(" | ");
    }
  }
  return n.choices;
}

// What a line says past its value: a closed <select>'s options.
function briefExtras(n) {
  const choices = selectChoices(n);
  return choices ? " options: " + choices : "";
}

// A paragraph, an item or a cell whose children are text and elements shown on one line
// each (no children of their own, no value) is one line: its words and those elements'
// lines in the order they come ("- paragraph: See link "the docs" [e9] for more").  A
// text-level element without a ref (emphasis, strong…) is read as words of the text.
// null: its children are lines of their own.
function inlineOf(n) {
  if (n.inline === undefined) {
    n.inline = brief && INLINE_HOLDERS.has(n.role) && !n.frame ? inlineText(n) : null;
  }
  return n.inline;
}

function inlineText(n) {
  const kids = shownKids(n);
  if (!kids.some((k) => typeof k !== "string")) return null; // the usual line says it
  const parts = [];
  if (!inlineParts(kids, parts, false)) return null;
  const first = parts.find((p) => p[0]);
  n.lead = Boolean(first && !first[1]); // the line begins with an element's
  let out = "";
  let glued = false; // the last part was words that the next may run on from
  for (const [text, words, glue] of parts) {
    if (!text) continue;
    out += out && !(glued && words && glue) ? " " + text : text;
    glued = words;
  }
  return out;
}

// Adds [text, is words, runs on from the words before] for each of kids; false when one
// can't be on the line.
function inlineParts(kids, parts, inText) {
  let after = "";
  for (const k of kids) {
    if (typeof k === "string") {
      parts.push([norm(k), true, !/^\s/.test(k) && !/\s$/.test(after)]);
      after = k;
      continue;
    }
    if (k.frame || k.value) return false;
    if (TEXT_LEVEL.has(k.role) && !showsRef(k)) {
      if (stateList(k).length || lineExtras(k) || labelled(k)) return false;
      const inner = [];
      if (!inlineParts(k.kids, inner, true)) return false;
      if (inner.length) inner[0][2] = inner[0][2] && !k.gapBefore && !/\s$/.test(after);
      parts.push(...inner);
      after = "";
      continue;
    }
    // An element of its own: one whose line is all it shows.
    if (inText || !showsRef(k) || shownKids(k).length) return false;
    const line = head(k)[0];
    parts.push([line.slice(2), false, false]);
    after = " ";
  }
  return true;
}

// A node's text when it holds nothing but text.
function plainText(n) {
  return n.kids.every((k) => typeof k === "string") ? norm(n.kids.join(" ")) : null;
}
