#!/usr/bin/python3
"""hone-train --serve, the resident trainer, against fresh hone-train runs of the same arguments
(CPU, real Fashion-MNIST; HONE_TEST_DEVICE=cuda runs it on a GPU):
1. Three different jobs back to back in one server (an sgd mlp to the end; an adamw mlp paused by
   --epochs-until; that job resumed with --resume auto): each job's stdout lines (but its timings)
   and files (model.bin, checkpoint.bin, model.json, spec.yaml, metrics.jsonl) equal those of a
   fresh hone-train of the same arguments, bit for bit, and each ends with {"event":"exit","code":0}.
2. The dataset cache: the second and third jobs report a hit on the first job's data; a job on a
   copy of the data is a miss, the next on it a hit, and after one of the copy's files changes
   (its modification time) a miss again. With --serve-cache 1, alternating two datasets misses.
3. Control: a job that fails (missing data) gets code 1 and the server (on the CPU) goes on;
   SIGTERM during a long job ends that job (exit line code 143, checkpoint of its last
   whole epoch kept) and not the server, which then runs job 1 again to the same numbers; a SIGTERM
   while no job runs is ignored. A malformed request gets code 2 and the server goes on.
Usage: test_train_serve.py HONE_TRAIN
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from hone_train import check, failures, sets  # noqa: E402

TRAIN = sys.argv[1]
DEVICE = os.environ.get("HONE_TEST_DEVICE", "cpu")
FASHION = os.environ.get("HONE_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1")
BASE = ["--device", DEVICE, "--threads", "2"]
SMALL = {"data.train_limit": 512, "data.val_size": 500, "data.test_limit": 500,
         "train.epochs": 2, "model.hidden": 32, "train.batch_size": 64}


def strip(line):
    """A JSON line without its timings (they differ from run to run)."""
    d = json.loads(line)
    d.pop("seconds", None)
    d.pop("images_per_second", None)
    return d


class Server:
    def __init__(self, *extra):
        self.err = open(os.path.join(TMP, "serve%d.err" % id(self)), "w+")
        self.p = subprocess.Popen([TRAIN, "--serve"] + list(extra), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.err, text=True, env=ENV)

    def send(self, args):
        self.p.stdin.write(json.dumps({"run": args}) + "\n")
        self.p.stdin.flush()

    def lines(self, on_line=None):
        """The job's stdout lines up to its exit line; (lines, exit code)."""
        out = []
        while True:
            line = self.p.stdout.readline()
            if not line:
                check(False, "server ended mid-job: %s" % self.stderr())
                return out, None
            d = json.loads(line)
            if d.get("event") == "exit":
                return out, d["code"]
            if d.get("event") in ("accepted", "alive"):  # the server's own lines
                continue
            out.append(line.rstrip("\n"))
            if on_line:
                on_line(d)

    def job(self, args):
        self.send(args)
        return self.lines()

    def stderr(self):
        self.err.flush()
        with open(self.err.name) as f:
            return f.read()

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=60)
        check(rc == 0, "server exit %s at the end of stdin" % rc)


def fresh(args):
    p = subprocess.run([TRAIN] + args, capture_output=True, text=True, env=ENV)
    check(p.returncode == 0, "fresh %s: exit %d: %s" % (args, p.returncode, p.stderr[-400:]))
    return [l for l in p.stdout.splitlines() if l.startswith("{")]


def same_files(a, b, what):
    for f in ["model.bin", "checkpoint.bin", "model.json", "spec.yaml"]:
        pa, pb = os.path.join(a, f), os.path.join(b, f)
        if os.path.exists(pa) or os.path.exists(pb):
            check(os.path.exists(pa) and os.path.exists(pb) and
                  open(pa, "rb").read() == open(pb, "rb").read(), "%s: %s differs" % (what, f))
    ma = [strip(l) for l in open(os.path.join(a, "metrics.jsonl"))]
    mb = [strip(l) for l in open(os.path.join(b, "metrics.jsonl"))]
    check(ma == mb, "%s: metrics.jsonl differs: %s vs %s" % (what, ma, mb))


def hits(text):
    return text.count("dataset cache hit"), text.count("dataset cache miss")


