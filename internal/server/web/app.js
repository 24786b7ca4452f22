// cra's live board: a snapshot of the tasks (GET /api/tasks?view=card),
// then the world log over a WebSocket (GET /api/events?since=OFFSET&file=FILE).
// Every piece of data reaches the page through textContent or an
// attribute, never through innerHTML.
"use strict";

const COLUMNS = [
  ["pending", "Pending"],
  ["in-progress", "In progress"],
  ["completed", "Completed"],
  ["failed", "Failed"],
  ["completed-finalized", "Completed – Finalized"],
  ["failed-blocked", "Failed – Blocked"],
];
const PAGE = 50; // cards per column before "show more"

const state = {
  tasks: new Map(), // id → card
  next: 0, // the log offset the stream goes on from
  file: "", // the log file that offset is in: a compaction makes another
  settings: null,
  shown: Object.fromEntries(COLUMNS.map(([f]) => [f, PAGE])),
  dirty: new Set(),
  drawer: null, // id of the open task
  diff: null, // {key, view}: the drawer's diff of a branch, kept while it holds
  seq: new Map(), // id → the latest refresh asked for
  sigs: new Map(), // folder → what its column shows
  nodes: new Map(), // id → {key, node}: the card element and what it shows
  ws: null,
  backoff: 250,
};

// For tests and the curious: what the stream brought, in order.
window.cra = { received: [], ready: false, connected: false, connects: 0, start: undefined };
Object.defineProperty(window.cra, "next", { get: () => state.next });

// el builds an element: attrs are properties or attributes, children are
// nodes or strings (as text).
function el(tag, attrs, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") n.className = v;
    else if (k === "dataset") Object.assign(n.dataset, v);
    else if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
    else if (k in n && typeof v !== "string") n[k] = v;
    else n.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return n;
}

const $ = (id) => document.getElementById(id);

async function api(method, path, body) {
  const opts = { method, headers: {}, credentials: "same-origin" };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(path, opts);
  let data = null;
  try { data = await resp.json(); } catch (_) { /* not JSON */ }
  if (!resp.ok) {
    const err = new Error((data && data.error) || resp.status + " " + resp.statusText);
    err.status = resp.status;
    err.data = data || {};
    throw err;
  }
  return data;
}

// ---- time ----

function age(iso) {
  if (!iso) return "";
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return Math.floor(s) + "s";
  if (s < 3600) return Math.floor(s / 60) + "m";
  if (s < 86400) return Math.floor(s / 3600) + "h";
  return Math.floor(s / 86400) + "d";
}

function duration(ms) {
  if (ms === undefined || ms === null) return "";
  if (ms < 1000) return ms + " ms";
  const s = Math.round(ms / 1000);
  if (s < 60) return s + " s";
  const m = Math.floor(s / 60);
  return m + " min " + (s % 60) + " s";
}

function clock(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toISOString().replace("T", " ").slice(0, 19);
}

// ---- the board ----

function buildColumns() {
  const board = $("board");
  for (const [folder, name] of COLUMNS) {
    board.append(el("section", { class: "column", id: "col-" + folder, dataset: { folder } },
      el("h2", {}, name, " ", el("span", { class: "count", id: "count-" + folder }, "0")),
      el("div", { class: "cards", id: "cards-" + folder }),
      el("button", { type: "button", class: "more", id: "more-" + folder, hidden: true,
        onclick: () => { state.shown[folder] += PAGE; markDirty(folder); } })));
  }
}

function thresholds() {
  const r = (state.settings && state.settings.recycler) || {};
  return { completion: r.completion_threshold || 3, failure: r.failure_threshold || 5 };
}

