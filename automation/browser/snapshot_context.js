// The context section of snapshot.js, put in its place (see snapshot.py _INCLUDES): the
// row or named container a ref's element sits in, which a ref must still sit in to act.
    // -- context: the row or named container a ref's element sits in -------------------

    // A list drawn again by index (key={index}) keeps row 0's nodes for whatever row 0
    // shows now: the same button, with its role and name, in another row.  So a ref keeps
    // its element's context too: the row it is or sits in (a table row, list item, option
    // or tree item; a layout table's rows are no rows) told by the row's text without the
    // element's own, or, out of rows, the nearest container with a name of its own (an
    // element with aria-label or aria-labelledby, a fieldset's legend, a named dialog,
    // region, group, article or form) told by that name.  As "kind\ttext" (norm leaves no
    // tab in text), cut to CONTEXT_CHARS; "" when there is neither.  Form values, live
    // regions and meters are not read (UNREAD, LIVE_ROLES): typing into a row, or a
    // counter ticking in a live region of it, does not make it another row.
    //
    // An element whose name is its text (a button, a cell, a link) has its own words
    // checked by its name already: its row is told by all of the row's text.
    //
    // `cached`: within a walk, where the page can't change between two elements, what was
    // found is kept for the elements after it (walkMemo; the walk meets a row's elements
    // one after the other).
    function contextOf(el, role, cached) {
      const memo = cached ? walkMemo : null;
      if (ROW_ROLES.has(role)) {
        const own = readRowOnce(el, memo);
        if (own.row) return own.all;
      }
      const parent = parentOf(el);
      if (!parent) return "";
      const row = rowAt(parent, memo);
      if (!row) return boxAt(parent, memo);
      if (!el.firstChild && !el.shadowRoot) return row.all; // no text of its own
      const named = el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby");
      return NAME_FROM_CONTENT.has(role) && !named ? row.all : rowContext(row, el);
    }

    // What readRow read of the nearest row at or above `start` (through open shadow roots
    // to their hosts), or null.
    function rowAt(start, memo) {
      if (memo && memo.start === start) return memo.found;
      let found = null;
      for (let n = start; n && !found;) {
        const row = n.closest(ROWS);
        if (!row) {
          n = hostOf(n);
          continue;
        }
        const read = readRowOnce(row, memo);
        if (read.row) found = read;
        else n = parentOf(row);
      }
      if (memo) {
        memo.start = start;
        memo.found = found;
      }
      return found;
    }

    // The context of the nearest named container at or above `start`, or ""; kept for
    // every element on the way up (a form's fields each climb from their own label).
    function boxAt(start, memo) {
      const path = [];
      let found = "";
      for (let n = start; n; n = parentOf(n)) {
        const known = memo ? memo.boxes.get(n) : undefined;
        if (known !== undefined) {
          found = known;
          break;
        }
        path.push(n);
        if (n.matches(NAMED)) {
          found = namedContext(n);
          if (found) break;
        }
      }
      if (memo) for (const n of path) memo.boxes.set(n, found);
      return found;
    }

    function parentOf(n) {
      return n.parentElement || hostOf(n);
    }

    function hostOf(n) {
      const root = n.getRootNode();
      return root !== n && root.host ? root.host : null;
    }

    // The row's text without the element's own, as "row\ttext".
    function rowContext(row, el) {
      const { nodes, texts } = row;
      let text = "";
      for (let i = 0; i < nodes.length; i++) if (!el.contains(nodes[i])) text += " " + texts[i];
      return "row\t" + norm(text).slice(0, CONTEXT_CHARS);
    }

    function readRowOnce(row, memo) {
      if (memo && memo.row === row) return memo.read;
      const read = readRow(row);
      if (memo) {
        memo.row = row;
        memo.read = read;
      }
      return read;
    }

    // A row's text nodes (whitespace too: the text is normalised once, when joined), up
    // to ROW_CHARS; `row` false for a layout table's row or what only looked like a row.
    function readRow(row) {
      const read = { row: ROW_ROLES.has(roleOf(row)), nodes: [], texts: [], all: "" };
      if (read.row && row.tagName === "TR" && !explicitRole(row)) {
        const table = row.closest("table");
        const layout = table ? explicitRole(table) : null;
        read.row = layout !== "none" && layout !== "presentation";
      }
      if (!read.row) return read;
      readText(row, read, { chars: 0 });
      read.all = "row\t" + norm(read.texts.join(" ")).slice(0, CONTEXT_CHARS);
      return read;
    }

    function readText(node, read, counted) {
      if (node.shadowRoot) readText(node.shadowRoot, read, counted);
      for (let c = node.firstChild; c && counted.chars < ROW_CHARS; c = c.nextSibling) {
        if (c.nodeType === 3) {
          const data = c.data;
          read.nodes.push(c);
          read.texts.push(data.length > ROW_CHARS ? data.slice(0, ROW_CHARS) : data);
          counted.chars += data.length;
        } else if (c.nodeType === 1 && !UNREAD.has(c.tagName) && !isLive(c)) {
          readText(c, read, counted);
        }
      }
    }

    function isLive(el) {
      if (el.hasAttribute("aria-live") && el.getAttribute("aria-live") !== "off") return true;
      return el.hasAttribute("role") && LIVE_ROLES.has(explicitRole(el));
    }

    function namedContext(box) {
      const role = roleOf(box);
      let name = idrefText(box, "aria-labelledby") || norm(box.getAttribute("aria-label") || "");
      if (!name && NAMED_ROLES.has(role)) name = nameOf(box, role);
      if (!name && box.tagName === "FORM") name = norm(box.getAttribute("name") || "");
      if (!name || typeof name !== "string") return "";
      const kind = role && role !== "generic" ? role : "container";
      return kind + "\t" + (name.length > CONTEXT_CHARS ? name.slice(0, CONTEXT_CHARS) : name);
    }
