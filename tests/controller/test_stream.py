"""Live metrics as Server-Sent Events (GET /api/v1/jobs/{id}/metrics/stream) against a real
hone-controller over real HTTP: epochs stored before the stream opens come first, later ones
arrive live, a client resuming with Last-Event-ID gets every later epoch exactly once, an AutoML
job's stream carries every trial's epochs, the stream ends with an "end" event when the job ends,
open streams are bounded by limits.streams (503 naming it), and a bad Last-Event-ID is a 400."""
import http.client
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402
from test_automl import drive, setup  # noqa: E402


class Stream:
    """An SSE client over http.client: events parsed as the spec says (id, event, data lines)."""

    def __init__(self, ctl, job_id, last_id=None, timeout=10, kind="metrics"):
        host, port = ctl.base.split("//")[1].split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
        h = {"Accept": "text/event-stream"}
        if last_id is not None:
            h["Last-Event-ID"] = str(last_id)
        self.conn.request("GET", "/api/v1/jobs/%s/%s/stream" % (job_id, kind), headers=h)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.last_id = last_id
        self.ended = False

    def body(self):
        return json.loads(self.resp.read())

    def next(self):
        """The next event as (id, event, data); None at the end of the stream."""
        ev = {"data": []}
        while True:
            line = self.resp.readline()
            if not line:
                self.ended = True
                return None
            line = line.decode().rstrip("\n")
            if line == "":
                if ev["data"] or "event" in ev:
                    if "id" in ev:
                        self.last_id = int(ev["id"])
                    return (ev.get("id"), ev.get("event", "message"),
                            json.loads("\n".join(ev["data"])))
                continue
            if line.startswith(":"):
                continue
            k, _, v = line.partition(":")
            v = v[1:] if v.startswith(" ") else v
            if k == "data":
                ev["data"].append(v)
            elif k in ("id", "event", "retry"):
                ev[k] = v

    def take(self, n):
        out = []
        for _ in range(n):
            e = self.next()
            assert e is not None, "stream ended after %s" % out
            out.append(e)
        return out

    def close(self):
        self.conn.close()


def report(w, job, epoch, acc):
    st, js = w.report(job, epoch, {"val_accuracy": acc, "val_loss": 1 - acc, "seconds": 0.01})
    assert st == 200, (st, js)


def train_stream(c, root):
    """One train job: catch-up, live epochs, resume, the bound, the end."""
    w = FakeWorker(c, "w")
    w.register()
    exp = setup(c, root, {"automl_enabled": False}, specs={"train": {"epochs": 6}})
    job = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})
    j = w.lease(wait=0)
    assert j["id"] == job["id"], j
    report(w, j, 1, 0.5)
    report(w, j, 2, 0.6)

    s1 = Stream(c, job["id"])
    assert s1.status == 200, s1.status
    assert s1.resp.getheader("Content-Type").startswith("text/event-stream")
    evs = s1.take(2)
    assert [e[1] for e in evs] == ["epoch", "epoch"], evs
    assert [e[2]["epoch"] for e in evs] == [1, 2], evs
    assert evs[0][2]["job_id"] == job["id"] and evs[0][2]["metrics"]["val_accuracy"] == 0.5, evs
    ids = [int(e[0]) for e in evs]
    assert ids[0] < ids[1], ids
    first_id = ids[0]

    report(w, j, 3, 0.7)  # live: arrives on the open stream
    t0 = time.time()
    (e3,) = s1.take(1)
    assert e3[2]["epoch"] == 3 and int(e3[0]) > ids[1], e3
    assert time.time() - t0 < 3, "a live epoch took %.1f s" % (time.time() - t0)

    # Resume after epoch 1: epochs 2 and 3, no repeat of 1.
    s2 = Stream(c, job["id"], last_id=first_id)
    assert s2.status == 200
    assert [e[2]["epoch"] for e in s2.take(2)] == [2, 3]

    # Two streams are open and limits.streams is 2: a third is refused, naming the limit.
    s3 = Stream(c, job["id"])
    assert s3.status == 503, s3.status
    err = s3.body()["error"]
    assert err["field"] == "limits.streams" and "limits.streams" in err["message"], err
    assert s3.resp.getheader("Retry-After"), s3.resp.getheaders()
    s3.close()

    # A client leaves mid-run, comes back with the id it last saw: no gap, no repeat.
    s1.close()
    report(w, j, 4, 0.75)
    report(w, j, 5, 0.8)
    deadline = time.time() + 5
    while True:  # the server notices the closed stream when it next writes (or on its tick)
        s1b = Stream(c, job["id"], last_id=s1.last_id)
        if s1b.status == 200:
            break
        s1b.close()
        assert time.time() < deadline, "closed stream still counted"
        time.sleep(0.2)
    assert [e[2]["epoch"] for e in s1b.take(2)] == [4, 5]
    assert [e[2]["epoch"] for e in s2.take(2)] == [4, 5]

    # The job ends: both streams get epoch 6, then "end" with the job, then the stream closes.
    report(w, j, 6, 0.85)
    w.complete(j, "done", {"test_accuracy": 0.8})
    for s in (s1b, s2):
        e6, end = s.take(2)
        assert e6[1] == "epoch" and e6[2]["epoch"] == 6, e6
        assert end[1] == "end" and end[0] is None, end
        assert end[2]["id"] == job["id"] and end[2]["status"] == "done", end
        assert s.next() is None and s.ended
        s.close()

    # A stream of an ended job: its epochs, then "end" at once; resuming past them: only "end".
    s4 = Stream(c, job["id"])
    evs = []
    while True:
        e = s4.next()
        if e is None:
            break
        evs.append(e)
    assert [e[2].get("epoch") for e in evs[:-1]] == [1, 2, 3, 4, 5, 6], evs
    assert evs[-1][1] == "end"
    s4.close()
    s5 = Stream(c, job["id"], last_id=int(evs[-2][0]))
    assert [e[1] for e in s5.take(1)] == ["end"] and s5.next() is None
    s5.close()

    # Bad input.
    for bad in ("abc", "-1", "1x", "99999999999999999999999"):
        s = Stream(c, job["id"], last_id=bad)
        assert s.status == 400, (bad, s.status)
        assert s.body()["error"]["field"] == "Last-Event-ID"
        s.close()
    s = Stream(c, "job-nope")
    assert s.status == 404 and s.body()["error"]["field"] == "id"
    s.close()
    return w


