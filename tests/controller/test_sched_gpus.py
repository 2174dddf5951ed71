"""Train jobs spread over GPUs (issue 9): workers register the GPU they train on by UUID
(`gpu_uuid`, with their `host`); when several parked lease requests could take a queued train job,
it goes to the one whose GPU runs the fewest leases, the first parked among equals. Four workers
as 2 GPUs x 2 long-poll: two jobs land on different GPUs, a third on the less loaded one. Workers
without a UUID are each their own group, and among CPU workers the order is first parked, first
served, as before. The register fields are checked (422 naming them) and listed by GET /workers;
a register without them still works. Real controller, real HTTP, no fakes inside it."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir, write_idx  # noqa: E402

GPU_A = "GPU-0a1b2c3d-0000-4000-8000-00000000000a"
GPU_B = "GPU-0a1b2c3d-0000-4000-8000-00000000000b"


class Worker:
    """One worker's side of register and lease, over HTTP."""

    def __init__(self, c, name, uuid=None, host="node1"):
        self.c = c
        self.name = name
        body = {"name": name, "resources": {"cpus": 1, "gpus": []}}
        if uuid is not None:
            body["gpu_uuid"] = uuid
            body["host"] = host
        js = c.ok("POST", "/api/v1/workers", body)
        self.id = js["id"]
        self.headers = {"Authorization": "Bearer " + js["token"]}
        self.job = None
        self.thread = None

    def park(self, wait=30):
        """Long-polls in a thread; returns once the controller holds the request parked."""
        before = waiting(self.c)

        def run():
            st, js = self.c.req("POST", "/api/v1/workers/%s/lease?wait=%d" % (self.id, wait),
                                headers=self.headers, timeout=wait + 30)
            self.job = js["job"] if st == 200 else None

        self.thread = threading.Thread(target=run)
        self.thread.start()
        until(lambda: waiting(self.c) == before + 1, "%s parked" % self.name)

    def got(self, timeout=20):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "%s still waiting" % self.name
        return self.job

    def complete(self):
        self.c.ok("POST", "/api/v1/jobs/%s/complete" % self.job["id"],
                  {"worker_id": self.id, "status": "done", "final": {}}, headers=self.headers)


def waiting(c):
    st, text = c.req("GET", "/metrics")
    assert st == 200, st
    for line in text.decode().splitlines():
        if line.startswith("hone_lease_requests_waiting "):
            return int(line.split()[1])
    raise AssertionError("no hone_lease_requests_waiting in /metrics")


def until(cond, what, timeout=20):
    end = time.time() + timeout
    while not cond():
        if time.time() > end:
            raise AssertionError("timed out: " + what)
        time.sleep(0.02)


def queue(c, exp):
    return c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})["id"]


def taker(workers, jid):
    """The worker that got job jid (waiting for it), or None."""
    until(lambda: any(w.job and w.job["id"] == jid for w in workers), "job %s leased" % jid)
    return next(w for w in workers if w.job and w.job["id"] == jid)


def register_checks(c):
    def reg(extra):
        body = {"name": "r", "resources": {"cpus": 1}}
        body.update(extra)
        return c.req("POST", "/api/v1/workers", body)

    n = len(c.ok("GET", "/api/v1/workers")["workers"])
    for extra, field in [
            ({"gpu_uuid": "0a1b2c3d"}, "gpu_uuid"),  # no GPU- prefix
            ({"gpu_uuid": "GPU-"}, "gpu_uuid"),
            ({"gpu_uuid": "GPU-0a1b 2c3d"}, "gpu_uuid"),
            ({"gpu_uuid": "GPU-xyz"}, "gpu_uuid"),
            ({"gpu_uuid": "GPU-" + "a" * 93}, "gpu_uuid"),  # 97 bytes
            ({"gpu_uuid": 7}, "gpu_uuid"),
            ({"host": ""}, "host"),
            ({"host": "a b"}, "host"),
            ({"host": "a\nb"}, "host"),
            ({"host": "h" * 256}, "host"),
            ({"host": ["h"]}, "host")]:
        st, js = reg(extra)
        assert st == 422 and js["error"]["field"] == field, (extra, st, js)
    assert len(c.ok("GET", "/api/v1/workers")["workers"]) == n, "a refused register stored one"
    # Stored and listed; hex digits lower case as nvidia-smi prints them (one GPU, one group).
    st, js = reg({"gpu_uuid": "MIG-0A1B-ff", "host": "gpu-node.example"})
    assert st == 201, (st, js)
    listed = {w["id"]: w for w in c.ok("GET", "/api/v1/workers")["workers"]}
    assert listed[js["id"]]["gpu_uuid"] == "MIG-0a1b-ff", listed[js["id"]]
    assert listed[js["id"]]["host"] == "gpu-node.example", listed[js["id"]]
    st, js = reg({"gpu_uuid": None, "host": None})  # null: as if absent (an older worker)
    assert st == 201, (st, js)
    w = {x["id"]: x for x in c.ok("GET", "/api/v1/workers")["workers"]}[js["id"]]
    assert w["gpu_uuid"] is None and w["host"] is None, w