function card(t) {
  const th = thresholds();
  const cls = ["card"];
  if (t.folder === "completed-finalized") cls.push("finalized");
  if (t.folder === "failed-blocked") cls.push("blocked");
  const icon = t.folder === "completed-finalized" ? el("span", { class: "icon check", "aria-label": "finalized", title: "finalized" }, "✓")
    : t.folder === "failed-blocked" ? el("span", { class: "icon error", "aria-label": "blocked", title: "blocked" }, "!")
    : null;
  return el("article", { class: cls.join(" "), dataset: { id: t.id, folder: t.folder }, tabindex: "0",
    onclick: () => openDrawer(t.id), onkeydown: (e) => { if (e.key === "Enter") openDrawer(t.id); } },
    el("div", { class: "card-head" }, icon, el("span", { class: "title" }, t.title)),
    el("div", { class: "meta" },
      t.type ? el("span", { class: "badge type" }, t.type) : null,
      el("span", { class: "badge prio prio-" + t.priority }, t.priority),
      t.kind === "directive" ? el("span", { class: "badge kind" }, "directive") : null,
      t.classification ? el("span", { class: "badge class class-" + t.classification }, t.classification.replace(/_/g, " ")) : null,
      t.waits_for_person ? el("span", { class: "badge needs" }, "needs you") : null),
    el("div", { class: "foot" },
      el("span", { class: "streak ok", title: "consecutive completion claims / completion threshold" }, "✓ " + t.consecutive_completion_claims + "/" + th.completion),
      el("span", { class: "streak bad", title: "consecutive failures / failure threshold" }, "✗ " + t.consecutive_failures + "/" + th.failure),
      el("span", { class: "runs", title: "runs" }, "runs " + t.runs),
      t.tokens ? el("span", { class: "tokens", title: "the last run's tokens, as its agent reported them" }, t.tokens) : null,
      el("span", { class: "age", title: t.created_at || "" }, age(t.created_at))));
}

function markDirty(folder) {
  if (state.dirty.size === 0) requestAnimationFrame(render);
  state.dirty.add(folder);
}

function render() {
  const by = new Map(COLUMNS.map(([f]) => [f, []]));
  for (const t of state.tasks.values()) {
    if (by.has(t.folder)) by.get(t.folder).push(t);
  }
  const th = thresholds();
  for (const folder of state.dirty) {
    const list = by.get(folder) || [];
    list.sort((a, b) => (b.updated_at || "").localeCompare(a.updated_at || "") || a.id.localeCompare(b.id));
    const shown = list.slice(0, state.shown[folder]);
    // A card is rebuilt only when what it shows changed, and a column
    // only when its cards did: focus, hover and clicks stay put.
    const keys = shown.map((t) => JSON.stringify([t, th.completion, th.failure]));
    const sig = keys.join("\n");
    if (state.sigs.get(folder) !== sig) {
      state.sigs.set(folder, sig);
      $("cards-" + folder).replaceChildren(...shown.map((t, i) => {
        const old = state.nodes.get(t.id);
        if (old && old.key === keys[i]) return old.node;
        const node = card(t);
        state.nodes.set(t.id, { key: keys[i], node });
        return node;
      }));
    }
    $("count-" + folder).textContent = String(list.length);
    const more = $("more-" + folder);
    more.hidden = list.length <= shown.length;
    more.textContent = "show more (" + (list.length - shown.length) + ")";
  }
  state.dirty.clear();
  $("counts").textContent = state.tasks.size + " tasks";
}

function upsert(t) {
  const old = state.tasks.get(t.id);
  if (old) markDirty(old.folder);
  state.tasks.set(t.id, t);
  markDirty(t.folder);
}

function drop(id) {
  const old = state.tasks.get(id);
  if (!old) return;
  state.tasks.delete(id);
  state.nodes.delete(id);
  markDirty(old.folder);
}

async function loadSnapshot() {
  const snap = await api("GET", "/api/tasks?view=card");
  state.tasks.clear();
  for (const t of snap.tasks) state.tasks.set(t.id, t);
  state.next = snap.offset;
  state.file = snap.file || "";
  if (window.cra.start === undefined) window.cra.start = snap.offset;
  for (const [f] of COLUMNS) markDirty(f);
}

// refresh refetches one card; the newest request wins.
async function refresh(id) {
  const seq = (state.seq.get(id) || 0) + 1;
  state.seq.set(id, seq);
  try {
    const t = await api("GET", "/api/tasks/" + encodeURIComponent(id) + "?view=card");
    if (state.seq.get(id) === seq) upsert(t);
  } catch (err) {
    if (err.status === 404 && state.seq.get(id) === seq) drop(id);
    else if (err.status !== 404 && err.status !== 400) console.warn("refresh", id, err);
  }
}

