"""Small datasets with the default spec (issue 30): a real controller and a real worker on
loopback, real training on the CPU. The validation split, the batch size and the schedule are
sized to the dataset when the spec leaves them unset (spec/spec.h, "defaults sized to the data").

  folder: a 120-image folder of Fashion-MNIST PNGs (12 a class, no train/val/test folders): a train
          job with the default spec succeeds above chance, and its resolved spec (GET /jobs/{id})
          carries the sized values (data.val_size 21, train.batch_size 8, train.epochs 50);
          `hone experiment automl-defaults` shows them, with a DEFAULT column; an AutoML job on
          it runs its trials to the end, each batch within the sized range; and what cannot work
          on this set is refused at create with 422 naming the field and the fix (a val_size
          that leaves nothing, through the API and the CLI; a swept batch above the set).
  detect: gen_detect.py's images, 600 in train/ and no val/: a detectnet_v2 job with the default
          split and batch (test_detect.py's model.width 16 and optimiser, and 8 epochs, as a CPU
          can afford) trains to a val_map clearly above an untrained network's (~0.0003 on this
          set; test_detect.py's bar): the batch is sized to 8 (60 steps an epoch) where the old
          default, 128, left 3 (bench/small_detect.sh: best val_map 0.005 at 128, 0.058 at 8, in
          8 epochs).
The old controller took both sets and failed every job at run time (data.val_size 5000).

usage: test_small.py folder|detect PYTHON-WITH-PILLOW HONE HONE-CONTROLLER HONE-WORKER HONE-TRAIN
       HONE-PACK
Exits 77 without Fashion-MNIST (folder) or the generator's photographs (detect; with
HONE_REQUIRE_PHOTOS=1 that fails)."""
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

GEN = os.path.join(HERE, "..", "data", "gen_detect.py")