def main():
    if not os.path.exists(os.path.join(FASHION, "train-images-idx3-ubyte.gz")):
        print("skip: no Fashion-MNIST at", FASHION)
        return 77
    for d in ["fresh", "serve", "again", "one"]:
        os.makedirs(os.path.join(TMP, d))
    data = sets({"data.path": FASHION})
    jobs = [
        BASE + data + sets(SMALL) + ["--out", "{}/j1"],
        BASE + data + sets(SMALL) + sets({"train.optimizer": "adamw", "train.lr": 0.003,
                                          "train.seed": 5, "model.dropout": 0.2,
                                          "model.hidden": 48}) + ["--out", "{}/j2",
                                                                   "--epochs-until", "1"],
        BASE + data + sets(SMALL) + sets({"train.optimizer": "adamw", "train.lr": 0.003,
                                          "train.seed": 5, "model.dropout": 0.2,
                                          "model.hidden": 48}) + ["--out", "{}/j2",
                                                                   "--resume", "auto"],
    ]

    def at(args, where):
        return [a.replace("{}", os.path.join(TMP, where)) for a in args]

    # 1. back to back against fresh runs
    want = [fresh(at(j, "fresh")) for j in jobs]
    s = Server()
    for i, j in enumerate(jobs):
        got, code = s.job(at(j, "serve"))
        check(code == 0, "job %d: exit code %s" % (i + 1, code))
        check([strip(l) for l in got] == [strip(l) for l in want[i]],
              "job %d: lines differ:\n%s\n%s" % (i + 1, got, want[i]))
    check(want[1][-1].startswith('{"event":"paused"'), "job 2 did not pause: %s" % want[1])
    same_files(os.path.join(TMP, "fresh/j1"), os.path.join(TMP, "serve/j1"), "job 1")
    same_files(os.path.join(TMP, "fresh/j2"), os.path.join(TMP, "serve/j2"), "jobs 2+3")
    check(hits(s.stderr()) == (2, 1), "want 2 hits, 1 miss: %s" % (hits(s.stderr()),))

    # 2. a copy of the data: a miss, then a hit, then a miss after a file changed
    copy = os.path.join(TMP, "copy")
    shutil.copytree(FASHION, copy)
    on_copy = at(BASE + sets({"data.path": copy}) + sets(SMALL) + ["--out", "{}/c"], "serve")
    for n, want_hm in [(1, (2, 2)), (2, (3, 2))]:
        _, code = s.job(on_copy)
        check(code == 0 and hits(s.stderr()) == want_hm,
              "copy job %d: code %s, hits/misses %s, want %s" % (n, code, hits(s.stderr()),
                                                              want_hm))
    f = os.path.join(copy, "t10k-labels-idx1-ubyte.gz")
    st = os.stat(f)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1000000000))
    _, code = s.job(on_copy)
    check(code == 0 and hits(s.stderr()) == (3, 3),
          "changed file: code %s, hits/misses %s, want a miss" % (code, hits(s.stderr())))

    # 3. control: a malformed request, SIGTERM while idle, SIGTERM mid-job
    s.p.stdin.write("{\"run\": 3}\n")
    s.p.stdin.flush()
    out, code = s.lines()
    check(code == 2 and not out, "malformed request: code %s, lines %s" % (code, out))
    bad = at(BASE + sets({"data.path": os.path.join(TMP, "nowhere")}) + sets(SMALL), "serve")
    out, code = s.job(bad)
    check(code == 1 and not out, "a job on missing data: code %s, lines %s" % (code, out))
    if DEVICE == "cuda":
        # on a GPU a failed job ends the server (its exit line says "restart": the CUDA context
        # may be unusable), and the worker starts a new one: so does this test
        rc = s.p.wait(timeout=30)
        check(rc == 0, "the server after a failed job on a GPU: exit %s, want 0" % rc)
        s = Server()
        for _ in range(300):  # its signal handlers are in once it says it is serving
            if "hone-train: serving" in s.stderr():
                break
            time.sleep(0.1)
    s.p.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    check(s.p.poll() is None, "SIGTERM while idle ended the server")
    long_job = at(BASE + data + sets(dict(SMALL, **{"train.epochs": 400,
                                                     "data.train_limit": 4096}))
                  + ["--out", "{}/long"], "serve")
    s.send(long_job)
    seen = []

    def on_line(d):
        if "epoch" in d and not seen:
            seen.append(d["epoch"])
            s.p.send_signal(signal.SIGTERM)
    out, code = s.lines(on_line)
    check(code == 143, "SIGTERM mid-job: exit code %s, want 143" % code)
    check(seen and len(out) < 400 and not any("event" in json.loads(l) for l in out),
          "SIGTERM mid-job: the job went on: %d lines" % len(out))
    check(os.path.exists(os.path.join(TMP, "serve/long/checkpoint.bin")),
          "SIGTERM mid-job: no checkpoint of the whole epochs")
    check(s.p.poll() is None, "SIGTERM mid-job ended the server")
    again = at(jobs[0], "again")
    got, code = s.job(again)
    check(code == 0 and [strip(l) for l in got] == [strip(l) for l in want[0]],
          "job 1 after the cancelled job: code %s, lines %s" % (code, got))
    same_files(os.path.join(TMP, "fresh/j1"), os.path.join(TMP, "again/j1"), "job 1 again")
    s.close()

    # 2b. --serve-cache 1: two datasets in turn each miss
    s1 = Server("--serve-cache", "1")
    for args in [jobs[0], on_copy, jobs[0]]:
        _, code = s1.job(at(args, "one"))
        check(code == 0, "serve-cache 1: code %s" % code)
    check(hits(s1.stderr()) == (0, 3), "serve-cache 1: hits/misses %s, want 0/3" %
          (hits(s1.stderr()),))
    s1.close()
    print("train_serve:", "FAILED" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="hone-serve-") as TMP:
        sys.exit(main())
