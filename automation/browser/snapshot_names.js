// Accessible names (see snapshot.js, which this file is put into by snapshot.py, inside
// the registry's closure: it uses norm, roleOf and explicitRole from there).
//
// A ref is found again by its role and name, by us and by Playwright
// (get_by_role(role, name=…, exact=True) in replays and exported tests), so a name is
// computed the way Playwright computes it (its roleUtils, after the W3C accname rules):
// an element named from its content reads its children one after the other, each
// child element as its own text alternative, with a space on each side of a child that
// is not laid out inline (a block, a table cell, an inline-block button, a <br>) and
// none around an inline one.  So a row whose cell holds the buttons "Delete" and
// "Archive" is named "Delete Archive", while "<b>Bold</b>er" stays "Bolder".
// Left out, for their cost: text a stylesheet adds (::before / ::after content), and
// the rule that reads an element only once per name (it matters when a control's label
// sits outside the element being named).
// Left out on purpose: an element's own text where its aria-labelledby lists the element
// itself (the WAI-ARIA combobox pattern's `aria-labelledby="label combobox"`, named
// "Tier Silver" by the rules): its name here is "Tier", so its ref and its identity hold
// while its value changes; ownInName says where that text stands in the rules' name, and
// the pytest export finds it by a pattern allowing any text there (exportlocators.py).

// Roles whose content names them (NAME_FROM_CONTENT, in snapshot.js), and roles whose
// content is read when they sit inside an element being named ("" : no role).  Any
// other role (a group, a toolbar, a navigation, an image…) gives only its label or title.
const CONTENT_INSIDE = new Set([
  "", "caption", "code", "contentinfo", "definition", "deletion", "emphasis", "insertion",
  "list", "listitem", "mark", "none", "paragraph", "presentation", "region", "row",
  "rowgroup", "section", "strong", "subscript", "superscript", "table", "term", "time",
]);
const RANGES = new Set(["progressbar", "scrollbar", "slider", "spinbutton", "meter"]);
// Input types whose placeholder may name the field.
const TEXT_TYPES = new Set(["text", "password", "number", "search", "tel", "email", "url"]);
// Per snapshot call (snapshotCall, in snapshot_lines.js), null outside one (the page may
// have changed since): the content text read of each element, so that a row, its cells
// and the buttons in them are each read once; and each element's computed style, which
// the names (display) and the walk (cursor) both read.
let contentMemo = null;
let styleMemo = null;

// How a name is being read (one object per kind, so the common case allocates nothing):
// `labelled` inside an aria-labelledby target (where aria-labelledby is not followed
// again and content is always read), `hidden` also reading what is hidden (a hidden
// target of aria-labelledby, as the rules say), `skip` the control a label names.
const PLAIN = Object.freeze({ labelled: false, hidden: false, skip: null });
const LABELLED = Object.freeze({ labelled: true, hidden: false, skip: null });
const LABELLED_HIDDEN = Object.freeze({ labelled: true, hidden: true, skip: null });

function nameOf(el, role) {
  let name = idrefText(el, "aria-labelledby", el);
  if (!name) name = norm(el.getAttribute("aria-label") || "");
  if (!name) name = nativeName(el, role);
  if (!name && (NAME_FROM_CONTENT.has(role) || role === "clickable")) name = contentText(el);
  if (!name) name = norm(el.getAttribute("title") || "");
  if (!name && (el.tagName === "INPUT" || el.tagName === "TEXTAREA")) {
    name = norm(el.getAttribute("placeholder") || "");
  }
  if (typeof name !== "string") return ""; // a page that rewrote String.prototype
  return name.length > MAX_NAME ? name.slice(0, MAX_NAME) : name;
}

function nativeName(el, role) {
  const tag = el.tagName;
  if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || tag === "METER" ||
      tag === "PROGRESS" || tag === "OUTPUT") {
    const type = (el.getAttribute("type") || "").toLowerCase();
    if (tag === "INPUT" && (type === "submit" || type === "reset" || type === "button")) {
      const value = el.getAttribute("value");
      if (value) return norm(value);
      return type === "submit" ? "Submit" : type === "reset" ? "Reset" : "";
    }
    const labels = el.labels;
    if (labels && labels.length) {
      return norm(Array.from(labels, (l) => labelText(l, el)).join(" "));
    }
    if (tag === "INPUT" && type === "image") {
      return norm(el.getAttribute("alt") || el.getAttribute("title") || "Submit");
    }
    if (tag === "INPUT" && type === "file") return "Choose File";
    return "";
  }
  if (tag === "IMG" || tag === "AREA") return norm(el.getAttribute("alt") || "");
  if (tag === "FIELDSET") {
    const legend = el.querySelector(":scope > legend");
    return legend ? contentText(legend) : "";
  }
  if (tag === "TABLE") {
    const caption = el.querySelector(":scope > caption");
    return caption ? contentText(caption) : "";
  }
  if (tag === "FIGURE") {
    const caption = el.querySelector(":scope > figcaption");
    return caption ? contentText(caption) : "";
  }
  if (tag === "IFRAME" || tag === "FRAME") {
    return norm(el.getAttribute("title") || el.getAttribute("name") || "");
  }
  if (tag === "OPTGROUP") return norm(el.getAttribute("label") || "");
  return "";
}

