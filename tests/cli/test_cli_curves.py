"""`hone job curves` against a real hone-controller: for an AutoML job driven by a fake worker, the
SVG (a well-formed XML document) has one polyline per trial with as many points as the trial has
stored epochs, the best trial marked; a train job gives one curve; --metric picks another metric,
--out - writes to stdout, --json says what was written; an unknown job fails with exit 1."""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "controller"))
from hone_test import Controller, FakeWorker, tempdir, write_idx  # noqa: E402
from test_automl import drive, setup  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def hone(binary, url, *args):
    p = subprocess.run([binary, "--url", url] + list(args), capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def polylines(text):
    root = ET.fromstring(text.encode())
    return {p.get("data-label"): p.get("points").split() for p in root.iter(SVG + "polyline")}


def main():
    hone_bin, ctl_bin = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    d = tempdir()
    root = os.path.join(d, "ds")
    write_idx(root)
    c = Controller(ctl_bin, d).start()
    try:
        w = FakeWorker(c, "w")
        w.register()
        exp = setup(c, root, {"automl_enabled": True, "automl_algorithm": "hyperband",
                              "automl_R": 9, "automl_nu": 3, "automl_max_parallel": 1})
        job = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "automl"})
        _, st = drive(c, [w], job["id"])
        assert st["status"] == "done", st
        out = os.path.join(d, "c.svg")
        rc, so, se = hone(hone_bin, c.base, "job", "curves", job["id"], "--out", out)
        assert rc == 0, (rc, so, se)
        with open(out) as f:
            svg = f.read()
        lines = polylines(svg)
        stored = c.ok("GET", "/api/v1/jobs/%s/metrics" % job["id"])["trials"]
        want = {"trial " + k: len(v) for k, v in stored.items() if v}
        assert {k: len(v) for k, v in lines.items()} == want, (lines.keys(), want)
        assert len(want) >= 3, want
        assert "trial %d (best)" % st["automl"]["best_trial"] in svg
        assert "%d curves" % len(want) in so and exp["metric"] in so, so

        rc, so, se = hone(hone_bin, c.base, "--json", "job", "curves", job["id"], "--out", out,
                          "--metric", "val_loss")
        js = json.loads(so)
        assert rc == 0 and js["metric"] == "val_loss" and js["curves"] == len(want), (so, se)
        assert js["points"] == sum(want.values()), js

        exp2 = setup(c, root, {"automl_enabled": False}, specs={"train": {"epochs": 3}})
        tj = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp2["id"], {"action": "train"})
        w.run_job(w.lease(wait=0))
        rc, so, se = hone(hone_bin, c.base, "job", "curves", tj["id"], "--out", "-")
        assert rc == 0, (rc, se)
        assert {k: len(v) for k, v in polylines(so).items()} == {tj["id"]: 3}, so

        rc, so, se = hone(hone_bin, c.base, "job", "curves", "job-nope", "--out", out)
        assert rc == 1 and "no job" in se, (rc, so, se)
    finally:
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
