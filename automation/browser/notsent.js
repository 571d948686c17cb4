// The fields the browser refused to send a form for, of `heard` (the targets of the
// `invalid` events since an action began), with what it told the person.  The browser
// fires `invalid` at each field of the form that is not valid and moves the focus to the
// first of them; a script's checkValidity() fires them too, but moves no focus: none then,
// unless the page's own reportValidity() put the focus there, as the browser's check does.
(heard) => {
  const fields = [...new Set(heard)].filter((f) =>
    f.isConnected && f.validity && !f.validity.valid);
  if (!fields.some((f) => f.getRootNode().activeElement === f)) return [];
  const words = (text) => String(text || "").replace(/\s+/g, " ").trim().slice(0, 80);
  const named = (f) => words(f.labels && f.labels.length ? f.labels[0].innerText : "") ||
    words(f.getAttribute("aria-label")) || words(f.getAttribute("placeholder")) ||
    words(f.name) || words(f.id);
  return fields.slice(0, 3).map((f) => ({
    name: named(f), said: String(f.validationMessage || "").slice(0, 200) }));
}
