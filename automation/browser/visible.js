// What a person looking at the page could see: the one rule the outcome checks, wait_for's
// text and the snapshot follow (automation/browser/seen.py says it in words).  Put where
// a script's "@include visible.js" line stands (seen.js, snapshot.js).
//
// An element is seen when it is drawn (no display: none, visibility: hidden nor opacity: 0
// on it or an ancestor, and a box of its own), where scrolling can bring it into view (not
// past the document's top or left edge, where left: -9999px puts it; below the fold is
// seen), not clipped to nothing (a box of 1 px or less that hides what overflows it: a
// screen-reader-only line, a collapsed panel), and its ancestors are seen.  A frame's
// element is seen by the same rule and has a size besides (a frame shows nothing past its
// box); a frame's text is seen only when every frame element above it is.

// One element, its ancestors' display, visibility and opacity included; a walk from the
// top asks it of each element on its way down (which checks the ancestors' boxes first).
function seenHere(e) {
  const drawn = e.checkVisibility({ visibilityProperty: true, opacityProperty: true }) &&
    e.getClientRects().length > 0;
  if (!drawn) return getComputedStyle(e).display === "contents"; // (its children are drawn)
  if (e === document.documentElement || e === document.body) return true; // the page itself
  const box = e.getBoundingClientRect();
  if (box.right + scrollX <= 0 || box.bottom + scrollY <= 0) return false;
  if (box.width > 1 && box.height > 1) return true; // (most boxes: no style to read)
  const style = getComputedStyle(e);
  return style.overflowX === "visible" && style.overflowY === "visible";
}

// A frame's element, seen here and of some size.
function seenFrameHere(e) {
  if (!seenHere(e)) return false;
  const box = e.getBoundingClientRect();
  return box.width > 1 && box.height > 1;
}

// An element on its own, no walk having come down to it: every ancestor too.
function seenAlone(e) {
  if (!seenHere(e)) return false;
  for (let a = drawnParent(e); a; a = drawnParent(a)) if (!seenHere(a)) return false;
  return true;
}

// A frame's element on its own.
function seenFrame(e) {
  return seenFrameHere(e) && seenAlone(e);
}

// Where an element is drawn: its slot, its parent, or its shadow root's host.
function drawnParent(e) {
  return e.assignedSlot || e.parentElement || e.parentNode?.host || null;
}
