"""Convert jobs against a real hone-controller driven by a fake worker (issue 8):
1. POST /datasets/{id}/convert: 201 with a queued convert job, 200 with the same job for the same
   (dataset, size, channels) while it is queued, running or done; 422 naming the field for a bad
   body; 409 for a dataset that is not an image folder; channels 0 is the folder's own;
2. the lease of a convert job (folder, size, channels, packed file), its progress reports (checked
   ranges; train metrics refused) shown on the job, cancel told through the report reply;
3. a train job of an image-folder experiment waits for its convert job (not leased before it is
   done) and its spec carries data.packed; a second experiment at that size reuses it;
4. a failed or canceled convert fails the jobs waiting for it (a train job, an AutoML job and its
   trials) with a message naming the convert job;
4b. a convert job its worker releases (shutting down) is queued again at once, not failed, the
   job waiting for it still waiting; that worker's heartbeat does not take it back;
5. kill -9 of the controller loses nothing: the waiting job still waits, then runs;
6. migration 003 rebuilds the jobs table of an older store without losing its metrics;
7. a kitti dataset converts as an image folder does: the route (201, then reuse), the implicit
   convert of a detectnet_v2 train job at its input size (128 when the spec leaves it), and a
   lease that says format kitti and the dataset's class map in its order."""
import os
import sqlite3
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402

SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schemas")