// ---- the stream ----

function connect() {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(proto + "//" + location.host + "/api/events?since=" + state.next +
    "&file=" + encodeURIComponent(state.file));
  state.ws = ws;
  ws.onopen = () => {
    state.backoff = 250;
    window.cra.connected = true;
    window.cra.connects++;
    setConn("live", "live");
  };
  ws.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (m.type === "reset") {
      ws.onclose = null;
      ws.close();
      resync();
      return;
    }
    window.cra.received.push(m.offset);
    state.next = m.end;
    state.file = m.file || state.file;
    if (m.type === "entry") apply(m.entry, m);
  };
  ws.onclose = () => {
    window.cra.connected = false;
    if (state.ws !== ws) return;
    setConn("reconnecting…", "down");
    setTimeout(connect, state.backoff);
    state.backoff = Math.min(state.backoff * 2, 5000);
  };
}

async function resync() {
  setConn("reloading…", "down");
  try {
    await loadSnapshot();
  } catch (err) {
    setConn("error: " + err.message, "down");
  }
  connect();
}

function setConn(text, cls) {
  const c = $("conn");
  c.textContent = text;
  c.className = "conn " + cls;
}

function apply(e, m) {
  if (e.kind === "event" && e.id === "settings" && e.source === "user") {
    loadSettings();
  } else if (e.kind === "agent" || (e.kind === "event" && (e.source === "user" || e.source === "board"))) {
    refresh(e.id);
  }
  if (e.kind === "event" && (e.source === "system" || e.source === "supervisor")) addActivity(e);
  if (e.kind === "event" && e.id === "cleanup") loadCleanup();
  if (state.drawer === e.id) {
    const list = $("d-log");
    if (list) list.append(logLine(m));
    scheduleDrawer();
  }
}

// ---- supervisor activity ----

function addActivity(e) {
  const list = $("activity-list");
  list.prepend(el("li", { title: clock(e.time) },
    el("span", { class: "muted" }, clock(e.time).slice(11) + " "),
    el("span", { class: "mono" }, "[" + e.source + "][" + e.id + "] "), e.output));
  while (list.children.length > 12) list.lastChild.remove();
}

async function loadActivity() {
  const r = await api("GET", "/api/log?tail=12&kind=event&source=system&source=supervisor");
  $("activity-list").replaceChildren();
  for (const m of r.entries) if (m.entry) addActivity(m.entry);
}

// ---- the drawer ----

let drawerTimer = null;
function scheduleDrawer() {
  clearTimeout(drawerTimer);
  drawerTimer = setTimeout(() => { if (state.drawer) fillDrawer(state.drawer); }, 150);
}

function openDrawer(id) {
  state.drawer = id;
  $("drawer").hidden = false;
  $("d-answer-text").value = "";
  $("d-answer-msg").textContent = "";
  fillDrawer(id);
}

function closeDrawer() {
  state.drawer = null;
  $("drawer").hidden = true;
  $("d-edit").hidden = true;
  stopOutput();
}

// ---- live output of a running task ----

// liveOutput is the drawer's "Live output" section for a task whose run
// goes on: its run log as it grows, over /api/tasks/{id}/output. The
// socket lives across the drawer's re-renders of the same run.
function liveOutput(id, d) {
  const last = d.runs.length ? d.runs[d.runs.length - 1] : null;
  if (d.folder !== "in-progress" || !last || last.finished) {
    stopOutput();
    return "";
  }
  const out = state.output;
  if (!out || out.id !== id || out.run !== last.n) {
    stopOutput();
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(proto + "//" + location.host + "/api/tasks/" + encodeURIComponent(id) + "/output?run=" + last.n);
    state.output = { id, run: last.n, ws, text: "" };
    ws.onmessage = (ev) => {
      const o = state.output;
      if (!o || o.ws !== ws) return;
      o.text = (o.text + ev.data).slice(-200000);
      const pre = $("d-output");
      if (pre) {
        pre.textContent = o.text;
        pre.scrollTop = pre.scrollHeight;
      }
    };
    ws.onclose = () => {
      const o = state.output;
      if (o && o.ws === ws) o.closed = true;
    };
  }
  return section("Live output", el("pre", { id: "d-output", class: "mono output" }, state.output.text));
}

