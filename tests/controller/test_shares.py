"""Fair shares between users against a real controller with auth on (issue 26, items 5, 6 and 8):
- the job queue: Alice queues an AutoML search and 200 train jobs, then Bob one; Bob's job is
  the second leased (was the 201st), with one worker leasing, running and completing in turn;
- fair_share caps: a user's queued jobs (a new convert job too) beyond max_queued_per_user are
  refused 429 naming it, and nothing is stored; beyond max_running_per_user a user's jobs wait
  while others' are leased; an admin is under neither cap; weights give a user more of the
  running jobs;
- upload slots: a user holds at most half of them (the rest wait), another user's upload gets a
  slot, and a worker's 1 KiB checkpoint PUT is answered at once: workers have slots of their own;
- SSE streams: users together leave a reserve of limits.streams to admins."""
import os
import shutil
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from pngfolder import write_folder  # noqa: E402

ADMIN = "admin-key-0123456789"
ENROL = "enrol-me-0123456789"


def bearer(tok):
    return {"Authorization": "Bearer " + tok}


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def start(binary, d, extra=""):
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("auth: {admin_key: %s, worker_token: %s}\ndata_roots: [\"%s\"]\n%s"
                % (ADMIN, ENROL, d, extra))
    return Controller(binary, os.path.join(d, "data"), config=cfg).start()


def user(ctl, name, automl=None):
    """A user with a login token, a dataset and an experiment of their own: (headers, exp id)."""
    adm = bearer(ADMIN)
    u = ctl.ok("POST", "/api/v1/users", {"name": name}, headers=adm)
    k = ctl.ok("POST", "/api/v1/users/%s/keys" % u["id"], headers=adm)
    h = bearer(ctl.ok("POST", "/api/v1/login", {"key": k["key"]})["token"])
    root = os.path.join(ctl.data_dir_root, "idx-" + name)
    write_idx(root)
    ds = ctl.ok("POST", "/api/v1/datasets", {"name": name, "path": root}, headers=h)
    exp = ctl.ok("POST", "/api/v1/experiments", {"name": name, "network_arch": "mlp",
                                                 "train_datasets": [ds["id"]],
                                                 "automl_settings": automl}, headers=h)
    return h, exp["id"]


def train(ctl, h, exp):
    return ctl.req("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"}, headers=h)


def worker(ctl, name):
    w = FakeWorker(ctl, name)
    js = ctl.ok("POST", "/api/v1/workers", {"name": name, "resources": {"cpus": 1, "gpus": []}},
                headers=bearer(ENROL))
    w.id, w.headers = js["id"], bearer(js["token"])
    return w


def owner_of(ctl, job):
    return ctl.ok("GET", "/api/v1/jobs/" + job["id"], headers=bearer(ADMIN))["owner"]


def queue_order(binary, d):
    """Alice: an AutoML search (two trials at a time) and 200 train jobs; then Bob one. One
    worker leases, runs and completes one job at a time: Bob's is the second it gets."""
    ctl = start(binary, d)
    ctl.data_dir_root = d
    try:
        ta, ea = user(ctl, "alice", {"automl_enabled": True, "automl_algorithm": "random",
                                     "automl_max_recommendations": 4, "automl_max_parallel": 2})
        tb, eb = user(ctl, "bob")
        ctl.ok("POST", "/api/v1/experiments/%s/jobs" % ea, {"action": "automl"}, headers=ta)
        for _ in range(200):
            st, js = train(ctl, ta, ea)
            check(st == 201, ("alice's job", st, js))
        st, bob = train(ctl, tb, eb)
        check(st == 201, ("bob's job", st, bob))
        alice_id = ctl.ok("GET", "/api/v1/users/me", headers=ta)["id"]
        w = worker(ctl, "w")
        order = []
        for _ in range(3):
            job = w.lease()
            check(job, "nothing leased")
            order.append(job["id"])
            check(w.run_job(job) in ("done", "stopped", "paused"), job["id"])
        pos = order.index(bob["id"]) + 1 if bob["id"] in order else None
        print("bob's job leased at position %s behind alice's 200 (and her AutoML trials)" % pos)
        check(pos == 2, ("bob's job is not the second leased", order, bob["id"]))
        check(owner_of(ctl, {"id": order[0]}) == alice_id, order)
        check(owner_of(ctl, {"id": order[2]}) == alice_id, order)
    finally:
        ctl.stop()


