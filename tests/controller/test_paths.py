"""Paths confined at every read, not only at create (issue 26, item 2), against a real controller
with auth on and a data root that holds the data dir (so that a link staying inside the root is the
hard case):
1. a plain user's dataset folder replaced by a symbolic link, to a folder outside the roots (a
   passwd-like file), to the data dir (hone.db), to another user's dataset: the manifest and the
   file GETs are 409 naming `path` and serve no byte of it; the lease does not hand the path out:
   the job fails with the path named; an inference job's folder likewise (409 naming `folder`;
   a link inside it is not followed at all, as hone-train --infer does not);
2. a file inside the folder replaced by a link out of it is neither listed nor served;
3. the data dir is an allow-list: a user names no path inside it (workers/, logs/, ...) nor above
   it, 422 naming `path` (`folder` for inference), nothing stored;
4. deleting an uploaded dataset removes its folder and packed files; deleting a registered one
   leaves its folder alone (its packed files go); a controller stopped between the row's delete
   and the files' removal (renamed to tombstones at once) leaves them to the next start's sweep,
   which removes only tombstones: a folder whose row is missing (a store restored from a backup)
   stays, as does every folder a dataset row names."""
import io
import os
import shutil
import sqlite3
import sys
import tarfile
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402
from pngfolder import write_folder  # noqa: E402

ADMIN_KEY = "adm-s3cret"
ADM = {"Authorization": "Bearer " + ADMIN_KEY}
SECRET = b"root:x:0:0:the secret line:/root:/bin/sh\n"


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def q(name):
    return urllib.parse.quote(name, safe="")


def swap(folder, target):
    """Replaces folder by a symbolic link to target; returns where the real folder went."""
    kept = folder + ".real"
    os.rename(folder, kept)
    os.symlink(target, folder)
    return kept


def unswap(folder, kept):
    os.unlink(folder)
    os.rename(kept, folder)


def refused(ctl, hdr, url, field, path, secret=SECRET):
    st, js = ctl.req("GET", url, headers=hdr)
    check(st == 409 and isinstance(js, dict) and js["error"]["field"] == field and
          path in js["error"]["message"], (url, st, js))
    check(secret not in repr(js).encode(), ("bytes served", url, js))


def tar_idx(src):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for f in sorted(os.listdir(src)):
            t.add(os.path.join(src, f), arcname=f)
    return bio.getvalue()


def user(ctl, name):
    u = ctl.ok("POST", "/api/v1/users", {"name": name}, headers=ADM)
    k = ctl.ok("POST", "/api/v1/users/%s/keys" % u["id"], headers=ADM)
    tok = ctl.ok("POST", "/api/v1/login", {"key": k["key"]})["token"]
    return {"Authorization": "Bearer " + tok}


def worker(ctl, name):
    w = FakeWorker(ctl, name)
    st, js = ctl.req("POST", "/api/v1/workers", {"name": name, "resources": {"cpus": 1}},
                     headers={"Authorization": "Bearer enrol-me"})
    check(st == 201, (st, js))
    w.id, w.headers = js["id"], {"Authorization": "Bearer " + js["token"]}
    return w


def confined(ctl, d, data, out, alice, bob):
    """Cases 1 and 2: a folder swapped for a link after it was registered."""
    mine = os.path.join(d, "alice", "ds")
    write_idx(mine)
    theirs = os.path.join(d, "bob", "ds")
    write_idx(theirs)
    open(os.path.join(theirs, "model.bin"), "wb").write(b"bob's weights")
    ds = ctl.ok("POST", "/api/v1/datasets", {"name": "a", "path": mine}, headers=alice)["id"]
    ctl.ok("POST", "/api/v1/datasets", {"name": "b", "path": theirs}, headers=bob)
    base = "/api/v1/datasets/%s/files" % ds
    man = ctl.ok("GET", base, headers=alice)
    check(len(man["files"]) == 4, man)
    exp = ctl.ok("POST", "/api/v1/experiments",
                 {"name": "e", "network_arch": "mlp", "train_datasets": [ds],
                  "specs": {"train": {"epochs": 1}, "data": {"val_size": 10}}}, headers=alice)
    job = ctl.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"},
                 headers=alice)

    # (a) outside the roots, (b) the data dir (the store), (c) another user's dataset, (d) a link
    # that stays inside the data root (relative): none is followed
    for target, name, secret in ((out, "passwd", SECRET), (data, "hone.db", b"SQLite format"),
                                 (theirs, "model.bin", b"bob's weights"),
                                 ("../bob/ds", "model.bin", b"bob's weights")):
        kept = swap(mine, target)
        try:
            refused(ctl, alice, base, "path", mine, secret)
            refused(ctl, alice, base + "/" + q(name), "path", mine, secret)
            refused(ctl, ADM, base + "/" + q(name), "path", mine, secret)
        finally:
            unswap(mine, kept)

    # the lease: a worker is not handed a path that leads elsewhere now; the job fails, naming it
    w = worker(ctl, "w1")
    kept = swap(mine, out)
    try:
        check(w.lease() is None, "a lease handed out a dataset path that is a link now")
    finally:
        unswap(mine, kept)
    js = ctl.ok("GET", "/api/v1/jobs/%s" % job["id"], headers=alice)
    check(js["status"] == "failed" and mine in (js.get("error") or ""), js)

    # 2. a file inside replaced by a link out of the folder: neither listed nor served
    os.symlink(os.path.join(out, "passwd"), os.path.join(mine, "leak"))
    os.symlink("../../bob/ds/model.bin", os.path.join(mine, "theirs"))
    man = ctl.ok("GET", base, headers=alice)
    names = [f["name"] for f in man["files"]]
    check(len(names) == 4 and "leak" not in names and "theirs" not in names, names)
    for name in ("leak", "theirs"):
        st, js = ctl.req("GET", base + "/" + name, headers=alice)
        check(st == 404 and SECRET not in repr(js).encode(), (name, st, js))
    return w, exp["id"]


