// Hone's page: plain JavaScript over the REST API (docs/rest.md), no library. Routes by the URL's
// hash: #/ lists experiments and jobs, #/jobs/ID watches one job through its metrics stream
// (GET /api/v1/jobs/ID/metrics/stream, read with fetch so the admin token can go in a header, and
// resumed with Last-Event-ID after a drop). It never writes anything.
"use strict";

const $ = (sel) => document.querySelector(sel);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) =>
  ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);
const fmt = (v) => typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toPrecision(4)) : esc(v);

const api = {
  token: localStorage.getItem("hone.token") || "",
  headers() { return this.token ? {Authorization: "Bearer " + this.token} : {}; },
  async get(path) {
    const r = await fetch(path, {headers: this.headers()});
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(`${path}: ${r.status} ${body.error ? body.error.message : ""}`);
    return body;
  },
};

function showError(e) {
  const el = $("#error");
  el.hidden = !e;
  el.textContent = e ? String(e.message || e) : "";
}

// ---- the metrics stream: Server-Sent Events over fetch ------------------------------------------

class MetricStream {
  constructor(jobId, onEpoch, onEnd, onState) {
    this.url = `/api/v1/jobs/${encodeURIComponent(jobId)}/metrics/stream`;
    this.onEpoch = onEpoch;
    this.onEnd = onEnd;
    this.onState = onState;
    this.lastId = null;
    this.retry = 2000;
    this.closed = false;
    this.ctrl = null;
    this.run();
  }

  close() {
    this.closed = true;
    if (this.ctrl) this.ctrl.abort();
  }

  dispatch(block) {
    let event = "message", id = null;
    const data = [];
    for (const line of block.split("\n")) {
      if (line === "" || line.startsWith(":")) continue;
      const i = line.indexOf(":");
      const k = i < 0 ? line : line.slice(0, i);
      let v = i < 0 ? "" : line.slice(i + 1);
      if (v.startsWith(" ")) v = v.slice(1);
      if (k === "data") data.push(v);
      else if (k === "event") event = v;
      else if (k === "id") id = v;
      else if (k === "retry" && /^\d+$/.test(v)) this.retry = Number(v);
    }
    if (id !== null) this.lastId = id;
    if (!data.length) return;
    const obj = JSON.parse(data.join("\n"));
    if (event === "epoch") this.onEpoch(obj, id);
    else if (event === "end") { this.ended = true; this.onEnd(obj); }
    else if (event === "auth") { this.closed = true; this.onState(`signed out: ${obj.error.message}`); }
  }

  async run() {
    while (!this.closed && !this.ended) {
      try {
        const headers = api.headers();
        if (this.lastId !== null) headers["Last-Event-ID"] = this.lastId;
        this.ctrl = new AbortController();
        const r = await fetch(this.url, {headers, signal: this.ctrl.signal});
        if (r.status === 503) { this.onState("busy: too many streams, retrying"); await sleep(5000); continue; }
        if (!r.ok) { this.onState(`stream refused: ${r.status}`); return; }
        this.onState("live");
        const reader = r.body.getReader(), dec = new TextDecoder();
        let buf = "";
        for (;;) {
          const {value, done} = await reader.read();
          if (done) break;
          buf += dec.decode(value, {stream: true}).replace(/\r\n?/g, "\n");
          let i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            this.dispatch(block);
          }
        }
      } catch (e) {
        if (this.closed) return;
      }
      if (this.closed || this.ended) return;
      this.onState("reconnecting");
      await sleep(this.retry);
    }
  }
}

// ---- drawing ---------------------------------------------------------------------------------

function colorOf(i, n) {
  return `hsl(${Math.round((i * 360) / Math.max(n, 1) + 200) % 360}, 70%, 50%)`;
}

