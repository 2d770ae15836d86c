// hardneg review: one item at a time, labelled by keyboard. Plain JS, no build step, nothing from a CDN.
"use strict";

const $ = (id) => document.getElementById(id);
const FILTERS = ["scope", "kind", "type", "negative_type", "level", "split"];
// A letter per label, its initial; a digit means one verdict for every kind (review/labels.py).
const LETTERS = { correct: "c", ambiguous: "a", wrong: "w", negative: "n", still_true: "t", unreadable: "u" };
const KIND_TEXT = { positive: "Positive", text_negative: "Text negative", image_negative: "Image negative" };

// Writes need this server start's token, from the URL `hardneg review` printed (?token=...); kept per
// origin (host and port) so a reload or an #item= link in this browser still writes.
function readToken() {
  const fromUrl = new URLSearchParams(location.search).get("token");
  if (fromUrl) localStorage.setItem("hardneg.token", fromUrl);
  return fromUrl || localStorage.getItem("hardneg.token") || "";
}

const S = {
  who: localStorage.getItem("hardneg.annotator") || "",
  token: readToken(),
  meta: null,
  queue: [],      // ids, in review order, from the server
  cur: null,      // id shown: its text, buttons and picture are all on screen
  item: null,     // its JSON
  history: [],    // ids shown before, for "back"
  skipped: new Set(),
  showSource: false,
  showBoxes: true,
  busy: false,
  labelled: 0,
  queueSeq: 0,    // answers to older requests are dropped (filters changed twice quickly)
  showSeq: 0,
};

function status(text, isError) {
  $("status").textContent = text || "";
  $("status").className = isError ? "error" : "";
}

async function api(path, body) {
  const opts = body === undefined ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Review-Token": S.token },
    body: JSON.stringify(body),
  };
  const res = await fetch(path, opts);
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (!res.ok) {
    const err = new Error((data && data.error) || `${res.status} ${res.statusText}`);
    err.status = res.status;  // 409: a stale view of the item; 403: no or a wrong token
    throw err;
  }
  return data;
}

function filters() {
  const f = {};
  for (const k of FILTERS) f[k] = $(`f-${k}`).value;
  f.done = $("f-done").checked;
  return f;
}

function queueUrl() {
  const f = filters();
  const q = new URLSearchParams({ annotator: S.who, pending: f.done ? "0" : "1", limit: "500" });
  for (const k of FILTERS) if (f[k]) q.set(k, f[k]);
  return `api/queue?${q}`;
}

// A kind of negative as the server describes it (`/api/meta`'s negative_types), for the item's kind or,
// in the filter list where a name may be either, whichever knows it.
function negativeType(name, kind) {
  const known = (S.meta && S.meta.negative_types) || {};
  return (known[kind] || {})[name] || (known.text_negative || {})[name] || (known.image_negative || {})[name];
}

function fillSelect(id, values, fmt) {
  const sel = $(id);
  for (const v of values) {
    const o = document.createElement("option");
    o.value = String(v);
    o.textContent = fmt ? fmt(v) : String(v);
    sel.appendChild(o);
  }
}

async function loadMeta() {
  S.meta = await api("api/meta");
  $("run").textContent = S.meta.run;
  if (S.meta.audit) {  // the audit: a random sample, blind to scores; its queue is the whole sample
    $("run").textContent += ` \u00b7 audit: ${S.meta.audit.items} items drawn at random (no scores shown)`;
    $("f-scope").closest("label").hidden = true;
    document.body.classList.add("audit");
  }
  if (!S.token) status("read only: open the URL `hardneg review` printed (with ?token=) to label", true);
  $("guidelines").textContent = S.meta.guidelines;
  const f = S.meta.facets;
  fillSelect("f-kind", f.kind, (k) => KIND_TEXT[k] || k);
  fillSelect("f-type", f.type);
  fillSelect("f-negative_type", f.negative_type, (t) => {
    const d = negativeType(t);
    return d ? `${t}: ${d.label}` : t;
  });
  fillSelect("f-level", f.level, (l) => `L${l}`);
  fillSelect("f-split", f.split);
  const saved = JSON.parse(localStorage.getItem("hardneg.filters") || "{}");
  for (const k of FILTERS) {
    const sel = $(`f-${k}`);
    if (saved[k] !== undefined && [...sel.options].some((o) => o.value === saved[k])) sel.value = saved[k];
  }
  $("f-done").checked = !!saved.done;
}

