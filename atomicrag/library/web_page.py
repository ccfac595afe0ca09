"""The page ``GET /`` of the index server: a query box, the answer with its numbered sources, the
evidence atoms, and the sub-graph that led to them drawn as SVG (question entities, the entities
the atoms contain, the atoms, and the graph's edges among them).

One self-contained document: no CDN, no fonts or scripts from elsewhere (the server may run with
no network), every value from the index put in with ``textContent`` (never parsed as HTML).
``/?q=question`` asks at once (a link to an answer; the browser test uses it). With a token the
page asks for it once (kept in the tab's ``sessionStorage``) and sends it as a bearer token.
"""

PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>atomicrag</title>
<style>
  :root { --ink: #1d2330; --muted: #5b6475; --line: #d8dde6; --accent: #2454c5; --bg: #f7f8fa; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
         background: var(--bg); }
  header { padding: 14px 24px; background: #fff; border-bottom: 1px solid var(--line); display: flex;
           align-items: baseline; gap: 16px; }
  header h1 { margin: 0; font-size: 20px; }
  header span { color: var(--muted); font-size: 13px; }
  main { max-width: 1100px; margin: 0 auto; padding: 18px 24px 40px; }
  form { display: flex; gap: 10px; align-items: center; }
  #q { flex: 1; padding: 10px 12px; font-size: 16px; border: 1px solid var(--line); border-radius: 6px; }
  button { padding: 10px 18px; font-size: 15px; border: 0; border-radius: 6px; background: var(--accent);
           color: #fff; cursor: pointer; }
  label.small { color: var(--muted); font-size: 13px; }
  #auth { margin-top: 10px; }
  #status { color: var(--muted); min-height: 1.4em; }
  #status[data-state=error] { color: #b3261e; }
  section.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 18px;
                 margin-top: 14px; }
  h2 { font-size: 15px; margin: 0 0 8px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
  #asked { color: var(--muted); margin: 0; }
  #answer-text { font-size: 18px; margin: 4px 0 10px; }
  #answer-text a { color: var(--accent); text-decoration: none; font-size: 13px; vertical-align: super; }
  #sources { margin: 0; padding-left: 0; list-style: none; }
  #sources li { margin: 2px 0; }
  #sources .how { color: var(--muted); font-size: 12px; }
  #errors { color: #b3261e; }
  table { border-collapse: collapse; width: 100%; }
  td, th { text-align: left; vertical-align: top; padding: 6px 8px; border-top: 1px solid var(--line); }
  th { font-size: 12px; color: var(--muted); font-weight: 600; }
  td.rank { width: 32px; color: var(--muted); }
  tr.cited td:first-child { box-shadow: inset 3px 0 0 #e07b00; }
  td.rel { width: 90px; }
  .bar { height: 8px; background: var(--accent); border-radius: 4px; }
  td.doc { width: 150px; font-family: ui-monospace, monospace; font-size: 12px; }
  .ents { color: var(--muted); font-size: 12px; }
  #graph { width: 100%; height: auto; display: block; }
  #graph text { font-size: 12px; fill: var(--ink); paint-order: stroke; stroke: #fff; stroke-width: 3px; }
  #graph .col { font-size: 12px; fill: var(--muted); font-weight: 600; }
  .legend { color: var(--muted); font-size: 12px; }
  .legend i { display: inline-block; width: 18px; height: 0; border-top: 2px solid; margin: 0 4px 3px 10px; }
</style>
</head>
<body>
<header><h1>atomicrag</h1><span id="index-info"></span></header>
<main>
  <form id="ask">
    <input id="q" name="q" placeholder="Ask a question about the indexed documents" autocomplete="off" required>
    <label class="small"><input type="checkbox" id="want-answer" checked> answer</label>
    <button id="go" type="submit">Ask</button>
  </form>
  <div id="auth" hidden>
    <label class="small">This server needs its token:
      <input id="token" type="password" autocomplete="off" size="32"></label>
  </div>
  <p id="status" data-state="idle"></p>
  <section class="card" id="answer-card" hidden>
    <h2>Answer</h2>
    <p id="asked"></p>
    <p id="answer-text"></p>
    <ol id="sources"></ol>
    <ul id="errors"></ul>
  </section>
  <section class="card" id="evidence-card" hidden>
    <h2>Evidence atoms</h2>
    <table id="atoms"><thead><tr><th>#</th><th>relevance</th><th>atom</th><th>document</th></tr></thead>
      <tbody></tbody></table>
  </section>
  <section class="card" id="graph-card" hidden>
    <h2>The sub-graph that led there</h2>
    <svg id="graph" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="evidence graph"></svg>
    <p class="legend">edges: <i style="border-color:#9aa3b2"></i>containment (atom names entity)
      <i style="border-color:#e07b00;border-top-style:dashed"></i>synonym
      <i style="border-color:#2454c5"></i>relevance (triple)</p>
  </section>
</main>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const EDGE = { containment: ["#9aa3b2", ""], synonym: ["#e07b00", "5 4"], relevance: ["#2454c5", ""] };

function el(tag, attrs, text, ns) {
  const e = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}
function status(text, state) { $("status").textContent = text; $("status").dataset.state = state; }
function headers(json) {
  const h = json ? { "Content-Type": "application/json" } : {};
  const t = sessionStorage.getItem("atomicrag-token");
  if (t) h["Authorization"] = "Bearer " + t;
  return h;
}
function cut(s, n) { return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }

async function call(path, body) {
  const resp = await fetch(path, body === undefined ? { headers: headers(false) }
                                                     : { method: "POST", headers: headers(true), body: JSON.stringify(body) });
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  if (resp.status === 401) { $("auth").hidden = false; $("token").focus(); }
  if (!resp.ok) {
    const msg = data && data.error ? (data.error.message || data.error) : resp.statusText;
    throw new Error(resp.status + ": " + msg);
  }
  return data;
}

function renderAnswer(r) {
  $("asked").textContent = r.query;
  const p = $("answer-text"); p.replaceChildren();
  if (r.answer === null) { p.textContent = "(retrieval only: no reader is configured, or answer is off)"; }
  else {
    const text = r.cited_answer || r.answer || "(no answer)";
    for (const part of text.split(/(\[\d+\])/)) {
      const m = part.match(/^\[(\d+)\]$/);
      p.append(m ? el("a", { href: "#src-" + m[1], class: "mark" }, part) : document.createTextNode(part));
    }
  }
  const ol = $("sources"); ol.replaceChildren();
  for (const s of r.sources || []) {
    const li = el("li", { id: "src-" + s.n, class: "source" });
    li.append(el("strong", {}, "[" + s.n + "] "), el("code", {}, s.doc_id), document.createTextNode(s.title ? " \u2014 " + s.title : ""),
              el("span", { class: "how" }, " (" + (s.how === "retrieved" ? "read by the reader, not cited" : s.how) + ")"));
    ol.append(li);
  }
  const ul = $("errors"); ul.replaceChildren();
  for (const e of r.errors || []) ul.append(el("li", {}, e));
  $("answer-card").hidden = false;
}

function renderAtoms(r) {
  const body = $("atoms").tBodies[0]; body.replaceChildren();
  // the atoms whose lines the answer cites are marked (the reader's context numbers are its own)
  const cited = new Set((r.sources || []).filter((s) => s.how !== "retrieved")
    .flatMap((s) => s.context.flatMap((n) => (r.context[n - 1] || {}).atom_ids || [])));
  r.items.forEach((it, i) => {
    const tr = el("tr", { class: cited.has(it.atom_id) ? "atom cited" : "atom" });
    const bar = el("div", { class: "bar", style: "width:" + Math.round(80 * (it.relevance || 0)) + "px" });
    const rel = el("td", { class: "rel", title: "score " + it.score }); rel.append(bar);
    const text = el("td", {}, it.text);
    if (it.entity_names && it.entity_names.length) text.append(el("div", { class: "ents" }, it.entity_names.join(" \u00b7 ")));
    tr.append(el("td", { class: "rank" }, String(i + 1)), rel, text, el("td", { class: "doc" }, it.source_doc_ids.join(", ")));
    body.append(tr);
  });
  $("evidence-card").hidden = false;
}

function renderGraph(g) {
  const svg = $("graph"); svg.replaceChildren();
  if (!g || !g.nodes.length) { $("graph-card").hidden = true; return; }
  const atoms = g.nodes.filter((n) => n.kind === "atom");
  const seeds = g.nodes.filter((n) => n.kind === "entity" && n.seed);
  let others = g.nodes.filter((n) => n.kind === "entity" && !n.seed);
  // order the middle column by the mean rank of the atoms each entity is linked to (fewer crossings)
  const rank = Object.fromEntries(atoms.map((a) => [a.id, a.rank]));
  const mean = {};
  for (const n of others) {
    const rs = g.edges.filter((e) => e.source === n.id || e.target === n.id).map((e) => rank[e.source === n.id ? e.target : e.source]).filter((x) => x);
    mean[n.id] = rs.length ? rs.reduce((a, b) => a + b, 0) / rs.length : 1e9;
  }
  others = others.sort((a, b) => mean[a.id] - mean[b.id]);
  const cols = seeds.length ? [seeds, others, atoms] : [others, atoms];
  const xs = seeds.length ? [20, 250, 500] : [20, 380];
  const heads = seeds.length ? ["question entities", "entities", "atoms (rank)"] : ["entities", "atoms (rank)"];
  const row = 26, top = 40, width = 1040;
  const height = top + row * Math.max(...cols.map((c) => c.length)) + 10;
  svg.setAttribute("viewBox", "0 0 " + width + " " + height);
  const pos = {};
  cols.forEach((c, ci) => {
    const off = top + (row * (Math.max(...cols.map((k) => k.length)) - c.length)) / 2;
    c.forEach((n, i) => { pos[n.id] = [xs[ci], off + i * row + row / 2]; });
    svg.append(el("text", { x: xs[ci], y: 18, class: "col" }, heads[ci], SVG));
  });
  const edges = el("g", {}, null, SVG);
  for (const e of g.edges) {
    const a = pos[e.source], b = pos[e.target];
    if (!a || !b) continue;
    const [from, to] = a[0] <= b[0] ? [a, b] : [b, a];
    const [color, dash] = EDGE[e.type] || ["#999", ""];
    const x1 = from[0] + 8, x2 = to[0] - 8, mid = (x1 + x2) / 2;
    const d = from[0] === to[0]  // two entities of one column: an arc beside it
      ? `M${from[0]} ${from[1]} C${from[0] - 40} ${from[1]}, ${to[0] - 40} ${to[1]}, ${to[0]} ${to[1]}`
      : `M${x1} ${from[1]} C${mid} ${from[1]}, ${mid} ${to[1]}, ${x2} ${to[1]}`;
    const path = el("path", { d: d, fill: "none", stroke: color, "stroke-width": 1 + 2 * Math.min(1, e.weight || 0),
                              "stroke-dasharray": dash, "stroke-opacity": 0.8, class: "edge edge-" + e.type }, null, SVG);
    path.append(el("title", {}, e.type + " " + e.weight, SVG));
    edges.append(path);
  }
  svg.append(edges);
  for (const n of g.nodes) {
    const [x, y] = pos[n.id];
    const g1 = el("g", { class: "node node-" + n.kind + (n.seed ? " seed" : "") }, null, SVG);
    const fill = n.kind === "atom" ? "#2454c5" : n.seed ? "#e07b00" : "#5b6475";
    g1.append(n.kind === "atom" ? el("rect", { x: x - 6, y: y - 6, width: 12, height: 12, rx: 2, fill: fill }, null, SVG)
                                : el("circle", { cx: x, cy: y, r: 6, fill: fill }, null, SVG));
    const label = n.kind === "atom" ? n.rank + ". " + cut(n.label, 70) : cut(n.label, 30);
    g1.append(el("text", { x: x + 12, y: y + 4 }, label, SVG));
    g1.append(el("title", {}, n.kind === "atom" ? n.label + " [" + n.doc + "]" : n.label, SVG));
    svg.append(g1);
  }
  $("graph-card").hidden = false;
}

async function ask(q) {
  status("Asking\u2026", "busy");
  $("go").disabled = true;
  try {
    const body = { question: q, graph: true };
    if (!$("want-answer").checked) body.answer = false;
    const data = await call("/query", body);
    const r = data.results[0];
    renderAnswer(r); renderAtoms(r); renderGraph(r.subgraph);
    const u = data.usage || {};
    status(r.items.length + " atoms from " + (r.documents || []).length + " documents" +
           (u.total_tokens ? "; " + u.total_tokens + " LLM tokens" : ""), "done");
  } catch (err) {
    status(String(err.message || err), "error");
  } finally {
    $("go").disabled = false;
  }
}

$("ask").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const q = $("q").value.trim();
  if (!q) return;
  const url = new URL(location.href); url.searchParams.set("q", q); history.replaceState(null, "", url);
  ask(q);
});
$("token").addEventListener("change", () => {
  sessionStorage.setItem("atomicrag-token", $("token").value.trim());
  $("auth").hidden = true;
  loadInfo();
  if ($("q").value.trim()) ask($("q").value.trim());
});
async function loadInfo() {
  try {
    const h = await call("/health");
    $("index-info").textContent = h.documents + " documents \u00b7 " + (h.index || "in memory");
  } catch (err) { /* a token is asked for above; the status line says the rest on a query */ }
}
loadInfo();
const first = new URLSearchParams(location.search).get("q");
if (first) { $("q").value = first; ask(first); }
</script>
</body>
</html>
"""
