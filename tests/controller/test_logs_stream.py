"""Job logs as Server-Sent Events (GET /api/v1/jobs/{id}/logs/stream) against a real
hone-controller: a fake worker sends log lines with its epoch reports; they are stored with the
report (a replayed report stores nothing twice), stream as "log" events resumable with
Last-Event-ID, an AutoML job's stream carries its trials' lines, "end" closes the stream, GET
/logs returns them, and report_check bounds the log array (422 on field "log"). Each fresh report
also logs the epoch as a person reads it, after its lines: "<ISO 8601 time> epoch E/N: metrics"
(issue 28)."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402
from test_automl import setup  # noqa: E402
from test_stream import Stream  # noqa: E402

M = {"val_accuracy": 0.5, "val_loss": 0.5, "seconds": 0.01}
EPOCH = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ epoch (\d+)/4: val_accuracy 0\.5, "
                   r"val_loss 0\.5, 0\.01 s$")


def plain(line):
    """A line, or "<epoch N>" for an epoch's own line."""
    m = EPOCH.match(line)
    return "<epoch %s>" % m.group(1) if m else line


def lines(evs):
    return [plain(e[2]["line"]) for e in evs]


def report(w, job, epoch, log, status=200):
    st, js = w.req("POST", "/api/v1/jobs/%s/report" % job["id"],
                   {"worker_id": w.id, "epoch": epoch, "metrics": M, "log": log})
    assert st == status, (st, js)
    return js


def main():
    binary = binary_from_argv()
    d = tempdir()
    root = os.path.join(d, "ds")
    write_idx(root)
    c = Controller(binary, d).start()
    try:
        w = FakeWorker(c, "w")
        w.register()
        exp = setup(c, root, {"automl_enabled": False}, specs={"train": {"epochs": 4}})
        job = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})
        j = w.lease(wait=0)
        assert j["id"] == job["id"], j
        # Bounds: too many lines, too many bytes, a newline inside a line, a non-string.
        js = report(w, j, 1, ["x"] * 51, 422)
        assert js["error"]["field"] == "log", js
        report(w, j, 1, ["y" * 4000] * 3, 422)
        report(w, j, 1, ["a\nb"], 422)
        report(w, j, 1, [3], 422)
        report(w, j, 1, ["epoch 1 starts", "loading data"])
        # A replayed report (same epoch, even with other lines) stores nothing.
        r = report(w, j, 1, ["epoch 1 starts", "loading data", "again"])
        assert r["duplicate"], r

        s1 = Stream(c, job["id"], kind="logs")
        assert s1.status == 200, s1.status
        evs = s1.take(3)
        assert [e[1] for e in evs] == ["log"] * 3, evs
        assert lines(evs) == ["epoch 1 starts", "loading data", "<epoch 1>"], evs
        assert evs[0][2]["job_id"] == job["id"] and evs[0][2]["trial"] is None, evs
        first = int(evs[0][0])

        report(w, j, 2, ["epoch 2 line"])  # live
        e = s1.take(2)
        assert lines(e) == ["epoch 2 line", "<epoch 2>"] and int(e[0][0]) > int(evs[2][0]), e

        s2 = Stream(c, job["id"], last_id=first, kind="logs")  # resume after the first line
        assert lines(s2.take(4)) == ["loading data", "<epoch 1>", "epoch 2 line", "<epoch 2>"]

        report(w, j, 3, [])
        report(w, j, 4, ["last epoch"])
        w.complete(j, "done", {"test_accuracy": 0.8})
        for s in (s1, s2):
            evs = s.take(4)
            assert lines(evs[:3]) == ["<epoch 3>", "last epoch", "<epoch 4>"], evs
            assert evs[3][1] == "end" and evs[3][2]["status"] == "done", evs
            assert s.next() is None
            s.close()

        st, text = c.req("GET", "/api/v1/jobs/%s/logs" % job["id"])
        want = ["epoch 1 starts", "loading data", "<epoch 1>", "epoch 2 line", "<epoch 2>",
                "<epoch 3>", "last epoch", "<epoch 4>", "fake log"]
        assert st == 200 and text.endswith(b"\n"), (st, text)
        assert [plain(x) for x in text.decode().split("\n")[:-1]] == want, text

        # A finished job's stream: every line, then end, at once.
        s3 = Stream(c, job["id"], kind="logs")
        assert [x[1] for x in s3.take(9)] == ["log"] * 8 + ["end"]
        s3.close()

        # An AutoML job's stream carries its trials' lines, each with its trial number.
        exp2 = setup(c, root, {"automl_enabled": True, "automl_algorithm": "bayesian",
                            "automl_max_recommendations": 1},
                     specs={"train": {"epochs": 2}})
        aj = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp2["id"], {"action": "automl"})
        t = w.lease(wait=5)
        assert t and t.get("parent_id") == aj["id"], t
        report(w, t, 1, ["trial says hi"])
        sa = Stream(c, aj["id"], kind="logs")
        # the search's own log first (issue 28: its start, the trial's launch), then the trial's
        own = sa.take(2)
        assert [x[2]["trial"] for x in own] == [None, None], own
        assert "search started: bayesian" in own[0][2]["line"], own
        assert "trial %d launched" % t["trial"] in own[1][2]["line"], own
        (e,) = sa.take(1)
        assert e[2]["line"] == "trial says hi" and e[2]["trial"] == t["trial"], e
        assert e[2]["job_id"] == t["id"], e
        sa.close()
        st, text = c.req("GET", "/api/v1/jobs/%s/logs" % aj["id"])
        assert st == 200 and b"[trial %d] trial says hi\n" % t["trial"] in text, text
        st, _ = c.req("GET", "/api/v1/jobs/nope/logs/stream")
        assert st == 404, st
    finally:
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
