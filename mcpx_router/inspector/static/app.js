// The mcpx-router inspector page: plain DOM, no dependencies, no network access beyond this app.
"use strict";

const $ = (sel) => document.querySelector(sel);
const state = { overview: null, model: null, names: null, events: [], calls: [], readOnly: false };
const MAX_ROWS = 500;
const PAGE = 500;  // a long list shows this many items at a time
const JSON_PAGE = 100;  // tools per page of the model's exact JSON
const CHART_SECONDS = 300;
const CHART_BUCKET = 1;  // seconds of calls drawn as one point per peer (their slowest)
const OVERVIEW_EVERY_MS = 1000;  // events ask for the overview again at most this often
const EVENTS_EVERY_MS = 250;  // the event table is drawn again at most this often
const COLOURS = ["#0b5cad", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7b83", "#57606a"];

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

async function api(path, options = {}) {
  const response = await fetch(path, { credentials: "same-origin", ...options });
  const text = await response.text();
  let body;
  try { body = JSON.parse(text); } catch { body = { error: text.trim() }; }
  if (!response.ok) throw new Error(body.error || `${response.status}`);
  return body;
}

function setStatus(text) { $("#status").textContent = text; }
const fmtMs = (ms) => (ms === null || ms === undefined ? "–" : ms < 10 ? ms.toFixed(2) + " ms" : Math.round(ms) + " ms");

// -- tabs ----------------------------------------------------------------------------------

function selectTab(tab) {
  for (const other of document.querySelectorAll('[role="tab"]')) {
    const chosen = other === tab;
    other.setAttribute("aria-selected", String(chosen));
    other.tabIndex = chosen ? 0 : -1;
    document.getElementById(other.getAttribute("aria-controls")).hidden = !chosen;
  }
  const view = state.overview;
  if (tab.id === "tab-model" && (!state.model || !view || state.model.version !== view.version)) loadModel();
  if (tab.id === "tab-events") { renderEvents(true); drawChart(); }
}

function setupTabs() {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  tabs.forEach((tab, i) => {
    tab.addEventListener("click", () => selectTab(tab));
    tab.addEventListener("keydown", (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (!step) return;
      const next = tabs[(i + step + tabs.length) % tabs.length];
      next.focus();
      selectTab(next);
    });
  });
}

// -- 1. peers ------------------------------------------------------------------------------

let overviewBusy = false;
let overviewAgain = false;
let overviewAt = 0;
let toolsVersion = null;
async function loadOverview() {
  if (overviewBusy) { overviewAgain = true; return; }  // one request at a time; one more after it
  overviewBusy = true;
  try {
    state.overview = await api("api/overview");
  } catch (error) {
    setStatus(`cannot read the router: ${error.message}`);
    return;
  } finally {
    overviewBusy = false;
    overviewAt = performance.now();
    if (overviewAgain) { overviewAgain = false; refreshSoon(); }
  }
  const view = state.overview;
  state.readOnly = view.read_only;
  $("#read-only-note").hidden = !view.read_only;
  $("#call-send").disabled = view.read_only;
  $("#stats-note").hidden = view.stats_kept;
  renderPeers(view);
  renderTopic(view.topic);
  if (toolsVersion !== view.version) {  // the catalogue changed: the tool picker, and the model's view if shown
    toolsVersion = view.version;
    const names = view.peers.flatMap((p) => p.tools.map((t) => t.name));
    $("#call-tools").replaceChildren(...names.map((name) => el("option", { value: name })));
  }
  if (!$("#model").hidden && state.model && state.model.version !== view.version) loadModel();
}

function metric(label, value) { return el("div", {}, el("span", { text: label }), value); }

const openSections = new Set();
const builtSections = new Map();  // key -> { stamp, node }: a body reused while its content is the same

// A list of many items, PAGE at a time, with a button for the next page.
function paged(tag, items, render) {
  const list = el(tag, {});
  const more = el("button", { type: "button" });
  let shown = 0;
  const next = () => {
    list.append(...items.slice(shown, shown + PAGE).map(render));
    shown = Math.min(items.length, shown + PAGE);
    more.textContent = `show ${Math.min(PAGE, items.length - shown)} more (${shown} of ${items.length} shown)`;
    more.hidden = shown >= items.length;
  };
  more.addEventListener("click", next);
  next();
  return el("div", {}, list, more);
}

// A <details> whose body is built only while it is open (a peer may have thousands of tools),
// which stays open across the page's refreshes, and whose body is built again only when `stamp` changes.
function section(key, summary, build, { open = false, class: kind = null, stamp = null } = {}) {
  const details = el("details", {}, el("summary", { text: summary, class: kind }));
  const fill = () => {
    if (!details.open || details.children.length !== 1) return;
    const mark = stamp === null ? null : stamp();
    const kept = builtSections.get(key);
    const body = kept && mark !== null && kept.stamp === mark ? kept.node : build();
    builtSections.set(key, { stamp: mark, node: body });
    details.append(body);
  };
  if (openSections.has(key) || (open && !openSections.has(`closed:${key}`))) details.open = true;
  details.addEventListener("toggle", () => {
    if (details.open) { openSections.add(key); openSections.delete(`closed:${key}`); }
    else { openSections.delete(key); openSections.add(`closed:${key}`); }
    fill();
  });
  fill();
  return details;
}

// A peer's statistics, the part of its card that changes with every call.
function peerLive(peer) {
  const stats = peer.stats;
  const errors = stats ? Object.values(stats.errors).reduce((a, b) => a + b, 0) : null;
  return el("div", {},
    el("div", { class: "metrics" },
      metric("tools", String(peer.tools.length)),
      metric("calls", stats ? String(stats.calls) : "–"),
      metric("errors", errors === null ? "–" : String(errors)),
      metric("p50", fmtMs(stats && stats.p50_ms)),
      metric("p95", fmtMs(stats && stats.p95_ms)),
      metric("running", stats ? String(stats.outstanding) : "–"),
      metric("reputation", stats ? stats.score.toFixed(2) + (stats.healthy ? "" : " (unhealthy)") : "–")),
    stats && stats.last_failure
      ? el("p", { class: "error", text: `last failure (${stats.last_failure.kind}): ${stats.last_failure.message}` }) : null);
}

// Cards kept while a peer's state and lists are the same: a refresh then swaps only its statistics.
const peerCards = new Map();  // peer id -> { sig, card, live }

function renderPeers(view) {
  const cards = view.peers.map((peer) => {
    const sig = JSON.stringify({ ...peer, stats: null });
    const kept = peerCards.get(peer.id);
    const live = peerLive(peer);
    if (kept && kept.sig === sig) {
      kept.live.replaceWith(live);
      kept.live = live;
      return kept.card;
    }
    const held = Object.entries(peer.held_back);
    const key = (what) => `${peer.id}\u0000${what}`;
    const card = el("article", { class: "peer", "data-peer": peer.id, "aria-label": `peer ${peer.id}` },
      el("h3", {}, peer.id,
        el("span", { class: `badge state-${peer.state}`, text: peer.state }),
        el("span", { class: "muted", text: `${peer.transport.kind}: ${peer.transport.detail}` })),
      peer.last_error && peer.state !== "connected"
        ? el("p", { class: "error", text: `${peer.last_error} (failed attempts: ${peer.attempts})` }) : null,
      live,
      section(key("tools"), `tools (${peer.tools.length})`, () => paged("ul", peer.tools, (t) => el("li", {},
        el("code", { text: t.name }),
        t.name !== t.tool ? el("span", { class: "muted", text: ` (${t.tool})` }) : null,
        t.strict ? el("span", { class: "muted", text: " strict" }) : null)), { stamp: () => JSON.stringify(peer.tools) }),
      held.length ? section(key("held"), `held back (${held.length})`,
        () => paged("ul", held, ([tool, why]) => el("li", {}, el("code", { text: tool }), `: ${why}`)),
        { open: true, class: "error", stamp: () => JSON.stringify(held) }) : null,
      peer.prompts.length ? section(key("prompts"), `prompts (${peer.prompts.length})`,
        () => paged("ul", peer.prompts, (p) => el("li", {}, el("code", { text: p.name }), ` ${p.description}`)),
        { stamp: () => JSON.stringify(peer.prompts) }) : null,
      peer.resources.length ? section(key("resources"), `resources (${peer.resources.length})`,
        () => paged("ul", peer.resources, (r) => el("li", {}, el("code", { text: r.uri }), ` ${r.description}`)),
        { stamp: () => JSON.stringify(peer.resources) }) : null);
    peerCards.set(peer.id, { sig, card, live });
    return card;
  });
  for (const id of [...peerCards.keys()]) if (!view.peers.some((p) => p.id === id)) peerCards.delete(id);
  const list = $("#peer-list");
  const now = [...list.children];
  if (now.length !== cards.length || now.some((node, i) => node !== cards[i])) {
    list.replaceChildren(...(cards.length ? cards : [el("p", { class: "muted", text: "no peers" })]));
  }
}

function renderTopic(topic) {
  $("#topic").hidden = !topic;
  if (!topic) return;
  $("#topic-body").replaceChildren(
    el("p", {}, `${topic.topic} at ${[].concat(topic.gateway).join(", ")} as `, el("code", { text: topic.participant_id }),
      el("span", { class: `badge state-${topic.connected ? "connected" : "reconnecting"}`,
        text: topic.connected ? "connected" : "disconnected" })),
    el("table", {}, el("thead", {}, el("tr", {}, ["participant", "kind", "peer"].map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, topic.present.map((p) => el("tr", {}, el("td", { text: p.id }), el("td", { text: p.kind || "" }),
        el("td", { text: p.peer ? "yes" : (topic.skipped[p.id] || "no") }))))));
}

// -- 2. the model's view -------------------------------------------------------------------

let modelBusy = false;
async function loadModel() {
  if (modelBusy) return;
  modelBusy = true;
  try {
    [state.model, state.names] = await Promise.all([api("api/model"), api("api/names")]);
  } catch (error) { setStatus(`cannot read the tool lists: ${error.message}`); return; } finally { modelBusy = false; }
  renderModel();
  renderNames();
}

function renderModel() {
  const view = state.model.formats[$("#format").value];
  $("#model-size").textContent = `${view.count} tools, ${view.chars.toLocaleString()} characters, about ` +
    `${view.tokens.toLocaleString()} tokens (1 per ${state.model.chars_per_token} characters); ` +
    `${state.model.strict} strict; catalogue version ${state.model.version}`;
  const reasons = Object.entries(state.model.not_strict);
  $("#not-strict").replaceChildren(...(reasons.length ? [el("details", {},
    el("summary", { text: `offered without strict mode (${reasons.length})` }),
    el("ul", {}, reasons.map(([name, why]) => el("li", {}, el("code", { text: name }), `: ${why.join("; ")}`))))] : []));
  jsonPage = 0;
  if ($("#model-json-box").open) showJson();
}

// The exact JSON, JSON_PAGE tools at a time: the whole of 5,000 tools is megabytes of text.
let jsonPage = 0;
function showJson() {
  if (!state.model) return;
  const tools = state.model.formats[$("#format").value].tools;
  const pages = Math.max(1, Math.ceil(tools.length / JSON_PAGE));
  jsonPage = Math.max(0, Math.min(jsonPage, pages - 1));
  const from = jsonPage * JSON_PAGE;
  const to = Math.min(tools.length, from + JSON_PAGE);
  $("#model-json").textContent = JSON.stringify(pages > 1 ? tools.slice(from, to) : tools, null, 2);
  $("#json-pages").hidden = pages <= 1;
  $("#json-range").textContent = `tools ${from + 1}–${to} of ${tools.length}`;
  $("#json-prev").disabled = jsonPage === 0;
  $("#json-next").disabled = jsonPage >= pages - 1;
}

function renderNames() {
  const filter = $("#names-filter").value.trim().toLowerCase();
  const rows = state.names.tools.filter((r) => !filter ||
    [r.name, r.peer, r.tool].some((s) => s.toLowerCase().includes(filter)));
  $("#names-count").textContent = `${rows.length} of ${state.names.tools.length}` +
    (rows.length > PAGE ? `, the first ${PAGE} shown: filter to see others` : "");
  $("#names-table tbody").replaceChildren(...rows.slice(0, PAGE).map((r) => el("tr", {},
    el("td", { class: "mono", text: r.name }), el("td", { text: r.peer }), el("td", { class: "mono", text: r.tool }),
    el("td", { text: r.strict ? "yes" : "no" }), el("td", { text: r.groups.join(", ") }))));
  const groups = state.names.groups;
  $("#groups").replaceChildren(...(groups.length ? [el("h2", { text: "Groups" }), el("table", {},
    el("thead", {}, el("tr", {}, ["group", "published", "members"].map((h) => el("th", { scope: "col", text: h })))),
    el("tbody", {}, groups.map((g) => el("tr", {}, el("td", { class: "mono", text: g.name }),
      el("td", { text: g.published ? "yes" : `no: ${g.reason}` }),
      el("td", { text: g.members.map((m) => m.name || `${m.peer}/${m.tool}`).join(", ") })))))] : []));
}

async function rank(event) {
  event.preventDefault();
  const params = new URLSearchParams({ q: $("#select-q").value });
  if ($("#select-max").value) params.set("max_tools", $("#select-max").value);
  let result;
  try { result = await api(`api/select?${params}`); } catch (error) {
    $("#select-result").replaceChildren(el("p", { class: "error", text: error.message })); return;
  }
  $("#select-result").replaceChildren(
    el("p", { text: `${result.offered} of ${result.total} tools offered (max_tools ${result.max_tools ?? "none"}); ` +
      `tool search (${result.tool_search.name}) finds: ${result.tool_search.found.join(", ") || "nothing"}` }),
    el("table", { id: "ranked" }, el("thead", {}, el("tr", {}, ["#", "tool", "peer", "score", "offered"].map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, result.ranked.map((r) => el("tr", { class: r.offered ? "offered" : "" },
        el("td", { text: r.rank }), el("td", { class: "mono", text: r.name }), el("td", { text: r.peer }),
        el("td", { text: r.score.toFixed(4) }), el("td", { text: r.offered ? "yes" : "" }))))));
}

// -- 3. try a call: a form from the tool's input schema -------------------------------------

function resolveRef(schema, root, depth = 0) {
  while (schema && typeof schema.$ref === "string" && schema.$ref.startsWith("#/") && depth++ < 20) {
    let node = root;
    for (const part of schema.$ref.slice(2).split("/")) node = node && node[part.replace(/~1/g, "/").replace(/~0/g, "~")];
    schema = node || {};
  }
  for (const key of ["anyOf", "oneOf"]) {
    if (schema && Array.isArray(schema[key])) {
      const usable = schema[key].filter((s) => s && s.type !== "null");
      if (usable.length === 1) return { ...resolveRef(usable[0], root, depth + 1), description: schema.description, default: schema.default };
    }
  }
  return schema || {};
}

let fieldIds = 0;
function buildField(name, raw, root, required, onChange) {
  const schema = resolveRef(raw, root);
  const id = `f${++fieldIds}`;
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  const hint = [schema.description, schema.default !== undefined ? `default: ${JSON.stringify(schema.default)}` : null,
    required ? "required" : null].filter(Boolean).join(" · ");
  const label = el("label", { for: id, text: name });
  const small = hint ? el("small", { id: `${id}-hint`, text: hint }) : null;
  const described = hint ? `${id}-hint` : null;
  if (type === "object" && schema.properties) {
    const needed = new Set(schema.required || []);
    const children = Object.entries(schema.properties).map(([key, sub]) => [key, buildField(key, sub, root, needed.has(key), onChange)]);
    return {
      node: el("fieldset", {}, el("legend", { text: name }), small, children.map(([, f]) => f.node)),
      get() {
        const out = {};
        for (const [key, field] of children) { const v = field.get(); if (v !== undefined) out[key] = v; }
        return Object.keys(out).length || required ? out : undefined;
      },
    };
  }
  if (type === "array" && schema.items && !Array.isArray(schema.items)) {
    const items = [];
    const list = el("div", {});
    const add = () => {
      const field = buildField(`${name}[${items.length}]`, schema.items, root, true, onChange);
      const row = el("div", {}, field.node, el("button", { type: "button", text: "remove", onclick: () => {
        items.splice(items.indexOf(entry), 1); row.remove(); onChange();
      } }));
      const entry = { field, row };
      items.push(entry); list.append(row); onChange();
    };
    return {
      node: el("fieldset", {}, el("legend", { text: name }), small, list,
        el("button", { type: "button", text: `add ${name} item`, onclick: add })),
      get() { return items.length || required ? items.map((e) => e.field.get()) : undefined; },
    };
  }
  let input;
  let read;
  if (Array.isArray(schema.enum)) {
    input = el("select", { id, "aria-describedby": described },
      required ? null : el("option", { value: "", text: "(not set)" }),
      schema.enum.map((v, i) => el("option", { value: String(i), text: JSON.stringify(v), selected: JSON.stringify(v) === JSON.stringify(schema.default) })));
    read = () => (input.value === "" ? undefined : schema.enum[Number(input.value)]);
  } else if (type === "boolean") {
    input = el("select", { id, "aria-describedby": described }, required ? null : el("option", { value: "", text: "(not set)" }),
      el("option", { value: "true", text: "true", selected: schema.default === true }),
      el("option", { value: "false", text: "false", selected: schema.default === false }));
    read = () => (input.value === "" ? undefined : input.value === "true");
  } else if (type === "integer" || type === "number") {
    input = el("input", { id, type: "number", step: type === "integer" ? "1" : "any", "aria-describedby": described,
      placeholder: schema.default !== undefined ? String(schema.default) : null, min: schema.minimum, max: schema.maximum });
    read = () => (input.value === "" ? undefined : Number(input.value));
  } else if (type === "string") {
    input = el("input", { id, type: "text", "aria-describedby": described,
      placeholder: schema.default !== undefined ? String(schema.default) : schema.format || null });
    read = () => (input.value === "" && !required ? undefined : input.value);
  } else {
    input = el("textarea", { id, rows: "3", "aria-describedby": described, placeholder: "JSON" });
    read = () => { if (input.value.trim() === "") return undefined; try { return JSON.parse(input.value); } catch { return input.value; } };
  }
  if (required) input.setAttribute("aria-required", "true");
  input.addEventListener("input", onChange);
  input.addEventListener("change", onChange);
  return { node: el("div", { class: "field" }, label, input, small), get: read };
}

let currentForm = null;
let formLoading = null;
async function loadForm() {
  const name = $("#call-tool").value.trim();
  // The input's change and the button both ask: build a tool's form once, not over what was typed.
  if (!name || formLoading === name || (currentForm && currentForm.tool === name)) return;
  formLoading = name;
  let tool;
  try { tool = await api(`api/tool?name=${encodeURIComponent(name)}`); } catch (error) {
    $("#call-description").textContent = error.message; return;
  } finally {
    if (formLoading === name) formLoading = null;
  }
  if ($("#call-tool").value.trim() !== name) return;  // another tool was picked meanwhile
  $("#call-description").textContent = `${tool.peer ? `${tool.peer} / ${tool.tool}` : "group"}: ${tool.description}`;
  const schema = tool.input_schema || {};
  const sync = () => { if (currentForm) $("#call-json").value = JSON.stringify(currentForm.get() || {}, null, 2); };
  currentForm = buildField(tool.name, { ...schema, type: "object", properties: schema.properties || {} }, schema, true, sync);
  currentForm.tool = tool.name;
  $("#call-fields").replaceChildren(currentForm.node);
  sync();
}

async function sendCall(event) {
  event.preventDefault();
  const name = currentForm ? currentForm.tool : $("#call-tool").value.trim();
  let args;
  try { args = JSON.parse($("#call-json").value || "{}"); } catch (error) {
    $("#call-model").replaceChildren(el("p", { class: "error", text: `the arguments are not JSON: ${error.message}` })); return;
  }
  $("#call-model").replaceChildren(el("p", { class: "muted", text: `calling ${name}…` }));
  let answer;
  try {
    answer = await api("api/call", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name, arguments: args }) });
  } catch (error) { $("#call-model").replaceChildren(el("p", { class: "error", text: error.message })); return; }
  const model = answer.model;
  $("#call-model").replaceChildren(
    el("p", { class: model.is_error ? "error" : "muted",
      text: `${model.is_error ? `error (${model.error_type})` : "answered"} in ${fmtMs(answer.ms)}` +
        (answer.peer ? ` by ${answer.peer}` : "") }),
    el("pre", { id: "call-text", tabindex: "0", text: model.text }),
    model.images.map((img, i) => el("img", { class: "result", alt: `image ${i + 1} of the result`, src: `data:${img.mime};base64,${img.data}` })));
  $("#call-raw").textContent = answer.raw ? JSON.stringify(answer.raw, null, 2) : "(no result: the peer did not answer)";
  loadOverview();
}

