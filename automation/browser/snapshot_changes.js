// What changed since the registry's last whole-page walk (see snapshot.js, which this
// file is put into by snapshot.py, inside the registry's closure: it uses the registry's
// state and the walk's helpers).  Two parts: which known ref an element the page
// re-created takes over, and the delta, which shows what changed in the very lines the
// full snapshot shows.

// -- re-created elements ----------------------------------------------------------

// Gives every node of a walk its ref: the one its element holds; else, in a whole-page
// walk, the ref of the element it replaced when that is beyond doubt (adopt); else a
// new one, in document order.  Returns the refs that moved to a new node.
function settleRefs(root, whole) {
  const rebound = [];
  let recreated = false; // the usual walk finds no element it has not seen before
  forEach(root, (n) => { if (!n.ref && n.fresh) recreated = true; });
  if (whole && prevRoot && recreated) {
    const held = new Set();
    forEach(root, (n) => { if (n.ref) held.add(n.ref); });
    adopt(root, places(prevRoot), held, rebound);
  }
  forEach(root, (n) => { if (!n.ref) n.ref = issue(n.el, n.role, n.name, n.ctx); });
  return rebound;
}

// An element the page created since the last whole-page walk takes over a known ref
// only when it is the one element under its parent (a parent that kept its ref) with
// the key that ref had (placeKey; where several rows share that key, as list items
// with links in them do, the key and the content: alikeKey), the ref's old element
// has left the page, and no element of this walk holds the ref.  Two elements with
// the key, two old refs that had it, or the old element still in the page (hidden,
// moved): a new ref instead, since a ref the model knows must never name what could
// be another element.
function adopt(parent, known, held, rebound) {
  const settled = parent.role === "" || Boolean(parent.ref); // the root counts as settled
  if (settled && parent.kids.some((k) => typeof k !== "string" && !k.ref && k.fresh)) {
    const parentRef = parent.ref || "";
    const groups = new Map(); // key -> the nodes with it
    for (const k of parent.kids) {
      if (typeof k === "string") continue;
      k.key = placeKey(k, parentRef);
      const group = groups.get(k.key);
      if (group) group.push(k);
      else groups.set(k.key, [k]);
    }
    for (const [key, group] of groups) {
      const ref = known.get(key);
      if (group.length === 1 && ref) {
        claim(group[0], ref, held, rebound);
      } else if (ref === null) { // the old rows shared the key: tell them by content
        const alike = new Map();
        for (const k of group) {
          const alt = alikeKey(k);
          alike.set(alt, alike.has(alt) ? null : k);
        }
        for (const [alt, k] of alike) {
          if (k) claim(k, known.get(alt), held, rebound);
        }
      }
    }
  }
  for (const k of parent.kids) if (typeof k !== "string") adopt(k, known, held, rebound);
}

// Binds `ref` to the node's element, if the node is new and the ref is free: held by
// no element of this walk, and its old element gone from the page; and if the element
// sits in a row (or named container) that reads as the ref's did (contextOf).
function claim(k, ref, held, rebound) {
  if (!ref || k.ref || !k.fresh || held.has(ref) || alive(ref)) return;
  if (byRef.get(ref)?.ctx !== k.ctx) return;
  const old = byRef.get(ref)?.el.deref();
  if (old) byEl.delete(old);
  k.ref = bindRef(ref, k.el, k.role, k.name, k.ctx);
  held.add(ref);
  rebound.push(ref);
}

function alive(ref) {
  const el = byRef.get(ref)?.el.deref();
  return Boolean(el && el.isConnected);
}

// What a re-created element must match to be the same one: the ref of its parent (so
// its row, if the row kept its ref), its role, name, states and value as the snapshot
// shows them, and its own text (a list item's words: the row's text).
function placeKey(n, parentRef) {
  let key = parentRef + " " + n.role + sized(stateList(n).join(" ")) + sized(n.name) +
    (n.value == null ? "-" : sized(n.value));
  for (const k of n.kids) if (typeof k === "string") key += sized(norm(k));
  return key;
}

// The place key and everything below the node, for rows that share a place key.
function alikeKey(n) {
  return "+" + n.key + contentOf(n);
}

function contentOf(n) {
  if (n.content !== undefined) return n.content;
  let out = "";
  for (const k of n.kids) {
    if (typeof k === "string") out += sized(norm(k));
    else {
      out += " <" + k.role + sized(stateList(k).join(" ")) + sized(k.name) +
        (k.value == null ? "-" : sized(k.value)) + contentOf(k) + " >";
    }
  }
  n.content = out;
  return out;
}

