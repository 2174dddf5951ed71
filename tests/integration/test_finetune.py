"""Fine-tuning from a parent job (issue 30) end to end: a real controller (auth on, two users), real
workers and real trainers on Fashion-MNIST subsets. MODE shared: the workers share the controller's
disk; MODE http: they run with --storage http and empty work dirs of their own (as user nobody when
root, the controller's data dir mode 0700), so the parent's model comes over REST, sha-256 checked.

  1. alice's parent: an mlp train job on 3000 images (10 classes). A child train job in another
     experiment (300 images) with parent_job_id starts from its model: its view shows
     parent_job_id, its log says every layer was copied, and its test accuracy after one epoch is
     above the same job's from random weights.
  2. a new head: a child on an image folder of 3 classes copies every layer but the last dense,
     which starts fresh (the log names it, "a new head"). (shared) Layer by layer: a cnn on RGB
     images from a cnn on grey ones copies every layer but the first convolution.
  3. an AutoML parent (2 random trials): a child AutoML job starts every trial from the parent's
     best_model/ (each trial's log), and shows parent_job_id.
  4. refusals, each naming parent_job_id and storing nothing: no such job (404), bob's job (404 to
     alice), a queued or running job, a canceled one, a failed one, an evaluate job, a model of
     another network (422).
  5. a parent whose files are gone (outside the API: no route deletes a job's model) fails its
     child with an error naming model.pretrained (shared) or the parent's model (http), not a
     crash, and a failed job is then refused as a parent.
  6. resume: a fine-tuning job's worker is killed mid-run (shared) or stopped with SIGTERM (http:
     its checkpoint uploaded); another worker resumes it from its checkpoint, and the resumed
     trainer says the parent was not applied over it.

usage: test_finetune.py MODE HONE-CONTROLLER HONE-WORKER HONE-TRAIN"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "data"))
from honeproc import ControllerProcess, WorkerProcess  # noqa: E402
import fmnist_folder  # noqa: E402
from pngfolder import png_bytes  # noqa: E402

ADMIN = {"Authorization": "Bearer adm1n"}
NOBODY = os.geteuid() == 0 and shutil.which("setpriv")


def call(ctl, method, path, body=None, headers=None, raw=False):
    data = json.dumps(body).encode() if body is not None else None
    h = dict(ADMIN if headers is None else headers)
    if data:
        h["Content-Type"] = "application/json"
    r = urllib.request.Request(ctl.base + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(r, timeout=60) as resp:
            b = resp.read()
            return resp.status, (b.decode() if raw else json.loads(b or b"null"))
    except urllib.error.HTTPError as e:
        b = e.read()
        try:
            return e.code, json.loads(b or b"null")
        except ValueError:
            return e.code, b.decode("utf-8", "replace")


class User:
    def __init__(self, ctl, headers):
        self.ctl, self.h = ctl, headers

    def ok(self, method, path, body=None, want=(200, 201)):
        st, js = call(self.ctl, method, path, body, self.h)
        assert st in want, (method, path, body, st, js)
        return js

    def req(self, method, path, body=None):
        return call(self.ctl, method, path, body, self.h)

    def logs(self, jid):
        st, text = call(self.ctl, "GET", "/api/v1/jobs/%s/logs" % jid, None, self.h, raw=True)
        assert st == 200, (st, text)
        return text

    def wait(self, jid, want=("done",), timeout=300, until=None):
        end = time.time() + timeout
        while time.time() < end:
            j = self.ok("GET", "/api/v1/jobs/" + jid)
            if until and until(j):
                return j
            if j["status"] in want:
                return j
            assert j["status"] in ("queued", "running"), (j, self.logs(jid)[-3000:])
            time.sleep(0.1)
        raise AssertionError("job %s: still %s" % (jid, j["status"]))


class Worker(WorkerProcess):
    """A worker enrolled with the worker token; with --storage http an empty work dir of its own
    (as nobody when root)."""

    def __init__(self, bins, root, name, url, http):
        extra = ["--grace", "5", "-v"] + (["--storage", "http"] if http else [])
        super().__init__(bins["worker"], bins["train"], root, name, url, extra=extra)
        self.dir = os.path.join(root, "w-" + name)
        os.makedirs(self.dir)
        if http and NOBODY:
            os.chown(self.dir, 65534, 65534)
            self.args = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + self.args
        self.env = dict(os.environ, HONE_TOKEN="enrol-me")

    def start(self):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=self.log, env=self.env,
                                     start_new_session=True)
        return self


def write_classes(fm, root, classes, per_class):
    """An image folder of Fashion-MNIST's first `classes` classes as grey PNGs: train/ from the
    training file, val/ from t10k, per_class images of each."""
    for split, stem in (("train", "train"), ("val", "t10k")):
        (n, h, w), px = fmnist_folder.read_idx(fm, stem + "-images-idx3-ubyte")
        _, labels = fmnist_folder.read_idx(fm, stem + "-labels-idx1-ubyte")
        counts = [0] * classes
        for i in range(n):
            y = labels[i]
            if y >= classes or counts[y] >= per_class:
                continue
            counts[y] += 1
            d = os.path.join(root, split, fmnist_folder.CLASSES[y])
            os.makedirs(d, exist_ok=True)
            img = px[i * h * w:(i + 1) * h * w]
            with open(os.path.join(d, "%05d.png" % i), "wb") as f:
                f.write(png_bytes(w, h, [img[r * w:(r + 1) * w] for r in range(h)], False))
            if min(counts) >= per_class:
                break


def jobs_count(db):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=30)
    try:
        return c.execute("SELECT count(*) FROM jobs").fetchone()[0]
    finally:
        c.close()


def refused(u, db, exp, body, code, words):
    """A create that must be refused: code, field parent_job_id, words in the message, no row."""
    before = jobs_count(db)
    st, js = u.req("POST", "/api/v1/experiments/%s/jobs" % exp, body)
    err = js.get("error", {}) if isinstance(js, dict) else {}
    assert st == code and err.get("field") == "parent_job_id", (body, code, st, js)
    for w in words:
        assert w in err.get("message", ""), (w, js)
    assert jobs_count(db) == before, "a refused create stored a job"
    print("refused (%d): %s" % (st, err["message"]))


def copied(log):
    m = re.search(r"model\.pretrained: copied (\d+) of (\d+) layers", log)
    return (int(m.group(1)), int(m.group(2))) if m else None


def experiment(u, name, ds, net, specs, automl=None):
    body = {"name": name, "network_arch": net, "train_datasets": [ds], "specs": specs}
    if automl:
        body["automl_settings"] = automl
    return u.ok("POST", "/api/v1/experiments", body)["id"]


def train(u, exp, **kw):
    body = {"action": "train"}
    body.update(kw)
    return u.ok("POST", "/api/v1/experiments/%s/jobs" % exp, body)


def run(mode, bins, ctl, root, fm, data_dir, workers):
    http = mode == "http"
    db = os.path.join(data_dir, "hone.db")
    admin = User(ctl, ADMIN)
    users = {}
    for name in ("alice", "bob"):
        uid = admin.ok("POST", "/api/v1/users", {"name": name})["id"]
        key = admin.ok("POST", "/api/v1/users/%s/keys" % uid)["key"]
        tok = admin.ok("POST", "/api/v1/login", {"key": key})["token"]
        users[name] = User(ctl, {"Authorization": "Bearer " + tok})
    alice, bob = users["alice"], users["bob"]

    # the data: Fashion-MNIST's IDX files, and an image folder of 3 of its classes (grey PNGs)
    big_ds = alice.ok("POST", "/api/v1/datasets", {"name": "fm", "path": fm, "format": "idx"})["id"]
    folder = os.path.join(root, "data", "three")
    write_classes(fm, folder, 3, 60)
    three_ds = alice.ok("POST", "/api/v1/datasets", {"name": "three", "path": folder,
                                                      "format": "image_folder"})["id"]
    if http and NOBODY:
        os.chmod(data_dir, 0o700)
    mlp = {"model": {"hidden": 64}, "train": {"epochs": 1, "batch_size": 32}}
    big = experiment(alice, "big", big_ds, "mlp", dict(mlp, data={
        "train_limit": 3000, "val_size": 500, "test_limit": 500}, train={"epochs": 3,
                                                                         "batch_size": 32}))
    small_spec = dict(mlp, data={"train_limit": 300, "val_size": 100, "test_limit": 1000})
    small = experiment(alice, "small", big_ds, "mlp", small_spec)

    # 1. a train parent, a child from it and the same child from random weights
    parent = train(alice, big)["id"]
    st, js = alice.req("POST", "/api/v1/experiments/%s/jobs" % small,
                       {"action": "train", "parent_job_id": parent})
    assert st == 422 and js["error"]["field"] == "parent_job_id" and \
        ("is queued" in js["error"]["message"] or "is running" in js["error"]["message"]), js
    p = alice.wait(parent)
    assert p.get("parent_job_id") is None, p
    child = train(alice, small, parent_job_id=parent)
    assert child["parent_job_id"] == parent, child
    scratch = train(alice, small)["id"]
    c = alice.wait(child["id"])
    s = alice.wait(scratch)
    log = alice.logs(child["id"])
    cp = copied(log)
    assert cp and cp[0] == cp[1], (cp, log[-2000:])
    assert "initialised fresh" not in log, log[-2000:]
    assert copied(alice.logs(scratch)) is None
    acc_c, acc_s = c["result"]["test_accuracy"], s["result"]["test_accuracy"]
    print("1 epoch on 300 images: fine-tuned from %s %.4f, from random weights %.4f"
          % (parent, acc_c, acc_s))
    assert acc_c > acc_s, (acc_c, acc_s)
    assert alice.ok("GET", "/api/v1/jobs/" + child["id"])["parent_job_id"] == parent
    if http:
        wlog = "".join(w.text() for w in workers)
        assert re.search(r"job %s: model of job %s fetched \(\d+ file\(s\) downloaded, \d+ bytes, "
                         r"\d+ from the cache; sha-256 checked\)" % (child["id"], parent), wlog), \
            wlog[-3000:]

    # 2. another class count: a new head
    three = experiment(alice, "three", three_ds, "mlp", dict(mlp, data={
        "val_size": 30, "channels": 1}, model={"hidden": 64, "input_size": 28}))
    c3 = train(alice, three, parent_job_id=parent)["id"]
    alice.wait(c3)
    log = alice.logs(c3)
    cp = copied(log)
    assert cp and cp[0] == cp[1] - 1, (cp, log[-2000:])
    assert re.search(r"layers initialised fresh, their shapes differ \(1\): dense \d+ \(a new "
                     r"head: the model has 10 classes, this run 3\)", log), log[-2000:]

    # 2b. (shared) layer by layer: a cnn of RGB inputs from a cnn of grey ones: the first
    # convolution (3 channels, not 1) starts fresh, every later layer is copied
    if not http:
        ten = os.path.join(root, "data", "ten")
        write_classes(fm, ten, 10, 20)
        ten_ds = alice.ok("POST", "/api/v1/datasets", {"name": "ten", "path": ten,
                                                        "format": "image_folder"})["id"]
        cnn_spec = {"data": {"train_limit": 2000, "val_size": 300, "test_limit": 300},
                    "train": {"epochs": 1, "batch_size": 64}}
        cnn_parent = train(alice, experiment(alice, "cnn-big", big_ds, "cnn", cnn_spec))["id"]
        alice.wait(cnn_parent)
        rgb = experiment(alice, "rgb", ten_ds, "cnn", {
            "data": {"val_size": 40, "channels": 3}, "model": {"input_size": 28},
            "train": {"epochs": 1, "batch_size": 32}})
        cr = train(alice, rgb, parent_job_id=cnn_parent)["id"]
        alice.wait(cr)
        log = alice.logs(cr)
        cp = copied(log)
        assert cp and cp[0] == cp[1] - 1, (cp, log[-2000:])
        assert re.search(r"layers initialised fresh, their shapes differ \(1\): conv 0\n", log), \
            log[-2000:]
        assert re.search(r"layers copied \(\d+\): conv \d+, ", log), log[-2000:]

    # 3. an AutoML parent: every trial of an AutoML child starts from its best_model/
    auto = {"automl_enabled": True, "automl_algorithm": "random",
            "automl_max_recommendations": 2, "automl_max_parallel": 1}
    big_auto = experiment(alice, "big-auto", big_ds, "mlp", dict(mlp, data={
        "train_limit": 1000, "val_size": 200, "test_limit": 200}), automl=auto)
    ap = alice.ok("POST", "/api/v1/experiments/%s/jobs" % big_auto, {"action": "automl"})["id"]
    alice.wait(ap, timeout=400)
    small_auto = experiment(alice, "small-auto", big_ds, "mlp", small_spec, automl=auto)
    ac = alice.ok("POST", "/api/v1/experiments/%s/jobs" % small_auto,
                  {"action": "automl", "parent_job_id": ap})
    assert ac["parent_job_id"] == ap, ac
    alice.wait(ac["id"], timeout=400)
    trials = alice.ok("GET", "/api/v1/jobs?parent=%s" % ac["id"])["jobs"]
    assert len(trials) == 2, trials
    for t in trials:
        cp = copied(alice.logs(t["id"]))
        assert cp and cp[0] == cp[1], (t["id"], cp)
        assert t["parent_job_id"] == ap, t
    if http:
        wlog = "".join(w.text() for w in workers)
        for t in trials:
            assert re.search(r"job %s: model of job %s/best_model fetched \(\d+ file\(s\)"
                             % (t["id"], ap), wlog), wlog[-3000:]

    # 4. refusals
    refused(alice, db, small, {"action": "train", "parent_job_id": "job-nope"}, 404, ["no job"])
    bobs_ds = bob.ok("POST", "/api/v1/datasets", {"name": "fm", "path": fm, "format": "idx"})["id"]
    bobs_exp = experiment(bob, "b", bobs_ds, "mlp", small_spec)
    bobs = train(bob, bobs_exp)["id"]
    refused(alice, db, small, {"action": "train", "parent_job_id": bobs}, 404, ["no job", bobs])
    long_job = train(alice, big, specs={"train": {"epochs": 200}})["id"]
    refused(alice, db, small, {"action": "automl", "parent_job_id": long_job}, 422,
            ["fine-tuning starts from the model of a done job", "wait until it is done"])
    alice.ok("POST", "/api/v1/jobs/%s:cancel" % long_job)
    alice.wait(long_job, want=("canceled",))
    refused(alice, db, small, {"action": "train", "parent_job_id": long_job}, 422,
            ["was canceled"])
    ev = alice.ok("POST", "/api/v1/experiments/%s/jobs" % big,
                  {"action": "evaluate", "parent_job_id": parent})["id"]
    alice.wait(ev)
    refused(alice, db, small, {"action": "train", "parent_job_id": ev}, 422,
            ["an evaluate job", "train or automl job"])
    cnn = experiment(alice, "cnn", big_ds, "cnn", small_spec)
    refused(alice, db, cnn, {"action": "train", "parent_job_id": parent}, 422,
            ["is a mlp", "trains cnn", "same network"])
    refused(alice, db, small, {"action": "train", "parent_job_id": parent,
                               "specs": {"model": {"hidden": 256}}}, 422,
            ["no layer of job %s's model (mlp, 1x28x28 inputs, 10 classes)" % parent,
             "model.hidden 64 there, 256 here"])
    # RGB inputs and 3 classes: the mlp's two dense layers both differ (a relu is no layer to copy)
    three_rgb = experiment(alice, "three-rgb", three_ds, "mlp", dict(mlp, data={
        "val_size": 30, "channels": 3}, model={"hidden": 64, "input_size": 28}))
    refused(alice, db, three_rgb, {"action": "train", "parent_job_id": parent}, 422,
            ["fits this job's network (mlp, 3x28x28, 3 classes)", "data.channels"])

    # 5. a parent whose model is gone from disk: the child fails saying so; a failed job is no
    # parent
    gone = train(alice, big)["id"]
    alice.wait(gone)
    orphan = train(alice, small, parent_job_id=gone)["id"]
    os.unlink(os.path.join(data_dir, "artifacts", gone, "model.bin"))
    j = alice.wait(orphan, want=("failed",))
    why = (j.get("error") or "") + alice.logs(orphan)
    assert ("model.pretrained" in why) if not http else ("model of job %s" % gone in why), why
    print("a child of a parent without its model: %s" % (j.get("error") or "").strip()[-200:])
    refused(alice, db, small, {"action": "train", "parent_job_id": orphan}, 422,
            ["%s failed: fine-tuning" % orphan])
    refused(alice, db, small, {"action": "train", "parent_job_id": gone}, 422, ["no model"])
    bob.wait(bobs)

    # 6. resume on another worker: the checkpoint, not the parent (shared: the worker dies and
    # its lease lapses; http: SIGTERM, its checkpoint uploaded and the lease handed back)
    long_spec = {"train": {"epochs": 40}, "data": {"train_limit": 20000}}
    rj = train(alice, small, parent_job_id=parent, specs=long_spec)["id"]
    alice.wait(rj, until=lambda j: (j.get("epoch") or 0) >= 2)
    a = workers[0]
    if http:
        a.proc.send_signal(15)
        a.proc.wait(timeout=30)
        a.log.close()
    else:
        a.kill9()
    assert alice.ok("GET", "/api/v1/jobs/" + rj)["epoch"] < 40, "ended before the kill"
    b = Worker(bins, root, "b", ctl.base, http).start()
    workers.append(b)
    j = alice.wait(rj, timeout=400)
    assert j["status"] == "done", j
    log = alice.logs(rj)
    assert re.search(r"model\.pretrained: not applied: resuming from \S+checkpoint\.bin", log), \
        log[-3000:]
    assert len(re.findall(r"model\.pretrained: copied", log)) == 1, log[-3000:]
    if http:
        assert "job %s: checkpoint.bin fetched from the controller" % rj in b.text(), b.text()


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("shared", "http"):
        print(__doc__)
        return 2
    mode = sys.argv[1]
    fm = fmnist_folder.find_fmnist()
    if not fm:
        print("SKIP: no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
        return 77
    bins = dict(zip(("ctl", "worker", "train"), (os.path.abspath(a) for a in sys.argv[2:5])))
    root = tempfile.mkdtemp(prefix="hone-finetune-")
    os.chmod(root, 0o755)
    if mode == "http" and NOBODY:  # nobody runs copies: the build tree may be mode 0700
        os.makedirs(os.path.join(root, "bin"))
        for k in ("worker", "train"):
            bins[k] = shutil.copy(bins[k], os.path.join(root, "bin"))
        shutil.copy(os.path.join(os.path.dirname(sys.argv[3]), "..", "data", "hone-pack"),
                    os.path.join(root, "bin"))
    data_dir = os.path.join(root, "ctl")
    os.makedirs(data_dir)
    os.makedirs(os.path.join(root, "data"))
    cfg = os.path.join(root, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("log_format: text\nheartbeat_seconds: 1\nlease_seconds: 3\n"
                "auth: {token: adm1n, worker_token: enrol-me}\n"
                "data_roots: [%s, %s]\n" % (json.dumps(os.path.join(root, "data")),
                                             json.dumps(fm)))
    ctl = ControllerProcess(bins["ctl"], data_dir, config=cfg,
                            log_path=os.path.join(root, "controller.log"))
    workers = []
    try:
        ctl.start()
        workers.append(Worker(bins, root, "a", ctl.base, mode == "http").start())
        run(mode, bins, ctl, root, fm, data_dir, workers)
        # clean exits (under ASan: LeakSanitizer found nothing)
        for w in workers:
            if w.proc.poll() is None:
                w.stop()
                assert w.proc.returncode == 0, ("worker %s exit %d" % (w.name, w.proc.returncode),
                                                w.text()[-3000:])
        rc = ctl.stop()
        assert rc == 0, ("controller exit %d" % rc, ctl.tail())
    except BaseException:
        time.sleep(0.2)
        sys.stderr.write("---- controller log\n%s\n" % ctl.tail())
        for w in workers:
            sys.stderr.write("---- worker %s log\n%s\n" % (w.name, w.text()[-4000:]))
        raise
    finally:
        for w in workers:
            if w.proc and w.proc.poll() is None:
                w.stop()
        ctl.stop()
        if NOBODY:
            os.chmod(data_dir, 0o755)
    shutil.rmtree(root, ignore_errors=True)
    print("finetune %s: ok" % mode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
