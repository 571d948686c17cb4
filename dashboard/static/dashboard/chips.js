// Agent text on the run page: each <action>{json}</action> tag drawn as a compact chip
// ("click e5", 'fill e7 "Ada"'), the words around it as text. Model and page text only ever
// becomes text nodes and attributes set as properties, never HTML.
(function () {
  "use strict";

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  const ACTION_TAG = /<action>([\s\S]*?)(<\/action>|$)/gi; // as automation/agent/parser.py
  const BARE_ARGS = new Set(["url", "key", "path"]); // shown as they are, not quoted

  function short(text, max) {
    return text.length > max ? text.slice(0, max - 1) + "…" : text;
  }

  function argText(key, value, bare) {
    let shown;
    if (typeof value === "string") shown = BARE_ARGS.has(key) ? short(value, 60) : JSON.stringify(short(value, 40));
    else if (Array.isArray(value)) shown = short(JSON.stringify(value), 40);
    else if (value !== null && typeof value === "object") shown = "{…}";
    else shown = String(value);
    return bare && typeof value === "string" ? shown : key + "=" + shown;
  }

  // "click e5", 'fill e7 "Ada"', "navigate https://…", "scroll dy=300": the name, the ref,
  // the first text argument bare, the rest as key=value.
  function chipText(data) {
    // A "check" action ticks or unticks a box: "check" is kept for checks of the outcome.
    let name = String(data.action);
    if (name === "check") name = data.checked === false ? "untick" : "tick";
    if (name === "steps" && Array.isArray(data.steps)) {
      return "steps (" + data.steps.length + "): " +
        data.steps.map((s) => (s && s.type) || "?").join(" → ");
    }
    const parts = [name];
    if (typeof data.ref === "string") parts.push(data.ref);
    let bareUsed = false;
    const rest = Object.entries(data).filter(([k]) => k !== "action" && k !== "ref");
    rest.slice(0, 4).forEach(([k, v]) => {
      parts.push(argText(k, v, !bareUsed && typeof v === "string"));
      if (typeof v === "string") bareUsed = true;
    });
    if (rest.length > 4) parts.push("…");
    return parts.join(" ");
  }

  function actionChip(body, closed) {
    const chip = el("code", "chip");
    let json = body.trim();
    if (json.startsWith("```")) json = json.replace(/^`+/, "").replace(/`+$/, "").replace(/^json/, "").trim();
    if (!closed) { // still streaming: the name once it is there, never half an argument
      const name = /"action"\s*:\s*"([^"]*)"/.exec(json);
      chip.classList.add("pending");
      chip.textContent = (name ? name[1] : "action") + " …";
      return chip;
    }
    let data = null;
    try {
      data = JSON.parse(json);
    } catch (err) {
      data = null;
    }
    if (!data || typeof data !== "object" || Array.isArray(data) || typeof data.action !== "string") {
      chip.classList.add("bad");
      chip.textContent = "unreadable action";
      chip.title = short(body.trim(), 300);
      return chip;
    }
    chip.textContent = chipText(data);
    chip.title = short(JSON.stringify(data), 500);
    return chip;
  }

  // The model's text as nodes: each <action> tag a chip, the words around them as text.
  function reply(text, final) {
    const nodes = [];
    let last = 0;
    let chips = null; // consecutive chips share one row
    const said = (part) => {
      if (part.trim()) {
        nodes.push(el("span", "said", part.trim()));
        chips = null;
      }
    };
    for (const match of text.matchAll(ACTION_TAG)) {
      said(text.slice(last, match.index));
      if (!chips) {
        chips = el("span", "chips");
        nodes.push(chips);
      }
      chips.appendChild(actionChip(match[1], final || match[2] !== ""));
      last = match.index + match[0].length;
    }
    said(text.slice(last));
    return nodes;
  }

  // An action or a step in words, as the server tells it (automation/wording.py: one
  // wording for every page); an event stored before it said so, by its action's name.
  function wordsOf(e, name) {
    return e.words || { verb: name, target: "", detail: "", text: name };
  }

  // el and wordsOf: for the run page's other scripts, which draw the same way.
  window.tabwrightChips = { reply: reply, el: el, wordsOf: wordsOf };
})();
