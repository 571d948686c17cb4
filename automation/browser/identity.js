// Element identities, in the page: what a recorded step knows about its element, and
// how replay finds that element again after the site changed.
//
// Evaluated on demand as (el, args) => ...:
//   args.op "capture": describe el (the element a step is about to act on);
//   args.op "locate":  find args.identity in this document (el is null), or abstain.
// Roles and names come from the snapshot registry (snapshot.js), so they are the ones the
// agent saw.  Open shadow roots are searched; each frame is searched by its own call.
(el, args) => {
  const tw = window.__tabwright;
  if (!tw || !tw.roleOf) return { error: "no registry in this document" };
  const TEST_ATTRS = ["data-testid", "data-test", "data-qa", "data-cy"];
  const ROW = "tr, li, [role=row], [role=listitem], article";
  const GROUP = "fieldset, section, form, dialog, nav, header, footer, aside, main, " +
    "[role=region], [role=group], [role=dialog], [role=toolbar], [role=navigation], " +
    "[role=form], [role=search], [role=tabpanel]";
  const HEADING = "h1, h2, h3, h4, h5, h6, legend, [role=heading]";
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
  // How the decision is made (see identity.py for what each strategy means).
  const MIN_NAME = 0.75; // below this a name does not match, unless an attribute proves it
  const MIN_CONTEXT = 0.6; // a name shared at recording must keep its row or section
  const MIN_FIT = 0.5; // no strategy takes an element that scores below this
  const MIN_SCORE = 0.6; // similarity: the best candidate's score at least this...
  const MARGIN = 0.06; // ...and this far ahead of the next one
  const W = {
    name: 0.3, role: 0.1, tag: 0.04, type: 0.04, test: 0.1, id: 0.06, name_attr: 0.08,
    placeholder: 0.03, text: 0.05, row: 0.12, section: 0.08, position: 0.05, look: 0.04,
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

  function rowOf(e) {
    for (let n = parentOf(e); n; n = parentOf(n)) {
      if (!n.matches(ROW)) continue;
      let text = norm(n.innerText || "");
      const own = textOf(e);
      if (own) text = norm(text.replace(own, " "));
      return cut(text, 200);
    }
    return "";
  }

  // The title of the nearest labelled group (legend, aria-label, first heading), else the
  // nearest heading before the element.
  function sectionOf(e) {
    for (let n = parentOf(e); n; n = parentOf(n)) {
      if (!n.matches(GROUP)) continue;
      const role = tw.roleOf(n) || "";
      const named = norm(tw.nameOf(n, role));
      if (named) return cut(named, 120);
      const heading = n.querySelector(HEADING);
      if (heading) return cut(norm(heading.textContent), 120);
    }
    let steps = 0;
    for (let n = e; n && steps < 200; n = parentOf(n)) {
      for (let s = n.previousElementSibling; s && steps < 200; s = s.previousElementSibling) {
        steps++;
        if (s.matches(HEADING)) return cut(norm(s.textContent), 120);
        const inner = s.querySelectorAll(HEADING);
        if (inner.length) return cut(norm(inner[inner.length - 1].textContent), 120);
      }
    }
    return "";
  }

  function look(e) {
    const s = getComputedStyle(e);
    const r = e.getBoundingClientRect();
    return [s.backgroundColor, s.color, s.fontSize, s.fontWeight, s.borderRadius,
      Math.round(r.width / 8), Math.round(r.height / 8)].join("|");
  }

  function selectorsOf(e) {
    const root = e.getRootNode();
    const unique = (sel) => {
      try {
        const all = root.querySelectorAll(sel);
        return all.length === 1 && all[0] === e;
      } catch (err) {
        return false;
      }
    };
    const q = (v) => JSON.stringify(v);
    const tag = lower(e.tagName);
    const out = [];
    const add = (sel) => { if (!out.includes(sel) && unique(sel)) out.push(sel); };
    for (const attr of TEST_ATTRS) if (e.getAttribute(attr)) add(`[${attr}=${q(e.getAttribute(attr))}]`);
    if (e.id) add("#" + CSS.escape(e.id));
    for (const attr of ["aria-label", "name", "placeholder"]) {
      if (e.getAttribute(attr)) add(`${tag}[${attr}=${q(e.getAttribute(attr))}]`);
    }
    // A path, anchored at the nearest ancestor with a unique test id or id.
    const count = (sel) => root.querySelectorAll(sel).length;
    const parts = [];
    for (let n = e; n && n.nodeType === 1; n = n.parentElement) {
      if (n !== e) {
        const tid = n.getAttribute("data-testid");
        if (tid && count(`[data-testid=${q(tid)}]`) === 1) {
          parts.unshift(`[data-testid=${q(tid)}]`);
          break;
        }
        if (n.id && count("#" + CSS.escape(n.id)) === 1) {
          parts.unshift("#" + CSS.escape(n.id));
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

  function features(e) {
    const role = tw.roleOf(e) || "";
    const r = e.getBoundingClientRect();
    const tests = {};
    for (const attr of TEST_ATTRS) if (e.hasAttribute(attr)) tests[attr] = e.getAttribute(attr);
    return {
      role,
      name: norm(tw.nameOf(e, role)),
      aria_label: norm(e.getAttribute("aria-label") || ""),
      test_ids: tests,
      name_attr: e.getAttribute("name") || "",
      id: e.id || "",
      placeholder: norm(e.getAttribute("placeholder") || ""),
      type: lower(e.getAttribute("type")),
      tag: lower(e.tagName),
      text: textOf(e),
      row: rowOf(e),
      section: sectionOf(e),
      box: [r.left + scrollX, r.top + scrollY, r.width, r.height].map((v) => Math.round(v)),
      look: look(e),
    };
  }

  function describe(e, all) {
    const f = features(e);
    f.selectors = selectorsOf(e);
    f.name_count = f.name ? all.filter((o) => sameRoleName(o, f)).length : 0;
    return f;
  }

  function sameRoleName(o, f) {
    const role = tw.roleOf(o) || "";
    return role === f.role && norm(tw.nameOf(o, role)) === f.name && visible(o);
  }

  const elements = (rs) => rs.flatMap((r) => Array.from(r.querySelectorAll("*")));

  // -- comparing ----------------------------------------------------------------------

  // Words of a name: "E-mail" and "Email" are one word, case and punctuation ignored.
  function words(t) {
    return lower(t).replace(/(\w)[-'’](\w)/g, "$1$2").split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  }

  // 1 for the same words; an added word costs little, a dropped one more, a replaced one
  // a lot ("Save changes" ~ "Save all changes"; "Save draft" is not "Save", nor
  // "Export CSV" "Export PDF").
  function textSim(a, b) {
    const x = words(a);
    const y = words(b);
    if (!x.length && !y.length) return 1;
    if (!x.length || !y.length) return 0;
    if (x.join("") === y.join("")) return 1;
    const ys = new Set(y);
    const xs = new Set(x);
    const missing = x.filter((w) => !ys.has(w)).length;
    const extra = y.filter((w) => !xs.has(w)).length;
    const replaced = Math.min(missing, extra);
    const cost = replaced + 0.25 * (extra - replaced) + 0.6 * (missing - replaced);
    return Math.max(0, 1 - cost / Math.max(x.length, y.length));
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
  // be taken at all: a different role or a different name needs an attribute proving it
  // is the element; a name that was shared at recording needs its row or section.
  function judge(id, f, anchors) {
    let got = 0;
    let total = 0;
    const add = (weight, sim) => { total += weight; got += weight * sim; };
    const nameSim = id.name ? textSim(id.name, f.name) : null;
    if (nameSim !== null) add(W.name, nameSim);
    if (id.role) add(W.role, f.role === id.role ? 1 : 0);
    add(W.tag, f.tag === id.tag ? 1 : 0);
    if (id.type || f.type) add(W.type, f.type === id.type ? 1 : 0);
    const tests = Object.keys(id.test_ids || {}).length > 0;
    if (tests) add(W.test, sameTestId(id, f) ? 1 : 0);
    if (id.id) add(W.id, f.id === id.id ? 1 : overlap(id.id, f.id) * 0.8);
    if (id.name_attr) add(W.name_attr, f.name_attr === id.name_attr ? 1 : overlap(id.name_attr, f.name_attr) * 0.8);
    if (id.placeholder) add(W.placeholder, textSim(id.placeholder, f.placeholder));
    if (id.text) add(W.text, textSim(id.text, f.text));
    const rowSim = id.row ? overlap(id.row, f.row) : null;
    const sectionSim = id.section ? textSim(id.section, f.section) : null;
    if (rowSim !== null) add(W.row, rowSim);
    if (sectionSim !== null) add(W.section, sectionSim);
    if (id.box) add(W.position, Math.exp(-distance(id.box, f.box) / 400));
    if (id.look) add(W.look, lookSim(id.look, f.look));
    const proven = (tests && sameTestId(id, f)) || (id.id && f.id === id.id) ||
      (id.name_attr && f.name_attr === id.name_attr && f.tag === id.tag);
    const why = [];
    // An attribute may prove a renamed element, or a role within its kind (a link that
    // became a button), never a different kind of control (a checkbox that became a field).
    const kindOk = !id.role || f.role === id.role || (proven && KIND[id.role] && KIND[id.role] === KIND[f.role]);
    if (!kindOk) why.push(`role ${f.role || "none"}`);
    if (nameSim !== null && nameSim < MIN_NAME && !proven) why.push(`name ${JSON.stringify(f.name)}`);
    // An attribute value that was unique when recorded and is unique now anchors the
    // element: then its row or section may have changed (it was moved, or regrouped).
    const anchored = (anchors.test && sameTestId(id, f)) || (anchors.id && f.id === id.id) ||
      (anchors.name_attr && f.name_attr === id.name_attr && f.tag === id.tag);
    if ((id.name_count > 1 || !id.name || args.crossing) && !anchored) {
      // The finest context it had: its row, else its section.
      const context = rowSim !== null ? rowSim : sectionSim;
      if (context !== null && context < MIN_CONTEXT) {
        why.push(rowSim !== null ? "another row" : "another section");
      }
    }
    return { score: total ? got / total : 0, ok: why.length === 0, why };
  }

  // -- locating -----------------------------------------------------------------------

  // Which of the identity's attributes pick out one element, both when it was recorded
  // (its selectors list only unique ones) and among the candidates now.
  function anchorsOf(id, candidates) {
    const q = (v) => JSON.stringify(v);
    const stored = new Set(id.selectors || []);
    const now = (match) => candidates.filter((c) => match(c.f)).length === 1;
    const tests = Object.entries(id.test_ids || {}).filter(([k, v]) => stored.has(`[${k}=${q(v)}]`));
    return {
      test: tests.length > 0 && now((f) => sameTestId(id, f)),
      id: !!id.id && stored.has("#" + CSS.escape(id.id)) && now((f) => f.id === id.id),
      name_attr: !!id.name_attr && stored.has(`${id.tag}[name=${q(id.name_attr)}]`) &&
        now((f) => f.name_attr === id.name_attr && f.tag === id.tag),
    };
  }

  function locate(id) {
    const rs = roots();
    const all = elements(rs).filter(visible);
    const candidates = [];
    for (const e of all) {
      const role = tw.roleOf(e) || "";
      if (!INTERACTIVE.has(role) && lower(e.tagName) !== id.tag) continue;
      candidates.push({ e, f: features(e) });
    }
    const anchors = anchorsOf(id, candidates);
    for (const c of candidates) Object.assign(c, judge(id, c.f, anchors));
    const byEl = new Map(candidates.map((c) => [c.e, c]));
    const strategies = [];
    if (id.role && id.name) {
      strategies.push(["role_name", candidates.filter((c) => c.f.role === id.role && c.f.name === id.name)]);
    }
    if (id.aria_label) strategies.push(["aria_label", candidates.filter((c) => c.f.aria_label === id.aria_label)]);
    if (id.name_attr) {
      strategies.push(["name_attr", candidates.filter((c) => c.f.name_attr === id.name_attr && c.f.tag === id.tag)]);
    }
    if (Object.keys(id.test_ids || {}).length) {
      strategies.push(["test_id", candidates.filter((c) => sameTestId(id, c.f))]);
    }
    for (const sel of id.selectors || []) {
      const hits = new Set();
      for (const r of rs) {
        try {
          for (const e of r.querySelectorAll(sel)) if (visible(e)) hits.add(e);
        } catch (err) { /* a selector this document can't parse finds nothing */ }
      }
      const judged = (e) => {
        const f = features(e);
        return { e, f, ...judge(id, f, anchors) };
      };
      strategies.push(["selector", Array.from(hits, (e) => byEl.get(e) || judged(e))]);
    }
    for (const [strategy, hits] of strategies) {
      if (hits.length === 1 && hits[0].ok && hits[0].score >= MIN_FIT) {
        return found(strategy, hits[0], all);
      }
    }
    // Similarity: among the candidates that may be taken, one clearly ahead.
    const ranked = candidates.slice().sort((a, b) => b.score - a.score);
    const fitting = ranked.filter((c) => c.ok);
    const best = fitting[0];
    const next = fitting[1];
    if (best && best.score >= MIN_SCORE && (!next || best.score - next.score >= MARGIN)) {
      return found("similarity", best, all);
    }
    if (id.box) {
      const [x, y, w, h] = id.box;
      let e = document.elementFromPoint(x + w / 2 - scrollX, y + h / 2 - scrollY);
      while (e && !byEl.has(e)) e = parentOf(e);
      const hit = e && byEl.get(e);
      const clear = !best || hit === best || hit.score >= best.score - MARGIN;
      if (hit && hit.ok && hit.score >= MIN_SCORE && clear) {
        return found("coordinates", hit, all);
      }
    }
    let reason = "no candidate element";
    if (!best && ranked.length) reason = "no candidate fits: " + ranked[0].why.join(", ");
    else if (best && best.score < MIN_SCORE) reason = `best score ${best.score.toFixed(2)} is too low`;
    else if (best) {
      const alike = fitting.filter((c) => best.score - c.score < MARGIN).length;
      reason = `ambiguous: ${alike} candidates score alike`;
    }
    return {
      el: null,
      report: { strategy: "", score: best ? best.score : 0, reason, candidates: top(ranked) },
    };
  }

  function found(strategy, hit, all) {
    return {
      el: hit.e,
      report: { strategy, score: hit.score, reason: "", found: describe(hit.e, all), candidates: [] },
    };
  }

  function top(ranked) {
    return ranked.slice(0, 3).map((c) => ({
      role: c.f.role, name: c.f.name, score: Math.round(c.score * 1000) / 1000, why: c.why,
    }));
  }

  if (args.op === "capture") return describe(el, elements(roots()));
  if (args.op === "locate") return locate(args.identity);
  return { error: "unknown op " + args.op };
}