def png(v=0, w=4, h=4, rgb=False):
    """A w x h PNG (grey, or RGB), stdlib only."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I",
                                                                        zlib.crc32(kind + data))
    px = bytes([v, 255 - v, v // 2]) if rgb else bytes([v])
    raw = b"".join(b"\0" + px * w for _ in range(h))
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2 if rgb else 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) +
            chunk(b"IEND", b""))


def folder(root, rgb=False):
    for cls in ("a", "b"):
        for i in range(3):
            p = os.path.join(root, cls, "%d.png" % i)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(png(40 * i, rgb=rgb and i == 0))


def convert(c, ds, body, want):
    st, js = c.req("POST", "/api/v1/datasets/%s/convert" % ds, body)
    assert st == want, (body, st, js)
    return js


def refused(c, ds, body, want, field):
    js = convert(c, ds, body, want)
    assert js["error"]["field"] == field, (body, js)


def experiment(c, ds, specs, settings=None):
    return c.ok("POST", "/api/v1/experiments",
                {"name": "e", "network_arch": "cnn", "train_datasets": [ds],
                 "specs": specs, "automl_settings": settings or {}})["id"]


def job(c, jid):
    return c.ok("GET", "/api/v1/jobs/" + jid)


def route_and_reuse(c, root, w):
    idx = c.ok("POST", "/api/v1/datasets", {"name": "idx", "path": os.path.join(root, "idx")})
    refused(c, idx["id"], {"input_size": 32}, 409, "format")
    ds = c.ok("POST", "/api/v1/datasets", {"name": "grey", "path": os.path.join(root, "grey"),
                                           "format": "image_folder"})["id"]
    for body, field in (({}, "input_size"), ({"input_size": 7}, "input_size"),
                        ({"input_size": 513}, "input_size"), ({"input_size": "32"}, "input_size"),
                        ({"input_size": 16.5}, "input_size"),
                        ({"input_size": 16, "channels": 2}, "channels"),
                        ({"input_size": 16, "channels": 4}, "channels"),
                        ({"input_size": 16, "channels": -1}, "channels"),
                        ({"input_size": 16, "bogus": 1}, "bogus")):
        refused(c, ds, body, 422, field)
    st, js = c.req("POST", "/api/v1/datasets/ds-nope/convert", {"input_size": 16})
    assert st == 404, (st, js)
    assert c.ok("GET", "/api/v1/jobs")["jobs"] == [], "a refused convert was stored"

    cv = convert(c, ds, {"input_size": 16}, 201)
    assert cv["action"] == "convert" and cv["status"] == "queued" and cv["dataset_id"] == ds, cv
    assert cv["experiment_id"] is None and cv["progress"] is None, cv
    assert cv["config"]["input_size"] == 16 and cv["config"]["channels"] == 1, cv  # grey folder
    out = cv["config"]["out"]
    assert out == os.path.join(root, "packed", ds, "16x16x1.hpk"), out
    assert convert(c, ds, {"input_size": 16, "channels": 1}, 200)["id"] == cv["id"]
    assert convert(c, ds, {"input_size": 16, "channels": 0}, 200)["id"] == cv["id"]
    rgb = convert(c, ds, {"input_size": 16, "channels": 3}, 201)
    assert rgb["id"] != cv["id"] and rgb["config"]["out"].endswith("/16x16x3.hpk"), rgb
    assert [j["id"] for j in c.ok("GET", "/api/v1/jobs?action=convert")["jobs"]] == \
        [cv["id"], rgb["id"]]
    st, js = c.req("POST", "/api/v1/jobs/%s/pause" % cv["id"])
    assert st == 409, (st, js)

    # A train job at the same size waits for that convert job; the lease goes to the converts.
    exp = experiment(c, ds, {"model": {"input_size": 16}, "train": {"epochs": 2},
                             "data": {"val_size": 1}})
    tj = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"})
    assert tj["convert_job_id"] == cv["id"], tj
    lease = w.lease()
    assert lease["id"] == cv["id"] and lease["action"] == "convert", lease
    assert lease["dataset_path"] == os.path.join(root, "grey"), lease
    assert lease["input_size"] == 16 and lease["channels"] == 1 and lease["out_path"] == out, lease
    assert os.path.isdir(os.path.dirname(out)), "the packed folder was not made"
    assert job(c, cv["id"])["status"] == "running"
    # Progress: the fields of a convert job, in range; a train job's metric is refused.
    st, js = w.report(lease, 1, {"images_done": 2, "images_total": 6,
                                 "images_per_second": 100.0, "seconds": 0.02})
    assert st == 200 and js["decision"] == "continue", (st, js)
    for m, field in (({"images_done": 7, "images_total": 6}, "metrics.images_done"),
                     ({"images_done": -1, "images_total": 6}, "metrics.images_done"),
                     ({"images_done": 1.5, "images_total": 6}, "metrics.images_done"),
                     ({"images_done": 1, "images_total": 6, "images_per_second": -3},
                      "metrics.images_per_second"),
                     ({"images_done": 1}, "metrics"),
                     ({"images_done": 1, "images_total": 6, "val_accuracy": 0.5}, "metrics"),
                     ({"images_done": 1, "images_total": 6, "made_up": 1}, "metrics")):
        st, js = w.report(lease, 2, m)
        assert st == 422 and js["error"]["field"] == field, (m, st, js)
    st, js = w.report(lease, 2, {"images_done": 4, "images_total": 6, "images_per_second": 80.0})
    assert st == 200, (st, js)
    p = job(c, cv["id"])["progress"]
    assert p["images_done"] == 4 and p["images_total"] == 6, p
    # A train job's report cannot carry a convert job's progress.
    second = w.lease()
    assert second["id"] == rgb["id"], second
    assert w.lease() is None, "a train job was leased before its convert job was done"
    with open(out, "wb") as f:  # what hone-pack leaves at the name (this worker is a fake)
        f.write(b"HONEPAK\0")
    w.complete(lease, "done", {"event": "done", "images": 6, "path": out})
    done = job(c, cv["id"])
    assert done["status"] == "done" and done["result"]["images"] == 6, done
    assert "event" not in done["result"], done
    tl = w.lease()
    assert tl and tl["id"] == tj["id"], tl
    assert tl["spec"]["data.packed"] == out, tl["spec"]
    st, js = w.report(tl, 1, {"images_done": 1, "images_total": 6})
    assert st == 422 and js["error"]["field"] == "metrics", (st, js)
    w.run_job(tl)
    assert job(c, tj["id"])["status"] == "done"
    # A second experiment at that size reuses the done convert job: no second convert.
    exp2 = experiment(c, ds, {"model": {"input_size": 16}, "train": {"epochs": 1},
                              "data": {"val_size": 1}})
    tj2 = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp2, {"action": "train"})
    assert tj2["convert_job_id"] == cv["id"], tj2
    assert len(c.ok("GET", "/api/v1/jobs?action=convert")["jobs"]) == 2
    tl2 = w.lease()
    assert tl2["id"] == tj2["id"] and tl2["spec"]["data.packed"] == out, tl2
    w.run_job(tl2)
    # A done convert job whose file has gone is not reused: the next job packs again.
    os.unlink(out)
    exp3 = experiment(c, ds, {"model": {"input_size": 16}, "train": {"epochs": 1},
                              "data": {"val_size": 1}})
    tj3 = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp3, {"action": "train"})
    assert tj3["convert_job_id"] not in (cv["id"], None), tj3
    c.ok("POST", "/api/v1/jobs/%s/cancel" % tj3["convert_job_id"])
    assert job(c, tj3["id"])["status"] == "failed", job(c, tj3["id"])
    # Cancel of a running convert job is told through the report reply.
    st, js = c.req("POST", "/api/v1/jobs/%s/cancel" % rgb["id"])
    assert st == 200, (st, js)
    st, js = w.report(second, 1, {"images_done": 1, "images_total": 6})
    assert st == 200 and js["decision"] == "stop", (st, js)
    w.complete(second, "stopped")
    assert job(c, rgb["id"])["status"] == "canceled"
    # A dataset being converted cannot be deleted; one whose converts ended can (when unused).
    ds2 = c.ok("POST", "/api/v1/datasets", {"name": "g2", "path": os.path.join(root, "grey"),
                                            "format": "image_folder"})["id"]
    cv2 = convert(c, ds2, {"input_size": 8}, 201)
    st, js = c.req("DELETE", "/api/v1/datasets/" + ds2)
    assert st == 409 and cv2["id"] in js["error"]["message"], (st, js)
    c.ok("POST", "/api/v1/jobs/%s/cancel" % cv2["id"])
    c.ok("DELETE", "/api/v1/datasets/" + ds2, want=(204,))
    st, _ = c.req("GET", "/api/v1/jobs/" + cv2["id"])
    assert st == 404, st
    return ds


def released(c, ds, w):
    # A worker shutting down hands its convert job back: queued again at once, attempts not
    # counted, the train job waiting for it still waits; a heartbeat of that worker naming the
    # job is told to drop it (not re-attached); another worker leases it from the start.
    exp = experiment(c, ds, {"model": {"input_size": 28}, "train": {"epochs": 1},
                             "data": {"val_size": 1}})
    tj = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"})
    cid = tj["convert_job_id"]
    lease = w.lease()
    assert lease["id"] == cid, lease
    st, js = w.report(lease, 1, {"images_done": 2, "images_total": 6})
    assert st == 200 and js["decision"] == "continue", (st, js)
    r = w.complete(lease, "released")
    assert r["status"] == "queued", r
    cv = job(c, cid)
    assert cv["status"] == "queued" and not cv["worker_id"] and cv["attempts"] == 0, cv
    assert job(c, tj["id"])["status"] == "queued"
    st, js = w.req("POST", "/api/v1/workers/%s/heartbeat" % w.id, {"jobs": [cid]})
    assert st == 200 and js["cancel"] == [cid], (st, js)
    assert job(c, cid)["status"] == "queued", "the released job went back to its worker"
    st, js = w.report(lease, 2, {"images_done": 4, "images_total": 6})
    assert st == 409, (st, js)
    st, js = w.req("POST", "/api/v1/jobs/%s/complete" % cid,
                   {"worker_id": w.id, "status": "released", "log_tail": ""})
    assert st == 409 and job(c, cid)["status"] == "queued", (st, js)
    w2 = FakeWorker(c, "other")
    w2.register()
    again = w2.lease()
    assert again["id"] == cid and again["out_path"] == lease["out_path"], again
    st, js = w2.report(again, 1, {"images_done": 1, "images_total": 6})
    assert st == 200, (st, js)
    w2.complete(again, "done", {"event": "done", "images": 6})
    cv = job(c, cid)
    assert cv["status"] == "done" and cv["attempts"] == 0, cv
    tl = w2.lease()
    assert tl["id"] == tj["id"] and tl["spec"]["data.packed"] == again["out_path"], tl
    w2.complete(tl, "stopped")


def failures(c, ds, w):
    # A failed convert fails the train job waiting for it, with a message naming it.
    exp = experiment(c, ds, {"model": {"input_size": 24}, "train": {"epochs": 1},
                             "data": {"val_size": 1}})
    tj = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"})
    cid = tj["convert_job_id"]
    assert cid and job(c, cid)["config"]["input_size"] == 24
    lease = w.lease()
    assert lease["id"] == cid, lease
    c.ok("POST", "/api/v1/jobs/%s/complete" % cid,
         {"worker_id": w.id, "status": "failed",
          "log_tail": "hone-pack: 3 images\nhone-pack: b/1.png: truncated PNG\n"},
         headers=w.headers)
    assert job(c, cid)["status"] == "failed"
    t = job(c, tj["id"])
    assert t["status"] == "failed" and cid in t["error"] and "failed" in t["error"], t
    assert "b/1.png: truncated PNG" in t["error"], t
    assert w.lease() is None
    # A new job at that size gets a new convert job (a failed one is not reused).
    tj2 = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"})
    assert tj2["convert_job_id"] not in (None, cid), tj2
    c.ok("POST", "/api/v1/jobs/%s/cancel" % tj2["convert_job_id"])
    t2 = job(c, tj2["id"])
    assert t2["status"] == "failed" and "canceled" in t2["error"], t2

    # An AutoML job waits too: its trials are not leased; a canceled convert fails it.
    exp3 = experiment(c, ds, {"model": {"input_size": 20}, "train": {"epochs": 2},
                              "data": {"val_size": 1}},
                      {"automl_enabled": True, "automl_algorithm": "random",
                       "automl_max_recommendations": 2, "automl_max_parallel": 2})
    aj = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp3, {"action": "automl"})
    cid3 = aj["convert_job_id"]
    trials = c.ok("GET", "/api/v1/jobs?parent=" + aj["id"])["jobs"]
    assert len(trials) == 2 and all(tr["convert_job_id"] == cid3 for tr in trials), trials
    lease = w.lease()
    assert lease["id"] == cid3, lease
    assert w.lease() is None, "a trial was leased before its convert job was done"
    c.ok("POST", "/api/v1/jobs/%s/cancel" % cid3)
    st, js = w.report(lease, 1, {"images_done": 0, "images_total": 6})
    assert js["decision"] == "stop", js
    w.complete(lease, "stopped")
    a = job(c, aj["id"])
    assert a["status"] == "failed" and cid3 in a["error"], a
    assert all(tr["status"] == "canceled"
               for tr in c.ok("GET", "/api/v1/jobs?parent=" + aj["id"])["jobs"])
    assert w.lease() is None


def kitti_folder(root):
    """A flat KITTI set of 32x32 RGB PNGs whose labels name dog and cat."""
    for d in ("images", "labels"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for i in range(4):
        with open(os.path.join(root, "images", "%d.png" % i), "wb") as f:
            f.write(png(50 * i, w=32, h=32, rgb=True))
        with open(os.path.join(root, "labels", "%d.txt" % i), "w") as f:
            f.write("cat 0 0 0 2 3 12 14 0 0 0 0 0 0 0\n")
            if i % 2:
                f.write("dog 0 0 0 10 10 30 31 0 0 0 0 0 0 0\n")


def kitti(c, root, w):
    ds = c.ok("POST", "/api/v1/datasets",
              {"name": "det", "type": "object_detection", "format": "kitti",
               "path": os.path.join(root, "kitti"), "classes": ["dog", "cat"]})["id"]
    refused(c, ds, {"input_size": 7}, 422, "input_size")
    cv = convert(c, ds, {"input_size": 64}, 201)
    assert cv["status"] == "queued" and cv["config"]["channels"] == 3, cv
    assert cv["config"]["out"] == os.path.join(root, "packed", ds, "64x64x3.hpk"), cv
    assert convert(c, ds, {"input_size": 64}, 200)["id"] == cv["id"]

    def det(specs):
        return c.ok("POST", "/api/v1/experiments",
                    {"name": "d", "network_arch": "detectnet_v2", "train_datasets": [ds],
                     "specs": specs})["id"]
    small = {"model": {"input_size": 64, "width": 8}, "train": {"epochs": 1, "batch_size": 2},
             "data": {"val_size": 1}}
    tj = c.ok("POST", "/api/v1/experiments/%s/jobs" % det(small), {"action": "train"})
    assert tj["convert_job_id"] == cv["id"], tj
    # the spec leaves the size to the data: a KITTI set trains at 128
    dflt = c.ok("POST", "/api/v1/experiments/%s/jobs" % det(
        {"model": {"width": 8}, "train": {"epochs": 1, "batch_size": 2},
         "data": {"val_size": 1}}), {"action": "train"})
    cv128 = job(c, dflt["convert_job_id"])
    assert cv128["id"] != cv["id"] and cv128["config"]["input_size"] == 128, cv128
    assert cv128["config"]["out"].endswith("/128x128x3.hpk"), cv128
    lease = w.lease()
    assert lease["id"] == cv["id"] and lease["action"] == "convert", lease
    assert lease["format"] == "kitti" and lease["classes"] == ["dog", "cat"], lease
    assert lease["dataset_path"] == os.path.join(root, "kitti"), lease
    assert lease["input_size"] == 64 and lease["channels"] == 3, lease
    with open(lease["out_path"], "wb") as f:  # what hone-pack leaves at the name
        f.write(b"HONEPAK\0")
    w.complete(lease, "done", {"event": "done", "images": 4})
    tl = w.lease()
    assert tl["id"] == tj["id"], tl
    assert tl["spec"]["data.packed"] == cv["config"]["out"], tl["spec"]
    assert tl["spec"]["data.format"] == "kitti", tl["spec"]
    w.complete(tl, "stopped")
    c.ok("POST", "/api/v1/jobs/%s/cancel" % cv128["id"])
    assert job(c, dflt["id"])["status"] == "failed"
    assert w.lease() is None


def restart(binary, c, root, ds):
    """kill -9 with a convert job running and a train job waiting for it."""
    exp = experiment(c, ds, {"model": {"input_size": 12}, "train": {"epochs": 1},
                             "data": {"val_size": 1}})
    tj = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"})
    w = FakeWorker(c, "w2")
    w.register()
    lease = w.lease()
    assert lease["id"] == tj["convert_job_id"], lease
    st, _ = w.report(lease, 1, {"images_done": 3, "images_total": 6})
    assert st == 200
    c.kill9()
    c2 = Controller(binary, root).start()
    w.ctl = c2
    cv = job(c2, lease["id"])
    assert cv["status"] == "running" and cv["progress"]["images_done"] == 3, cv
    assert job(c2, tj["id"])["status"] == "queued"
    assert w.lease() is None, "the waiting job was leased after a restart"
    w.complete(lease, "done", {"images": 6})
    tl = w.lease()
    assert tl["id"] == tj["id"] and tl["spec"]["data.packed"] == lease["out_path"], tl
    w.run_job(tl)
    return c2


def migration(binary):
    """A store at version 2 with a finished job and its metrics: 003 keeps both."""
    root = tempdir()
    write_idx(os.path.join(root, "idx"))
    db = sqlite3.connect(os.path.join(root, "hone.db"))
    db.execute("PRAGMA foreign_keys=ON")
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for f in ("001_init.sql", "002_worker_credentials.sql"):
        db.executescript(open(os.path.join(SCHEMAS, f)).read())
    db.execute("INSERT INTO schema_version VALUES (2)")
    db.execute("INSERT INTO datasets(id,name,type,format,path,created) VALUES"
               "('ds-1','d','image_classification','idx',?,1)", (os.path.join(root, "idx"),))
    db.execute("INSERT INTO experiments(id,name,network,train_datasets,metric,created) VALUES"
               "('exp-1','e','mlp','[\"ds-1\"]','val_accuracy',1)")
    db.execute("INSERT INTO jobs(id,experiment_id,action,status,epochs_target,epoch,created) "
               "VALUES('job-1','exp-1','train','done',2,2,1)")
    for e in (1, 2):
        db.execute("INSERT INTO metrics VALUES('job-1',?,'{\"val_accuracy\":0.5}',1)", (e,))
    db.execute("INSERT INTO leases(job_id,worker_id,granted,ended) VALUES('job-1','w',1,2)")
    db.commit()
    db.close()
    c = Controller(binary, root).start()
    try:
        assert c.ok("GET", "/api/v1/jobs/job-1")["status"] == "done"
        m = c.ok("GET", "/api/v1/jobs/job-1/metrics")["metrics"]
        assert [x["epoch"] for x in m] == [1, 2], m
    finally:
        c.stop()
    db = sqlite3.connect(os.path.join(root, "hone.db"))
    assert db.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 1
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    assert db.execute("SELECT version FROM schema_version").fetchone()[0] >= 3
    db.close()


def main():
    binary = binary_from_argv()
    migration(binary)
    root = tempdir()
    write_idx(os.path.join(root, "idx"))
    folder(os.path.join(root, "grey"))
    kitti_folder(os.path.join(root, "kitti"))
    c = Controller(binary, root).start()
    try:
        w = FakeWorker(c)
        w.register()
        ds = route_and_reuse(c, root, w)
        released(c, ds, w)
        failures(c, ds, w)
        kitti(c, root, w)
        c = restart(binary, c, root, ds)
    finally:
        if c.alive():
            c.stop()
    print("convert: ok")


if __name__ == "__main__":
    main()