// -- 4. events and the latency chart -------------------------------------------------------

const KINDS = { PeerJoined: "membership", PeerLeft: "membership", ToolsChanged: "tools", ContentChanged: "tools",
  GroupChanged: "tools", HealthChanged: "health", CallFinished: "calls", TryCall: "calls", CallProgress: "calls",
  GroupFailover: "calls" };

function describe(e) {
  switch (e.type) {
    case "PeerJoined": return `joined with ${e.tools.length} tools`;
    case "PeerLeft": return `left: ${e.reason}`;
    case "ToolsChanged": return `+${e.added.length} −${e.removed.length} ~${e.updated.length}: ${[...e.added, ...e.removed, ...e.updated].join(", ")}`;
    case "HealthChanged": return e.healthy ? "back: tools published again" : `lost (attempt ${e.attempt}): ${e.error || ""}`;
    case "CallFinished": return `${e.tool} ${e.error_type ? `failed (${e.error_type})` : "ok"} in ${fmtMs(e.ms)}`;
    case "TryCall": return `${e.name} (from this page) ${e.error_type ? `failed (${e.error_type})` : "ok"} in ${fmtMs(e.ms)}`;
    case "Dropped": return `${e.count} events not shown: this page read too slowly`;
    default: return JSON.stringify(e);
  }
}

