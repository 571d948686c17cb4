// The run page's panels beside the conversation (run.js makes them and hands them their
// events): the steps, each with how replay found its element and the picture after it;
// the page's problems; the run's files.  Page text only ever becomes text nodes.
(function () {
  "use strict";
  const { el, wordsOf } = window.tabwrightChips;

  function sizeText(bytes) {
    if (bytes < 1024) return bytes + " bytes";
    if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KB";
    return (bytes / 1024 / 1024).toFixed(1) + " MB";
  }

  // isConversation: the steps of each request of the conversation under a divider.
  window.tabwrightRunPanels = function (isConversation) {
    const steps = document.getElementById("steps");
    const stepRows = {}; // step index -> <li> in the step list
    let stepStretch = 1; // the stretch of the last step drawn

    return {
      step(e) {
        if (isConversation && (e.stretch || 1) !== stepStretch && !stepRows[e.index]) {
          stepStretch = e.stretch || 1;
          steps.appendChild(el("li", "stretch-divider", "request " + stepStretch));
        }
        const li = el("li", "step " + (e.ok ? "ok" : "failed") + (e.action === "expect" ? " check" : ""));
        li.dataset.index = e.index;
        const words = wordsOf(e, e.action);
        li.appendChild(el("span", "step-action", words.verb));
        li.appendChild(el("span", "step-target", words.target || words.detail.trim()));
        if (e.duration_ms) li.appendChild(el("span", "step-ms hint", e.duration_ms + " ms"));
        if (e.selector) li.appendChild(el("code", "step-selector", e.selector));
        if (e.by === "person") li.appendChild(el("span", "step-by", "by the person"));
        if (e.by === "mcp") li.appendChild(el("span", "step-by", "by the MCP client"));
        if (e.call) li.appendChild(el("span", "step-by", "in " + e.call)); // a called scenario's step
        if (!e.ok && e.error) li.appendChild(el("span", "error", e.error.message));
        const before = stepRows[e.index]; // a replayed step tried again after a pause
        if (before) steps.replaceChild(li, before);
        else steps.appendChild(li);
        stepRows[e.index] = li;
      },

      // How replay found the step's element, and what it healed or why it needs a person.
      replayStep(e) {
        const li = stepRows[e.row ?? e.index]; // row: the run's step of a called scenario's step
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

      // The picture after a step, once, linked at its full size.
      thumbnail(index, src) {
        const li = stepRows[index];
        if (!li || li.querySelector("img")) return;
        const a = el("a");
        a.href = src;
        a.target = "_blank";
        const img = el("img", "thumb");
        // Fetched and decoded once scrolled near: a long run's list holds many, and its
        // box shows a few at a time.
        img.loading = "lazy";
        img.decoding = "async";
        img.src = src;
        img.alt = "after step " + index;
        a.appendChild(img);
        li.appendChild(a);
      },

      problem(e) {
        document.getElementById("problems").hidden = false;
        const li = el("li", "problem " + e.kind);
        li.appendChild(el("span", "problem-kind", e.kind === "request" ? "request" :
          e.kind === "pageerror" ? "uncaught" : e.kind));
        li.appendChild(el("span", "problem-text", e.text));
        if (e.page_url) li.title = "on " + e.page_url + (e.url ? "\nat " + e.url : "");
        document.getElementById("problem-list").appendChild(li);
        if (e.kind !== "summary") {
          const count = document.getElementById("problem-count");
          count.textContent = String(Number(count.textContent) + 1);
        }
      },

      files(files) {
        const list = document.getElementById("file-list");
        list.replaceChildren();
        for (const file of files) {
          const li = el("li");
          const link = el("a", "", file.name);
          link.href = file.url;
          link.download = "";
          li.appendChild(link);
          const about = sizeText(file.size_bytes) +
            (file.kind === "trace" ? " · open with playwright show-trace" : "");
          li.appendChild(document.createTextNode(" "));
          li.appendChild(el("span", "hint", about));
          list.appendChild(li);
        }
        document.getElementById("file-count").textContent = String(files.length);
        document.getElementById("files").hidden = files.length === 0;
      },
    };
  };
})();
