// Small DOM helpers the views share: the error line, the notice after an action, the confirmation
// dialog for destructive actions (an in-page <dialog>, not window.confirm), status badges and
// durations written as the CLI writes them.
"use strict";

import {esc} from "./table.js";

export const $ = (sel) => document.querySelector(sel);

export function showError(e) {
  const el = $("#error");
  el.hidden = !e;
  el.textContent = e ? String(e.message || e) : "";
}

// What an action did, or the API's refusal (ApiError's status, field and message), shown beside
// the action buttons; html is trusted markup built by the caller from escaped parts.
export function notice(html, isError) {
  const el = $("#notice");
  if (!el) return;
  el.hidden = !html;
  el.className = isError ? "notice error" : "notice";
  el.innerHTML = html || "";
}

// Resolves true when the user confirms. The dialog is in index.html.
export function confirmDialog(text, okLabel) {
  const dlg = $("#confirm");
  $("#confirm-text").textContent = text;
  $("#confirm-ok").textContent = okLabel;
  return new Promise((resolve) => {
    const done = (v) => { dlg.close(); $("#confirm-ok").onclick = $("#confirm-no").onclick = null; resolve(v); };
    $("#confirm-ok").onclick = () => done(true);
    $("#confirm-no").onclick = () => done(false);
    dlg.oncancel = () => done(false);
    dlg.showModal();
  });
}

export function statusBadge(s) {
  return `<span class="status ${esc(s)}">${esc(s)}</span>`;
}

// 75 -> "1m15s", 3700 -> "1h01m" (cli/out.c's cli_fmt_seconds).
export function fmtSeconds(s) {
  if (!Number.isFinite(s) || s < 0) return "?";
  s = Math.round(s);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

export function fmtBytes(n) {
  if (!Number.isFinite(n)) return "";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + u[i];
}

// Saves bytes the page fetched (with the token) as a file, through a link to a blob.
export function saveBlob(blob, name) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 60000);
}

export const isOver = (s) => ["done", "failed", "canceled", "stopped"].includes(s);
