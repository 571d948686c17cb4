// The reduced snapshot: one line for each element one can act on, for pages too big to
// walk in time (see reduced below).
// snapshot.py puts this file into snapshot.js where its "@include" line is, inside the
// registry's closure.

    // The reduced snapshot: elements one can act on (and frames), one line each, found by
    // ACTIONABLE in the document and its open shadow roots.  What the deadline leaves out
    // (late) and what would not fit in maxChars (over) is counted, not looked at: that keeps
    // the answer small and quick to move out of the page.  No structure, no text, no
    // clickables found only by their pointer cursor.
    function reduced(start, maxChars) {
      const roots = [start];
      for (let i = 0; i < roots.length; i++) {
        for (const el of roots[i].querySelectorAll("*")) if (el.shadowRoot) roots.push(el.shadowRoot);
      }
      const nodes = [];
      const lines = [];
      let late = 0;
      let over = 0;
      let chars = 0;
      for (const root of roots) {
        for (const el of root.querySelectorAll(ACTIONABLE)) {
          if (late || ((++visited & 63) === 0 && performance.now() > deadline)) {
            late++;
            continue;
          }
          if (over || chars > maxChars) {
            over++;
            continue;
          }
          const node = actionable(el);
          if (!node) continue;
          nodes.push(node);
          lines.push("- " + lineOf(node) + (node.frame ? ":" : ""));
          chars += lines[lines.length - 1].length + 1;
        }
      }
      const seen = new Map();
      for (const n of nodes) {
        const key = n.role + "\u0000" + n.name;
        n.nth = seen.get(key) || 0;
        seen.set(key, n.nth + 1);
      }
      const table = nodes.map((n) => [
        n.ref, n.role, n.name, n.nth, seen.get(n.role + "\u0000" + n.name),
      ]);
      const frames = [];
      nodes.forEach((n, i) => { if (n.frame) frames.push({ ref: n.ref, line: i, depth: 1 }); });
      const elements = document.getElementsByTagName("*").length;
      return {
        text: lines.join("\n"), refs: table, frames, removed: [], delta: false,
        reduced: { elements, shown: nodes.length, late, over },
      };
    }

    // The reduced snapshot's node for `el`, if it is shown and one can act on it.
    function actionable(el) {
      const tag = el.tagName;
      if (SKIP.has(tag) || el.closest("[aria-hidden='true']")) return null;
      const inSelect = tag === "OPTION" || tag === "OPTGROUP";
      if (!inSelect && !el.checkVisibility({ visibilityProperty: true })) return null;
      const frame = tag === "IFRAME" || tag === "FRAME";
      if (frame && !seenFrame(el)) return null; // nobody sees the frame: nothing to show of it
      let role = roleOf(el);
      if (!frame && !INTERACTIVE.has(role)) {
        if (role && role !== "generic") return null;
        if (!el.hasAttribute("onclick") && !(el.tabIndex >= 0 && el.hasAttribute("tabindex"))) {
          return null;
        }
        role = "clickable";
      }
      const name = nameOf(el, role);
      const ctx = contextOf(el, role, true);
      const node = { role, name, ctx, ref: refFor(el, role, name, ctx), kids: [], el, tag, frame,
        clickable: role === "clickable" };
      if (tag === "SELECT" || tag === "INPUT" || tag === "TEXTAREA") node.value = valueOf(el);
      return node;
    }

    function renderInteractive(node, lines, frames) {
      forEach(node, (n) => {
        if (!n.frame && !n.clickable && !INTERACTIVE.has(n.role)) return;
        if (n.folded) return; // an option on its <select>'s line (the brief format)
        // A clickable row shown on one line is told by its cells, as in the full snapshot.
        lines.push(cellsOf(n) ? head(n)[0] : "- " + lineOf(n) + (n.frame ? ":" : ""));
        if (n.frame) frames.push({ ref: n.ref, line: lines.length - 1, depth: 1 });
      });
    }
