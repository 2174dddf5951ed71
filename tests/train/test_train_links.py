#!/usr/bin/python3
"""hone-train reads no file through a symbolic link out of its folder (issue 26, item 2), on a tiny
generated PNG folder (standard library only, CPU):
1. --infer FOLDER: a link to a passwd-like file outside, a link to an image outside, a link to a
   folder of images outside: none is labelled, each is skipped with a log line naming it as a link,
   and no byte of the files behind them appears in the log (the old walk followed them and logged
   the first four bytes of a file that is not an image); the folder's own images are labelled,
   hard links among them (the worker's downloaded folders) included.
2. An image folder to train on with a link to a file outside: refused, naming the link, no byte of
   it shown.
Usage: test_train_links.py HONE_TRAIN
"""
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from pngfolder import write_folder  # noqa: E402
import hone_train  # noqa: E402
from hone_train import check, failures, sets  # noqa: E402

TRAIN = sys.argv[1]
SECRET = b"root:x:0:0:the secret line:/root:/bin/sh\n"
MLP = {"network": "mlp", "model.hidden": 8, "train.epochs": 1, "train.batch_size": 8,
       "train.lr": 0.05, "train.seed": 3, "data.format": "image_folder", "data.val_size": 4}


def run(args, want_ok=True):
    return hone_train.run(TRAIN, "cpu", args, want_ok)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        write_folder(data, classes=2, per_class=8, size=8)
        model = os.path.join(tmp, "model")
        run(sets(dict(MLP, **{"data.path": data})) + ["--out", model])
        outside = os.path.join(tmp, "outside")
        write_folder(outside, classes=1, per_class=2, size=8)
        with open(os.path.join(outside, "passwd"), "wb") as f:
            f.write(SECRET)

        # 1. --infer on a folder with links out of it
        infer = os.path.join(tmp, "infer")
        os.makedirs(os.path.join(infer, "sub"))
        shutil.copy(os.path.join(data, "class0", "0.png"), os.path.join(infer, "a.png"))
        os.link(os.path.join(infer, "a.png"), os.path.join(infer, "sub", "hard.png"))
        os.symlink(os.path.join(outside, "passwd"), os.path.join(infer, "leak.png"))
        os.symlink(os.path.join(outside, "class0", "0.png"), os.path.join(infer, "theirs.png"))
        os.symlink(os.path.join(outside, "class0"), os.path.join(infer, "dir"))
        lab, err = run(["--infer", model, infer])
        files = sorted(l["file"] for l in lab)
        check(files == ["a.png", "sub/hard.png"], "labelled through links: %s\n%s" % (files, err))
        for name in ("leak.png", "theirs.png", "dir"):
            check("%s/%s: a symbolic link (not followed)" % (infer, name) in err,
                  "no log line for %s: %s" % (name, err))
        check("72 6f 6f 74" not in err and "root:x" not in err,
              "the log shows bytes of a file behind a link: %s" % err)

        # 2. an image folder to train on with a link to a file outside it
        os.symlink(os.path.join(outside, "passwd"), os.path.join(data, "class1", "leak.png"))
        _, err = run(sets(dict(MLP, **{"data.path": data})), want_ok=False)
        check("leak.png" in err and "outside" in err and "root:x" not in err and
              "72 6f 6f 74" not in err, "folder: %s" % err)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("train links: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