function stopOutput() {
  if (state.output && state.output.ws) {
    state.output.ws.onclose = null;
    state.output.ws.close();
  }
  state.output = null;
}

// ---- the diff of a task's branch ----

// diffView is the drawer's inline diff of the task's branch, from
// /api/tasks/{id}/diff: fetched once per run's end and merge, and kept
// across the drawer's re-renders in between.
function diffView(id, t) {
  const r = t.results || {};
  const key = id + "|" + (r.finished_at || "") + "|" + (t.merged ? t.merged.commit : "");
  if (state.diff && state.diff.key === key) return state.diff.view;
  const view = el("div", { id: "d-diff" }, el("p", { class: "muted" }, "Reading the diff…"));
  state.diff = { key, view };
  api("GET", "/api/tasks/" + encodeURIComponent(id) + "/diff").then((d) => {
    if (d.missing) {
      view.replaceChildren(el("p", { class: "muted" }, d.missing));
      return;
    }
    const head = el("p", { class: "muted" }, (d.merged ? "Merged: " : "") + d.branch + " against " + String(d.base).slice(0, 12) +
      (d.cut ? " (cut at " + Math.round(d.patch.length / 1024) + " KiB: git diff " + d.base + " " + d.rev + " shows it whole)" : ""));
    if (!d.patch) {
      view.replaceChildren(head, el("p", { class: "muted", id: "d-diff-empty" }, "The branch changes nothing."));
      return;
    }
    const lines = d.patch.replace(/\n$/, "").split("\n").map((l) => {
      let cls = "";
      if (l.startsWith("diff --git") || l.startsWith("index ") || l.startsWith("+++") || l.startsWith("---")) cls = "meta";
      else if (l.startsWith("@@")) cls = "hunk";
      else if (l.startsWith("+")) cls = "add";
      else if (l.startsWith("-")) cls = "del";
      return el("span", { class: cls }, l + "\n");
    });
    view.replaceChildren(head, el("pre", { class: "mono diff", id: "d-diff-patch" }, lines));
  }).catch((err) => {
    if (state.diff && state.diff.view === view) state.diff = null;
    view.replaceChildren(el("p", { class: "error" }, "diff: " + err.message));
  });
  return view;
}

function section(title, ...body) {
  return el("section", { class: "d-section" }, el("h3", {}, title), ...body);
}

function pre(text, cls) {
  return el("pre", { class: cls || "text" }, text);
}

function logLine(m) {
  if (!m.entry) return el("li", { class: "malformed" }, "malformed line: " + (m.error || ""));
  const e = m.entry;
  const kind = e.kind === "agent" ? "agent:" + e.status : "event:" + e.source;
  // An entry the lifecycle forbids moved nothing: shown struck through, with why.
  const attrs = m.skipped ? { class: "skipped", title: "skipped: " + m.skipped } : {};
  attrs.dataset = { offset: String(m.offset) };
  return el("li", attrs,
    el("span", { class: "muted" }, clock(e.time) + " "),
    el("span", { class: "mono tag tag-" + (e.status || e.source) }, "[" + kind + "]"), " ",
    e.output, e.need ? el("span", { class: "need" }, " | need: " + e.need) : null,
    m.skipped ? el("span", { class: "need" }, " (skipped: " + m.skipped + ")") : null);
}

const NOTE_SECTIONS = [
  ["accomplished", "What was accomplished"],
  ["status", "Current status"],
  ["remaining", "Remaining issues or limitations"],
  ["next", "Suggested next actions"],
  ["evidence", "Validation evidence"],
];

function pick(obj, ...names) {
  for (const n of names) if (obj && obj[n] !== undefined && obj[n] !== null && obj[n] !== "") return obj[n];
  return undefined;
}

function noteView(review, task) {
  const note = review && pick(review, "note", "Note");
  if (note && typeof note === "object") {
    return el("dl", { class: "note" }, NOTE_SECTIONS.flatMap(([k, label]) => {
      const v = pick(note, k, k[0].toUpperCase() + k.slice(1));
      return [el("dt", {}, label), el("dd", {}, pre(v || "—"))];
    }));
  }
  if (task.notes) return pre(task.notes);
  return el("p", { class: "muted" }, "No note yet: the recycler writes one after it reviews a run.");
}

