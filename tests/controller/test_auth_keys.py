"""Keys outlive nothing that made them (issue 26, case 4 and part of 8) against a real controller
with auth on: a login token cannot mint a key, the key itself (or an admin) can, and the new key
records who made it and from which key; revoking a key revokes what it minted, transitively, and
ends their tokens; an admin's key minted with the admin key ends when that key is rotated (a plain
user's does not); a disabled user's tokens and keys stop at once (an open stream ends, an upload
under way is refused once its body is in, login is 403 naming why), its rows stay, and enabling gives the keys back; caps on live keys per user (409)
and live tokens per key (the oldest ends); user names unique whatever their case and free of
controls, bidi and zero-width characters (422 naming name); GET /api/v1/workers and /metrics for
admins only; a store with names differing in case upgrades. Nothing stored changes on a refusal."""
import io
import os
import shutil
import socket
import sqlite3
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir, write_idx  # noqa: E402
from test_auth import open_stream  # noqa: E402

ADMIN = "admin-key-0123456789"
ADMIN2 = "admin-key-rotated-9876543210"


def bearer(tok):
    return {"Authorization": "Bearer " + tok}


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


class Store:
    """Read-only looks at the SQLite file, to assert what a refusal left alone."""

    def __init__(self, path):
        self.path = path

    def rows(self, sql, *args):
        db = sqlite3.connect("file:%s?mode=ro" % self.path, uri=True, timeout=30)
        try:
            return db.execute(sql, args).fetchall()
        finally:
            db.close()

    def count(self, table):
        return self.rows("SELECT count(*) FROM %s" % table)[0][0]

    def snap(self):
        return {t: self.rows("SELECT * FROM %s ORDER BY 1" % t)
                for t in ("users", "api_keys", "tokens")}


def login(ctl, key):
    return bearer(ctl.ok("POST", "/api/v1/login", {"key": key})["token"])


def minting(ctl, store, adm, alice, bob):
    """Who may mint a key, and what the key records."""
    ka = ctl.ok("POST", "/api/v1/users/%s/keys" % alice["id"], headers=adm)
    check(ka["created_by"] == "admin" and ka.get("parent_key") is None, ka)
    ta = login(ctl, ka["key"])
    before = store.snap()
    st, js = ctl.req("POST", "/api/v1/users/me/keys", headers=ta)
    check(st == 403 and js["error"]["field"] == "Authorization" and "API key" in
          js["error"]["message"], ("a token minting a key", st, js))
    check(store.snap() == before, "a refused mint changed the store")
    # the key itself may, for its own user only (another's id is 404, as anywhere)
    k2 = ctl.ok("POST", "/api/v1/users/me/keys", headers=bearer(ka["key"]))
    check(k2["created_by"] == alice["id"] and k2["parent_key"] == ka["id"] and
          k2["user_id"] == alice["id"], k2)
    st, js = ctl.req("POST", "/api/v1/users/%s/keys" % bob["id"], headers=bearer(ka["key"]))
    check(st == 404, ("alice's key minting bob's", st, js))
    # a key is sent nowhere else: it is traded for a token at /login
    st, js = ctl.req("GET", "/api/v1/users/me", headers=bearer(ka["key"]))
    check(st == 401 and "login" in js["error"]["message"], ("a key as a bearer token", st, js))
    # an admin's token may mint for anyone: the key records the token's origin
    tadm = login(ctl, ADMIN)
    kb = ctl.ok("POST", "/api/v1/users/%s/keys" % bob["id"], headers=tadm)
    check(kb["created_by"] == "admin" and kb.get("parent_key") is None, kb)
    listed = {k["id"]: k for k in ctl.ok("GET", "/api/v1/users/me/keys", headers=ta)["keys"]}
    check(listed[k2["id"]]["parent_key"] == ka["id"] and listed[ka["id"]]["created_by"] ==
          "admin", listed)
    return ka, ta, kb


