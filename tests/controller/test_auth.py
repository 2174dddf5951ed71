"""Users, API keys and login tokens against a real controller with auth on (issue 10): every route
of api/openapi.yaml (read from the file, so a new route is covered by itself) without a token, with
a wrong one and with an expired one answers 401; a worker credential on any non-worker route and a
user on admin routes 403; the right credential gets past auth. Login, key revocation ending the
tokens made from it, another user's ids answering 404, and no key or token in clear in the SQLite
file."""
import http.client
import json
import os
import re
import shutil
import socket
import sqlite3
import sys
import threading
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ADMIN = "admin-key-0123456789"
ADMIN2 = "admin-key-rotated-9876543210"
ENROL = "enrol-me-0123456789"
PUBLIC = {"/", "/ui/{name}", "/healthz", "/readyz", "/api/v1/openapi.yaml", "/api/v1/login"}
# Operations only a worker (for its own lease) may call: (method, path).
WORKER_ROUTES = {("POST", "/api/v1/workers/{id}/heartbeat"), ("POST", "/api/v1/workers/{id}/lease"),
                 ("POST", "/api/v1/jobs/{id}/report"), ("POST", "/api/v1/jobs/{id}/complete"),
                 ("PUT", "/api/v1/jobs/{id}/artifacts/{name}"),
                 ("PUT", "/api/v1/datasets/{id}/packed/{name}")}
# Operations a user's login token may not call on the user's own rows: minting a key needs the
# user's API key itself (or an admin) since issue 26; disabling a user is the admin's.
KEY_ROUTES = {("POST", "/api/v1/users/{id}/keys")}
ADMIN_ROUTES = {("PATCH", "/api/v1/users/{id}")}
# Routes a worker may also read, for the job it holds a lease on (or a dataset that job reads):
# a worker holding no such lease gets 403 (404 for an id that does not exist at all).
WORKER_READS = {"/api/v1/datasets/{id}/files", "/api/v1/datasets/{id}/files/{name}",
                "/api/v1/datasets/{id}/packed/{name}", "/api/v1/jobs/{id}/artifacts",
                "/api/v1/jobs/{id}/artifacts/{name}", "/api/v1/jobs/{id}/artifacts/{dir}/{name}",
                "/api/v1/jobs/{id}/input", "/api/v1/jobs/{id}/input/{name}"}


def operations():
    spec = yaml.safe_load(open(os.path.join(ROOT, "api", "openapi.yaml")))
    for path, item in spec["paths"].items():
        for method in ("get", "post", "put", "patch", "delete"):
            if method in item:
                yield method.upper(), path


def fill(path, ids=None):
    return re.sub(r"\{(\w+)\}", lambda m: (ids or {}).get(m.group(1), "x-" + m.group(1)), path)


def bearer(tok):
    return {"Authorization": "Bearer " + tok}


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


# bodies that pass validation, so the owner check is what answers
BODIES = {"/api/v1/datasets/{id}/convert": {"input_size": 32},
          "/api/v1/experiments/{id}/jobs": {"action": "train"}}


def status(ctl, method, url, body, headers):
    """The status alone: streams (SSE) are not read to their end."""
    if url.endswith("/stream"):
        conn = http.client.HTTPConnection("127.0.0.1", ctl.port, timeout=30)
        conn.request(method, url, headers=headers)
        st = conn.getresponse().status
        conn.close()
        return st, None
    return ctl.req(method, url, body, headers=headers)


def ids_for(path, own):
    """The ids of one user's rows that a path's {id} means."""
    for prefix, key in (("/api/v1/datasets/", "ds"), ("/api/v1/experiments/", "exp"),
                        ("/api/v1/jobs/", "job"), ("/api/v1/users/", "user")):
        if path.startswith(prefix):
            return {"id": own[key], "key_id": own.get("key", "x"), "name": "model.bin",
                    "dir": "x"}
    return None


