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
  const RANKED = "h1, h2, h3, h4, h5, h6, [role=heading]"; // headings of a rank (not legends)
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
  // CSS.escape's rule (CSSOM), our own: a page's script may declare a CSS of its own
  // ("const CSS = {...}"), which hides the browser's from every script of the page.
  const cssEscape = (value) => {
    const s = String(value);
    let out = "";
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      const digit = c >= 0x30 && c <= 0x39;
      if (c === 0) out += "\uFFFD";
      else if ((c >= 0x1 && c <= 0x1f) || c === 0x7f || (i === 0 && digit) ||
               (i === 1 && digit && s.charCodeAt(0) === 0x2d)) out += `\\${c.toString(16)} `;
      else if (i === 0 && c === 0x2d && s.length === 1) out += "\\-";
      else if (c >= 0x80 || c === 0x2d || c === 0x5f || digit || /[A-Za-z]/.test(s[i])) out += s[i];
      else out += `\\${s[i]}`;
    }
    return out;
  };
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

  // @include column.js
  // @include identity_describe.js
  // @include identity_cards.js
  // @include identity_compare.js
  // @include identity_locate.js

  try {
    if (args.op === "capture") return describe(el, elements(roots()));
    if (args.op === "locate") return locate(args.identities || [args.identity]);
    return { error: "unknown op " + args.op };
  } catch (err) {
    return { error: `${args.op} failed: ${err && err.message ? err.message : err}` };
  }
}