def open_stream(ctl, path, headers):
    """A raw GET of an SSE route: (status, socket) with the socket still open on a 200."""
    s = socket.create_connection(("127.0.0.1", ctl.port), timeout=10)
    hdr = "".join("%s: %s\r\n" % kv for kv in headers.items())
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s\r\n" % (path, hdr))
              .encode())
    got = b""
    while b"\r\n\r\n" not in got:
        b = s.recv(65536)
        check(b, ("closed before an answer", got))
        got += b
    st = int(got.split(b" ")[1])
    if st != 200:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
        s.close()
        return st, got
    return st, s


def raw_upload(ctl, path, headers, length, ctype="application/x-tar"):
    """Headers of a dataset upload with Expect: 100-continue; the body is not sent."""
    s = socket.create_connection(("127.0.0.1", ctl.port), timeout=10)
    hdr = "".join("%s: %s\r\n" % kv for kv in headers.items())
    s.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
               "Expect: 100-continue\r\n%s\r\n" % (path, ctype, length, hdr)).encode())
    return s


def continued(s, within):
    """Did the server say 100 Continue (the upload got a slot) within so many seconds?"""
    s.settimeout(within)
    try:
        got = s.recv(4096)
    except socket.timeout:
        return False
    finally:
        s.settimeout(10)
    check(got.startswith(b"HTTP/1.1 100"), ("not a 100 Continue", got))
    return True


