// Element identities, locating: the recorded element found again by the strategies in
// turn, or an abstention that says why.
// identity.py puts this file into identity.js where its "@include" line is, inside
// the one closure: it uses the constants and helpers defined there.

  // Which of the identity's attributes pick out one element, both when it was recorded
  // (its selectors list only unique ones) and among the candidates now.
  function anchorsOf(id, candidates) {
    const q = (v) => JSON.stringify(v);
    const stored = new Set(id.selectors || []);
    const unique = new Set(id.unique || []);
    const now = (match) => candidates.filter((c) => match(c.f)).length === 1;
    const tests = Object.entries(id.test_ids || {}).filter(([k, v]) => stored.has(`[${k}=${q(v)}]`));
    const numberedId = numbered(id.id, candidates.map((c) => c.f.id));
    const numberedName = numbered(id.name_attr, candidates.map((c) => c.f.name_attr));
    return {
      test: tests.length > 0 && now((f) => sameTestId(id, f)),
      id: !numberedId && !!id.id && stored.has("#" + cssEscape(id.id)) && now((f) => f.id === id.id),
      name_attr: !numberedName && !!id.name_attr && stored.has(`${id.tag}[name=${q(id.name_attr)}]`) &&
        now((f) => f.name_attr === id.name_attr && f.tag === id.tag),
      numberedId,
      numberedName,
      placeholder: !!id.placeholder &&
        (unique.has("placeholder") || stored.has(`${id.tag}[placeholder=${q(id.placeholder)}]`)) &&
        now((f) => f.placeholder === id.placeholder),
      label: !!id.label && unique.has("label") && now((f) => f.label === id.label),
      autocomplete: !!id.autocomplete && unique.has("autocomplete") &&
        now((f) => f.autocomplete === id.autocomplete),
      target: !!id.target && now((f) => sameTarget(id, f)),
      sole: unique.has("sole") && kindOfId(id) === "text" &&
        candidates.filter((c) => c.f.kind === "text").length === 1,
    };
  }

  // Whether a name or id is one of a numbered series on the page now (form-2-qty beside
  // form-0-qty, items[3][name], row_17): the number counts sibling rows, and says which
  // element it is no more than its place does; another day form-2 is another row.
  function numbered(value, values) {
    if (!value || !/\d/.test(value)) return false;
    const esc = value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/\d+/g, "\\d+");
    const series = new RegExp(`^${esc}$`);
    return values.some((v) => v && v !== value && series.test(v));
  }

  // The other candidates with the same role and name as each candidate.
  function peerIndex(pool) {
    const groups = new Map();
    for (const e of pool) {
      const k = `${roleOf(e)}\n${nameOf(e)}`;
      if (!groups.has(k)) groups.set(k, []);
      groups.get(k).push(e);
    }
    return (e) => groups.get(`${roleOf(e)}\n${nameOf(e)}`).filter((o) => o !== e);
  }

  // Find the element of any of the identities (the recorded one and the variants it was
  // confirmed in since), reading the page once.  They must not point at different elements.
  function locate(ids) {
    const errors = [];
    const rs = roots();
    const all = elements(rs).filter(visible);
    const tags = new Set(ids.map((id) => id.tag));
    const pool = all.filter((e) => INTERACTIVE.has(roleOf(e)) || tags.has(lower(e.tagName)));
    const peers = peerIndex(pool);
    const read = pool.map((e) => attempt(errors, () => ({ e, f: features(e, peers(e)) })))
      .filter(Boolean);
    const results = ids.map((id) => locateOne(id, read, rs, all, errors));
    const hits = results.map((r, i) => ({ ...r, variant: i })).filter((r) => r.el);
    if (!hits.length) return results[0];
    if (hits.some((h) => h.el !== hits[0].el)) {
      return {
        el: null,
        report: {
          strategy: "", score: hits[0].report.score, candidates: [],
          reason: "ambiguous: its recorded variants point at different elements",
        },
      };
    }
    // The identity it fits best says what changed (none, when it is a known variant).
    const best = hits.reduce((a, b) => (b.report.score > a.report.score ? b : a));
    best.report.variant = best.variant;
    return { el: best.el, report: best.report };
  }

  function locateOne(id, read, rs, all, errors) {
    const anchors = anchorsOf(id, read);
    const alike = new Set((id.alike || []).map(key).filter(Boolean));
    const judged = (c) => c && attempt(errors, () => ({ e: c.e, f: c.f, ...judge(id, c.f, anchors, alike, c.e) }));
    const candidates = read.map(judged).filter(Boolean);
    const byEl = new Map(candidates.map((c) => [c.e, c]));
    for (const [strategy, hits] of strategiesOf(id, candidates, rs, byEl, judged, errors, anchors)) {
      // An attribute unique then and now says which it is, however else it changed; so
      // does its very name, alone in its family.
      const sure = strategy === "name" || strategy === "row" ||
        (hits.length === 1 && hits[0].attested);
      const floor = sure ? MIN_PROVEN : MIN_FIT;
      if (hits.length === 1 && hits[0].ok && hits[0].score >= floor) {
        return found(strategy, hits[0], all, errors);
      }
    }
    // Similarity: among the candidates that may be taken, one clearly ahead.
    const ranked = candidates.slice().sort((a, b) => b.score - a.score);
    const fitting = ranked.filter((c) => c.ok);
    const best = fitting[0];
    const next = fitting[1];
    if (best && best.score >= MIN_SCORE && (!next || best.score - next.score >= MARGIN)) {
      return found("similarity", best, all, errors);
    }
    // Candidates that score alike are told apart by where they lead: the one that leads
    // where the recorded element led; or, when all of them do under the same name (a
    // sidebar's link and the header's), any of them does what the step did.
    if (best && best.score >= MIN_SCORE && id.target) {
      const tied = fitting.filter((c) => best.score - c.score < MARGIN);
      const same = tied.filter((c) => sameTarget(id, c.f));
      if (same.length === 1) return found("target", same[0], all, errors);
      if (same.length === tied.length && tied.every((c) => key(c.f.name) === key(best.f.name))) {
        return found("target", best, all, errors);
      }
    }
    const hit = atPoint(id, byEl, best, fitting);
    if (hit) return found("coordinates", hit, all, errors);
    return {
      el: null,
      report: {
        strategy: "", score: best ? best.score : 0, reason: whyNot(ranked, fitting, best, errors),
        candidates: top(ranked),
      },
    };
  }

  // The strategies before similarity, in order, each with the candidates it finds.
  function strategiesOf(id, candidates, rs, byEl, judged, errors, anchors) {
    const out = [];
    if (id.role && id.name) {
      out.push(["role_name", candidates.filter((c) => c.f.role === id.role && c.f.name === id.name)]);
      // The same name on another control of its family: the "Active" filter as a link,
      // a button, a tab or a radio button.
      const mine = familiesOf(kindOfId(id), id.role);
      const named = candidates.filter((c) => key(baseName(c.f)) === key(baseName(id)) &&
        familiesOf(c.f.kind, c.f.role).some((x) => mine.includes(x)));
      out.push(["name", named]);
    }
    if (id.aria_label) out.push(["aria_label", candidates.filter((c) => c.f.aria_label === id.aria_label)]);
    if (id.name_attr && !anchors.numberedName) {
      out.push(["name_attr", candidates.filter((c) => c.f.name_attr === id.name_attr && c.f.tag === id.tag)]);
    }
    if (Object.keys(id.test_ids || {}).length) {
      out.push(["test_id", candidates.filter((c) => sameTestId(id, c.f))]);
    }
    // The one link or submit that leads where the recorded one led.
    if (anchors.target) out.push(["target", candidates.filter((c) => sameTarget(id, c.f))]);
    if (anchors.placeholder || anchors.label || anchors.autocomplete) {
      const attests = (f) => (anchors.placeholder && f.placeholder === id.placeholder) ||
        (anchors.label && f.label === id.label) ||
        (anchors.autocomplete && f.autocomplete === id.autocomplete);
      out.push(["attribute", candidates.filter((c) => attests(c.f))]);
    }
    if (anchors.sole) out.push(["sole_field", candidates.filter((c) => c.f.kind === "text")]);
    // The one box or field of its row, the row reading as it did.
    out.push(["row", candidates.filter((c) => c.rowProof)]);
    // A stored selector is judged like any candidate: a structural path (nth-of-type)
    // that now lands on another card's button does not fit where the name was shared.
    // (Not one that names it by a number of a series: that finds whichever row has it.)
    const q = (v) => JSON.stringify(v);
    const byNumber = (sel) => (anchors.numberedId && sel.includes("#" + cssEscape(id.id))) ||
      (anchors.numberedName && sel.includes(`[name=${q(id.name_attr)}]`));
    for (const sel of (id.selectors || []).filter((x) => !byNumber(x))) {
      const hits = new Set();
      for (const r of rs) {
        try {
          for (const e of r.querySelectorAll(sel)) if (visible(e)) hits.add(e);
        } catch (err) { /* a selector this document can't parse finds nothing */ }
      }
      const fresh = (e) => judged(attempt(errors, () => ({ e, f: features(e, []) })));
      out.push(["selector", Array.from(hits, (e) => byEl.get(e) || fresh(e)).filter(Boolean)]);
    }
    return out;
  }

  // The candidate now at the recorded position, if it fits and scores near the best.  Its
  // place does not choose among others that score alike under another name than the
  // recorded one: "Save" gone, "Save draft" where it stood and "Save as template" beside
  // it is a choice for a person, not a guess to make.
  function atPoint(id, byEl, best, fitting) {
    if (!id.box) return null;
    const [x, y, w, h] = id.box;
    let e = document.elementFromPoint(x + w / 2 - scrollX, y + h / 2 - scrollY);
    while (e && !byEl.has(e)) e = parentOf(e);
    const hit = e ? byEl.get(e) : null; // the point may be on text, or off the screen
    if (!hit || !hit.ok || hit.score < MIN_SCORE) return null;
    if (best && hit !== best && hit.score < best.score - MARGIN) return null;
    const rivals = fitting.filter((c) => c !== hit && c.score >= hit.score - MARGIN);
    return rivals.length && key(hit.f.name) !== key(id.name) ? null : hit;
  }

  function whyNot(ranked, fitting, best, errors) {
    if (!ranked.length && errors.length) {
      return `could not read the page's elements (${errors.length} failed): ${errors[0]}`;
    }
    if (!best && ranked.length) return "no candidate fits: " + ranked[0].why.join(", ");
    if (best && best.score < MIN_SCORE) return `best score ${best.score.toFixed(2)} is too low`;
    if (best) {
      const alike = fitting.filter((c) => best.score - c.score < MARGIN).length;
      return `ambiguous: ${alike} candidates score alike`;
    }
    return "no candidate element";
  }

  function found(strategy, hit, all, errors) {
    // Should describing it fail, what was compared still says what it is now.
    const plain = () => {
      const { titles, around, ...f } = hit.f;
      return { ...f, section: titles[0] || "", selectors: [], name_count: 0, alike: [] };
    };
    if (!described.has(hit.e)) described.set(hit.e, attempt(errors, () => describe(hit.e, all)));
    const now = described.get(hit.e) || plain();
    return {
      el: hit.e,
      report: { strategy, score: hit.score, reason: "", found: now, candidates: [] },
    };
  }

  function top(ranked) {
    return ranked.slice(0, 3).map((c) => ({
      role: c.f.role, name: c.f.name, score: Math.round(c.score * 1000) / 1000, why: c.why,
    }));
  }
