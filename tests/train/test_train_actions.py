#!/usr/bin/python3
"""hone-train --evaluate and --infer through the CLI, on real Fashion-MNIST images (CPU; on a GPU
machine HONE_TEST_DEVICE=cuda runs it on the GPU and checks the CPU's evaluation of the same model):
1. An mlp trained on the IDX files (--out): --evaluate on its own test part gives the train run's
   test accuracy and loss, and a confusion matrix whose diagonal is that accuracy.
2. --infer on the same 500 test images written as PNGs (28x28 grey packs bit-exactly, and the
   normalisation comes from model.json) labels every image; their confusion matrix against the
   true labels is evaluate's, count for count. A file that is not an image is skipped.
3. An mlp trained on a PNG folder: evaluate names the class folders; --infer on the folder's
   test/ split gives evaluate's matrix again (labels from the class folder names).
4. The folder model evaluated on another folder (data.path, other test images, another training
   part, so other statistics were it to recompute them): its matrix is --infer's on that test/.
5. Refusals, exit 1 naming what is wrong: the IDX model on the folder (class names), a spec of
   another network, a folder without a model.
Usage: test_train_actions.py HONE_TRAIN
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "data"))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import fmnist_folder  # noqa: E402
from pngfolder import png_bytes  # noqa: E402
import hone_train  # noqa: E402
from hone_train import check, failures, sets  # noqa: E402

TRAIN = sys.argv[1]
DEVICE = os.environ.get("HONE_TEST_DEVICE", "cpu")  # tests/gpu: cuda


def run(args, want_ok=True):
    """hone-train ARGS on DEVICE; returns (JSON lines of stdout, stderr)."""
    return hone_train.run(TRAIN, DEVICE, args, want_ok)


def write_pngs(fm, stem, lo, hi, root, by_class):
    """t10k/train images lo..hi as PNGs under root (in class folders when by_class); returns
    [(relative path, label)]."""
    (n, h, w), px = fmnist_folder.read_idx(fm, stem + "-images-idx3-ubyte")
    _, labels = fmnist_folder.read_idx(fm, stem + "-labels-idx1-ubyte")
    out = []
    for i in range(lo, min(hi, n)):
        rel = "%05d.png" % i
        if by_class:
            rel = os.path.join(fmnist_folder.CLASSES[labels[i]], rel)
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        img = px[i * h * w:(i + 1) * h * w]
        with open(path, "wb") as f:
            f.write(png_bytes(w, h, [img[y * w:(y + 1) * w] for y in range(h)], False))
        out.append((rel, labels[i]))
    return out


def matrix(pairs, k):
    m = [[0] * k for _ in range(k)]
    for label, pred in pairs:
        m[label][pred] += 1
    return m


MLP = {"network": "mlp", "model.hidden": 64, "train.epochs": 2, "train.batch_size": 64,
       "train.lr": 0.05, "train.seed": 3}


def main():
    fm = fmnist_folder.find_fmnist()
    if not fm:
        print("SKIP: no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        # 1. IDX model, evaluated on its own test part
        m_idx = os.path.join(tmp, "m_idx")
        lines, err = run(sets(dict(MLP, **{"data.path": fm, "data.train_limit": 2000,
                                           "data.val_size": 500, "data.test_limit": 500}))
                         + ["--out", m_idx])
        done = lines[-1] if lines else {}
        check(done.get("event") == "done", "training: no done line: %s" % err)
        check(os.path.exists(os.path.join(m_idx, "model.json")), "no model.json beside model.bin")
        ev, err = run(["--evaluate", m_idx])
        ev = ev[0] if ev else {}
        check(ev.get("event") == "evaluate" and ev.get("images") == 500, "evaluate: %s %s"
              % (ev, err))
        if DEVICE != "cpu" and ev:
            # the same model evaluated by the CPU backend: the same numbers up to float rounding
            p = subprocess.run([TRAIN, "--device", "cpu", "--evaluate", m_idx],
                               capture_output=True, text=True)
            cpu = json.loads(p.stdout) if p.returncode == 0 else {}
            print("%s evaluate %.4f, cpu evaluate %s" % (DEVICE, ev["accuracy"],
                                                        cpu.get("accuracy")))
            check(cpu and abs(cpu["accuracy"] - ev["accuracy"]) <= 0.004,
                  "cpu vs %s evaluate: %s vs %s" % (DEVICE, cpu.get("accuracy"), ev["accuracy"]))
        if ev and done:
            print("train run: test %.4f loss %.4f; evaluate: %.4f loss %.4f" % (
                done["test_accuracy"], done["test_loss"], ev["accuracy"], ev["loss"]))
            check(abs(ev["accuracy"] - done["test_accuracy"]) < 1e-6,
                  "evaluate accuracy %r != the train run's %r" % (ev["accuracy"],
                                                                   done["test_accuracy"]))
            check(abs(ev["loss"] - done["test_loss"]) < 1e-5 * max(1, done["test_loss"]),
                  "evaluate loss %r != the train run's %r" % (ev["loss"], done["test_loss"]))
            cm = ev["confusion_matrix"]
            check(sum(map(sum, cm)) == 500, "confusion matrix counts %d" % sum(map(sum, cm)))
            check(abs(sum(cm[i][i] for i in range(10)) / 500 - ev["accuracy"]) < 1e-6,
                  "the matrix's diagonal is not the accuracy")
            check(ev["classes"] == [str(i) for i in range(10)], "idx classes %s" % ev["classes"])
            for i in range(10):
                row = sum(cm[i])
                want = cm[i][i] / row if row else None
                got = ev["per_class_accuracy"][i]
                check((got is None and want is None) or abs(got - want) < 1e-9,
                      "per-class accuracy %d: %r, want %r" % (i, got, want))

        # 2. --infer on the same 500 test images as PNGs, with a stray non-image
        imgs = os.path.join(tmp, "imgs")
        truth = dict(write_pngs(fm, "t10k", 0, 500, imgs, False))
        with open(os.path.join(imgs, "notes.txt"), "w") as f:
            f.write("not an image\n")
        lab, err = run(["--infer", m_idx, imgs])
        check(len(lab) == 500, "infer: %d lines for 500 images: %s" % (len(lab), err))
        check("skipped" in err and "notes.txt" in err, "the text file was not reported: " + err)
        check([l["file"] for l in lab] == sorted(truth), "infer: files out of name order")
        check(all(l["class"] == str(l["class_index"]) and 0.1 <= l["score"] <= 1 for l in lab),
              "infer: class, class_index, score: %s" % lab[:2])
        if ev and lab:
            got = matrix([(truth[l["file"]], l["class_index"]) for l in lab], 10)
            check(got == ev["confusion_matrix"], "infer's matrix != evaluate's:\n%s\n%s"
                  % (got, ev["confusion_matrix"]))
        # data.test_limit of 200: the first 200 of the same images
        ev200, _ = run(["--evaluate", m_idx, "--set", "data.test_limit=200"])
        if ev200 and lab:
            got = matrix([(truth[l["file"]], l["class_index"]) for l in lab[:200]], 10)
            check(got == ev200[0]["confusion_matrix"], "test_limit 200: matrices differ")

        # 3. a model trained on a PNG folder
        png = os.path.join(tmp, "png")
        write_pngs(fm, "train", 0, 2000, os.path.join(png, "train"), True)
        test_truth = write_pngs(fm, "t10k", 0, 300, os.path.join(png, "test"), True)
        m_png = os.path.join(tmp, "m_png")
        lines, err = run(sets(dict(MLP, **{"data.format": "image_folder", "data.path": png,
                                           "data.val_size": 300})) + ["--out", m_png])
        done = lines[-1] if lines else {}
        ev, err = run(["--evaluate", m_png])
        ev = ev[0] if ev else {}
        names = sorted(fmnist_folder.CLASSES)
        check(ev.get("classes") == names, "folder classes: %s" % ev.get("classes"))
        if ev and done.get("event") == "done":
            print("folder run: test %.4f; evaluate: %.4f" % (done["test_accuracy"],
                                                            ev["accuracy"]))
            check(abs(ev["accuracy"] - done["test_accuracy"]) < 1e-6,
                  "folder: evaluate %r != train %r" % (ev["accuracy"], done["test_accuracy"]))
        lab, err = run(["--infer", m_png, os.path.join(png, "test")])
        check(len(lab) == len(test_truth), "folder infer: %d lines: %s" % (len(lab), err))
        if ev and lab:
            pairs = [(names.index(l["file"].split("/")[0]), names.index(l["class"])) for l in lab]
            check(matrix(pairs, 10) == ev["confusion_matrix"], "folder: infer's matrix differs")

        # 4. the folder model on another folder: other test images, another training part
        other = os.path.join(tmp, "other")
        write_pngs(fm, "train", 30000, 31000, os.path.join(other, "train"), True)
        write_pngs(fm, "t10k", 5000, 5400, os.path.join(other, "test"), True)
        ev, err = run(["--evaluate", m_png, "--set", "data.path=" + other])
        ev = ev[0] if ev else {}
        check(ev.get("images") == 400, "other folder: %s %s" % (ev, err))
        lab, err = run(["--infer", m_png, os.path.join(other, "test")])
        if ev and lab:
            pairs = [(names.index(l["file"].split("/")[0]), names.index(l["class"])) for l in lab]
            check(matrix(pairs, 10) == ev["confusion_matrix"], "other folder: matrices differ")
            check(ev["accuracy"] > 0.5, "other folder accuracy %.3f" % ev["accuracy"])

        # 4b. the IDX model on a flat folder whose classes are named as its own ("0".."9"): every
        # image is a test image, read at the model's 28x28 (the spec leaves the size to the data)
        flat = os.path.join(tmp, "flat")
        flat_truth = write_pngs(fm, "t10k", 7000, 7300, flat, False)
        for rel, label in flat_truth:
            os.makedirs(os.path.join(flat, str(label)), exist_ok=True)
            os.rename(os.path.join(flat, rel), os.path.join(flat, str(label), rel))
        ev, err = run(["--evaluate", m_idx, "--set", "data.format=image_folder",
                       "--set", "data.path=" + flat, "--set", "data.test_limit=0"])
        ev = ev[0] if ev else {}
        check(ev.get("images") == 300, "flat folder: %s %s" % (ev.get("images"), err))
        lab, err = run(["--infer", m_idx, flat])
        if ev and lab:
            pairs = [(int(l["file"].split("/")[0]), l["class_index"]) for l in lab]
            check(matrix(pairs, 10) == ev["confusion_matrix"], "flat folder: matrices differ")
            print("IDX model on a flat folder: %.4f" % ev["accuracy"])

        # 5. refusals
        _, err = run(["--evaluate", m_idx, "--set", "data.format=image_folder",
                      "--set", "data.path=" + png, "--set", "model.input_size=32"], want_ok=False)
        check("the model takes 28x28" in err, "idx model on a 32x32 folder: " + err)
        _, err = run(["--evaluate", m_idx, "--set", "data.format=image_folder",
                      "--set", "data.path=" + png], want_ok=False)
        check("class 0 is 'Ankle_boot', the model's is '0'" in err, "idx model on a folder: " + err)
        _, err = run(["--evaluate", m_idx, "--set", "network=cnn"], want_ok=False)
        check("does not match" in err, "another network: " + err)
        _, err = run(["--infer", imgs, imgs], want_ok=False)
        check("spec.yaml" in err, "no model: " + err)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