def revoking(ctl, store, alice, ka, ta):
    """Revoking a key ends the keys minted with it (and theirs), and every token of them."""
    root = ctl.ok("POST", "/api/v1/users/me/keys", headers=bearer(ka["key"]))
    child = ctl.ok("POST", "/api/v1/users/me/keys", headers=bearer(root["key"]))
    grandchild = ctl.ok("POST", "/api/v1/users/me/keys", headers=bearer(child["key"]))
    toks = [login(ctl, k["key"]) for k in (root, child, grandchild)]
    for t in toks:
        ctl.ok("GET", "/api/v1/users/me", headers=t)
    ctl.ok("DELETE", "/api/v1/users/me/keys/%s" % root["id"], want=(204,), headers=ta)
    for t in toks:
        st, js = ctl.req("GET", "/api/v1/users/me", headers=t)
        check(st == 401, ("a token below a revoked key", st, js))
    for k in (root, child, grandchild):
        st, js = ctl.req("POST", "/api/v1/login", {"key": k["key"]})
        check(st == 401 and js["error"]["field"] == "key", ("login below a revoked key", st, js))
    listed = {k["id"]: k for k in ctl.ok("GET", "/api/v1/users/me/keys", headers=ta)["keys"]}
    check(all(listed[k["id"]]["revoked"] for k in (root, child, grandchild)), listed)
    check(listed[ka["id"]]["revoked"] is None, "the parent of the revoked key was revoked too")
    ctl.ok("GET", "/api/v1/users/me", headers=ta)
    n = store.rows("SELECT count(*) FROM tokens WHERE key_id IN (?,?,?)", root["id"], child["id"],
                   grandchild["id"])[0][0]
    check(n == 0, "tokens of revoked keys left in the store")


def disabling(ctl, store, d, adm, alice, ka, ta):
    """A disabled user: tokens and keys refused at once, an open stream ends, rows stay; only an
    admin disables, never the built-in admin; enabling gives the keys back, not the tokens."""
    root = os.path.join(d, "idx")
    write_idx(root)
    ds = ctl.ok("POST", "/api/v1/datasets", {"name": "a", "path": root}, headers=ta)
    exp = ctl.ok("POST", "/api/v1/experiments",
                 {"name": "e", "network_arch": "mlp", "train_datasets": [ds["id"]]}, headers=ta)
    job = ctl.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"},
                 headers=ta)
    before = store.snap()
    for who, body in ((ta, {"disabled": True}), (adm, {"disabled": "yes"}), (adm, {})):
        st, js = ctl.req("PATCH", "/api/v1/users/%s" % alice["id"], body, headers=who)
        check(st in (403, 422), ("a refused disable", body, st, js))
    st, js = ctl.req("PATCH", "/api/v1/users/admin", {"disabled": True}, headers=adm)
    check(st == 422 and js["error"]["field"] == "id", ("disabling the built-in admin", st, js))
    st, js = ctl.req("PATCH", "/api/v1/users/usr_nobody", {"disabled": True}, headers=adm)
    check(st == 404, ("disabling nobody", st, js))
    check(store.snap() == before, "a refused disable changed the store")
    stream, _ = open_stream(ctl, "/api/v1/jobs/%s/metrics/stream" % job["id"], ta)
    # an archive upload under way: its body ends after the disabling (the filter ran at its start)
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for n in sorted(os.listdir(root)):
            t.add(os.path.join(root, n), arcname=n)
    tar = bio.getvalue()
    up = socket.create_connection(("127.0.0.1", ctl.port))
    up.sendall(("POST /api/v1/datasets:upload?name=cut-by-disable&format=idx HTTP/1.1\r\n"
                "Host: x\r\nAuthorization: %s\r\nContent-Type: application/x-tar\r\n"
                "Content-Length: %d\r\n\r\n" % (ta["Authorization"], len(tar))).encode())
    up.sendall(tar[:1024])
    u = ctl.ok("PATCH", "/api/v1/users/%s" % alice["id"], {"disabled": True}, headers=adm)
    check(u["disabled"], u)
    st, js = ctl.req("GET", "/api/v1/users/me", headers=ta)
    check(st == 401 and "disabled" in js["error"]["message"], ("a disabled user's token", st, js))
    st, js = ctl.req("POST", "/api/v1/login", {"key": ka["key"]})
    check(st == 403 and "disabled" in js["error"]["message"], ("a disabled user's login", st, js))
    st, js = ctl.req("POST", "/api/v1/users/me/keys", headers=bearer(ka["key"]))
    check(st == 401 and "disabled" in js["error"]["message"], ("a disabled user's key", st, js))
    stream.settimeout(10)
    got = b""
    try:
        while True:
            b = stream.recv(65536)
            if not b:
                break
            got += b
    except socket.timeout:
        raise AssertionError(("the stream outlived its user's disabling", got))
    stream.close()
    check(b"event: auth" in got, ("no auth event before the end", got))
    up.sendall(tar[1024:])
    up.settimeout(30)
    answer = b""
    while b"\r\n\r\n" not in answer:
        b = up.recv(65536)
        if not b:
            break
        answer += b
    up.close()
    check(answer.startswith(b"HTTP/1.1 401"), ("a disabled user's upload", answer[:300]))
    check(not store.rows("SELECT id, owner FROM datasets WHERE name='cut-by-disable'"),
          "a disabled user's upload was stored")
    # rows stay
    mine = ctl.ok("GET", "/api/v1/jobs?limit=1000", headers=adm)["jobs"]
    check(any(j["id"] == job["id"] for j in mine), "a disabled user's job is gone")
    check(ctl.ok("GET", "/api/v1/users/%s" % alice["id"], headers=adm)["disabled"], "not listed")
    u = ctl.ok("PATCH", "/api/v1/users/%s" % alice["id"], {"disabled": False}, headers=adm)
    check(u["disabled"] is None, u)
    st, js = ctl.req("GET", "/api/v1/users/me", headers=ta)
    check(st == 401, ("a token from before the disabling, after enabling", st, js))
    return login(ctl, ka["key"])


