// The fields the browser refused to send a form for, of `heard` (the targets of the
// `invalid` events since an action began), with what it told the person.  The browser
// fires `invalid` at each field of the form that is not valid and moves the focus to the
// first of them it can focus; a script's checkValidity() fires them too, but moves no
// focus: none then, unless the page's own reportValidity() put the focus there, as the
// browser's check does, or the action asked to send the fields' form (`tried`: the
// [event type, target] of its clicks and Enter keys: a click on the form's submit
// button, an Enter in one of its fields) and the browser checks that form (no
// `novalidate`: else the page's script checked it, and says why itself).  There the
// browser may move no focus and still send nothing: every field not valid hidden (a
// collapsed section, a tab not shown: "An invalid form control is not focusable"), or
// its `invalid` event taken by the page's own script.
(heard, tried) => {
  const fields = [...new Set(heard)].filter((f) =>
    f.isConnected && f.validity && !f.validity.valid);
  const asked = ([type, target]) => {
    if (!target || target.nodeType !== 1) return null;
    if (type === "keydown") return target.tagName === "INPUT" ? target.form : null;
    const control = target.closest("button, input[type=submit], input[type=image]");
    return control && (control.type === "submit" || control.type === "image")
      ? control.form : null;
  };
  const sent = new Set((tried || []).map(asked).filter(Boolean));
  const checked = (form) => sent.has(form) && !form.noValidate;
  if (!fields.some((f) => f.getRootNode().activeElement === f || checked(f.form))) return [];
  const words = (text) => String(text || "").replace(/\s+/g, " ").trim().slice(0, 80);
  const label = (f) => f.labels && f.labels.length
    ? f.labels[0].innerText || f.labels[0].textContent : ""; // (a closed section's: no innerText)
  const named = (f) => words(label(f)) ||
    words(f.getAttribute("aria-label")) || words(f.getAttribute("placeholder")) ||
    words(f.name) || words(f.id);
  return fields.slice(0, 3).map((f) => ({
    name: named(f), said: String(f.validationMessage || "").slice(0, 200) }));
}
