// The page's short timers and animation frames while an action settles (settle.js asks).
// Installed before the page's own scripts (an init script), so that a library holding
// on to setTimeout (lodash's debounce does) calls these.  Only while armed, and only
// timers of at most `limitMs` (longer ones a settle would not wait for anyway) are
// counted; outside a settle they pass straight through.  Intervals are never counted:
// they do not end.
(() => {
  if (window.__tabwrightPending) return;
  const native = {
    setTimeout: window.setTimeout, clearTimeout: window.clearTimeout,
    requestAnimationFrame: window.requestAnimationFrame,
    cancelAnimationFrame: window.cancelAnimationFrame,
  };
  const timers = new Set();
  const frames = new Set();
  const p = {
    armed: false,
    limitMs: 0,
    // settle.js's own waits, which must not count as the page's.
    later: (fn, ms) => native.setTimeout.call(window, fn, ms),
    arm(limitMs) { timers.clear(); frames.clear(); p.limitMs = limitMs; p.armed = true; },
    disarm() { p.armed = false; timers.clear(); frames.clear(); },
    due: () => (p.armed ? timers.size + frames.size : 0),
    // Those due now, and whether any of them is due still (a timer that sets the next
    // one, forever, leaves the first's behind).
    held: () => ({ timers: [...timers], frames: [...frames] }),
    stillDue: (h) => h.timers.some((id) => timers.has(id)) || h.frames.some((id) => frames.has(id)),
    idle: () => p.armed && timers.size === 0 && frames.size === 0,
  };
  window.setTimeout = function setTimeout(fn, delay, ...args) {
    if (!p.armed || typeof fn !== "function" || (Number(delay) || 0) > p.limitMs) {
      return native.setTimeout.call(window, fn, delay, ...args);
    }
    const id = native.setTimeout.call(window, function () {
      timers.delete(id);
      return fn.apply(this, arguments);
    }, delay, ...args);
    timers.add(id);
    return id;
  };
  window.clearTimeout = function clearTimeout(id) {
    timers.delete(id);
    return native.clearTimeout.call(window, id);
  };
  window.requestAnimationFrame = function requestAnimationFrame(fn) {
    // A hidden page draws no frames: one asked for there would be waited for in vain.
    if (!p.armed || typeof fn !== "function" || document.hidden) {
      return native.requestAnimationFrame.call(window, fn);
    }
    const id = native.requestAnimationFrame.call(window, function () {
      frames.delete(id);
      return fn.apply(this, arguments);
    });
    frames.add(id);
    return id;
  };
  window.cancelAnimationFrame = function cancelAnimationFrame(id) {
    frames.delete(id);
    return native.cancelAnimationFrame.call(window, id);
  };
  Object.defineProperty(window, "__tabwrightPending", { value: p, configurable: true });
})();