function evidenceView(review, task, text) {
  const parts = [];
  if (review) {
    const cls = pick(review, "classification");
    const model = pick(review, "model");
    if (cls) {
      parts.push(el("p", {}, "Verdict: ", el("strong", { class: "badge class class-" + cls }, String(cls).replace(/_/g, " ")),
        model && model !== cls ? el("span", { class: "muted" }, " (the model said " + String(model).replace(/_/g, " ") + ")") : null,
        review.action ? el("span", { class: "muted" }, " → " + review.action) : null));
    }
    const lowered = pick(review, "lowered");
    if (Array.isArray(lowered) && lowered.length) parts.push(el("p", { class: "muted" }, "Lowered: " + lowered.join("; ")));
    if (review.fallback) parts.push(el("p", { class: "muted" }, "Conservative note: " + review.fallback));
    const blockers = pick(review, "blockers");
    if (Array.isArray(blockers) && blockers.length) {
      parts.push(el("ul", { class: "blockers" }, blockers.map((b) => el("li", {}, String(b)))));
    }
    if (review.before && review.after) {
      parts.push(el("p", { class: "muted" }, "Streaks: completion " + review.before.completion + " → " + review.after.completion +
        ", failure " + review.before.failure + " → " + review.after.failure));
    }
    if (text) parts.push(pre(text, "mono"));
    else if (review.evidence) parts.push(pre(JSON.stringify(review.evidence, null, 2), "json"));
  }
  const r = task.results || {};
  if (r.validation) parts.push(el("p", {}, "Validation:"), pre(r.validation, "mono"));
  if (!review && r.exit_code !== undefined) parts.push(el("p", {}, "Last exit code: " + r.exit_code + (r.timed_out ? " (timed out)" : "")));
  if (!parts.length) parts.push(el("p", { class: "muted" }, "No review yet."));
  return parts;
}

