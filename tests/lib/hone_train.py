"""tests/lib/hone_train.py: running hone-train from Python tests. One failure list per test
process (check appends and prints), run (hone-train ARGS on a device: its JSON stdout lines and
its stderr, a failure when the exit status is not the one wanted), sets (--set arguments from a
dict) and the comparison of two runs' outputs (strip, metrics, same_files)."""
import json
import os
import subprocess

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def run(train, device, args, want_ok=True):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    p = subprocess.run([train, "--device", device, "--threads", "2"] + args, capture_output=True,
                       text=True, env=env)
    if (p.returncode == 0) != want_ok:
        check(False, "hone-train %s: exit %d: %s" % (args, p.returncode, p.stderr.strip()))
    return [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")], p.stderr


def sets(d):
    out = []
    for k, v in d.items():
        out += ["--set", "%s=%s" % (k, v)]
    return out


FILES = ["model.bin", "checkpoint.bin", "model.json", "spec.yaml"]


def strip(d):
    """A JSON line (a dict) without its timings (they differ from run to run)."""
    d = dict(d)
    d.pop("seconds", None)
    d.pop("images_per_second", None)
    return d


def metrics(d):
    """An --out folder's metrics.jsonl lines, stripped."""
    with open(os.path.join(d, "metrics.jsonl")) as f:
        return [strip(json.loads(l)) for l in f]


def same_files(a, b, what, files=FILES, with_metrics=True):
    """Checks that two --out folders hold the same files byte for byte (metrics.jsonl but its
    timings)."""
    for f in files:
        pa, pb = os.path.join(a, f), os.path.join(b, f)
        check(os.path.exists(pa) and os.path.exists(pb) and
              open(pa, "rb").read() == open(pb, "rb").read(), "%s: %s differs" % (what, f))
    if not with_metrics:
        return
    if os.path.exists(os.path.join(b, "metrics.jsonl")):
        ma, mb = metrics(a), metrics(b)
        check(ma == mb, "%s: metrics.jsonl differs:\n%s\n%s" % (what, ma, mb))
    else:
        check(False, "%s: no metrics.jsonl" % what)
