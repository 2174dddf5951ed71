// Hone's page: plain JavaScript modules over the REST API (docs/rest.md), no library, no build
// step. Routes by the URL's hash: #/ lists experiments and jobs, #/experiments/ID its jobs,
// #/jobs/ID one job (job.js), #/compare/ID,ID curves and results side by side (compare.js),
// #/datasets the datasets with their stats (lists.js). The token the user types (the admin key,
// or a login token from `hone login`) is kept in localStorage and sent as a Bearer token.
"use strict";

import {api} from "./api.js";
import {compareView} from "./compare.js";
import {jobView} from "./job.js";
import {datasetsView, listView} from "./lists.js";
import {$, showError} from "./ui.js";

// The jobs and trials picked for comparing, kept across views and refreshes.
const picked = new Set();
const compareState = {mode: "overlay", clear: () => picked.clear()};

let current = null; // the open view's teardown

// Views are built asynchronously: a route() that starts while another is still building wins,
// and the older one is torn down as soon as it is built, so two views never draw at once.
let generation = 0;

async function route() {
  const gen = ++generation;
  if (current) { current(); current = null; }
  delete document.body.dataset.view;
  showError(null);
  const h = location.hash.replace(/^#/, "");
  let m, teardown;
  const onDatasets = h.startsWith("/datasets");
  $("#nav-jobs").classList.toggle("on", !onDatasets);
  $("#nav-datasets").classList.toggle("on", onDatasets);
  try {
    if ((m = h.match(/^\/jobs\/([^/]+)$/))) teardown = await jobView(decodeURIComponent(m[1]), picked);
    else if ((m = h.match(/^\/experiments\/([^/]+)$/))) teardown = await listView(decodeURIComponent(m[1]), picked);
    else if ((m = h.match(/^\/compare\/([^/]+)$/))) teardown = await compareView(m[1].split(",").map(decodeURIComponent), compareState);
    else if ((m = h.match(/^\/datasets(?:\/([^/]+))?$/))) teardown = await datasetsView(m[1] ? decodeURIComponent(m[1]) : null);
    else teardown = await listView(null, picked);
  } catch (e) {
    if (gen !== generation) return;
    showError(e);
    if ($("#main").querySelector("p.muted:only-child")) $("#main").innerHTML = '<p class="muted">nothing to show: see the error above</p>';
    const timer = setTimeout(route, 5000);
    teardown = () => clearTimeout(timer);
  }
  if (gen !== generation) { teardown(); return; }
  current = teardown;
  document.body.dataset.view = h; // the view shown (the browser test waits for it)
}

$("#token").value = api.token;
$("#token").onchange = (e) => {
  api.token = e.target.value.trim();
  localStorage.setItem("hone.token", api.token);
  route();
};
window.addEventListener("hashchange", route);
route();
