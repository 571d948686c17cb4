// The new-run form: the task's placeholder and hint follow the planner chosen. The rule
// planner reads one command per line; a model reads the task in plain words.
(function () {
  "use strict";
  const form = document.getElementById("new-run");
  if (!form) return;
  const planner = form.querySelector("select[name=planner]");
  const task = form.querySelector("textarea[name=task]");
  if (!planner || !task) return;

  // Mirrors dashboard.runs.forms.planner_kind: every choice but the rule planner is a model.
  function kindOf(value) {
    return value === "rules" ? "rules" : "llm";
  }
  let kind = kindOf(planner.value);

  function follow() {
    const next = kindOf(planner.value);
    const placeholder = task.getAttribute("data-placeholder-" + next);
    if (placeholder !== null) task.placeholder = placeholder;
    task.setAttribute("aria-describedby", "task-hint-" + next);
    form.querySelectorAll("[data-planner-hint]").forEach((hint) => {
      hint.hidden = hint.dataset.plannerHint !== next;
    });
    // The demo task (DEBUG only) is swapped for the other kind's while it is untouched.
    const demoNow = task.getAttribute("data-demo-" + kind);
    const demoNext = task.getAttribute("data-demo-" + next);
    if (demoNow !== null && demoNext !== null && task.value.trim() === demoNow.trim()) {
      task.value = demoNext;
    }
    kind = next;
  }

  planner.addEventListener("change", follow);
  follow(); // a form the browser restored may show another choice than the server chose
})();