def ownership(ctl, d, ta, tb, adm, alice, bob, wcred, ka):
    """Alice's rows: 404 to Bob on every route naming them, absent from his lists, listed for the
    admin with their owner; reachable by Alice."""
    root = os.path.join(d, "idx")  # not in the data dir: no user may name a path there
    write_idx(root)
    ds = ctl.ok("POST", "/api/v1/datasets", {"name": "a", "path": root}, headers=ta)
    check(ds["owner"] == alice["id"], ds)
    exp = ctl.ok("POST", "/api/v1/experiments",
                 {"name": "e", "network_arch": "mlp", "train_datasets": [ds["id"]]}, headers=ta)
    job = ctl.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"},
                 headers=ta)
    check(exp["owner"] == alice["id"], exp)
    own = {"ds": ds["id"], "exp": exp["id"], "job": job["id"], "user": alice["id"]}
    # Bob cannot name Alice's dataset in an experiment of his (as if it did not exist)
    st, js = ctl.req("POST", "/api/v1/experiments",
                     {"name": "b", "network_arch": "mlp", "train_datasets": [ds["id"]]},
                     headers=tb)
    check(st in (404, 422) and js["error"]["field"] == "train_datasets", ("bob's exp", st, js))
    # nor register the controller's own folders (every user's uploads, packed files, artifacts)
    # nor a folder above them (the data dir's parent: its files, the store too, would be below)
    for sub in ("artifacts/probe", "datasets/probe", "packed/probe", "", ".."):
        probe = os.path.normpath(os.path.join(d, "data", sub))
        if sub:
            write_idx(probe)  # a good dataset, but where only the controller writes
        st, js = ctl.req("POST", "/api/v1/datasets", {"name": "b", "path": probe}, headers=tb)
        check(st == 422 and js["error"]["field"] == "path" and
              "controller's own folders" in js["error"]["message"], ("bob's path", sub, st, js))
    st, js = ctl.req("POST", "/api/v1/datasets",
                     {"name": "p", "path": os.path.join(d, "data", "artifacts/probe")}, headers=adm)
    check(st == 201, ("the admin may", st, js))
    for key, path in (("datasets", "/api/v1/datasets"), ("experiments", "/api/v1/experiments"),
                      ("jobs", "/api/v1/jobs")):
        mine = ctl.ok("GET", path, headers=ta)[key]
        check(len(mine) == 1 and mine[0]["id"] == own[key[:3] if key != "datasets" else "ds"],
              (key, mine))
        check(ctl.ok("GET", path, headers=tb)[key] == [], ("bob sees", key))
        every = ctl.ok("GET", path, headers=adm)[key]
        check(any(r["id"] == mine[0]["id"] and r.get("owner") == alice["id"] for r in every),
              ("admin list", key, every))
    for verb in ("pause", "resume", "cancel"):  # the {id}:verb spelling of the same routes
        st, js = ctl.req("POST", "/api/v1/jobs/%s:%s" % (job["id"], verb), headers=tb)
        check(st == 404, ("bob's verb", verb, st, js))
    n = 0
    for method, path in operations():
        ids = ids_for(path, own)
        if (method, path) in WORKER_ROUTES | ADMIN_ROUTES or not ids or "{" not in path:
            continue
        body = BODIES.get(path, {}) if method in ("POST", "PUT", "PATCH") else None
        st, js = status(ctl, method, fill(path, ids), body, tb)
        check(st == 404 or (st == 405 and method == "POST" and path == "/api/v1/jobs/{id}"),
              ("bob on alice's", method, path, st, js))
        if path in WORKER_READS and "{name}" not in path:  # a worker leasing none of hers
            st, js = status(ctl, method, fill(path, ids), body, wcred)
            check(st == 403, ("worker without a lease on alice's", method, path, st, js))
        n += 1
    # Alice reaches her own (deletes last, after every other route was tried)
    ops = sorted(operations(), key=lambda o: o[0] == "DELETE")
    for method, path in ops:
        ids = ids_for(path, own)
        if (method, path) in WORKER_ROUTES | ADMIN_ROUTES or not ids or "{" not in path:
            continue
        body = BODIES.get(path, {}) if method in ("POST", "PUT", "PATCH") else None
        st, js = status(ctl, method, fill(path, ids), body,
                        bearer(ka["key"]) if (method, path) in KEY_ROUTES else ta)
        # a named file, key or input need not exist (alice's job here is no inference job)
        named = "{name}" in path or "{key_id}" in path or path.endswith("/input")
        check(st not in (401, 403) and (named or st != 404), ("alice on hers", method, path, st,
                                                            js))
    return n


def open_stream(ctl, path, headers):
    """A raw GET of an SSE route (Connection: close, so its end is the socket's); returns the
    socket and what came before the first event."""
    s = socket.create_connection(("127.0.0.1", ctl.port), timeout=10)
    hdr = "".join("%s: %s\r\n" % kv for kv in headers.items())
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s\r\n" % (path, hdr))
              .encode())
    got = b""
    while b"retry: 2000" not in got:
        b = s.recv(65536)
        check(b, ("stream closed before it began", got))
        got += b
    check(got.startswith(b"HTTP/1.1 200"), got[:200])
    return s, got