def api(ctl, method, path, body=None, want=None):
    """The JSON answer; with want, that status is required (an error's body is returned)."""
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(ctl.base + path, data=data, method=method,
                               headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            st, out = resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        st, out = e.code, json.loads(e.read() or b"null")
    if want is not None:
        assert st == want, (method, path, st, out)
    elif st >= 300:
        raise AssertionError("%s %s -> %d %s" % (method, path, st, out))
    return out


def hone(bins, ctl, *args, check=True):
    p = subprocess.run([bins["hone"], "--url", ctl.base] + list(args), capture_output=True,
                       text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError("hone %s -> %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout,
                                                        p.stderr))
    return p


def wait(ctl, jid, budget=600):
    deadline = time.time() + budget
    while time.time() < deadline:
        j = api(ctl, "GET", "/api/v1/jobs/" + jid)
        if j["status"] in ("done", "failed", "canceled"):
            return j
        time.sleep(0.5)
    raise AssertionError("job %s still %s" % (jid, j["status"]))


def write_120(root):
    """12 Fashion-MNIST training images of each class as grey PNGs in <root>/<class>/."""
    fm = fmnist_folder.find_fmnist()
    if not fm:
        return False
    (n, h, w), px = fmnist_folder.read_idx(fm, "train-images-idx3-ubyte")
    _, labels = fmnist_folder.read_idx(fm, "train-labels-idx1-ubyte")
    counts = [0] * 10
    for i in range(n):
        y = labels[i]
        if counts[y] == 12:
            continue
        counts[y] += 1
        d = os.path.join(root, fmnist_folder.CLASSES[y])
        os.makedirs(d, exist_ok=True)
        img = px[i * h * w:(i + 1) * h * w]
        with open(os.path.join(d, "%05d.png" % i), "wb") as f:
            f.write(png_bytes(w, h, [img[r * w:(r + 1) * w] for r in range(h)], False))
        if sum(counts) == 120:
            break
    return True


def folder(bins, ctl, root):
    data = os.path.join(root, "data", "pets")
    if not write_120(data):
        print("skipped: no Fashion-MNIST")
        return 77
    ds = api(ctl, "POST", "/api/v1/datasets", {"name": "pets", "path": data,
                                               "format": "image_folder"})
    st = ds["stats"]  # training holds a tenth of train/ out as its test split
    assert st["train_images"] + st["test_from_train"] == 120 and st["test_images"] == 12, st
    exp = api(ctl, "POST", "/api/v1/experiments",
              {"name": "small", "network_arch": "cnn", "train_datasets": [ds["id"]]})
    # the sized defaults, shown before any job runs: 120 - 12 (the test carve) = 108 in the
    # training part, 21 of them for validation, 87 to train on
    dfl = api(ctl, "GET", "/api/v1/experiments/%s/automl-defaults" % exp["id"])
    assert dfl["training_images"] == 87, dfl
    assert dfl["sized"] == {"data.val_size": 21, "train.batch_size": 8, "train.epochs": 50,
                            "train.lr": 0.0125, "train.step_epochs": 50}, dfl["sized"]
    b = dfl["all_hyperparameters"]["train.batch_size"]
    assert (b["min"], b["max"], b["default"]) == (4, 8, 8), b
    lr = dfl["default_hyperparameters"]["train.lr"]  # cnn's 0.05 at 128, by sqrt(8 / 128)
    assert lr["default"] == 0.0125 and abs(lr["max"] - 0.3 / 4) < 1e-9, lr
    text = hone(bins, ctl, "experiment", "automl-defaults", exp["id"]).stdout
    lines = text.splitlines()
    head = lines[0].split()
    assert head[3] == "DEFAULT", text
    row = [l.split() for l in lines if l.startswith("train.batch_size")][0]
    assert row[2:5] == ["4", "..", "8"] and row[-2] == "8", text  # RANGE 4 .. 8 (log), DEFAULT 8
    rows = [l.split() for l in lines[1:] if l.startswith(("train.", "model."))]
    assert len(rows) > 5 and not [r for r in rows if r[-2] == "-"], text
    cell = {r[0]: r[-2] for r in rows}
    assert (cell["train.momentum"], cell["train.nesterov"], cell["train.lr"]) == \
        ("0.9", "true", "0.0125"), text
    assert "sized to the dataset (87 training images): data.val_size=21, train.batch_size=8, " \
           "train.epochs=50, train.lr=0.0125" in text, text

    # 1. a train job with the default spec: it trains, above chance (0.1)
    job = api(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})
    j = api(ctl, "GET", "/api/v1/jobs/" + job["id"])
    rs = j["resolved_spec"]
    assert (rs["data.val_size"], rs["train.batch_size"], rs["train.epochs"], rs["train.lr"]) == \
        (21, 8, 50, 0.0125), rs
    assert j["epochs_target"] == 50 and j["specs"] == {}, j
    j = wait(ctl, job["id"])
    assert j["status"] == "done", j
    best = j["result"]["best_metric"]
    assert best >= 0.3, "val_accuracy %.3f on 21 images: not above chance" % best
    print("folder: train job done, best val_accuracy %.3f (test %.3f) at batch 8, 50 epochs" % (
        best, j["result"].get("test_accuracy", float("nan"))))

    # 2. AutoML on it: every trial runs (the old default failed all of them), batches in 4 .. 8
    aexp = api(ctl, "POST", "/api/v1/experiments",
               {"name": "small-automl", "network_arch": "cnn", "train_datasets": [ds["id"]],
                "specs": {"train": {"epochs": 2}},
                "automl_settings": {"automl_enabled": True, "automl_algorithm": "random",
                                    "automl_max_recommendations": 3, "automl_max_parallel": 1}})
    aj = api(ctl, "POST", "/api/v1/experiments/%s/jobs" % aexp["id"], {"action": "automl"})
    aj = wait(ctl, aj["id"])
    assert aj["status"] == "done", aj
    trials = api(ctl, "GET", "/api/v1/jobs?parent=%s&limit=100" % aj["id"])["jobs"]
    assert len(trials) == 3 and all(t["status"] == "done" for t in trials), trials
    assert all(4 <= t["config"]["train.batch_size"] <= 8 for t in trials), trials
    space = aj["automl"]["search_space"]["train.batch_size"]
    assert (space["min"], space["max"]) == (4, 8), space
    # the rate not swept: each trial's follows its batch, as the sized default does
    aexp2 = api(ctl, "POST", "/api/v1/experiments",
                {"name": "small-automl-2", "network_arch": "cnn", "train_datasets": [ds["id"]],
                 "specs": {"train": {"epochs": 2}},
                 "automl_settings": {"automl_enabled": True, "automl_algorithm": "random",
                                     "automl_max_recommendations": 2, "automl_max_parallel": 1,
                                     "automl_start_from_spec": False,
                                     "automl_remove_hyperparameters": ["train.lr"]}})
    aj2 = api(ctl, "POST", "/api/v1/experiments/%s/jobs" % aexp2["id"], {"action": "automl"})
    deadline, trials = time.time() + 60, []
    while not trials and time.time() < deadline:
        trials = api(ctl, "GET", "/api/v1/jobs?parent=%s&limit=100" % aj2["id"])["jobs"]
        time.sleep(0.2)
    rs = api(ctl, "GET", "/api/v1/jobs/" + trials[0]["id"])["resolved_spec"]
    b = trials[0]["config"]["train.batch_size"]
    assert rs["train.batch_size"] == b and abs(rs["train.lr"] - 0.05 * (b / 128) ** 0.5) < 1e-12, \
        (b, rs["train.lr"])
    api(ctl, "POST", "/api/v1/jobs/%s/cancel" % aj2["id"])

    # 3. refused at create, naming the field and the fix; nothing stored
    n_exp = len(api(ctl, "GET", "/api/v1/experiments?limit=100")["experiments"])
    e = api(ctl, "POST", "/api/v1/experiments",
            {"name": "x", "network_arch": "cnn", "train_datasets": [ds["id"]],
             "specs": {"data": {"val_size": 200}}}, want=422)["error"]
    assert e["field"] == "specs.data.val_size", e
    assert "200 leaves no training images (the training file has 108)" in e["message"], e
    assert "set it below 108, or leave it unset to have it sized to the data (21)" in \
        e["message"], e
    e = api(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp["id"],
            {"action": "train", "specs": {"data.val_size": 108}}, want=422)["error"]
    assert e["field"] == "specs.data.val_size" and "set it below 108" in e["message"], e
    e = api(ctl, "POST", "/api/v1/experiments",
            {"name": "x", "network_arch": "cnn", "train_datasets": [ds["id"]],
             "automl_settings": {"automl_enabled": True, "automl_hyperparameters": {
                 "train.batch_size": {"type": "int", "min": 128, "max": 512, "log": True},
                 "train.lr": {"type": "float", "min": 0.01, "max": 0.1, "log": True}}}},
            want=422)["error"]
    assert e["field"] == "automl_settings.automl_hyperparameters", e
    assert "train.batch_size from 128 exceeds the 87 training images" in e["message"], e
    assert "sweep it within 4 .. 8" in e["message"], e
    p = hone(bins, ctl, "experiment", "create", "--name", "x", "--network", "cnn",
             "--train-dataset", ds["id"], "--spec", "data.val_size=500", check=False)
    assert p.returncode != 0 and "data.val_size" in p.stderr and "set it below 108" in p.stderr, \
        (p.returncode, p.stdout, p.stderr)
    assert len(api(ctl, "GET", "/api/v1/experiments?limit=100")["experiments"]) == n_exp
    # a value the user set is kept as set: batch 16 and 3 epochs stay (and the lr, the user's
    # to pair with their batch, is the network's)
    job = api(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp["id"],
              {"action": "train", "specs": {"train": {"batch_size": 16, "epochs": 3}}})
    rs = api(ctl, "GET", "/api/v1/jobs/" + job["id"])["resolved_spec"]
    assert (rs["data.val_size"], rs["train.batch_size"], rs["train.epochs"], rs["train.lr"]) == \
        (21, 16, 3, 0.05), rs
    api(ctl, "POST", "/api/v1/jobs/%s/cancel" % job["id"])
    print("folder: ok")
    return 0


