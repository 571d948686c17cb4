// The page's side of automation/browser/settle.py: one function for every step, called
// as ([op, quietMs, maxMs, fresh, shortMs, trigger, ref]) with op arm | probe | quiet |
// stop (arm takes quietMs, and maxMs, trigger and ref when it waits for the action).  It
// installs the watcher into a document the first time it is called there: a
// MutationObserver on the document (our own marks on masked secret fields are not
// changes) and listeners that hear the page ask for a navigation of its own (the
// Navigation API's navigate event for another document, a form submitted to this
// frame), unless a handler prevented it, and the fields the browser refused to send a
// form for (their `invalid` events).
([op, quietMs, maxMs, fresh, shortMs, trigger, ref]) => {
  // The page's short timers and frames since arm (pending.js); absent in a document
  // that predates the init script, where only quietMs tells the DOM settled.
  const pending = window.__tabwrightPending;
  const later = pending ? pending.later : (fn, ms) => setTimeout(fn, ms);
  let s = window.__tabwrightSettle;
  if (!s) {
    s = { n: 0, last: 0, nav: 0, on: false, wake: null, waiting: null, framing: null };
    const ours = (r) => r.type === "attributes" && (r.attributeName.startsWith("data-tabwright")
      || (r.attributeName === "style" && r.target.hasAttribute("data-tabwright-secret")));
    const counted = (records) => {
      if (records.some((r) => !ours(r))) { s.n += 1; s.last = performance.now(); }
    };
    s.observer = new MutationObserver(counted);
    // Changes made since the observer last reported (its report is a microtask away).
    s.take = () => counted(s.observer.takeRecords());
    const leaving = (e) => queueMicrotask(() => {
      if (e.defaultPrevented) return;
      s.nav += 1;
      if (s.wake) s.wake();
    });
    const listen = (win) => {
      if (win.navigation) {
        win.navigation.addEventListener("navigate", (e) => {
          if (!e.destination.sameDocument) leaving(e);
        });
      }
      win.addEventListener("submit", (e) => {
        const target = (e.submitter && e.submitter.getAttribute("formtarget")) ||
          (e.target && e.target.getAttribute && e.target.getAttribute("target")) || "_self";
        if (target === "_self" || target === "") leaving(e);
      });
      win.addEventListener("invalid", (e) => {
        if (s.invalid.length < 50) s.invalid.push(e.target);
      }, true);
      // The action's clicks and Enter keys: the forms they asked to send, the browser
      // checking their fields first (notsent.js).
      const tried = (e) => {
        if (s.tried.length < 50) s.tried.push([e.type, e.composedPath()[0]]);
      };
      win.addEventListener("click", tried, true);
      win.addEventListener("keydown", (e) => { if (e.key === "Enter") tried(e); }, true);
    };
    listen(window);
    // A frame of the page's own site (a back office's work area) asks too: its form posted
    // is a request the settle waits for once it starts.  (Another site's frame can't be
    // reached from here; its requests are still waited for once they start.)
    // (Known by their documents: a frame that went to another page has a new one, whose
    // window has no listener yet, behind the same contentWindow.)
    const heard = new WeakSet();
    const listenToFrames = (doc, depth) => {
      for (const f of depth < 3 ? doc.querySelectorAll("iframe, frame") : []) {
        try {
          const win = f.contentWindow;
          if (!win || !win.document) continue;
          if (!heard.has(win.document)) {
            heard.add(win.document);
            listen(win);
          }
          listenToFrames(win.document, depth + 1);
        } catch (err) { /* another site's frame */ }
      }
    };
    s.start = () => {
      listenToFrames(document, 0);
      s.observer.disconnect();
      s.observer.observe(document, { subtree: true, childList: true, attributes: true,
        characterData: true });
      s.on = true; s.n = 0; s.last = 0; s.since = performance.now();
    };
    s.invalid = [];
    s.tried = [];
    Object.defineProperty(window, "__tabwrightSettle", { value: s, configurable: true });
  }
  const SHORT_POLL_MS = 5; // how often a short quiet looks again for timers that ran
  const FRAME_WAIT_MS = 500; // the longest a look waits for the next frame
  const MAX_FRAMES = 3; // frames a look waits for work handed over again and again
  const state = (quiet) => {
    if (s.on && s.take) s.take();
    const found = { armed: s.on, n: s.n, nav: s.nav, quiet, due: pending ? pending.due() : 0 };
    const blocked = refusedToSend();
    if (blocked.length) found.blocked = blocked;
    return found;
  };
  // The fields the browser refused to send a form for since arm (notsent.js).
  const refusedToSend = () => (NOT_SENT_JS)(s.invalid, s.tried);
  const disarm = () => {
    s.observer.disconnect();
    s.on = false;
    if (pending) pending.disarm();
  };
  // What the action set off, one timer after it was handled (after the next frame and a
  // task, when it handed work to a later task): what it queued with a zero delay has run
  // by then, and what it started in a task of its own (an EventSource connects so) has
  // been reported; the short timers and frames it scheduled that are still due
  // (pending.js) get one timer more.  With `now` (the action's event has just
  // been handled, with no default action to come), it looks at once unless the page
  // scheduled a timer or frame or handed work to a later task (pending.js).  Nothing:
  // the watcher is disarmed, and says so.
  const look = (done, now) => {
    let frames = 0; // frames waited for work handed over
    let seen = 0; // work handed over that a frame has been waited for
    const answer = (again, unsure) => {
      const found = state(true);
      if (pending && pending.handed() > seen && !unsure && !document.hidden) {
        if (frames === MAX_FRAMES) unsure = true; // it hands over still: not idle
        else return afterFrame(again);
      }
      // No frame came to run what was handed over: not idle, whatever it shows now.
      if (unsure) found.due = Math.max(found.due, 1);
      if (found.due && again) return later(() => answer(false), 0);
      // (A document this settle never armed, one a navigation brought, is left to the
      // quiet wait: pending.js counts its timers and frames from its start.)
      if (s.on && s.n === 0 && s.nav === 0 && found.due === 0) {
        disarm();
        found.armed = false;
      }
      found.probed = true;
      done(found);
    };
    // Work handed to a later task shows once the next frame has run (a scroll's events
    // and observers run there) and a posted task after it (a message posted before it
    // has run by then): a timer alone may run first, and find nothing yet (it does when
    // the browser draws late).  A hidden page draws no frames: a timer does there.  A
    // frame that does not come within FRAME_WAIT_MS, or work handed over again after
    // MAX_FRAMES frames, leaves the answer unsure (not idle: the caller's quiet wait).
    const afterFrame = (again) => {
      frames += 1;
      seen = pending.handed();
      let over = false;
      const once = (unsure) => {
        if (!over) { over = true; answer(again, unsure); }
      };
      pending.frame(() => pending.soon(() => once(false)));
      later(() => once(true), FRAME_WAIT_MS);
    };
    if (now && pending && !pending.due() && !pending.handed()) {
      const drawn = state(true);
      const own = drawn.n > 0 && s.before === 0 && drawn.nav === 0 && !pending.ticked();
      if (own && !document.hidden) return framed(done, drawn.n);
      return answer(false);
    }
    later(() => answer(pending !== undefined), 0);
  };
  // A click that changed the page in its own handling (the page still until its event,
  // no interval of the page's run since arm) and left nothing for later: what the change
  // sets off with the next frame (a ResizeObserver's or IntersectionObserver's callback,
  // the frame's own work) has run one task after that frame.  Nothing new by then (no
  // change, short timer or frame, task handed over, interval run, navigation asked for)
  // and the click is settled: the watcher is disarmed and the answer says so (`settled`).
  // A frame not drawn within quietMs, or any op but the probe meanwhile (the probe waits
  // for this same answer), leaves it armed, to the caller's quiet wait.
  const framed = (done, n) => {
    const waiting = [done];
    let over = false;
    const finish = (drew) => {
      if (over) return;
      over = true;
      s.framing = null;
      const found = state(true);
      found.probed = true;
      const still = found.n === n && found.nav === 0 && found.due === 0;
      if (drew && still && !pending.handed() && !pending.ticked()) {
        disarm();
        found.armed = false;
        found.settled = true;
      }
      for (const fn of waiting) fn(found);
    };
    s.framing = { join: (fn) => waiting.push(fn), end: () => finish(false) };
    pending.frame(() => pending.soon(() => finish(true)));
    later(() => finish(false), quietMs);
  };
  // Whether a click still does something once its listeners have run: follow a link,
  // submit or reset a form, toggle a box, click a label's control, open a details, a
  // popover, a select or a picker.  Told generously: it only costs waiting a task.
  const ACTIVE_INPUTS = new Set(["checkbox", "radio", "submit", "image", "reset", "file",
    "color", "date", "datetime-local", "month", "time", "week"]);
  const activates = (e) => {
    if (e.defaultPrevented) return false;
    return e.composedPath().some((node) => {
      if (node.nodeType !== 1) return false;
      const tag = node.localName;
      if (["a", "area", "label", "summary", "select", "option"].includes(tag)) return true;
      if (node.hasAttribute("popovertarget") || node.hasAttribute("commandfor")) return true;
      if (tag === "button") return node.type !== "button" && node.form !== null;
      return tag === "input" && ACTIVE_INPUTS.has(node.type);
    });
  };
  // An arm that waits for the action stops waiting, without looking (the caller does).
  const endWait = () => { if (s.waiting) s.waiting(null); };
  // Any op but the probe ends a click's wait for its frame (see framed), unsettled.
  const endFrame = () => { if (s.framing) s.framing.end(); };
  if (op === "arm") {
    endWait();
    endFrame();
    s.start();
    s.nav = 0;
    s.before = null;
    s.invalid = [];
    s.tried = [];
    if (pending) pending.arm(quietMs);
    if (!trigger) return state(true);
    // Sent just before a click, not waited for: the answer comes once the click's event
    // (trusted, on the ref's element) has been handled, in the same round trip as the
    // click.  The probe op, or maxMs, ends the wait for a click that never comes: the
    // answer then holds no look, and the caller probes.
    const el = window.__tabwright ? window.__tabwright.resolve(ref) : null;
    return new Promise((done) => {
      let clicked = null;
      const heard = (e) => {
        if (clicked || !e.isTrusted || !el || !e.composedPath().includes(el)) return;
        clicked = e;
        // What changed before the click's own event: the page was not still (a ticker, a
        // handler of the press that came before it), and its change can't be told apart.
        state(true);
        s.before = s.n;
        // Heard before the page's own listeners: `after` hears it once they all have run
        // (the last of the window's), else one task later they and what the click does
        // by default (submit a form, follow a link) have run.
        window.removeEventListener(trigger, after);
        window.addEventListener(trigger, after);
        if (pending) pending.soon(() => end(look));
        else end(look);
      };
      const after = (e) => {
        if (e === clicked && !activates(e)) end((answer) => look(answer, true));
      };
      const end = (then) => {
        if (s.waiting !== end) return;
        s.waiting = null;
        window.removeEventListener(trigger, heard, true);
        window.removeEventListener(trigger, after);
        if (!then) return done(state(true));
        then(done);
      };
      s.waiting = end;
      window.addEventListener(trigger, heard, true);
      later(() => end(null), maxMs);
    });
  }
  if (op === "stop") { endWait(); endFrame(); disarm(); return state(true); }
  if (op === "probe") {
    if (s.framing) return new Promise((done) => s.framing.join(done));
    endWait();
    return new Promise(look);
  }
  endFrame();
  return new Promise((done) => {
    const begun = performance.now();
    // Quiet since the last change, or since arm: a timer the action set may change it.
    let from = fresh ? begun : s.since || 0;
    if (!s.on) { s.start(); from = begun; }
    const nav0 = s.nav;
    let over = false;
    const finish = (quiet) => { over = true; s.wake = null; done(state(quiet)); };
    // Quiet for quietMs once the page's short timers and frames due now have run; or,
    // when asked (shortMs: the action started no request), quiet for shortMs with none of
    // the page's short timers or frames since arm still to run.
    const held = pending ? pending.held() : null;
    const short = shortMs > 0 && pending !== undefined;
    const tick = () => {
      if (over) return;
      if (s.nav !== nav0) return finish(false);
      const now = performance.now();
      const quietFor = now - Math.max(s.last, from);
      const waiting = held !== null && pending.stillDue(held);
      if ((quietFor >= quietMs && !waiting) || (short && quietFor >= shortMs && pending.idle())) {
        return finish(true);
      }
      if (now - begun >= maxMs) return finish(false);
      let wait = quietFor < quietMs ? quietMs - quietFor : SHORT_POLL_MS;
      if (short) wait = Math.min(wait, quietFor < shortMs ? shortMs - quietFor : SHORT_POLL_MS);
      later(tick, Math.max(1, Math.min(wait, maxMs - (now - begun))) + 1);
    };
    s.wake = tick;
    tick();
  });
}
