"""`hone dataset upload FOLDER` (issue 30): the CLI packs the folder's contents itself (a temporary
ustar, gone afterwards) and the controller stores exactly its files, the format guessed and printed;
a link to a file goes as the file (tar -h), a name past ustar's 100 bytes goes through the prefix
field; a link to a folder is refused before anything is sent, with the path named. An archive made
by hand (`tar czf`) still goes as it is.
Usage: test_cli_upload_folder.py path/to/hone path/to/hone-controller"""
import os
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "controller"))
from hone_test import Controller, tempdir  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from pngfolder import write_folder  # noqa: E402


def files_of(root):
    out = {}
    for dp, _, fns in os.walk(root):
        for f in fns:
            p = os.path.join(dp, f)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def main():
    hone_bin, ctl_bin = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    d = tempdir()
    pets = os.path.join(d, "pets")
    write_folder(pets, classes=2, per_class=3, size=16)
    long_cls = "c" * 90  # class/<image> past 100 bytes: the ustar prefix field
    os.makedirs(os.path.join(pets, long_cls))
    for i in range(2):
        with open(os.path.join(pets, "class0", "%d.png" % i), "rb") as f:
            data = f.read()
        with open(os.path.join(pets, long_cls, "i" * 20 + "%d.png" % i), "wb") as f:
            f.write(data)
    os.symlink(os.path.join(pets, "class1", "0.png"), os.path.join(pets, "class1", "link.png"))
    tmp = os.path.join(d, "tmp")
    os.makedirs(tmp)
    data = os.path.join(d, "data")
    c = Controller(ctl_bin, data).start()
    env = {k: v for k, v in os.environ.items() if k not in ("HONE_URL", "HONE_TOKEN")}
    env.update(HONE_CONFIG=os.path.join(d, "none"), TMPDIR=tmp)

    def hone(*args):
        return subprocess.run([hone_bin, "--url", c.base] + list(args), capture_output=True,
                              text=True, timeout=120, env=env)
    try:
        r = hone("dataset", "upload", pets, "--name", "pets")
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert "format: image_folder (guessed from the folder's shape" in r.stdout, r.stdout
        assert "3 classes" in r.stdout, r.stdout
        ds = c.ok("GET", "/api/v1/datasets")["datasets"][0]
        assert files_of(ds["path"]) == files_of(pets), sorted(files_of(ds["path"]))
        assert not os.path.islink(os.path.join(ds["path"], "class1", "link.png"))
        assert os.listdir(tmp) == [], ("temporary archive left", os.listdir(tmp))
        # a hand-made .tgz goes as it is
        tgz = os.path.join(d, "pets.tgz")
        with tarfile.open(tgz, "w:gz", dereference=True) as t:  # as tar -h
            t.add(pets, "pets")
        r = hone("dataset", "upload", tgz, "--name", "tgz")
        assert r.returncode == 0 and "format: image_folder" in r.stdout, (r.stdout, r.stderr)
        # a link to a folder: refused here, nothing sent
        os.symlink(os.path.join(pets, "class0"), os.path.join(pets, "again"))
        r = hone("dataset", "upload", pets, "--name", "loop")
        assert r.returncode == 1 and "again: a link to a folder" in r.stderr, (r.stdout, r.stderr)
        assert len(c.ok("GET", "/api/v1/datasets")["datasets"]) == 2
        assert os.listdir(tmp) == [], ("temporary archive left", os.listdir(tmp))
    finally:
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
