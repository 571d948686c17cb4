// Whether the page shows a sign-in form now: what a browser's password manager takes for
// one.  A visible one-time code field (autocomplete="one-time-code"); or a form (formless
// fields count as one form, as browsers do) with exactly one visible password field, not
// marked autocomplete="new-password", beside at most a user name and one more field, none
// asking for a person's details, and no submit button saying it signs up, registers,
// creates, changes, resets or saves.  A sign-up (two passwords, a new password, a name,
// an email, a plan) or a change of password is not a sign-in.
// Walks the document and its open shadow roots, at most `max` elements.  Answers
// {shown, why}.
(max) => {
  const SKIPPED = new Set(["hidden", "submit", "button", "reset", "image", "file",
    "checkbox", "radio", "range", "color"]);
  const TYPED = new Set(["text", "email", "tel", "url", "number"]);
  // Autocomplete tokens a sign-up asks for, never a sign-in.
  const PERSONAL = /^(name|given-name|family-name|additional-name|honorific-prefix|honorific-suffix|nickname|organization-title|street-address|address-line\d|address-level\d|postal-code|country|country-name|bday(-day|-month|-year)?|sex|tel(-national|-local)?|cc-\w+)$/;
  const SIGNS_IN = /\b(sign|log)\s*-?\s*(in|on)\b|\blog[io]n\b|\banmelden\b|\bconnexion\b|\bse connecter\b|\biniciar sesi[oó]n\b/i;
  const SIGNS_UP = /\bsign\s*-?\s*up\b|\bregist(er|ration|rieren)\b|\bcreate\b|\bjoin\b|\bchange\b|\bupdate\b|\breset\b|\bsave\b|\bset\b|\benrol+\b|\bsubscribe\b|\binscri/i;
  const SEARCH = /search|suche|recherche|buscar/i;

  const visible = (el) => {
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && el.checkVisibility({ visibilityProperty: true });
  };
  const tokens = (el) => (el.getAttribute("autocomplete") || "").toLowerCase().split(/\s+/);
  const words = (el) =>
    (el.localName === "input" ? el.value : el.innerText || el.textContent || "") +
    " " + (el.getAttribute("aria-label") || "");
  const isSearch = (el) =>
    el.type === "search" || el.name === "q" ||
    ["searchbox", "combobox"].includes(el.getAttribute("role")) ||
    SEARCH.test([el.name, el.id, el.placeholder, el.getAttribute("aria-label")].join(" "));

  // The document and its open shadow roots (looked for among `max` elements at most).
  const roots = [document];
  let seen = 0;
  for (let r = 0; r < roots.length && seen < max; r++) {
    const walker = document.createTreeWalker(roots[r], NodeFilter.SHOW_ELEMENT);
    for (let el = walker.nextNode(); el && seen < max; el = walker.nextNode()) {
      seen++;
      if (el.shadowRoot) roots.push(el.shadowRoot);
    }
  }
  const all = (selector) => roots.flatMap((root) => Array.from(root.querySelectorAll(selector)));

  // The formless buttons nearest a formless field: those of its closest container that
  // has any (not the page's header, when the fields are in a card of their own).
  const near = (el) => {
    const buttons = all("button, input[type=submit], input[type=image]").filter((b) => !b.form);
    for (let up = el.parentElement; up; up = up.parentElement || up.getRootNode().host) {
      const found = buttons.filter((b) => up.contains(b) && visible(b));
      if (found.length) return found;
    }
    return [];
  };

  const forms = new Map(); // a form (or null: the formless fields) -> its visible passwords
  for (const el of all('input[type=password i], input[autocomplete~="one-time-code" i]')) {
    if (el.disabled || !visible(el)) continue;
    if (tokens(el).includes("one-time-code"))
      return { shown: true, why: "a one-time code field" };
    const key = el.form || null;
    forms.set(key, [...(forms.get(key) || []), el]);
  }
  // A form's other visible fields: a user name, more (counted up to two past it, among
  // `max` fields at most: past them, a form this big is no sign-in form).
  const others = (form) => {
    const held = { typed: [], others: [], many: false };
    const fields = form ? form.elements : all("input, select, textarea");
    for (let i = 0; i < fields.length; i++) {
      const el = fields[i];
      if (held.typed.length + held.others.length > 2 || i >= max) {
        held.many = true;
        break;
      }
      const tag = el.localName;
      if (!["input", "select", "textarea"].includes(tag) || (!form && el.form)) continue;
      if (SKIPPED.has(el.type) || el.type === "password" || el.disabled) continue;
      if ((tag === "input" && isSearch(el)) || !visible(el)) continue;
      (tag === "input" && TYPED.has(el.type) ? held.typed : held.others).push(el);
    }
    return held;
  };

  const judge = (form, passwords, held) => {
    const n = passwords.length;
    if (n > 1) return `${n} password fields: a sign-up or a change of password`;
    if (tokens(passwords[0]).includes("new-password"))
      return "a new password field (autocomplete=new-password)";
    const rest = [...held.typed, ...held.others];
    const personal = rest.find((el) => tokens(el).some((t) => PERSONAL.test(t)));
    if (personal) return `a field for a person's details (${personal.getAttribute("autocomplete")})`;
    const more = Math.max(0, held.typed.length - 1) + held.others.length;
    if (more > 1 || held.many) return "more fields beside the password than a user name and one more";
    const submits = form
      ? Array.from(form.elements).filter((el) =>
        (el.type === "submit" || el.type === "image") && visible(el))
      : near(passwords[0]);
    const said = submits.map(words);
    const up = said.find((text) => SIGNS_UP.test(text));
    if (up !== undefined && !said.some((text) => SIGNS_IN.test(text)))
      return `its button says ${JSON.stringify(up.trim().slice(0, 40))}`;
    return "";
  };

  let why = "";
  for (const [form, passwords] of forms) {
    const held = others(form);
    const not = judge(form, passwords, held);
    if (!not) {
      const user = held.typed.length ? "a user name and " : "";
      return { shown: true, why: `a sign-in form: ${user}a password field` };
    }
    why = why || `not a sign-in form: ${not}`;
  }
  return { shown: false, why: why || "no visible password or one-time code field" };
}