// A colour from a metric's place in [0, 1]: low is red, high is green.
function rampColor(t) {
  return `hsl(${Math.round(t * 130)}, 75%, 45%)`;
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
  if (!(hi > lo)) { hi = lo + 1; }
  const step0 = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-12; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

// series: [{label, color, width, points: [[epoch, value], ...]}]
function drawCurves(cv, series, metric) {
  const {g, w, h} = canvas2d(cv);
  const pad = {l: 52, r: 12, t: 12, b: 30};
  let x1 = 1, y0 = Infinity, y1 = -Infinity, npts = 0;
  for (const s of series) for (const [x, y] of s.points) {
    if (!Number.isFinite(y)) continue;
    x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); npts++;
  }
  cv.dataset.points = String(npts);
  cv.dataset.series = String(series.filter((s) => s.points.length).length);
  if (!npts) { g.fillText("waiting for the first epoch…", pad.l, h / 2); return; }
  if (y0 === y1) { y0 -= 0.5; y1 += 0.5; }
  const X = (x) => pad.l + ((x - 1) / Math.max(x1 - 1, 1)) * (w - pad.l - pad.r);
  const Y = (y) => h - pad.b - ((y - y0) / (y1 - y0)) * (h - pad.t - pad.b);
  g.globalAlpha = 0.25;
  g.beginPath();
  for (const t of niceTicks(y0, y1, 5)) { g.moveTo(pad.l, Y(t)); g.lineTo(w - pad.r, Y(t)); }
  g.stroke();
  g.globalAlpha = 1;
  g.textAlign = "right";
  for (const t of niceTicks(y0, y1, 5)) g.fillText(fmt(t), pad.l - 6, Y(t) + 4);
  g.textAlign = "center";
  for (const t of niceTicks(1, x1, 8).filter((t) => Number.isInteger(t) && t >= 1)) g.fillText(t, X(t), h - pad.b + 14);
  g.fillText(`epoch (${metric})`, (pad.l + w - pad.r) / 2, h - 4);
  for (const s of series) {
    const pts = s.points.filter(([, y]) => Number.isFinite(y));
    if (!pts.length) continue;
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
}

// rows: [{config: {k: v}, metric: number}], maximize: colour best green.
function drawParallel(cv, rows, metric, maximize) {
  const {g, w, h, fg} = canvas2d(cv);
  rows = rows.filter((r) => r.config && Object.keys(r.config).length);
  cv.dataset.lines = String(rows.length);
  if (!rows.length) { g.fillText("no trials with hyperparameters yet", 20, h / 2); return; }
  const keys = [...new Set(rows.flatMap((r) => Object.keys(r.config)))].sort();
  const axes = keys.map((k) => {
    const vals = rows.map((r) => r.config[k]).filter((v) => v !== undefined);
    const num = vals.every((v) => typeof v === "number");
    if (!num) {
      const cats = [...new Set(vals.map(String))].sort();
      return {k, pos: (v) => (cats.length > 1 ? cats.indexOf(String(v)) / (cats.length - 1) : 0.5), labels: cats.map((c, i) => [c, cats.length > 1 ? i / (cats.length - 1) : 0.5])};
    }
    let lo = Math.min(...vals), hi = Math.max(...vals);
    const log = lo > 0 && hi / lo > 20;
    const f = log ? Math.log10 : (x) => x;
    const a = f(lo), b = f(hi);
    const pos = (v) => (b > a ? (f(v) - a) / (b - a) : 0.5);
    return {k, pos, labels: [[fmt(lo), 0], [fmt(hi), 1]]};
  });
  const ms = rows.map((r) => r.metric).filter(Number.isFinite);
  const m0 = Math.min(...ms), m1 = Math.max(...ms);
  const mpos = (v) => (m1 > m0 ? (v - m0) / (m1 - m0) : 0.5);
  axes.push({k: metric, pos: mpos, labels: ms.length ? [[fmt(m0), 0], [fmt(m1), 1]] : []});
  const pad = {l: 70, r: 70, t: 34, b: 22};
  const AX = (i) => pad.l + (i / Math.max(axes.length - 1, 1)) * (w - pad.l - pad.r);
  const AY = (t) => h - pad.b - t * (h - pad.t - pad.b);
  const ordered = rows.slice().sort((a, b) => (maximize ? 1 : -1) * ((a.metric ?? -Infinity) - (b.metric ?? -Infinity)));
  g.lineWidth = 1.5;
  for (const r of ordered) {
    const t = Number.isFinite(r.metric) ? mpos(r.metric) : null;
    g.strokeStyle = t === null ? "rgba(128,128,128,.5)" : rampColor(maximize ? t : 1 - t);
    g.beginPath();
    axes.forEach((ax, i) => {
      const v = i === axes.length - 1 ? r.metric : r.config[ax.k];
      const y = v === undefined || !Number.isFinite(ax.pos(v)) ? AY(0) : AY(ax.pos(v));
      i ? g.lineTo(AX(i), y) : g.moveTo(AX(i), y);
    });
    g.stroke();
  }
  g.strokeStyle = g.fillStyle = fg;
  g.lineWidth = 1;
  g.textAlign = "center";
  axes.forEach((ax, i) => {
    g.beginPath(); g.moveTo(AX(i), AY(0)); g.lineTo(AX(i), AY(1)); g.stroke();
    g.fillText(ax.k, AX(i), 12);
    for (const [lab, t] of ax.labels) g.fillText(String(lab), AX(i), t === 0 ? AY(0) + 14 : AY(1) - 4);
  });
}

// ---- views -------------------------------------------------------------------------------------

let current = null; // the open view's teardown

function statusBadge(s) {
  return `<span class="status ${esc(s)}">${esc(s)}</span>`;
}

async function listView(expId) {
  $("#crumb").textContent = "";
  const [exps, jobs] = await Promise.all([
    api.get("/api/v1/experiments"),
    api.get("/api/v1/jobs?top=1&limit=500" + (expId ? "&experiment=" + encodeURIComponent(expId) : "")),
  ]);
  const expRows = exps.experiments.map((e) =>
    `<tr class="click ${e.id === expId ? "sel" : ""}" data-href="#/experiments/${esc(e.id)}">
       <td>${esc(e.name)}</td><td>${esc(e.network_arch)}</td><td>${esc(e.metric)}</td>
       <td class="muted">${esc(e.id)}</td><td class="muted">${esc(e.created)}</td></tr>`).join("");
  const jobRows = jobs.jobs.filter((j) => j.action !== "convert").map((j) =>
    `<tr class="click" data-href="#/jobs/${esc(j.id)}">
       <td><a href="#/jobs/${esc(j.id)}">${esc(j.id)}</a></td><td>${esc(j.action)}</td><td>${statusBadge(j.status)}</td>
       <td>${fmt(j.epoch ?? "")}</td><td>${fmt(j.result ? j.result.best_metric ?? "" : "")}</td>
       <td class="muted">${esc(j.experiment_id)}</td><td class="muted">${esc(j.created)}</td></tr>`).join("");
  $("#main").innerHTML = `
    <h2>Experiments ${expId ? '<a href="#/" class="muted">(all jobs)</a>' : ""}</h2>
    <table id="experiments"><tr><th>name</th><th>network</th><th>metric</th><th>id</th><th>created</th></tr>${expRows}</table>
    <h2>Jobs${expId ? " of " + esc(expId) : ""}</h2>
    <table id="jobs"><tr><th>id</th><th>action</th><th>status</th><th>epoch</th><th>best</th><th>experiment</th><th>created</th></tr>${jobRows}</table>`;
  for (const tr of document.querySelectorAll("tr[data-href]")) tr.onclick = () => (location.hash = tr.dataset.href);
  const timer = setTimeout(() => route(), 5000);
  return () => clearTimeout(timer);
}

async function jobView(id) {
  const job = await api.get("/api/v1/jobs/" + encodeURIComponent(id));
  const exp = job.experiment_id ? await api.get("/api/v1/experiments/" + encodeURIComponent(job.experiment_id)).catch(() => null) : null;
  const metricDefault = exp ? exp.metric : "val_accuracy";
  const maximize = exp ? exp.maximize : true;
  $("#crumb").innerHTML = `/ <a href="#/experiments/${esc(job.experiment_id)}">${esc(exp ? exp.name : job.experiment_id)}</a> / ${esc(id)}`;
  $("#main").innerHTML = `
    <h2>${esc(job.action)} job ${esc(id)} <span id="jobstatus">${statusBadge(job.status)}</span> <span id="live" class="muted"></span></h2>
    <div class="grid">
      <div class="card"><div>metric <select id="metric"></select> <span id="npoints" class="muted"></span></div><canvas id="curves"></canvas></div>
      <div class="card"><h2 class="flush">Best config</h2><div id="best" class="muted">none yet</div></div>
    </div>
    <h2>Trials: hyperparameters against ${esc(metricDefault)}</h2>
    <div class="card"><canvas id="parallel"></canvas></div>
    <h2>Trials</h2><table id="trials"></table>`;

  const state = {job, trials: new Map(), metrics: new Set(), metric: metricDefault, dirty: true};
  // One series per job id: the job itself (train) or each trial (AutoML).
  const seriesOf = (jid) => {
    if (!state.trials.has(jid)) state.trials.set(jid, {id: jid, trial: null, config: null, status: "", epochs: new Map()});
    return state.trials.get(jid);
  };
  if (job.action !== "automl") Object.assign(seriesOf(id), {config: job.config || {}, status: job.status});

  let lastTrialFetch = 0, fetching = false;
  async function refreshTrials() {
    if (fetching) return;
    fetching = true;
    try {
      const j = await api.get("/api/v1/jobs/" + encodeURIComponent(id));
      state.job = j;
      if (j.action === "automl") {
        const t = await api.get("/api/v1/jobs?limit=10000&parent=" + encodeURIComponent(id));
        for (const tj of t.jobs) Object.assign(seriesOf(tj.id), {trial: tj.trial, config: tj.config || {}, status: tj.status, best: tj.result ? tj.result.best_metric : null});
      } else {
        Object.assign(seriesOf(id), {status: j.status, best: j.result ? j.result.best_metric : null});
      }
      lastTrialFetch = Date.now();
      state.dirty = true;
    } catch (e) { showError(e); } finally { fetching = false; }
  }

  function render() {
    if (!state.dirty) return;
    state.dirty = false;
    const sel = $("#metric");
    const names = [...state.metrics].sort();
    if (sel.options.length !== names.length) {
      sel.innerHTML = names.map((n) => `<option ${n === state.metric ? "selected" : ""}>${esc(n)}</option>`).join("");
    }
    $("#jobstatus").innerHTML = statusBadge(state.job.status);
    const all = [...state.trials.values()].sort((a, b) => (a.trial ?? 0) - (b.trial ?? 0));
    const bestId = state.job.result ? state.job.result.best_job_id : null;
    const series = all.map((t, i) => ({
      label: t.trial ?? "", color: colorOf(i, all.length), width: t.id === bestId ? 3 : 1.5,
      points: [...t.epochs.entries()].sort((a, b) => a[0] - b[0]).map(([e, m]) => [e, m[state.metric]]),
    }));
    drawCurves($("#curves"), series, state.metric);
    $("#npoints").textContent = `${$("#curves").dataset.points} epochs, ${$("#curves").dataset.series} curves`;
    const bestOf = (t) => {
      if (Number.isFinite(t.best)) return t.best;
      const v = [...t.epochs.values()].map((m) => m[metricDefault]).filter(Number.isFinite);
      return v.length ? (maximize ? Math.max(...v) : Math.min(...v)) : null;
    };
    drawParallel($("#parallel"), all.map((t) => ({config: t.config, metric: bestOf(t)})), metricDefault, maximize);
    // Best config: the AutoML job's best trial, else the best so far, else the job's own.
    let best = all.find((t) => t.id === bestId);
    if (!best) best = all.filter((t) => Number.isFinite(bestOf(t))).sort((a, b) => (maximize ? -1 : 1) * (bestOf(a) - bestOf(b)))[0];
    if (best) {
      const cfg = Object.entries(best.config || {}).map(([k, v]) => `<tr><td>${esc(k)}</td><td>${fmt(v)}</td></tr>`).join("");
      $("#best").innerHTML = `<table class="kv"><tr><td>${best.trial !== null ? "trial" : "job"}</td><td>${esc(best.trial ?? best.id)}</td></tr>
        <tr><td>${esc(metricDefault)}</td><td>${fmt(bestOf(best) ?? "")}</td></tr>${cfg || '<tr><td colspan="2" class="muted">the experiment\'s spec</td></tr>'}</table>`;
    }
    const keys = [...new Set(all.flatMap((t) => Object.keys(t.config || {})))].sort();
    $("#trials").innerHTML = `<tr><th>trial</th><th>status</th><th>epochs</th><th>best ${esc(metricDefault)}</th>${keys.map((k) => `<th>${esc(k)}</th>`).join("")}</tr>` +
      all.map((t) => `<tr><td><span class="dot">●</span> ${esc(t.trial ?? t.id)}</td><td>${statusBadge(t.status)}</td>
        <td>${t.epochs.size}</td><td>${fmt(bestOf(t) ?? "")}</td>${keys.map((k) => `<td>${fmt((t.config || {})[k] ?? "")}</td>`).join("")}</tr>`).join("");
    // each trial's colour set through the DOM: the page's CSP allows no inline style attribute
    $("#trials").querySelectorAll("span.dot").forEach((d, i) => { d.style.color = colorOf(i, all.length); });
  }

  $("#metric").onchange = (e) => { state.metric = e.target.value; state.dirty = true; };
  await refreshTrials();
  const stream = new MetricStream(id, (ev) => {
    const t = seriesOf(ev.job_id);
    if (ev.trial !== undefined) t.trial = ev.trial;
    t.epochs.set(ev.epoch, ev.metrics);
    for (const [k, v] of Object.entries(ev.metrics)) if (typeof v === "number") state.metrics.add(k);
    if (t.config === null && Date.now() - lastTrialFetch > 1000) refreshTrials();
    state.dirty = true;
  }, (end) => {
    state.job = end;
    state.dirty = true;
    $("#live").textContent = "ended: " + end.status;
    refreshTrials();
  }, (s) => { if (!stream || !stream.ended) $("#live").textContent = s; });
  const timer = setInterval(() => { if (state.job.status === "running" || state.job.status === "queued") refreshTrials(); }, 3000);
  const frame = setInterval(render, 250);
  window.addEventListener("resize", () => (state.dirty = true));
  render();
  return () => { stream.close(); clearInterval(timer); clearInterval(frame); };
}

// Views are built asynchronously: a route() that starts while another is still building wins,
// and the older one is torn down as soon as it is built, so two views never draw at once.
let generation = 0;

async function route() {
  const gen = ++generation;
  if (current) { current(); current = null; }
  showError(null);
  const h = location.hash.replace(/^#/, "");
  let m, teardown;
  try {
    if ((m = h.match(/^\/jobs\/([^/]+)$/))) teardown = await jobView(decodeURIComponent(m[1]));
    else if ((m = h.match(/^\/experiments\/([^/]+)$/))) teardown = await listView(decodeURIComponent(m[1]));
    else teardown = await listView(null);
  } catch (e) {
    if (gen !== generation) return;
    showError(e);
    const timer = setTimeout(route, 5000);
    teardown = () => clearTimeout(timer);
  }
  if (gen !== generation) { teardown(); return; }
  current = teardown;
}

$("#token").value = api.token;
$("#token").onchange = (e) => {
  api.token = e.target.value.trim();
  localStorage.setItem("hone.token", api.token);
  route();
};
window.addEventListener("hashchange", route);
route();