def caps_uploads_streams(binary, d):
    ctl = start(binary, d, "fair_share: {max_running_per_user: 1, max_queued_per_user: 3}\n"
                           "limits: {streams: 8, uploads: 2}\n")
    ctl.data_dir_root = d
    adm = bearer(ADMIN)
    try:
        tc, ec = user(ctl, "carol")
        td, ed = user(ctl, "dave")
        for h, e in ((tc, ec), (td, ed)):
            for _ in range(3):
                check(train(ctl, h, e)[0] == 201, "a job under the cap")
            before = ctl.ok("GET", "/api/v1/jobs", headers=h)["jobs"]
            st, js = train(ctl, h, e)
            check(st == 429 and js["error"]["field"] == "fair_share.max_queued_per_user" and
                  "3" in js["error"]["message"], ("the 4th queued job", st, js))
            check(ctl.ok("GET", "/api/v1/jobs", headers=h)["jobs"] == before, "stored anyway")
        # a new convert job is a queued job too
        write_folder(os.path.join(d, "folder"), classes=2, per_class=2, size=16)
        ds = ctl.ok("POST", "/api/v1/datasets", {"name": "f", "path": os.path.join(d, "folder"),
                                                 "format": "image_folder"}, headers=tc)
        before = ctl.ok("GET", "/api/v1/jobs", headers=tc)["jobs"]
        st, js = ctl.req("POST", "/api/v1/datasets/%s/convert" % ds["id"], {"input_size": 16},
                         headers=tc)
        check(st == 429 and js["error"]["field"] == "fair_share.max_queued_per_user",
              ("a convert job over the cap", st, js))
        check(ctl.ok("GET", "/api/v1/jobs", headers=tc)["jobs"] == before, "convert stored anyway")
        # running cap 1: one job each, then nothing for a third worker
        ws = [worker(ctl, "w%d" % i) for i in range(5)]
        j1, j2 = ws[0].lease(), ws[1].lease()
        check(j1 and j2 and owner_of(ctl, j1) != owner_of(ctl, j2), ("one each", j1, j2))
        check(ws[2].lease() is None, "a third lease while both users are at their running cap")
        check(ws[0].run_job(j1) == "done", j1)
        j3 = ws[2].lease()
        check(j3 and owner_of(ctl, j3) == owner_of(ctl, j1), ("the freed user's next", j3))
        # an admin is under neither cap: four queued, two running at once
        root = os.path.join(d, "idx-admin")
        write_idx(root)
        ds = ctl.ok("POST", "/api/v1/datasets", {"name": "adm", "path": root}, headers=adm)
        ea = ctl.ok("POST", "/api/v1/experiments", {"name": "adm", "network_arch": "mlp",
                                                    "train_datasets": [ds["id"]]}, headers=adm)
        for _ in range(4):
            check(train(ctl, adm, ea["id"])[0] == 201, "an admin's job over the user cap")
        j4, j5 = ws[3].lease(), ws[4].lease()
        check(j4 and j5 and owner_of(ctl, j4) == owner_of(ctl, j5) == "admin", (j4, j5))

        # upload slots (2): carol holds one, her second waits; dave's gets the other at once;
        # a worker's 1 KiB checkpoint is answered while carol's and dave's hold every user slot
        up = "/api/v1/datasets:upload?name=slow&type=image_classification&format=idx"
        c1 = raw_upload(ctl, up, tc, 1 << 20)
        check(continued(c1, 5), "carol's first upload got no slot")
        c2 = raw_upload(ctl, up, tc, 1 << 20)
        check(not continued(c2, 0.5), "carol's second upload took a slot: her share is one")
        d1 = raw_upload(ctl, up, td, 1 << 20)
        check(continued(d1, 5), "dave's upload waited behind carol's")
        t0 = time.time()
        st, js = ctl.req("PUT", "/api/v1/jobs/%s/artifacts/checkpoint.bin" % j2["id"],
                         raw=b"\x01" * 1024, headers=dict(ws[1].headers, **{
                             "Content-Type": "application/octet-stream"}), timeout=30)
        took = time.time() - t0
        print("a worker's 1 KiB checkpoint PUT while users hold every user slot: %.3f s" % took)
        check(st == 201 and took < 5, ("the worker's upload", st, js, took))
        for s in (c1, c2, d1):
            s.close()

        # streams (8): a user's share is 2, users together 6, the other 2 kept for admins
        te, ee = user(ctl, "eve")
        tf, ef = user(ctl, "frank")
        jobs = {}
        for h, e in ((te, ee), (tf, ef)):
            check(train(ctl, h, e)[0] == 201, "a job to stream")
        for name, h, e in (("carol", tc, ec), ("dave", td, ed), ("eve", te, ee), ("frank", tf, ef)):
            jobs[name] = ctl.ok("GET", "/api/v1/jobs?status=queued&experiment=" + e,
                               headers=h)["jobs"][0]["id"]
        opened, refused = [], []
        for name, h in (("carol", tc), ("dave", td), ("eve", te), ("frank", tf)):
            for _ in range(2):
                st, s = open_stream(ctl, "/api/v1/jobs/%s/metrics/stream" % jobs[name], h)
                (opened if st == 200 else refused).append((name, st, s))
        check(len(opened) == 6 and len(refused) == 2, ("users' streams", len(opened), refused))
        for name, st, body in refused:
            check(st == 503 and b"limits.streams" in body and b"for admins" in body,
                  ("a refused stream", st, body))
        for _ in range(2):
            st, s = open_stream(ctl, "/api/v1/jobs/%s/metrics/stream" % jobs["carol"], adm)
            check(st == 200, ("the admin's stream", st, s))
            opened.append(("admin", st, s))
        for _, _, s in opened:
            s.close()
    finally:
        ctl.stop()


def weights(binary, d):
    """weights {carol: 2}: with four workers leasing at once, carol gets three, dave one (equal
    weights would give two each)."""
    ctl = start(binary, d, "fair_share: {weights: {carol: 2}}\n")
    ctl.data_dir_root = d
    try:
        tc, ec = user(ctl, "carol")
        td, ed = user(ctl, "dave")
        for h, e in ((tc, ec), (td, ed)):
            for _ in range(4):
                check(train(ctl, h, e)[0] == 201, "a job")
        carol = ctl.ok("GET", "/api/v1/users/me", headers=tc)["id"]
        got = [owner_of(ctl, worker(ctl, "w%d" % i).lease()) for i in range(4)]
        check(got.count(carol) == 3, ("carol's weighted share", got))
    finally:
        ctl.stop()


def main():
    binary = binary_from_argv()
    d = tempdir()
    try:
        for i, part in enumerate((queue_order, caps_uploads_streams, weights)):
            sub = os.path.join(d, str(i))
            os.makedirs(sub)
            part(binary, sub)
        print("shares: ok")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