def walks_shared(ctl, d, ta, adm):
    """A user's file lists are made one at a time (each hashes a folder on the thread pool every
    upload shares): while one of Alice's hashes a 4 GiB (sparse) file, her second is 503 with
    Retry-After; an admin's is not held back; once hers is done, the next is answered."""
    root = os.path.join(d, "big")
    write_idx(root)
    with open(os.path.join(root, "zz.bin"), "wb") as f:
        f.truncate(4 << 30)
    ds = ctl.ok("POST", "/api/v1/datasets", {"name": "big", "path": root}, headers=ta)["id"]
    path = "/api/v1/datasets/%s/files" % ds
    first = {}
    t = threading.Thread(target=lambda: first.update(r=ctl.req("GET", path, headers=ta,
                                                               timeout=300)))
    t.start()
    time.sleep(0.3)
    st, js = ctl.req("GET", path, headers=ta)
    check(st == 503 and "one at a time" in js["error"]["message"], ("alice's second list", st, js))
    st, js = ctl.req("GET", "/api/v1/datasets/%s/files" % ds, headers=adm, timeout=300)
    check(st == 200, ("the admin's list", st, js))
    t.join()
    check(first["r"][0] == 200 and len(first["r"][1]["files"]) == 5, ("alice's first", first))
    st, js = ctl.req("GET", path, headers=ta)
    check(st == 200, ("alice's next list", st, js))


def stream_revoked(ctl, ta, adm, ka):
    """A stream opened with a token ends when the token's key is revoked: an "auth" event naming
    the Authorization, then the end; reopening it is 401. A stream on another token of the same
    user stays open."""
    jobs = ctl.ok("GET", "/api/v1/jobs", headers=ta)["jobs"]
    job = [j for j in jobs if j["status"] == "queued"][0]["id"]
    k = ctl.ok("POST", "/api/v1/users/me/keys", headers=bearer(ka["key"]))
    tk = bearer(ctl.ok("POST", "/api/v1/login", {"key": k["key"]})["token"])
    path = "/api/v1/jobs/%s/metrics/stream" % job
    doomed, _ = open_stream(ctl, path, tk)
    kept, _ = open_stream(ctl, path, ta)
    # a user's share of limits.streams (8 here) is a quarter: a third is refused; an admin's is not
    st, js = ctl.req("GET", path, headers=ta)
    check(st == 503 and js["error"]["field"] == "limits.streams" and "share" in
          js["error"]["message"], ("a user's third stream", st, js))
    adm_s, _ = open_stream(ctl, path, adm)
    adm_s.close()
    ctl.ok("DELETE", "/api/v1/users/me/keys/%s" % k["id"], want=(204,), headers=ta)
    t0, got = time.time(), b""
    try:
        while True:  # to the end (10 s without a byte: it outlived the key)
            b = doomed.recv(65536)
            if not b:
                break
            got += b
            check(time.time() - t0 < 10, ("the stream outlived its revoked key", got))
    except socket.timeout:
        raise AssertionError(("the stream outlived its revoked key", got))
    took = time.time() - t0
    doomed.close()
    m = re.search(rb"event: auth\ndata: (\{.*?\})\n", got)
    check(m, ("no auth event before the end", got))
    ev = json.loads(m.group(1))
    check(ev["error"]["field"] == "Authorization" and "hone login" in ev["error"]["message"], ev)
    st, js = ctl.req("GET", path, headers=tk)
    check(st == 401, ("reopening with the revoked token", st, js))
    time.sleep(1.5)  # a tick or more after the revoke: the other token's stream is untouched
    kept.settimeout(0.5)
    try:
        b = kept.recv(65536)
        check(False, ("the other token's stream got data or closed", b))
    except socket.timeout:
        pass
    kept.close()
    print("stream of a revoked key: ended %.1f s after the revoke" % took)


