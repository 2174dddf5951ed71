"""`hone local` starts workers per GPU (issue 9): with --device cuda --pack 1 and a hone-train that
lists two GPUs (a fake one, through --trainer), two workers run, pinned by --gpu 0 and 1: each
one's trainer sees its GPU alone (CUDA_VISIBLE_DEVICES) and registers it under the host's index.
By default (--pack 4) four workers per GPU run, those of GPU i sharing the trainer server at
DATA_DIR/trainer-gpu<i>.sock; --pack 1 gives none a socket. --workers N wins and spreads N workers
over the GPUs; --device cpu asks for no GPU and packs nothing.
Usage: test_local_gpus.py path/to/hone (hone-controller and hone-worker found beside it)."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

FAKE = """#!/bin/sh
[ "$1" = --list-devices ] || exit 3
if [ -n "$CUDA_VISIBLE_DEVICES" ]; then
  echo '{"gpus":[{"index":0,"name":"Fake GPU '"$CUDA_VISIBLE_DEVICES"'","memory_bytes":1000}]}'
else
  echo '{"gpus":[{"index":0,"name":"Fake GPU 0","memory_bytes":1000},{"index":1,"name":"Fake GPU 1","memory_bytes":1000}]}'
fi
"""


def run_local(hone, tmp, extra):
    """Starts hone local, waits until its workers registered, returns {name: worker row}."""
    data = tempfile.mkdtemp(dir=tmp)
    env = dict(os.environ)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.pop("HONE_GPU", None)
    p = subprocess.Popen([hone, "local", "--port", "0", "--data-dir", data, "--json"] + extra,
                         stdout=subprocess.PIPE, env=env, text=True)
    try:
        info = json.loads(p.stdout.readline())
        deadline = time.time() + 60
        while True:
            with urllib.request.urlopen(info["url"] + "/api/v1/workers", timeout=10) as r:
                workers = json.loads(r.read())["workers"]
            if len(workers) == info["workers"]:
                break
            assert time.time() < deadline, ("workers did not register", info, workers)
            time.sleep(0.2)
        return info, {w["name"]: w for w in workers}, data
    finally:
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=60) == 0, "hone local did not stop cleanly"


def socket_of(data, name):
    """The --trainer-socket worker `name` runs with, as its log says (None: none)."""
    i = int(name.split("-")[1])
    text = open(os.path.join(data, "logs", "worker-%d.log" % i)).read()
    for line in text.splitlines():
        if "train jobs run on the shared trainer server at " in line:
            return line.split(" at ", 1)[1].strip()
    return None


def gpus_of(w):
    return [(g["index"], g["name"]) for g in w["resources"]["gpus"]]


def main():
    hone = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="hone-local-gpus-")
    fake = os.path.join(tmp, "hone-train")
    with open(fake, "w") as f:
        f.write(FAKE)
    os.chmod(fake, 0o755)

    info, ws, data = run_local(hone, tmp, ["--device", "cuda", "--trainer", fake, "--pack", "1"])
    assert info["workers"] == 2 and info["gpus"] == 2 and info["pack"] == 1, info
    assert sorted(ws) == ["local-1", "local-2"], ws
    assert gpus_of(ws["local-1"]) == [(0, "Fake GPU 0")], ws["local-1"]
    assert gpus_of(ws["local-2"]) == [(1, "Fake GPU 1")], ws["local-2"]
    assert all(w["resources"]["device"] == "cuda" for w in ws.values()), ws
    assert [socket_of(data, n) for n in sorted(ws)] == [None, None]
    print("ok: --device cuda --pack 1 starts one worker per GPU, each pinned to its own")

    info, ws, data = run_local(hone, tmp, ["--device", "cuda", "--trainer", fake])
    assert info["workers"] == 8 and info["gpus"] == 2 and info["pack"] == 4, info
    names = ["local-%d" % i for i in range(1, 9)]
    assert sorted(ws) == sorted(names), ws
    real = os.path.realpath(data)
    for i, n in enumerate(names):
        assert gpus_of(ws[n]) == [(i % 2, "Fake GPU %d" % (i % 2))], ws[n]
        want = os.path.join(real, "trainer-gpu%d.sock" % (i % 2))
        assert socket_of(data, n) == want, (n, socket_of(data, n), want)
    print("ok: by default four workers per GPU, those of a GPU sharing its trainer socket")

    info, ws, data = run_local(hone, tmp, ["--device", "auto", "--trainer", fake, "--workers", "3"])
    assert info["workers"] == 3 and info["gpus"] == 2, info
    assert [gpus_of(ws["local-%d" % i])[0][0] for i in (1, 2, 3)] == [0, 1, 0], ws
    print("ok: --workers 3 wins and shares the two GPUs round-robin")

    info, ws, data = run_local(hone, tmp, ["--device", "cpu", "--trainer", fake])
    assert info["workers"] == 1 and info["gpus"] == 0 and info["pack"] == 1, info
    assert gpus_of(ws["local-1"]) == [], ws
    assert socket_of(data, "local-1") is None
    print("ok: --device cpu runs one worker, no GPU and no shared trainer")


if __name__ == "__main__":
    main()