// The text of the elements aria-labelledby (or another id list) points at; `self` (the
// element being named) left out where the list holds it.
function idrefText(el, attr, self) {
  const parts = idrefParts(el, attr, self);
  return parts && parts.length ? norm(parts.join(" ")) : null;
}

// Each element's text, in the list's order, `self` as null; null without the attribute.
function idrefParts(el, attr, self) {
  const ids = el.getAttribute(attr);
  if (!ids) return null;
  const root = el.getRootNode();
  const parts = [];
  for (const id of ids.trim().split(/\s+/)) {
    const target = root.getElementById ? root.getElementById(id) : null;
    if (!target) continue;
    if (target === self) {
      parts.push(null);
      continue;
    }
    const how = isHidden(target, "") ? LABELLED_HIDDEN : LABELLED;
    parts.push(alternative(target, how));
  }
  return parts;
}

// Where the element's own text stands in the name the accname rules (and Playwright's
// get_by_role) give it when its aria-labelledby lists itself beside its labels: "end"
// ("Tier" + "Silver"), "start", or "within" (between them, or on both sides); "" where
// it does not, or where its labels read as nothing (its name is not theirs then).
function ownInName(el) {
  const parts = idrefParts(el, "aria-labelledby", el);
  if (!parts || !parts.includes(null)) return "";
  const said = parts.map((p) => (p === null ? "own" : norm(p) ? "label" : ""))
    .filter(Boolean);
  const first = said.indexOf("label");
  if (first < 0) return "";
  const last = said.lastIndexOf("label");
  const before = first > 0;
  const after = last < said.length - 1;
  if (said.slice(first, last).includes("own") || (before && after)) return "within";
  return before ? "start" : "end";
}

// The name an element reads from its content.
function contentText(el) {
  return norm(inner(el, PLAIN));
}

// A label's text without the control it names (that control's value is no part of it).
function labelText(label, control) {
  if (!label.contains(control)) return contentText(label);
  return norm(inner(label, { labelled: false, hidden: false, skip: control }));
}

// What the element's children read, one after the other.
function inner(el, how) {
  const memo = how === PLAIN ? contentMemo : null;
  const known = memo ? memo.get(el) : undefined;
  if (known !== undefined) return known;
  let out = "";
  const assigned = el.tagName === "SLOT" ? el.assignedNodes() : null;
  if (assigned && assigned.length) {
    for (const a of assigned) out += piece(a, how);
  } else {
    for (let c = (el.shadowRoot || el).firstChild; c; c = c.nextSibling) out += piece(c, how);
  }
  if (memo) memo.set(el, out);
  return out;
}

// One child's part of its parent's content: text as it is; an element's text
// alternative, spaced unless it is laid out inline.
function piece(c, how) {
  if (c.nodeType === 3) return c.data;
  if (c.nodeType !== 1) return "";
  const display = styleOf(c).display;
  const text = c === how.skip || (!how.hidden && isHidden(c, display)) ? "" : alternative(c, how);
  return display !== "inline" || c.tagName === "BR" ? " " + text + " " : text;
}

function styleOf(el) {
  if (styleMemo === null) return getComputedStyle(el);
  let style = styleMemo.get(el);
  if (style === undefined) {
    style = getComputedStyle(el);
    styleMemo.set(el, style);
  }
  return style;
}

// Hidden from the accessibility tree: not rendered, invisible, or aria-hidden.
function isHidden(el, display) {
  if (SKIP.has(el.tagName) || el.getAttribute("aria-hidden") === "true") return true;
  if (el.tagName === "OPTION" && el.closest("select")) return false;
  return (display || styleOf(el).display) !== "contents" &&
    !el.checkVisibility({ visibilityProperty: true });
}

