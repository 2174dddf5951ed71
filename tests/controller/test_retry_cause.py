"""A failed train job is retried, unless it failed twice of the same cause: a cause that comes back
is the job's own (its spec, its data), and a third attempt would only fail again. Against a real
hone-controller (max_attempts 3) with a fake worker: the same cause twice fails the job after two
attempts, its log saying why it was not tried again; three different causes use all three."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402


def fail_until_done(c, w, job_id, tails):
    """Leases the job and fails it with each tail in turn while it comes back; the attempts made."""
    made = 0
    for tail in tails:
        j = w.lease(wait=0)
        if j is None:
            break
        assert j["id"] == job_id and j["attempts"] == made, j
        c.ok("POST", "/api/v1/jobs/%s/complete" % job_id,
             {"worker_id": w.id, "status": "failed", "log_tail": tail}, headers=w.headers)
        made += 1
    return made


def main():
    binary = binary_from_argv()
    d = tempdir()
    write_idx(os.path.join(d, "ds"))
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("max_attempts: 3\nlog_format: text\n")
    c = Controller(binary, d, config=cfg).start()
    try:
        w = FakeWorker(c, "w1")
        w.register()
        ds = c.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": os.path.join(d, "ds")})
        exp = c.ok("POST", "/api/v1/experiments",
                   {"name": "e", "network_arch": "mlp", "train_datasets": [ds["id"]]})

        # the same cause twice: failed after two attempts, not three
        same = "hone-train: data.path: no images\n"
        j = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})
        assert fail_until_done(c, w, j["id"], [same] * 3) == 2
        fin = c.ok("GET", "/api/v1/jobs/" + j["id"])
        assert fin["status"] == "failed" and fin["attempts"] == 2, fin
        assert fin["error"] == "data.path: no images", fin  # the cause, without the program's name
        log = c.ok("GET", "/api/v1/jobs/%s/logs" % j["id"]).decode()  # text/plain
        assert any("failed after 2 attempts" in l and "not tried again" in l
                   for l in log.splitlines()), log

        # a new cause each time (a machine's trouble): every attempt is used
        j = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})
        tails = ["hone-worker: disk full %d\n" % i for i in range(3)]
        assert fail_until_done(c, w, j["id"], tails) == 3
        fin = c.ok("GET", "/api/v1/jobs/" + j["id"])
        assert fin["status"] == "failed" and fin["attempts"] == 3, fin
        assert w.lease(wait=0) is None
    finally:
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