function eventFilter() {
  const kinds = new Set([...document.querySelectorAll("#event-filter input[type=checkbox][value]:checked")].map((i) => i.value));
  const peer = $("#event-peer").value.trim().toLowerCase();
  const errorsOnly = $("#event-errors").checked;
  return (e) => passes(e, kinds, peer, errorsOnly);
}

function passes(e, kinds, peer, errorsOnly) {
  if (!kinds.has(KINDS[e.type] || "other")) return false;
  if (peer && !String(e.peer || e.group || "").toLowerCase().includes(peer)) return false;
  if (errorsOnly && !(e.error_type || e.type === "PeerLeft" || (e.type === "HealthChanged" && !e.healthy))) return false;
  return true;
}

const rows = new WeakMap();  // event -> its table row, built once
function row(e) {
  if (!rows.has(e)) rows.set(e, newRow(e));
  return rows.get(e);
}

function newRow(e) {
  return el("tr", { "data-type": e.type, class: e.error_type || e.type === "Dropped" ? "error" : "" },
    el("td", { text: new Date(e.at * 1000).toLocaleTimeString() }), el("td", { text: e.type }),
    el("td", { text: e.peer || e.group || "" }), el("td", { text: describe(e) }));
}

let eventsTimer = null;
function renderEventsSoon() {
  if (!eventsTimer) eventsTimer = setTimeout(() => { eventsTimer = null; renderEvents(false); }, EVENTS_EVERY_MS);
}