def caps(ctl, store, adm, bob, kb):
    """At most 50 live keys per user (409 naming keys beyond); at most 100 live tokens per key
    (a login beyond ends the oldest)."""
    live = store.rows("SELECT count(*) FROM api_keys WHERE user_id=? AND revoked IS NULL",
                      bob["id"])[0][0]
    made = [ctl.ok("POST", "/api/v1/users/%s/keys" % bob["id"], headers=adm)
            for _ in range(50 - live)]
    before = store.snap()
    st, js = ctl.req("POST", "/api/v1/users/%s/keys" % bob["id"], headers=adm)
    check(st == 409 and js["error"]["field"] == "keys" and "50" in js["error"]["message"],
          ("the 51st key", st, js))
    check(store.snap() == before, "a refused key changed the store")
    ctl.ok("DELETE", "/api/v1/users/%s/keys/%s" % (bob["id"], made[0]["id"]), want=(204,),
           headers=adm)
    ctl.ok("POST", "/api/v1/users/%s/keys" % bob["id"], headers=adm)  # room again
    toks = [login(ctl, kb["key"]) for _ in range(101)]
    n = store.rows("SELECT count(*) FROM tokens WHERE key_id=?", kb["id"])[0][0]
    check(n == 100, ("live tokens of one key", n))
    st, js = ctl.req("GET", "/api/v1/users/me", headers=toks[0])
    check(st == 401, ("the oldest token, past the cap", st, js))
    ctl.ok("GET", "/api/v1/users/me", headers=toks[1])
    ctl.ok("GET", "/api/v1/users/me", headers=toks[-1])


def names(ctl, store, adm):
    """User names: unique whatever their case; no controls, bidi or zero-width characters."""
    before = store.snap()
    st, js = ctl.req("POST", "/api/v1/users", {"name": "ALICE"}, headers=adm)
    check(st == 409 and js["error"]["field"] == "name", ("a name differing in case", st, js))
    for bad in ("eve\x1b[31m", "eve\x07", "eve\rroot", "a\x85b", "\u202eevil", "adm\u200bin",
                "al\u2066ice", "a\u200fb", "a\u061cb", "a\ufeffb", "a\x7fb"):
        st, js = ctl.req("POST", "/api/v1/users", {"name": bad}, headers=adm)
        check(st == 422 and js["error"]["field"] == "name", ("name %r" % bad, st, js))
    st, js = ctl.req("POST", "/api/v1/users", raw=b'{"name": "a\xff\xfeb"}', headers=dict(
        adm, **{"Content-Type": "application/json"}))
    check(st in (400, 422), ("invalid UTF-8", st, js))
    check(store.snap() == before, "a refused name changed the store")
    ctl.ok("POST", "/api/v1/users", {"name": "Zoë Ångström"}, headers=adm)  # letters are fine


