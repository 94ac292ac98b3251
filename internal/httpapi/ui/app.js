"use strict";
// The connector's status page: polls /api/job and /api/checkpoints once a
// second and renders them with plain DOM calls (the charts: charts.js).
// Rates are computed here, from the counters of successive /api/job
// answers and the server's timestamps.

const POLL_MS = 1000;
const RATE_WINDOW_MS = 5000; // rates are averaged over this
const SPAN_MS = 180000; // what the throughput chart shows

const page = {
  gen: 0, // bumped by Pause and Resume: a poll of an older generation stops
  paused: false,
  samples: [], // {t, startedAt, in, out}, oldest first, SPAN_MS + RATE_WINDOW_MS of them
  status: null,
  configText: null,
};

const $ = (id) => document.getElementById(id);

// el makes an HTML element with attributes and children (strings become
// text: nothing from the server is parsed as HTML).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  }
  e.append(...children.filter((c) => c !== null && c !== undefined));
  return e;
}

function fmtMS(ms) {
  if (ms === null || ms === undefined || isNaN(ms)) return "–";
  if (ms === 0) return "0";
  if (ms < 1) return +ms.toFixed(2) + " ms";
  if (ms < 100) return +ms.toFixed(1) + " ms";
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(2) + " s";
  return fmtAge(ms / 1000);
}

function fmtAge(s) {
  s = Math.max(0, Math.floor(s));
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${s % 60}s`;
  return `${s}s`;
}

function fmtBytes(b) {
  if (!b) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
  return (i ? b.toFixed(1) : String(b)) + " " + units[i];
}

const fmtCount = (n) => Math.round(n).toLocaleString("en-US");

function fmtRate(r) {
  if (r === null || r === undefined) return "–";
  if (r >= 10000) return (r / 1000).toFixed(1) + "k";
  return r >= 100 ? fmtCount(r) : String(Math.round(r * 10) / 10);
}

function fmtClock(iso) {
  const d = new Date(iso);
  return d.toLocaleTimeString("en-GB", { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

async function getJSON(path) {
  const r = await fetch(path, { cache: "no-store" });
  const body = await r.json().catch(() => null);
  if (!r.ok) throw new Error(`${path}: ${r.status} ${body && body.error ? body.error : r.statusText}`);
  return body;
}

async function poll() {
  const gen = page.gen;
  try {
    const [job, status] = await Promise.all([getJSON("/api/job"), getJSON("/api/checkpoints")]);
    if (gen !== page.gen) return;
    render(job, status);
    showError(null);
  } catch (err) {
    if (gen !== page.gen) return;
    showError(err);
  }
  setTimeout(() => { if (gen === page.gen) poll(); }, POLL_MS);
}

function showError(err) {
  $("error").hidden = !err;
  if (err) {
    $("error").textContent = `Cannot read the connector's status (${err.message}); retrying every second.`;
    setBadge($("state"), "unreachable", "bad");
  }
}

function setBadge(e, text, cls) {
  e.textContent = text;
  e.className = "badge " + cls;
}

function render(job, status) {
  page.status = status;
  document.title = `${job.name} · connector`;
  $("job-name").textContent = job.name;
  setBadge($("state"), job.state, job.state === "running" ? "good" : "warn");
  $("version").textContent = (job.version ? "connector " + job.version : "") + groupLine(job);
  $("uptime").textContent = fmtAge(job.uptime_seconds);
  $("restarts").textContent = fmtCount(job.restarts);
  $("updated").textContent = "updated " + fmtClock(job.at);

  renderHealth("ready", status.ready, status.not_ready, "ready", "not ready");
  renderHealth("live", status.live, status.not_live, "live", "stalled");
  addSample(job);
  const rate = (key) => rateAt(page.samples.length - 1, key);
  $("rate-in").textContent = fmtRate(rate("in"));
  $("rate-out").textContent = fmtRate(rate("out"));
  $("total-in").textContent = fmtCount(job.records_in_total) + " in total";
  $("total-out").textContent = fmtCount(job.records_out_total) + " in total";
  const parts = job.partitions || [];
  $("lag").textContent = parts.length ? fmtCount(job.lag_records) : "–";
  $("lag-parts").textContent = `${parts.length} partition${parts.length === 1 ? "" : "s"}`;
  const last = status.last_completed;
  $("last-id").textContent = last ? "#" + last.id : "none yet";
  $("last-age").textContent = last ? `completed ${fmtAge((Date.parse(job.at) - Date.parse(last.completed_at)) / 1000)} ago` : "";

  renderCheckpoints(status);
  renderPartitions(job);
  renderConfig(job);
  redraw();
}