// The table, newest first: drawn whole when the filter or the tab changes, else the new events
// put on top and the oldest rows taken off (a table of MAX_ROWS rows laid out again costs more).
let eventsDrawn = 0;  // the sequence number of the newest event the table has considered
function renderEvents(whole = true) {
  const body = $("#event-table tbody");
  const fresh = state.events.filter((e) => whole || e.seq > eventsDrawn).filter(eventFilter());
  const rows = fresh.slice(-MAX_ROWS).reverse().map(row);
  if (whole) body.replaceChildren(...rows);
  else if (rows.length) {
    body.prepend(...rows);
    for (let extra = body.rows.length - MAX_ROWS; extra > 0; extra--) body.lastElementChild.remove();
  }
  eventsDrawn = state.events.length ? state.events[state.events.length - 1].seq : eventsDrawn;
  $("#event-count").textContent = `${body.rows.length} shown of ${state.events.length} kept`;
}

// Each peer's calls in CHART_BUCKET-second buckets: [{ at, ms (the slowest), n }], oldest first.
function buckets(calls) {
  const byPeer = new Map();
  for (const c of calls) {
    if (!byPeer.has(c.peer)) byPeer.set(c.peer, new Map());
    const slots = byPeer.get(c.peer);
    const slot = Math.floor(c.at / CHART_BUCKET);
    const b = slots.get(slot);
    if (!b) slots.set(slot, { at: c.at, ms: c.ms, n: 1 });
    else { b.n += 1; if (c.ms > b.ms) { b.ms = c.ms; b.at = c.at; } }
  }
  return byPeer;
}

