// Comparing jobs or trials (#/compare/ID,ID,...): their learning curves overlaid on one plot or side
// by side on plots that share their axes, and a table of their results and hyperparameters sortable
// by any column. An AutoML job stands for its best trial. Each item keeps one colour in every plot
// and its table row. Refreshes while any of them runs.
"use strict";

import {api, jobPath} from "./api.js";
import {colorOf, curvesRange, drawCurves, fmt} from "./draw.js";
import {esc, sortableTable} from "./table.js";
import {$, isOver, statusBadge} from "./ui.js";

const LAST = ["train_loss", "val_loss", "val_accuracy", "val_map"];

async function loadItem(id) {
  const job = await api.get(jobPath(id));
  const m = await api.get(`${jobPath(id)}/metrics?limit=10000`);
  let epochs = m.metrics || [], config = job.config || {}, trial = job.trial ?? null;
  if (job.action === "automl") {
    const r = job.result || {}, a = job.automl || {};
    const bt = r.best_trial ?? a.best_trial;
    epochs = bt !== undefined && bt !== null && m.trials ? m.trials[String(bt)] || [] : [];
    config = r.best_config || a.best_config || {};
    trial = bt ?? null;
  }
  return {id, job, epochs, config, trial};
}

export async function compareView(ids, state) {
  $("#crumb").textContent = "/ compare";
  $("#main").innerHTML = `
    <h2>Compare ${ids.length} ${ids.length === 1 ? "job" : "jobs"} <span class="muted">(an AutoML job shows its best trial)</span></h2>
    <div class="cardhead">metric <select id="metric"></select>
      <span class="seg"><button type="button" id="mode-overlay">Overlaid</button><button type="button" id="mode-side">Side by side</button></span>
      <button type="button" id="clear-compare">Clear selection</button></div>
    <div id="cmp-overlay" class="card"><canvas id="cmp-curves"></canvas><div id="cmp-legend" class="legend"></div></div>
    <div id="cmp-multi" class="multi"></div>
    <h2>Results</h2><div class="scroll"><table id="cmp-table"></table></div>`;
  let items = [];
  const sort = {key: "item", dir: 1};
  let metric = null;

  async function load() {
    items = await Promise.all(ids.map(loadItem));
    // trials of one search keep the colours their job page gives them (their numbers')
    const oneSearch = items.every((it) => it.job.parent_id && it.job.parent_id === items[0].job.parent_id && Number.isInteger(it.trial));
    items.forEach((it, i) => (it.color = colorOf(oneSearch ? it.trial : i)));
    const names = [...new Set(items.flatMap((it) => it.epochs.flatMap((e) => Object.keys(e).filter((k) => k !== "epoch" && typeof e[k] === "number"))))].sort();
    if (!metric) metric = names.includes("val_accuracy") ? "val_accuracy" : names.includes("val_map") ? "val_map" : names[0] || "val_accuracy";
    $("#metric").innerHTML = names.map((n) => `<option ${n === metric ? "selected" : ""}>${esc(n)}</option>`).join("");
    render();
  }

  function render() {
    const series = items.map((it) => ({id: it.id, color: it.color, points: it.epochs.map((e) => [e.epoch, e[metric]])}));
    const side = state.mode === "side";
    $("#mode-overlay").classList.toggle("on", !side);
    $("#mode-side").classList.toggle("on", side);
    $("#cmp-overlay").hidden = side;
    $("#cmp-multi").hidden = !side;
    if (!side) {
      drawCurves($("#cmp-curves"), series, metric);
      const lg = $("#cmp-legend");
      if (lg.children.length !== items.length) {
        lg.innerHTML = items.map((it, i) => `<span><span class="dot">●</span> ${i + 1} · ${esc(it.job.action)} ${esc(it.id)}${it.trial !== null ? " · trial " + esc(it.trial) : ""}</span>`).join("");
        lg.querySelectorAll("span.dot").forEach((d, i) => { d.style.color = items[i].color; });
      }
    }
    else {
      const range = curvesRange(series);
      const multi = $("#cmp-multi");
      if (multi.children.length !== items.length) {
        multi.innerHTML = items.map((it) => `<div class="card"><div class="cardhead"><span class="dot">●</span> ${esc(it.id)}${it.trial !== null ? " · trial " + esc(it.trial) : ""}</div><canvas></canvas></div>`).join("");
        multi.querySelectorAll("span.dot").forEach((d, i) => { d.style.color = items[i].color; });
      }
      multi.querySelectorAll("canvas").forEach((cv, i) => drawCurves(cv, [series[i]], metric, range));
    }
    const keys = [...new Set(items.flatMap((it) => Object.keys(it.config)))].sort();
    const best = (it) => (it.job.result ? it.job.result.best_metric ?? null : null);
    const last = (it, k) => (it.epochs.length ? it.epochs[it.epochs.length - 1][k] ?? null : null);
    const rows = items.map((it, i) => Object.assign(it, {index: i}));
    sortableTable($("#cmp-table"), [
      {key: "item", label: "#", value: (it) => it.index, html: (it) => `<span class="dot">●</span> ${it.index + 1}`},
      {key: "job", label: "job", value: (it) => it.id, html: (it) => `<a href="#/jobs/${esc(it.id)}">${esc(it.id)}</a>`},
      {key: "action", label: "action", value: (it) => it.job.action, html: (it) => esc(it.job.action)},
      {key: "trial", label: "trial", value: (it) => it.trial, html: (it) => esc(it.trial ?? "")},
      {key: "status", label: "status", value: (it) => it.job.status, html: (it) => statusBadge(it.job.status)},
      {key: "epochs", label: "epochs", value: (it) => it.epochs.length, html: (it) => esc(it.epochs.length)},
      {key: "best", label: "best", value: best, html: (it) => esc(fmt(best(it) ?? ""))},
      ...LAST.filter((k) => items.some((it) => last(it, k) !== null)).map((k) =>
        ({key: "last." + k, label: k, value: (it) => last(it, k), html: (it) => esc(fmt(last(it, k) ?? ""))})),
      ...keys.map((k) => ({key: "cfg." + k, label: k, value: (it) => it.config[k], html: (it) => esc(fmt(it.config[k] ?? ""))})),
    ], rows, sort, {after: (shown) => $("#cmp-table").querySelectorAll("span.dot").forEach((d, i) => { d.style.color = shown[i].color; })});
  }

  $("#metric").onchange = (e) => { metric = e.target.value; render(); };
  $("#mode-overlay").onclick = () => { state.mode = "overlay"; render(); };
  $("#mode-side").onclick = () => { state.mode = "side"; render(); };
  $("#clear-compare").onclick = () => { state.clear(); location.hash = "#/"; };
  await load();
  const timer = setInterval(() => { if (items.some((it) => !isOver(it.job.status))) load().catch(() => {}); }, 3000);
  const onResize = () => render();
  window.addEventListener("resize", onResize);
  return () => { clearInterval(timer); window.removeEventListener("resize", onResize); };
}
