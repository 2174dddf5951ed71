"""tests/lib/hone_train.py: running hone-train from Python tests. One failure list per test
process (check appends and prints), run (hone-train ARGS on a device: its JSON stdout lines and
its stderr, a failure when the exit status is not the one wanted) and sets (--set arguments from a
dict)."""
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