def automl_stream(c, root, w):
    """An AutoML job: one stream carries every trial's epochs (with the trial number); a client
    that drops and resumes several times sees exactly the stored epochs, once each."""
    exp = setup(c, root, {"automl_enabled": True, "automl_algorithm": "bayesian",
                          "automl_max_recommendations": 4, "automl_max_parallel": 2},
                specs={"train": {"epochs": 3}})
    job = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"})
    seen = []
    s = Stream(c, job["id"])
    assert s.status == 200
    drive(c, [w], job["id"])
    last = None
    while True:
        e = s.next()
        assert e is not None, "stream ended without an end event"
        if e[1] == "end":
            break
        seen.append(e)
        if len(seen) % 5 == 0:  # drop the connection and resume
            last = int(e[0])
            s.close()
            s = Stream(c, job["id"], last_id=last)
            assert s.status == 200, s.status
    assert e[2]["status"] == "done", e
    assert s.next() is None
    s.close()
    ids = [int(x[0]) for x in seen]
    assert ids == sorted(ids) and len(set(ids)) == len(ids), ids
    got = sorted((x[2]["trial"], x[2]["epoch"]) for x in seen)
    stored = c.ok("GET", "/api/v1/jobs/%s/metrics" % job["id"])["trials"]
    want = sorted((int(t), m["epoch"]) for t, ms in stored.items() for m in ms)
    assert got == want and len(want) >= 4, (got, want)
    trials = {t["id"]: t["trial"] for t in c.ok("GET", "/api/v1/jobs?parent=" + job["id"])["jobs"]}
    assert all(trials[x[2]["job_id"]] == x[2]["trial"] for x in seen)


def shutdown_ends_streams(c, root, w):
    """A controller stopping ends open streams (no "end": the job is not over) and exits cleanly."""
    exp = setup(c, root, {"automl_enabled": False}, specs={"train": {"epochs": 2}})
    job = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})
    s = Stream(c, job["id"])
    assert s.status == 200
    return s


def main():
    binary = binary_from_argv()
    d = tempdir()
    root = os.path.join(d, "ds")
    write_idx(root)
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("log_format: text\nlimits:\n  streams: 2\n")
    c = Controller(binary, d, config=cfg).start()
    s = None
    try:
        w = train_stream(c, root)
        automl_stream(c, root, w)
        s = shutdown_ends_streams(c, root, w)
    finally:
        c.stop()
    try:
        assert s.next() is None and s.ended
    except (socket.timeout, ConnectionError, http.client.IncompleteRead):
        pass  # the connection closed under the client: also an end
    print("ok")


if __name__ == "__main__":
    main()
