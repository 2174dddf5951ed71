// The workers and their GPUs' use (the latest heartbeat's NVML telemetry), from GET /workers. With
// auth on that list is for admins only (hosts, folders and GPUs of every user's work): for anyone
// else it answers 403 and the section stays hidden, with no error shown.
"use strict";

import {api} from "./api.js";
import {esc} from "./table.js";
import {fmtBytes} from "./ui.js";

function gpuText(g) {
  const mem = Number.isFinite(g.mem_used) && Number.isFinite(g.mem_total) ? ` ${fmtBytes(g.mem_used)} / ${fmtBytes(g.mem_total)}` : "";
  return `GPU ${g.index}: ${Number.isFinite(g.util) ? g.util + "%" : "?"}${mem}`;
}

export function workersCard(section, table, jobWorker) {
  let denied = false;
  async function refresh() {
    if (denied) return;
    let ws;
    try {
      ws = (await api.get("/api/v1/workers")).workers;
    } catch (e) {
      if (e.status === 403 || e.status === 401) { denied = true; section.hidden = true; section.dataset.denied = "1"; }
      return;
    }
    section.hidden = false;
    const running = typeof jobWorker === "function" ? jobWorker() : null;
    table.innerHTML = `<tr><th>worker</th><th>host</th><th>alive</th><th>GPUs</th><th>CPUs</th><th>last seen</th></tr>` +
      ws.map((w) => {
        const gpus = Array.isArray(w.gpus) && w.gpus.length ? w.gpus.map(gpuText).join("; ")
          : (w.resources && Array.isArray(w.resources.gpus) && w.resources.gpus.length ? "no telemetry" : "none (CPU)");
        return `<tr class="${w.id === running ? "sel" : ""}"><td>${esc(w.name)}${w.id === running ? " (this job)" : ""}</td><td>${esc(w.host || "")}</td>
          <td>${w.alive ? "yes" : "no"}</td><td class="gpu">${esc(gpus)}</td><td>${esc(w.resources ? w.resources.cpus ?? "" : "")}</td>
          <td class="muted">${esc(Number.isFinite(w.last_seen) ? new Date(w.last_seen * 1000).toISOString().replace(/\.\d+Z$/, "Z") : w.last_seen || "")}</td></tr>`;
      }).join("");
    table.dataset.workers = String(ws.length);
  }
  refresh();
  return {refresh};
}
