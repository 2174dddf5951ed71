// Canvas drawing for the page: learning curves and parallel coordinates. Every series carries its
// own colour (colorOf, stable as trials arrive), so one trial has one colour in every plot and in
// its table row. Nothing is drawn outside the plot's area: drawing is clipped to it, and a trial
// with no metric (or no value for an axis) yet goes in a "no metric yet" strip inside the plot.
// Each canvas records what it drew in data-* attributes (points, series, colours), which the
// browser test reads.
"use strict";

export const fmt = (v) => typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toPrecision(4)) : String(v ?? "");

// The golden angle spreads any number of colours apart, and the i-th colour never changes when
// more trials come.
export function colorOf(i) {
  return `hsl(${Math.round(i * 137.508 + 210) % 360}, 68%, 48%)`;
}

function canvas2d(cv) {
  const dpr = window.devicePixelRatio || 1;
  const w = cv.clientWidth, h = cv.clientHeight;
  if (cv.width !== Math.round(w * dpr) || cv.height !== Math.round(h * dpr)) {
    cv.width = Math.round(w * dpr);
    cv.height = Math.round(h * dpr);
  }
  const g = cv.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const style = getComputedStyle(document.body);
  g.font = "11px system-ui, sans-serif";
  g.fillStyle = g.strokeStyle = style.color;
  return {g, w, h, fg: style.color};
}

function niceTicks(lo, hi, n) {
  if (!(hi > lo)) hi = lo + 1;
  const step0 = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-12; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

// Text cut with an ellipsis to fit max pixels.
function fit(g, text, max) {
  text = String(text);
  if (g.measureText(text).width <= max) return text;
  while (text.length > 1 && g.measureText(text + "…").width > max) text = text.slice(0, -1);
  return text + "…";
}

function clipTo(g, x, y, w, h) {
  g.save();
  g.beginPath();
  g.rect(x, y, w, h);
  g.clip();
}

// The range every series of a set spans (so side-by-side plots share their axes).
export function curvesRange(series) {
  let x1 = 1, y0 = Infinity, y1 = -Infinity, n = 0;
  for (const s of series) for (const [x, y] of s.points) {
    if (!Number.isFinite(y)) continue;
    x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); n++;
  }
  if (y0 === y1) { y0 -= 0.5; y1 += 0.5; }
  const m = (y1 - y0) * 0.05; // a margin, so no line runs along the frame
  return {x1, y0: y0 - m, y1: y1 + m, n};
}

// series: [{id, label, color, width, points: [[epoch, value], ...]}]; range: curvesRange's, or
// that of these series.
export function drawCurves(cv, series, metric, range) {
  const {g, w, h} = canvas2d(cv);
  const pad = {l: 56, r: 14, t: 12, b: 34};
  const {x1, y0, y1, n} = range || curvesRange(series);
  const drawn = series.filter((s) => s.points.some(([, y]) => Number.isFinite(y)));
  cv.dataset.points = String(drawn.reduce((a, s) => a + s.points.filter(([, y]) => Number.isFinite(y)).length, 0));
  cv.dataset.series = String(drawn.length);
  cv.dataset.colors = JSON.stringify(Object.fromEntries(drawn.map((s) => [s.id, s.color])));
  if (!n || !drawn.length) { g.fillText("waiting for the first epoch…", pad.l, h / 2); return; }
  const pw = w - pad.l - pad.r, ph = h - pad.t - pad.b;
  const X = (x) => pad.l + 4 + ((x - 1) / Math.max(x1 - 1, 1)) * (pw - 8);
  const Y = (y) => pad.t + ph - ((y - y0) / (y1 - y0)) * ph;
  const yt = niceTicks(y0, y1, Math.max(2, Math.floor(ph / 45)));
  g.globalAlpha = 0.25;
  g.beginPath();
  for (const t of yt) { g.moveTo(pad.l, Y(t)); g.lineTo(w - pad.r, Y(t)); }
  g.stroke();
  g.globalAlpha = 1;
  g.strokeRect(pad.l, pad.t, pw, ph);
  g.textAlign = "right";
  for (const t of yt) g.fillText(fit(g, fmt(t), pad.l - 8), pad.l - 6, Y(t) + 4);
  g.textAlign = "center";
  const xt = niceTicks(1, x1, Math.max(2, Math.floor(pw / 50))).filter((t) => Number.isInteger(t) && t >= 1);
  for (const t of xt) g.fillText(t, X(t), h - pad.b + 14);
  g.fillText(fit(g, `epoch · ${metric}`, pw), pad.l + pw / 2, h - 5);
  clipTo(g, pad.l, pad.t, pw, ph);
  for (const s of drawn) {
    const pts = s.points.filter(([, y]) => Number.isFinite(y));
    g.strokeStyle = g.fillStyle = s.color;
    g.lineWidth = s.width || 1.5;
    g.beginPath();
    pts.forEach(([x, y], i) => (i ? g.lineTo(X(x), Y(y)) : g.moveTo(X(x), Y(y))));
    g.stroke();
    const [lx, ly] = pts[pts.length - 1];
    g.beginPath();
    g.arc(X(lx), Y(ly), 2.5, 0, 2 * Math.PI);
    g.fill();
  }
  g.restore();
}

