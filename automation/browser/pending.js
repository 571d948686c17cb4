// The page's short timers, animation frames and idle callbacks while an action settles
// (settle.js asks), and what it handed to a later task of its own.  Installed before
// the page's own scripts (an init script), so that a library holding on to setTimeout
// (lodash's debounce does) calls these.  Only while armed (while an action settles,
// and from a document's start until the settle after its navigation), and only timers
// of at most `limitMs` (longer ones a settle would not wait for anyway) are counted;
// otherwise they pass straight through.  Intervals are never counted: they do not end.
// Each function is a Proxy of the browser's own, so that it reads as native code to the
// page (Function.prototype.toString), with its name and length.
(() => {
  if (window.__tabwrightPending) return;
  const timers = new Set();
  const frames = new Set();
  const idles = new Set(); // idle callbacks: they run when the page is next idle
  const nativeSetTimeout = window.setTimeout; // for settle.js's own waits
  const nativeFrame = window.requestAnimationFrame;
  // The next task, without a timer's clamping: settle.js's look once a click has been
  // handled.  Made before the page's scripts run, so the page can't intercept it.
  const channel = new MessageChannel();
  const post = MessagePort.prototype.postMessage;
  const queued = [];
  channel.port1.onmessage = () => { for (const fn of queued.splice(0)) fn(); };
  // Every timer of at most END_MS, armed or not, by the arm it came after: what the last
  // action left for later (a debounced save, a deletion sent once its undo toast went),
  // which a replay's verdict waits for (settle.py's hold: those of at most HOLD_MS
  // between steps, END_MS at the end).  A timer leaves it when it runs or is cleared.
  const HOLD_MS = 3000; // settle.py's HOLD_TIMER_MS, put in by settle.py
  const END_MS = 10000; // settle.py's END_HOLD_TIMER_MS, put in by settle.py
  const held = new Map(); // timer id -> [the arm it was set after, its delay]
  let arms = 0;
  let handed = 0;
  let ticked = 0; // the page's intervals run since arm
  let opened = 0; // web sockets and event streams opened since arm: they answer any time
  const p = {
    armed: false,
    limitMs: 0,
    // settle.js's own waits, which must not count as the page's.
    later: (fn, ms) => Reflect.apply(nativeSetTimeout, window, [fn, ms]),
    frame: (fn) => Reflect.apply(nativeFrame, window, [fn]),
    soon(fn) { queued.push(fn); Reflect.apply(post, channel.port2, [null]); },
    arm(limitMs) {
      arms += 1;
      timers.clear(); frames.clear(); idles.clear(); handed = 0; ticked = 0; opened = 0;
      p.limitMs = limitMs;
      p.armed = true;
    },
    disarm() {
      p.armed = false; timers.clear(); frames.clear(); idles.clear();
      handed = 0; ticked = 0; opened = 0;
    },
    due: () => (p.armed ? timers.size + frames.size + idles.size : 0),
    // How often since arm the page handed work to a later task (see below).
    handed: () => (p.armed ? handed : 0),
    // How often since arm an interval of the page's ran: a page that changes on its own.
    ticked: () => (p.armed ? ticked : 0),
    // Those due now, and whether any of them is due still (a timer that sets the next
    // one, forever, leaves the first's behind).
    held: () => ({ timers: [...timers], frames: [...frames], idles: [...idles] }),
    stillDue: (h) => h.timers.some((id) => timers.has(id)) ||
      h.frames.some((id) => frames.has(id)) || h.idles.some((id) => idles.has(id)),
    // The timers of at most HOLD_MS (or `maxMs`) set since the last arm and still to run;
    // of `ids`, those still to run.
    left: (maxMs = HOLD_MS) => [...held]
      .filter(([, [arm, ms]]) => arm === arms && ms <= maxMs).map(([id]) => id),
    leftOf: (ids) => ids.filter((id) => held.has(id)),
    // Nothing due, and no socket or stream opened whose messages may come any time.
    idle: () => p.armed && timers.size + frames.size + idles.size + opened === 0,
  };
  const wrap = (name, apply) => {
    window[name] = new Proxy(window[name], { apply });
  };
  // fn run once, after its id has left `set`.
  const counted = (set, fn, idOf) => function () {
    set.delete(idOf());
    return fn.apply(this, arguments);
  };
  wrap("setTimeout", (target, self, args) => {
    const [fn, delay] = args;
    const ms = Number(delay) || 0;
    const due = p.armed && ms <= p.limitMs;
    if (typeof fn !== "function" || (!due && ms > END_MS)) {
      return Reflect.apply(target, window, args);
    }
    const run = function () {
      held.delete(id);
      return fn.apply(this, arguments);
    };
    const id = Reflect.apply(target, window, [counted(timers, run, () => id), ...args.slice(1)]);
    if (due) timers.add(id);
    if (ms <= END_MS) held.set(id, [arms, ms]);
    return id;
  });
  // A frame, or an idle callback (it runs once the page is next idle, and is work handed
  // to a later task too, as below), is due until it ran or was cancelled.  A hidden page
  // draws no frames: one asked for there would be waited for in vain.
  for (const [ask, cancel, set, handing] of [
    ["requestAnimationFrame", "cancelAnimationFrame", frames, false],
    ["requestIdleCallback", "cancelIdleCallback", idles, true],
  ]) {
    wrap(ask, (target, self, args) => {
      const [fn] = args;
      if (handing && p.armed) handed += 1;
      if (!p.armed || typeof fn !== "function" || document.hidden) {
        return Reflect.apply(target, window, args);
      }
      const id = Reflect.apply(target, window, [counted(set, fn, () => id), ...args.slice(1)]);
      set.add(id);
      return id;
    });
    wrap(cancel, (target, self, args) => {
      set.delete(args[0]);
      return Reflect.apply(target, window, args);
    });
  }
  // Intervals never end, so they are not waited for; that one ran says the page is busy
  // on its own (a ticker), so what changed around an action may not be the action's.
  wrap("setInterval", (target, self, args) => {
    const [fn] = args;
    if (typeof fn !== "function") return Reflect.apply(target, window, args);
    const tick = function () {
      if (p.armed) ticked += 1;
      return fn.apply(this, arguments);
    };
    return Reflect.apply(target, window, [tick, ...args.slice(1)]);
  });
  // Timeouts and intervals share their ids: either clear may end a timeout.
  for (const name of ["clearTimeout", "clearInterval"]) {
    wrap(name, (target, self, args) => {
      timers.delete(args[0]);
      held.delete(args[0]);
      return Reflect.apply(target, window, args);
    });
  }
  // What the page hands to a later task, or what reports itself in one: a message posted
  // (to a port, a window, a worker, a channel), a scheduler task or an idle callback, a
  // stream or socket opened (each connects in a task of its own), an IndexedDB request,
  // a history traversal or a same-document navigation (popstate, hashchange), a scroll
  // (its events and observers run with the next frame), a popover or dialog toggled (its
  // toggle event is queued).  What it sets off there shows only a task later: a settle
  // that sees any of these looks again then (settle.js) instead of deciding at once.
  const hand = () => { if (p.armed) handed += 1; };
  const open = () => { if (p.armed) { handed += 1; opened += 1; } };
  const noting = (owner, name, note = hand) => {
    const fn = owner && Object.getOwnPropertyDescriptor(owner, name);
    if (!fn || typeof fn.value !== "function") return;
    owner[name] = new Proxy(fn.value, {
      apply(target, self, args) { note(); return Reflect.apply(target, self, args); },
      construct(target, args, made) { note(); return Reflect.construct(target, args, made); },
    });
  };
  const proto = (name) => window[name] && window[name].prototype;
  for (const owner of [proto("MessagePort"), proto("Worker"), proto("BroadcastChannel")]) {
    noting(owner, "postMessage");
  }
  for (const name of ["postMessage", "scroll", "scrollTo", "scrollBy"]) noting(window, name);
  for (const name of ["EventSource", "WebSocket"]) noting(window, name, open);
  if (window.scheduler) {
    for (const name of ["postTask", "yield"]) noting(Object.getPrototypeOf(window.scheduler), name);
  }
  noting(proto("IDBFactory"), "open");
  noting(proto("IDBDatabase"), "transaction");
  for (const name of ["back", "forward", "go"]) noting(proto("History"), name);
  for (const name of ["scroll", "scrollTo", "scrollBy", "scrollIntoView",
    "scrollIntoViewIfNeeded"]) noting(proto("Element"), name);
  for (const name of ["scrollTop", "scrollLeft"]) {
    const prop = Object.getOwnPropertyDescriptor(Element.prototype, name);
    if (prop && prop.set) {
      prop.set = new Proxy(prop.set, {
        apply(target, self, args) { hand(); return Reflect.apply(target, self, args); },
      });
      Object.defineProperty(Element.prototype, name, prop);
    }
  }
  if (window.navigation) {
    window.navigation.addEventListener("navigate", (e) => {
      if (e.destination.sameDocument) hand();
    });
  }
  window.addEventListener("beforetoggle", hand, true);
  Object.defineProperty(window, "__tabwrightPending", { value: p, configurable: true });
  // Counting from the document's start: the timers and frames its loading schedules are
  // known to the settle that follows a navigation here (it disarms; an action re-arms).
  const AT_LOAD_MS = 100; // settle.py's QUIET_MS, put in by settle.py
  p.arm(AT_LOAD_MS);
})();