def detect(bins, ctl, root, py):
    data = os.path.join(root, "data", "kitti")
    g = subprocess.run([py, GEN, "--count", "600", "--size", "128", "--jobs", "2", data],
                       capture_output=True, text=True)
    if g.returncode != 0:
        if os.environ.get("HONE_REQUIRE_PHOTOS") == "1":
            raise AssertionError("gen_detect.py failed:\n" + g.stderr)
        print("skipped: gen_detect.py could not write the set:\n" + g.stderr)
        return 77
    shutil.rmtree(os.path.join(data, "val"))  # a set as people have it: train/ alone
    ds = json.loads(hone(bins, ctl, "dataset", "create", "--name", "kitti600", "--path", data,
                         "--type", "object_detection", "--format", "kitti", "--json").stdout)
    args = ["experiment", "create", "--name", "det", "--network", "detectnet_v2",
            "--train-dataset", ds["id"], "--spec", "train.epochs=%d" % EPOCHS, "--json"]
    for s in SPEC:
        args += ["--spec", s]
    exp = json.loads(hone(bins, ctl, *args).stdout)
    job = api(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})
    rs = api(ctl, "GET", "/api/v1/jobs/" + job["id"])["resolved_spec"]
    # 600 - 60 (test) = 540: 54 to validate, 486 to train on, 60 steps an epoch at batch 8
    assert (rs["data.val_size"], rs["train.batch_size"], rs["train.epochs"]) == (54, 8, EPOCHS), rs
    t0 = time.time()
    j = wait(ctl, job["id"], budget=900)
    assert j["status"] == "done", j
    rows = json.loads(hone(bins, ctl, "job", "metrics", job["id"], "--json").stdout)["metrics"]
    maps = [r.get("val_map", r.get("data", {}).get("val_map")) for r in rows]
    best = j["result"]["best_metric"]
    assert len(maps) == EPOCHS and best == max(maps), (best, maps)
    assert best >= 0.012, "val_map %.4f: not clearly above an untrained network's (~0)" % best
    print("detect: ok (val_map per epoch %s; best %.4f; %.0f s)" % (
        " ".join("%.3f" % m for m in maps), best, time.time() - t0))
    return 0


