// The scenario page: a form with data-confirm (deleting a step) asks before it is sent,
// since a deleted step can't be brought back.  After "Run now" (?fired=<schedule>), the
// page asks how often the schedule fired (it had fired `before` times) until a worker made
// the new firing, then shows it (for a minute at most: no worker up, it stops asking).
"use strict";

document.addEventListener("submit", (event) => {
  const form = event.target.closest("form[data-confirm]");
  if (form && !window.confirm(form.dataset.confirm)) event.preventDefault();
});

(() => {
  const query = new URLSearchParams(window.location.search);
  const fired = query.get("fired");
  const before = Number(query.get("before"));
  const row = fired && document.querySelector(`[data-schedule="${CSS.escape(fired)}"]`);
  if (!row || !Number.isFinite(before) || Number(row.dataset.fired) > before) return;
  const until = Date.now() + 60_000;
  const look = async () => {
    try {
      const answer = await fetch(`/schedules/${encodeURIComponent(fired)}/fired.json`,
        { headers: { Accept: "application/json" } });
      if (answer.ok && (await answer.json()).fired > before) {
        window.location.replace(`${window.location.pathname}#schedules`);
        return;
      }
    } catch (_error) {
      // the server went away for a moment: ask again
    }
    if (Date.now() < until) window.setTimeout(look, 1000);
  };
  window.setTimeout(look, 500);
})();