async function fillDrawer(id) {
  let d;
  try {
    d = await api("GET", "/api/tasks/" + encodeURIComponent(id));
  } catch (err) {
    $("d-body").replaceChildren(el("p", { class: "error" }, err.message));
    return;
  }
  if (state.drawer !== id) return;
  const t = d.task;
  const th = thresholds();
  $("d-id").textContent = t.id + " · " + d.folder;
  $("d-title").textContent = t.title;
  $("d-badges").replaceChildren(
    t.type ? el("span", { class: "badge type" }, t.type) : "",
    el("span", { class: "badge prio prio-" + t.priority }, t.priority),
    el("span", { class: "streak ok" }, "✓ " + t.consecutive_completion_claims + "/" + th.completion),
    el("span", { class: "streak bad" }, "✗ " + t.consecutive_failures + "/" + th.failure),
    d.waits_for_person ? el("span", { class: "badge needs" }, "needs you") : "");
  const drawer = $("drawer");
  drawer.classList.toggle("finalized", d.folder === "completed-finalized");
  drawer.classList.toggle("blocked", d.folder === "failed-blocked");

  // A person steers the task: the buttons its state allows. "closed" and
  // "held" are read as the server defines them: the latest lifecycle
  // entry is a failed "closed: …", or the task waits in pending with
  // processor_auto_requeue false (a person stopped it).
  let lastAgent = null;
  for (const m of d.log) if (m.entry && m.entry.kind === "agent") lastAgent = m.entry;
  const closed = !!(lastAgent && lastAgent.status === "failed" && (lastAgent.output || "").startsWith("closed: "));
  const held = d.folder === "pending" && !t.processor_auto_requeue;
  const button = (label, bid, fn) => el("button", { type: "button", id: bid, onclick: fn }, label);
  const why = () => ($("d-why") ? $("d-why").value : "");
  const actions = [];
  if (["failed", "completed"].includes(d.folder)) actions.push(button("Retry", "d-retry", () => act("retry", id, {})));
  if (d.folder === "in-progress") actions.push(button("Stop", "d-stop", () => act("stop", id, { why: why() })));
  if (closed || held) actions.push(button("Reopen", "d-reopen", () => act("reopen", id, {})));
  if (!closed && !["in-progress", "completed-finalized"].includes(d.folder)) actions.push(button("Close", "d-close-task", () => act("close", id, { why: why() })));
  if (d.folder === "completed-finalized" && !t.merged) {
    actions.push(button("Merge", "d-merge", () => act("merge", id, {})));
    actions.push(button("Open PR", "d-pr", () => act("pr", id, {})));
  }
  if (d.folder !== "in-progress") {
    const targets = ["pending", "completed", "failed", "completed-finalized", "failed-blocked"].filter((f) => f !== d.folder);
    actions.push(el("select", { id: "d-move-to", "aria-label": "Move to" }, targets.map((f) => el("option", { value: f }, f))));
    actions.push(button("Move", "d-move", () => act("move", id, { to: $("d-move-to").value, why: why() })));
  }
  actions.push(button("Edit", "d-edit-btn", () => openEdit(t)));
  actions.push(el("input", { id: "d-why", placeholder: "why (kept in the log)", autocomplete: "off" }));
  actions.push(el("span", { id: "d-action-msg", class: "msg" }));
  $("d-actions").replaceChildren(...actions);
  if (t.merged) $("d-badges").append(el("span", { class: "badge merged", id: "d-merged" }, "merged into " + t.merged.into));
  if (closed) $("d-badges").append(el("span", { class: "badge closed", id: "d-closed" }, "closed"));
  if (held) $("d-badges").append(el("span", { class: "badge held", id: "d-held" }, "stopped: held"));

  // Only the server's waits_for_person: failed-blocked/ also holds
  // collapsed duplicates and dropped directives, which wait for no one.
  const waiting = d.waits_for_person;
  $("d-answer").hidden = !waiting;
  if (waiting) {
    let need = "";
    for (const m of d.log) if (m.entry && m.entry.kind === "agent" && m.entry.status === "failed") need = m.entry.need || m.entry.output;
    $("d-need-person").textContent = need;
  }

  const reviews = Array.isArray(d.reviews) ? d.reviews : [];
  const latest = reviews.length ? reviews[reviews.length - 1] : null;
  const r = t.results || {};
  // On a fleet each run says which host ran it.
  const hosts = d.runs.some((run) => run.host);
  const runs = d.runs.length ? el("table", { class: "runs" },
    el("thead", {}, el("tr", {}, ["#", "profile", ...(hosts ? ["host"] : []), "started", "duration", "exit", "outcome", "log"].map((h) => el("th", {}, h)))),
    el("tbody", {}, d.runs.map((run) => el("tr", {},
      el("td", {}, String(run.n)), el("td", {}, run.profile || ""), hosts ? el("td", { class: "mono" }, run.host || "") : null, el("td", {}, clock(run.started)),
      el("td", {}, run.finished ? duration(run.duration_ms || 0) : "running"),
      el("td", { class: run.exit_code === 0 ? "ok" : run.exit_code !== undefined ? "bad" : "" }, run.exit_code !== undefined ? String(run.exit_code) : ""),
      el("td", { class: "outcome" }, run.outcome || ""),
      el("td", { class: "muted" }, run.log ? run.log + " (" + run.log_bytes + " B)" : ""))))) : el("p", { class: "muted" }, "No runs yet.");

  $("d-body").replaceChildren(
    section("Description", t.description ? pre(t.description) : el("p", { class: "muted" }, "—")),
    section("Need", t.need ? pre(t.need) : el("p", { class: "muted" }, "—")),
    section("Latest note", noteView(latest, t)),
    section("Evidence behind the verdict", ...evidenceView(latest, t, d.evidence_text)),
    section("Runs", runs),
    liveOutput(id, d),
    section("Branch and diff", r.branch ? el("p", { class: "mono" }, r.branch) : el("p", { class: "muted" }, "No branch yet."),
      r.diff_stat ? pre(r.diff_stat, "mono") : null, diffView(id, t)),
    section("Log", el("ol", { id: "d-log", class: "log" }, d.log.map(logLine))));
}