def admin_only(ctl, ta, adm):
    """GET /api/v1/workers (hosts, folders, GPUs) and /metrics (every user's counts): admins."""
    for path in ("/api/v1/workers", "/metrics"):
        st, js = ctl.req("GET", path, headers=ta)
        check(st == 403 and js["error"]["field"] == "Authorization", ("a user on", path, st, js))
        st, _ = ctl.req("GET", path, headers=adm)
        check(st == 200, ("the admin on", path, st))


def rotation(ctl, cfg, d, store, adm_key_user, user_key, tuser):
    """The admin key changes: the admin's keys minted with it end (and their tokens), a plain
    user's keys and tokens do not."""
    ctl.stop()
    with open(cfg, "w") as f:
        f.write("auth: {admin_key: %s}\ndata_roots: [\"%s\"]\n" % (ADMIN2, d))
    ctl.start()
    st, js = ctl.req("POST", "/api/v1/login", {"key": adm_key_user["key"]})
    check(st == 401 and "admin key that has changed" in js["error"]["message"],
          ("the admin's key of the old admin key", st, js))
    ctl.ok("GET", "/api/v1/users/me", headers=tuser)
    ctl.ok("POST", "/api/v1/login", {"key": user_key["key"]})


def upgrade(binary, d):
    """A store from before migration 012 holding "bob" and "Bob": the upgrade keeps the older
    name and renames the other, so it cannot fail."""
    data = os.path.join(d, "up")
    ctl = Controller(binary, data).start()
    ctl.stop()
    db = sqlite3.connect(os.path.join(data, "hone.db"))
    db.executescript("""
        DROP INDEX users_by_name_nocase; DROP INDEX api_keys_by_parent; DROP INDEX tokens_by_user;
        ALTER TABLE api_keys DROP COLUMN created_by; ALTER TABLE api_keys DROP COLUMN parent_key;
        ALTER TABLE api_keys DROP COLUMN admin_key; ALTER TABLE users DROP COLUMN disabled;
        DROP INDEX jobs_by_from_job; ALTER TABLE jobs DROP COLUMN from_job; -- 013's, undone too
        INSERT INTO users(id,name,role,created) VALUES('usr_1','bob','user',1),
                                                      ('usr_2','Bob','user',2);
        UPDATE schema_version SET version = 11;""")
    db.commit()
    db.close()
    ctl.start()
    ctl.stop()
    db = sqlite3.connect(os.path.join(data, "hone.db"))
    got = dict(db.execute("SELECT id, name FROM users WHERE id LIKE 'usr_%'").fetchall())
    db.close()
    check(got == {"usr_1": "bob", "usr_2": "Bob~usr_2"}, ("names after the upgrade", got))


def main():
    binary = binary_from_argv()
    d = tempdir()
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("auth: {admin_key: %s}\ndata_roots: [\"%s\"]\n" % (ADMIN, d))
    ctl = Controller(binary, os.path.join(d, "data"), config=cfg).start()
    store = Store(os.path.join(d, "data", "hone.db"))
    try:
        adm = bearer(ADMIN)
        alice = ctl.ok("POST", "/api/v1/users", {"name": "alice"}, headers=adm)
        bob = ctl.ok("POST", "/api/v1/users", {"name": "bob"}, headers=adm)
        ka, ta, kb = minting(ctl, store, adm, alice, bob)
        revoking(ctl, store, alice, ka, ta)
        ta = disabling(ctl, store, d, adm, alice, ka, ta)
        caps(ctl, store, adm, bob, kb)
        names(ctl, store, adm)
        admin_only(ctl, ta, adm)
        adm_key = ctl.ok("POST", "/api/v1/users/me/keys", headers=adm)  # the admin's own key
        check(adm_key["user_id"] == "admin", adm_key)
        tadm = login(ctl, adm_key["key"])
        rotation(ctl, cfg, d, store, adm_key, ka, ta)
        st, js = ctl.req("GET", "/api/v1/users/me", headers=tadm)
        check(st == 401, ("a token of the admin's key of the old admin key", st, js))
        ctl.stop()
        upgrade(binary, d)
        print("auth keys: ok")
    finally:
        ctl.stop()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
