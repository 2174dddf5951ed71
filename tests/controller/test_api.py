"""Controller REST API against a real hone-controller process: datasets from server-side paths
(good IDX, paths outside the data roots, '..', symlink escapes, missing files), experiments and jobs
with bad input (unknown fields, wrong types, missing datasets, spec combinations a worker cannot
train): each a 4xx naming the field, and nothing stored. Also health, 404/405, body limits, auth
and the served spec schema."""
import gzip
import json
import os
import re
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir, write_idx  # noqa: E402
from test_datasets_image_folder import tiny_png  # noqa: E402


def counts(c):
    return (len(c.ok("GET", "/api/v1/datasets")["datasets"]),
            len(c.ok("GET", "/api/v1/experiments")["experiments"]),
            len(c.ok("GET", "/api/v1/jobs")["jobs"]))


def expect_err(c, method, path, body, status, field, raw=None, headers=None):
    before = counts(c)
    st, js = c.req(method, path, body, raw=raw, headers=headers)
    assert st == status, (method, path, body, st, js)
    if field is not None:
        assert js["error"]["field"] == field, (body, js)
    assert js["error"]["status"] == status, js
    assert counts(c) == before, "something was stored by a refused request"


def write_big_idx(dirname, n_train, n_test, rows, cols):
    """A large IDX dataset fast: blank images (the stats do not look at pixels), gzipped."""
    os.makedirs(dirname, exist_ok=True)
    for split, n in (("train", n_train), ("t10k", n_test)):
        with gzip.open(os.path.join(dirname, "%s-images-idx3-ubyte.gz" % split), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, n, rows, cols) + bytes(n * rows * cols))
        with gzip.open(os.path.join(dirname, "%s-labels-idx1-ubyte.gz" % split), "wb") as f:
            f.write(struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n)))