async function loadQueue() {
  const seq = ++S.queueSeq;
  const q = await api(queueUrl());
  if (seq !== S.queueSeq) return null;  // a newer request has been sent since
  const tied = q.tied ? ` \u00b7 ${q.tied} tied (shown first, for an adjudicator)` : "";
  $("progress").textContent = `${q.done} of ${q.total} done \u00b7 ${q.pending} to go${tied}`;
  let ids = q.ids.filter((id) => !S.skipped.has(id));
  if (ids.length === 0 && q.ids.length > 0) { S.skipped.clear(); ids = q.ids; }
  S.queue = ids;
  return q;
}

function nextAfter(id) {
  const i = S.queue.indexOf(id);
  if (filters().done && i >= 0) return S.queue[i + 1] || null;
  return S.queue.find((x) => x !== id && !S.skipped.has(x)) || null;
}

async function show(id) {
  if (!id) {
    ++S.showSeq;
    S.cur = null; S.item = null;
    $("expression").textContent = "";
    $("badges").textContent = "";
    $("context").textContent = "";
    $("buttons").textContent = "";
    $("mine").textContent = "";
    $("img-caption").textContent = "";
    clearCanvas();
    status("Nothing left in this queue. Change the filters or include items you labelled.");
    return;
  }
  const seq = ++S.showSeq;
  const item = await api(`api/items/${id}?annotator=${encodeURIComponent(S.who)}`);
  if (seq !== S.showSeq) return;  // another item was asked for meanwhile
  const img = await loadImage(item.image);  // the picture first: text and picture change together
  if (seq !== S.showSeq) return;
  S.cur = String(id); S.item = item; S.showSource = false; S.img = img;
  if (location.hash !== `#item=${id}`) history.replaceState(null, "", `#item=${id}`);
  render();
}

// The image at `src`, decoded (null when it cannot be loaded: the item still shows, with a note).
function loadImage(src) {
  return new Promise((resolve) => {
    const img = new Image();
    img.onload = () => resolve(img);
    img.onerror = () => resolve(null);
    img.src = src;
  });
}

function badge(text, cls) {
  const b = document.createElement("span");
  b.className = `badge ${cls || ""}`;
  b.textContent = text;
  return b;
}

function render() {
  const it = S.item;
  const badges = $("badges");
  badges.textContent = "";
  badges.appendChild(badge(KIND_TEXT[it.kind] || it.kind, it.kind));
  if (it.tied) badges.appendChild(badge("tied: needs an adjudicator", "tied"));
  badges.appendChild(badge(it.tuple_type));
  badges.appendChild(badge(`path L${it.level}`));
  if (it.negative_type) {
    const b = badge(`${it.negative_type} L${it.negative_level}`);
    const d = negativeType(it.negative_type, it.kind);
    if (d) b.title = `${d.label}: ${d.description}`;
    badges.appendChild(b);
  }
  badges.appendChild(badge(it.split));
  $("expression").textContent = it.expression;

  const ctx = $("context");
  ctx.textContent = "";
  const line = (text) => { const p = document.createElement("div"); p.textContent = text; ctx.appendChild(p); };
  if (it.kind === "positive") {
    line("Does this refer to exactly the object in the red box?");
    if (it.rewrites && it.rewrites.length) {
      line("also rewritten as:");
      const ul = document.createElement("ul");
      for (const r of it.rewrites) { const li = document.createElement("li"); li.textContent = r; ul.appendChild(li); }
      ctx.appendChild(ul);
    }
  } else if (it.kind === "text_negative") {
    line("Is this description false of the image (nothing fits it)? Boxes show the original sample.");
    if (it.positive) line(`original: \u201c${it.positive.expression}\u201d`);
  } else {
    line(`Edited image: ${describeEdit(it.edit)}. Does the description still fit something? ` +
      "Press o for the source image.");
  }

  const buttons = $("buttons");
  buttons.textContent = "";
  it.labels.forEach((l) => {
    const b = document.createElement("button");
    b.type = "button";
    b.dataset.label = l.label;
    if (it.mine === l.label) b.classList.add("chosen");
    const k = document.createElement("kbd");
    k.textContent = `${l.key} / ${LETTERS[l.label] || ""}`;
    b.appendChild(k);
    b.appendChild(document.createTextNode(l.text));
    b.addEventListener("click", () => label(l.label));
    buttons.appendChild(b);
  });
  const mine = it.labels.find((l) => l.label === it.mine);
  $("mine").textContent = mine ? `your label: ${mine.text}` : "not labelled by you yet";
  draw();
}

