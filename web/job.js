// One job's page (#/jobs/ID): its progress and ETA as `hone job wait` prints them, its error, the
// actions the REST API offers on it (pause, resume, cancel, evaluate, export, download), its
// learning curves live from the metrics stream, the best config, the trials in parallel
// coordinates and in a sortable table (pick some to compare), its log live from the log stream,
// the workers' GPUs (for callers that may list workers), and its artifacts.
"use strict";

import {api, enc, jobPath, EventStream} from "./api.js";
import {colorOf, drawCurves, drawParallel, fmt} from "./draw.js";
import {esc, sortableTable} from "./table.js";
import {$, confirmDialog, fmtBytes, fmtSeconds, isOver, notice, saveBlob, showError, statusBadge} from "./ui.js";
import {workersCard} from "./workers.js";

const LOG_LINES = 5000; // the most log lines kept on the page (the rest: GET /logs)

// The progress line: the same fields, in the same order, as cli/cmd_job.c's cli_job_progress,
// plus the share done for the bar. perEpoch: wall seconds per epoch as the stream saw them arrive
// (null: unknown, then the time since the start over the epochs); seen: the newest epoch streamed,
// last: its metrics (the job's row lags the stream by up to a refresh).
export function progressOf(job, now, perEpoch, seen, last) {
  const st = job.status;
  const started = job.started_unix, end = job.finished_unix || (isOver(st) ? null : now);
  const elapsed = started && end ? end - started : null;
  const parts = [st];
  let frac = null;
  const a = job.automl;
  if (a && typeof a === "object") {
    let t = `trials ${a.trials_done ?? 0} done`;
    if (Number.isFinite(a.trials_failed)) t += `, ${a.trials_failed} failed`;
    t += `, ${a.trials_running ?? 0} running`;
    if (Number.isFinite(a.trials_queued)) t += `, ${a.trials_queued} queued`;
    t += `, ${a.trials_paused ?? 0} halted at a rung, ${a.trials_stopped_early ?? 0} stopped early`;
    parts.push(t, `best ${a.metric || "metric"} ${Number.isFinite(a.best_metric) ? a.best_metric.toFixed(4) : "-"}`,
      `${Number.isFinite(a.epochs_remaining) ? a.epochs_remaining : "?"} epochs left`,
      `ETA ${isOver(st) ? "-" : fmtSeconds(a.eta_seconds)}`);
    if (Number.isFinite(a.gpu_util_mean)) parts.push(`GPU ${Math.round(a.gpu_util_mean)}%`);
    // a time budget: one line of what it used and has left, then what it cut once over
    if (Number.isFinite(a.budget_seconds)) {
      parts.push(`budget ${fmtSeconds(a.budget_seconds)}: ${fmtSeconds(a.budget_used_seconds)} used, ${fmtSeconds(a.budget_left_seconds)} left`);
      if (typeof a.budget_note === "string") parts.push(a.budget_note);
    }
    if (Number.isFinite(a.epochs_done) && Number.isFinite(a.epochs_remaining) && a.epochs_done + a.epochs_remaining > 0)
      frac = a.epochs_done / (a.epochs_done + a.epochs_remaining);
  } else if (job.action === "convert") {
    const p = job.progress || {};
    parts.push(`${p.images_done ?? 0}/${p.images_total ?? "?"} images`, `${Math.round(p.images_per_second || 0)} images/s`);
    if (p.images_total) frac = (p.images_done || 0) / p.images_total;
  } else if (Number.isFinite(job.epochs_target) && job.epochs_target > 0) {
    const e = Math.min(Math.max(job.epoch || 0, seen || 0), job.epochs_target), T = job.epochs_target;
    const fresh = last && seen >= (job.epoch || 0) ? last : job.result && job.result.last;
    const acc = fresh ? fresh.val_accuracy : undefined;
    parts.push(`epoch ${e}/${T}`, `val_accuracy ${Number.isFinite(acc) ? acc.toFixed(4) : "-"}`);
    let eta = null;
    if (!isOver(st) && e > 0 && e < T) {
      const per = perEpoch || (elapsed ? elapsed / e : null);
      if (per) eta = per * (T - e);
    }
    parts.push(`ETA ${isOver(st) ? "-" : fmtSeconds(eta ?? NaN)}`);
    frac = st === "done" ? 1 : e / T;
  }
  if (elapsed !== null) parts.push(fmtSeconds(elapsed));
  return {text: parts.join(" | "), frac};
}

