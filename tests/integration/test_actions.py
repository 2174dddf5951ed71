"""Evaluate, inference and export jobs end to end (issue 11): a real controller and a real worker on
loopback, driven through the hone CLI, on a Fashion-MNIST subset (the IDX files).

1. A train job (mlp, 1500 training and 400 test images, 2 epochs) ends done; `hone job evaluate`
   on it reports the train job's own test accuracy and loss, with a confusion matrix over the 400
   test images whose diagonal is that accuracy; its result is readable through `hone job status`.
2. `hone job infer` on the same 400 test images written as PNGs (inside the controller's data
   root) labels each of them; their confusion matrix against the true labels is evaluate's, count
   for count. The labels are the job's artifact labels.jsonl. `hone job evaluate --dataset` on an
   image-folder dataset of 300 other test images (class folders "0".."9") agrees with inference
   on that folder the same way.
2c. `hone job export --out FILE` on the train job: an export job whose artifact model.onnx
   (hone-train --export: ONNX, opset 17) is downloaded to FILE, its size the result's bytes.
3. An AutoML job (random search, 2 trials): evaluate on it uses best_model/ (TAO's best_model)
   and reports the best trial's own test accuracy; export on it gives best_model's ONNX.
4. Refusals naming the field: a parent that has no model yet (409), an unknown parent, a parent
   that is not a train or AutoML job, a wrong action, inference without a folder or with one
   outside the data roots, specs given to evaluate, export with a folder or a dataset (422);
   pausing an evaluate job (409).

usage: test_actions.py HONE HONE-CONTROLLER HONE-WORKER HONE-TRAIN"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "data"))
from honeproc import ControllerProcess, WorkerProcess  # noqa: E402
from pngfolder import png_bytes  # noqa: E402
import fmnist_folder  # noqa: E402

N_TEST = 400


def api(ctl, method, path, body=None):
    """(status, JSON answer)."""
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(ctl.base + path, data=data, method=method,
                               headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def hone(bins, ctl, *args, check=True):
    p = subprocess.run([bins["hone"], "--url", ctl.base] + list(args), capture_output=True,
                       text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError("hone %s -> %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout,
                                                        p.stderr))
    return p


def hone_json(bins, ctl, *args):
    return json.loads(hone(bins, ctl, *(list(args) + ["--json"])).stdout)


def write_test_pngs(fm, root, first=0, n=N_TEST, by_class=False):
    """t10k images first.. as grey PNGs (in folders named by label when by_class); returns
    {path under root: label}."""
    (_, h, w), px = fmnist_folder.read_idx(fm, "t10k-images-idx3-ubyte")
    _, labels = fmnist_folder.read_idx(fm, "t10k-labels-idx1-ubyte")
    truth = {}
    for i in range(first, first + n):
        img = px[i * h * w:(i + 1) * h * w]
        name = "%05d.png" % i
        if by_class:
            name = "%d/%s" % (labels[i], name)
        os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        with open(os.path.join(root, name), "wb") as f:
            f.write(png_bytes(w, h, [img[y * w:(y + 1) * w] for y in range(h)], False))
        truth[name] = labels[i]
    return truth


def matrix(pairs, k):
    m = [[0] * k for _ in range(k)]
    for label, pred in pairs:
        m[label][pred] += 1
    return m


def expect_error(status_body, code, field):
    st, body = status_body
    assert st == code and body.get("error", {}).get("field") == field, (code, field, st, body)


def run(bins, ctl, fm, root):
    st, ds = api(ctl, "POST", "/api/v1/datasets", {"name": "fmnist", "path": fm, "format": "idx"})
    assert st == 201, ds
    st, exp = api(ctl, "POST", "/api/v1/experiments", {
        "name": "actions", "network_arch": "mlp", "train_datasets": [ds["id"]],
        "specs": {"data": {"train_limit": 1500, "val_size": 500, "test_limit": N_TEST},
                  "model": {"hidden": 32}, "train": {"epochs": 2, "batch_size": 64}}})
    assert st == 201, exp
    jobs = "/api/v1/experiments/%s/jobs" % exp["id"]

    # 1. a train job, then evaluate on it
    st, tj = api(ctl, "POST", jobs, {"action": "train"})
    assert st == 201, tj
    # not done yet: no model (the job was created a moment ago and trains for seconds)
    expect_error(api(ctl, "POST", jobs, {"action": "evaluate", "parent_job_id": tj["id"]}), 409,
                 "parent_job_id")
    hone(bins, ctl, "job", "wait", tj["id"], "--timeout", "240")
    train = hone_json(bins, ctl, "job", "status", tj["id"])
    test_acc, test_loss = train["result"]["test_accuracy"], train["result"]["test_loss"]
    ev = hone_json(bins, ctl, "job", "evaluate", tj["id"], "--timeout", "240")
    assert ev["action"] == "evaluate" and ev["status"] == "done", ev
    assert ev["parent_job_id"] == tj["id"], ev
    r = ev["result"]
    print("train job: test accuracy %.4f loss %.4f; evaluate: %.4f loss %.4f"
          % (test_acc, test_loss, r["accuracy"], r["loss"]))
    assert abs(r["accuracy"] - test_acc) < 1e-6, (r["accuracy"], test_acc)
    assert abs(r["loss"] - test_loss) < 1e-5 * max(1.0, test_loss), (r["loss"], test_loss)
    cm = r["confusion_matrix"]
    assert r["images"] == N_TEST and sum(map(sum, cm)) == N_TEST, r
    assert abs(sum(cm[i][i] for i in range(10)) / N_TEST - r["accuracy"]) < 1e-6, r
    assert len(r["per_class_accuracy"]) == 10 and r["classes"] == [str(i) for i in range(10)], r
    # the result through `hone job status`, for people and for scripts
    p = hone(bins, ctl, "job", "status", ev["id"])
    assert "confusion_matrix" in p.stdout and "accuracy" in p.stdout, p.stdout
    assert hone_json(bins, ctl, "job", "status", ev["id"])["result"] == r
    # the table
    p = hone(bins, ctl, "job", "evaluate", tj["id"], "--timeout", "240")
    assert "accuracy: %.4f" % test_acc in p.stdout and "confusion matrix" in p.stdout, p.stdout

    # 2. inference on the same images as PNGs
    folder = os.path.join(root, "data", "infer")
    truth = write_test_pngs(fm, folder)
    inf = hone_json(bins, ctl, "job", "infer", tj["id"], folder, "--timeout", "240")
    assert inf["action"] == "inference" and inf["status"] == "done", inf
    assert inf["result"]["images"] == N_TEST and inf["result"]["labels"] == "labels.jsonl", inf
    labels = inf["labels"]
    assert sorted(l["file"] for l in labels) == sorted(truth), [l["file"] for l in labels][:5]
    assert all(0.1 <= l["score"] <= 1.0 and l["class"] == str(l["class_index"]) for l in labels)
    got = matrix([(truth[l["file"]], l["class_index"]) for l in labels], 10)
    assert got == cm, "inference's matrix differs from evaluate's:\n%s\n%s" % (got, cm)
    st, arts = api(ctl, "GET", "/api/v1/jobs/%s/artifacts" % inf["id"])
    assert "labels.jsonl" in [f["name"] for f in arts["files"]], arts
    p = hone(bins, ctl, "job", "infer", tj["id"], folder, "--timeout", "240")
    first = sorted(labels, key=lambda l: l["file"])[0]
    assert "FILE" in p.stdout and first["file"] in p.stdout, p.stdout

    # 2b. evaluate on another dataset (--dataset): an image folder of other test images in class
    # folders named as the model's classes; every image is a test image, read at the model's size
    other = os.path.join(root, "data", "other")
    other_truth = write_test_pngs(fm, other, first=1000, n=300, by_class=True)
    st, ds2 = api(ctl, "POST", "/api/v1/datasets", {"name": "other", "path": other,
                                                    "format": "image_folder"})
    assert st == 201, ds2
    ev3 = hone_json(bins, ctl, "job", "evaluate", tj["id"], "--dataset", ds2["id"],
                    "--timeout", "240")
    assert ev3["status"] == "done" and ev3["result"]["images"] == 300, ev3
    lab3 = hone_json(bins, ctl, "job", "infer", tj["id"], other, "--timeout", "240")["labels"]
    got = matrix([(other_truth[l["file"]], l["class_index"]) for l in lab3], 10)
    assert got == ev3["result"]["confusion_matrix"], (got, ev3["result"])
    print("evaluate on another dataset (%d images): accuracy %.4f"
          % (ev3["result"]["images"], ev3["result"]["accuracy"]))

    # 2c. export: the ONNX file as the job's artifact, downloaded by the CLI
    onnx_path = os.path.join(root, "model.onnx")
    ex = hone_json(bins, ctl, "job", "export", tj["id"], "--out", onnx_path, "--timeout", "240")
    assert ex["action"] == "export" and ex["status"] == "done", ex
    assert ex["parent_job_id"] == tj["id"], ex
    assert ex["result"]["file"] == "model.onnx" and ex["result"]["opset"] == 17, ex
    with open(onnx_path, "rb") as f:
        blob = f.read()
    assert len(blob) == ex["result"]["bytes"] > 1000, (len(blob), ex["result"])
    assert b"hone-train" in blob and b"pixels" in blob and b"logits" in blob, blob[:200]
    st, arts = api(ctl, "GET", "/api/v1/jobs/%s/artifacts" % ex["id"])
    assert "model.onnx" in [f["name"] for f in arts["files"]], arts
    p = hone(bins, ctl, "job", "export", tj["id"], "--timeout", "240")
    assert "artifact model.onnx" in p.stdout and "opset 17" in p.stdout, p.stdout
    print("export: %d bytes of ONNX" % len(blob))

    # 4. refusals (before the AutoML job, which turns automl on for the experiment's train jobs)
    expect_error(api(ctl, "POST", jobs, {"action": "evaluate"}), 422, "parent_job_id")
    expect_error(api(ctl, "POST", jobs, {"action": "evaluate", "parent_job_id": "job-nope"}), 422,
                 "parent_job_id")
    expect_error(api(ctl, "POST", jobs, {"action": "evaluate", "parent_job_id": ev["id"]}), 422,
                 "parent_job_id")
    expect_error(api(ctl, "POST", jobs, {"action": "dataset_convert", "parent_job_id": tj["id"]}),
                 422, "action")
    # a train or automl job refuses the actions' fields instead of ignoring them (parent_job_id
    # is theirs too since issue 30: fine-tuning, tests/integration/test_finetune.py)
    for action in ("train", "automl"):
        expect_error(api(ctl, "POST", jobs, {"action": action, "dataset_id": ds["id"]}), 422,
                     "dataset_id")
        expect_error(api(ctl, "POST", jobs, {"action": action, "folder": folder}), 422, "folder")
    expect_error(api(ctl, "POST", jobs, {"action": "export", "parent_job_id": tj["id"],
                                         "folder": folder}), 422, "folder")
    expect_error(api(ctl, "POST", jobs, {"action": "export", "parent_job_id": tj["id"],
                                         "dataset_id": ds["id"]}), 422, "dataset_id")
    expect_error(api(ctl, "POST", jobs, {"action": "inference", "parent_job_id": tj["id"]}), 422,
                 "folder")
    expect_error(api(ctl, "POST", jobs, {"action": "inference", "parent_job_id": tj["id"],
                                         "folder": "/etc"}), 422, "folder")
    expect_error(api(ctl, "POST", jobs, {"action": "evaluate", "parent_job_id": tj["id"],
                                         "specs": {"train": {"lr": 0.1}}}), 422, "specs")
    expect_error(api(ctl, "POST", jobs, {"action": "evaluate", "parent_job_id": tj["id"],
                                         "dataset_id": "ds-nope"}), 422, "dataset_id")
    p = hone(bins, ctl, "job", "evaluate", "job-nope", check=False)
    assert p.returncode != 0 and "job-nope" in p.stderr, p.stderr
    p = hone(bins, ctl, "job", "pause", ev["id"], check=False)
    assert p.returncode != 0 and "cannot pause" in p.stderr, p.stderr

    # 3. an AutoML job: its best_model/
    am = hone_json(bins, ctl, "automl", "start", "--experiment", exp["id"], "--algorithm",
                   "random", "--max-recommendations", "2", "--max-parallel", "1", "--seed", "5")
    hone(bins, ctl, "job", "wait", am["id"], "--timeout", "400")
    status = hone_json(bins, ctl, "job", "status", am["id"])
    best = hone_json(bins, ctl, "job", "status", status["automl"]["best_job_id"])
    ev2 = hone_json(bins, ctl, "job", "evaluate", am["id"], "--timeout", "240")
    print("AutoML best trial %s: test accuracy %.4f; evaluate of the AutoML job: %.4f"
          % (best["id"], best["result"]["test_accuracy"], ev2["result"]["accuracy"]))
    assert abs(ev2["result"]["accuracy"] - best["result"]["test_accuracy"]) < 1e-6, (ev2, best)
    ex2 = hone_json(bins, ctl, "job", "export", am["id"], "--timeout", "240")
    assert ex2["status"] == "done" and ex2["result"]["bytes"] > 1000, ex2


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    fm = fmnist_folder.find_fmnist()
    if not fm:
        print("SKIP: no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
        return 77
    bins = dict(zip(("hone", "ctl", "worker", "train"), (os.path.abspath(a) for a in sys.argv[1:])))
    root = tempfile.mkdtemp(prefix="hone-actions-")
    # data roots: its data dir (the inference folder) and the Fashion-MNIST folder
    data = os.path.join(root, "data")
    os.makedirs(data)
    cfg = os.path.join(root, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("data_roots:\n  - %s\n  - %s\n" % (json.dumps(data), json.dumps(fm)))
    ctl = ControllerProcess(bins["ctl"], data, config=cfg)
    ctl.start()
    w = WorkerProcess(bins["worker"], bins["train"], root, "w1", ctl.base).start()
    try:
        run(bins, ctl, fm, root)
    except BaseException:
        time.sleep(0.2)
        sys.stderr.write("---- controller log\n%s\n---- worker log\n%s\n" % (
            ctl.tail(), w.text()[-4000:]))
        raise
    finally:
        w.stop()
        ctl.stop()
    shutil.rmtree(root, ignore_errors=True)
    print("actions: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
