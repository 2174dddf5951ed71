// The lists: experiments and jobs (#/, #/experiments/ID), every table sortable by any column, jobs
// picked with their checkboxes for the compare view; and the datasets with their stats
// (#/datasets). They refresh every 5 s, keeping the sort and the picks.
"use strict";

import {api, enc} from "./api.js";
import {fmt} from "./draw.js";
import {esc, sortableTable} from "./table.js";
import {$, fmtBytes, statusBadge} from "./ui.js";
import {workersCard} from "./workers.js";

const sorts = {experiments: {key: "created", dir: -1}, jobs: {key: "created", dir: -1}, datasets: {key: "created", dir: -1}};

// "3/10 epochs", "2 failed" ... in a few words, for the jobs table.
function jobProgress(j) {
  const a = j.automl;
  if (a && typeof a === "object") {
    let t = `${a.trials_done ?? 0} trials done`;
    if (Number.isFinite(a.trials_failed) && a.trials_failed) t += `, ${a.trials_failed} failed`;
    return t;
  }
  if (Number.isFinite(j.epochs_target) && j.epochs_target) return `${j.epoch ?? 0}/${j.epochs_target} epochs`;
  return "";
}

const bestOf = (j) => (j.result ? j.result.best_metric ?? j.result.accuracy ?? null : null);

export async function listView(expId, compareSel) {
  $("#crumb").textContent = "";
  const [exps, jobs] = await Promise.all([
    api.get("/api/v1/experiments"),
    api.get("/api/v1/jobs?top=1&limit=500" + (expId ? "&experiment=" + enc(expId) : "")),
  ]);
  $("#main").innerHTML = `
    <h2>Experiments ${expId ? '<a href="#/" class="muted">(all jobs)</a>' : ""}</h2>
    <div class="scroll"><table id="experiments"></table></div>
    <h2>Jobs${expId ? " of " + esc(expId) : ""} <button id="compare" type="button" disabled>Compare selected</button></h2>
    <div class="scroll"><table id="jobs"></table></div>
    <div id="workersec" hidden><h2>Workers</h2><div class="scroll"><table id="workers"></table></div></div>`;
  const go = (href) => () => (location.hash = href);
  sortableTable($("#experiments"), [
    {key: "name", label: "name", value: (e) => e.name, html: (e) => `<a href="#/experiments/${esc(e.id)}">${esc(e.name)}</a>`},
    {key: "network", label: "network", value: (e) => e.network_arch, html: (e) => esc(e.network_arch)},
    {key: "metric", label: "metric", value: (e) => e.metric, html: (e) => esc(e.metric)},
    {key: "id", label: "id", value: (e) => e.id, cls: "muted", html: (e) => esc(e.id)},
    {key: "created", label: "created", value: (e) => e.created, cls: "muted", html: (e) => esc(e.created)},
  ], exps.experiments, sorts.experiments, {onRow: (e) => go("#/experiments/" + e.id)(), rowClass: (e) => (e.id === expId ? "sel" : "")});
  const rows = jobs.jobs.filter((j) => j.action !== "convert");
  const onSelect = () => ($("#compare").disabled = compareSel.size < 1);
  sortableTable($("#jobs"), [
    {key: "id", label: "id", value: (j) => j.id, html: (j) => `<a href="#/jobs/${esc(j.id)}">${esc(j.id)}</a>`},
    {key: "name", label: "name", value: (j) => j.name, html: (j) => esc(j.name || "")},
    {key: "action", label: "action", value: (j) => j.action, html: (j) => esc(j.action)},
    {key: "status", label: "status", value: (j) => j.status, html: (j) => statusBadge(j.status)},
    {key: "progress", label: "progress", value: (j) => (j.epochs_target ? (j.epoch || 0) / j.epochs_target : j.automl ? j.automl.trials_done : null), html: (j) => esc(jobProgress(j))},
    {key: "best", label: "best", value: bestOf, html: (j) => esc(fmt(bestOf(j) ?? ""))},
    {key: "error", label: "error", value: (j) => j.error || "", cls: "err", html: (j) => `<span title="${esc(j.error || "")}">${esc((j.error || "").split("\n").find((l) => l.trim()) || "")}</span>`},
    {key: "experiment", label: "experiment", value: (j) => j.experiment_id, cls: "muted", html: (j) => esc(j.experiment_id)},
    {key: "created", label: "created", value: (j) => j.created_unix ?? j.created, cls: "muted", html: (j) => esc(j.created)},
  ], rows, sorts.jobs, {select: compareSel, onSelect, onRow: (j) => go("#/jobs/" + j.id)()});
  onSelect();
  $("#compare").onclick = () => { location.hash = "#/compare/" + [...compareSel].map(enc).join(","); };
  workersCard($("#workersec"), $("#workers"), null);
  const timer = setTimeout(() => window.dispatchEvent(new HashChangeEvent("hashchange")), 5000);
  return () => clearTimeout(timer);
}