// rows: [{id, config: {k: v}, metric: number|null, color, bold}]. The axes' values take the plot's
// height above a strip at its foot where a trial lacking the value (no metric yet) is drawn.
export function drawParallel(cv, rows, metric) {
  const {g, w, h, fg} = canvas2d(cv);
  rows = rows.filter((r) => r.config && Object.keys(r.config).length);
  cv.dataset.lines = String(rows.length);
  cv.dataset.colors = JSON.stringify(Object.fromEntries(rows.map((r) => [r.id, r.color])));
  if (!rows.length) { g.fillText("no trials with hyperparameters yet", 20, h / 2); return; }
  const keys = [...new Set(rows.flatMap((r) => Object.keys(r.config)))].sort();
  const axes = keys.map((k) => {
    const vals = rows.map((r) => r.config[k]).filter((v) => v !== undefined && v !== null);
    const num = vals.every((v) => typeof v === "number");
    if (!num) {
      const cats = [...new Set(vals.map(String))].sort();
      const at = (c) => (cats.length > 1 ? cats.indexOf(String(c)) / (cats.length - 1) : 0.5);
      return {k, pos: (v) => (v === undefined || v === null ? null : at(v)), labels: cats.map((c) => [c, at(c)])};
    }
    return numAxis(k, vals);
  });
  const ms = rows.map((r) => r.metric).filter(Number.isFinite);
  const mAxis = ms.length ? numAxis(metric, ms, true) : {k: metric, pos: () => null, labels: []};
  axes.push(mAxis);
  const missing = rows.filter((r) => axes.some((ax, i) => ax.pos(i === axes.length - 1 ? r.metric : r.config[ax.k]) === null));
  const strip = missing.length ? 22 : 0;
  const pad = {l: 64, r: 64, t: 30, b: 20};
  const top = pad.t + 6, bottom = h - pad.b - strip - (strip ? 8 : 0);
  const AX = (i) => pad.l + (i / Math.max(axes.length - 1, 1)) * (w - pad.l - pad.r);
  const AY = (t) => bottom - t * (bottom - top);
  const stripY = h - pad.b - strip / 2;
  cv.dataset.missing = String(missing.length);
  if (strip) {
    g.globalAlpha = 0.08;
    g.fillRect(pad.l - 40, h - pad.b - strip, w - pad.l - pad.r + 80, strip);
    g.globalAlpha = 1;
    g.textAlign = "left";
    g.fillStyle = fg;
    g.fillText("no metric yet", 4, stripY + 4);
  }
  let off = 0;
  clipTo(g, 0, pad.t, w, h - pad.t - pad.b);
  // the best (bold) last, on top
  for (const r of rows.slice().sort((a, b) => Number(!!a.bold) - Number(!!b.bold))) {
    g.strokeStyle = r.color;
    g.lineWidth = r.bold ? 3 : 1.5;
    g.globalAlpha = r.bold ? 1 : 0.85;
    g.beginPath();
    axes.forEach((ax, i) => {
      const t = ax.pos(i === axes.length - 1 ? r.metric : r.config[ax.k]);
      const y = t === null ? stripY : AY(t);
      if (y < pad.t || y > h - pad.b) off++;
      i ? g.lineTo(AX(i), y) : g.moveTo(AX(i), y);
    });
    g.stroke();
  }
  g.restore();
  g.globalAlpha = 1;
  cv.dataset.offplot = String(off);
  g.strokeStyle = g.fillStyle = fg;
  g.lineWidth = 1;
  g.textAlign = "center";
  const room = (w - pad.l - pad.r) / Math.max(axes.length - 1, 1) - 6;
  axes.forEach((ax, i) => {
    g.beginPath(); g.moveTo(AX(i), AY(0)); g.lineTo(AX(i), AY(1)); g.stroke();
    g.font = i === axes.length - 1 ? "bold 11px system-ui, sans-serif" : "11px system-ui, sans-serif";
    g.fillText(fit(g, ax.k, Math.max(room, 60)), AX(i), 14);
    g.font = "11px system-ui, sans-serif";
    for (const [lab, t] of ax.labels) g.fillText(fit(g, lab, Math.max(room, 50)), AX(i), t === 0 ? AY(0) + 13 : t === 1 ? AY(1) - 4 : AY(t) - 3);
  });
}

function numAxis(k, vals) {
  const lo = Math.min(...vals), hi = Math.max(...vals);
  const log = lo > 0 && hi / lo > 20;
  const f = log ? Math.log10 : (x) => x;
  const a = f(lo), b = f(hi);
  const pos = (v) => (typeof v !== "number" || !Number.isFinite(v) ? null : b > a ? Math.min(1, Math.max(0, (f(v) - a) / (b - a))) : 0.5);
  return {k, pos, labels: lo === hi ? [[fmt(lo), 0.5]] : [[fmt(lo), 0], [fmt(hi), 1]]};
}
