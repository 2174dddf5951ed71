#!/usr/bin/python3
"""hone-train --serve --listen SOCKET (packed trials: several jobs training at once in one process)
against plain hone-train runs of the same arguments (CPU, a small Fashion-MNIST subset; with
HONE_TEST_DEVICE=cuda the same on a GPU, tests/gpu registers it so):
1. Pack: 4 reference-CNN trials (different lr, seed) over 4 connections at the same time: each
   trial's metrics.jsonl (all but the timings), model.bin, checkpoint.bin and model.json equal its
   solo run byte for byte; they overlapped in time (every trial had reported an epoch before any
   was done) and shared one copy of the data (1 cache miss, 3 hits).
2. Cancel: {"cancel":true} on one connection mid-pack ends that trial (code 143, its checkpoint of
   whole epochs kept) and the other three still equal their solo runs; a client that closes its
   connection mid-job has its job cancelled too.
3. kill -9 of the server mid-trial: a new server on the same path (the stale socket file replaced)
   resumes the trial (--resume auto) to the solo run's final metrics and model.
4. Control: a second server on a live path is refused (exit 1) and the first serves on; bad request
   lines get code 2 and a message, and the connection serves on; the socket is mode 0600; SIGTERM
   cancels the running job (code 143), unlinks the socket and exits 0; --idle-exit ends an idle
   server and unlinks its socket.
5. The socket file appears only once the server listens: with SLOW_LISTEN_SO preloaded (listen()
   waits 300 ms) a client that connects the moment the file appears is served, and the temporary
   name the socket was bound under is gone.
Usage: test_train_listen.py HONE_TRAIN [SLOW_LISTEN_SO]
"""
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from hone_listen import Conn  # noqa: E402
from hone_train import check, failures, metrics, same_files, sets, strip  # noqa: E402

TRAIN = sys.argv[1]
SLOW_LISTEN = sys.argv[2] if len(sys.argv) > 2 else None
DEVICE = os.environ.get("HONE_TEST_DEVICE", "cpu")
FASHION = os.environ.get("HONE_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1")
BASE = ["--device", DEVICE, "--threads", "1"]
SMALL = {"network": "cnn", "data.train_limit": 512, "data.val_size": 128, "data.test_limit": 128,
         "train.epochs": 3, "train.batch_size": 64}
if DEVICE == "cuda":  # trials long enough on a GPU to overlap
    SMALL.update({"data.train_limit": 16384, "data.val_size": 1000, "data.test_limit": 1000})
TRIALS = [{"train.lr": 0.02, "train.seed": 1}, {"train.lr": 0.05, "train.seed": 2},
          {"train.lr": 0.01, "train.seed": 3, "train.optimizer": "adamw"},
          {"train.lr": 0.03, "train.seed": 4}]


def trial_args(i, out, **extra):
    return BASE + sets({"data.path": FASHION}) + sets(dict(SMALL, **TRIALS[i], **extra)) + \
        ["--out", out]


class Server:
    started = 0

    def __init__(self, path, *extra):
        self.path = path
        Server.started += 1
        self.err = open("%s.%d.err" % (path, Server.started), "w+")
        self.p = subprocess.Popen([TRAIN, "--serve", "--listen", path] + list(extra),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=self.err, env=ENV)
        for _ in range(300):
            if "hone-train: serving on" in self.stderr() or self.p.poll() is not None:
                break
            time.sleep(0.05)
        check(self.p.poll() is None, "server on %s did not start: %s" % (path, self.stderr()))

    def stderr(self):
        self.err.flush()
        with open(self.err.name) as f:
            return f.read()

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(timeout=60)
        out = self.p.stdout.read()
        check(out == b"", "the listening server wrote its stdout: %r" % out[:200])
        return rc


def run_pack(path, outs, cancel_at=None):
    """Trials i (0..3) on their own connections at once; returns per trial (lines, logs, exit,
    arrival time of its first epoch line, arrival time of its done line)."""
    conns = [Conn(path, timeout=300) for _ in TRIALS]
    res = [None] * len(TRIALS)

    def one(i):
        first = []

        def on_line(d):
            if "epoch" in d and not first:
                first.append(time.monotonic())
                if cancel_at == i:
                    conns[i].cancel()
        out, logs, ex = conns[i].lines(on_line)
        res[i] = (out, logs, ex, first[0] if first else None, time.monotonic())
    for i, c in enumerate(conns):
        c.send_run(trial_args(i, outs[i]))
    ths = [threading.Thread(target=one, args=(i,)) for i in range(len(TRIALS))]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    for c in conns:
        c.close()
    return res