// groupLine says, in group mode (instances.mode: group), which slots of
// the job this process runs.
function groupLine(job) {
  if (job.mode !== "group") return "";
  const owned = (job.slots || []).map((s) => s.state === "running" ? String(s.slot) : `${s.slot} (${s.state})`);
  return ` · group ${job.group}, generation ${job.generation}: slots ${owned.length ? owned.join(", ") : "none"} of ${job.slots_total}`;
}

// slotOf is " (slot k)" for what belongs to slot k in group mode.
const slotOf = (x) => (x.slot === undefined || x.slot === null ? "" : ` (slot ${x.slot})`);

function renderHealth(id, ok, why, yes, no) {
  $(id).textContent = ok ? yes : no;
  $("card-" + id).className = "card " + (ok ? "good" : "bad");
  $(id + "-reason").textContent = ok ? "" : why || "";
}

// addSample keeps the counters of job for the rates; a restarted process
// (counters from zero) starts over.
function addSample(job) {
  const s = { t: Date.parse(job.at), startedAt: job.started_at, in: job.records_in_total, out: job.records_out_total };
  const prev = page.samples[page.samples.length - 1];
  if (prev && (prev.startedAt !== s.startedAt || s.in < prev.in)) page.samples = [];
  if (prev && s.t <= prev.t) return;
  page.samples.push(s);
  while (page.samples.length && s.t - page.samples[0].t > SPAN_MS + RATE_WINDOW_MS) page.samples.shift();
}

// rateAt is key's rate at sample i, averaged over RATE_WINDOW_MS before it;
// null with no earlier sample.
function rateAt(i, key) {
  const s = page.samples, cur = s[i];
  if (!cur) return null;
  let j = i;
  while (j > 0 && cur.t - s[j - 1].t <= RATE_WINDOW_MS) j--;
  if (j === i) return null;
  return Math.max(0, (cur[key] - s[j][key]) / ((cur.t - s[j].t) / 1000));
}

function renderCheckpoints(status) {
  const hist = status.history || [];
  $("counts").textContent = `${fmtCount(status.counts.completed)} completed, ${fmtCount(status.counts.failed)} failed since the process started`;
  if (!$("legend").childElementCount) {
    $("legend").append(...PHASES.map((p) => el("li", {}, el("i", { class: "sw " + p.cls }), p.name)));
  }
  const failed = hist.filter((c) => c.status === "failed");
  $("failures-count").textContent = failed.length ? `(${failed.length} of the last ${hist.length})` : "";
  $("failures").replaceChildren(...(failed.length ? failed.map((c) => el("li", {},
    el("b", {}, "#" + c.id), " ", el("span", { class: "muted", title: c.triggered_at }, fmtClock(c.triggered_at)), " ",
    c.reason || "no reason given")) : [el("li", { class: "muted" }, "None among the last checkpoints.")]));
  $("history").tBodies[0].replaceChildren(...hist.map(historyRow));
}

function historyRow(c) {
  let phases = "";
  const done = c.status === "completed";
  const ms = (v) => fmtMS(v || 0); // a completed checkpoint's phases: absent is 0
  if (done) {
    phases = el("span", {}, `ack ${ms(c.acked_ms)} · persist ${ms(c.persist_ms)} · commit ${ms(c.commit_ms)}`,
      el("br"), el("span", { class: "muted" }, `start ${ms(c.start_delay_ms)} · sync ${ms(c.sync_ms)} · async ${ms(c.async_ms)}`));
  }
  const status = c.status.replace("_", " ");
  return el("tr", { "data-id": c.id, class: c.status },
    el("td", { class: "num" }, String(c.id) + slotOf(c)),
    el("td", {}, el("span", { class: "pill " + c.status }, status)),
    el("td", { title: c.triggered_at }, c.triggered_at ? fmtClock(c.triggered_at) : "–"),
    el("td", { class: "num" }, c.ended_at ? fmtMS(c.duration_ms) : "–"),
    el("td", { class: "phases" }, phases),
    el("td", { class: "num" }, done ? ms(c.alignment_ms) : ""),
    el("td", { class: "num" }, done ? fmtBytes(c.state_bytes) : ""),
    el("td", { class: "reason" }, c.reason || ""));
}

