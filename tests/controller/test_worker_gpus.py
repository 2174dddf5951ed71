"""Heartbeat GPU telemetry (issue 9): a heartbeat's `gpus` [{index, util, mem_used, mem_total}] is
checked (at most 16, each field in its range, 422 naming it, nothing stored), kept per worker (the
latest replaces the last; a heartbeat without it means none) and shown by GET /workers."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402
from test_automl import drive  # noqa: E402


def gpus_of(c, wid):
    for w in c.ok("GET", "/api/v1/workers")["workers"]:
        if w["id"] == wid:
            return w["gpus"], w["gpus_at"]
    raise AssertionError("worker %s not listed" % wid)


def main():
    c = Controller(binary_from_argv(), tempdir())
    c.start()
    w = FakeWorker(c, name="gpu-host")
    w.register()
    hb = "/api/v1/workers/%s/heartbeat" % w.id
    assert gpus_of(c, w.id) == (None, None)  # registered, no heartbeat yet

    two = [{"index": 0, "util": 87, "mem_used": 30 << 30, "mem_total": 80 << 30},
           {"index": 1, "util": 12.5, "mem_used": 0, "mem_total": 141 << 30}]
    c.ok("POST", hb, {"jobs": [], "gpus": two}, headers=w.headers)
    got, at = gpus_of(c, w.id)
    assert got == two and at is not None, got

    # Refused, naming the field; the stored telemetry is left as it was.
    bad = [
        ({"gpus": [dict(two[0], util=101)]}, "gpus[0].util"),
        ({"gpus": [two[0], dict(two[1], util=-1)]}, "gpus[1].util"),
        ({"gpus": [dict(two[0], mem_used=81 << 30)]}, "gpus[0].mem_used"),
        ({"gpus": [dict(two[0], index=64)]}, "gpus[0].index"),
        ({"gpus": [dict(two[0], index="0")]}, "gpus[0].index"),
        ({"gpus": [{"index": 0, "util": 5, "mem_used": 1}]}, "gpus[0].mem_total"),
        ({"gpus": [dict(two[0], temp=40)]}, "gpus[0].temp"),
        ({"gpus": ["gpu0"]}, "gpus[0]"),
        ({"gpus": {"index": 0}}, "gpus"),
        ({"gpus": [two[0]] * 17}, "gpus"),
    ]
    for body, field in bad:
        st, js = c.req("POST", hb, body, headers=w.headers)
        assert st == 422 and js["error"]["field"] == field, (body, st, js)
        assert gpus_of(c, w.id)[0] == two, ("a refused heartbeat changed the telemetry", body)

    # The latest replaces the last; a heartbeat without gpus (no NVML) shows null.
    c.ok("POST", hb, {"jobs": [], "gpus": [two[1]]}, headers=w.headers)
    assert gpus_of(c, w.id)[0] == [two[1]]
    c.ok("POST", hb, {"jobs": []}, headers=w.headers)
    assert gpus_of(c, w.id)[0] is None
    c.ok("POST", hb, {"jobs": [], "gpus": []}, headers=w.headers)
    assert gpus_of(c, w.id)[0] == []

    # An AutoML job's gpu_util_mean: every heartbeat with telemetry while its search is live,
    # an idle GPU (0 %) counting too; null before the first.
    d = os.path.join(c.data_dir, "idx")
    write_idx(d)
    ds = c.ok("POST", "/api/v1/datasets", {"name": "d", "type": "image_classification",
                                           "format": "idx", "path": d})
    exp = c.ok("POST", "/api/v1/experiments", {
        "name": "g", "network_arch": "mlp", "train_datasets": [ds["id"]],
        "specs": {"train": {"epochs": 3}},
        "automl_settings": {"automl_enabled": True, "automl_algorithm": "random",
                            "automl_max_recommendations": 2}})
    aj = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})
    automl = c.ok("GET", "/api/v1/jobs/" + aj["id"])["automl"]
    assert automl["gpu_util_mean"] is None, automl
    for sample in (two, [dict(two[0], util=0)], [two[1]]):  # means 49.75, 0, 12.5
        c.ok("POST", hb, {"jobs": [], "gpus": sample}, headers=w.headers)
    c.ok("POST", hb, {"jobs": []}, headers=w.headers)  # no telemetry: not a sample
    automl = c.ok("GET", "/api/v1/jobs/" + aj["id"])["automl"]
    want = (49.75 + 0 + 12.5) / 3
    assert abs(automl["gpu_util_mean"] - want) < 1e-9, (automl["gpu_util_mean"], want)
    # kept once the search has ended (the job's result holds it)
    _, fin = drive(c, [w], aj["id"])
    assert fin["status"] == "done", fin
    assert abs(fin["automl"]["gpu_util_mean"] - want) < 1e-9, fin["automl"]
    c.stop()
    print("ok: heartbeat GPU telemetry checked, kept and listed; gpu_util_mean of an AutoML job")


if __name__ == "__main__":
    main()