def main():
    if not os.path.exists(os.path.join(FASHION, "train-images-idx3-ubyte.gz")):
        print("skip: no Fashion-MNIST at", FASHION)
        return 77
    if DEVICE == "cuda":
        p = subprocess.run([TRAIN, "--list-devices"], capture_output=True, text=True)
        if p.returncode != 0 or not json.loads(p.stdout or "{}").get("gpus"):
            print("skip: no GPU")
            return 77
    sock = os.path.join(TMP, "s.sock")

    # solo runs
    solo = [os.path.join(TMP, "solo%d" % i) for i in range(len(TRIALS))]
    for i, d in enumerate(solo):
        p = subprocess.run([TRAIN] + trial_args(i, d), capture_output=True, text=True, env=ENV)
        check(p.returncode == 0, "solo %d: exit %d: %s" % (i, p.returncode, p.stderr[-400:]))

    # 1. the pack
    s = Server(sock)
    st = os.stat(sock)
    check(stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600,
          "socket mode %o, want 0600" % stat.S_IMODE(st.st_mode))
    packed = [os.path.join(TMP, "pack%d" % i) for i in range(len(TRIALS))]
    res = run_pack(sock, packed)
    for i, (out, logs, ex, first, done) in enumerate(res):
        check(ex is not None and ex["code"] == 0, "pack trial %d: exit %s, logs %s" % (i, ex, logs))
        check(out and out[-1].get("event") == "done", "pack trial %d: no done line: %s" % (i, out))
        check(any("cnn on" in l for l in logs), "pack trial %d: its log lines missing: %s" %
              (i, logs))
        same_files(solo[i], packed[i], "pack trial %d" % i)
    firsts = [r[3] for r in res if r[3] is not None]
    dones = [r[4] for r in res]
    check(len(firsts) == len(TRIALS) and max(firsts) < min(dones),
          "the trials did not train at the same time: first epochs %s, done %s" % (firsts, dones))
    e = "\n".join(l for r in res for l in r[1])
    check(e.count("dataset cache miss") == 1 and e.count("dataset cache hit") == 3,
          "want one copy of the data (1 miss, 3 hits): %d misses, %d hits" %
          (e.count("dataset cache miss"), e.count("dataset cache hit")))
    check("dataset cache miss (" not in s.stderr(), "a job's log lines went to the server's stderr")

    # 2. cancel one trial mid-pack
    cancelled = [os.path.join(TMP, "cancel%d" % i) for i in range(len(TRIALS))]
    res = run_pack(sock, cancelled, cancel_at=1)
    for i, (out, logs, ex, _, _) in enumerate(res):
        if i == 1:
            check(ex is not None and ex["code"] == 143, "cancelled trial: exit %s" % ex)
            check(not any(d.get("event") == "done" for d in out), "cancelled trial finished")
            check(os.path.exists(os.path.join(cancelled[1], "checkpoint.bin")),
                  "cancelled trial: no checkpoint of its whole epochs")
            got = metrics(cancelled[1])
            check(got == metrics(solo[1])[:len(got)],
                  "cancelled trial: its epochs differ from solo: %s" % got)
            continue
        check(ex is not None and ex["code"] == 0, "trial %d beside a cancel: exit %s" % (i, ex))
        same_files(solo[i], cancelled[i], "trial %d beside a cancel" % i)
    # a client that goes away mid-job cancels it
    c = Conn(sock, timeout=300)
    c.send_run(trial_args(0, os.path.join(TMP, "gone"), **{"train.epochs": 200}))
    d = c.event()
    check(d == {"event": "accepted"}, "want accepted, got %s" % d)
    while d is not None and "epoch" not in d:
        d = c.event()
    c.close()
    for _ in range(600):
        if "job exit 143" in s.stderr():
            break
        time.sleep(0.05)
    check("job exit 143" in s.stderr(), "closing the connection did not cancel its job")

    # 4. control on the live server: a second server, bad requests
    p = subprocess.run([TRAIN, "--serve", "--listen", sock], capture_output=True, text=True,
                       env=ENV, timeout=30)
    check(p.returncode == 1 and "another server" in p.stderr,
          "a second server on a live path: exit %d: %s" % (p.returncode, p.stderr))
    check(os.path.exists(sock), "the refused second server removed the socket")
    c = Conn(sock, timeout=60)
    check(c.pid == s.p.pid, "hello pid %s, want %s" % (c.pid, s.p.pid))
    for bad in ['not json', '{"run": 3}', '{"run": [1]}', '{"run": ["--serve"]}',
                '{"run": [], "x": 1}', json.dumps({"run": ["--bogus", "x"]})]:
        c.send_line(bad)
        check(c.event() == {"event": "accepted"}, "bad request %s: not accepted" % bad)
        out, logs, ex = c.lines()
        check(ex is not None and ex["code"] == 2 and not out and logs,
              "bad request %s: exit %s, lines %s, logs %s" % (bad, ex, out, logs))
    c.close()
    # SIGTERM mid-job: the job ends with 143, the socket goes, the server exits 0
    c = Conn(sock, timeout=300)
    c.send_run(trial_args(0, os.path.join(TMP, "term"), **{"train.epochs": 200}))
    d = c.event()
    while d is not None and "epoch" not in d:
        d = c.event()
    s.p.send_signal(signal.SIGTERM)
    out, logs, ex = c.lines()
    check(ex is not None and ex["code"] == 143, "SIGTERM mid-job: exit %s" % ex)
    rc = s.stop()
    check(rc == 0 and not os.path.exists(sock), "SIGTERM: server exit %s, socket left: %s" %
          (rc, os.path.exists(sock)))

    # 3. kill -9 mid-trial, then resume on a new server at the same (stale) path
    s = Server(sock)
    kd = os.path.join(TMP, "killed")
    c = Conn(sock, timeout=300)
    c.send_run(trial_args(2, kd) + ["--resume", "auto"])
    d = c.event()
    while d is not None and "epoch" not in d:
        d = c.event()
    s.p.kill()
    s.p.wait(timeout=30)
    c.close()
    check(os.path.exists(sock), "kill -9 should leave the socket file behind")
    s = Server(sock)
    check(s.p.poll() is None, "a stale socket file was not replaced")
    c = Conn(sock, timeout=300)
    out, logs, ex = c.job(trial_args(2, kd) + ["--resume", "auto"])
    c.close()
    check(ex is not None and ex["code"] == 0, "resumed trial: exit %s, logs %s" % (ex, logs))
    # the lines of the epochs it trained again and its done line are the solo run's last ones
    # (metrics.jsonl may lack the line of the epoch the kill came after: the socket gets it first)
    want = metrics(solo[2])
    check(out and [strip(d) for d in out] == want[len(want) - len(out):],
          "resumed trial: lines %s, solo %s" % (out, want))
    same_files(solo[2], kd, "resumed trial", files=["model.bin", "model.json"],
               with_metrics=False)
    check(s.stop() == 0, "server exit after resume")

    # the socket file appears only once the server listens: under SLOW_LISTEN (listen() waits
    # 300 ms) a client that connects as soon as it sees the file is not refused, and the
    # temporary name the socket was bound under does not stay
    if SLOW_LISTEN:
        asan = os.environ.get("ASAN_OPTIONS", "")
        env = dict(ENV, LD_PRELOAD=SLOW_LISTEN,
                   ASAN_OPTIONS=(asan + ":" if asan else "") + "verify_asan_link_order=0")
        p = subprocess.Popen([TRAIN, "--serve", "--listen", sock], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        t0 = time.monotonic()
        while not os.path.exists(sock) and p.poll() is None and time.monotonic() - t0 < 60:
            time.sleep(0.001)
        seen = time.monotonic() - t0
        try:
            c = Conn(sock, timeout=30)
            check(c.pid == p.pid, "slow listen: hello pid %s, want %s" % (c.pid, p.pid))
            c.close()
        except OSError as e:
            check(False, "slow listen: connecting as the socket file appeared: %s" % e)
        tmp = "%s.%d" % (sock, p.pid)
        check(not os.path.exists(tmp), "slow listen: the temporary socket %s stayed" % tmp)
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=60)
        err = p.stderr.read().decode(errors="replace")
        check(rc == 0 and not os.path.exists(sock), "slow listen: exit %s, stderr %s" %
              (rc, err[-800:]))
        # the shim took effect (the file came after its 300 ms): else this part proved nothing
        check(seen >= 0.3 and "cannot be preloaded" not in err,
              "slow listen: the socket file came after %.3f s, before the delayed listen() (or "
              "the shim was not loaded): %s"
              % (seen, err[-800:]))

    # --idle-exit: an idle server goes and takes its socket with it
    s = Server(sock, "--idle-exit", "1")
    t0 = time.monotonic()
    rc = s.p.wait(timeout=30)
    check(rc == 0 and not os.path.exists(sock) and time.monotonic() - t0 < 10,
          "--idle-exit 1: exit %s after %.1f s, socket left: %s" %
          (rc, time.monotonic() - t0, os.path.exists(sock)))

    print("train_listen:", "FAILED" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="hone-listen-") as TMP:
        sys.exit(main())
