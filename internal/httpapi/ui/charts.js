"use strict";
// The page's two charts, drawn as SVG by hand: the checkpoints' durations
// as stacked bars of their phases, and records per second in and out.
// Loaded before app.js, which calls drawDurations and drawRates.

const SVG_NS = "http://www.w3.org/2000/svg";

// The phases a completed checkpoint's duration is made of, bottom up.
// "other" is what the three leave over (hand-offs between them).
const PHASES = [
  { key: "acked_ms", name: "trigger to last ack (barriers, alignment, snapshots, pre-commits)", cls: "ph-acked" },
  { key: "persist_ms", name: "metadata persisted", cls: "ph-persist" },
  { key: "commit_ms", name: "sink commit", cls: "ph-commit" },
  { key: "other_ms", name: "other", cls: "ph-other" },
];

// svg makes an SVG element with attributes and children.
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  }
  e.append(...children.filter((c) => c !== null && c !== undefined));
  return e;
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten, times ticks.
function niceMax(v, ticks) {
  const raw = Math.max(v, 1e-9) / ticks;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s >= raw);
  return step * ticks;
}

// frame draws the y axis (ticks labelled with fmt) and returns the SVG and
// the plot's geometry.
function frame(box, height, max, fmt, label) {
  const W = Math.max(box.clientWidth, 320), H = height;
  const m = { l: 64, r: 12, t: 12, b: 30 };
  const g = { x: m.l, y: m.t, w: W - m.l - m.r, h: H - m.t - m.b, max };
  const root = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label });
  const ticks = 4;
  for (let i = 0; i <= ticks; i++) {
    const v = (max * i) / ticks, y = g.y + g.h - (g.h * i) / ticks;
    root.append(svg("line", { class: i ? "grid" : "axis", x1: g.x, x2: g.x + g.w, y1: y, y2: y }));
    root.append(svg("text", { class: "tick", x: g.x - 6, y: y + 4, "text-anchor": "end" }, fmt(v)));
  }
  return { root, g };
}

// drawDurations draws one stacked bar per completed checkpoint of history
// (newest first, as /api/checkpoints lists it) and a red mark per failed
// one, oldest on the left.
function drawDurations(box, history, fmtMS) {
  const ended = history.filter((c) => c.status === "completed" || c.status === "failed").reverse();
  if (!ended.length) {
    box.replaceChildren(Object.assign(document.createElement("p"), { className: "empty", textContent: "No checkpoint has ended yet." }));
    return;
  }
  const max = niceMax(Math.max(...ended.map((c) => (c.status === "completed" && c.duration_ms) || 0)), 4);
  const { root, g } = frame(box, 240, max, fmtMS, "checkpoint durations by phase");
  const slot = Math.min(g.w / ended.length, 36);
  const barW = Math.max(slot * 0.7, 1);
  const x0 = g.x + g.w - slot * ended.length; // the newest at the right edge
  const labelEvery = Math.ceil(ended.length / Math.max(1, Math.floor(g.w / 56)));
  const yOf = (v) => g.y + g.h - (g.h * Math.min(v, max)) / max;
  ended.forEach((c, i) => {
    const x = x0 + i * slot + (slot - barW) / 2;
    if (c.status === "failed") {
      const cx = x + barW / 2, y = g.y + g.h - 8;
      root.append(svg("g", { class: "fail-mark", "data-id": c.id },
        svg("title", {}, `#${c.id} failed: ${c.reason || "no reason given"}`),
        svg("line", { x1: cx - 5, x2: cx + 5, y1: y - 5, y2: y + 5 }),
        svg("line", { x1: cx - 5, x2: cx + 5, y1: y + 5, y2: y - 5 })));
    } else {
      const parts = phasesOf(c);
      const bar = svg("g", { class: "bar", "data-id": c.id },
        svg("title", {}, `#${c.id}: ${fmtMS(c.duration_ms)}\n` + PHASES.map((p) => `${p.name}: ${fmtMS(parts[p.key])}`).join("\n")));
      let acc = 0;
      for (const p of PHASES) {
        const v = parts[p.key];
        if (v <= 0) continue;
        const top = yOf(acc + v), bottom = yOf(acc);
        bar.append(svg("rect", { class: p.cls, x, width: barW, y: top, height: Math.max(bottom - top, 0.5) }));
        acc += v;
      }
      root.append(bar);
    }
    if ((ended.length - 1 - i) % labelEvery === 0) {
      root.append(svg("text", { class: "tick", x: x + barW / 2, y: g.y + g.h + 16, "text-anchor": "middle" }, String(c.id)));
    }
  });
  box.replaceChildren(root);
}

// phasesOf splits a completed checkpoint's duration into PHASES.
function phasesOf(c) {
  const acked = c.acked_ms || 0, persist = c.persist_ms || 0, commit = c.commit_ms || 0;
  return { acked_ms: acked, persist_ms: persist, commit_ms: commit, other_ms: Math.max((c.duration_ms || 0) - acked - persist - commit, 0) };
}

// drawRates draws records per second in and out, from points {t (ms), in,
// out} (rates, or null while unknown), over the last maxSpan ms at most and
// 30 s at least.
function drawRates(box, points, maxSpan, fmtRate) {
  const known = points.filter((p) => p.in !== null);
  const max = niceMax(Math.max(1, ...known.map((p) => Math.max(p.in, p.out))), 4);
  const { root, g } = frame(box, 200, max, fmtRate, "records per second");
  const end = points.length ? points[points.length - 1].t : Date.now();
  const span = Math.min(maxSpan, Math.max(30000, points.length ? end - points[0].t : 0));
  const xOf = (t) => g.x + g.w - (g.w * (end - t)) / span;
  const yOf = (v) => g.y + g.h - (g.h * v) / max;
  for (const key of ["in", "out"]) {
    const pts = known.filter((p) => end - p.t <= span).map((p) => `${xOf(p.t).toFixed(1)},${yOf(p[key]).toFixed(1)}`);
    if (pts.length > 1) root.append(svg("polyline", { class: "rate-" + key, points: pts.join(" ") }));
  }
  const step = span > 90000 ? 30 : 10;
  for (let s = 0; s <= span / 1000; s += step) {
    root.append(svg("text", { class: "tick", x: xOf(end - s * 1000), y: g.y + g.h + 16, "text-anchor": s ? "middle" : "end" }, s ? `-${s}s` : "now"));
  }
  box.replaceChildren(root);
}