let chartPending = false;
let chartAt = 0;
function drawChart() {
  if (chartPending) return;
  chartPending = true;
  const wait = Math.max(0, 500 - (performance.now() - chartAt));
  setTimeout(() => requestAnimationFrame(() => {
    chartPending = false;
    chartAt = performance.now();
    const now = Date.now() / 1000;
    state.calls = state.calls.filter((c) => c.at > now - CHART_SECONDS);
    const byPeer = buckets(state.calls);
    const peers = [...byPeer.keys()].sort();
    const max = state.calls.reduce((m, c) => Math.max(m, c.ms), 1);
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 1000 220");
    svg.setAttribute("preserveAspectRatio", "none");
    const y = (ms) => 210 - (ms / max) * 200;
    const x = (at) => 40 + ((at - (now - CHART_SECONDS)) / CHART_SECONDS) * 950;
    const axis = document.createElementNS(ns, "text");
    axis.setAttribute("x", "2"); axis.setAttribute("y", "14"); axis.setAttribute("font-size", "12");
    axis.setAttribute("fill", "currentColor"); axis.textContent = fmtMs(max);
    svg.append(axis);
    peers.forEach((peer, i) => {
      const line = document.createElementNS(ns, "polyline");
      line.setAttribute("fill", "none");
      line.setAttribute("stroke", COLOURS[i % COLOURS.length]);
      line.setAttribute("stroke-width", "2");
      const points = [...byPeer.get(peer).values()];
      line.setAttribute("points", points.map((c) => `${x(c.at).toFixed(1)},${y(c.ms).toFixed(1)}`).join(" "));
      svg.append(line);
      for (const c of points) {
        const dot = document.createElementNS(ns, "circle");
        dot.setAttribute("cx", x(c.at).toFixed(1));
        dot.setAttribute("cy", y(c.ms).toFixed(1));
        dot.setAttribute("r", "3");
        dot.setAttribute("fill", COLOURS[i % COLOURS.length]);
        const title = document.createElementNS(ns, "title");
        title.textContent = `${peer}: ${fmtMs(c.ms)} at ${new Date(c.at * 1000).toLocaleTimeString()}` +
          (c.n > 1 ? ` (the slowest of ${c.n} calls in that second)` : "");
        dot.append(title);
        svg.append(dot);
      }
    });
    for (const [label, at] of [[`−${CHART_SECONDS / 60} min`, now - CHART_SECONDS], ["now", now]]) {
      const tick = document.createElementNS(ns, "text");
      tick.setAttribute("x", String(Math.min(x(at), 965)));
      tick.setAttribute("y", "218");
      tick.setAttribute("font-size", "11");
      tick.setAttribute("fill", "currentColor");
      tick.textContent = label;
      svg.append(tick);
    }
    $("#chart").replaceChildren(svg);
    $("#chart").setAttribute("aria-label", `call latency per peer over the last ${CHART_SECONDS / 60} minutes; ` +
      `${state.calls.length} calls; highest ${fmtMs(max)}`);
    $("#legend").replaceChildren(...peers.map((peer, i) => {
      const calls = [...byPeer.get(peer).values()].reduce((n, b) => n + b.n, 0);
      const swatch = el("span", { text: `■ ${peer} (${calls} ${calls === 1 ? "call" : "calls"})` });
      swatch.style.color = COLOURS[i % COLOURS.length];
      return swatch;
    }));
  }), wait);
}

