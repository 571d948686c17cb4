// The batch page: draws the batch's state, and while it runs, or a row's replay is still
// at work (a stopped batch's replays end a moment after the Stop), asks for it again
// every 2 s.
(() => {
  "use strict";
  const root = document.getElementById("batch");
  const batchId = root.dataset.batchId;
  const rowsEl = document.getElementById("batch-rows");
  let params = []; // the parameters' columns: every name the rows have, sorted
  let atWork = false; // the batch runs, or a row's replay has not ended yet
  const LABELS = {
    queued: "queued", running: "running", needs_person: "needs a person", passed: "passed",
    failed: "failed", stopped: "stopped", skipped: "skipped",
  };
  const AT_WORK = new Set(["queued", "running", "needs_person"]);

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "";
    if (seconds < 60) return Math.round(seconds) + " s";
    const minutes = Math.floor(seconds / 60);
    if (minutes < 60) return minutes + " min " + String(Math.round(seconds % 60)).padStart(2, "0") + " s";
    return Math.floor(minutes / 60) + " h " + String(minutes % 60).padStart(2, "0") + " min";
  }

  function draw(state) {
    const status = document.getElementById("batch-status");
    status.textContent = state.status;
    status.className = "badge " + state.status;
    root.dataset.status = state.status;
    const stop = document.getElementById("batch-stop-form");
    if (stop) stop.hidden = state.status !== "running";
    const p = state.progress;
    const bar = document.getElementById("batch-bar");
    bar.setAttribute("aria-valuenow", String(p.done));
    document.getElementById("batch-fill").style.width = (p.total ? (100 * p.done) / p.total : 0) + "%";
    const parts = [p.done + " of " + p.total + " done"];
    for (const key of Object.keys(LABELS)) {
      if (p.counts[key]) parts.push(p.counts[key] + " " + LABELS[key]);
    }
    if (p.seconds_left !== null) parts.push("about " + duration(p.seconds_left) + " left");
    document.getElementById("batch-counts").textContent = parts.join(" · ");
    const retry = document.getElementById("batch-retry-form");
    if (retry) retry.hidden = !(p.counts.failed || p.counts.stopped || p.counts.skipped);
    atWork = state.status === "running" || state.rows.some((row) => AT_WORK.has(row.status));

    params = Array.from(new Set(state.rows.flatMap((row) => Object.keys(row.params)))).sort();
    rowsEl.replaceChildren();
    for (const row of state.rows) {
      const tr = el("tr", "row-" + row.status);
      tr.dataset.row = String(row.index);
      tr.appendChild(el("td", "", String(row.index)));
      for (const name of params) tr.appendChild(el("td", "", row.params[name] ?? ""));
      const statusCell = el("td");
      statusCell.appendChild(el("span", "badge " + row.status, LABELS[row.status] || row.status));
      if (row.attempts > 1) statusCell.appendChild(el("span", "hint", " try " + row.attempts));
      tr.appendChild(statusCell);
      const runCell = el("td");
      if (row.run_id) {
        const link = el("a", "", String(row.run_id));
        link.href = "/runs/" + row.run_id + "/";
        runCell.appendChild(link);
      }
      tr.appendChild(runCell);
      tr.appendChild(el("td", "", duration(row.seconds)));
      tr.appendChild(el("td", "reason", row.reason));
      tr.appendChild(el("td", "output", row.output === null ? "" : JSON.stringify(row.output)));
      rowsEl.appendChild(tr);
    }
  }

  // The batch was deleted (its scenario with it): said, its rows and what led to them
  // (the scenario, the results, stop and retry) taken off the page, and no more asking.
  function gone() {
    atWork = false;
    const status = document.getElementById("batch-status");
    status.textContent = "deleted";
    status.className = "badge deleted";
    root.dataset.status = "deleted";
    for (const id of ["batch-stop-form", "batch-retry-form", "batch-results"]) {
      const node = document.getElementById(id);
      if (node) node.hidden = true;
    }
    const title = root.querySelector("h1 a");
    if (title) title.replaceWith(document.createTextNode(title.textContent));
    rowsEl.replaceChildren();
    document.getElementById("batch-counts").textContent =
      "This batch was deleted (or its scenario): its rows are gone.";
  }

  async function poll() {
    try {
      const answer = await fetch("/batches/" + batchId + "/state.json", { credentials: "same-origin" });
      if (answer.ok) draw(await answer.json());
      else if (answer.status === 404) return gone();
    } catch (e) {
      // The next poll tries again.
    }
    if (atWork) setTimeout(poll, 2000);
  }

  draw(JSON.parse(document.getElementById("batch-state").textContent));
  if (atWork) setTimeout(poll, 2000);
})();