async function act(what, id, body) {
  const msg = $("d-action-msg");
  try {
    const r = await api("POST", "/api/tasks/" + encodeURIComponent(id) + "/" + what, body || {});
    let text = "done";
    if (what === "pr") text = r.url ? "pull request: " + r.url : "pushed " + r.branch + "; open it with: " + (r.commands || []).join(" ; ");
    await fillDrawer(id);
    $("d-action-msg").textContent = text;
  } catch (err) {
    msg.textContent = err.message;
  }
}

// ---- edit a task from the drawer ----

function openEdit(t) {
  const f = $("d-edit");
  for (const k of ["title", "need", "description", "type", "priority", "agent", "milestone"]) f.elements[k].value = t[k] || "";
  $("d-edit-msg").textContent = "";
  f.hidden = false;
}

async function saveEdit(ev) {
  ev.preventDefault();
  const id = state.drawer;
  const f = $("d-edit");
  const body = {};
  for (const k of ["title", "need", "description", "type", "priority", "agent", "milestone"]) body[k] = f.elements[k].value;
  try {
    const r = await api("PATCH", "/api/tasks/" + encodeURIComponent(id), body);
    f.hidden = true;
    await fillDrawer(id);
    $("d-action-msg").textContent = r.changed && r.changed.length ? "edited: " + r.changed.join(", ") : "nothing changed";
  } catch (err) {
    $("d-edit-msg").textContent = err.message;
  }
}

async function sendAnswer(ev) {
  ev.preventDefault();
  const id = state.drawer;
  const msg = $("d-answer-msg");
  try {
    const r = await api("POST", "/api/tasks/" + encodeURIComponent(id) + "/answer", { text: $("d-answer-text").value });
    msg.textContent = r.resumed ? "answered: the task is back in pending" : "answered";
    $("d-answer-text").value = "";
  } catch (err) {
    msg.textContent = err.message;
  }
}

// ---- add a task ----

function openAdd() {
  $("add-error").textContent = "";
  $("add-form").reset();
  for (const n of $("add-form").querySelectorAll(".invalid")) n.classList.remove("invalid");
  $("add-dialog").showModal();
}

async function submitAdd(ev) {
  ev.preventDefault();
  const f = new FormData($("add-form"));
  const body = {};
  for (const k of ["title", "need", "description", "type", "priority", "kind", "agent", "milestone"]) body[k] = String(f.get(k) || "");
  body.after = String(f.get("after") || "").split(",").map((x) => x.trim()).filter((x) => x);
  body.no_change = f.get("no_change") === "on";
  body.tests_may_change = f.get("tests_may_change") === "on";
  try {
    const t = await api("POST", "/api/tasks", body);
    upsert({ ...t, folder: "pending", classification: "" });
    $("add-dialog").close();
  } catch (err) {
    $("add-error").textContent = err.message;
    const field = err.data && err.data.field;
    const input = field && $("add-form").elements[field];
    if (input) { input.classList.add("invalid"); input.focus(); }
  }
}

// ---- settings ----

async function loadSettings() {
  try {
    state.settings = await api("GET", "/api/settings");
  } catch (err) {
    state.settings = null;
  }
  for (const [f] of COLUMNS) markDirty(f);
}

function intervalText(s) {
  s = Number(s);
  if (s < 60) return s + " s";
  return Math.floor(s / 60) + " min" + (s % 60 ? " " + (s % 60) + " s" : "");
}

async function openSettings() {
  await loadSettings();
  const form = $("settings-form");
  $("settings-error").textContent = "";
  for (const n of form.querySelectorAll(".invalid")) n.classList.remove("invalid");
  const s = state.settings;
  if (!s) {
    $("settings-error").textContent = "settings are not available from this daemon";
  } else {
    const r = s.recycler;
    const ef = r.enabled_for;
    if (Array.isArray(ef)) {
      form.elements.enabled_for.value = "types";
      form.elements.types.value = ef.join(", ");
    } else {
      form.elements.enabled_for.value = ef === "both" ? "all" : ef;
      form.elements.types.value = "";
    }
    form.elements.interval_seconds.value = r.interval_seconds;
    form.elements.completion_threshold.value = r.completion_threshold;
    form.elements.failure_threshold.value = r.failure_threshold;
    form.elements.provider.value = (s.summarizer && s.summarizer.provider) || "";
    form.elements.model.value = (s.summarizer && s.summarizer.model) || "";
  }
  syncSettingsForm();
  $("settings-dialog").showModal();
}