EPOCHS = 8
# test_detect.py's network size and optimiser; the split and the batch are left to the sizing
SPEC = ["model.width=16", "train.optimizer=adamw", "train.lr=0.008", "train.weight_decay=0.0001"]


def main():
    if len(sys.argv) != 8 or sys.argv[1] not in ("folder", "detect"):
        print(__doc__)
        return 2
    mode, py = sys.argv[1], sys.argv[2]
    bins = dict(zip(("hone", "ctl", "worker", "train", "pack"),
                    (os.path.abspath(a) for a in sys.argv[3:])))
    root = tempfile.mkdtemp(prefix="hone-small-")
    ctl = ControllerProcess(bins["ctl"], os.path.join(root, "data"))
    ctl.start()
    w = WorkerProcess(bins["worker"], bins["train"], root, "w1", ctl.base,
                      extra=["--packer", bins["pack"]]).start()
    try:
        rc = folder(bins, ctl, root) if mode == "folder" else detect(bins, ctl, root, py)
    except BaseException:
        time.sleep(0.2)
        sys.stderr.write("---- controller log\n%s\n---- worker log\n%s\n" % (
            ctl.tail(), w.text()[-4000:]))
        raise
    finally:
        w.stop()
        ctl.stop()
    shutil.rmtree(root, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