def main():
    binary = binary_from_argv()
    d = tempdir()
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        # the data roots hold the data dir's parent: a user may not name it (it holds the store)
        f.write("auth: {admin_key: %s, worker_token: %s}\ndata_roots: [\"%s\"]\n"
                "limits: {streams: 8}\n" % (ADMIN, ENROL, d))
    ctl = Controller(binary, os.path.join(d, "data"), config=cfg).start()
    try:
        adm = bearer(ADMIN)
        # login with the admin key, and users with keys
        st, js = ctl.req("POST", "/api/v1/login", {"key": "nope"})
        check(st == 401, ("bad key", st, js))
        tok_admin = ctl.ok("POST", "/api/v1/login", {"key": ADMIN})
        check(tok_admin["user"]["id"] == "admin" and tok_admin["token"].startswith("ht_"),
              tok_admin)
        alice = ctl.ok("POST", "/api/v1/users", {"name": "alice"}, headers=adm)
        bob = ctl.ok("POST", "/api/v1/users", {"name": "bob"}, headers=adm)
        check(alice["role"] == "user", alice)
        st, js = ctl.req("POST", "/api/v1/users", {"name": "alice"}, headers=adm)
        check(st == 409, ("duplicate name", st, js))
        ka = ctl.ok("POST", "/api/v1/users/%s/keys" % alice["id"], headers=adm)
        kb = ctl.ok("POST", "/api/v1/users/%s/keys" % bob["id"], headers=adm)
        check(ka["key"].startswith("hk_") and ka["key"].startswith(ka["prefix"]), ka)
        la = ctl.ok("POST", "/api/v1/login", {"key": ka["key"]})
        lb = ctl.ok("POST", "/api/v1/login", {"key": kb["key"]})
        ta, tb = bearer(la["token"]), bearer(lb["token"])
        check(la["user"]["id"] == alice["id"], la)
        me = ctl.ok("GET", "/api/v1/users/me", headers=ta)
        check(me["id"] == alice["id"] and me["name"] == "alice", me)
        keys = ctl.ok("GET", "/api/v1/users/me/keys", headers=ta)["keys"]
        check([k["id"] for k in keys] == [ka["id"]] and "key" not in keys[0]
              and keys[0]["last_used"], keys)
        # users may not manage users, nor see another's keys
        for method, path in (("GET", "/api/v1/users"), ("POST", "/api/v1/users")):
            st, js = ctl.req(method, path, {"name": "eve"} if method == "POST" else None,
                             headers=ta)
            check(st == 403, (method, path, st, js))
        st, js = ctl.req("GET", "/api/v1/users/%s/keys" % bob["id"], headers=ta)
        check(st == 404, ("another user's keys", st, js))
        st, js = ctl.req("DELETE", "/api/v1/users/%s/keys/%s" % (bob["id"], kb["id"]), headers=ta)
        check(st == 404, ("revoking another user's key", st, js))
        # a user makes and revokes a key of their own; the token made from it ends with it
        # (a key is minted with a key since issue 26: the token may not, test_auth_keys.py)
        k2 = ctl.ok("POST", "/api/v1/users/me/keys", headers=bearer(ka["key"]))
        l2 = ctl.ok("POST", "/api/v1/login", {"key": k2["key"]})
        ctl.ok("GET", "/api/v1/users/me", headers=bearer(l2["token"]))
        ctl.ok("DELETE", "/api/v1/users/me/keys/%s" % k2["id"], want=(204,), headers=ta)
        st, js = ctl.req("GET", "/api/v1/users/me", headers=bearer(l2["token"]))
        check(st == 401 and "hone login" in js["error"]["message"], ("revoked token", st, js))
        st, js = ctl.req("POST", "/api/v1/login", {"key": k2["key"]})
        check(st == 401, ("login with a revoked key", st, js))
        ctl.ok("GET", "/api/v1/users/me", headers=ta)  # the other key's token lives on
        # an expired token: made to expire in the store itself
        l3 = ctl.ok("POST", "/api/v1/login", {"key": kb["key"]})
        db = sqlite3.connect(os.path.join(d, "data", "hone.db"), timeout=30)
        db.execute("UPDATE tokens SET expires = 1 WHERE expires = ?", (l3["expires_at_unix"],))
        db.commit()
        check(db.total_changes == 1, "expected one token made to expire")
        expired = bearer(l3["token"])
        st, js = ctl.req("GET", "/api/v1/users/me", headers=expired)
        check(st == 401 and "expired" in js["error"]["message"], ("expired token", st, js))

        w = FakeWorker(ctl)
        st, js = ctl.req("POST", "/api/v1/workers", {"name": "w"}, headers=ta)
        check(st == 403, ("a user registering a worker", st, js))
        w.ctl.req = (lambda orig: lambda m, p, b=None, **kw: orig(
            m, p, b, **dict(kw, headers=kw.get("headers") or bearer(ENROL))))(ctl.req)
        w.register()
        del w.ctl.req
        wcred = w.headers

        # every route of the API description
        n = 0
        for method, path in operations():
            if path in PUBLIC:
                continue
            n += 1
            url = fill(path)
            body = {} if method in ("POST", "PUT", "PATCH") else None
            for name, h in (("no token", {}), ("wrong token", bearer("ht_" + "0" * 64)),
                            ("bad token", bearer("nope")), ("expired token", expired)):
                st, js = ctl.req(method, url, body, headers=h)
                check(st == 401, (name, method, path, st, js))
            st, js = ctl.req(method, url, body, headers=bearer(ENROL))
            want_enrol = path == "/api/v1/workers" and method == "POST"
            check((st != 403) if want_enrol else st == 403, ("enrolment", method, path, st, js))
            if path in WORKER_READS and method == "GET":
                st, js = ctl.req(method, url, body, headers=wcred)
                check(st in (403, 404), ("worker credential", method, path, st, js))
            elif (method, path) not in WORKER_ROUTES:
                st, js = ctl.req(method, url, body, headers=wcred)
                check(st == 403, ("worker credential", method, path, st, js))
            for name, h in (("admin key", adm), ("admin token", bearer(tok_admin["token"]))):
                st, js = ctl.req(method, url, body, headers=h)
                check(st not in (401, 403), (name, method, path, st, js))
        check(n > 30, "only %d operations found in api/openapi.yaml" % n)

        n_own = ownership(ctl, d, ta, tb, adm, alice, bob, wcred, ka)
        check(n_own > 20, "only %d routes named ids" % n_own)
        stream_revoked(ctl, ta, adm, ka)
        walks_shared(ctl, d, ta, adm)

        # tokens made from the admin key live through a restart with that key, and end when the
        # key changes (a leaked key's rotation ends them); a user's token is not touched
        def restart(auth):
            ctl.stop()  # raises unless it exits cleanly
            with open(cfg, "w") as f:
                f.write((auth + "\n" if auth else "") + "data_roots: [\"%s\"]\n" % d)
            ctl.start()

        admin_tok = bearer(tok_admin["token"])
        restart("auth: {admin_key: %s, worker_token: %s}" % (ADMIN, ENROL))
        ctl.ok("GET", "/api/v1/users/me", headers=admin_tok)
        restart("auth: {admin_key: %s, worker_token: %s}" % (ADMIN2, ENROL))
        st, js = ctl.req("GET", "/api/v1/users/me", headers=admin_tok)
        check(st == 401 and "admin key that has changed" in js["error"]["message"],
              ("a token of the old admin key", st, js))
        st, js = ctl.req("POST", "/api/v1/login", {"key": ADMIN})
        check(st == 401, ("login with the old admin key", st, js))
        ctl.ok("GET", "/api/v1/users/me", headers=ta)
        tok_admin2 = ctl.ok("POST", "/api/v1/login", {"key": ADMIN2})["token"]
        check(ctl.ok("GET", "/api/v1/users/me", headers=bearer(tok_admin2))["id"] == "admin",
              "the new admin key's token")
        # a token made while no auth was configured is no admin token once auth is
        restart(None)
        open_tok = ctl.ok("POST", "/api/v1/login", {"key": "anything"})["token"]
        restart("auth: {admin_key: %s, worker_token: %s}" % (ADMIN2, ENROL))
        st, js = ctl.req("GET", "/api/v1/users", headers=bearer(open_tok))
        check(st == 401, ("a token made with no auth, now that auth is on", st, js))
        ctl.ok("GET", "/api/v1/users/me", headers=bearer(tok_admin2))

        # the store holds hashes only
        ctl.stop()
        raw = b""
        for name in os.listdir(os.path.join(d, "data")):
            p = os.path.join(d, "data", name)
            if os.path.isfile(p):
                raw += open(p, "rb").read()
        for secret in (ka["key"], kb["key"], k2["key"], la["token"], lb["token"],
                       tok_admin["token"], ADMIN, ADMIN2, tok_admin2, open_tok):
            check(secret.encode() not in raw, "a secret in clear in the store: " + secret[:6])
        db = sqlite3.connect(os.path.join(d, "data", "hone.db"))
        hashes = [r[0] for r in db.execute("SELECT key_hash FROM api_keys")]
        hashes += [r[0] for r in db.execute("SELECT token_hash FROM tokens")]
        check(len(hashes) >= 6 and all(re.fullmatch("[0-9a-f]{64}", h) for h in hashes),
              ("hashes only", hashes))
        print("auth: ok (%d operations, %d with another user's ids)" % (n, n_own))
    finally:
        ctl.stop()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