function renderPartitions(job) {
  const parts = job.partitions || [];
  const maxLag = Math.max(1, ...parts.map((p) => p.lag_records));
  $("partitions").tBodies[0].replaceChildren(...(parts.length ? parts.map((p) => {
    const bar = el("div", { class: "lagbar" });
    bar.style.width = `${(100 * p.lag_records) / maxLag}%`;
    return el("tr", {}, el("td", {}, p.topic), el("td", { class: "num" }, String(p.partition) + slotOf(p)),
      el("td", { class: "num" }, String(p.next_offset)), el("td", { class: "num" }, String(p.end_offset)),
      el("td", { class: "num" }, fmtCount(p.lag_records)), el("td", {}, bar));
  }) : [el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No partition reported (not running, or the source does not tell its lag)."))]));
  $("committed").textContent = job.last_completed ? `#${job.last_completed.id}: ${job.last_completed.offsets}` : "nothing yet";
}

function renderConfig(job) {
  const text = job.config ? toYAML(job.config, "") + "\n" : "(not available: " + (job.config_error || "unknown") + ")";
  if (text !== page.configText) $("config").textContent = page.configText = text;
}

// toYAML writes v (the config: objects, arrays, scalars) as YAML, for
// reading; strings YAML would read as something else are quoted.
function toYAML(v, indent) {
  const plain = (x) => x !== "" && !/^[\s\-?:,[\]{}#&*!|>'"%@`]|:\s|\s#|\s$/.test(x) &&
    !/^(true|false|yes|no|on|off|null|~)$/i.test(x) && isNaN(Number(x));
  const scalar = (x) => (typeof x === "string" && !plain(x) ? JSON.stringify(x) : String(x));
  const nested = (x) => x !== null && typeof x === "object" && Object.keys(x).length > 0;
  if (Array.isArray(v)) {
    // An item's first line follows its "- ".
    return v.map((x) => indent + "- " + (nested(x) ? toYAML(x, indent + "  ").slice(indent.length + 2) : value(x))).join("\n");
  }
  return Object.entries(v).map(([k, x]) => indent + k + ":" + (nested(x) ? "\n" + toYAML(x, indent + "  ") : " " + value(x))).join("\n");

  function value(x) {
    if (Array.isArray(x)) return "[]";
    return x !== null && typeof x === "object" ? "{}" : scalar(x);
  }
}

function selectTab(name) {
  for (const b of document.querySelectorAll("[data-tab]")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
  for (const s of document.querySelectorAll(".tab")) s.hidden = s.id !== "tab-" + name;
  redraw();
}

// redraw draws the charts of the last answers at the current width (the
// throughput chart only while its tab shows: hidden, it has no width).
function redraw() {
  if (!page.status) return;
  drawDurations($("chart"), page.status.history || [], fmtMS);
  const points = page.samples.map((s, i) => ({ t: s.t, in: rateAt(i, "in"), out: rateAt(i, "out") }));
  if (!$("tab-throughput").hidden) drawRates($("rates"), points, SPAN_MS, fmtRate);
}

function togglePause() {
  page.paused = !page.paused;
  page.gen++;
  $("pause").textContent = page.paused ? "Resume" : "Pause";
  $("pause").classList.toggle("on", page.paused);
  if (page.paused) $("updated").textContent += " (paused)";
  else poll();
}

document.addEventListener("DOMContentLoaded", () => {
  for (const b of document.querySelectorAll("[data-tab]")) b.addEventListener("click", () => selectTab(b.dataset.tab));
  $("pause").addEventListener("click", togglePause);
  window.addEventListener("resize", redraw);
  poll();
});
