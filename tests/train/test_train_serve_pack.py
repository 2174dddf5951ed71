#!/usr/bin/python3
"""hone-train --serve --listen SOCKET --pack-window-ms MS (packed jobs: requests of one pack key
that arrive within the window train as one fused step) against plain hone-train runs of the same
arguments (CPU, a small Fashion-MNIST subset):
1. Four CNN trials on four connections at once, three with SGD (their own lr, seed, dropout) and
   one with AdamW (another pack key): the server packs the three ("3 jobs packed in one fused
   step") and runs the fourth alone; every connection gets exactly its own stdout lines (but their
   timings) and exit code 0, and every trial's files (metrics.jsonl but its timings, model.bin,
   checkpoint.bin, model.json, spec.yaml) equal its solo run's byte for byte.
2. {"cancel":true} on one packed connection after its first epoch: that job ends with code 143
   at once (before the rest of its pack; its whole epochs kept, as the solo run's), the two others
   still equal their solo runs.
It exits 77 (skipped) without Fashion-MNIST.
Usage: test_train_serve_pack.py HONE_TRAIN
"""
import json
import os
import shutil
import signal
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
FASHION = os.environ.get("HONE_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1")
SMALL = {"network": "cnn", "data.path": FASHION, "data.train_limit": 512, "data.val_size": 128,
         "data.test_limit": 128, "train.epochs": 3, "train.batch_size": 64, "model.hidden": 32}
TRIALS = [{"train.lr": 0.02, "train.seed": 1, "model.dropout": 0.1},
          {"train.lr": 0.05, "train.seed": 2, "model.dropout": 0.3},
          {"train.lr": 0.03, "train.seed": 3, "model.dropout": 0.2, "augment.flip": "true"},
          {"train.lr": 0.01, "train.seed": 4, "model.dropout": 0.2, "train.optimizer": "adamw"}]


def trial_args(i, out):
    return ["--device", "cpu", "--threads", "1"] + sets(dict(SMALL, **TRIALS[i])) + ["--out", out]


def run_at_once(sock, idx, outs, cancel_at=None):
    """Trials idx on their own connections, sent together; per trial (lines, logs, exit, the time
    its exit line came)."""
    conns = {i: Conn(sock, timeout=300) for i in idx}
    res = {}

    def one(i):
        seen = []

        def on_line(d):
            if "epoch" in d and not seen:
                seen.append(1)
                if cancel_at == i:
                    conns[i].cancel()
        res[i] = conns[i].lines(on_line) + (time.monotonic(),)
    for i in idx:
        conns[i].send_run(trial_args(i, outs[i]))
    ths = [threading.Thread(target=one, args=(i,)) for i in idx]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    for c in conns.values():
        c.close()
    return res


def main():
    if not os.path.exists(os.path.join(FASHION, "train-images-idx3-ubyte.gz")):
        print("skip: no Fashion-MNIST at", FASHION)
        return 77
    solo, solo_lines = [], []
    for i in range(len(TRIALS)):
        d = os.path.join(TMP, "solo%d" % i)
        p = subprocess.run([TRAIN] + trial_args(i, d), capture_output=True, text=True, env=ENV)
        check(p.returncode == 0, "solo %d: exit %d: %s" % (i, p.returncode, p.stderr[-400:]))
        solo.append(d)
        solo_lines.append([strip(json.loads(l)) for l in p.stdout.splitlines()])
    sock = os.path.join(TMP, "s.sock")
    err = open(os.path.join(TMP, "server.err"), "w+")
    srv = subprocess.Popen([TRAIN, "--serve", "--listen", sock, "--pack-window-ms", "1500"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=ENV)
    for _ in range(300):
        if os.path.exists(sock):
            break
        time.sleep(0.05)

    def server_err():
        err.flush()
        with open(err.name) as f:
            return f.read()

    # 1. three packed, one alone
    outs = [os.path.join(TMP, "pack%d" % i) for i in range(len(TRIALS))]
    res = run_at_once(sock, range(len(TRIALS)), outs)
    for i in range(len(TRIALS)):
        out, logs, ex, _ = res[i]
        check(ex is not None and ex["code"] == 0, "trial %d: exit %s, logs %s" % (i, ex, logs))
        check([strip(d) for d in out] == solo_lines[i],
              "trial %d: its lines differ from solo:\n%s\n%s" % (i, out, solo_lines[i]))
        same_files(outs[i], solo[i], "packed trial %d" % i)
    check(server_err().count("3 jobs packed in one fused step") == 1,
          "the three SGD trials were not packed together: %s" % server_err()[-2000:])

    # 2. a cancel inside a pack
    outs = [os.path.join(TMP, "cancel%d" % i) for i in range(3)]
    res = run_at_once(sock, range(3), outs, cancel_at=1)
    check(res[1][3] < min(res[0][3], res[2][3]),
          "the cancelled trial's exit waited for the rest of its pack")
    for i in range(3):
        out, logs, ex, _ = res[i]
        if i == 1:
            check(ex is not None and ex["code"] == 143, "cancelled trial: exit %s" % ex)
            got = metrics(outs[1])
            check(got and got == metrics(solo[1])[:len(got)],
                  "cancelled trial: its epochs differ from solo: %s" % got)
            continue
        check(ex is not None and ex["code"] == 0, "trial %d beside a cancel: exit %s" % (i, ex))
        same_files(outs[i], solo[i], "trial %d beside a cancel" % i)
    check(server_err().count("3 jobs packed in one fused step") == 2,
          "the second pack was not packed: %s" % server_err()[-2000:])
    srv.send_signal(signal.SIGTERM)
    check(srv.wait(timeout=60) == 0, "server exit")
    return 1 if failures else 0


if __name__ == "__main__":
    TMP = tempfile.mkdtemp(prefix="hone-pack-")
    try:
        code = main()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    print("test_train_serve_pack:", "ok" if code == 0 else "skipped" if code == 77 else "FAILED")
    sys.exit(code)