function describeEdit(e) {
  if (!e || typeof e !== "object") return "an edit";
  const q = (v) => `\u201c${v}\u201d`;
  switch (e.op) {
    case "flip": return "mirrored left to right";
    case "rename": return `an object repainted as ${q(e.name)}`;
    case "set_attribute": return `${q(e.from)} changed to ${q(e.to)}`;
    case "swap_names": return "two objects swapped";
    case "swap_attributes": return `attributes ${(e.from || []).map(q).join(" and ")} swapped`;
    case "remove": return "an object removed";
    case "sequence": return (e.edits || []).map(describeEdit).join(", then ");
    default: return String(e.op || "an edit");
  }
}

function clearCanvas() {
  const c = $("canvas");
  c.getContext("2d").clearRect(0, 0, c.width, c.height);
}

function draw() {
  const it = S.item;
  const src = S.showSource && it.source ? it.source : it.image;
  const boxes = S.showSource ? it.source_boxes : it.boxes.concat(it.edit_boxes);
  $("img-caption").textContent = S.showSource ? "source image (press o for the edited one)" :
    (it.kind === "image_negative" ? "edited image" : "");
  const paint = (img) => {
    if (S.item !== it) return;
    if (!img) { clearCanvas(); status("this item's image could not be loaded", true); return; }
    const c = $("canvas");
    const maxW = Math.max(320, $("stage").clientWidth);
    const maxH = Math.max(240, window.innerHeight - 140);
    const scale = Math.min(maxW / img.naturalWidth, maxH / img.naturalHeight, 2);
    c.width = Math.round(img.naturalWidth * scale);
    c.height = Math.round(img.naturalHeight * scale);
    const g = c.getContext("2d");
    g.drawImage(img, 0, 0, c.width, c.height);
    if (!S.showBoxes) return;
    g.font = "13px system-ui, sans-serif";
    for (const b of boxes) {
      g.lineWidth = 3;
      g.strokeStyle = b.color;
      g.setLineDash(b.role === "edit" ? [7, 5] : []);
      g.strokeRect(b.x * scale, b.y * scale, Math.max(1, b.w * scale), Math.max(1, b.h * scale));
      if (b.role !== "edit") {
        const w = g.measureText(b.label).width + 6;
        const y = Math.max(0, b.y * scale - 17);
        g.fillStyle = b.color;
        g.fillRect(b.x * scale, y, w, 17);
        g.fillStyle = "#fff";
        g.fillText(b.label, b.x * scale + 3, y + 13);
      }
    }
    g.setLineDash([]);
  };
  if (src === it.image && S.img !== undefined) paint(S.img);  // decoded before the item was shown
  else loadImage(src).then(paint);
}

async function label(value) {
  if (!S.item || S.busy) return;
  S.busy = true;
  const id = S.cur, shown = S.item;  // the item on screen: its id and the view the server gave it
  try {
    await api("api/decisions", { item_id: id, label: value, annotator: S.who, version: shown.version, view: shown.view });
    const text = (S.item.labels.find((l) => l.label === value) || {}).text || value;
    status(`saved: ${text}`);
    S.history.push(id);
    S.labelled += 1;
    const before = S.queue.slice();
    await loadQueue();
    let next;
    if (filters().done) { const i = before.indexOf(id); next = before[i + 1] || S.queue[0] || null; }
    else next = nextAfter(id);
    await show(next);
    if (S.labelled % 5 === 0 && $("agreement-panel").open) loadAgreement();
  } catch (e) {
    status(`not saved: ${e.message}`, true);  // a 409 says: someone labelled this since; reload
  } finally {
    S.busy = false;
  }
}

async function undo() {
  if (S.busy) return;
  S.busy = true;
  try {
    const r = await api("api/undo", { annotator: S.who });
    if (!r.undone) { status("nothing to undo"); return; }
    status(`undone: ${r.undone.label}`);
    await loadQueue();
    await show(r.undone.item_id);
  } catch (e) {
    status(`undo failed: ${e.message}`, true);
  } finally {
    S.busy = false;
  }
}

async function skip() {
  if (!S.cur) return;
  S.skipped.add(S.cur);
  S.history.push(S.cur);
  await show(nextAfter(S.cur));
}

