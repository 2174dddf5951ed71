// The page's one way to the REST API (docs/rest.md): every call carries the token the user typed
// (Authorization: Bearer, kept in localStorage), and an error answer becomes an ApiError holding the
// API's own status, message and field, so the page can show the user what the controller said.
// EventStream reads Server-Sent Events with fetch (EventSource cannot send the token) and resumes
// with Last-Event-ID after a drop. Nothing here touches the DOM.
"use strict";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class ApiError extends Error {
  constructor(path, status, body) {
    const e = (body && body.error) || {};
    super(`${status}${e.field ? " " + e.field : ""}: ${e.message || "request failed"}`);
    this.path = path;
    this.status = status;
    this.field = e.field || null;
  }
}

export const api = {
  token: localStorage.getItem("hone.token") || "",
  headers(extra) {
    const h = Object.assign({}, extra || {});
    if (this.token) h.Authorization = "Bearer " + this.token;
    return h;
  },
  async req(method, path, body) {
    const init = {method, headers: this.headers(body !== undefined ? {"Content-Type": "application/json"} : null)};
    if (body !== undefined) init.body = JSON.stringify(body);
    const r = await fetch(path, init);
    const js = await r.json().catch(() => ({}));
    if (!r.ok) throw new ApiError(path, r.status, js);
    return js;
  },
  get(path) { return this.req("GET", path); },
  post(path, body) { return this.req("POST", path, body === undefined ? {} : body); },
  // A whole answer as text or bytes (logs, artifacts); an error answer still throws ApiError.
  async raw(path, kind) {
    const r = await fetch(path, {headers: this.headers()});
    if (!r.ok) throw new ApiError(path, r.status, await r.json().catch(() => ({})));
    return kind === "blob" ? r.blob() : r.text();
  },
};

export const enc = encodeURIComponent;
export const jobPath = (id) => "/api/v1/jobs/" + enc(id);

// handlers: {eventName: (data, id) => ...}; "end" marks the stream over (no reconnect), "auth"
// (a token that ended) closes it; onState gets "live", "reconnecting", ... for the user.
export class EventStream {
  constructor(url, handlers, onState) {
    this.url = url;
    this.handlers = handlers;
    this.onState = onState || (() => {});
    this.lastId = null;
    this.retry = 2000;
    this.closed = false;
    this.ended = false;
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
    if (event === "end") this.ended = true;
    if (event === "auth") { this.closed = true; this.onState(`signed out: ${obj.error.message}`); return; }
    const h = this.handlers[event];
    if (h) h(obj, id);
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
