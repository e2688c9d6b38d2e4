// halluscope report: the sample browser. Renders the embedded JSON with DOM calls and textContent only
// (never innerHTML), so text from runs — model responses included — can never become markup.
(function () {
  "use strict";
  var t0 = performance.now();
  var DATA = JSON.parse(document.getElementById("hs-data").textContent);
  var tParsed = performance.now();
  var RUNS = DATA.runs, SAMPLES = DATA.samples, IMAGES = DATA.images || {}, SCENES = DATA.scenes || {};
  var SEVERITY = DATA.categories; // most severe first
  var TITLES = {
    supported: "supported", object: "object hallucination", relation: "relation hallucination",
    attribute: "attribute hallucination", hallucinated: "hallucination (type not given)", unjudged: "unjudged"
  };
  var MARKS = { supported: "✔", object: "✘", relation: "✘", attribute: "✘", hallucinated: "✘", unjudged: "?" };

  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      for (var key in attrs) {
        if (!Object.prototype.hasOwnProperty.call(attrs, key) || attrs[key] === null || attrs[key] === undefined) continue;
        if (key === "text") node.textContent = attrs[key];
        else if (key === "className") node.className = attrs[key];
        else node.setAttribute(key, attrs[key]);
      }
    }
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function add(parent, child) { if (child) parent.appendChild(child); }

  // Per-sample numbers used by filters and sorting, computed once.
  SAMPLES.forEach(function (s, index) {
    s._i = index;
    var n = {};
    SEVERITY.forEach(function (c) { n[c] = 0; });
    s.c.forEach(function (claim) { n[claim.c] += 1; });
    s._n = n;
    s._hallu = n.object + n.relation + n.attribute + n.hallucinated;
    var judged = s._hallu + n.supported;
    s._share = judged ? s._hallu / judged : -1;
  });
  var BY_ID = {};
  SAMPLES.forEach(function (s) { (BY_ID[s.id] = BY_ID[s.id] || []).push(s); });

  var FILTERS = [
    ["all", "all samples", function () { return true; }],
    ["any", "with a hallucinated claim", function (s) { return s._hallu > 0; }],
    ["object", "with an object hallucination", function (s) { return s._n.object > 0; }],
    ["relation", "with a relation hallucination", function (s) { return s._n.relation > 0; }],
    ["attribute", "with an attribute hallucination", function (s) { return s._n.attribute > 0; }],
    ["unjudged", "with an unjudged claim", function (s) { return s._n.unjudged > 0; }],
    ["clean", "every claim supported", function (s) { return s.c.length > 0 && s._n.supported === s.c.length; }],
    ["noclaims", "no claims", function (s) { return s.c.length === 0 && !s.f && !s.v; }],
    ["incorrect", "answer marked incorrect", function (s) { return s.ok === false; }],
    ["failed", "failed", function (s) { return !!s.f; }]
  ];
  var SORTS = [
    ["order", "run order", null],
    ["hallu", "most hallucinated claims", function (a, b) { return b._hallu - a._hallu; }],
    ["share", "highest hallucinated share", function (a, b) { return b._share - a._share; }],
    ["unjudged", "most unjudged claims", function (a, b) { return b._n.unjudged - a._n.unjudged; }],
    ["claims", "most claims", function (a, b) { return b.c.length - a.c.length; }],
    ["id", "sample id", function (a, b) { return a.id < b.id ? -1 : a.id > b.id ? 1 : 0; }]
  ];
  var state = { run: "all", verdict: "all", sort: "order", q: "", page: 0, size: 50 };
  var current = [];

  function haystack(s) {
    if (s._text === undefined) {
      s._text = [s.id, s.q, s.a || "", s.f || ""].concat(s.c.map(function (c) { return c.s + " " + c.r + " " + c.o; }))
        .join("\n").toLowerCase();
    }
    return s._text;
  }

  function filtered(verdictKey) {
    var test = FILTERS.filter(function (f) { return f[0] === verdictKey; })[0][2];
    var q = state.q.trim().toLowerCase();
    return SAMPLES.filter(function (s) {
      return (state.run === "all" || s.r === Number(state.run)) && test(s) && (!q || haystack(s).indexOf(q) >= 0);
    });
  }

  function recompute() {
    current = filtered(state.verdict);
    var sorter = SORTS.filter(function (x) { return x[0] === state.sort; })[0][2];
    if (sorter) current.sort(function (a, b) { return sorter(a, b) || a._i - b._i; });
  }

  // -- controls -----------------------------------------------------------------------------------------
  function select(id, options, value, onChange) {
    var node = el("select", { id: id });
    options.forEach(function (o) { node.appendChild(el("option", { value: o[0], text: o[1] })); });
    node.value = value;
    node.addEventListener("change", function () { onChange(node.value); });
    return node;
  }

  function buildControls() {
    var box = document.getElementById("sample-controls");
    box.textContent = "";
    var runOptions = [["all", "all runs (" + SAMPLES.length + ")"]].concat(RUNS.map(function (r, i) {
      var count = SAMPLES.filter(function (s) { return s.r === i; }).length;
      return [String(i), r.label + " (" + count + ")"];
    }));
    var verdictOptions = FILTERS.map(function (f) {
      return [f[0], f[1] + " (" + filtered(f[0]).length + ")"];
    });
    box.appendChild(el("label", { "for": "f-run" }, "run "));
    box.appendChild(select("f-run", runOptions, state.run, function (v) { state.run = v; state.page = 0; buildControls(); refresh(); }));
    box.appendChild(el("label", { "for": "f-verdict" }, "show "));
    box.appendChild(select("f-verdict", verdictOptions, state.verdict, function (v) { state.verdict = v; state.page = 0; refresh(); }));
    box.appendChild(el("label", { "for": "f-sort" }, "sort by "));
    box.appendChild(select("f-sort", SORTS.map(function (x) { return [x[0], x[1]]; }), state.sort, function (v) { state.sort = v; state.page = 0; refresh(); }));
    box.appendChild(el("label", { "for": "f-size" }, "per page "));
    box.appendChild(select("f-size", [["25", "25"], ["50", "50"], ["100", "100"], ["200", "200"]], String(state.size), function (v) { state.size = Number(v); state.page = 0; refresh(); }));
    var search = el("input", { id: "f-search", type: "search", placeholder: "search id, question, response, claims", size: "34" });
    search.value = state.q;
    var timer = null;
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { state.q = search.value; state.page = 0; refresh(); }, 150);
    });
    box.appendChild(search);
  }

  // -- rendering a response with its claims coloured ---------------------------------------------------
  function worst(indices, claims) {
    var best = SEVERITY.length;
    indices.forEach(function (i) { best = Math.min(best, SEVERITY.indexOf(claims[i].c)); });
    return SEVERITY[best];
  }

  function tripletText(c) { return "(" + c.s + ", " + c.r + ", " + c.o + ")"; }

  function renderResponse(s) {
    var box = el("div", { className: "response" });
    if (s.a === null || s.a === undefined) { box.appendChild(el("span", { className: "muted", text: "(no response)" })); return box; }
    var text = s.a, cuts = [0, text.length];
    s.c.forEach(function (c) { if (c.sp) { cuts.push(c.sp[0], c.sp[1]); } });
    cuts = cuts.filter(function (v, i, a) { return a.indexOf(v) === i; }).sort(function (a, b) { return a - b; });
    for (var k = 0; k + 1 < cuts.length; k++) {
      var a = cuts[k], b = cuts[k + 1], covering = [];
      s.c.forEach(function (c, i) { if (c.sp && c.sp[0] <= a && c.sp[1] >= b) covering.push(i); });
      var piece = text.slice(a, b);
      if (!covering.length) { box.appendChild(document.createTextNode(piece)); continue; }
      var category = worst(covering, s.c);
      box.appendChild(el("mark", {
        className: "v-" + category, "data-claims": covering.join(" "),
        title: covering.map(function (i) { return tripletText(s.c[i]) + " — " + TITLES[s.c[i].c]; }).join("\n")
      }, piece));
    }
    return box;
  }

  function countChips(s) {
    if (s.v) return viewChips(s);
    var box = el("span", { className: "counts" });
    SEVERITY.forEach(function (c) {
      if (s._n[c]) box.appendChild(el("span", { className: "chip v-" + c, title: TITLES[c], "data-cat": c }, MARKS[c] + " " + s._n[c]));
    });
    if (!s.c.length && !s.f) box.appendChild(el("span", { className: "chip", text: "no claims" }));
    if (s.ok === true) box.appendChild(el("span", { className: "chip good", text: "correct" }));
    if (s.ok === false) box.appendChild(el("span", { className: "chip bad", text: "incorrect" }));
    return box;
  }

  // -- benchmark views: captions (CHAIR, AMBER), yes/no items, judged answers -----------------------------
  function okChip(ok, unanswered) {
    if (ok === true) return el("span", { className: "chip good", text: "✔ correct" });
    if (ok === false) return el("span", { className: "chip bad", text: "✘ incorrect" });
    return unanswered ? el("span", { className: "chip v-unjudged", text: "? unanswered" }) : null;
  }

  function viewChips(s) {
    var box = el("span", { className: "counts" }), v = s.v;
    if (v.k === "caption") {
      var bad = v.marks.filter(function (m) { return m.h; }).length;
      if (bad) box.appendChild(el("span", { className: "chip v-object", title: "object words the image lacks", text: "✘ " + bad + " hallucinated" }));
      box.appendChild(el("span", { className: "chip v-supported", title: "object words in the image's ground truth", text: "✔ " + (v.marks.length - bad) + " in the image" }));
    } else if (v.k === "yesno") {
      add(box, okChip(v.ok, v.read.v === null));
    } else if (v.k === "answer") {
      if (v.bad === true) box.appendChild(el("span", { className: "chip v-hallucinated", text: "✘ hallucinated" }));
      if (v.bad === false) box.appendChild(el("span", { className: "chip v-supported", text: "✔ not hallucinated" }));
      if (v.bad === null && s.ok === null) {
        var rating = v.fields.filter(function (f) { return f[0] === "rating" || f[0] === "verdict"; })[0];
        if (rating) box.appendChild(el("span", { className: "chip", text: rating[0] + " " + rating[1] }));
      }
    }
    if (s.f) box.appendChild(el("span", { className: "chip v-unjudged", text: "failed" }));
    return box;
  }

  function markTitle(v, m) {
    var what = v.b === "chair" ? "“" + m.w + "” read as " + m.o : m.w;
    return what + (m.h ? " — not among the image's objects (hallucinated)" : " — in the image's ground truth");
  }

  // The caption with every object word the benchmark read marked: red ✘ hallucinated, green ✔ in the image.
  function renderCaption(s) {
    var box = el("div", { className: "response caption" });
    if (s.a === null || s.a === undefined) { box.appendChild(el("span", { className: "muted", text: "(no response)" })); return box; }
    var text = s.a, at = 0, v = s.v;
    var placed = v.marks.map(function (m, i) { return [m, i]; }).filter(function (p) { return p[0].sp && p[0].sp[1] <= text.length; })
      .sort(function (a, b) { return a[0].sp[0] - b[0].sp[0]; });
    placed.forEach(function (p) {
      var m = p[0];
      if (m.sp[0] < at) return; // overlapping marks: the first one stands
      if (m.sp[0] > at) box.appendChild(document.createTextNode(text.slice(at, m.sp[0])));
      box.appendChild(el("mark", {
        className: "word " + (m.h ? "v-object" : "v-supported"), "data-word": m.w, "data-object": m.o,
        "data-hallucinated": m.h ? "1" : "0", "data-index": String(p[1]), title: markTitle(v, m)
      }, text.slice(m.sp[0], m.sp[1])));
      at = m.sp[1];
    });
    if (at < text.length) box.appendChild(document.createTextNode(text.slice(at)));
    return box;
  }

  function readingText(r) {
    if (r.v === null) return "unanswered" + (r.how ? " (" + r.how + ")" : "");
    return r.v + (r.how ? " (" + r.how + ")" : "");
  }

  function optionText(v, letter) {
    var found = (v.options || []).filter(function (o) { return o[0] === letter; })[0];
    return found ? letter + ". " + found[1] : letter;
  }

  // Question, answer, reading, label, correct: the line a POPE / AMBER / HallusionBench / Reefknot user reads.
  function yesNoLine(s) {
    var v = s.v, line = el("div", { className: "yesno-line" });
    line.appendChild(el("span", { className: "muted", text: "read as " }));
    line.appendChild(el("b", { className: "reading", text: v.read.v === null ? readingText(v.read) : optionText(v, v.read.v) + (v.read.how ? " (" + v.read.how + ")" : "") }));
    line.appendChild(el("span", { className: "muted", text: " · true label " }));
    line.appendChild(el("b", { className: "label", "data-label": v.label, text: v.label === null ? "—" : optionText(v, v.label) }));
    return line;
  }

  function rows(pairs, className) {
    var dl = el("dl", { className: className });
    pairs.forEach(function (p) {
      dl.appendChild(el("dt", { text: p[0] }));
      dl.appendChild(el("dd", { text: typeof p[1] === "string" ? p[1] : JSON.stringify(p[1]) }));
    });
    return dl;
  }

  function captionSection(s) {
    var v = s.v, box = el("div", { className: "view-caption" });
    var title = v.b === "chair" ? "COCO object words (" + v.marks.length + ")" : "Object nouns (" + v.marks.length + ")";
    box.appendChild(el("h3", { text: title }));
    var list = el("ol", { className: "words" });
    v.marks.forEach(function (m, i) {
      var li = el("li", { className: "word-item " + (m.h ? "v-object" : "v-supported"), "data-word": m.w, "data-hallucinated": m.h ? "1" : "0", "data-index": String(i) },
        el("span", { className: "mark chip " + (m.h ? "v-object" : "v-supported"), text: m.h ? "✘ hallucinated" : "✔ in the image" }),
        " " + (v.b === "chair" && m.o !== m.w ? m.w + " → " + m.o : m.w));
      if (!m.sp) li.appendChild(el("span", { className: "detail", text: " · not located in the caption" }));
      list.appendChild(li);
    });
    if (!v.marks.length) list.appendChild(el("li", { className: "muted", text: v.b === "chair" ? "no COCO object word" : "no object noun" }));
    box.appendChild(list);
    box.appendChild(el("h3", { text: v.b === "chair" ? "What chair.py prints for this caption" : "AMBER's reading" }));
    var printed = v.printed.slice();
    if (v.words !== null && v.words !== undefined) printed.push(["words (Len)", String(v.words)]);
    box.appendChild(rows(printed, "printed"));
    return box;
  }

  function truthSection(s) {
    var v = s.v, box = el("div", { className: "scene truth" });
    box.appendChild(el("h3", { text: v.b === "chair" ? "Ground-truth objects (COCO)" : "Ground-truth objects (AMBER)" }));
    var list = el("ul", { className: "truth-objects" });
    v.truth.forEach(function (o) {
      var named = v.recalled.indexOf(o) >= 0;
      list.appendChild(el("li", { className: named ? "named" : "", "data-object": o, text: o + (named ? " ✔ named in the caption" : "") }));
    });
    if (!v.truth.length) list.appendChild(el("li", { className: "muted", text: "none" }));
    box.appendChild(list);
    return box;
  }

  function yesNoSection(s) {
    var v = s.v, box = el("div", { className: "view-yesno" });
    box.appendChild(el("h3", { text: "Reading" }));
    var pairs = [["answer", s.a === null ? "(no response)" : s.a], ["read as", v.read.v === null ? readingText(v.read) : optionText(v, v.read.v) + (v.read.how ? " (" + v.read.how + ")" : "")],
      ["true label", v.label === null ? "—" : optionText(v, v.label)], ["correct", v.ok === true ? "yes" : v.ok === false ? "no" : "not scored (unanswered)"]];
    if (v.mode) pairs.push(["reading mode", v.mode]);
    v.others.forEach(function (o) { pairs.push([o.rule + " reading", readingText(o)]); });
    box.appendChild(rows(pairs, "yesno-table"));
    if (v.options && v.options.length) {
      var ol = el("ul", { className: "options" });
      v.options.forEach(function (o) { ol.appendChild(el("li", { className: o[0] === v.label ? "is-label" : "", text: o[0] + ". " + o[1] + (o[0] === v.label ? "  ← label" : "") })); });
      box.appendChild(el("h3", { text: "Options" }));
      box.appendChild(ol);
    }
    return box;
  }

  function answerSection(s) {
    var v = s.v, box = el("div", { className: "view-answer" });
    box.appendChild(el("h3", { text: "Judgement" }));
    if (v.fields.length) box.appendChild(rows(v.fields, "judgement"));
    if (v.why) { box.appendChild(el("h3", { text: "The judge's reasoning" })); box.appendChild(el("div", { className: "box explanation", text: v.why })); }
    if (v.ev.length) {
      var ev = el("ul", { className: "evidence" });
      v.ev.forEach(function (e) { ev.appendChild(el("li", { text: e })); });
      box.appendChild(el("h3", { text: "Evidence" }));
      box.appendChild(ev);
    }
    if (v.tuples.length) {
      box.appendChild(el("h3", { text: "Tuples and their best match" }));
      var table = el("table", { className: "tuples" }, el("tr", null, el("th", { text: "from" }), el("th", { text: "tuple" }), el("th", { text: "best match" }), el("th", { text: "score" })));
      v.tuples.forEach(function (t) { table.appendChild(el("tr", null, el("td", { text: t[0] }), el("td", { text: t[1] }), el("td", { text: t[2] }), el("td", { text: t[3] }))); });
      box.appendChild(table);
    }
    return box;
  }

  // Links name the run by its folder name (RUNS[i].name, unique in the report), so they survive a report
  // written with the runs in another order; a number is still read as the run's position.
  function sampleHref(s) { return "#/sample/" + encodeURIComponent(RUNS[s.r].name) + "/" + encodeURIComponent(s.id); }

  function runIndex(text) {
    var name = text;
    try { name = decodeURIComponent(text); } catch (e) { /* a hand-typed "%" stays as typed */ }
    for (var i = 0; i < RUNS.length; i++) if (RUNS[i].name === name) return i;
    for (var j = 0; j < RUNS.length; j++) if (RUNS[j].label === name || RUNS[j].dir === name) return j;
    return /^\d+$/.test(name) && RUNS[Number(name)] ? Number(name) : -1;
  }

  function runTag(s) {
    var run = RUNS[s.r];
    return el("span", null, el("span", { className: "swatch", style: "background:" + run.color }), run.label);
  }

  function answerLine(s) {
    if (s.pred === null && s.ok === null) return null;
    var line = el("div", { className: "answer" }, el("span", { className: "muted", text: "answer: " }), s.pred === null ? "—" : s.pred);
    return line;
  }

  function card(s) {
    var li = el("li", { className: "sample-card", "data-id": s.id, "data-run": String(s.r) });
    var thumb = el("div", { className: "thumb" });
    if (s.img && IMAGES[s.img]) thumb.appendChild(el("img", { src: IMAGES[s.img], alt: "image " + (s.iid || s.id), loading: "lazy", decoding: "async" }));
    li.appendChild(thumb);
    var body = el("div", { className: "body" });
    body.appendChild(el("div", { className: "card-head" },
      el("a", { className: "open", href: sampleHref(s), text: s.id }), runTag(s), countChips(s)));
    body.appendChild(el("div", { className: "question", text: s.q }));
    if (s.f) body.appendChild(el("div", { className: "failure", text: "failed: " + s.f }));
    body.appendChild(s.v && s.v.k === "caption" ? renderCaption(s) : renderResponse(s));
    if (s.v && s.v.k === "yesno") body.appendChild(yesNoLine(s));
    else if (!s.v) add(body, answerLine(s));
    li.appendChild(body);
    return li;
  }

  function pager(box) {
    box.textContent = "";
    var pages = Math.max(1, Math.ceil(current.length / state.size));
    var prev = el("button", { type: "button", text: "‹ previous" }), next = el("button", { type: "button", text: "next ›" });
    prev.disabled = state.page <= 0;
    next.disabled = state.page >= pages - 1;
    prev.addEventListener("click", function () { state.page -= 1; refresh(true); });
    next.addEventListener("click", function () { state.page += 1; refresh(true); });
    var first = current.length ? state.page * state.size + 1 : 0;
    var last = Math.min(current.length, (state.page + 1) * state.size);
    box.appendChild(prev);
    box.appendChild(el("span", { className: "page-info", text: "page " + (state.page + 1) + " of " + pages + " · samples " + first + "–" + last + " of " + current.length }));
    box.appendChild(next);
  }

  function refresh(scroll) {
    recompute();
    var pages = Math.max(1, Math.ceil(current.length / state.size));
    state.page = Math.min(Math.max(0, state.page), pages - 1);
    var list = document.getElementById("sample-list");
    list.textContent = "";
    var fragment = document.createDocumentFragment();
    current.slice(state.page * state.size, (state.page + 1) * state.size).forEach(function (s) { fragment.appendChild(card(s)); });
    list.appendChild(fragment);
    list.setAttribute("data-total", String(current.length));
    pager(document.getElementById("sample-pager-top"));
    pager(document.getElementById("sample-pager"));
    if (scroll) document.getElementById("samples").scrollIntoView();
  }

  // -- the page of one sample (Tri-HE Fig. 1a) ----------------------------------------------------------
  function sceneSection(s) {
    var box = el("div", { className: "scene" }, el("h3", { text: "Scene graph" }));
    var graph = s.sg ? SCENES[s.sg] : null;
    if (!graph) {
      box.appendChild(el("p", { className: "muted scene-missing", text: "Scene graph not available (the benchmark data was not found when this report was written)." }));
      return box;
    }
    if (graph.objects.length) box.appendChild(el("p", null, el("b", { text: "Objects: " }), graph.objects.join(", ")));
    var facts = el("ul", { className: "facts" });
    if (graph.facts.length) {
      graph.facts.forEach(function (f) { facts.appendChild(el("li", { className: "fact", text: f })); });
    } else {
      Object.keys(graph.attributes).forEach(function (name) {
        facts.appendChild(el("li", { className: "fact", text: name + " is " + graph.attributes[name].join(", ") }));
      });
      graph.relations.forEach(function (r) { facts.appendChild(el("li", { className: "fact", text: r.join(" ") })); });
    }
    box.appendChild(facts);
    return box;
  }

  function claimItem(s, c, i) {
    var label = c.c === "supported" || c.c === "unjudged" || c.c === "hallucinated" ? MARKS[c.c] : MARKS[c.c] + " (" + c.c + ")";
    var li = el("li", {
      className: "claim v-" + c.c, "data-verdict": c.v, "data-error": c.e || "", "data-cat": c.c, "data-index": String(i)
    }, el("span", { className: "mark chip v-" + c.c, title: TITLES[c.c], text: label }), el("span", { className: "triplet", text: tripletText(c) }));
    var detail = [];
    if (c.sc !== null && c.sc !== undefined) detail.push("score " + (Math.round(c.sc * 1000) / 1000));
    if (!c.sp) detail.push(c.cut ? "not located in the part of the response shown here (whole text in samples.jsonl)" : "not located in the response text");
    if (detail.length) li.appendChild(el("span", { className: "detail", text: " · " + detail.join(" · ") }));
    if (c.x) li.appendChild(el("div", { className: "detail explanation", text: c.x }));
    if (c.ev.length) {
      var ev = el("ul", { className: "evidence" });
      c.ev.forEach(function (e) { ev.appendChild(el("li", { text: e })); });
      li.appendChild(el("div", { className: "detail", text: "evidence:" }));
      li.appendChild(ev);
    }
    li.addEventListener("mouseenter", function () { highlight(i, true); });
    li.addEventListener("mouseleave", function () { highlight(i, false); });
    return li;
  }

  function highlight(index, on) {
    var marks = document.querySelectorAll("#sample-page .response mark");
    for (var k = 0; k < marks.length; k++) {
      var ids = marks[k].getAttribute("data-claims").split(" ");
      if (ids.indexOf(String(index)) >= 0) marks[k].classList.toggle("hl", on);
    }
  }

  function metaList(meta) {
    var keys = Object.keys(meta || {});
    if (!keys.length) return null;
    var dl = el("dl", { className: "meta" });
    keys.forEach(function (k) {
      var v = meta[k];
      dl.appendChild(el("dt", { text: k }));
      dl.appendChild(el("dd", { text: typeof v === "string" ? v : JSON.stringify(v, null, 1) }));
    });
    return el("details", null, el("summary", { text: "metadata" }), dl);
  }

  function showSample(runAt, id) {
    var s = (BY_ID[id] || []).filter(function (x) { return x.r === runAt; })[0];
    var page = document.getElementById("sample-page");
    page.textContent = "";
    document.getElementById("overview").hidden = true;
    page.hidden = false;
    if (!s) {
      var where = runAt >= 0 ? " in run " + RUNS[runAt].name : " (no such run)";
      page.appendChild(el("p", null, "No sample " + id + where + " in this report. ", el("a", { href: "#/samples", text: "Back to samples" })));
      return;
    }
    recompute();
    var pos = current.indexOf(s);
    var nav = el("div", { className: "nav" }, el("a", { href: "#/samples", text: "← all samples" }));
    if (pos >= 0) {
      if (pos > 0) nav.appendChild(el("a", { href: sampleHref(current[pos - 1]), id: "prev-sample", text: "‹ previous" }));
      nav.appendChild(el("span", { className: "muted", text: (pos + 1) + " of " + current.length + " shown" }));
      if (pos + 1 < current.length) nav.appendChild(el("a", { href: sampleHref(current[pos + 1]), id: "next-sample", text: "next ›" }));
    }
    var others = BY_ID[id].filter(function (x) { return x !== s; });
    if (others.length) {
      var links = el("span", { className: "others" }, "same sample in: ");
      others.forEach(function (o) { links.appendChild(el("a", { href: sampleHref(o), text: RUNS[o.r].label + " " })); });
      nav.appendChild(links);
    }
    page.appendChild(nav);
    var run = RUNS[s.r];
    page.appendChild(el("h2", null, "Sample ", el("span", { className: "sample-id", text: s.id })));
    page.appendChild(el("p", { className: "muted" }, runTag(s), " · " + run.benchmark + " · extractor " + run.extractor + " · judge " + run.judge + (s.iid ? " · image " + s.iid : "")));
    var left = el("div", { className: "left" });
    if (s.img && IMAGES[s.img]) left.appendChild(el("img", { className: "photo", src: IMAGES[s.img], alt: "image " + (s.iid || s.id) }));
    else left.appendChild(el("div", { className: "no-image", text: "image not embedded" }));
    if (s.v && s.v.k === "caption") left.appendChild(truthSection(s));
    else if (!s.v || s.sg) left.appendChild(sceneSection(s)); // benchmarks without scene graphs say nothing of one
    var right = el("div", { className: "right" });
    right.appendChild(el("h3", { text: "Question" }));
    right.appendChild(el("div", { className: "question box", text: s.q }));
    var refIsLabel = s.v && s.v.k === "yesno" && s.ref && s.v.label !== null && s.ref.trim().toLowerCase() === s.v.label.toLowerCase();
    if (s.ref && !refIsLabel) { // a yes/no item's label is shown with its reading
      right.appendChild(el("h3", { text: s.v && s.v.k === "yesno" ? "Reference" : "Ground-truth answer" }));
      right.appendChild(el("div", { className: "reference box", text: s.ref }));
    }
    right.appendChild(el("h3", null, "Response ", countChips(s)));
    if (s.f) right.appendChild(el("div", { className: "failure", text: "failed: " + s.f }));
    var response = s.v && s.v.k === "caption" ? renderCaption(s) : renderResponse(s);
    response.className += " box";
    right.appendChild(response);
    if (s.v && s.v.k === "caption") right.appendChild(captionSection(s));
    else if (s.v && s.v.k === "yesno") right.appendChild(yesNoSection(s));
    else if (s.v && s.v.k === "answer") right.appendChild(answerSection(s));
    if (!s.v) {
      add(right, answerLine(s));
      right.appendChild(el("h3", { text: "Claims (" + s.c.length + ")" + (s.src ? " · " + s.src : "") }));
      var list = el("ol", { className: "claims" });
      s.c.forEach(function (c, i) { list.appendChild(claimItem(s, c, i)); });
      if (!s.c.length) list.appendChild(el("li", { className: "muted", text: "no claims" }));
      right.appendChild(list);
    }
    add(right, metaList(s.meta));
    page.appendChild(el("div", { className: "sample-grid" }, left, right));
    window.scrollTo(0, 0);
  }

  // -- routing: #/ overview, #/samples?run=N, #/sample/<run>/<id> --------------------------------------
  function route() {
    var hash = location.hash || "";
    var m = /^#\/sample\/([^\/]+)\/(.*)$/.exec(hash);
    if (m) { showSample(runIndex(m[1]), decodeURIComponent(m[2])); return; }
    document.getElementById("sample-page").hidden = true;
    document.getElementById("overview").hidden = false;
    var r = /^#\/samples\?run=([^&]+)/.exec(hash);
    var chosen = r ? String(runIndex(r[1])) : null;
    if (chosen && chosen !== "-1" && state.run !== chosen) { state.run = chosen; state.page = 0; buildControls(); refresh(); }
    var anchor = /^#([a-z-]+)$/.exec(hash);
    if (hash.indexOf("#/samples") === 0) document.getElementById("samples").scrollIntoView();
    else if (anchor && document.getElementById(anchor[1])) document.getElementById(anchor[1]).scrollIntoView();
    else if (hash === "#/") window.scrollTo(0, 0);
  }

  document.addEventListener("keydown", function (event) {
    if (document.getElementById("sample-page").hidden || event.target.tagName === "INPUT") return;
    var link = document.getElementById(event.key === "ArrowLeft" ? "prev-sample" : event.key === "ArrowRight" ? "next-sample" : "");
    if (link) location.hash = link.getAttribute("href");
  });

  buildControls();
  refresh();
  window.addEventListener("hashchange", route);
  route();
  window.hsTiming = { parseMs: tParsed - t0, renderMs: performance.now() - t0, readyAt: performance.now() };
  document.documentElement.setAttribute("data-hs-ready", "1");
})();