async function back() {
  const id = S.history.pop();
  if (!id) { status("nothing before this item"); return; }
  S.skipped.delete(id);
  await show(id);
}

async function loadAgreement() {
  const a = await api("api/agreement");
  const box = $("agreement");
  box.textContent = "";
  if (!a.pairs.length) { box.textContent = "no two annotators on the same items yet"; return; }
  const t = document.createElement("table");
  const head = t.insertRow();
  for (const h of ["annotators", "common items", "agreement", "kappa"]) {
    const th = document.createElement("th"); th.textContent = h; head.appendChild(th);
  }
  for (const p of a.pairs) {
    const r = t.insertRow();
    const kappa = p.kappa === null ? "n/a" : p.kappa.toFixed(2);
    for (const v of [`${p.a} / ${p.b}`, p.items, `${(100 * p.agreement).toFixed(0)}%`, kappa]) {
      r.insertCell().textContent = String(v);
    }
  }
  box.appendChild(t);
}

function onKey(e) {
  if ($("name-dialog").open || e.ctrlKey && e.key !== "z" || e.metaKey || e.altKey) return;
  const tag = (e.target && e.target.tagName) || "";
  if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return;
  const it = S.item;
  const key = e.key.toLowerCase();
  if (key === "z" || key === "backspace") { e.preventDefault(); undo(); return; }
  if (key === "arrowright") { e.preventDefault(); skip(); return; }
  if (key === "arrowleft") { e.preventDefault(); back(); return; }
  if (!it) return;
  if (key === "o" && it.source) { S.showSource = !S.showSource; draw(); return; }
  if (key === "b") { S.showBoxes = !S.showBoxes; draw(); return; }
  const chosen = it.labels.find((l) => l.key === key || LETTERS[l.label] === key);
  if (chosen) { e.preventDefault(); label(chosen.label); }
  else if (/^[1-9]$/.test(key)) status(`key ${key} is no verdict for ${KIND_TEXT[it.kind] || "this item"}`);
}

// An #item=ID link pasted into an open tab: that item, on screen before any key labels it.
async function onHash() {
  const m = /#item=(\d+)/.exec(location.hash);
  if (!m || m[1] === S.cur) return;
  try { await show(m[1]); } catch (e) { status(`item ${m[1]}: ${e.message}`, true); }
}

function askName() {
  return new Promise((resolve) => {
    const d = $("name-dialog");
    $("name-input").value = S.who;
    $("name-form").onsubmit = (e) => {
      e.preventDefault();
      const v = $("name-input").value.trim();
      if (!v) return;
      S.who = v.slice(0, 64);
      localStorage.setItem("hardneg.annotator", S.who);
      showWho();
      d.close();
      resolve();
    };
    d.showModal();
    $("name-input").focus();
  });
}

async function onFilterChange() {
  const f = filters();
  localStorage.setItem("hardneg.filters", JSON.stringify(f));
  S.skipped.clear();
  try {
    if (await loadQueue() === null) return;  // superseded by a later change
    await show(S.queue[0] || null);
  } catch (e) {
    status(e.message, true);
  }
}

function showWho() {
  const adjudicates = S.meta && S.meta.adjudicators.includes(S.who);
  $("who-name").textContent = adjudicates ? `${S.who} (adjudicator)` : S.who;
}

async function start() {
  if (!S.who) await askName();
  $("who-name").textContent = S.who;
  try {
    await loadMeta();
    showWho();
    await loadQueue();
    const m = /#item=(\d+)/.exec(location.hash);
    try {
      await show(m ? m[1] : S.queue[0] || null);
    } catch (e) {
      await show(S.queue[0] || null);  // the item of an old link is not in this run
    }
  } catch (e) {
    status(e.message, true);
  }
  document.addEventListener("keydown", onKey);
  window.addEventListener("hashchange", onHash);
  for (const k of FILTERS) $(`f-${k}`).addEventListener("change", (e) => { e.target.blur(); onFilterChange(); });
  $("f-done").addEventListener("change", (e) => { e.target.blur(); onFilterChange(); });
  $("who").addEventListener("click", async () => { await askName(); await onFilterChange(); });
  $("undo").addEventListener("click", undo);
  $("skip").addEventListener("click", skip);
  $("back").addEventListener("click", back);
  $("agreement-panel").addEventListener("toggle", () => { if ($("agreement-panel").open) loadAgreement(); });
  window.addEventListener("resize", () => { if (S.item) draw(); });
}

start();