function syncSettingsForm() {
  const form = $("settings-form");
  $("types-label").hidden = form.elements.enabled_for.value !== "types";
  $("interval-out").textContent = intervalText(form.elements.interval_seconds.value);
}

async function saveSettings(ev) {
  ev.preventDefault();
  const form = $("settings-form");
  const e = form.elements;
  const enabled = e.enabled_for.value === "types"
    ? e.types.value.split(",").map((s) => s.trim()).filter(Boolean)
    : e.enabled_for.value;
  const body = {
    recycler: {
      enabled_for: enabled,
      interval_seconds: Number(e.interval_seconds.value),
      completion_threshold: Number(e.completion_threshold.value),
      failure_threshold: Number(e.failure_threshold.value),
    },
    summarizer: { provider: e.provider.value, model: e.model.value.trim() },
  };
  try {
    state.settings = await api("PUT", "/api/settings", body);
    for (const [f] of COLUMNS) markDirty(f);
    $("settings-dialog").close();
  } catch (err) {
    $("settings-error").textContent = err.message;
    const key = err.data && err.data.field;
    const name = key && key.split(".").pop();
    const input = name && (e[name] || (name === "enabled_for" ? e.types : null));
    if (input) input.classList.add("invalid");
  }
}

// ---- clean up ----

// The Clean Up button runs the cleanup pass (seed 000): disabled while
// one runs, here or from 'cra cleanup'.
async function loadCleanup() {
  let st = { available: false, running: false };
  try { st = await api("GET", "/api/cleanup"); } catch (_) { /* leave it disabled */ }
  showCleanup(st);
}

let cleanupTimer = null;
function showCleanup(st) {
  // While a pass runs, ask every second when it ends (its last log line
  // comes before it lets go of its lock).
  clearTimeout(cleanupTimer);
  if (st.running) cleanupTimer = setTimeout(loadCleanup, 1000);
  const btn = $("cleanup-btn");
  const tip = !st.available ? "This daemon runs no cleanup: use 'cra cleanup'"
    : st.running ? "A cleanup is running: the button comes back when it ends"
    : "Collapse duplicate pending tasks and rewrite the knowledge index (cra cleanup)";
  btn.disabled = !st.available || st.running;
  btn.textContent = st.running ? "Cleaning up…" : "Clean Up";
  btn.title = tip;
  $("cleanup-tip").title = tip;
}

async function startCleanup() {
  try {
    showCleanup(await api("POST", "/api/cleanup"));
  } catch (err) {
    $("cleanup-tip").title = err.message;
    loadCleanup();
  }
}

// ---- start ----

async function main() {
  buildColumns();
  $("add-btn").addEventListener("click", openAdd);
  $("add-cancel").addEventListener("click", () => $("add-dialog").close());
  $("add-form").addEventListener("submit", submitAdd);
  $("settings-btn").addEventListener("click", openSettings);
  $("cleanup-btn").addEventListener("click", startCleanup);
  setInterval(loadCleanup, 15000);
  $("settings-cancel").addEventListener("click", () => $("settings-dialog").close());
  $("settings-form").addEventListener("submit", saveSettings);
  $("settings-form").addEventListener("input", syncSettingsForm);
  $("d-close").addEventListener("click", closeDrawer);
  $("d-answer").addEventListener("submit", sendAnswer);
  $("d-edit").addEventListener("submit", saveEdit);
  $("d-edit-cancel").addEventListener("click", () => { $("d-edit").hidden = true; });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape" && state.drawer) closeDrawer(); });
  setInterval(() => { for (const n of document.querySelectorAll(".card .age")) n.textContent = age(n.title); }, 30000);
  try {
    await Promise.all([loadSnapshot(), loadSettings(), loadCleanup(), loadActivity().catch(() => {})]);
  } catch (err) {
    setConn("error: " + err.message, "down");
  }
  render();
  window.cra.paintedAt = performance.now(); // ms since the navigation began
  window.cra.ready = true;
  connect();
}

main();
