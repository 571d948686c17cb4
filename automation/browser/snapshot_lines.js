// What a snapshot line shows besides role, name, ref and states (see snapshot.js, which
// this file is put into by snapshot.py, inside the registry's closure; lineOf calls
// lineExtras).  Each costs characters only on the lines it is about:
//
//   - textbox "Email" [e4] [focused] placeholder="name@example.com"
//   - row "#1001 Ada Lovelace" [e9] [clickable]:
//   - link "Docs" [e7] -> /docs                      (only with the linkUrls option)
//
// None of it is part of a state (stateList): a re-created element is told by its states
// (placeKey), and neither where the focus is nor how a line is shown makes it another.

const MAX_HINT = 80; // characters of a placeholder shown
const MAX_URL = 100; // characters of a URL shown, past its path (see shortUrl)
const MAX_PATH = 200; // characters of a URL's path shown
const HINTED = new Set(["textbox", "searchbox", "combobox", "spinbutton"]);
// Taken when the registry is installed, before the page's scripts run: a page that
// replaces URL can't change what a line says.
const PageURL = URL;
// Per snapshot call (snapshotCall): the focused element, and whether links show URLs.
let focused = null;
let linkUrls = false;

// One snapshot call: what its lines need from the whole page is read once, before the walk.
function snapshotCall(opts) {
  answerEngine();
  contentMemo = new Map();
  styleMemo = new Map();
  linkUrls = opts.linkUrls === true;
  focused = focusedElement();
  try {
    return snapshot(opts);
  } finally {
    contentMemo = null;
    styleMemo = null;
    focused = null;
  }
}

function lineExtras(n) {
  let out = "";
  if (focused !== null && n.el === focused) out += " [focused]";
  // A row or an item that is clicked as a whole (a role of its own tells nothing of it).
  if (n.clickable && n.role !== "clickable") out += " [clickable]";
  const hint = HINTED.has(n.role) ? placeholderOf(n) : "";
  if (hint) out += " placeholder=" + JSON.stringify(hint);
  if (linkUrls && n.role === "link") {
    const url = shortUrl(n.el);
    if (url) out += " -> " + url;
  }
  return out;
}

// A field's placeholder when it says more than the field's name (which is the
// placeholder itself when nothing else names the field).
function placeholderOf(n) {
  const raw = n.el.getAttribute("placeholder") || n.el.getAttribute("aria-placeholder");
  if (!raw) return "";
  const hint = norm(raw);
  if (!hint || n.name.toLowerCase().includes(hint.toLowerCase())) return "";
  return hint.length > MAX_HINT ? hint.slice(0, MAX_HINT - 1) + "…" : hint;
}

// The element with the keyboard focus in this document, through open shadow roots; null
// when there is none, when it is a frame (that frame's own walk marks what has the focus
// in it), or when this frame does not hold the page's focus.
function focusedElement() {
  try {
    const el = activeIn(document);
    if (!el || el === document.body || el === document.documentElement) return null;
    if (el.tagName === "IFRAME" || el.tagName === "FRAME") return null;
    return frameHasFocus() ? el : null;
  } catch (e) {
    return null; // a page that replaced what is read here: no focus shown
  }
}

function activeIn(doc) {
  let el = doc.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
  return el;
}

// A frame's document keeps an active element when the focus leaves the frame, so a
// frame holds the focus only if every <iframe> above it is the active element of its
// own document; across origins, where that can't be read, the browser says.
function frameHasFocus() {
  let win = window;
  for (let host = win.frameElement; host; host = win.frameElement) {
    if (activeIn(host.ownerDocument) !== host) return false;
    win = host.ownerDocument.defaultView;
  }
  return win === window.top || document.hasFocus();
}

// A link's URL, short: from the path on when it is on this page's origin ("#top" alone
// for a place on this very page), whole otherwise; "javascript:" for a script.  A long
// query or fragment is cut with an ellipsis; the path is kept (cut in its middle only
// past MAX_PATH characters).
function shortUrl(el) {
  const raw = el.getAttribute("href");
  if (raw === null) return "";
  if (/^\s*javascript:/i.test(raw)) return "javascript:";
  let url;
  try {
    url = new PageURL(raw, el.baseURI);
  } catch (e) {
    return ""; // not a URL: the link goes nowhere
  }
  const web = url.protocol === "http:" || url.protocol === "https:";
  if (!web) return cutEnd(url.href, MAX_URL);
  let path = url.pathname;
  let rest = url.search + url.hash;
  if (url.origin === location.origin) {
    if (url.hash && path === location.pathname && url.search === location.search) {
      path = "";
      rest = url.hash;
    }
  } else {
    path = url.origin + path;
  }
  if (path.length > MAX_PATH) {
    path = path.slice(0, MAX_PATH / 2) + "…" + path.slice(-(MAX_PATH / 2 - 1));
  }
  if (path.length + rest.length <= MAX_URL) return path + rest;
  return path + cutEnd(rest, Math.max(MAX_URL - path.length, 10));
}

function cutEnd(text, max) {
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}
