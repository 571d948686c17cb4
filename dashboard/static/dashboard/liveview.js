// The run page's live view (run.js makes it): the picture of the run's tab, drawn as its
// frames come and as large as the person chose (Enlarge), and, while the person has the
// tab (a paused run of theirs), their clicks, scrolls, keys and checks sent to it.  Above
// it, when the run has more than one tab, a strip of its tabs: the current one marked, a
// popup marked as opened from another; the person who has the tab makes another current
// there (the picture and their input follow it), for anyone else it only shows them.
(function () {
  "use strict";
  const NAMED_KEYS = new Set(["Enter", "Tab", "Escape", "Backspace", "Delete", "ArrowUp",
    "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End", "PageUp", "PageDown"]);
  const WIDE_KEY = "tabwright.liveWide";

  // send(message): a message on the run's socket (the page says so when it is not open);
  // drawn(): the picture took the last frame (the socket sends the next one then);
  // isOpen(): whether the socket is open now.
  window.tabwrightLiveView = function (send, drawn, isOpen) {
    const live = document.getElementById("live");
    const liveFrame = document.getElementById("live-frame");
    const liveUrl = document.getElementById("live-url");
    const liveHint = document.getElementById("live-hint");
    const checkThis = document.getElementById("check-this");
    const sizeButton = document.getElementById("live-size");
    const tabStrip = document.getElementById("live-tabs");
    const tabList = document.getElementById("live-tab-list");
    let runTabs = []; // the run's open tabs, as the socket last said
    let frameSize = null; // CSS px of the run's viewport, in the picture drawn now
    // The latest frame, until its picture draws: its size and address are the picture's
    // from then on.  A click maps with the size of the picture the person sees, not of one
    // still decoding (a popup's, of another shape, just before its opener's).
    let pending = null;
    let saidWidth = 0; // device px the picture is shown at, as told to the server
    let checking = false; // the next click on the picture records a check instead

    // A frame's picture that does not decode (broken on its way) would leave a broken
    // image, a strip of its alt text, and no frame asked for after it: the last picture
    // that drew is put back (its load asks for nothing), and the next frame is asked for.
    let drawnSrc = "";
    let restoring = false;
    liveFrame.addEventListener("load", () => {
      if (restoring) {
        restoring = false;
        return;
      }
      drawnSrc = liveFrame.src;
      if (pending !== null && pending.src === drawnSrc) {
        shows(pending);
        pending = null;
      }
      drawn();
    });
    liveFrame.addEventListener("error", () => {
      if (drawnSrc && !restoring) {
        restoring = true;
        liveFrame.src = drawnSrc;
      }
      drawn();
    });

    function setChecking(on) {
      checking = on;
      if (checkThis) checkThis.setAttribute("aria-pressed", on ? "true" : "false");
      live.classList.toggle("checking", on);
    }

    // The picture drawn is of frame ``e``: its size, shape and address.
    function shows(e) {
      frameSize = { width: e.width, height: e.height };
      if (e.width > 0 && e.height > 0) {
        liveFrame.style.setProperty("--tab-width", e.width + "px");
        liveFrame.style.setProperty("--tab-ratio", String(e.width / e.height));
      }
      if (e.url) liveUrl.textContent = e.url;
    }

    function takingOver() {
      return live.classList.contains("takeover") && frameSize !== null && !liveFrame.hidden;
    }

    // Where on the tab a point of the picture is: the picture is drawn smaller or larger
    // than the tab (inside its border), always with the tab's shape.
    function pagePoint(ev) {
      const box = liveFrame.getBoundingClientRect();
      const left = box.left + liveFrame.clientLeft;
      const top = box.top + liveFrame.clientTop;
      return {
        x: Math.round(((ev.clientX - left) * frameSize.width) / liveFrame.clientWidth),
        y: Math.round(((ev.clientY - top) * frameSize.height) / liveFrame.clientHeight),
      };
    }

    // How wide the picture is shown, in device pixels, rounded up to 160s (a small change
    // of the page's width asks for nothing new): the frames are sent no larger.
    function viewWidth() {
      const px = live.clientWidth * (window.devicePixelRatio || 1);
      return px > 0 ? Math.ceil(px / 160) * 160 : 0;
    }
    function sayWidth() {
      const width = viewWidth();
      if (width !== saidWidth && isOpen()) {
        saidWidth = width;
        send({ command: "view", width: width });
      }
    }
    // Said once the size stays put a moment: a window dragged wider asks once, not at
    // every step (each new size starts the cast again).
    let resizing = null;
    if (window.ResizeObserver) {
      new ResizeObserver(() => {
        clearTimeout(resizing);
        resizing = setTimeout(sayWidth, 250);
      }).observe(live);
    }

    // Enlarge: the picture as large as the page allows (a choice kept for the next run page).
    function setWide(on) {
      document.body.classList.toggle("live-wide", on);
      sizeButton.setAttribute("aria-pressed", on ? "true" : "false");
      sizeButton.textContent = on ? "Smaller" : "Enlarge";
      try {
        localStorage.setItem(WIDE_KEY, on ? "1" : "");
      } catch (e) {
        // Storage may be off: the choice lasts for this page only.
      }
    }
    sizeButton.addEventListener("click", () => {
      setWide(!document.body.classList.contains("live-wide"));
      if (document.body.classList.contains("live-wide")) {
        sizeButton.closest(".card").scrollIntoView({ block: "start" });
      }
    });
    try {
      if (localStorage.getItem(WIDE_KEY) === "1") setWide(true);
    } catch (e) {
      // As above.
    }

    let typed = "";
    let typedTimer = null;
    function flushTyping() {
      clearTimeout(typedTimer);
      typedTimer = null;
      if (typed) send({ command: "input", kind: "type", text: typed });
      typed = "";
    }

    if (checkThis) checkThis.addEventListener("click", () => setChecking(!checking));
    liveFrame.addEventListener("click", (ev) => {
      if (!takingOver()) return;
      live.focus();
      flushTyping();
      if (checking) { // record a check of what is there; nothing is clicked
        setChecking(false);
        send(Object.assign({ command: "input", kind: "check" }, pagePoint(ev)));
        return;
      }
      send(Object.assign({ command: "input", kind: "click", clicks: ev.detail === 2 ? 2 : 1 },
        pagePoint(ev)));
    });
    liveFrame.addEventListener("contextmenu", (ev) => {
      if (!takingOver()) return;
      ev.preventDefault();
      send(Object.assign({ command: "input", kind: "click", button: "right" }, pagePoint(ev)));
    });
    let wheel = null;
    liveFrame.addEventListener("wheel", (ev) => {
      if (!takingOver()) return;
      ev.preventDefault();
      if (wheel) {
        wheel.dx += ev.deltaX;
        wheel.dy += ev.deltaY;
        return;
      }
      wheel = Object.assign({ command: "input", kind: "scroll", dx: ev.deltaX, dy: ev.deltaY },
        pagePoint(ev));
      setTimeout(() => {
        send(wheel);
        wheel = null;
      }, 120);
    }, { passive: false });
    // A character a layout makes with AltGr (Windows reports it as Ctrl+Alt) or Option
    // (macOS: Alt) is text: "@" on a German keyboard, "€", "ą".  Alt or Ctrl+Alt with a
    // plain letter or digit is a shortcut.
    function composed(ev) {
      if (ev.key.length !== 1 || ev.metaKey) return false;
      if (ev.getModifierState("AltGraph")) return true;
      return ev.altKey && !/^[A-Za-z0-9]$/.test(ev.key);
    }
    live.addEventListener("keydown", (ev) => {
      if (!takingOver()) return;
      const chord = (ev.ctrlKey || ev.altKey || ev.metaKey) && !composed(ev);
      if (ev.key.length === 1 && !chord) {
        typed += ev.key;
        if (!typedTimer) typedTimer = setTimeout(flushTyping, 80);
      } else if (NAMED_KEYS.has(ev.key) || (ev.key.length === 1 && chord)) {
        flushTyping();
        const modifiers = ["Alt", "Control", "Meta", "Shift"].filter((m) => ev.getModifierState(m));
        send({ command: "input", kind: "key", key: ev.key, modifiers: modifiers });
      } else {
        return;
      }
      ev.preventDefault();
    });

    // A tab as the strip names it: its title, else its host (else its address).
    function tabName(t) {
      if (t.title) return t.title;
      try {
        return new URL(t.url).host || t.url || "blank";
      } catch (e) {
        return t.url || "blank";
      }
    }
    function drawTabs() {
      tabStrip.hidden = runTabs.length < 2;
      const byId = new Map(runTabs.map((t) => [t.id, t]));
      const mine = live.classList.contains("takeover");
      tabList.replaceChildren(...runTabs.map((t) => {
        const li = document.createElement("li");
        const button = document.createElement("button");
        button.type = "button";
        button.className = "live-tab";
        button.dataset.tab = String(t.id);
        const opener = t.opener === null ? null : byId.get(t.opener);
        if (opener) {
          li.className = "popup";
          const mark = document.createElement("span");
          mark.setAttribute("aria-hidden", "true");
          mark.textContent = "\u21b3 "; // opened from the tab before it
          button.appendChild(mark);
        }
        button.appendChild(document.createTextNode(tabName(t)));
        button.title = (opener ? "Opened from " + tabName(opener) + " \u2014 " : "") + t.url;
        if (t.current) button.setAttribute("aria-current", "true");
        button.disabled = !mine;
        button.addEventListener("click", () => {
          if (!live.classList.contains("takeover") || t.current) return;
          flushTyping();
          send({ command: "input", kind: "tab", tab: t.id });
        });
        li.appendChild(button);
        return li;
      }));
    }

    return {
      // The run's open tabs (the socket's "tabs" message; [] when it ended).
      tabs(list) {
        runTabs = Array.isArray(list) ? list : [];
        drawTabs();
      },
      // A frame of the tab: drawn at the tab's shape, with the address it shows.
      draw(e) {
        restoring = false; // a new frame replaces the picture being put back
        const src = "data:image/jpeg;base64," + e.jpeg;
        pending = { width: e.width, height: e.height, url: e.url, src: src };
        liveFrame.src = src;
        liveFrame.hidden = false;
      },
      // The width to ask frames for as the socket (re)connects: said with it.
      widthToSay() {
        saidWidth = viewWidth();
        return saidWidth;
      },
      // The person has the tab (or no longer has it); focus: they asked to take it over.
      setTakeover(on, focus) {
        live.classList.toggle("takeover", on);
        live.tabIndex = on ? 0 : -1;
        liveHint.hidden = !on;
        if (!on) setChecking(false);
        drawTabs(); // chosen from only while the person has the tab
        if (on && focus) live.focus();
      },
      focus() {
        live.focus();
      },
      // Send what was typed and not sent yet (before a command).
      flushTyping: flushTyping,
    };
  };
})();
