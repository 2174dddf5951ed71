"""The convert job end to end (issue 8): a real controller and a real worker on loopback, driven
through the hone CLI, on a generated PNG folder (tests/lib/pngfolder.py).

  cli:   `hone dataset convert ID --size 16` waits, shows progress and succeeds; the packed file
         verifies (`hone-pack --verify`) with the folder's images and classes; the same size again
         answers the same job (reuse, no second convert); `hone job list` and `hone job status`
         show it; --grey makes a second, one-channel file.
  train: a train job of an image-folder experiment waits for its convert job (not leased before it
         is done), the spec the worker hands hone-train carries data.packed, and the job succeeds.
  kitti: a KITTI set (tests/lib/pngfolder.py, its class map given, one name holding a comma):
         `hone dataset convert` packs it with its boxes in the class map's order (hone-pack
         --kitti); a detectnet_v2 train job at that size reuses that convert job and trains on it;
         the set as a tar (`hone dataset upload --type object_detection --format kitti`) is stored
         and converted too.
  kitti_http: the same with a --storage http worker: the set comes down, the packed file goes
         up (the controller's copy is the worker's), the train job fetches only that file.

usage: test_convert.py cli|train|kitti|kitti_http HONE HONE-CONTROLLER HONE-WORKER HONE-TRAIN
       HONE-PACK"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from honeproc import ControllerProcess, WorkerProcess  # noqa: E402
from pngfolder import write_folder, write_kitti  # noqa: E402


def api(ctl, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(ctl.base + path, data=data, method=method,
                               headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(r, timeout=30) as resp:
        return json.loads(resp.read() or b"null")


def hone(bins, ctl, *args, check=True):
    p = subprocess.run([bins["hone"], "--url", ctl.base] + list(args), capture_output=True,
                       text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError("hone %s -> %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout,
                                                        p.stderr))
    return p


def verify(bins, path):
    p = subprocess.run([bins["pack"], "--verify", path], capture_output=True, text=True)
    assert p.returncode == 0, (path, p.stdout, p.stderr)
    return p.stdout


def cli(bins, ctl, root):
    ds = json.loads(hone(bins, ctl, "dataset", "create", "--name", "pngs", "--path",
                         os.path.join(root, "data", "pngs"), "--format", "image_folder",
                         "--json").stdout)["id"]
    p = hone(bins, ctl, "dataset", "convert", ds, "--size", "16")
    assert "created convert job" in p.stdout and "packed 40 images" in p.stdout, p.stdout
    assert "images/s" in p.stdout, p.stdout  # the progress line
    jobs = api(ctl, "GET", "/api/v1/jobs?action=convert")["jobs"]
    assert len(jobs) == 1 and jobs[0]["status"] == "done", jobs
    cv = jobs[0]
    out = cv["config"]["out"]
    assert out == os.path.join(root, "data", "packed", ds, "16x16x3.hpk"), out
    assert cv["progress"]["images_done"] == cv["progress"]["images_total"] == 40, cv
    v = verify(bins, out)
    assert "40 images 16x16x3" in v and "2 classes" in v, v
    # Reuse: the same job, nothing packed again.
    again = json.loads(hone(bins, ctl, "dataset", "convert", ds, "--size", "16", "--json").stdout)
    assert again["id"] == cv["id"] and again["status"] == "done", again
    p = hone(bins, ctl, "dataset", "convert", ds, "--size", "16")
    assert "reusing convert job %s" % cv["id"] in p.stdout, p.stdout
    assert len(api(ctl, "GET", "/api/v1/jobs?action=convert")["jobs"]) == 1
    p = hone(bins, ctl, "job", "list")
    assert cv["id"] in p.stdout and "convert" in p.stdout, p.stdout
    p = hone(bins, ctl, "job", "status", cv["id"])
    assert "images_done" in p.stdout and ds in p.stdout, p.stdout
    # --grey: a second file, one channel.
    grey = json.loads(hone(bins, ctl, "dataset", "convert", ds, "--size", "16", "--grey",
                           "--no-wait", "--json").stdout)
    assert grey["id"] != cv["id"] and grey["config"]["channels"] == 1, grey
    p = hone(bins, ctl, "job", "wait", grey["id"])
    assert "16x16x1" in verify(bins, grey["config"]["out"])
    # Bad input is refused by the controller with the field named.
    p = hone(bins, ctl, "dataset", "convert", ds, "--size", "4", check=False)
    assert p.returncode == 2 and "size" in p.stderr, (p.returncode, p.stderr)


def train(bins, ctl, root, worker_dir):
    ds = api(ctl, "POST", "/api/v1/datasets", {"name": "pngs", "path": os.path.join(root, "data", "pngs"),
                                               "format": "image_folder"})["id"]
    exp = api(ctl, "POST", "/api/v1/experiments",
              {"name": "e", "network_arch": "cnn", "train_datasets": [ds],
               "specs": {"model": {"input_size": 16}, "train": {"epochs": 1, "batch_size": 8},
                         "data": {"val_size": 8}}})["id"]
    job = api(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"})
    cid = job["convert_job_id"]
    assert cid, job
    p = hone(bins, ctl, "job", "wait", job["id"], "--timeout", "240", check=False)
    cv = api(ctl, "GET", "/api/v1/jobs/" + cid)
    assert cv["status"] == "done", cv
    t = api(ctl, "GET", "/api/v1/jobs/" + job["id"])
    # Leased only after the convert job ended.
    assert t["started_unix"] >= cv["finished_unix"], (t, cv)
    with open(os.path.join(worker_dir, "specs", job["id"] + ".json")) as f:
        spec = json.load(f)  # the lease's flat spec, as the trainer read it
    assert spec["data.packed"] == cv["config"]["out"], spec
    # the same set as a tar upload (`hone dataset upload`): stored, then converted like it
    tar = os.path.join(root, "kitti.tar")
    subprocess.run(["tar", "--format=ustar", "-cf", tar, "-C", os.path.join(root, "data", "kitti"),
                    "."], check=True)
    up = json.loads(hone(bins, ctl, "dataset", "upload", tar, "--name", "up", "--type",
                         "object_detection", "--format", "kitti", "--json").stdout)
    assert up["format"] == "kitti" and up["stats"]["boxes"] == NBOXES, up
    assert up["stats"]["class_names"] == sorted(CLASSES), up  # the classes found
    p = hone(bins, ctl, "dataset", "convert", up["id"], "--size", "64")
    assert "packed 24 images" in p.stdout, p.stdout
    out = [j for j in api(ctl, "GET", "/api/v1/jobs?action=convert")["jobs"]
           if j["dataset_id"] == up["id"]][0]["config"]["out"]
    v = verify(bins, out)
    assert "classes: a,c b\n" in v and "boxes: %d" % NBOXES in v, v
    verify(bins, cv["config"]["out"])
    assert p.returncode == 0 and t["status"] == "done", (
        "the train job on the packed file did not succeed (hone-train must load data.packed):\n"
        "%s\n%s\n%s" % (p.stdout, p.stderr, t.get("error")))


CLASSES = ["b", "a,c"]  # not the order found (a,c before b); a name hone-pack must not split


def kitti_setup(ctl, root):
    ds = api(ctl, "POST", "/api/v1/datasets",
             {"name": "det", "type": "object_detection", "format": "kitti",
              "path": os.path.join(root, "data", "kitti"), "classes": CLASSES})
    assert ds["stats"]["class_names"] == CLASSES, ds
    return ds["id"]


def kitti_train(bins, ctl, ds):
    exp = api(ctl, "POST", "/api/v1/experiments",
              {"name": "d", "network_arch": "detectnet_v2", "train_datasets": [ds],
               "specs": {"model": {"input_size": 64, "width": 8},
                         "train": {"epochs": 1, "batch_size": 8}, "data": {"val_size": 4}}})["id"]
    job = api(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"})
    assert job["convert_job_id"], job
    p = hone(bins, ctl, "job", "wait", job["id"], "--timeout", "240", check=False)
    t = api(ctl, "GET", "/api/v1/jobs/" + job["id"])
    assert p.returncode == 0 and t["status"] == "done", (p.stdout, p.stderr, t)
    assert "test_map" in t["result"], t
    return job, api(ctl, "GET", "/api/v1/jobs/" + job["convert_job_id"])


def kitti(bins, ctl, root, worker_dir):
    ds = kitti_setup(ctl, root)
    p = hone(bins, ctl, "dataset", "convert", ds, "--size", "64")
    assert "created convert job" in p.stdout and "packed 24 images" in p.stdout, p.stdout
    cv = api(ctl, "GET", "/api/v1/jobs?action=convert")["jobs"][0]
    assert cv["status"] == "done", cv
    v = verify(bins, cv["config"]["out"])
    assert "24 images 64x64x3" in v and "classes: b a,c\n" in v, v
    assert "boxes: %d" % NBOXES in v, v
    job, cv2 = kitti_train(bins, ctl, ds)
    assert cv2["id"] == cv["id"], (cv2, cv)  # reused: no second convert
    assert len(api(ctl, "GET", "/api/v1/jobs?action=convert")["jobs"]) == 1
    with open(os.path.join(worker_dir, "specs", job["id"] + ".json")) as f:
        spec = json.load(f)  # the lease's flat spec, as the trainer read it
    assert spec["data.packed"] == cv["config"]["out"], spec
    # the same set as a tar upload (`hone dataset upload`): stored, then converted like it
    tar = os.path.join(root, "kitti.tar")
    subprocess.run(["tar", "--format=ustar", "-cf", tar, "-C", os.path.join(root, "data", "kitti"),
                    "."], check=True)
    up = json.loads(hone(bins, ctl, "dataset", "upload", tar, "--name", "up", "--type",
                         "object_detection", "--format", "kitti", "--json").stdout)
    assert up["format"] == "kitti" and up["stats"]["boxes"] == NBOXES, up
    assert up["stats"]["class_names"] == sorted(CLASSES), up  # the classes found
    p = hone(bins, ctl, "dataset", "convert", up["id"], "--size", "64")
    assert "packed 24 images" in p.stdout, p.stdout
    out = [j for j in api(ctl, "GET", "/api/v1/jobs?action=convert")["jobs"]
           if j["dataset_id"] == up["id"]][0]["config"]["out"]
    v = verify(bins, out)
    assert "classes: a,c b\n" in v and "boxes: %d" % NBOXES in v, v


def kitti_http(bins, ctl, root, worker_dir, log):
    ds = kitti_setup(ctl, root)
    job, cv = kitti_train(bins, ctl, ds)
    name = os.path.basename(cv["config"]["out"])
    assert cv["status"] == "done" and name == "64x64x3.hpk", cv
    text = open(log, errors="replace").read()
    assert "job %s: dataset %s: 48 file(s) downloaded" % (cv["id"], ds) in text, text
    assert "job %s: packed file %s uploaded" % (cv["id"], name) in text, text
    assert "job %s: dataset %s: 1 file(s) downloaded" % (job["id"], ds) in text, text
    mine = open(os.path.join(worker_dir, "jobs", cv["id"], name), "rb").read()
    assert open(cv["config"]["out"], "rb").read() == mine
    v = verify(bins, cv["config"]["out"])
    assert "classes: b a,c\n" in v and "boxes: %d" % NBOXES in v, v


NBOXES = 36  # write_kitti's boxes for 24 images


def main():
    if len(sys.argv) != 7 or sys.argv[1] not in ("cli", "train", "kitti", "kitti_http"):
        print(__doc__)
        return 2
    mode = sys.argv[1]
    bins = dict(zip(("hone", "ctl", "worker", "train", "pack"),
                    (os.path.abspath(a) for a in sys.argv[2:])))
    root = tempfile.mkdtemp(prefix="hone-convert-")
    write_folder(os.path.join(root, "data", "pngs"), classes=2, per_class=20, size=24, rgb=True)
    assert write_kitti(os.path.join(root, "data", "kitti"), 24, 64, CLASSES) == NBOXES
    ctl = ControllerProcess(bins["ctl"], os.path.join(root, "data"))  # pngs/ is in its data root
    ctl.start()
    http = ["--storage", "http", "-v"] if mode == "kitti_http" else []
    w = WorkerProcess(bins["worker"], bins["train"], root, "w1", ctl.base,
                      extra=["--packer", bins["pack"]] + http).start()
    try:
        if mode == "cli":
            cli(bins, ctl, root)
        elif mode == "train":
            train(bins, ctl, root, os.path.join(root, "w-w1"))
        elif mode == "kitti":
            kitti(bins, ctl, root, os.path.join(root, "w-w1"))
        else:
            kitti_http(bins, ctl, root, os.path.join(root, "w-w1"), w.log_path)
    except BaseException:
        time.sleep(0.2)
        sys.stderr.write("---- controller log\n%s\n---- worker log\n%s\n" % (
            ctl.tail(), open(w.log_path, errors="replace").read()[-4000:]))
        raise
    finally:
        w.stop()
        ctl.stop()
    print("convert %s: ok" % mode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
