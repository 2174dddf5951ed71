"""GPU test (issue 9): a hone-worker pinned to GPU 0 on a machine with an NVIDIA driver sends NVML
telemetry in its heartbeats, and GET /workers shows it: one entry, index 0, util 0..100, memory
used and total non-null with 0 < mem_total and mem_used <= mem_total. Skips (77) without a GPU
(no /dev/nvidiactl or no libnvidia-ml.so.1).
Usage: test_worker_nvml_gpu.py path/to/hone-controller path/to/hone-worker"""
import ctypes
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "controller"))
from hone_test import Controller, tempdir  # noqa: E402


def main():
    ctl_bin, wrk_bin = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        print("skip: no libnvidia-ml.so.1 (no NVIDIA driver)")
        sys.exit(77)
    if not os.path.exists("/dev/nvidiactl"):
        print("skip: no /dev/nvidiactl")
        sys.exit(77)
    d = tempdir()
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("heartbeat_seconds: 1\nlog_format: text\n")
    c = Controller(ctl_bin, d, config=cfg).start()
    env = dict(os.environ)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    log = open(os.path.join(d, "worker.log"), "w")
    w = subprocess.Popen([wrk_bin, "--controller", c.base, "--name", "gpu0", "--gpu", "0",
                          "--work-dir", os.path.join(d, "w"), "--trainer", "/bin/false"],
                         env=env, stdout=log, stderr=log)
    try:
        deadline, gpus = time.time() + 60, None
        while gpus is None:
            assert time.time() < deadline, open(os.path.join(d, "worker.log")).read()
            time.sleep(0.5)
            rows = c.ok("GET", "/api/v1/workers")["workers"]
            gpus = rows[0]["gpus"] if rows else None
        assert len(gpus) == 1, gpus
        g = gpus[0]
        assert g["index"] == 0 and 0 <= g["util"] <= 100, g
        assert g["mem_total"] > 0 and 0 <= g["mem_used"] <= g["mem_total"], g
        print("ok: NVML telemetry from GPU 0:", g)
    finally:
        w.send_signal(signal.SIGTERM)
        w.wait(timeout=30)
        c.stop()


if __name__ == "__main__":
    main()
