#!/usr/bin/python3
"""model.pretrained through the real hone-train on the CPU, on small sets of real Fashion-MNIST
items (tests/data/gen_detect.py: --classify for single items on photographs, --tiny for KITTI):
1. A ResNet-18 classifier (72 px: the ImageNet stem, width 16, 1 epoch) starts a detectnet_v2 of
   the same width: the log says every layer but the head was copied (its stem and stages 1-3),
   and the first epoch's training loss differs from a random start's.
2. The same network on the same classes starts from it: every layer copied; on a 3-class subset
   of the set: every layer but the last dense (its class count differs); a cnn (no batch norm, so
   no norm statistics) from a cnn on Fashion-MNIST's IDX files: every layer.
3. A folder that does not exist, a model with no layer that fits (the cnn for a detectnet_v2) and
   a model.bin cut short fail with exit 1 and an error naming model.pretrained; nothing is trained.
4. --pack-file refuses packed trials with model.pretrained (a pretrained start is the solo
   trainer's), naming the key.
Usage: test_train_pretrained.py HONE_TRAIN. Skips (77) without Pillow, Fashion-MNIST or photos.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import PIL  # noqa: F401 - gen_detect.py needs it
except ImportError:
    print("SKIP: no Pillow for this python (apt-get install python3-pil)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "data", "gen_detect.py")
TRAIN = sys.argv[1]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def train(*sets, out=None, expect=0):
    args = [TRAIN, "--device", "cpu", "--threads", "2"]
    for s in sets:
        args += ["--set", s]
    if out:
        args += ["--out", out]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != expect:
        print(p.stderr[-2000:])
    check(p.returncode == expect, "hone-train %s: exit %d, want %d" % (" ".join(sets[:2]),
                                                                      p.returncode, expect))
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    return p.stderr, lines


def copied(err):
    m = re.search(r"model\.pretrained: copied (\d+) of (\d+) layers \((\d+) parameters\)", err)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def main():
    tmp = tempfile.mkdtemp(prefix="hone-pretrained-")
    try:
        cls, det = os.path.join(tmp, "cls"), os.path.join(tmp, "det")
        for args in (["--classify", "--count", "360", "--jobs", "2", cls], ["--tiny", det]):
            g = subprocess.run([sys.executable, GEN] + args, capture_output=True, text=True)
            if g.returncode != 0:
                print("SKIP: gen_detect.py: " + g.stderr.strip())
                return 77
        res = ["network=resnet18", "data.format=image_folder", "model.input_size=72",
               "model.width=16", "train.epochs=1", "train.batch_size=32", "data.val_size=60"]
        m1 = os.path.join(tmp, "m1")
        train(*res, "data.path=" + cls, out=m1)
        check(os.path.isfile(os.path.join(m1, "model.bin")), "the classifier wrote model.bin")

        # 1. classifier -> detector
        dn = ["network=detectnet_v2", "data.format=kitti", "data.path=" + det, "model.width=16",
              "train.epochs=1", "train.batch_size=16"]
        err, lines = train(*dn, "model.pretrained=" + m1, out=os.path.join(tmp, "d1"))
        c = copied(err)
        check(c is not None and c[0] == c[1] - 1 and c[2] > 100000,
              "detectnet_v2 from the classifier: every layer but the head (%s)" % (c,))
        # ... and a detector from that detector (fine-tuning a detectnet_v2): every layer
        err, _ = train(*dn, "model.pretrained=" + os.path.join(tmp, "d1"),
                       out=os.path.join(tmp, "d2"))
        c = copied(err)
        check(c is not None and c[0] == c[1] and "initialised fresh" not in err,
              "detectnet_v2 from detectnet_v2: every layer (%s)" % (c,))
        err0, lines0 = train(*dn, out=os.path.join(tmp, "d0"))
        check(copied(err0) is None, "a random start copies nothing")
        l1 = [x["train_loss"] for x in lines if "train_loss" in x]
        l0 = [x["train_loss"] for x in lines0 if "train_loss" in x]
        check(bool(l1) and bool(l0) and l1[0] != l0[0],
              "the first epoch's loss differs from a random start's (%s, %s)" % (l1, l0))

        # 2. same network: all layers; fewer classes: all but the last dense
        err, _ = train(*res, "data.path=" + cls, "model.pretrained=" + m1,
                       out=os.path.join(tmp, "m2"))
        c = copied(err)
        check(c is not None and c[0] == c[1], "the same network: every layer (%s)" % (c,))
        sub = os.path.join(tmp, "cls3")
        for split in ("train", "test"):
            for name in sorted(os.listdir(os.path.join(cls, split)))[:3]:
                shutil.copytree(os.path.join(cls, split, name), os.path.join(sub, split, name))
        err, _ = train(*res[:-1], "data.val_size=20", "data.path=" + sub,
                       "model.pretrained=" + m1, out=os.path.join(tmp, "m3"))
        c = copied(err)
        check(c is not None and c[0] == c[1] - 1,
              "3 classes from 10: every layer but the last dense (%s)" % (c,))

        # ... and a network without batch norm (no norm statistics at all): the cnn on IDX
        fm = os.environ.get("HONE_FMNIST_DIR", "/usr/share/datasets/fashion-mnist")
        cnn = ["network=cnn", "data.path=" + fm, "data.train_limit=512", "data.val_size=256",
               "data.test_limit=256", "train.epochs=1"]
        m4 = os.path.join(tmp, "m4")
        train(*cnn, out=m4)
        err, _ = train(*cnn, "model.pretrained=" + m4, out=os.path.join(tmp, "m5"))
        c = copied(err)
        check(c is not None and c[0] == c[1], "the cnn (no norm statistics): every layer (%s)"
              % (c,))

        # 3. bad models
        err, lines = train(*dn, "model.pretrained=" + os.path.join(tmp, "nowhere"), expect=1)
        check("model.pretrained" in err and not any("epoch" in x for x in lines),
              "a missing folder names model.pretrained: %s" % err.strip().splitlines()[-1:])
        err, _ = train(*dn, "model.pretrained=" + m4, expect=1)
        check("model.pretrained" in err and "no layer" in err,
              "a cnn cannot start a detectnet_v2: %s" % err.strip().splitlines()[-1:])
        cut = os.path.join(tmp, "cut")
        shutil.copytree(m1, cut)
        with open(os.path.join(cut, "model.bin"), "r+b") as f:
            f.truncate(os.path.getsize(os.path.join(cut, "model.bin")) // 2)
        err, _ = train(*dn, "model.pretrained=" + cut, expect=1)
        check("model.pretrained" in err, "a model.bin cut short names model.pretrained: %s"
              % err.strip().splitlines()[-1:])

        # 4. no packed trials from a pretrained model
        pf = os.path.join(tmp, "pack.txt")
        with open(pf, "w") as f:
            for i in range(2):
                f.write(json.dumps(["--device", "cpu", "--set", "network=cnn", "--set",
                                    "data.path=" + fm, "--set", "data.train_limit=256", "--set",
                                    "train.epochs=1", "--set", "model.pretrained=" + m1,
                                    "--out", os.path.join(tmp, "p%d" % i)]) + "\n")
        p = subprocess.run([TRAIN, "--pack-file", pf], capture_output=True, text=True)
        check(p.returncode != 0 and "model.pretrained" in p.stderr,
              "--pack-file refuses model.pretrained: exit %d: %s"
              % (p.returncode, p.stderr.strip().splitlines()[-1:]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("test_train_pretrained: %s" % ("FAILED: %d" % len(failures) if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