// A part of a key that says how long it is, so that no two keys run together.
function sized(text) {
  return " " + text.length + ":" + text;
}

// A walk's nodes by place key (null marks a key two nodes had), and the nodes that
// shared one by their alike key as well.  Worked out from the tree a walk left, after
// the page changed: all it reads was read during that walk (names, values, text; the
// states, kept on the nodes by stateList).
function places(root) {
  const out = new Map();
  let shared = false;
  const visit = (parent) => {
    for (const k of parent.kids) {
      if (typeof k === "string") continue;
      if (!k.key) k.key = placeKey(k, parent.ref || "");
      if (out.has(k.key)) {
        out.set(k.key, null);
        shared = true;
      } else out.set(k.key, k.ref);
      visit(k);
    }
  };
  visit(root);
  if (shared) {
    forEach(root, (k) => {
      if (out.get(k.key) !== null) return;
      const alt = alikeKey(k);
      out.set(alt, out.has(alt) ? null : k.ref);
    });
  }
  return out;
}

// -- delta --------------------------------------------------------------------------

function fnv(str, h) {
  for (let i = 0; i < str.length; i++) {
    h ^= str.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}

// Per node: `own` covers its line, the text shown under it and the identity of its
// children, `hash` the subtree: what does not show can't make a change.  `unseen`: the
// node has no line of its own (a cell of a row shown on one line, a link of a paragraph).
function hashTree(node, out, unseen = false) {
  const line = node.ref ? lineOf(node) : "";
  let own = line;
  let sub = 2166136261;
  for (const k of shownKids(node)) {
    if (typeof k === "string") { own += "\u0001" + norm(k); continue; }
    own += "\u0002" + k.ref;
    sub = fnv(String(hashTree(k, out, cellsOf(node) !== null || inlineOf(node) !== null)), sub);
  }
  const ownHash = fnv(own, 2166136261);
  const hash = fnv(String(sub), ownHash);
  // What a removal says of it: its line; without a ref of its own (the brief format),
  // with what the line shows of its text, or it would say only its role.
  const gone = !node.ref || showsRef(node) ? line : head(node)[0].slice(2).replace(/:$/, "");
  out.set(node.ref || "", { hash, own: ownHash, line, gone, unseen });
  node.hash = hash;
  node.ownHash = ownHash;
  return hash;
}

// For a delta: each frame's <iframe> line under the lines of its ancestors, as the full
// snapshot shows them, and the depth of the frame's own lines.  A frame in which
// something changed goes there when the delta left its <iframe> line out (stitch).
function framePaths(root) {
  const out = [];
  const chain = [];
  const visit = (node) => {
    for (const k of shownKids(node)) {
      if (typeof k === "string") continue;
      chain.push(k);
      if (k.frame) {
        out.push([k.ref, chain.map((n, i) => indentOf(i) + head(n)[0]), chain.length]);
      } else visit(k);
      chain.pop();
    }
  };
  visit(root);
  return out;
}

// The lines of what changed, each exactly as the full snapshot shows it (renderTree,
// head), under the lines of its ancestors; runs of unchanged siblings are counted.
function renderDelta(node, lines, frames, depth = 0) {
  const pad = indentOf(depth);
  let run = [];
  const flush = () => {
    if (!run.length) return;
    const refs = run.filter(Boolean);
    const shown = refs.slice(0, 3).join(" ") + (refs.length > 3 ? ` +${refs.length - 3}` : "");
    lines.push(pad + `- … ${run.length} unchanged` + (shown ? ` (${shown})` : ""));
    run = [];
  };
  const ownChanged = prevWalk.get(node.ref || "")?.own !== node.ownHash;
  for (const k of shownKids(node)) {
    if (typeof k === "string") {
      if (ownChanged) { flush(); lines.push(pad + textLine(norm(k))); }
      continue;
    }
    const old = prevWalk.get(k.ref);
    if (old && old.hash === k.hash) { // a frame too: stitch shows it if its page changed
      if (ownChanged) run.push(showsRef(k) ? k.ref : "");
      continue;
    }
    flush();
    const [line, open] = head(k);
    if (!old || !open) { // new since the last snapshot, or a single line (a frame's too)
      renderTree({ kids: [k] }, depth, lines, frames, 0);
      continue;
    }
    lines.push(pad + line);
    renderDelta(k, lines, frames, depth + 1);
  }
  flush();
}