def inference(ctl, d, data, out, w):
    """Case 1 for an inference job's folder: the input routes and the lease."""
    reg = os.path.join(d, "reg")
    write_idx(reg)
    ds = ctl.ok("POST", "/api/v1/datasets", {"name": "r", "path": reg}, headers=ADM)["id"]
    exp = ctl.ok("POST", "/api/v1/experiments",
                 {"name": "e", "network_arch": "mlp", "train_datasets": [ds],
                  "specs": {"train": {"epochs": 1}, "data": {"val_size": 10}}}, headers=ADM)["id"]
    ctl.ok("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"}, headers=ADM)
    job = w.lease()
    check(job is not None, "no train job leased")
    for f in ("model.bin", "model.json", "spec.yaml"):
        open(os.path.join(data, "artifacts", job["id"], f), "w").write("x")
    w.complete(job, "done")
    imgs = os.path.join(d, "imgs")
    write_folder(imgs, classes=2, per_class=2, size=16)
    inf = ctl.ok("POST", "/api/v1/experiments/%s/jobs" % exp,
                 {"action": "inference", "parent_job_id": job["id"], "folder": imgs},
                 headers=ADM)["id"]
    inp = "/api/v1/jobs/%s/input" % inf
    # a link in an inference folder is not followed, even one that stays inside (as hone-train
    # --infer does not)
    os.symlink("class0/0.png", os.path.join(imgs, "alias.png"))
    names = [f["name"] for f in ctl.ok("GET", inp, headers=ADM)["files"]]
    check(len(names) == 4 and "alias.png" not in names, ("the input before the swap", names))
    st, js = ctl.req("GET", inp + "/alias.png", headers=ADM)
    check(st == 404, ("a link in the input served", st))
    kept = swap(imgs, out)
    try:
        refused(ctl, ADM, inp, "folder", imgs)
        refused(ctl, ADM, inp + "/passwd", "folder", imgs)
        check(w.lease() is None, "a lease handed out an inference folder that is a link now")
    finally:
        unswap(imgs, kept)
    js = ctl.ok("GET", "/api/v1/jobs/%s" % inf, headers=ADM)
    check(js["status"] == "failed" and imgs in (js.get("error") or ""), js)


def allow_list(ctl, d, data, alice, w, exp):
    """Case 3: nothing in the data dir is a user's to name."""
    before = ctl.ok("GET", "/api/v1/datasets", headers=alice)["datasets"]
    jobs_before = ctl.ok("GET", "/api/v1/jobs", headers=alice)["jobs"]
    for sub in ("workers/probe", "logs/probe", "artifacts/probe", "datasets/probe", "probe", ""):
        probe = os.path.normpath(os.path.join(data, sub))
        if sub:
            write_idx(probe)
        st, js = ctl.req("POST", "/api/v1/datasets", {"name": "x", "path": probe}, headers=alice)
        check(st == 422 and js["error"]["field"] == "path" and
              "data dir" in js["error"]["message"] and "upload" in js["error"]["message"],
              (sub, st, js))
    check(ctl.ok("GET", "/api/v1/datasets", headers=alice)["datasets"] == before, "stored")
    # an inference folder likewise (her own experiment, with a model)
    job = ctl.ok("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"}, headers=alice)
    jobs_before = ctl.ok("GET", "/api/v1/jobs", headers=alice)["jobs"]
    leased = w.lease()
    check(leased and leased["id"] == job["id"], leased)
    for f in ("model.bin", "model.json", "spec.yaml"):
        open(os.path.join(data, "artifacts", job["id"], f), "w").write("x")
    w.complete(leased, "done")
    jobs_before = ctl.ok("GET", "/api/v1/jobs", headers=alice)["jobs"]
    for sub in ("workers/probe", "logs/probe", ""):
        st, js = ctl.req("POST", "/api/v1/experiments/%s/jobs" % exp,
                         {"action": "inference", "parent_job_id": job["id"],
                          "folder": os.path.normpath(os.path.join(data, sub))}, headers=alice)
        check(st == 422 and js["error"]["field"] == "folder" and
              "data dir" in js["error"]["message"], (sub, st, js))
    check(ctl.ok("GET", "/api/v1/jobs", headers=alice)["jobs"] == jobs_before, "job stored")
    # the admin keeps what it could do
    st, js = ctl.req("POST", "/api/v1/datasets",
                     {"name": "w", "path": os.path.join(data, "workers/probe")}, headers=ADM)
    check(st == 201, ("the admin may", st, js))
    return js["id"]