// An element's text alternative inside the element being named.
function alternative(el, how) {
  if (!how.labelled) {
    const labelled = idrefText(el, "aria-labelledby");
    if (labelled) return labelled;
  }
  const tag = el.tagName;
  let role = roleOf(el) || "";
  if (role === "form" && !el.hasAttribute("aria-label")) role = ""; // a form needs a name
  const embedded = embeddedValue(el, role, tag);
  if (embedded !== null) return embedded;
  const label = el.getAttribute("aria-label");
  if (label && label.trim()) return label;
  const own = explicitRole(el);
  const presentational = own === "none" || own === "presentation";
  const native = presentational ? null : nativeInside(el, tag);
  if (native !== null) return native;
  const fromContent = NAME_FROM_CONTENT.has(role) || CONTENT_INSIDE.has(role) || tag === "SUMMARY";
  if (how.labelled || fromContent) {
    const text = inner(el, how);
    if (text.trim()) return text;
  }
  return presentational ? "" : el.getAttribute("title") || "";
}

// A control inside the element being named reads as its value (a text field's text, a
// select's choice, a slider's number), never a password.
function embeddedValue(el, role, tag) {
  if (role === "textbox" || role === "searchbox") {
    if (tag !== "INPUT" && tag !== "TEXTAREA") return el.textContent || "";
    return (el.getAttribute("type") || "").toLowerCase() === "password" ? "" : el.value || "";
  }
  if (role === "combobox" || role === "listbox") {
    if (tag === "SELECT") {
      const chosen = el.selectedOptions.length ? Array.from(el.selectedOptions) : [el.options[0]];
      return chosen.filter(Boolean).map((o) => alternative(o, PLAIN)).join(" ");
    }
    if (tag === "INPUT") return el.value || "";
    const chosen = Array.from(el.querySelectorAll('[aria-selected="true" i]'))
      .filter((o) => roleOf(o) === "option");
    return chosen.map((o) => alternative(o, PLAIN)).join(" ");
  }
  if (RANGES.has(role)) {
    if (el.hasAttribute("aria-valuetext")) return el.getAttribute("aria-valuetext");
    if (el.hasAttribute("aria-valuenow")) return el.getAttribute("aria-valuenow");
    return el.getAttribute("value") || "";
  }
  return role === "menu" ? "" : null;
}

// The text alternative HTML gives an element of its own, inside the element being
// named; null when it has none and its content (or title) is read instead.
function nativeInside(el, tag) {
  switch (tag) {
    case "INPUT": {
      const type = (el.getAttribute("type") || "text").toLowerCase();
      if (type === "submit" || type === "reset" || type === "button") {
        return el.value || (type === "submit" ? "Submit" : type === "reset" ? "Reset" : "") ||
          el.getAttribute("title") || "";
      }
      if (type === "image") {
        return el.getAttribute("alt") || el.getAttribute("title") || "Submit";
      }
      // A labelled control inside is named by its label, which is read where it stands.
      if (el.labels && el.labels.length) return "";
      if (type === "file") return "Choose File";
      return fieldTitle(el, TEXT_TYPES.has(type));
    }
    case "TEXTAREA": case "SELECT": case "METER": case "PROGRESS":
      return el.labels && el.labels.length ? "" : fieldTitle(el, tag === "TEXTAREA");
    case "OUTPUT": return el.getAttribute("title") || "";
    case "IMG": case "AREA": return el.getAttribute("alt") || el.getAttribute("title") || "";
    case "FIELDSET": return captioned(el, "LEGEND");
    case "FIGURE": return captioned(el, "FIGCAPTION");
    case "TABLE": {
      for (let c = el.firstElementChild; c; c = c.nextElementSibling) {
        if (c.tagName === "CAPTION") return inner(c, PLAIN);
      }
      return el.getAttribute("summary") || null;
    }
    default:
      return el.namespaceURI === "http://www.w3.org/2000/svg" ? svgTitle(el) : null;
  }
}

function fieldTitle(el, placeholder) {
  const title = el.getAttribute("title") || "";
  return title || !placeholder ? title : el.getAttribute("placeholder") || "";
}

// The text of the element's first child of the tag (a legend, a caption), else its title.
function captioned(el, tag) {
  for (let c = el.firstElementChild; c; c = c.nextElementSibling) {
    if (c.tagName === tag) return inner(c, PLAIN);
  }
  return el.getAttribute("title") || "";
}

function svgTitle(el) {
  for (let c = el.firstElementChild; c; c = c.nextElementSibling) {
    if (c.tagName.toLowerCase() === "title") return c.textContent || "";
  }
  return null;
}