def main():
    c = Controller(binary_from_argv(), tempdir())
    c.start()
    try:
        register_checks(c)
        d = os.path.join(c.data_dir, "idx")
        write_idx(d)
        ds = c.ok("POST", "/api/v1/datasets", {"name": "d", "format": "idx", "path": d})
        exp = c.ok("POST", "/api/v1/experiments", {"name": "e", "network_arch": "mlp",
                                                   "train_datasets": [ds["id"]]})

        # 2 GPUs x 2 workers, parked in the order a1, a2, b1, b2.
        a1, a2 = Worker(c, "a1", GPU_A), Worker(c, "a2", GPU_A)
        b1, b2 = Worker(c, "b1", GPU_B), Worker(c, "b2", GPU_B)
        gpu = [a1, a2, b1, b2]
        for w in gpu:
            w.park()
        j1 = queue(c, exp)
        assert taker(gpu, j1) is a1  # all idle: the first parked
        j2 = queue(c, exp)
        # GPU A runs one lease, B none: b1, although a2 was parked before it.
        assert taker(gpu, j2) is b1, [w.name for w in gpu if w.job]
        assert a2.job is None and b2.job is None
        listed = {w["id"]: w for w in c.ok("GET", "/api/v1/workers")["workers"]}
        assert listed[a1.id]["gpu_uuid"] == GPU_A and listed[b2.id]["gpu_uuid"] == GPU_B
        assert listed[a1.id]["host"] == "node1"

        # b1 finishes: B runs none, A one; the third goes to b2 though a2 was parked first.
        b1.got()
        b1.complete()
        j3 = queue(c, exp)
        assert taker(gpu, j3) is b2, [w.name for w in gpu if w.job]
        assert a2.job is None
        # With both GPUs at one lease, a2 (the only one left) takes the next.
        j4 = queue(c, exp)
        assert taker(gpu, j4) is a2
        for w in (a1, a2, b2):
            w.got()
            w.complete()
        assert waiting(c) == 0

        # A worker without a UUID is its own group: n1 runs a lease (it took j5), so with
        # n1 and a1 parked (n1 first) the next job goes to a1, whose GPU A runs none.
        n1 = Worker(c, "n1")
        n1.park()
        j5 = queue(c, exp)
        assert taker([n1], j5) is n1
        job5 = n1.job
        n1.job = None
        n1.got()
        n1.park()
        a1.job = None
        a1.park()
        j6 = queue(c, exp)
        assert taker([n1, a1], j6) is a1, (n1.job, a1.job)
        assert n1.job is None
        n1.job = job5
        n1.complete()
        j7 = queue(c, exp)
        assert taker([n1], j7) is n1
        n1.got()
        n1.complete()
        a1.got()
        a1.complete()

        # CPU workers only: first parked, first served, as before (no GPU, no spreading).
        cpu = [Worker(c, "c%d" % i) for i in range(3)]
        for w in cpu:
            w.park()
        for w in cpu:
            jid = queue(c, exp)
            assert taker(cpu, jid) is w, (w.name, [x.name for x in cpu if x.job])
        for w in cpu:
            w.got()
            w.complete()
        assert waiting(c) == 0
    finally:
        c.stop()
    print("ok: train jobs spread over GPUs by their workers' gpu_uuid; CPU workers first come, "
          "first served; register's gpu_uuid and host checked and listed")


if __name__ == "__main__":
    main()
