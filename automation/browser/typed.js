// What was typed into each field, and the value the app had written there before: a
// field still showing what was typed shows, of the app's, that earlier value (seen.js,
// identity_describe.js), even where the app copies each key into the field's value
// attribute (React keeps a field's value attribute equal to its value, so the attribute
// no longer tells what the app wrote).  An init script: it hears the typing before the
// page's own listeners (and again after them, once the app has formatted the value),
// whoever types (the run, or a person taking over).  Only typing counts (events the
// browser sends), not a value the app sets or an event it makes up.
(() => {
  if (window.__tabwrightTyped) return;
  // a field or an editor -> { before: the app's value, after: what the typing left }
  const typed = new WeakMap();
  const valueOf = (e) => (e.isContentEditable ? e.textContent : e.value);
  const typedInto = (event) => {
    if (!event.isTrusted) return null;
    const e = event.composedPath()[0];
    if (!e || e.nodeType !== 1) return null;
    if (e.tagName === "INPUT" || e.tagName === "TEXTAREA") return e;
    if (!e.isContentEditable) return null;
    let host = e; // an editor: its outermost editable element
    while (host.parentElement && host.parentElement.isContentEditable) host = host.parentElement;
    return host;
  };
  // Before a key changes it: the value now is the app's, unless it is what typing left.
  const before = (event) => {
    const e = typedInto(event);
    if (!e) return;
    const was = typed.get(e);
    const now = valueOf(e);
    if (!was || was.after !== now) typed.set(e, { before: now, after: now });
  };
  const after = (event) => {
    const e = typedInto(event);
    if (!e) return;
    const was = typed.get(e);
    // (no beforeinput heard: the value attribute, which the app's listeners, after this
    // one, have not copied the key into yet)
    const app = was ? was.before : e.isContentEditable ? "" : e.defaultValue;
    typed.set(e, { before: app, after: valueOf(e) });
  };
  window.addEventListener("beforeinput", before, true);
  for (const type of ["input", "change"]) {
    window.addEventListener(type, after, true);
    window.addEventListener(type, after, false);
  }
  const shows = (e) => typed.has(e) && typed.get(e).after === valueOf(e);
  Object.defineProperty(window, "__tabwrightTyped", {
    value: Object.freeze({
      // Whether e shows what was typed into it (nothing written there since).
      shows,
      // The app's value of e, where e shows what was typed (else undefined).
      before: (e) => (shows(e) ? typed.get(e).before : undefined),
    }),
  });
})();
