// The run page: draws stored events, then follows the run live over its WebSocket.
// Every stored event has a seq; on (re)connect we ask for what came after the last one seen.
(function () {
  "use strict";
  // From a data attribute, not an inline script: the Content-Security-Policy allows none.
  const runId = Number(document.getElementById("run").dataset.runId);
  const chat = document.getElementById("chat");
  const steps = document.getElementById("steps");
  const shot = document.getElementById("shot");
  const statusEl = document.getElementById("status");
  const reasonEl = document.getElementById("status-reason");
  const connEl = document.getElementById("conn");
  const replyForm = document.getElementById("reply");
  const controls = document.getElementById("controls");
  const saveForm = document.getElementById("save-scenario");
  const extendForm = document.getElementById("extend");
  const live = document.getElementById("live");
  const liveFrame = document.getElementById("live-frame");
  const liveUrl = document.getElementById("live-url");
  const liveHint = document.getElementById("live-hint");
  const checkThis = document.getElementById("check-this");
  const isOwner = !!controls;
  const FINAL = new Set(["succeeded", "failed", "stopped"]);
  const NAMED_KEYS = new Set(["Enter", "Tab", "Escape", "Backspace", "Delete", "ArrowUp",
    "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End", "PageUp", "PageDown"]);
  let status = "";
  let frameSize = null; // CSS px of the run's viewport, from the latest frame
  let wantTakeover = false;
  let checking = false; // the next click on the picture records a check instead
  let lastSeq = 0;
  let socket = null;
  let retryMs = 500;
  const streaming = {}; // round -> <li> holding streamed LLM text
  const actionRows = {}; // step index -> <li> in the chat
  const stepRows = {}; // step index -> <li> in the step list

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function addChat(cls, label, text) {
    const li = el("li", "msg " + cls);
    li.appendChild(el("span", "who", label));
    li.appendChild(el("div", "body", text));
    chat.appendChild(li);
    li.scrollIntoView({ block: "nearest" });
    return li;
  }

  function describe(name, args) {
    if (name === "steps" && args && Array.isArray(args.steps)) {
      return "steps (" + args.steps.length + "): " + args.steps.map((s) => s.type).join(" → ");
    }
    const parts = Object.entries(args || {}).map(([k, v]) => k + "=" + JSON.stringify(v));
    return name + (parts.length ? " " + parts.join(" ") : "");
  }

  // A macro's steps, folded under its action: each with its own outcome.
  function macroSteps(e) {
    const details = el("details", "macro");
    details.open = !e.ok;
    details.appendChild(el("summary", "", e.steps.length + " steps"));
    const list = el("ol", "macro-steps");
    list.start = 0; // numbered like the step indexes in errors and answers
    e.steps.forEach((s) => {
      const spec = Object.assign({}, (e.args.steps || [])[s.index] || {});
      delete spec.type;
      const state = s.skipped ? "skipped" : s.ok ? "ok" : "failed";
      const outcome = s.skipped
        ? "skipped"
        : s.ok
          ? s.duration_ms + " ms"
          : s.error.code + ": " + s.error.message;
      list.appendChild(el("li", "macro-step " + state, describe(s.type, spec) + " — " + outcome));
    });
    details.appendChild(list);
    return details;
  }

  // An expect step in words, as the scenario page says it.
  function checkWords(args, role, name) {
    const what = role ? role + (name ? ' "' + name + '"' : "") : "the element";
    switch (args.kind) {
      case "text_visible": return 'text "' + args.text + '" is shown';
      case "text_hidden": return 'text "' + args.text + '" is not shown';
      case "rows": return args.count + ' row(s) show "' + args.text + '"';
      case "url": return 'the address contains "' + args.url + '"';
      case "checked": return what + " is checked";
      case "unchecked": return what + " is not checked";
      case "value": return what + ' shows "' + args.value + '"';
      default: return what + " is on the page";
    }
  }

  function setChecking(on) {
    checking = on;
    if (checkThis) checkThis.setAttribute("aria-pressed", on ? "true" : "false");
    live.classList.toggle("checking", on);
  }

  function setStatus(next, reason) {
    status = next;
    statusEl.textContent = status;
    statusEl.className = "badge " + status;
    reasonEl.textContent = reason || "";
    document.body.dataset.status = status; // the CSS shows the buttons that apply
    if (replyForm) replyForm.hidden = status !== "paused";
    if (controls) controls.hidden = FINAL.has(status);
    if (saveForm) saveForm.hidden = !FINAL.has(status); // a run is saved once it ended
    if (extendForm) extendForm.hidden = !(status === "paused" && /^round_cap/.test(reason || ""));
    const takeover = isOwner && status === "paused";
    live.classList.toggle("takeover", takeover);
    live.tabIndex = takeover ? 0 : -1;
    liveHint.hidden = !takeover;
    if (!takeover) setChecking(false);
    if (takeover && wantTakeover) live.focus();
    if (status !== "paused" && status !== "running") wantTakeover = false;
    if (FINAL.has(status) && shot.getAttribute("src")) {
      // Ended: the last step's screenshot (it links from the steps too) replaces the stream.
      liveFrame.hidden = true;
      shot.hidden = false;
    }
  }

  const handlers = {
    "run.started": (e) => setStatus("running", ""),
    "llm.token": (e) => {
      let li = streaming[e.round];
      if (!li) li = streaming[e.round] = addChat("agent", "agent", "");
      li.querySelector(".body").textContent += e.text;
    },
    "llm.message": (e) => {
      const li = streaming[e.round] || addChat("agent", "agent", "");
      streaming[e.round] = li;
      li.querySelector(".body").textContent = e.text;
    },
    "user.message": (e) => addChat("person", "you", e.text),
    observation: (e) => addChat("note", "note", e.text),
    "action.started": (e) => {
      actionRows[e.index] = addChat("action running", "action", describe(e.name, e.args));
    },
    "action.finished": (e) => {
      const li = actionRows[e.index] || addChat("action", "action", describe(e.name, e.args));
      li.className = "msg action " + (e.ok ? "ok" : "failed");
      let detail = e.ok ? e.result : e.error.code + ": " + e.error.message;
      if (e.steps) detail = e.ok ? "ok" : e.error.message; // the steps say the rest
      li.querySelector(".body").textContent =
        describe(e.name, e.args) + " — " + detail + " (" + e.duration_ms + " ms)";
      if (e.steps) li.appendChild(macroSteps(e));
    },
    "step.recorded": (e) => {
      const li = el("li", "step " + (e.ok ? "ok" : "failed") + (e.action === "expect" ? " check" : ""));
      li.dataset.index = e.index;
      li.appendChild(el("span", "step-action", e.action === "expect" ? "check" : e.action));
      let target = e.role ? e.role + ' "' + e.name + '"' : describe("", e.args).trim();
      if (e.action === "expect") target = checkWords(e.args, e.role, e.name);
      li.appendChild(el("span", "step-target", target));
      if (e.duration_ms) li.appendChild(el("span", "step-ms hint", e.duration_ms + " ms"));
      if (e.selector) li.appendChild(el("code", "step-selector", e.selector));
      if (e.by === "person") li.appendChild(el("span", "step-by", "by the person"));
      if (!e.ok && e.error) li.appendChild(el("span", "error", e.error.message));
      const before = stepRows[e.index]; // a replayed step tried again after a pause
      if (before) steps.replaceChild(li, before);
      else steps.appendChild(li);
      stepRows[e.index] = li;
    },
    // How replay found the step's element, and what it healed or why it needs a person.
    "replay.step": (e) => {
      const li = stepRows[e.index];
      if (!li) return;
      if (e.status === "skipped") li.className = "step skipped";
      let text = e.status === "skipped" ? "done by the person" : "";
      if (e.strategy === "person") text = "done by the person";
      else if (e.strategy) {
        text = "found by " + e.strategy + (e.score !== null ? " (" + e.score.toFixed(3) + ")" : "");
      }
      if (e.heal) text += "; " + (e.heal === "confident" ? "healed" : "change proposed") +
        ": " + e.changes.join("; ");
      (e.candidates || []).forEach((c) => {
        text += "; candidate " + c.role + ' "' + c.name + '" ' + c.score;
      });
      if (text) li.appendChild(el("span", "replay-note hint", text));
    },
    "checks.proposed": (e) => {
      addChat("note", "checks", e.checks.length + " checks of the final page proposed: " +
        "tick them when you save the run as a scenario.");
    },
    frame: (e) => {
      if (FINAL.has(status)) return;
      frameSize = { width: e.width, height: e.height };
      liveFrame.src = "data:image/jpeg;base64," + e.jpeg;
      liveFrame.hidden = false;
      shot.hidden = true;
      liveUrl.textContent = e.url;
    },
    "page.problem": (e) => {
      const box = document.getElementById("problems");
      const list = document.getElementById("problem-list");
      box.hidden = false;
      const li = el("li", "problem " + e.kind);
      li.appendChild(el("span", "problem-kind", e.kind === "request" ? "request" :
        e.kind === "pageerror" ? "uncaught" : e.kind));
      li.appendChild(el("span", "problem-text", e.text));
      if (e.page_url) li.title = "on " + e.page_url + (e.url ? "\nat " + e.url : "");
      list.appendChild(li);
      if (e.kind !== "summary") {
        const count = document.getElementById("problem-count");
        count.textContent = String(Number(count.textContent) + 1);
      }
    },
    "input.result": (e) => {
      if (!e.ok) addChat("note failed", "error", e.error.code + ": " + e.error.message);
      else if (/^check: /.test(e.done || "")) addChat("note", "check", e.done);
    },
    screenshot: (e) => {
      shot.src = e.src;
      shot.hidden = !liveFrame.hidden && !FINAL.has(status);
      if (!shot.hidden) liveFrame.hidden = true;
      const li = stepRows[e.step_index];
      if (li && !li.querySelector("img")) {
        const a = el("a");
        a.href = e.src;
        a.target = "_blank";
        const img = el("img", "thumb");
        img.src = e.src;
        img.alt = "after step " + e.step_index;
        a.appendChild(img);
        li.appendChild(a);
      }
    },
    "run.paused": (e) => {
      setStatus("paused", e.reason + (e.detail ? ": " + e.detail : ""));
      addChat("note", "paused", e.reason + (e.detail ? ": " + e.detail : ""));
    },
    "run.resumed": (e) => setStatus("running", ""),
    "run.finished": (e) => {
      setStatus(e.status, e.reason || e.summary);
      addChat("note " + e.status, e.status, e.summary || e.reason || "");
    },
    state: (e) => setStatus(e.status, e.reason),
    error: (e) => addChat("note failed", "error", e.message),
  };

  function handle(e) {
    if (e.seq) {
      if (e.seq <= lastSeq) return; // seen already (backlog and live overlap on reconnect)
      lastSeq = e.seq;
    }
    const fn = handlers[e.type];
    if (fn) fn(e);
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(scheme + "://" + location.host + "/ws/runs/" + runId + "/?after=" + lastSeq);
    socket.onopen = () => {
      retryMs = 500;
      connEl.textContent = "";
      document.body.dataset.live = "1";
    };
    socket.onmessage = (msg) => handle(JSON.parse(msg.data));
    socket.onclose = (ev) => {
      document.body.dataset.live = "";
      if (ev.code === 4403) {
        connEl.textContent = "not allowed";
        return;
      }
      connEl.textContent = "reconnecting…";
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 10000);
    };
  }

  function sendJson(message) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify(message));
      return true;
    }
    addChat("note failed", "error", "not connected; try again in a moment");
    return false;
  }

  function send(command, text) {
    return sendJson({ command: command, text: text || "" });
  }

  if (controls) {
    controls.addEventListener("click", (ev) => {
      const cmd = ev.target.dataset && ev.target.dataset.command;
      if (cmd === "takeover") {
        wantTakeover = true;
        if (status === "paused") live.focus();
        else send("pause");
      } else if (cmd) {
        send(cmd);
      }
    });
  }
  if (extendForm) {
    extendForm.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const rounds = parseInt(document.getElementById("extend-rounds").value, 10);
      sendJson({ command: "extend", rounds: rounds });
    });
  }

  // -- the live view: frames in, and while paused the person's input out ----------------
  liveFrame.addEventListener("load", () => {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({ command: "frame.ack" }));
    }
  });

  function takingOver() {
    return live.classList.contains("takeover") && frameSize !== null && !liveFrame.hidden;
  }

  // Where on the tab a point of the picture is: the picture may be drawn smaller.
  function pagePoint(ev) {
    const box = liveFrame.getBoundingClientRect();
    return {
      x: Math.round(((ev.clientX - box.left) * frameSize.width) / box.width),
      y: Math.round(((ev.clientY - box.top) * frameSize.height) / box.height),
    };
  }

  let typed = "";
  let typedTimer = null;
  function flushTyping() {
    clearTimeout(typedTimer);
    typedTimer = null;
    if (typed) sendJson({ command: "input", kind: "type", text: typed });
    typed = "";
  }

  if (checkThis) checkThis.addEventListener("click", () => setChecking(!checking));
  liveFrame.addEventListener("click", (ev) => {
    if (!takingOver()) return;
    live.focus();
    flushTyping();
    if (checking) { // record a check of what is there; nothing is clicked
      setChecking(false);
      sendJson(Object.assign({ command: "input", kind: "check" }, pagePoint(ev)));
      return;
    }
    sendJson(Object.assign({ command: "input", kind: "click", clicks: ev.detail === 2 ? 2 : 1 },
      pagePoint(ev)));
  });
  liveFrame.addEventListener("contextmenu", (ev) => {
    if (!takingOver()) return;
    ev.preventDefault();
    sendJson(Object.assign({ command: "input", kind: "click", button: "right" }, pagePoint(ev)));
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
      sendJson(wheel);
      wheel = null;
    }, 120);
  }, { passive: false });
  live.addEventListener("keydown", (ev) => {
    if (!takingOver()) return;
    const chord = ev.ctrlKey || ev.altKey || ev.metaKey;
    if (ev.key.length === 1 && !chord) {
      typed += ev.key;
      if (!typedTimer) typedTimer = setTimeout(flushTyping, 80);
    } else if (NAMED_KEYS.has(ev.key) || (ev.key.length === 1 && chord)) {
      flushTyping();
      const modifiers = ["Alt", "Control", "Meta", "Shift"].filter((m) => ev.getModifierState(m));
      sendJson({ command: "input", kind: "key", key: ev.key, modifiers: modifiers });
    } else {
      return;
    }
    ev.preventDefault();
  });
  if (replyForm) {
    replyForm.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const box = document.getElementById("reply-text");
      if (!box.value.trim()) return;
      send("reply", box.value);
      box.value = "";
    });
  }

  JSON.parse(document.getElementById("initial-events").textContent).forEach(handle);
  connect();
})();