// The stats a dataset's check stored, by type: counts first, then the class map and box counts.
function statsSummary(d) {
  const s = d.stats || {};
  const n = (k) => (Number.isFinite(s[k]) ? s[k] : null);
  const parts = [];
  for (const [k, label] of [["train_images", "train"], ["val_images", "val"], ["test_images", "test"], ["images", "images"]]) {
    if (n(k) !== null) parts.push(`${n(k)} ${label}`);
  }
  return parts.join(", ");
}

function statsTable(d) {
  const s = d.stats || {};
  const rows = Object.entries(s).map(([k, v]) => {
    let text;
    if (Array.isArray(v) && k === "class_boxes" && Array.isArray(s.class_names)) text = v.map((c, i) => `${s.class_names[i]}: ${c}`).join(", ");
    else if (Array.isArray(v)) text = v.join(k === "image_shape" ? "×" : ", ");
    else if (v && typeof v === "object") text = Object.entries(v).map(([a, b]) => `${a}: ${typeof b === "object" ? JSON.stringify(b) : b}`).join(", ");
    else text = fmt(v);
    return `<tr><td>${esc(k)}</td><td>${esc(text)}</td></tr>`;
  });
  return `<table class="kv">${rows.join("")}</table>`;
}

export async function datasetsView(openId) {
  $("#crumb").textContent = "/ datasets";
  const ds = (await api.get("/api/v1/datasets?limit=1000")).datasets;
  $("#main").innerHTML = `<h2>Datasets</h2><div class="scroll"><table id="datasets"></table></div><div id="dsdetail"></div>`;
  sortableTable($("#datasets"), [
    {key: "name", label: "name", value: (d) => d.name, html: (d) => `<a href="#/datasets/${esc(d.id)}">${esc(d.name)}</a>`},
    {key: "type", label: "type", value: (d) => d.type, html: (d) => esc(d.type)},
    {key: "format", label: "format", value: (d) => d.format, html: (d) => esc(d.format)},
    {key: "images", label: "images", value: (d) => (d.stats || {}).train_images ?? (d.stats || {}).images, html: (d) => esc(statsSummary(d))},
    {key: "classes", label: "classes", value: (d) => (d.stats || {}).classes, html: (d) => esc(fmt((d.stats || {}).classes ?? ""))},
    {key: "shape", label: "image shape", value: (d) => ((d.stats || {}).image_shape || []).join("x"), html: (d) => esc(((d.stats || {}).image_shape || []).join("×"))},
    {key: "bytes", label: "size", value: (d) => d.bytes ?? null, html: (d) => esc(Number.isFinite(d.bytes) ? fmtBytes(d.bytes) : "")},
    {key: "id", label: "id", value: (d) => d.id, cls: "muted", html: (d) => esc(d.id)},
    {key: "created", label: "created", value: (d) => d.created, cls: "muted", html: (d) => esc(d.created)},
  ], ds, sorts.datasets, {onRow: (d) => (location.hash = "#/datasets/" + d.id), rowClass: (d) => (d.id === openId ? "sel" : "")});
  const d = openId && ds.find((x) => x.id === openId);
  if (d) {
    $("#dsdetail").innerHTML = `<div class="card"><h2 class="flush">${esc(d.name)} <span class="muted">${esc(d.id)}</span></h2>
      <p class="muted">${esc(d.type)} · ${esc(d.format)} · ${esc(d.path || "")}${d.description ? " · " + esc(d.description) : ""}</p>${statsTable(d)}</div>`;
  }
  return () => {};
}
