// The recorder's listener, in the page: what a person does in this document, sent to Python
// as it happens through one binding (see recorder.py).
//
// Called as (key, binding, encoded, identify, fresh) => ...: ``key`` names the recorder
// (one listener per recorder and document, whichever of its scripts runs first),
// ``binding`` is the name of the function that takes the events, ``encoded`` says it takes
// one text (a CDP binding: each event goes as JSON, see cdplisten.py) rather than the
// event itself (Playwright's), ``identify`` is identity.js (the same capture replay
// compares against), and ``fresh`` says the call is the init script of a new document
// (then the top document reports that it was loaded, for navigations no step caused).
//
// Identities are taken here, synchronously, while the event is handled: a click may leave
// the page right after, and then there is nothing left to ask.  Listeners are on window,
// in the capture phase, so a page that stops propagation still gets recorded.
(key, binding, encoded, identify, fresh) => {
  const KEY = "__tabwright_recorder_" + key;
  if (Object.prototype.hasOwnProperty.call(window, KEY)) return;
  const tw = window.__tabwright;
  if (!tw || !tw.roleOf) return;
  const INTERACTIVE = new Set([
    "button", "checkbox", "combobox", "link", "listbox", "menuitem", "menuitemcheckbox",
    "menuitemradio", "option", "radio", "searchbox", "slider", "spinbutton", "switch",
    "tab", "textbox", "treeitem",
  ]);
  // Input types whose value is typed (or, a slider's, dragged to): recorded as one fill
  // per field, its final value (a slider's click is no step: it moves it anywhere).
  const TEXT_TYPES = new Set(["text", "email", "password", "search", "tel", "url", "number",
    "date", "time", "datetime-local", "month", "week", "range"]);
  const KEYS = new Set(["Enter", "Escape", "Tab", "ArrowUp", "ArrowDown", "ArrowLeft",
    "ArrowRight", "PageUp", "PageDown", "Home", "End"]);
  // Keys that only move the caret inside a text field: the fill that follows says it all.
  const CARET_KEYS = new Set(["ArrowLeft", "ArrowRight", "Home", "End"]);
  const MODIFIERS = new Set(["Control", "Shift", "Alt", "Meta", "AltGraph", "CapsLock",
    "Dead", "Unidentified", "Process", "Fn", "OS"]);
  const BUTTONS = ["left", "middle", "right"];
  const TOGGLE_ROLES = new Set(["checkbox", "switch", "radio", "menuitemcheckbox",
    "menuitemradio"]);
  const TOGGLE_SETTLE_MS = 120; // after a checkbox's click, when its state is read
  const TOGGLE_PATIENCE_MS = 1000; // how long an unchanged box is given to change

  const doc = Math.random().toString(36).slice(2); // element keys are unique per document
  const ids = new WeakMap();
  let nextId = 1;
  const secrets = new WeakSet(); // fields that were password fields at some point
  let on = true;
  let field = null; // { el, sent }: the field being typed into, described once per streak
  let lastClick = null; // { t, x, y, detail, button }
  let lastEnter = -Infinity;
  const pending = []; // sent before the binding existed (an init script may run first)
  const toggles = []; // checkboxes clicked, waiting for the app to settle (watchToggle)

  const parentOf = (e) => {
    if (e.parentElement) return e.parentElement;
    const root = e.getRootNode();
    return root instanceof ShadowRoot ? root.host : null;
  };
  const keyOf = (el) => {
    if (!ids.has(el)) ids.set(el, nextId++);
    return doc + ":" + ids.get(el);
  };
  const isPage = (el) => !el || el === document.body || el === document.documentElement;
  const isToggle = (el) =>
    el && el.tagName === "INPUT" && (el.type === "checkbox" || el.type === "radio");
  const isTextField = (el) =>
    !!el && el.nodeType === 1 && (el.isContentEditable || el.tagName === "TEXTAREA" ||
      (el.tagName === "INPUT" && TEXT_TYPES.has(el.type)));

  function topUrl() {
    try {
      return window.top.location.href;
    } catch (err) {
      return ""; // a cross-origin frame: Python knows the page's address
    }
  }

  function drain() {
    const fn = window[binding];
    if (typeof fn !== "function") return false;
    while (pending.length) {
      try {
        const ev = pending.shift();
        Promise.resolve(fn(encoded ? JSON.stringify(ev) : ev)).catch(() => {});
      } catch (err) { /* the binding was removed: recording is over */ }
    }
    return true;
  }

  // A click in a text field, kept back: it only puts the caret there, unless what comes
  // next is a click elsewhere (the field opened a picker, a calendar whose day is clicked).
  let fieldClick = null;

  function send(ev, at) {
    if (!on) return;
    if (fieldClick && ev.kind !== "not_sent") {
      const { ev: click, t, el } = fieldClick;
      fieldClick = null;
      if (ev.kind === "click" && ev.el !== el) send(click, t);
    }
    if (ev.kind !== "fill") field = null;
    ev.t = at || Date.now();
    ev.url = topUrl();
    ev.frame_url = window === window.top ? "" : document.URL;
    if (pending.length < 1000) pending.push(ev);
    if (!drain()) setTimeout(drain, 0);
  }

  // The element and its identity; the identity is null when it can't be described.
  function described(el) {
    let identity = null;
    try {
      identity = identify(el, { op: "capture" });
      if (identity && identity.error) identity = null;
    } catch (err) {
      identity = null;
    }
    return { el: keyOf(el), identity };
  }

  // The element under the pointer, through open shadow roots (e.target is retargeted).
  function deepAt(x, y) {
    let el = document.elementFromPoint(x, y);
    while (el && el.shadowRoot) {
      const inner = el.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === el) break;
      el = inner;
    }
    return el;
  }

  // The nearest element (itself included, out of shadow roots to their hosts) that a
  // person acts on: the button around a <span>, the link around an <img>.
  function actionable(el) {
    for (let n = el; n; n = parentOf(n)) {
      if (INTERACTIVE.has(tw.roleOf(n) || "")) return n;
    }
    return el;
  }

  // The checkbox, radio or switch a click changes: the element clicked, or the control of
  // the label clicked.
  // (A button with aria-pressed is a toggle too.)
  function toggleOf(hit, el) {
    const role = tw.roleOf(el) || "";
    if (isToggle(el) || TOGGLE_ROLES.has(role)) return el;
    if (role === "button" && el.hasAttribute("aria-pressed")) return el;
    const label = hit.closest ? hit.closest("label") : null;
    return label && label.control && isToggle(label.control) ? label.control : null;
  }

  function toggleState(el) {
    if (isToggle(el)) return el.checked;
    const value = el.getAttribute("aria-checked") ?? el.getAttribute("aria-pressed");
    return value === null ? null : value === "true";
  }

  // A click on a checkbox is recorded from what the person did and what the page became,
  // not from a change event that may never come (the app re-renders the row in its click
  // handler, or the box is in a shadow root and the event does not leave it): its identity
  // now, then, once the app has settled, its state read on the box, or on the box found
  // again by its identity when the app replaced it.  The click's own state is kept when
  // the box can't be read, with a warning.
  function watchToggle(el, clicked) {
    // A label forwards its click to its box in the same task: that is not a second click.
    if (toggles.some((t) => t.el === el && t.fresh)) return;
    const sent = described(el);
    // In its own click a native box already shows its new state; clicked through its
    // label, or an ARIA one, it does not yet.
    const now = toggleState(el);
    const flipped = isToggle(el) && clicked === el;
    const before = flipped ? !now : now;
    const radio = el.type === "radio" || /radio/.test(tw.roleOf(el) || "");
    const expected = radio ? true : !before;
    const watch = { el, sent, expected, before, since: Date.now() };
    watch.fresh = true;
    setTimeout(() => { watch.fresh = false; }, 0);
    toggles.push(watch);
    watch.timer = setTimeout(() => settleToggle(watch), TOGGLE_SETTLE_MS);
  }

  function settleToggle(watch, final) {
    clearTimeout(watch.timer);
    let box = watch.el.isConnected ? watch.el : null;
    if (!box && watch.sent.identity) {
      try {
        const found = identify(null, { op: "locate", identities: [watch.sent.identity] });
        box = found && found.el ? found.el : null;
      } catch (err) {
        box = null;
      }
    }
    const state = box ? toggleState(box) : null;
    if (!final && state !== null && state === watch.before &&
        Date.now() - watch.since < TOGGLE_PATIENCE_MS) {
      watch.timer = setTimeout(() => settleToggle(watch), TOGGLE_SETTLE_MS);
      return; // not changed yet: an app may answer the click late
    }
    toggles.splice(toggles.indexOf(watch), 1);
    const ev = { kind: "check", ...watch.sent, checked: state === null ? watch.expected : state };
    if (state === null) {
      ev.warning = "the box could not be read after the click (the page replaced it and it " +
        "was not found again); recorded with the state the click should have made";
    } else if (state !== watch.expected) {
      ev.warning = "the box did not take the state the click should have made";
    }
    send(ev, watch.since);
  }

  // Clicks that change nothing a replay needs: a label of a control, a click that only
  // puts the caret in a field or opens a select (the fill or select_option that follows
  // carries it), the page's background.  (A checkbox's click is its check: watchToggle.)
  function skipped(hit, el) {
    if (isPage(el) || isToggle(el)) return true;
    if (el.closest("select") || (isTextField(el) && !el.readOnly)) return true;
    const label = hit.closest ? hit.closest("label") : null;
    return !!(label && label.control && !INTERACTIVE.has(tw.roleOf(el) || "") &&
      (isToggle(label.control) || isTextField(label.control) || label.control.tagName === "SELECT"));
  }

  function onClick(e) {
    if (!e.isTrusted) return; // the page's own scripts clicking are not the person
    // A click copied from another (a label forwarding to its control) comes at once and at
    // the same place; the second click of a double click has a higher detail.
    const copy = lastClick && e.timeStamp - lastClick.t < 50 && e.button === lastClick.button &&
      e.clientX === lastClick.x && e.clientY === lastClick.y &&
      (e.detail === lastClick.detail || e.detail === 0);
    lastClick = { t: e.timeStamp, x: e.clientX, y: e.clientY, detail: e.detail, button: e.button };
    if (copy) return;
    let hit;
    if (e.detail === 0) {
      // Not from a pointer: a key activated it.  After Enter the press is the step (and a
      // form's implicit submission clicks its default button); Space on a button is a click.
      if (performance.now() - lastEnter < 1000) return;
      hit = e.composedPath()[0];
    } else {
      hit = deepAt(e.clientX, e.clientY) || e.composedPath()[0];
    }
    if (!hit || hit.nodeType !== 1) return;
    const el = actionable(hit);
    const toggle = e.button === 0 ? toggleOf(hit, el) : null;
    if (toggle) {
      if (field) field = null;
      watchToggle(toggle, el);
      return;
    }
    const button = BUTTONS[e.button] || "left";
    if (el && el.tagName === "INPUT" && el.type === "range") return; // its value is the step
    if (isTextField(el) && !el.readOnly && !el.closest("select") && !isPage(el)) {
      const click = { kind: "click", button, detail: e.detail, ...described(el) };
      fieldClick = e.detail > 1 ? null : { ev: click, t: Date.now(), el: click.el };
      return;
    }
    if (skipped(hit, el)) return;
    send({ kind: "click", button, detail: e.detail, ...described(el) });
    watchSending(["click", hit]);
  }

  // A click or a key that may send a form, and the fields the browser then refused to send
  // it for (notsent.js: their `invalid` events, the focus moved to one or the click or the
  // Enter asked to send their form): nothing was sent, so the click is no step of the
  // person's (the next one, once the field is fixed, is).
  let heardInvalid = null; // the targets of the `invalid` events since, in this task
  let triedForms = []; // the click or the Enter: [its type, its target] (notsent.js)
  function watchSending(tried) {
    if (heardInvalid) return;
    heardInvalid = [];
    triedForms = tried ? [tried] : [];
    setTimeout(() => {
      const heard = heardInvalid;
      heardInvalid = null;
      if (heard.length && (NOT_SENT_JS)(heard, triedForms).length) send({ kind: "not_sent" });
    }, 0);
  }
  function onInvalid(e) {
    if (heardInvalid && heardInvalid.length < 50) heardInvalid.push(e.target);
  }
  // The browser moves the focus to the first such field in the same task as the click: told
  // then, before the keys typed next (a busy browser runs input before the timer above).
  function onFocusin(e) {
    if (!heardInvalid || !heardInvalid.includes(e.target)) return;
    if ((NOT_SENT_JS)(heardInvalid, triedForms).length) {
      heardInvalid.length = 0;
      send({ kind: "not_sent" });
    }
  }

  function sameField(a, b) {
    return a.tagName === b.tagName &&
      ["type", "name", "id", "placeholder", "aria-label"].every(
        (attr) => a.getAttribute(attr) === b.getAttribute(attr));
  }

  function onInput(e) {
    if (!e.isTrusted) return;
    settleAll();
    const el = e.composedPath()[0];
    if (!isTextField(el)) return;
    if (keyed && keyed.el === el) keyed.heard = true; // the keys typed: no mask's
    sendFill(el);
  }

  // The text field keys were typed into, and its value then: a page whose script cancels
  // the keys and writes the value itself (a currency mask drawing "2,500.00") sends no
  // input of the person's, so the field's value is read as they leave it, or press a key
  // that acts (Enter), and recorded as a fill when it changed and none of the person's
  // input came (the value a widget then writes, a suggestion taken, is not typed).
  let keyed = null; // { el, value, heard }
  const shownIn = (el) => (el.isContentEditable ? el.innerText : el.value);
  function flushKeyed() {
    const was = keyed;
    keyed = null;
    if (!was || was.heard || !was.el.isConnected) return;
    const now = shownIn(was.el);
    if (now === was.value) return;
    sendFill(was.el);
  }
  function onFocusout(e) {
    if (e.isTrusted && keyed && e.composedPath()[0] === keyed.el) flushKeyed();
  }

  function sendFill(el) {
    const secret = el.type === "password" || secrets.has(el) ||
      /password/i.test(el.getAttribute("autocomplete") || "");
    if (secret) secrets.add(el);
    // One description per streak of typing in the same field: its identity does not
    // depend on what is typed, and describing costs a walk of the document.  An app that
    // draws the field anew on every key (focus kept) is still typing in the same field.
    if (field && field.el !== el && !field.el.isConnected && sameField(field.el, el)) {
      field.el = el;
    }
    if (!field || field.el !== el) field = { el, sent: described(el) };
    const ev = { kind: "fill", ...field.sent };
    // A field the page marks as a one-time code's: the step types the code of the
    // moment from a TOTP secret, never the code typed now.
    const oneTime = /(^|\s)one-time-code(\s|$)/i.test(el.getAttribute("autocomplete") || "");
    if (secret || oneTime) {
      // The typed value never leaves the page: the step names a secret instead.
      const name = el.getAttribute("name") || el.id || (ev.identity && ev.identity.name) || "";
      const slug = name.replace(/[^A-Za-z0-9]+/g, "_").replace(/^_+|_+$/g, "").toUpperCase();
      ev.value = oneTime ? "${TOTP:" + (slug || "OTP") + "}"
        : "${SECRET:" + (slug || "PASSWORD") + "}";
      ev.secret = true;
      // What was typed, for the recorder to hide from everything shown (the page may
      // put it in its address); never kept in a step.
      ev.typed = el.value;
    } else {
      ev.value = el.isContentEditable ? el.innerText : el.value;
    }
    send(ev);
  }

  function onChange(e) {
    const el = e.composedPath()[0];
    if (!e.isTrusted || !el || el.nodeType !== 1) return;
    if (el.tagName === "SELECT") {
      const values = Array.from(el.selectedOptions, (o) => o.label);
      send({ kind: "select", values, ...described(el) });
    }
  }

  function onKeydown(e) {
    if (!e.isTrusted || e.isComposing || MODIFIERS.has(e.key)) return;
    settleAll();
    const mods = [];
    if (e.ctrlKey) mods.push("Control");
    if (e.altKey) mods.push("Alt");
    if (e.metaKey) mods.push("Meta");
    const special = KEYS.has(e.key);
    const into = e.composedPath()[0];
    if (!mods.length && !special) { // typing: the fill records it (see keyed)
      if (isTextField(into) && (!keyed || keyed.el !== into)) {
        flushKeyed();
        keyed = { el: into, value: shownIn(into), heard: false };
      }
      return;
    }
    flushKeyed(); // (its value, before the key that acts on it)
    const plain = !mods.length; // Shift aside: it only extends a selection or a line
    if (e.shiftKey) mods.push("Shift");
    let el = e.composedPath()[0];
    if (!el || el.nodeType !== 1) el = null;
    const multiline = el && (el.tagName === "TEXTAREA" || el.isContentEditable);
    if (plain && ((e.key === "Enter" && multiline) ||
        (CARET_KEYS.has(e.key) && isTextField(el)))) return;
    if (e.key === "Enter") lastEnter = performance.now();
    const option = plain && e.key === "Enter" ? pickedBy(el) : null;
    if (option) {
      // The Enter picks the suggestion the keys made active: the pick is the step (a
      // replay pressing Enter would take whatever its list then has there).
      const choice = described(option);
      if (choice.identity) {
        send({ kind: "click", button: "left", detail: 1, ...choice });
        return;
      }
    }
    const key = [...mods, e.key === " " ? "Space" : e.key].join("+");
    const target = isPage(el) ? { el: "", identity: null } : described(el);
    send({ kind: "press", key, ...target });
    watchSending(e.key === "Enter" ? ["keydown", el] : null);
  }

  // The option an Enter in a suggestion field picks: the field's active descendant, or the
  // one its list (aria-controls, aria-owns) marks selected; shown.
  function pickedBy(el) {
    if (!el || !isTextField(el)) return null;
    const root = el.getRootNode();
    const byId = (id) => (id && root.getElementById ? root.getElementById(id) : null);
    let option = byId(el.getAttribute("aria-activedescendant"));
    const lists = `${el.getAttribute("aria-controls") || ""} ${el.getAttribute("aria-owns") || ""}`;
    for (const id of lists.split(/\s+/)) {
      if (option) break;
      const list = byId(id);
      option = list ? list.querySelector("[role=option][aria-selected=true]") : null;
    }
    const shown = option && option.checkVisibility({ visibilityProperty: true });
    return shown && PICKS.has(tw.roleOf(option) || "") ? option : null;
  }

  // A page restored from the back-forward cache is a navigation without a new document.
  function onPageshow(e) {
    if (e.persisted && window === window.top) {
      send({ kind: "load", started: Date.now(), location: location.href });
    }
  }

  // The person acts again, or leaves the page: a checkbox clicked before is recorded as it
  // is now (the next act may change it again, or take the page away).
  function settleAll() {
    for (const watch of toggles.slice()) if (!watch.fresh) settleToggle(watch, true);
  }

  // A choice a widget takes as the press begins (a suggestion list that picks on
  // mousedown, then goes): described then; gone when the press ends, it was clicked (the
  // browser sends no click: its element went).  Only what picks (an option, a menu's
  // item): describing costs a walk of the document.
  const PICKS = new Set(["option", "menuitem", "menuitemradio", "menuitemcheckbox", "treeitem"]);
  let pressed = null;
  function onPointerdown(e) {
    if (!e.isTrusted) return;
    settleAll(); // before a click changes anything (a box's own click flips it first)
    pressed = null;
    const hit = deepAt(e.clientX, e.clientY) || e.composedPath()[0];
    const el = hit && hit.nodeType === 1 ? actionable(hit) : null;
    if (el && PICKS.has(tw.roleOf(el) || "")) pressed = { node: el, ...described(el) };
  }
  function onPointerup(e) {
    const choice = pressed;
    pressed = null;
    if (!e.isTrusted || !choice || choice.node.isConnected || !choice.identity) return;
    send({ kind: "click", button: BUTTONS[e.button] || "left", detail: 1, el: choice.el,
           identity: choice.identity });
  }

  function onPagehide() {
    for (const watch of toggles.slice()) settleToggle(watch, true);
  }

  const listeners = [["click", onClick], ["auxclick", onClick], ["input", onInput],
    ["change", onChange], ["keydown", onKeydown], ["pageshow", onPageshow],
    ["pagehide", onPagehide], ["pointerdown", onPointerdown], ["pointerup", onPointerup],
    ["invalid", onInvalid],
    ["focusin", onFocusin], ["focusout", onFocusout]];
  for (const [type, fn] of listeners) window.addEventListener(type, fn, true);

  // Frozen, like the registry: a page script can't swap stop() for one that keeps
  // listening.  What this listener sends is still checked in Python (recorder.py).
  Object.defineProperty(window, KEY, {
    enumerable: false,
    writable: false,
    configurable: false,
    value: Object.freeze({
      __proto__: null,
      stop() {
        on = false;
        for (const [type, fn] of listeners) window.removeEventListener(type, fn, true);
      },
      // Resolves once Python has handled this call, and so every call sent before it;
      // through an encoded binding (which answers nothing), the mark it sent: Python
      // waits for the mark to come.
      flush() {
        for (const watch of toggles.slice()) settleToggle(watch, true);
        if (on) flushKeyed(); // a masked field still focused as the recording stops
        drain();
        const fn = window[binding];
        if (!on || typeof fn !== "function") return null;
        if (!encoded) return fn({ kind: "flush" });
        const mark = Math.random().toString(36).slice(2);
        fn(JSON.stringify({ kind: "flush", mark }));
        return mark;
      },
    }),
  });

  if (fresh && window === window.top) {
    // When the navigation that made this document started (before the previous page
    // unloaded): Python compares it with the last step to tell who caused it.
    send({ kind: "load", started: performance.timeOrigin, location: location.href });
  }
}
