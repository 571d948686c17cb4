// The scenario page: a form with data-confirm (deleting a step) asks before it is sent,
// since a deleted step can't be brought back.
"use strict";

document.addEventListener("submit", (event) => {
  const form = event.target.closest("form[data-confirm]");
  if (form && !window.confirm(form.dataset.confirm)) event.preventDefault();
});