def spec_combinations(c, root, ex_url):
    """Spec combinations are checked at create time against spec/'s rules and the dataset's stats
    (model size and memory limits, key order rules, keys the network does not use, AutoML
    schedules and spaces), as hone-train checks them: 422 naming the key, nothing stored."""
    big = os.path.join(root, "big")
    write_big_idx(big, 20000, 1000, 28, 28)
    dsb = c.ok("POST", "/api/v1/datasets", {"name": "big", "path": big})
    mlp = {"name": "m", "network_arch": "mlp", "train_datasets": [dsb["id"]]}
    for specs, field in [
            ({"model": {"hidden": 65536, "depth": 64}}, "specs.model.hidden"),  # 275 G parameters
            ({"model.hidden": 65536, "train.batch_size": 16384}, "specs.train.batch_size"),  # 17 GiB
            ({"data": {"val_size": 1000000000}}, "specs.data.val_size"),
            ({"data": {"val_size": 20000}}, "specs.data.val_size"),  # leaves no training images
            ({"train": {"warmup_epochs": 11}}, "specs.train.warmup_epochs"),  # 10 epochs
            ({"train": {"warmup_epochs": 3.5, "epochs": 3}}, "specs.train.warmup_epochs"),
            ({"train": {"min_lr": 0.5, "lr": 0.1}}, "specs.train.min_lr"),
            ({"train": {"momentum": 1}}, "specs.train.momentum"),  # hone-train's limit, 0.9999
            ({"train": {"lr": 50}}, "specs.train.lr"),
            ({"train": {"weight_decay": 5}}, "specs.train.weight_decay"),
            ({"train": {"epochs": 100001}}, "specs.train.epochs"),
            ({"train": {"label_smoothing": 0.7}}, "specs.train.label_smoothing"),  # [0, 0.5]
            ({"model": {"batchnorm": 1}}, "specs.model.batchnorm")]:
        expect_err(c, "POST", ex_url, dict(mlp, specs=specs), 422, field)
    expect_err(c, "POST", ex_url, dict(mlp, network_arch="cnn", specs={"model": {"depth": 2}}),
               422, "specs.model.depth")  # the cnn does not use it
    # The widest layer the ranges allow trains; warmup may be fractional and as long as the run.
    e = c.ok("POST", ex_url, dict(mlp, specs={"model": {"hidden": 65536},
                                              "train": {"warmup_epochs": 9.5, "epochs": 10}}))
    assert e["specs"]["train.warmup_epochs"] == 9.5, e
    c.ok("POST", ex_url, dict(mlp, network_arch="cnn", specs={"train": {"batch_size": 4096}}))
    c.ok("POST", ex_url, dict(mlp, network_arch="cnn", specs={"train.label_smoothing": 0.1}))
    # A job's specs are checked over its experiment's.
    jurl = "/api/v1/experiments/%s/jobs" % e["id"]
    expect_err(c, "POST", jurl, {"action": "train", "specs": {"model": {"depth": 64}}}, 422,
               "specs.model.hidden")
    expect_err(c, "POST", jurl, {"action": "train", "specs": {"train": {"epochs": 5}}}, 422,
               "specs.train.warmup_epochs")
    expect_err(c, "POST", jurl, {"action": "train", "specs": {"train.batch_size": 16384}}, 422,
               "specs.train.batch_size")
    expect_err(c, "POST", jurl, {"action": "train", "specs": {"data.val_size": 20000}}, 422,
               "specs.data.val_size")
    expect_err(c, "PATCH", "%s/%s" % (ex_url, e["id"]),  # specs replace the stored ones
               {"specs": {"model.hidden": 65536, "model.depth": 2}}, 422, "specs.model.hidden")
    assert c.ok("GET", "%s/%s" % (ex_url, e["id"]))["specs"] == e["specs"]
    # AutoML: the trials' schedule length and every corner of the swept space.
    hp = "automl_settings.automl_hyperparameters"
    for settings, specs, field in [
            ({"automl_algorithm": "hyperband", "automl_R": 1000, "epoch_multiplier": 1000}, {},
             "automl_settings.automl_R"),
            ({"automl_algorithm": "hyperband", "automl_R": 3}, {"train.warmup_epochs": 5},
             "specs.train.warmup_epochs"),
            # dehb's trials have Hyperband's schedule (R x epoch_multiplier epochs)
            ({"automl_algorithm": "dehb", "automl_R": 1000, "epoch_multiplier": 1000}, {},
             "automl_settings.automl_R"),
            ({"automl_algorithm": "dehb", "automl_R": 3}, {"train.warmup_epochs": 5},
             "specs.train.warmup_epochs"),
            ({"automl_hyperparameters": {"model.hidden": {"type": "int", "min": 64,
                                                          "max": 65536}}},
             {"model.depth": 8}, hp),
            ({"automl_hyperparameters": {"train.batch_size": {"type": "float", "min": 64,
                                                              "max": 512}}}, {}, hp),
            ({"automl_hyperparameters": {"train.momentum": {"type": "float", "min": 0.5,
                                                            "max": 1.0}}}, {}, hp),
            ({"automl_hyperparameters": {"train.warmup_epochs": {"type": "int", "min": 0,
                                                                 "max": 20}}}, {}, hp),
            ({"automl_hyperparameters": {"model.depth": {"type": "int", "min": 1, "max": 64}}},
             {"model.hidden": 4096}, hp),
            ({"automl_hyperparameters": {"data.val_size": {"type": "int", "min": 0,
                                                           "max": 30000}}}, {}, hp),
            ({"automl_hyperparameters": {"train.label_smoothing": {"type": "float", "min": 0,
                                                                   "max": 0.8}}}, {}, hp),
            # the whole space given: a list that adds to or removes from the defaults beside it
            # would be ignored, so it is refused (an empty one is no list)
            ({"automl_hyperparameters": {"train.lr": {"type": "float", "min": 0.01, "max": 0.1}},
              "automl_remove_hyperparameters": ["train.momentum"]}, {},
             "automl_settings.automl_remove_hyperparameters"),
            ({"automl_hyperparameters": {"train.lr": {"type": "float", "min": 0.01, "max": 0.1}},
              "automl_remove_hyperparameters": [],
              "automl_add_hyperparameters": ["model.dropout"]}, {},
             "automl_settings.automl_add_hyperparameters")]:
        settings = dict(settings, automl_enabled=True)
        expect_err(c, "POST", ex_url, dict(mlp, specs=specs, automl_settings=settings), 422,
                   field)
    # The same settings with the search off are only stored; an AutoML job on them is refused.
    off = c.ok("POST", ex_url, dict(mlp, automl_settings={"automl_R": 1000,
                                                           "epoch_multiplier": 1000,
                                                           "automl_algorithm": "hyperband"}))
    expect_err(c, "POST", "/api/v1/experiments/%s/jobs" % off["id"], {"action": "automl"}, 422,
               "automl_settings.automl_R")
    # An image folder trains (hone-train packs it), with the keys only it takes.
    os.makedirs(os.path.join(root, "imgs", "cat"))
    with open(os.path.join(root, "imgs", "cat", "1.png"), "wb") as f:
        f.write(tiny_png())
    dsi = c.ok("POST", "/api/v1/datasets", {"name": "imgs", "path": root + "/imgs",
                                            "format": "image_folder"})
    c.ok("POST", ex_url, dict(mlp, train_datasets=[dsi["id"]],
                              specs={"model.input_size": 16, "data.channels": 3}))
    expect_err(c, "POST", ex_url, dict(mlp, specs={"model.input_size": 16}), 422,
               "specs.model.input_size")  # idx images are not resized
    expect_err(c, "POST", ex_url, dict(mlp, specs={"data.channels": 2}), 422,
               "specs.data.channels")
    # The schema behind all of it, as committed.
    sc = c.ok("GET", "/api/v1/schemas/spec")
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "schemas", "spec.schema.json")) as f:
        assert sc == json.load(f)
    assert sc["$defs"]["train.momentum"]["maximum"] == 0.9999


