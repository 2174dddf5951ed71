// Tables the user can sort by any column: a click on a header sorts by it, a second click reverses.
// The caller keeps the sort state (so a table rebuilt by a refresh stays sorted) and the set of
// selected rows (checkboxes, for comparing). Cells are built from escaped text only.
"use strict";

export const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) =>
  ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);

// The value a column sorts by: numbers as numbers, missing values last either way.
function cmp(a, b) {
  const na = a === null || a === undefined || a === "", nb = b === null || b === undefined || b === "";
  if (na || nb) return na - nb;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, {numeric: true});
}

// columns: [{key, label, value: (row) => sortable value, html: (row) => escaped cell HTML, cls}]
// state: {key, dir: 1|-1} kept by the caller; opts.select: a Set of row ids (adds a checkbox
// column); opts.onRow(row): a row click; opts.rowClass(row);
// opts.after(sorted rows): after each build (a re-sort too), e.g. to colour its cells.
export function sortableTable(el, columns, rows, state, opts = {}) {
  const col = columns.find((c) => c.key === state.key);
  const sorted = col ? rows.slice().sort((a, b) => {
    const va = col.value(a), vb = col.value(b);
    const missing = (v) => v === null || v === undefined || v === "";
    if (missing(va) || missing(vb)) return cmp(va, vb); // missing last in both directions
    return state.dir * cmp(va, vb);
  }) : rows;
  const sel = opts.select;
  const head = (sel ? '<th class="pick"></th>' : "") + columns.map((c) =>
    `<th data-key="${esc(c.key)}" class="sortable${c.key === state.key ? (state.dir > 0 ? " asc" : " desc") : ""}">${esc(c.label)}</th>`).join("");
  const body = sorted.map((r) =>
    `<tr data-id="${esc(r.id)}" class="${opts.onRow ? "click " : ""}${opts.rowClass ? esc(opts.rowClass(r)) : ""}">` +
    (sel ? `<td class="pick"><input type="checkbox" data-id="${esc(r.id)}"${sel.has(r.id) ? " checked" : ""}></td>` : "") +
    columns.map((c) => `<td${c.cls ? ` class="${c.cls}"` : ""}>${c.html(r)}</td>`).join("") + "</tr>").join("");
  el.innerHTML = `<thead><tr>${head}</tr></thead><tbody>${body}</tbody>`;
  el.dataset.sort = state.key ? `${state.key}:${state.dir > 0 ? "asc" : "desc"}` : "";
  for (const th of el.querySelectorAll("th.sortable")) {
    th.onclick = () => {
      if (state.key === th.dataset.key) state.dir = -state.dir;
      else { state.key = th.dataset.key; state.dir = 1; }
      sortableTable(el, columns, rows, state, opts);
    };
  }
  const byId = new Map(rows.map((r) => [String(r.id), r]));
  for (const tr of el.querySelectorAll("tbody tr")) {
    if (opts.onRow) tr.onclick = (e) => { if (!e.target.closest("input, a, button")) opts.onRow(byId.get(tr.dataset.id)); };
  }
  if (sel) {
    for (const cb of el.querySelectorAll("td.pick input")) {
      cb.onchange = () => { cb.checked ? sel.add(cb.dataset.id) : sel.delete(cb.dataset.id); if (opts.onSelect) opts.onSelect(); };
    }
  }
  if (opts.after) opts.after(sorted);
  return sorted;
}
