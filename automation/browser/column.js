  // The header of the column an element sits in, as a person reads it down from the top
  // of its table ("Write" over a permissions matrix's box), "" when its cell has none: an
  // HTML table's header cell over its cell (its thead's last row, else a first row of
  // header cells; colspans counted; a cell's headers attribute first), or an ARIA grid's
  // or table's columnheader at its aria-colindex or its place in the row.  Read by an
  // identity (identity.js) and by the export's column engine (exportplaces.py), alike.
  // (Each table's and grid's header row is looked for once: a list of many boxes.)
  const columnHeads = new WeakMap();
  function columnOf(e) {
    const norm = (t) => (t || "").replace(/\s+/g, " ").trim().slice(0, 200);
    const headOf = (table, find) => {
      if (!columnHeads.has(table)) columnHeads.set(table, find() || null);
      return columnHeads.get(table);
    };
    const ARIA_CELL = "[role=gridcell], [role=cell], [role=columnheader], [role=rowheader]";
    const cell = e.closest("td, th, " + ARIA_CELL);
    if (!cell) return "";
    const tr = cell.parentElement;
    const table = cell.closest("table");
    if ((cell.tagName === "TD" || cell.tagName === "TH") && tr && tr.tagName === "TR" && table) {
      const root = cell.getRootNode();
      const named = (cell.getAttribute("headers") || "").split(/\s+/).filter(Boolean)
        .map((id) => (root.getElementById ? root.getElementById(id) : null))
        .filter((h) => h && h.tagName === "TH" && h.parentElement !== tr);
      if (named.length) return norm(named[named.length - 1].innerText);
      const headed = (r) => r.cells.length > 0 && [...r.cells].every((c) => c.tagName === "TH");
      const head = headOf(table, () => (table.tHead && table.tHead.rows.length
        ? table.tHead.rows[table.tHead.rows.length - 1]
        : [...table.rows].find(headed)));
      if (!head || head === tr || head.closest("table") !== table) return "";
      let at = 0;
      for (const c of tr.cells) {
        if (c === cell) break;
        at += c.colSpan || 1;
      }
      let from = 0;
      for (const h of head.cells) {
        const span = h.colSpan || 1;
        if (at >= from && at < from + span) return norm(h.innerText);
        from += span;
      }
      return "";
    }
    const GRID = "[role=grid], [role=table], [role=treegrid]";
    const row = cell.closest("[role=row]");
    const grid = cell.closest(GRID);
    if (!row || !grid) return "";
    const cellsOf = (r) => [...r.querySelectorAll(ARIA_CELL)].filter(
      (c) => c.closest("[role=row]") === r);
    const head = headOf(grid, () => [...grid.querySelectorAll("[role=row]")].find(
      (r) => r.closest(GRID) === grid &&
        cellsOf(r).some((c) => c.getAttribute("role") === "columnheader")));
    if (!head || head === row) return "";
    const heads = cellsOf(head);
    const index = cell.getAttribute("aria-colindex");
    const found = index
      ? heads.find((h) => h.getAttribute("aria-colindex") === index)
      : heads[cellsOf(row).indexOf(cell)];
    return found ? norm(found.innerText) : "";
  }
