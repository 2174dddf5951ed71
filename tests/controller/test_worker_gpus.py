"""Heartbeat GPU telemetry (issue 9): a heartbeat's `gpus` [{index, util, mem_used, mem_total}] is
checked (at most 16, each field in its range, 422 naming it, nothing stored), kept per worker (the
latest replaces the last; a heartbeat without it means none) and shown by GET /workers."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir  # noqa: E402


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
    c.stop()
    print("ok: heartbeat GPU telemetry checked, kept and listed")


if __name__ == "__main__":
    main()
