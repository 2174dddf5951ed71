"""Workers that share no disk with the controller (issue 10, hone-worker --storage http), end to end:
a real controller (auth on) and real workers with empty work dirs of their own, and real trainers,
on a small IDX dataset made here.

When run as root the workers run as user nobody and the controller's data dir (the dataset is inside
it) is mode 0700: no path of it is readable by them, so everything they read and write must go over
HTTP. Otherwise they run as the same user and the run still checks that their trainer was pointed at
their own files.

  1. a train job: the dataset is downloaded into the worker's cache (by hash; a .part file left by
     a broken download is resumed: the controller serves only the rest), the trainer reads a folder
     of links to it, the model and checkpoint are uploaded (the controller's copy is the worker's,
     byte for byte);
  2. a second job on the same worker downloads nothing (its log, and the controller's file-read
     counter, which does not move);
  3. resume elsewhere: a long job's worker is killed (-9) mid-run; its lease lapses; another worker
     (its own empty dir) fetches the uploaded checkpoint, resumes at an epoch past 1, and finishes
     with exactly the metrics of the same job run without interruption (bit-identical resume);
     SIGTERM: the worker uploads, hands the lease back (queued at once) and exits within --grace;
     the next worker resumes it to the same end;
  4. a download of a file whose bytes were changed after the manifest was made is refused (hash
     mismatch): nothing lands in the cache under that hash;
  5. an image-folder experiment: its convert job runs on an http worker (folder downloaded, packed
     there, the packed file uploaded), then the train job downloads that packed file alone;
  6. evaluate, export and inference on an http worker (the parent's model, the dataset and the
     image folder downloaded, outputs uploaded: the evaluation equals the train job's test
     accuracy, labels.jsonl has a line per image).

usage: test_storage_http.py HONE-CONTROLLER HONE-WORKER HONE-TRAIN"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from honeproc import ControllerProcess, WorkerProcess  # noqa: E402
from blob_idx import write_blob_idx  # noqa: E402
from pngfolder import write_folder  # noqa: E402

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
            return resp.status, (b if raw else json.loads(b or b"null"))
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def ok(ctl, method, path, body=None):
    st, js = call(ctl, method, path, body)
    assert st in (200, 201), (method, path, st, js)
    return js


class HttpWorker(WorkerProcess):
    """A worker with --storage http and an empty work dir of its own (as nobody when root)."""

    def __init__(self, bins, root, name, url):
        super().__init__(bins["worker"], bins["train"], root, name, url,
                         extra=["--storage", "http", "--grace", "5", "-v"])
        self.dir = os.path.join(root, "w-" + name)
        os.makedirs(self.dir)
        if NOBODY:
            os.chown(self.dir, 65534, 65534)
            self.args = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + self.args
        self.env = dict(os.environ, HONE_TOKEN="enrol-me")

    def start(self):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=self.log, env=self.env,
                                     start_new_session=True)
        return self


def wait_job(ctl, jid, want=("done",), timeout=240, until=None):
    end = time.time() + timeout
    while time.time() < end:
        j = ok(ctl, "GET", "/api/v1/jobs/" + jid)
        if until and until(j):
            return j
        if j["status"] in want:
            return j
        assert j["status"] in ("queued", "running"), j
        time.sleep(0.05)
    raise AssertionError("job %s: still %s" % (jid, j["status"]))


def epochs(ctl, jid):
    m = ok(ctl, "GET", "/api/v1/jobs/%s/metrics?limit=1000" % jid)["metrics"]
    return [(r["epoch"], r.get("val_loss"), r.get("val_accuracy")) for r in m]


def main():
    bins = dict(zip(("ctl", "worker", "train"), (os.path.abspath(a) for a in sys.argv[1:4])))
    root = tempfile.mkdtemp(prefix="hone-http-")
    os.chmod(root, 0o755)
    if NOBODY:  # nobody's workers run copies: the build tree may sit under a mode-0700 folder
        os.makedirs(os.path.join(root, "bin"))
        # hone-pack (convert jobs) where the worker finds it: beside its copy
        pack = os.path.join(os.path.dirname(bins["worker"]), "..", "data", "hone-pack")
        shutil.copy(pack, os.path.join(root, "bin"))
        for k in ("worker", "train"):
            bins[k] = shutil.copy(bins[k], os.path.join(root, "bin"))
    data_dir = os.path.join(root, "ctl")
    ds_dir = os.path.join(data_dir, "datasets", "tiny")
    os.makedirs(os.path.dirname(ds_dir))
    write_blob_idx(ds_dir, 1200, 200)
    png_dir = os.path.join(data_dir, "datasets", "pngs")
    n_png = write_folder(png_dir, classes=2, per_class=20, size=24)
    cfg = os.path.join(root, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("log_format: text\nheartbeat_seconds: 1\nlease_seconds: 3\n"
                "auth: {token: adm1n, worker_token: enrol-me}\n"
                "data_roots: [\"%s\"]\n" % data_dir)
    ctl = ControllerProcess(bins["ctl"], data_dir, config=cfg,
                            log_path=os.path.join(root, "controller.log"))
    workers = []
    ok_exit = False
    try:
        ctl.start()
        if NOBODY:
            os.chmod(data_dir, 0o700)
            probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534",
                                    "--clear-groups", "cat",
                                    os.path.join(ds_dir, "t10k-labels-idx1-ubyte.gz")],
                                   capture_output=True)
            assert probe.returncode != 0, "user nobody can read the controller's data dir"
        ds = ok(ctl, "POST", "/api/v1/datasets", {"name": "tiny", "path": ds_dir})["id"]
        # A download that broke off half-way before: worker a resumes its .part file and asks
        # the controller for the rest only.
        man = ok(ctl, "GET", "/api/v1/datasets/%s/files" % ds)["files"]
        total = sum(f["bytes"] for f in man)
        big = max(man, key=lambda f: f["bytes"])
        a = HttpWorker(bins, root, "a", ctl.base)
        os.makedirs(os.path.join(a.dir, "cache"))
        half = big["bytes"] // 2
        with open(os.path.join(a.dir, "cache", big["sha256"] + ".part"), "wb") as fh:
            fh.write(open(os.path.join(ds_dir, big["name"]), "rb").read()[:half])
        if NOBODY:
            for sub in ("cache", "cache/" + big["sha256"] + ".part"):
                os.chown(os.path.join(a.dir, sub), 65534, 65534)
        a.start()
        workers.append(a)
        spec = {"data": {"val_size": 200}, "model": {"hidden": 32}, "train": {"epochs": 2}}
        exp = ok(ctl, "POST", "/api/v1/experiments",
                 {"name": "e", "network_arch": "mlp", "train_datasets": [ds],
                  "specs": spec})["id"]

        # 1. A train job over HTTP.
        j1 = ok(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"})["id"]
        assert wait_job(ctl, j1)["status"] == "done", epochs(ctl, j1)
        log = a.text()
        assert re.search(r"job %s: dataset %s: 4 file\(s\) downloaded \(\d+ bytes\), 0 from the "
                         r"cache" % (j1, ds), log), log
        names = {f["name"] for f in ok(ctl, "GET", "/api/v1/jobs/%s/artifacts" % j1)["files"]}
        for n in ("model.bin", "model.json", "checkpoint.bin", "metrics.jsonl", "spec.yaml"):
            assert n in names, (n, names)
        st, theirs = call(ctl, "GET", "/api/v1/jobs/%s/artifacts/model.bin" % j1, raw=True)
        mine = open(os.path.join(a.dir, "jobs", j1, "model.bin"), "rb").read()
        assert st == 200 and theirs == mine, "the controller's model.bin is not the worker's"
        cache = os.path.join(a.dir, "cache")
        assert len([f for f in os.listdir(cache) if re.fullmatch("[0-9a-f]{64}", f)]) == 4
        # the trainer read hard links to the cache under <work-dir>/data/<job>, gone once it ended
        assert not os.path.exists(os.path.join(a.dir, "data", j1)), "links left behind"
        reads = metric(ctl, "hone_dataset_file_reads_total")
        assert reads >= 4, reads
        served = metric(ctl, "hone_dataset_file_bytes_total")
        assert served == total - half, (served, total, half)
        assert not os.path.exists(os.path.join(cache, big["sha256"] + ".part"))

        # 2. The same dataset again: nothing downloaded.
        j2 = ok(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"})["id"]
        assert wait_job(ctl, j2)["status"] == "done"
        assert "job %s: dataset %s: 0 file(s) downloaded (0 bytes), 4 from the cache" % (j2, ds) \
            in a.text(), a.text()
        assert metric(ctl, "hone_dataset_file_reads_total") == reads

        # 3. Resume elsewhere, compared with the same job run whole.
        long_spec = {"train": {"epochs": 30}, "model": {"hidden": 256}}
        j3 = ok(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp,
                {"action": "train", "specs": long_spec})["id"]
        wait_job(ctl, j3, until=lambda j: (j.get("epoch") or 0) >= 2)
        # Let the epoch-2 checkpoint go up (the uploader runs beside the trainer), then kill.
        t_end = time.time() + 20
        while time.time() < t_end and "checkpoint upload" not in a.text():
            st, body = call(ctl, "GET", "/api/v1/jobs/%s/artifacts" % j3)
            if st == 200 and any(f["name"] == "checkpoint.bin" for f in body["files"]):
                break
            time.sleep(0.05)
        a.kill9()
        killed_at = ok(ctl, "GET", "/api/v1/jobs/" + j3)["epoch"]
        assert killed_at < 30, "the job ended before the kill; make it longer"
        b = HttpWorker(bins, root, "b", ctl.base).start()
        workers.append(b)
        assert wait_job(ctl, j3)["status"] == "done"
        blog = b.text()
        assert "job %s: checkpoint.bin fetched from the controller" % j3 in blog, blog
        m = re.search(r"job %s: starting .*resumed" % j3, blog)
        assert m, blog
        first = re.search(r"job %s: epoch (\d+) reported" % j3, blog)
        assert first is None or int(first.group(1)) > 1, blog
        j4 = ok(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp,
                {"action": "train", "specs": long_spec})["id"]
        assert wait_job(ctl, j4)["status"] == "done"
        e3, e4 = epochs(ctl, j3), epochs(ctl, j4)
        assert [e for e, _, _ in e3] == list(range(1, 31)), e3
        assert e3 == e4, "resumed run differs from the whole run:\n%s\n%s" % (e3, e4)

        # 3b. SIGTERM mid-run: the worker uploads its checkpoint, hands the lease back (the job
        # is queued again at once, long before the lease would lapse) and exits within its
        # grace; another worker resumes the job to the same end as the whole run.
        j6 = ok(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp,
                {"action": "train", "specs": long_spec})["id"]
        wait_job(ctl, j6, until=lambda j: (j.get("epoch") or 0) >= 3)
        t0 = time.time()
        b.proc.send_signal(15)
        b.proc.wait(timeout=30)
        took = time.time() - t0
        b.log.close()
        assert b.proc.returncode == 0, b.text()
        assert took < 5 + 2, "worker b took %.1f s to exit (grace 5 s)" % took
        j = ok(ctl, "GET", "/api/v1/jobs/" + j6)
        assert j["status"] == "queued" and j["resume"], j
        assert metric(ctl, "hone_leases_released_total") == 1
        assert "job %s: " % j6 in b.text() and "output file(s) uploaded" in b.text(), b.text()
        c = HttpWorker(bins, root, "c", ctl.base).start()
        workers.append(c)
        assert wait_job(ctl, j6)["status"] == "done"
        assert "job %s: checkpoint.bin fetched from the controller" % j6 in c.text(), c.text()
        assert epochs(ctl, j6) == e4, "resumed after SIGTERM differs from the whole run"
        c.stop()

        # 4. A file whose bytes changed behind the controller's back (size and mtime kept, so
        # its cached hash is stale): a fresh worker's download does not match the manifest and
        # is refused; the job fails naming it and nothing is cached under that hash.
        lab = os.path.join(ds_dir, "t10k-labels-idx1-ubyte.gz")
        old = os.stat(lab)
        want = [x for x in ok(ctl, "GET", "/api/v1/datasets/%s/files" % ds)["files"]
                if x["name"] == "t10k-labels-idx1-ubyte.gz"][0]["sha256"]
        with open(lab, "r+b") as fh:
            fh.seek(12)
            byte = fh.read(1)
            fh.seek(12)
            fh.write(bytes([byte[0] ^ 0xFF]))
        os.utime(lab, ns=(old.st_atime_ns, old.st_mtime_ns))
        d = HttpWorker(bins, root, "d", ctl.base).start()
        workers.append(d)
        j5 = ok(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"})["id"]
        assert wait_job(ctl, j5, want=("failed",))["status"] == "failed"
        assert re.search(r"sha256 [0-9a-f]{64}, not the manifest's %s; discarded" % want,
                         d.text()), d.text()
        assert not os.path.exists(os.path.join(d.dir, "cache", want))
        with open(lab, "r+b") as fh:  # put it back as it was (the hash cached is right again)
            fh.seek(12)
            fh.write(byte)
        os.utime(lab, ns=(old.st_atime_ns, old.st_mtime_ns))
        # 5. An image-folder experiment: its convert job runs on an http worker (the folder is
        # downloaded, packed there, the packed file uploaded to the controller's packed folder);
        # the train job then downloads that one packed file and trains on it.
        png = ok(ctl, "POST", "/api/v1/datasets", {"name": "pngs", "path": png_dir,
                                                    "format": "image_folder"})["id"]
        pexp = ok(ctl, "POST", "/api/v1/experiments",
                  {"name": "p", "network_arch": "cnn", "train_datasets": [png],
                   "specs": {"model": {"input_size": 16}, "train": {"epochs": 1, "batch_size": 8},
                             "data": {"val_size": 8}}})["id"]
        pj = ok(ctl, "POST", "/api/v1/experiments/%s/jobs" % pexp, {"action": "train"})
        cid = pj["convert_job_id"]
        assert cid, pj
        assert wait_job(ctl, pj["id"], want=("done", "failed"))["status"] == "done", d.text()
        cv = ok(ctl, "GET", "/api/v1/jobs/" + cid)
        assert cv["status"] == "done", cv
        packed_name = os.path.basename(cv["config"]["out"])
        dlog = d.text()
        assert "job %s: dataset %s: %d file(s) downloaded" % (cid, png, n_png) in dlog, dlog
        assert "job %s: packed file %s uploaded" % (cid, packed_name) in dlog, dlog
        assert "job %s: dataset %s: 1 file(s) downloaded" % (pj["id"], png) in dlog, dlog
        mine = open(os.path.join(d.dir, "jobs", cid, packed_name), "rb").read()
        assert open(cv["config"]["out"], "rb").read() == mine
        assert not os.path.exists(os.path.join(d.dir, "data", pj["id"])), "links left behind"
        # 6. Evaluate, export and inference on an http worker: the parent's model comes over
        # HTTP (the dataset for evaluate, the image folder for inference), the outputs go back.
        jobs = "/api/v1/experiments/%s/jobs" % exp
        ev = ok(ctl, "POST", jobs, {"action": "evaluate", "parent_job_id": j1})["id"]
        ex = ok(ctl, "POST", jobs, {"action": "export", "parent_job_id": j1})["id"]
        train1 = ok(ctl, "GET", "/api/v1/jobs/" + j1)
        r = wait_job(ctl, ev, want=("done", "failed"))
        assert r["status"] == "done", (r, d.text())
        assert abs(r["result"]["accuracy"] - train1["result"]["test_accuracy"]) < 1e-6, r
        assert wait_job(ctl, ex, want=("done", "failed"))["status"] == "done", d.text()
        assert "job %s: model of job %s fetched" % (ev, j1) in d.text(), d.text()
        st, onnx = call(ctl, "GET", "/api/v1/jobs/%s/artifacts/model.onnx" % ex, raw=True)
        assert st == 200 and onnx == open(os.path.join(d.dir, "jobs", ex, "out", "model.onnx"),
                                          "rb").read()
        # inference on the PNG model (j: the image-folder train job) over its own folder
        inf = ok(ctl, "POST", "/api/v1/experiments/%s/jobs" % pexp,
                 {"action": "inference", "parent_job_id": pj["id"], "folder": png_dir})["id"]
        r = wait_job(ctl, inf, want=("done", "failed"))
        assert r["status"] == "done" and r["result"]["images"] == n_png, (r, d.text())
        # the same PNGs came with the convert job: by content hash they are in the cache already
        assert "job %s: input folder: 0 file(s) downloaded (0 bytes), %d from the cache" % (
            inf, n_png) in d.text(), d.text()
        st, labels = call(ctl, "GET", "/api/v1/jobs/%s/artifacts/labels.jsonl" % inf, raw=True)
        assert st == 200 and len(labels.splitlines()) == n_png, labels[:200]
        st, js = call(ctl, "GET", "/api/v1/jobs/%s/input" % inf)  # admin: the manifest
        assert st == 200 and len(js["files"]) == n_png, js
        ok_exit = True
        if os.environ.get("HONE_TEST_VERBOSE"):
            print("killed at epoch", killed_at)
            print(e3)
            print(b.text()[-3000:])
    finally:
        for w in workers:
            w.stop()
        ctl.stop()
        if not ok_exit:
            for p in sorted(os.listdir(root)):
                if p.endswith(".log"):
                    print("---", p)
                    print(open(os.path.join(root, p), errors="replace").read()[-6000:])
        shutil.rmtree(root, ignore_errors=True)
    print("storage http: ok%s" % ("" if NOBODY else " (workers ran as the controller's user)"))


def metric(ctl, name):
    st, body = call(ctl, "GET", "/metrics", raw=True)
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return int(line.split()[1])
    raise AssertionError("no %s in /metrics" % name)


if __name__ == "__main__":
    main()
