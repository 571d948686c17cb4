// The run page: draws stored events, then follows the run live over its WebSocket.
// Every stored event has a seq; on (re)connect we ask for what came after the last one seen.
(function () {
  "use strict";
  const runId = window.TABWRIGHT_RUN;
  const chat = document.getElementById("chat");
  const steps = document.getElementById("steps");
  const shot = document.getElementById("shot");
  const statusEl = document.getElementById("status");
  const reasonEl = document.getElementById("status-reason");
  const connEl = document.getElementById("conn");
  const replyForm = document.getElementById("reply");
  const controls = document.getElementById("controls");
  const saveForm = document.getElementById("save-scenario");
  const FINAL = new Set(["succeeded", "failed", "stopped"]);
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

  function setStatus(status, reason) {
    statusEl.textContent = status;
    statusEl.className = "badge " + status;
    reasonEl.textContent = reason || "";
    if (replyForm) replyForm.hidden = status !== "paused";
    if (controls) controls.hidden = FINAL.has(status);
    if (saveForm) saveForm.hidden = !FINAL.has(status); // a run is saved once it ended
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
      const li = el("li", "step " + (e.ok ? "ok" : "failed"));
      li.dataset.index = e.index;
      li.appendChild(el("span", "step-action", e.action));
      const target = e.role ? e.role + ' "' + e.name + '"' : describe("", e.args).trim();
      li.appendChild(el("span", "step-target", target));
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
      if (e.strategy) text = "found by " + e.strategy + " (" + e.score.toFixed(3) + ")";
      if (e.heal) text += "; " + (e.heal === "confident" ? "healed" : "change proposed") +
        ": " + e.changes.join("; ");
      (e.candidates || []).forEach((c) => {
        text += "; candidate " + c.role + ' "' + c.name + '" ' + c.score;
      });
      if (text) li.appendChild(el("span", "replay-note hint", text));
    },
    screenshot: (e) => {
      shot.src = e.src;
      shot.hidden = false;
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

  function send(command, text) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({ command: command, text: text || "" }));
    } else {
      addChat("note failed", "error", "not connected; try again in a moment");
    }
  }

  if (controls) {
    controls.addEventListener("click", (ev) => {
      const cmd = ev.target.dataset && ev.target.dataset.command;
      if (cmd) send(cmd);
    });
  }
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