def deletes(ctl, d, data, alice):
    """Case 4: an uploaded dataset's files go with it; a registered folder stays."""
    src = os.path.join(d, "src")
    write_idx(src)
    st, js = ctl.req("POST", "/api/v1/datasets:upload?name=up&format=idx", raw=tar_idx(src),
                     headers=dict(alice, **{"Content-Type": "application/x-tar"}))
    check(st == 201, (st, js))
    up, up_path = js["id"], js["path"]
    check(os.path.isdir(up_path) and up_path.startswith(os.path.realpath(data)), up_path)
    packed = os.path.join(data, "packed", up)
    os.makedirs(packed)
    open(os.path.join(packed, "16x16x1.hpk"), "wb").write(b"packed")
    ctl.ok("DELETE", "/api/v1/datasets/%s" % up, want=(204,), headers=alice)
    check(not os.path.exists(up_path) and not os.path.exists(packed),
          ("an uploaded dataset's files stayed", os.listdir(os.path.dirname(up_path))))
    reg = os.path.join(d, "kept")
    write_idx(reg)
    rid = ctl.ok("POST", "/api/v1/datasets", {"name": "k", "path": reg}, headers=alice)["id"]
    rpacked = os.path.join(data, "packed", rid)
    os.makedirs(rpacked)
    open(os.path.join(rpacked, "16x16x1.hpk"), "wb").write(b"packed")
    ctl.ok("DELETE", "/api/v1/datasets/%s" % rid, want=(204,), headers=alice)
    check(sorted(os.listdir(reg)) == sorted(os.listdir(src)), "a registered folder was touched")
    check(not os.path.exists(rpacked), "a deleted dataset's packed files stayed")
    # one more upload, whose row goes while the controller is down (killed between the steps)
    st, js = ctl.req("POST", "/api/v1/datasets:upload?name=up2&format=idx", raw=tar_idx(src),
                     headers=dict(alice, **{"Content-Type": "application/x-tar"}))
    check(st == 201, (st, js))
    return js["id"], js["path"]


def main():
    binary = binary_from_argv()
    d = tempdir()
    out = tempdir()  # outside every data root
    open(os.path.join(out, "passwd"), "wb").write(SECRET)
    data = os.path.join(d, "data")
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("auth: {admin_key: %s, worker_token: enrol-me}\ndata_roots: [\"%s\"]\n"
                % (ADMIN_KEY, d))
    ctl = Controller(binary, data, config=cfg).start()
    try:
        alice, bob = user(ctl, "alice"), user(ctl, "bob")
        w, exp = confined(ctl, d, data, out, alice, bob)
        inference(ctl, d, data, out, w)
        admin_ds = allow_list(ctl, d, data, alice, w, exp)
        gone, gone_path = deletes(ctl, d, data, alice)
        # an admin's dataset registered inside datasets/ under an id-like name stays at restart
        mine = os.path.join(data, "datasets", "ds-admins")
        write_idx(mine)
        ctl.ok("POST", "/api/v1/datasets", {"name": "m", "path": mine}, headers=ADM)
        stray = os.path.join(data, "packed", gone)
        os.makedirs(stray)
        # a removal cut by a kill leaves tombstones (sweep.c): the next start removes them
        tombs = [os.path.join(data, "datasets", ".upload-rm-ds-0123456789abcdef"),
                 os.path.join(data, "packed", ".upload-rm-ds-0123456789abcdef")]
        for t in tombs:
            os.makedirs(os.path.join(t, "train"))
            open(os.path.join(t, "train", "x"), "wb").write(b"x")
        ctl.stop()
        # a row the store no longer has (a store restored from a backup): its files are data
        db = sqlite3.connect(os.path.join(data, "hone.db"))
        db.execute("DELETE FROM datasets WHERE id=?", (gone,))
        db.commit()
        db.close()
        ctl = Controller(binary, data, config=cfg).start()
        check(not any(os.path.exists(t) for t in tombs),
              ("the sweep left a cut removal's tombstones", tombs))
        check(os.path.isdir(gone_path) and os.path.isdir(stray),
              "the sweep removed the folders of a dataset whose row it does not have")
        check(os.path.isdir(mine) and os.path.isdir(os.path.join(data, "workers", "probe")),
              "the sweep removed a folder a dataset names")
        check(ctl.ok("GET", "/api/v1/datasets/%s" % admin_ds, headers=ADM)["id"] == admin_ds,
              "the admin's dataset")
    finally:
        if ctl.alive():
            ctl.stop()
        shutil.rmtree(out, ignore_errors=True)
    print("paths: ok")


if __name__ == "__main__":
    main()
