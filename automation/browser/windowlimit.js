// A page's windows held to what a person's browser lets it open (automation/browser/
// tabs.py): Chromium's popup blocker is the browser's, not its headless shell's, and
// Playwright turns it off in the browser too.  window.open opens a window only while the
// page has a person's activation (a click, a key, a tap of theirs, or of the engine's:
// trusted input alike), and at most BURST of them, then RATE a second: a page opening
// windows in a loop gets null, as a blocked popup does, instead of making the browser,
// its driver and this process set up each window for the tab limit to close.
(() => {
  const BURST = 10;
  const RATE = 2; // windows a second, past the burst
  const open = window.open;
  if (typeof open !== "function" || open.__tabwrightLimited) return;
  let tokens = BURST;
  let at = performance.now();
  const limited = function (...args) {
    const activation = navigator.userActivation;
    if (activation && !activation.isActive) return null;
    const now = performance.now();
    tokens = Math.min(BURST, tokens + ((now - at) / 1000) * RATE);
    at = now;
    if (tokens < 1) return null;
    tokens -= 1;
    return open.apply(this, args);
  };
  Object.defineProperty(limited, "__tabwrightLimited", { value: true });
  window.open = limited;
})();
