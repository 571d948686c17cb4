// The run page: draws stored events, then follows the run live over its WebSocket.
// Every stored event has a seq; on (re)connect we ask for what came after the last one seen.
(function () {
  "use strict";
  // From a data attribute, not an inline script: the Content-Security-Policy allows none.
  const runId = Number(document.getElementById("run").dataset.runId);
  const chat = document.getElementById("chat");
  const shot = document.getElementById("shot");
  const statusEl = document.getElementById("status");
  const reasonEl = document.getElementById("status-reason");
  const connEl = document.getElementById("conn");
  const workerEl = document.getElementById("worker");
  const replyForm = document.getElementById("reply");
  const controls = document.getElementById("controls");
  const saveForm = document.getElementById("save-scenario");
  const extendForm = document.getElementById("extend");
  const liveFrame = document.getElementById("live-frame");
  const liveUrl = document.getElementById("live-url");
  const isOwner = !!controls;
  // An agent run is a conversation: the person may write at any time, and after the work
  // of a message is done its tab stays open for a while (then closed; a message restores it).
  const isConversation = document.getElementById("run").dataset.kind === "agent";
  const isMcp = document.getElementById("run").dataset.kind === "mcp";
  const sessionEl = document.getElementById("session");
  const closeButton = document.getElementById("close-session");
  const replyLabel = document.getElementById("reply-label");
  let session = sessionEl ? sessionEl.dataset.session : "";
  const unread = []; // the person's messages the model has not read yet, oldest first
  let stretchUsage = 0; // tokens of the current message's work
  const FINAL = new Set(["succeeded", "failed", "stopped"]);
  const NOT_STARTED = new Set(["queued", "pending"]); // no browser yet: nothing to pause
  let status = "";
  let wantTakeover = false;
  let lastSeq = 0;
  let socket = null;
  let retryMs = 500;
  const streaming = {}; // round -> <li> holding streamed LLM text
  const streamed = new Map(); // <li> of an agent reply -> the raw text it shows
  const waits = {}; // round -> the open wait on the model: {li, startMs, attempt, answering}
  let waitTimer = null;
  const promptTokens = document.getElementById("prompt-tokens");
  const completionTokens = document.getElementById("completion-tokens");
  const usage = { prompt: 0, completion: 0 };
  // The server's clock, as the page sees it: waits are counted from the server's stamps
  // (at_ms), so a page opened mid-wait counts from when the wait began, not from now.
  const clockOffsetMs = Number(document.getElementById("run").dataset.nowMs || Date.now()) -
    Date.now();
  const actionRows = {}; // step index -> <li> in the chat

  const { el, wordsOf } = window.tabwrightChips;
  const panels = window.tabwrightRunPanels(isConversation);

  // While the stored events are drawn, the newest message only (each brought into view
  // would have the browser lay the page out again, once per message of a long run).
  let drawingStored = true;
  let lastAdded = null;
  let laterShot = ""; // the picture after the latest stored step
  function addChat(cls, label, text) {
    const li = el("li", "msg " + cls);
    li.appendChild(el("span", "who", label));
    li.appendChild(el("div", "body", text));
    chat.appendChild(li);
    if (drawingStored) lastAdded = li; // brought into view once the stored events are drawn
    else li.scrollIntoView({ block: "nearest" });
    return li;
  }

  function count(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }

  function serverNow() {
    return Date.now() + clockOffsetMs;
  }

  function seconds(ms) {
    const s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + " s";
    return Math.floor(s / 60) + " min " + String(s % 60).padStart(2, "0") + " s";
  }

  // How long a finished wait took: tenths of a second while that still tells something.
  function took(ms) {
    return ms < 10000 ? (Math.max(0, ms) / 1000).toFixed(1) + " s" : seconds(ms);
  }

  // -- the model's turn: waiting, retries, and the reply with its actions as chips --------

  function waitLabel(wait) {
    const what = wait.answering ? "the model is answering" : "waiting for the model";
    const attempt = wait.attempt > 1 ? " (try " + wait.attempt + ")" : "";
    return what + attempt + " · " + seconds(serverNow() - wait.startMs);
  }

  function tickWaits() {
    const open = Object.values(waits);
    open.forEach((wait) => {
      wait.li.querySelector(".body").textContent = waitLabel(wait);
    });
    if (!open.length && waitTimer !== null) {
      clearInterval(waitTimer);
      waitTimer = null;
    }
  }

  // The wait of ``round`` is over: its line says how it ended (``text``), and stops counting.
  function endWait(round, cls, text) {
    const wait = waits[round];
    if (!wait) return null;
    delete waits[round];
    wait.li.className = "msg model " + cls;
    wait.li.querySelector(".body").textContent = text;
    tickWaits();
    return wait;
  }

  function endAllWaits() {
    Object.keys(waits).forEach((round) => {
      endWait(round, "ended", "stopped waiting after " + seconds(serverNow() - waits[round].startMs));
    });
  }

  // A reply that was abandoned (its try failed): struck through, labelled, never reused.
  function discard(round, why) {
    const li = streaming[round];
    if (!li || li.dataset.final) return;
    delete streaming[round];
    li.classList.add("discarded");
    li.querySelector(".who").textContent = "agent · discarded";
    li.appendChild(el("span", "discarded-why", why));
  }

  function tokenCount(value) {
    return typeof value === "number" && isFinite(value) ? Math.max(0, Math.trunc(value)) : 0;
  }

  // Totals from the events themselves (the backlog, then live): the same sum the server
  // keeps, so a reload shows the numbers the page had.
  function addUsage(counts) {
    if (!promptTokens || !completionTokens) return;
    usage.prompt += tokenCount(counts && counts.prompt_tokens);
    usage.completion += tokenCount(counts && counts.completion_tokens);
    promptTokens.textContent = String(usage.prompt);
    completionTokens.textContent = String(usage.completion);
  }

  // The model's text with each <action> tag drawn as a chip (static/dashboard/chips.js).
  function drawReply(li, text, final) {
    streamed.set(li, text);
    li.querySelector(".body").replaceChildren(...window.tabwrightChips.reply(text, final));
  }

  function agentLi(round) {
    let li = streaming[round];
    if (!li) li = streaming[round] = addChat("agent", "agent", "");
    return li;
  }

  // A macro's steps, folded under its action: each with its own outcome.
  function macroSteps(e) {
    const details = el("details", "macro");
    details.open = !e.ok;
    details.appendChild(el("summary", "", count(e.steps.length, "step")));
    const list = el("ol", "macro-steps");
    list.start = 0; // numbered like the step indexes in errors and answers
    e.steps.forEach((s) => {
      const state = s.skipped ? "skipped" : s.ok ? "ok" : "failed";
      const outcome = s.skipped
        ? "skipped"
        : s.ok
          ? s.duration_ms + " ms"
          : s.error.code + ": " + s.error.message;
      list.appendChild(el("li", "macro-step " + state, wordsOf(s, s.type).text + " — " + outcome));
    });
    details.appendChild(list);
    return details;
  }

  // The data the run ended in (a run given an output schema): as text, never as HTML.
  function showOutput(output) {
    const pre = document.getElementById("output");
    if (!pre || output === undefined || output === null) return;
    pre.textContent = JSON.stringify(output, null, 2);
    pre.hidden = false;
    document.getElementById("output-none").hidden = true;
    document.getElementById("output-download").hidden = false;
  }

  function setStatus(next, reason) {
    status = next;
    statusEl.textContent = status;
    statusEl.className = "badge " + status;
    reasonEl.textContent = reason || "";
    document.body.dataset.status = status; // the CSS shows the buttons that apply
    // An MCP session's client plans its own work: the person pauses, acts and resumes.
    if (replyForm) replyForm.hidden = isConversation ? false : isMcp || status !== "paused";
    if (replyLabel && isConversation) {
      replyLabel.textContent = status === "paused" ? "The agent is waiting for you" :
        status === "running" ? "Message the agent (it reads it at its next step)" :
        NOT_STARTED.has(status) ? "Message the agent (sent when the run starts)" :
        session === "closed" ? "Continue (the page is restored first)" : "Continue the conversation";
    }
    if (controls) controls.hidden = FINAL.has(status);
    if (saveForm) saveForm.hidden = !FINAL.has(status); // a run is saved once it ended
    if (extendForm) extendForm.hidden = !(status === "paused" && /^round_cap/.test(reason || ""));
    // The person has the tab while the run is paused, once the socket can carry their input.
    view.setTakeover(isOwner && status === "paused" && isOpen(), wantTakeover);
    if (FINAL.has(status)) view.tabs([]); // the picture of the last step has no tabs
    if (status !== "paused" && status !== "running") wantTakeover = false;
    if (status !== "running") endAllWaits(); // no answer is coming while paused or ended
    if (FINAL.has(status) && (shot.getAttribute("src") || laterShot)) {
      // Ended: the last step's screenshot (it links from the steps too) replaces the stream.
      liveFrame.hidden = true;
      shot.hidden = false;
    }
  }

  // The worker that holds the run (or last held it), as its log names it.
  function setWorker(name) {
    if (!workerEl) return;
    workerEl.textContent = name ? "worker " + name : "";
    workerEl.title = name ? "the worker process that drives this run (its log says so too)" : "";
  }

  // A queued run waits for a worker with room: its place in the queue (1: next).
  function setQueue(position) {
    if (status !== "queued" || !position) return;
    reasonEl.textContent = position === 1 ? "waiting for a worker: next in the queue" :
      "waiting for a worker: " + (position - 1) + " run" + (position === 2 ? "" : "s") + " ahead in the queue";
  }

  function setSession(next, reason) {
    if (!sessionEl) return;
    session = next || "";
    sessionEl.dataset.session = session;
    sessionEl.className = "session " + session;
    sessionEl.textContent = { open: "tab open", closed: "tab closed",
      restoring: "restoring the tab" }[session] || "";
    sessionEl.title = reason || "";
    if (closeButton) closeButton.hidden = session !== "open";
    setStatus(status, reasonEl.textContent); // the composer's words follow the session
  }

  // The oldest ``n`` unread messages (all: -1) are now read by the model.
  function markRead(n) {
    const read = n < 0 ? unread.splice(0) : unread.splice(0, n);
    read.forEach((li) => {
      li.classList.remove("waiting");
      const mark = li.querySelector(".unread");
      if (mark) mark.remove();
    });
  }

  // A conversation's first request leads its thread: shown while the run waits for a
  // worker (queued or starting), and above a message the person sent while it started
  // (stored before the run's start, so replayed before it).
  function firstRequest(text) {
    let li = chat.querySelector("li.first-request");
    if (li) return li;
    li = el("li", "msg person first-request");
    li.appendChild(el("span", "who", "you"));
    li.appendChild(el("div", "body", text));
    chat.insertBefore(li, chat.firstChild);
    return li;
  }

  function stretchDivider(n) {
    const li = el("li", "stretch-divider", "request " + n);
    chat.appendChild(li);
  }

  const handlers = {
    "run.started": (e) => {
      if (e.worker) setWorker(e.worker);
      const n = e.stretch || 1;
      if (isConversation && n > 1) stretchDivider(n);
      if (e.said_before) markRead(-1);
      else if (isConversation && n === 1) firstRequest(e.task);
      else if (isConversation) addChat("person", "you", e.task);
      stretchUsage = 0;
      setStatus("running", "");
    },
    "llm.waiting": (e) => {
      // A round asked again (after a pause for a failed call): its unfinished text is not
      // the answer.
      discard(e.round, "the try it came from failed; the model was asked again");
      endWait(e.round, "ended", "asked again");
      const li = addChat("model waiting", "model", "");
      waits[e.round] = { li: li, startMs: e.at_ms || serverNow(), attempt: e.attempt || 1,
        answering: false };
      tickWaits();
      if (waitTimer === null) waitTimer = setInterval(tickWaits, 1000);
    },
    "llm.retry": (e) => {
      let text = e.reason + ", retry " + e.retry + " of " + e.retries + " in " +
        (e.wait_ms / 1000).toFixed(1) + " s";
      if (e.discarded_chars > 0) {
        text += " (" + e.discarded_chars + " characters already shown are discarded)";
        discard(e.round, "discarded: the connection dropped mid-reply; the retry starts over");
      }
      if (!endWait(e.round, "retry", text)) addChat("model retry", "model", text);
    },
    "llm.token": (e) => {
      const wait = waits[e.round];
      if (wait && !wait.answering) {
        wait.answering = true;
        tickWaits();
      }
      const li = agentLi(e.round);
      drawReply(li, (streamed.get(li) || "") + e.text, false);
    },
    "llm.message": (e) => {
      const wait = waits[e.round];
      if (wait) {
        const after = e.at_ms ? " in " + took(e.at_ms - wait.startMs) : "";
        endWait(e.round, "answered", "the model answered" + after +
          (wait.attempt > 1 ? " (try " + wait.attempt + ")" : ""));
      }
      const li = agentLi(e.round);
      li.dataset.final = "1";
      drawReply(li, e.text, true);
      addUsage(e.usage);
      if (e.usage) stretchUsage += tokenCount(e.usage.prompt_tokens) + tokenCount(e.usage.completion_tokens);
    },
    "user.message": (e) => {
      const li = addChat("person", "you", e.text);
      if (!isConversation) return;
      li.classList.add("waiting"); // until the model reads it (user.seen, or its own stretch)
      li.appendChild(el("span", "unread hint", "not read yet: the agent reads it at its next step"));
      unread.push(li);
    },
    "user.seen": (e) => markRead(e.count),
    "session.idle": (e) => {
      setSession("open", "");
      addChat("note session", "tab", "The tab stays open for " + seconds(e.idle_s * 1000) +
        ": write to go on with it.");
    },
    "session.closed": (e) => {
      setSession("closed", e.reason);
      addChat("note session", "tab", "The tab was closed: " + e.reason + "." +
        (isConversation ? " A message restores the page (its steps are replayed), then the agent goes on." : ""));
    },
    "session.restoring": (e) => {
      setSession("restoring", "");
      setStatus("running", "restoring the page"); // at work again: Stop and Pause apply
      addChat("note session", "restore", e.steps ? "Restoring the page: replaying " +
        count(e.steps, "recorded step") + "…" : "Nothing to restore: the agent starts on a new tab.");
    },
    "restore.step": (e) => {
      const ok = e.status === "passed" || e.status === "skipped";
      addChat("restore " + (ok ? "ok" : "failed"), "replay", e.what + " — " + e.status +
        (e.error ? ": " + e.error.message : ""));
    },
    "session.restored": (e) => {
      setSession("open", ""); // the tab is back (as far as the steps got)
      if (e.ok) {
        addChat("note session", "restore", "Page restored (" + count(e.total, "step") + " replayed).");
      } else {
        setStatus(e.stopped ? "stopped" : "failed", "the page was not restored: " + e.reason);
        addChat("note failed", "restore", "The page could not be restored: " + e.reason +
          ". The page is as the first " + count(e.done, "step") + " left it. Write what to " +
          "do: the agent goes on from this page.");
      }
    },
    observation: (e) => {
      const li = addChat("note", "note", e.text);
      // A note of what came before a replay's step acted (a handler cleared what covered
      // its element), sent while the step was under way: drawn before the step's action.
      const action = e.before != null ? actionRows[e.before] : null;
      if (action) chat.insertBefore(li, action);
    },
    "action.started": (e) => {
      actionRows[e.index] = addChat("action running", "action", wordsOf(e, e.name).text);
    },
    "action.finished": (e) => {
      const words = wordsOf(e, e.name).text;
      const li = actionRows[e.index] || addChat("action", "action", words);
      li.className = "msg action " + (e.ok ? "ok" : "failed");
      let detail = e.ok ? e.result : e.error.code + ": " + e.error.message;
      if (e.steps) detail = e.ok ? "ok" : e.error.message; // the steps say the rest
      li.querySelector(".body").textContent = words + " — " + detail + " (" + e.duration_ms + " ms)";
      if (e.steps) li.appendChild(macroSteps(e));
    },
    "replay.handler_proposed": (e) => {
      const did = (e.words || (e.steps || []).map((s) => s.action)).join(", then ");
      const li = addChat("note handler-proposed", "handler", "'" + e.name + "' covered step " +
        e.index + " and you cleared it (" + did + ").");
      li.dataset.handler = e.name;
      const keep = document.getElementById("handler-keep");
      if (!keep || !e.seq) return;
      if (JSON.parse(keep.dataset.kept || "[]").includes(e.name)) {
        li.appendChild(el("span", "hint", " Kept: replays of the scenario handle it from now on."));
        return;
      }
      const form = keep.content.firstElementChild.cloneNode(true);
      form.querySelector("[name=seq]").value = e.seq;
      li.appendChild(form);
    },
    "step.recorded": (e) => panels.step(e),
    // How replay found the step's element, and what it healed or why it needs a person.
    "replay.step": (e) => panels.replayStep(e),
    "checks.proposed": (e) => {
      const n = e.checks.length;
      addChat("note", "checks", count(n, "check") + " of the final page proposed: tick " +
        (n === 1 ? "it" : "them") + " when you save the run as a scenario.");
    },
    frame: (e) => {
      // Once the work ended the last step's picture stays; the frame is answered all the
      // same, or its socket would send no other (a conversation's next request).
      if (FINAL.has(status)) {
        frameDrawn();
        return;
      }
      view.draw(e);
      shot.hidden = true;
    },
    // The run's open tabs changed: the tab strip above the picture.
    tabs: (e) => view.tabs(FINAL.has(status) ? [] : e.tabs),
    "page.problem": (e) => panels.problem(e),
    // Kept when a stretch of work or the session ends (not stored as an event).
    files: (e) => panels.files(e.files),
    "input.result": (e) => {
      if (!e.ok) addChat("note failed", "error", e.error.code + ": " + e.error.message);
      else if (/^expect /.test(e.done || "")) addChat("note", "check", e.done); // a Check this
    },
    screenshot: (e) => {
      if (drawingStored) laterShot = e.src; // each step's, fetched and decoded for nothing
      else shot.src = e.src;
      if (e.url) liveUrl.textContent = e.url;
      shot.hidden = !liveFrame.hidden && !FINAL.has(status);
      if (!shot.hidden) liveFrame.hidden = true;
      panels.thumbnail(e.step_index, e.src);
    },
    "run.paused": (e) => {
      setStatus("paused", e.reason + (e.detail ? ": " + e.detail : ""));
      addChat("note", "paused", e.reason + (e.detail ? ": " + e.detail : ""));
    },
    "run.resumed": (e) => setStatus("running", ""),
    // This page's Pause reached the run: it stops at the end of the step under way.
    pausing: () => {
      if (status === "running") reasonEl.textContent = "pausing at the end of this step";
    },
    "run.finished": (e) => {
      setStatus(e.status, e.reason || e.summary);
      showOutput(e.output);
      const li = addChat("note " + e.status, e.status, e.summary || e.reason || "");
      if (stretchUsage) li.appendChild(el("span", "hint stretch-tokens", stretchUsage + " tokens"));
      stretchUsage = 0;
    },
    state: (e) => {
      if (e.session !== undefined) setSession(e.session, e.session_reason);
      setStatus(e.status, e.reason);
      setQueue(e.queue);
      if (e.worker !== undefined) setWorker(e.worker);
    },
    // Its worker stopped answering before the run started: nothing of it ran, and it
    // waits for another worker.
    "run.requeued": (e) => {
      setWorker("");
      if (e.session !== undefined) setSession(e.session, "");
      setStatus("queued", e.reason);
      addChat("note", "queue", "Its worker" + (e.worker ? " (" + e.worker + ")" : "") +
        " stopped answering before the run started: it waits in the queue for another.");
    },
    queue: (e) => setQueue(e.position),
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

  // What the person sends goes over the socket: its buttons wait for it to be open (sent in
  // the moment the page connects, or while it reconnects, it would be lost; the text stays).
  const socketButtons = [document.getElementById("reply-send"), closeButton,
    extendForm && extendForm.querySelector("button[type=submit]"),
    ...(controls ? controls.querySelectorAll("button[data-command]") : [])].filter(Boolean);
  // The socket is open: what the person does can be sent.
  function isOpen() {
    return !!socket && socket.readyState === WebSocket.OPEN;
  }

  function setConnected(open) {
    socketButtons.forEach((button) => { button.disabled = !open; });
    document.body.dataset.live = open ? "1" : "";
    view.setTakeover(isOwner && status === "paused" && open, false);
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(scheme + "://" + location.host + "/ws/runs/" + runId + "/?after=" +
      lastSeq + "&width=" + view.widthToSay());
    socket.onopen = () => {
      retryMs = 500;
      connEl.textContent = "";
      setConnected(true);
    };
    socket.onmessage = (msg) => handle(JSON.parse(msg.data));
    socket.onclose = (ev) => {
      setConnected(false);
      if (ev.code === 4403) {
        connEl.textContent = "not allowed";
        return;
      }
      // 4429: too many of the person's pages are open; one closing lets this one in.
      connEl.textContent = ev.code === 4429 ? "too many pages open; reconnecting…" : "reconnecting…";
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 10000);
    };
  }

  function sendJson(message) {
    if (isOpen()) {
      socket.send(JSON.stringify(message));
      return true;
    }
    addChat("note failed", "error", "not connected; try again in a moment");
    return false;
  }

  // A command goes after what the person typed on the live view just before it (held a
  // moment to be sent as one text): a Resume must not overtake the last keys.
  function send(command, text) {
    view.flushTyping();
    return sendJson({ command: command, text: text || "" });
  }

  // "Close tab" sits outside the controls (they hide when the work ends; the tab may stay).
  if (closeButton) closeButton.addEventListener("click", () => send("close"));
  if (controls) {
    controls.addEventListener("click", (ev) => {
      const cmd = ev.target.dataset && ev.target.dataset.command;
      if (cmd === "takeover") {
        wantTakeover = true;
        if (status === "paused") view.focus();
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

  // -- the live view: its frames come on the socket, the person's input goes on it -------
  // The socket sends the next frame once the page has taken the last one.
  function frameDrawn() {
    if (isOpen()) {
      socket.send(JSON.stringify({ command: "frame.ack" }));
    }
  }
  const view = window.tabwrightLiveView(sendJson, frameDrawn, isOpen);

  if (replyForm) {
    replyForm.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const box = document.getElementById("reply-text");
      if (!box.value.trim()) return;
      if (send(isConversation ? "message" : "reply", box.value)) box.value = "";
    });
  }

  JSON.parse(document.getElementById("initial-events").textContent).forEach(handle);
  drawingStored = false;
  if (laterShot) shot.src = laterShot;
  if (lastAdded) lastAdded.scrollIntoView({ block: "nearest" });
  // Not started yet (queued, or starting on a worker): the first request is the thread's
  // first line all the same, above any message written meanwhile.
  if (isConversation && !chat.querySelector("li.first-request")) {
    firstRequest(document.getElementById("run").dataset.task || "");
  }
  setConnected(false);
  connEl.textContent = "connecting…";
  connect();
})();
