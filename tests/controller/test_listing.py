"""Lists and metrics out, against a real hone-controller: datasets, experiments, jobs and a job's
metrics page with ?limit=&offset= (next_offset names the next page, null on the last; pages joined
are the whole list, in order, once each; bad values are 422 naming the parameter); metrics come as
CSV with ?format=csv or Accept: text/csv (the same numbers as the JSON); an AutoML job's status
carries TAO's fields (best_<metric>, "Current experiment number", "Number of epochs yet to start",
"Time per epoch in seconds", "Estimated time for automl completion") beside Hone's own."""
import csv
import io
import os
import re
import time
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402
from test_automl import drive  # noqa: E402


def pages(c, path, key, limit):
    """Every page of a list route; checks the paging fields on each."""
    out, offset, n = [], 0, 0
    sep = "&" if "?" in path else "?"
    while True:
        js = c.ok("GET", "%s%slimit=%d&offset=%d" % (path, sep, limit, offset))
        assert js["limit"] == limit and js["offset"] == offset, js
        assert len(js[key]) <= limit, js
        out += js[key]
        n += 1
        if js["next_offset"] is None:
            return out, n
        assert js["next_offset"] == offset + limit and len(js[key]) == limit, js
        offset = js["next_offset"]


def check_paging(c, path, key, total):
    whole = c.ok("GET", path)[key]
    assert len(whole) == total, (path, len(whole))
    for limit in (1, 2, total, total + 5):
        got, n = pages(c, path, key, limit)
        assert [x.get("id", x.get("epoch")) for x in got] == \
            [x.get("id", x.get("epoch")) for x in whole], (path, limit)
        assert n == max(1, -(-total // limit)), (path, limit, n)  # no empty last page
    sep = "&" if "?" in path else "?"
    js = c.ok("GET", "%s%soffset=%d" % (path, sep, total + 3))
    assert js[key] == [] and js["next_offset"] is None, js
    for q, field in (("limit=0", "limit"), ("limit=10001", "limit"), ("limit=abc", "limit"),
                     ("limit=2x", "limit"), ("offset=-1", "offset"), ("offset=", "offset")):
        st, js = c.req("GET", path + sep + q)
        assert st == 422 and js["error"]["field"] == field, (path, q, st, js)


def check_csv(c, path, want_rows, trial):
    st, body = c.req("GET", path + "?format=csv")
    assert st == 200 and isinstance(body, bytes), (st, body)
    st2, body2 = c.req("GET", path, headers={"Accept": "text/csv"})
    assert st2 == 200 and body2 == body
    rows = list(csv.reader(io.StringIO(body.decode())))
    head = rows[0]
    assert head[:2] == (["trial", "epoch"] if trial else ["epoch", head[1]]), head
    names = head[2:] if trial else head[1:]
    assert names == sorted(names) and "val_accuracy" in names, head
    assert len(rows) - 1 == len(want_rows), (len(rows), len(want_rows))
    for line, want in zip(rows[1:], want_rows):
        rec = dict(zip(head, line))
        assert int(rec["epoch"]) == want["epoch"], (rec, want)
        if trial:
            assert int(rec["trial"]) == want["trial"], (rec, want)
        for k in names:
            if want.get(k) is None:
                assert rec[k] == "", (k, rec)
            else:
                assert float(rec[k]) == want[k], (k, rec[k], want[k])
    st, js = c.req("GET", path + "?format=xml")
    assert st == 422 and js["error"]["field"] == "format", (st, js)


def main():
    binary = binary_from_argv()
    d = tempdir()
    write_idx(os.path.join(d, "ds"))
    c = Controller(binary, d).start()
    try:
        for _ in range(3):
            ds = c.ok("POST", "/api/v1/datasets", {"name": "tiny", "path": os.path.join(d, "ds")})
        exps = [c.ok("POST", "/api/v1/experiments", {
            "name": "e%d" % i, "network_arch": "mlp", "train_datasets": [ds["id"]],
            "specs": {"train": {"epochs": 5}}}) for i in range(3)]
        jobs = [c.ok("POST", "/api/v1/experiments/%s/jobs" % exps[0]["id"], {"action": "train"})
                for _ in range(3)]
        check_paging(c, "/api/v1/datasets", "datasets", 3)
        check_paging(c, "/api/v1/experiments", "experiments", 3)
        check_paging(c, "/api/v1/jobs", "jobs", 3)
        check_paging(c, "/api/v1/jobs?experiment=" + exps[0]["id"], "jobs", 3)

        # a train job's metrics: 5 epochs
        w = FakeWorker(c)
        w.register()
        j = w.lease()
        assert j["id"] == jobs[0]["id"], j
        assert w.run_job(j) == "done"
        path = "/api/v1/jobs/%s/metrics" % j["id"]
        check_paging(c, path, "metrics", 5)
        whole = c.ok("GET", path)["metrics"]
        check_csv(c, path, whole, trial=False)
        st, body = c.req("GET", path + "?format=csv&limit=2&offset=2")
        assert st == 200 and [r[0] for r in csv.reader(io.StringIO(body.decode()))] == \
            ["epoch", "3", "4"], body

        # an AutoML job: TAO's status fields while it runs and at the end (the other train jobs
        # canceled, so the worker leases its trials)
        for jb in jobs[1:]:
            c.ok("POST", "/api/v1/jobs/%s/cancel" % jb["id"])
        exp = c.ok("POST", "/api/v1/experiments", {
            "name": "a", "network_arch": "mlp", "train_datasets": [ds["id"]],
            "specs": {"train": {"epochs": 3}},
            "automl_settings": {"automl_enabled": True, "automl_algorithm": "random",
                                "automl_max_recommendations": 4, "automl_max_parallel": 2}})
        t_create = time.time()
        aj = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})
        t_created = time.time()
        a = c.ok("GET", "/api/v1/jobs/" + aj["id"])["automl"]
        for k in ("best_val_accuracy", "Current experiment number", "Number of epochs yet to start",
                  "Time per epoch in seconds", "Estimated time for automl completion"):
            assert k in a, (k, a)
        assert a["best_val_accuracy"] is None and a["Time per epoch in seconds"] is None, a
        assert a["Estimated time for automl completion"] is None, a
        assert a["Number of epochs yet to start"] == a["epochs_remaining"] > 0, a
        assert a["epochs_per_second"] is None, a
        first = w.lease()
        time.sleep(0.6)  # wall time the trainer's own 2.5 s/epoch knows nothing of
        t_report = time.time()
        st, _ = w.report(first, 1, {"val_accuracy": 0.5, "seconds": 2.5})
        assert st == 200
        a = c.ok("GET", "/api/v1/jobs/" + aj["id"])["automl"]
        t_status = time.time()
        # the ETA is measured: one epoch stored since the job started, not 2.5 s / 2 workers
        rate = a["epochs_per_second"]
        assert 1 / (t_status - t_create) <= rate <= 1 / (t_report - t_created), (rate, a)
        assert abs(a["eta_seconds"] - a["epochs_remaining"] / rate) <= 1e-6 * a["eta_seconds"], a
        assert a["best_val_accuracy"] == a["best_metric"], a
        assert a["Time per epoch in seconds"] == 2.5, a
        assert a["Current experiment number"] == max(
            t["trial"] for t in c.ok("GET", "/api/v1/jobs?parent=" + aj["id"])["jobs"]), a
        eta = a["Estimated time for automl completion"]
        assert re.fullmatch(r"\d+:\d\d:\d\d", eta), eta
        h, m, s = (int(x) for x in eta.split(":"))
        assert abs(h * 3600 + m * 60 + s - a["eta_seconds"]) <= 1, (eta, a["eta_seconds"])
        assert w.run_job(dict(first, epoch=1)) in ("done", "stopped")
        _, fin = drive(c, [w], aj["id"])
        a = fin["automl"]
        assert fin["status"] == "done", fin
        assert a["best_val_accuracy"] == fin["result"]["best_metric"] == a["best_metric"], a
        assert a["Number of epochs yet to start"] == 0, a
        trials = c.ok("GET", "/api/v1/jobs?parent=" + aj["id"])["jobs"]
        assert a["Current experiment number"] == max(t["trial"] for t in trials), a

        # its metrics: trials paged, CSV with a trial column
        mpath = "/api/v1/jobs/%s/metrics" % aj["id"]
        allm = c.ok("GET", mpath)
        assert allm["next_offset"] is None and len(allm["trials"]) == len(trials), allm
        p1 = c.ok("GET", mpath + "?limit=1")
        assert len(p1["trials"]) == 1 and p1["next_offset"] == 1, p1
        rows = [dict(m, trial=int(t)) for t in sorted(allm["trials"], key=int)
                for m in allm["trials"][t]]
        check_csv(c, mpath, rows, trial=True)
        print("listing: paging, CSV and TAO status fields ok")
    finally:
        c.stop()


if __name__ == "__main__":
    main()