function perEpoch(a) {
  if (a.length < 3) return null;
  const [t0, e0] = a[0], [t1, e1] = a[a.length - 1];
  return e1 > e0 && t1 - t0 > 0.3 ? (t1 - t0) / (e1 - e0) : null;
}

// What the model download fetches: an AutoML job's best model, an export's ONNX file, a train
// job's weights.
function modelFile(job) {
  if (job.action === "automl") return "best_model/model.bin";
  if (job.action === "export") return "model.onnx";
  if (job.action === "train") return "model.bin";
  return null;
}

const artifactPath = (id, name) => `${jobPath(id)}/artifacts/${name.split("/").map(enc).join("/")}`;

export async function jobView(id, compareSel) {
  const job = await api.get(jobPath(id));
  const exp = job.experiment_id ? await api.get("/api/v1/experiments/" + enc(job.experiment_id)).catch(() => null) : null;
  const metricDefault = exp ? exp.metric === "kpi" ? "val_accuracy" : exp.metric : "val_accuracy";
  const maximize = exp ? exp.maximize : true;
  const trainLike = job.action === "train" || job.action === "automl";
  $("#crumb").innerHTML = job.experiment_id
    ? `/ <a href="#/experiments/${esc(job.experiment_id)}">${esc(exp ? exp.name : job.experiment_id)}</a> / ${esc(id)}`
    : `/ ${esc(id)}`;
  $("#main").innerHTML = `
    <h2>${esc(job.action)} job ${esc(id)}${job.name ? " · " + esc(job.name) : ""} <span id="jobstatus">${statusBadge(job.status)}</span>
      <span id="live" class="muted"></span></h2>
    <div id="actions" class="actions">
      <button id="act-pause" type="button">Pause</button><button id="act-resume" type="button">Resume</button>
      <button id="act-cancel" type="button" class="danger">Cancel</button>
      <button id="act-evaluate" type="button">Evaluate</button><button id="act-export" type="button">Export ONNX</button>
      <button id="act-download" type="button">Download model</button>
      ${job.parent_id ? `<a href="#/jobs/${esc(job.parent_id)}">parent job</a>` : ""}
    </div>
    <p id="notice" class="notice" hidden></p>
    <div class="card progress"><div class="bar"><div id="bar"></div></div><div id="progress" class="mono"></div></div>
    <details id="automl" hidden><summary>Search details</summary><table class="kv" id="automltable"></table></details>
    <pre id="joberror" class="errbox" hidden></pre>
    <div id="result"></div>
    <div class="grid" id="plots">
      <div class="card"><div class="cardhead">metric <select id="metric"></select> <span id="npoints" class="muted"></span></div><canvas id="curves"></canvas></div>
      <div class="card"><h2 class="flush">Best config</h2><div id="best" class="muted">none yet</div></div>
    </div>
    <div id="parsec"><h2>Trials: hyperparameters against ${esc(metricDefault)}</h2>
    <div class="card"><canvas id="parallel"></canvas></div></div>
    <div id="trialsec"><h2><span id="trialshead">Trials</span> <button id="compare" type="button" disabled>Compare selected</button></h2>
    <div class="scroll"><table id="trials"></table></div></div>
    <h2>Log <span id="loginfo" class="muted"></span></h2>
    <pre id="logs" class="logs"></pre>
    <div id="workersec" hidden><h2>Workers</h2><div class="scroll"><table id="workers"></table></div></div>
    <h2>Artifacts</h2><div class="scroll"><table id="artifacts"></table></div>`;
  if (!trainLike) { $("#plots").hidden = true; $("#parsec").hidden = true; $("#trialsec").hidden = true; }

  const state = {job, trials: new Map(), metrics: new Set(), metric: metricDefault, dirty: true, files: null,
    sort: {key: "trial", dir: 1}, arrivals: [], seen: 0};
  const seriesOf = (jid) => {
    if (!state.trials.has(jid)) state.trials.set(jid, {id: jid, trial: null, config: null, status: "", epochs: new Map(), error: null});
    return state.trials.get(jid);
  };
  if (job.action !== "automl") Object.assign(seriesOf(id), {config: job.config || {}, status: job.status, error: job.error});

  let lastTrialFetch = 0, fetching = false, lastStatus = null;
  async function refresh() {
    if (fetching) return;
    fetching = true;
    try {
      const j = await api.get(jobPath(id));
      state.job = j;
      if (j.action === "automl") {
        const t = await api.get("/api/v1/jobs?limit=10000&parent=" + enc(id));
        for (const tj of t.jobs) Object.assign(seriesOf(tj.id), {trial: tj.trial, config: tj.config || {}, status: tj.status,
          best: tj.result ? tj.result.best_metric : null, error: tj.error || null, epochN: tj.epoch});
      } else {
        Object.assign(seriesOf(id), {status: j.status, best: j.result ? j.result.best_metric : null, error: j.error || null});
      }
      if (j.status !== lastStatus) { lastStatus = j.status; loadArtifacts(); }
      lastTrialFetch = Date.now();
      state.dirty = true;
    } catch (e) { showError(e); } finally { fetching = false; }
  }

  async function loadArtifacts() {
    try { state.files = (await api.get(`${jobPath(id)}/artifacts`)).files; } catch (e) { state.files = []; }
    state.dirty = true;
  }

  // ---- actions ----
  async function act(label, fn) {
    notice(null);
    try {
      const html = await fn();
      if (html) notice(html);
      await refresh();
    } catch (e) {
      notice(`${esc(label)} refused: ${esc(e.message || e)}`, true);
    }
  }
  const verb = (v) => () => api.post(`${jobPath(id)}:${v}`).then(() => `${v} sent`);
  const child = (action) => async () => {
    const j = await api.post(`/api/v1/experiments/${enc(state.job.experiment_id)}/jobs`, {action, parent_job_id: id});
    return `${esc(action)} job <a href="#/jobs/${esc(j.id)}" id="newjob">${esc(j.id)}</a> ${esc(j.status)}`;
  };
  $("#act-pause").onclick = () => act("pause", verb("pause"));
  $("#act-resume").onclick = () => act("resume", verb("resume"));
  $("#act-cancel").onclick = async () => {
    const what = state.job.action === "automl" ? "This ends the search and cancels its trials." : "Its training so far is kept but it will not run again.";
    if (await confirmDialog(`Cancel ${state.job.action} job ${id}? ${what}`, "Cancel the job")) act("cancel", verb("cancel"));
  };
  $("#act-evaluate").onclick = () => act("evaluate", child("evaluate"));
  $("#act-export").onclick = () => act("export", child("export"));
  $("#act-download").onclick = () => act("download", async () => {
    const name = modelFile(state.job);
    saveBlob(await api.raw(artifactPath(id, name), "blob"), `${id}-${name.split("/").pop()}`);
    return `downloaded ${esc(name)}`;
  });

  function renderActions() {
    const j = state.job, st = j.status, trial = !!j.parent_id;
    const pausable = (j.action === "train" || j.action === "automl") && !trial;
    $("#act-pause").disabled = !(pausable && (st === "running" || st === "queued"));
    $("#act-resume").disabled = !(pausable && st === "paused");
    $("#act-cancel").disabled = isOver(st);
    // an AutoML job has a best model as soon as one trial is done: the API says when it has none
    const model = j.action === "automl" ? st !== "canceled" : j.action === "train" && st === "done";
    $("#act-evaluate").disabled = $("#act-export").disabled = !model;
    const mf = modelFile(j);
    $("#act-download").disabled = !(mf && state.files && state.files.some((f) => f.name === mf));
  }

  // An ended non-training job's result: its plain fields, and for evaluate the confusion matrix
  // (rows: true class, columns: predicted) with each class's accuracy, shaded by row share.
  function renderResult() {
    const r = state.job.result || {};
    const el = $("#result");
    if (trainLike || !isOver(state.job.status)) { el.innerHTML = ""; return; }
    if (el.dataset.for === state.job.status) return;
    el.dataset.for = state.job.status;
    const scalars = Object.entries(r).filter(([, v]) => v !== null && typeof v !== "object");
    let html = `<div class="card"><h2 class="flush">Result</h2><table class="kv" id="resulttable">${scalars.map(([k, v]) =>
      `<tr><td>${esc(k)}</td><td>${esc(fmt(v))}</td></tr>`).join("")}</table>`;
    const cm = r.confusion_matrix, cls = r.classes;
    if (Array.isArray(cls) && Array.isArray(cm) && cm.length === cls.length) {
      html += `<h2>Confusion matrix <span class="muted">(rows: true class, columns: predicted)</span></h2>
        <div class="scroll"><table id="confusion" class="matrix"><tr><th></th>${cls.map((c) => `<th>${esc(c)}</th>`).join("")}<th>accuracy</th></tr>` +
        cm.map((row, i) => `<tr><th>${esc(cls[i])}</th>${row.map((n) => `<td>${esc(n)}</td>`).join("")}
          <td>${esc(fmt((r.per_class_accuracy || [])[i] ?? "-"))}</td></tr>`).join("") + "</table></div>";
    }
    el.innerHTML = html + "</div>";
    if (Array.isArray(cm)) {
      el.querySelectorAll("#confusion tr").forEach((tr, i) => {
        if (!i) return;
        const row = cm[i - 1] || [], total = row.reduce((a, b) => a + b, 0) || 1;
        tr.querySelectorAll("td").forEach((td, j) => {
          if (j >= row.length) return;
          td.style.backgroundColor = `hsla(${i - 1 === j ? 140 : 0}, 70%, 45%, ${(row[j] / total) * 0.8})`;
        });
      });
    }
  }

  function render() {
    if (!state.dirty) return;
    state.dirty = false;
    const j = state.job;
    $("#jobstatus").innerHTML = statusBadge(j.status);
    const p = progressOf(j, Date.now() / 1000, perEpoch(state.arrivals), state.seen, state.last);
    $("#progress").textContent = p.text;
    $("#bar").hidden = p.frac === null;
    $("#bar").className = j.status === "failed" || j.status === "canceled" ? "bad" : "";
    if (p.frac !== null) $("#bar").style.width = `${Math.round(Math.min(1, Math.max(0, p.frac)) * 100)}%`;
    if (j.automl && typeof j.automl === "object") {
      // every plain field the controller reports, those added later too
      const kv = Object.entries(j.automl).filter(([, v]) => v !== null && typeof v !== "object");
      $("#automl").hidden = !kv.length;
      $("#automltable").innerHTML = kv.map(([k, v]) => `<tr><td>${esc(k)}</td><td>${esc(fmt(v))}</td></tr>`).join("");
    }
    $("#joberror").hidden = !j.error;
    $("#joberror").textContent = j.error || "";
    renderActions();
    renderResult();
    renderArtifacts();
    const anyEpoch = [...state.trials.values()].some((t) => t.epochs.size);
    $("#plots").hidden = !trainLike || (isOver(j.status) && !anyEpoch);
    $("#parsec").hidden = j.action !== "automl";
    $("#trialshead").textContent = j.action === "automl" ? "Trials" : "This job";
    if (!trainLike) return;
    const sel = $("#metric");
    const names = [...state.metrics].sort();
    if (sel.options.length !== names.length) {
      sel.innerHTML = names.map((n) => `<option ${n === state.metric ? "selected" : ""}>${esc(n)}</option>`).join("");
    }
    // trials in their numbers' order, each in the colour of its number (the compare view's too)
    const all = [...state.trials.values()].sort((a, b) => (a.trial ?? 0) - (b.trial ?? 0));
    all.forEach((t, i) => (t.color = colorOf(Number.isInteger(t.trial) ? t.trial : i)));
    const bestId = (j.result && j.result.best_job_id) || (j.automl && j.automl.best_job_id) || null;
    const bestOf = (t) => {
      if (Number.isFinite(t.best)) return t.best;
      const v = [...t.epochs.values()].map((m) => m[metricDefault]).filter(Number.isFinite);
      return v.length ? (maximize ? Math.max(...v) : Math.min(...v)) : null;
    };
    const bestEpoch = (t, jj) => {
      if (jj.result && jj.result.best_epoch) return jj.result.best_epoch;
      const es = [...t.epochs.entries()].filter(([, m]) => Number.isFinite(m[metricDefault]));
      if (!es.length) return "-";
      return es.reduce((a, b) => ((maximize ? b[1][metricDefault] > a[1][metricDefault] : b[1][metricDefault] < a[1][metricDefault]) ? b : a))[0];
    };
    let best = all.find((t) => t.id === bestId);
    if (!best) best = all.filter((t) => Number.isFinite(bestOf(t))).sort((a, b) => (maximize ? -1 : 1) * (bestOf(a) - bestOf(b)))[0];
    drawCurves($("#curves"), all.map((t) => ({
      id: t.id, label: t.trial ?? "", color: t.color, width: best && t.id === best.id && all.length > 1 ? 3 : 1.5,
      points: [...t.epochs.entries()].sort((a, b) => a[0] - b[0]).map(([e, m]) => [e, m[state.metric]]),
    })), state.metric);
    $("#npoints").textContent = `${$("#curves").dataset.points} epochs, ${$("#curves").dataset.series} curves`;
    drawParallel($("#parallel"), all.map((t) => ({id: t.id, config: t.config, metric: bestOf(t), color: t.color,
      bold: best && t.id === best.id && all.length > 1})), metricDefault);
    if (best) {
      const cfg = Object.entries(best.config || {}).map(([k, v]) => `<tr><td>${esc(k)}</td><td>${esc(fmt(v))}</td></tr>`).join("");
      $("#best").innerHTML = `<table class="kv"><tr><td>${best.trial !== null ? "trial" : "job"}</td><td>${esc(best.trial ?? best.id)}</td></tr>
        <tr><td>${esc(metricDefault)}</td><td>${esc(fmt(bestOf(best) ?? ""))}</td></tr>${cfg || `<tr><td>best epoch</td><td>${esc(bestEpoch(best, j))}</td></tr><tr><td colspan="2" class="muted">the experiment's spec</td></tr>`}</table>`;
    }
    const keys = [...new Set(all.flatMap((t) => Object.keys(t.config || {})))].sort();
    const anyError = all.some((t) => t.error);
    const cols = [
      {key: "trial", label: "trial", value: (t) => t.trial ?? t.id, html: (t) => `<span class="dot">●</span> <a href="#/jobs/${esc(t.id)}">${esc(t.trial ?? t.id)}</a>`},
      {key: "status", label: "status", value: (t) => t.status, html: (t) => statusBadge(t.status)},
      {key: "epochs", label: "epochs", value: (t) => Math.max(t.epochs.size, t.epochN || 0), html: (t) => esc(Math.max(t.epochs.size, t.epochN || 0))},
      {key: "best", label: `best ${metricDefault}`, value: bestOf, html: (t) => esc(fmt(bestOf(t) ?? ""))},
      ...(anyError ? [{key: "error", label: "error", value: (t) => t.error || "", cls: "err", html: (t) => `<span title="${esc(t.error || "")}">${esc((t.error || "").split("\n").find((l) => l.trim()) || "")}</span>`}] : []),
      ...keys.map((k) => ({key: "cfg." + k, label: k, value: (t) => (t.config || {})[k], html: (t) => esc(fmt((t.config || {})[k] ?? ""))})),
    ];
    // each trial's colour set through the DOM: the page's CSP allows no inline style attribute
    sortableTable($("#trials"), cols, all, state.sort, {select: compareSel, onSelect: () => ($("#compare").disabled = compareSel.size < 1),
      after: (rows) => $("#trials").querySelectorAll("span.dot").forEach((d, i) => { d.style.color = rows[i].color; })});
    $("#compare").disabled = compareSel.size < 1;
  }

  function renderArtifacts() {
    if (!state.files) return;
    const el = $("#artifacts");
    if (el.dataset.n === String(state.files.length) && el.dataset.job === id) return;
    el.dataset.n = String(state.files.length);
    el.dataset.job = id;
    el.innerHTML = state.files.length
      ? `<tr><th>file</th><th>size</th><th></th></tr>` + state.files.map((f) =>
        `<tr><td>${esc(f.name)}</td><td>${esc(fmtBytes(f.bytes))}</td><td><button type="button" data-name="${esc(f.name)}">download</button></td></tr>`).join("")
      : `<tr><td class="muted">none yet</td></tr>`;
    for (const b of el.querySelectorAll("button[data-name]")) {
      b.onclick = () => act("download", async () => {
        saveBlob(await api.raw(artifactPath(id, b.dataset.name), "blob"), `${id}-${b.dataset.name.split("/").pop()}`);
        return `downloaded ${esc(b.dataset.name)}`;
      });
    }
  }

  $("#compare").onclick = () => { location.hash = "#/compare/" + [...compareSel].map(enc).join(","); };
  $("#metric").onchange = (e) => { state.metric = e.target.value; state.dirty = true; };
  await refresh();

  // ---- live: metrics, then logs ----
  const metricsStream = !trainLike ? null : new EventStream(`${jobPath(id)}/metrics/stream`, {
    epoch: (ev) => {
      const t = seriesOf(ev.job_id);
      if (ev.trial !== undefined) t.trial = ev.trial;
      t.epochs.set(ev.epoch, ev.metrics);
      if (ev.job_id === id) {
        // a burst (the stored epochs at connect) is not a pace: start counting after it
        const now = performance.now() / 1000, a = state.arrivals;
        if (a.length && now - a[a.length - 1][0] < 0.05) a.length = 0;
        a.push([now, ev.epoch]);
        if (a.length > 12) a.shift();
        if (ev.epoch >= state.seen) { state.seen = ev.epoch; state.last = ev.metrics; }
      }
      for (const [k, v] of Object.entries(ev.metrics)) if (typeof v === "number") state.metrics.add(k);
      if ((t.config === null || state.job.status !== "running") && Date.now() - lastTrialFetch > 1000) refresh();
      state.dirty = true;
    },
    end: (end) => {
      state.job = end;
      state.dirty = true;
      $("#live").textContent = "ended: " + end.status;
      refresh();
    },
  }, (s) => { if (!metricsStream || !metricsStream.ended) $("#live").textContent = s; });
  const logs = {lines: [], stream: null};
  const logEl = $("#logs");
  const showLogs = () => {
    const atEnd = logEl.scrollTop + logEl.clientHeight >= logEl.scrollHeight - 4;
    logEl.textContent = logs.lines.length ? logs.lines.join("\n") : logs.complete ? "no log lines" : "no log lines yet";
    logEl.dataset.lines = String(logs.lines.length);
    if (atEnd) logEl.scrollTop = logEl.scrollHeight;
  };
  logs.stream = new EventStream(`${jobPath(id)}/logs/stream`, {
    log: (ev) => {
      logs.lines.push((ev.trial !== null && ev.trial !== undefined ? `[trial ${ev.trial}] ` : "") + ev.line);
      if (logs.lines.length > LOG_LINES) logs.lines.splice(0, logs.lines.length - LOG_LINES);
      showLogs();
    },
    // the job is over: GET /logs has every line, the worker's tail after the last epoch too
    end: async () => {
      try {
        const text = await api.raw(`${jobPath(id)}/logs`, "text");
        logs.complete = true;
        logs.lines = text.split("\n").filter((l, i, a) => l !== "" || i < a.length - 1).slice(-LOG_LINES);
        showLogs();
        $("#loginfo").textContent = "(complete)";
      } catch (e) { showError(e); }
    },
  }, (s) => { $("#loginfo").textContent = s === "live" ? "(live)" : `(${s})`; });
  showLogs();

  const workers = workersCard($("#workersec"), $("#workers"), () => state.job.worker_id);
  const timer = setInterval(() => {
    if (!isOver(state.job.status)) refresh();
    if (!isOver(state.job.status)) workers.refresh();
    state.dirty = true; // the elapsed time moves
  }, 3000);
  const frame = setInterval(render, 250);
  const onResize = () => (state.dirty = true);
  window.addEventListener("resize", onResize);
  render();
  return () => {
    if (metricsStream) metricsStream.close();
    logs.stream.close();
    clearInterval(timer);
    clearInterval(frame);
    window.removeEventListener("resize", onResize);
  };
}