let refreshTimer = null;
function refreshSoon() {
  if (refreshTimer) return;
  const wait = Math.max(300, OVERVIEW_EVERY_MS - (performance.now() - overviewAt));
  refreshTimer = setTimeout(() => { refreshTimer = null; loadOverview(); }, wait);
}

let eventCount = 0;
function listen() {
  const source = new EventSource("api/events?since=0");
  source.addEventListener("hello", () => setStatus("live"));
  source.onmessage = (message) => {
    const e = JSON.parse(message.data);
    e.seq = ++eventCount;
    state.events.push(e);
    if (state.events.length > 5000) state.events.splice(0, state.events.length - 5000);
    // With statistics kept, a call from the page is a CallFinished too: draw it once.
    const drawn = e.type === "CallFinished" || (e.type === "TryCall" && !(state.overview && state.overview.stats_kept));
    if (drawn && e.peer) {
      state.calls.push({ at: e.at, peer: e.peer, ms: e.ms });
      if (!$("#events").hidden) drawChart();
    }
    if (!["CallProgress", "TryCall"].includes(e.type)) refreshSoon();
    if (!$("#events").hidden) renderEventsSoon();
  };
  source.onerror = () => setStatus("disconnected: reconnecting…");
}

document.addEventListener("DOMContentLoaded", () => {
  setupTabs();
  $("#format").addEventListener("change", renderModel);
  $("#model-json-box").addEventListener("toggle", () => { if ($("#model-json-box").open) showJson(); });
  $("#json-prev").addEventListener("click", () => { jsonPage -= 1; showJson(); });
  $("#json-next").addEventListener("click", () => { jsonPage += 1; showJson(); });
  $("#names-filter").addEventListener("input", renderNames);
  $("#select-form").addEventListener("submit", rank);
  $("#call-load").addEventListener("click", loadForm);
  $("#call-tool").addEventListener("change", loadForm);
  $("#call-form").addEventListener("submit", sendCall);
  for (const input of document.querySelectorAll("#event-filter input")) input.addEventListener("input", () => renderEvents(true));
  document.querySelector('[role="tab"]').addEventListener("click", loadOverview);
  loadOverview();
  listen();
  setInterval(loadOverview, 5000);
});