def main():
    binary = binary_from_argv()
    d = tempdir()
    root = os.path.join(d, "root")
    outside = os.path.join(d, "outside")
    write_idx(os.path.join(root, "good"))
    write_idx(os.path.join(root, "plain"), gz=False)
    write_idx(outside)
    os.symlink(outside, os.path.join(root, "escape"))
    os.makedirs(os.path.join(root, "linkfiles"))
    for f in os.listdir(outside):  # files that are symlinks leading out of the root
        os.symlink(os.path.join(outside, f), os.path.join(root, "linkfiles", f))
    write_idx(os.path.join(root, "trunc"))
    with open(os.path.join(root, "trunc", "train-labels-idx1-ubyte.gz"), "r+b") as f:
        f.truncate(20)
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("data_roots: [%s]\nlimits: {body_bytes: 65536}\nlog_format: json\n" % root)
    c = Controller(binary, os.path.join(d, "data"), config=cfg)
    os.makedirs(c.data_dir)
    c.start()
    try:
        assert c.ok("GET", "/healthz") == {"status": "ok"}
        assert c.ok("GET", "/readyz")["status"] == "ready"
        st, text = c.req("GET", "/metrics")
        assert st == 200 and b"hone_http_requests_total" in text

        # Datasets: good ones, gz and plain.
        ds = c.ok("POST", "/api/v1/datasets", {"name": "good", "path": root + "/good"})
        assert ds["stats"] == {"train_images": 50, "test_images": 20, "classes": 10,
                               "image_shape": [1, 8, 8]}, ds
        assert ds["id"].startswith("ds-") and ds["format"] == "idx"
        ds2 = c.ok("POST", "/api/v1/datasets", {"name": "plain", "path": root + "/plain",
                                               "format": "idx", "type": "image_classification"})
        assert c.ok("GET", "/api/v1/datasets/" + ds["id"])["name"] == "good"
        # Bad paths and files: 422 naming path, nothing stored.
        ds_url = "/api/v1/datasets"
        for p in (outside, root + "/../outside", root + "/escape", root + "/linkfiles",
                  root + "/missing", root + "/trunc", "relative/path", "/etc"):
            expect_err(c, "POST", ds_url, {"name": "x", "path": p}, 422, "path")
        expect_err(c, "POST", ds_url, {"name": "x", "path": root + "/good", "bogus": 1}, 422,
                   "bogus")
        expect_err(c, "POST", ds_url, {"name": 5, "path": root + "/good"}, 422, "name")
        expect_err(c, "POST", ds_url, {"path": root + "/good"}, 422, "name")
        expect_err(c, "POST", ds_url, {"name": "x", "path": root + "/good", "format": "csv"},
                   422, "format")
        expect_err(c, "POST", ds_url, None, 400, None, raw=b'{"name": "x", "path": ',
                   headers={"Content-Type": "application/json"})
        expect_err(c, "POST", ds_url, None, 415, None, raw=b'name=x',
                   headers={"Content-Type": "application/x-www-form-urlencoded"})
        expect_err(c, "POST", ds_url, {"name": "x" * 70000, "path": "/"}, 413, None)
        expect_err(c, "GET", "/api/v1/datasets/ds-nope", None, 404, "id")
        expect_err(c, "PUT", ds_url, {"name": "x"}, 405, None)
        expect_err(c, "GET", "/api/v1/nothing", None, 404, None)

        # Experiments.
        ex_url = "/api/v1/experiments"
        good = {"name": "e1", "network_arch": "cnn", "train_datasets": [ds["id"]],
                "metric": "val_accuracy", "specs": {"train": {"epochs": 3}},
                "automl_settings": {"automl_enabled": True, "automl_algorithm": "hyperband",
                                    "automl_R": 9, "automl_add_hyperparameters": ["model.dropout"],
                                    "automl_remove_hyperparameters": ["train.momentum"]}}
        bad = [
            ({"bogus": 1}, "bogus"),
            ({"network_arch": "resnet999"}, "network_arch"),
            ({"network_arch": 3}, "network_arch"),
            ({"train_datasets": ["ds-missing"]}, "train_datasets"),
            ({"train_datasets": []}, "train_datasets"),
            ({"train_datasets": "ds"}, "train_datasets"),
            ({"eval_dataset": "ds-missing"}, "eval_dataset"),
            ({"metric": "f1"}, "metric"),
            ({"specs": {"train": {"lr": "fast"}}}, "specs.train.lr"),
            ({"specs": {"train.nope": 1}}, "specs.train.nope"),
            ({"specs": {"train": {"epochs": 0}}}, "specs.train.epochs"),
            ({"specs": {"data": {"path": "/etc"}}}, "specs.data.path"),
            ({"automl_settings": {"automl_R": "big"}}, "automl_settings.automl_R"),
            ({"automl_settings": {"automl_nu": 1}}, "automl_settings.automl_nu"),
            ({"automl_settings": {"automl_algorithm": "genetic"}},
             "automl_settings.automl_algorithm"),
            ({"automl_settings": {"surprise": True}}, "automl_settings.surprise"),
            ({"automl_settings": {"automl_add_hyperparameters": ["model.layers"]}},
             "automl_settings.automl_add_hyperparameters"),
            ({"automl_settings": {"automl_remove_hyperparameters": ["model.hidden"]}},
             "automl_settings.automl_remove_hyperparameters"),
            ({"automl_settings": {"automl_hyperparameters": {"train.lr": {"type": "float"}}}},
             "automl_settings.automl_hyperparameters"),
            ({"automl_settings": {"automl_hyperparameters": {"x.y": {"type": "bool"}}}},
             "automl_settings.automl_hyperparameters"),
        ]
        for patch, field in bad:
            body = dict(good)
            body.update(patch)
            expect_err(c, "POST", ex_url, body, 422, field)
        body = dict(good)
        del body["name"]
        expect_err(c, "POST", ex_url, body, 422, "name")
        exp = c.ok("POST", ex_url, good)
        assert exp["automl_settings"]["automl_nu"] == 3  # TAO default filled in
        assert exp["automl_settings"]["automl_max_recommendations"] == 20
        assert exp["specs"] == {"train.epochs": 3}
        dfl = c.ok("GET", "/api/v1/experiments/%s/automl-defaults" % exp["id"])
        assert "train.lr" in dfl["default_hyperparameters"]
        assert "model.dropout" in dfl["all_hyperparameters"]
        assert "model.dropout" not in dfl["default_hyperparameters"]
        # PATCH: validated whole; a bad patch changes nothing.
        expect_err(c, "PATCH", "%s/%s" % (ex_url, exp["id"]),
                   {"automl_settings": {"automl_R": 0}}, 422, "automl_settings.automl_R")
        pe = c.ok("PATCH", "%s/%s" % (ex_url, exp["id"]), {"automl_settings": {"automl_R": 3}})
        assert pe["automl_settings"]["automl_R"] == 3
        assert pe["automl_settings"]["automl_algorithm"] == "hyperband"
        # A dataset in use cannot be deleted; an unused one can.
        expect_err(c, "DELETE", "/api/v1/datasets/" + ds["id"], None, 409, "id")
        st, _ = c.req("DELETE", "/api/v1/datasets/" + ds2["id"])
        assert st == 204

        # Jobs.
        jurl = "/api/v1/experiments/%s/jobs" % exp["id"]
        expect_err(c, "POST", jurl, {"action": "dance"}, 422, "action")
        expect_err(c, "POST", jurl, {"action": "train", "extra": 1}, 422, "extra")
        expect_err(c, "POST", jurl, {"action": "train", "specs": {"train": {"lr": -1}}}, 422,
                   "specs.train.lr")
        expect_err(c, "POST", "/api/v1/experiments/exp-nope/jobs", {"action": "train"}, 404, "id")
        plain = c.ok("POST", ex_url, {"name": "plain", "network_arch": "mlp",
                                      "train_datasets": [ds["id"]]})
        tj = c.ok("POST", "/api/v1/experiments/%s/jobs" % plain["id"],
                  {"action": "train", "specs": {"train": {"epochs": 2, "lr": 0.01}}})
        assert tj["status"] == "queued" and tj["epochs_target"] == 2, tj
        # Worker calls with bad input.
        w = c.ok("POST", "/api/v1/workers", {"name": "w1", "resources": {"cpus": 2}})
        w2 = c.ok("POST", "/api/v1/workers", {"name": "w2", "resources": {"cpus": 2}})
        H = {"Authorization": "Bearer " + w["token"]}
        H2 = {"Authorization": "Bearer " + w2["token"]}
        listed = c.ok("GET", "/api/v1/workers")["workers"]
        assert all("token" not in x and "secret_hash" not in x for x in listed), listed
        assert w["token"].startswith(w["id"] + ".") and w["token"] != w2["token"]
        expect_err(c, "POST", "/api/v1/workers", {"name": "w1", "cpus": 2}, 422, "cpus")
        expect_err(c, "POST", "/api/v1/workers/wrk-nope/lease", None, 404, "worker_id")
        # A worker is who its credential says, not who it claims to be.
        expect_err(c, "POST", "/api/v1/workers/%s/lease?wait=0" % w["id"], None, 401,
                   "Authorization")
        expect_err(c, "POST", "/api/v1/workers/%s/lease?wait=0" % w["id"], None, 403,
                   "worker_id", headers=H2)
        forged = {"Authorization": "Bearer %s.%s" % (w["id"], "0" * 64)}
        expect_err(c, "POST", "/api/v1/workers/%s/lease?wait=0" % w["id"], None, 401,
                   "Authorization", headers=forged)
        expect_err(c, "POST", "/api/v1/workers/%s/heartbeat" % w["id"], {"jobs": []}, 401,
                   "Authorization", headers=forged)
        job = c.ok("POST", "/api/v1/workers/%s/lease?wait=0" % w["id"], headers=H)["job"]
        assert job["id"] == tj["id"] and job["spec"]["train.lr"] == 0.01, job
        assert job["spec"]["train.epochs"] == 2, job
        # the spec once, as the flat dotted JSON the store keeps (issue 27)
        assert "spec_yaml" not in job and "overrides" not in job, job
        rurl = "/api/v1/jobs/%s/report" % job["id"]
        expect_err(c, "POST", rurl, {"worker_id": w["id"], "epoch": "one", "metrics": {}}, 422,
                   "epoch", headers=H)
        expect_err(c, "POST", rurl, {"worker_id": w["id"], "epoch": 1, "metrics": {"a": "b"}},
                   422, "metrics", headers=H)
        expect_err(c, "POST", rurl, {"worker_id": w2["id"], "epoch": 1, "metrics": {}}, 409,
                   "worker_id", headers=H2)
        expect_err(c, "POST", rurl, {"worker_id": w2["id"], "epoch": 1, "metrics": {}}, 403,
                   "worker_id", headers=H)
        expect_err(c, "POST", rurl, {"worker_id": w["id"], "epoch": 1, "metrics": {}}, 401,
                   "Authorization")
        # Reports are checked against the job: the next epoch, known metrics, natural ranges.
        expect_err(c, "POST", rurl, {"worker_id": w["id"], "epoch": 2, "metrics": {}}, 422,
                   "epoch", headers=H)
        expect_err(c, "POST", rurl, {"worker_id": w["id"], "epoch": 1,
                                     "metrics": {"k" * 50000: 1.0}}, 422, "metrics", headers=H)
        expect_err(c, "POST", rurl, {"worker_id": w["id"], "epoch": 1,
                                     "metrics": {"val_accuracy": 1.797e308}}, 422,
                   "metrics.val_accuracy", headers=H)
        expect_err(c, "POST", rurl, {"worker_id": w["id"], "epoch": 1,
                                     "metrics": {"val_loss": -0.5}}, 422, "metrics.val_loss",
                   headers=H)
        # Artifacts: only the worker holding the lease, only while the job runs.
        aurl = "/api/v1/jobs/%s/artifacts/model.bin" % job["id"]
        put_h = dict(H, **{"Content-Type": "application/octet-stream"})
        expect_err(c, "PUT", aurl, None, 401, "Authorization", raw=b"EVIL",
                   headers={"Content-Type": "application/octet-stream"})
        expect_err(c, "PUT", aurl, None, 403, "Authorization", raw=b"EVIL",
                   headers=dict(H2, **{"Content-Type": "application/octet-stream"}))
        st, js = c.req("PUT", aurl, raw=b"GOOD", headers=put_h)
        assert st == 201 and js["bytes"] == 4, (st, js)
        r = c.ok("POST", rurl, {"worker_id": w["id"], "epoch": 1,
                                "metrics": {"val_accuracy": 0.5, "seconds": 1.0}}, headers=H)
        assert r["decision"] == "continue" and not r["duplicate"]
        r = c.ok("POST", rurl, {"worker_id": w["id"], "epoch": 1,
                                "metrics": {"val_accuracy": 0.9, "seconds": 1.0}}, headers=H)
        assert r["duplicate"]
        m = c.ok("GET", "/api/v1/jobs/%s/metrics" % job["id"])["metrics"]
        assert m == [{"epoch": 1, "val_accuracy": 0.5, "seconds": 1.0}], m
        # Pause through the report reply, then cancel.
        c.ok("POST", "/api/v1/jobs/%s:pause" % job["id"])
        r = c.ok("POST", rurl, {"worker_id": w["id"], "epoch": 2,
                                "metrics": {"val_accuracy": 0.6}}, headers=H)
        assert r["decision"] == "pause", r
        done = c.ok("POST", "/api/v1/jobs/%s/complete" % job["id"],
                    {"worker_id": w["id"], "status": "paused", "log_tail": "bye"}, headers=H)
        assert done["status"] == "paused" and done["resume"], done
        expect_err(c, "PUT", aurl, None, 409, "id", raw=b"EVIL", headers=put_h)
        st, body = c.req("GET", aurl)
        assert st == 200 and body == b"GOOD", (st, body)
        c.ok("POST", "/api/v1/jobs/%s/cancel" % job["id"])
        assert c.ok("GET", "/api/v1/jobs/" + job["id"])["status"] == "canceled"
        expect_err(c, "POST", "/api/v1/jobs/%s:cancel" % job["id"], None, 409, "status")
        st, text = c.req("GET", "/api/v1/jobs/%s/logs" % job["id"])
        # each epoch's own line (issue 28), then the tail
        iso = rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
        assert st == 200 and re.match(rb"%s epoch 1/2: val_accuracy 0\.5, 1\.00 s\n%s epoch 2/2: "
                                      rb"val_accuracy 0\.6\nbye$" % (iso, iso), text), (st, text)
        st, _ = c.req("POST", "/api/v1/workers/%s/lease?wait=0" % w["id"], headers=H)
        assert st == 204
        spec_combinations(c, root, ex_url)
    finally:
        c.stop()

    # Auth: with a token configured, requests without it get 401 (health stays open).
    with open(cfg, "a") as f:
        f.write("auth: {token: s3cret, worker_token: enrol-me}\n")
    c = Controller(binary, os.path.join(d, "data"), config=cfg).start()
    try:
        st, js = c.req("GET", "/api/v1/datasets")
        assert st == 401, st
        st, _ = c.req("GET", "/api/v1/datasets", headers={"Authorization": "Bearer wrong!"})
        assert st == 401
        admin = {"Authorization": "Bearer s3cret"}
        enrol = {"Authorization": "Bearer enrol-me"}
        assert c.ok("GET", "/api/v1/datasets", headers=admin)["datasets"]
        assert c.req("GET", "/healthz")[0] == 200
        # Workers enrol with their own token, which can do nothing else; their credential then
        # works on their own routes only. Admins and workers no longer share a token.
        def denied(method, path, body, headers):
            st, js = c.req(method, path, body, headers=headers)
            assert st == 403 and js["error"]["field"] == "Authorization", (path, st, js)

        denied("GET", "/api/v1/datasets", None, enrol)
        wa = c.ok("POST", "/api/v1/workers", {"name": "wa"}, headers=enrol)
        WA = {"Authorization": "Bearer " + wa["token"]}
        denied("GET", "/api/v1/datasets", None, WA)
        denied("POST", "/api/v1/workers", {"name": "x"}, WA)
        n_workers = len(c.ok("GET", "/api/v1/workers", headers=admin)["workers"])
        assert n_workers == 3, n_workers  # w1, w2 from before, and wa: the refused one is not
        st, _ = c.req("POST", "/api/v1/workers/%s/lease?wait=0" % wa["id"], headers=WA)
        assert st in (200, 204), st
        # An admin may upload to any job's artifacts (e.g. to repair one).
        jobs = c.ok("GET", "/api/v1/jobs", headers=admin)["jobs"]
        st, js = c.req("PUT", "/api/v1/jobs/%s/artifacts/note.txt" % jobs[0]["id"], raw=b"x",
                       headers=dict(admin, **{"Content-Type": "application/octet-stream"}))
        assert st == 201, (st, js)
    finally:
        c.stop()

    # Connection limits from the config reach the server: past connections_per_address, the
    # address's own oldest idle connection is closed and newcomers are still answered.
    with open(cfg, "w") as f:
        f.write("limits: {connections: 64, connections_per_address: 8}\n")
    c = Controller(binary, os.path.join(d, "data2"), config=cfg).start()
    idle = []
    try:
        for _ in range(12):
            s = socket.create_connection(("127.0.0.1", c.port))
            idle.append(s)
            time.sleep(0.02)  # accepted in this order
        assert c.req("GET", "/healthz")[0] == 200
        idle[0].settimeout(5)
        try:
            evicted = idle[0].recv(1) == b""
        except ConnectionResetError:
            evicted = True
        assert evicted, "the oldest idle connection past the per-address limit was not closed"
    finally:
        for s in idle:
            s.close()
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
