"""Dataset files over HTTP (GET /datasets/{id}/files, /files/{name}, /packed/{name}) against a real
hone-controller, with auth on: the manifest's sha256 is each file's; a download resumes from any
offset (Range: bytes=N-, 206 and Content-Range) and reassembles the file byte for byte; a large
file comes in bounded answers; a range past the end is 416; names out of the folder ('..', dot
files, a symlink out of it) are refused; hashes are cached (a changed file is hashed again); only
the admin or a worker leasing a job that reads the dataset may read it. An artifact upload that
names its SHA-256 (X-Hone-Sha256) is stored only when the body hashes to it (422 otherwise, nothing
left behind)."""
import hashlib
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402

ADMIN = {"Authorization": "Bearer s3cret"}


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def fetch(c, path, headers, chunk_from=0):
    """Downloads path from chunk_from to the end through repeated ranged GETs."""
    out = b""
    pos = chunk_from
    while True:
        st, body = c.req("GET", path, headers=dict(headers, Range="bytes=%d-" % pos))
        if st == 416:
            return out
        assert st == 206, (st, body)
        out += body
        pos += len(body)
        if len(body) == 0:
            return out


def main():
    binary = binary_from_argv()
    root = tempdir()
    data = os.path.join(root, "idx")
    write_idx(data, n_train=200)
    os.makedirs(os.path.join(data, "sub"))
    big = os.path.join(data, "sub", "big.bin")
    with open(big, "wb") as f:  # over one answer's 8 MiB: must come in several pieces
        f.write(os.urandom(9 << 20))
    open(os.path.join(data, ".hidden"), "w").write("not served")
    secret = os.path.join(root, "secret.txt")
    open(secret, "w").write("outside the dataset")
    os.symlink(secret, os.path.join(data, "escape"))
    cfg = os.path.join(root, "c.yaml")
    with open(cfg, "w") as f:
        f.write("auth: {token: s3cret, worker_token: enrol-me}\n")
    c = Controller(binary, root, config=cfg).start()
    try:
        ds = c.ok("POST", "/api/v1/datasets", {"name": "idx", "path": data},
                  headers=ADMIN)["id"]
        base = "/api/v1/datasets/%s" % ds

        # The manifest: every regular file but dot files, with its size and hash; the link out of
        # the folder is not one of them (nor is it served below).
        man = c.ok("GET", base + "/files", headers=ADMIN)
        names = {f["name"]: f for f in man["files"]}
        assert ".hidden" not in names and "escape" not in names and man["packed"] == [], man
        assert "sub/big.bin" in names and "train-images-idx3-ubyte.gz" in names, names
        for n, f in names.items():
            p = os.path.join(data, n)
            assert f["bytes"] == os.path.getsize(p) and f["sha256"] == sha(p), (n, f)

        # Whole small file: 200; ranged: 206 with Content-Range; resume from the middle.
        q = base + "/files/" + urllib.parse.quote("train-labels-idx1-ubyte.gz", safe="")
        whole = open(os.path.join(data, "train-labels-idx1-ubyte.gz"), "rb").read()
        st, body = c.req("GET", q, headers=ADMIN)
        assert st == 200 and body == whole, st
        half = len(whole) // 2
        assert whole[:half] + fetch(c, q, ADMIN, half) == whole
        st, body = c.req("GET", q, headers=dict(ADMIN, Range="bytes=%d-" % len(whole)))
        assert st == 416, (st, body)
        for bad in ("bytes=-5", "lines=0-", "bytes=5-2", "bytes=x-"):
            st, body = c.req("GET", q, headers=dict(ADMIN, Range=bad))
            assert st == 416 and body["error"]["field"] == "Range", (bad, st, body)

        # The big file, in pieces of at most 8 MiB, resumed from an odd offset.
        qb = base + "/files/" + urllib.parse.quote("sub/big.bin", safe="")
        st, body = c.req("GET", qb, headers=dict(ADMIN, Range="bytes=0-"))
        assert st == 206 and len(body) == 8 << 20, (st, len(body or b""))
        got = fetch(c, qb, ADMIN, 12345)
        assert hashlib.sha256(open(big, "rb").read()[:12345] + got).hexdigest() == \
            names["sub/big.bin"]["sha256"]

        # Confinement.
        for bad in ("..", "../secret.txt", ".hidden", "sub/../../secret.txt", "/etc/passwd"):
            st, body = c.req("GET", base + "/files/" + urllib.parse.quote(bad, safe=""),
                             headers=ADMIN)
            assert st in (404, 422), (bad, st, body)
        st, body = c.req("GET", base + "/files/escape", headers=ADMIN)
        assert st == 404, (st, body)
        st, body = c.req("GET", base + "/files/nope", headers=ADMIN)
        assert st == 404, (st, body)
        st, body = c.req("GET", "/api/v1/datasets/ds-nope/files", headers=ADMIN)
        assert st == 404, (st, body)

        # The hash cache: a file changed in place is hashed again.
        lab = os.path.join(data, "t10k-labels-idx1-ubyte.gz")
        with open(lab, "ab") as f:
            f.write(b"x")
        os.utime(lab, (1, 1))
        man2 = c.ok("GET", base + "/files", headers=ADMIN)
        f2 = {f["name"]: f for f in man2["files"]}["t10k-labels-idx1-ubyte.gz"]
        assert f2["sha256"] == sha(lab) and f2["bytes"] == os.path.getsize(lab), f2

        # Who may read: no token 401; a worker without a lease on it 403; with one, 200.
        st, _ = c.req("GET", base + "/files")
        assert st == 401, st
        w = FakeWorker(c)
        st, js = c.req("POST", "/api/v1/workers", {"name": "w", "resources": {"cpus": 1}},
                       headers={"Authorization": "Bearer enrol-me"})
        assert st == 201, (st, js)
        w.id, w.headers = js["id"], {"Authorization": "Bearer " + js["token"]}
        st, js = w.req("GET", base + "/files")
        assert st == 403 and js["error"]["field"] == "Authorization", (st, js)
        exp = c.ok("POST", "/api/v1/experiments",
                   {"name": "e", "network_arch": "mlp", "train_datasets": [ds],
                    "specs": {"train": {"epochs": 1}, "data": {"val_size": 10}}},
                   headers=ADMIN)["id"]
        c.ok("POST", "/api/v1/experiments/%s/jobs" % exp, {"action": "train"}, headers=ADMIN)
        job = w.lease()
        assert job and job["dataset_id"] == ds, job
        st, js = w.req("GET", base + "/files")
        assert st == 200 and {f["name"] for f in js["files"]} == set(names), (st, js)
        st, body = c.req("GET", q, headers=dict(w.headers, Range="bytes=3-"))
        assert st == 206 and body == whole[3:], st
        # An upload that names its SHA-256 is stored only when the body hashes to it.
        art = "/api/v1/jobs/%s/artifacts/" % job["id"]
        body = os.urandom(100000)
        good = hashlib.sha256(body).hexdigest()
        for name, h, want in (("bad.bin", "0" * 64, 422), ("short.bin", "abc", 422),
                              ("upper.bin", good.upper(), 422), ("good.bin", good, 201)):
            st, js = c.req("PUT", art + name, raw=body,
                           headers=dict(w.headers, **{"X-Hone-Sha256": h,
                                                      "Content-Type": "application/octet-stream"}))
            assert st == want, (name, st, js)
            if want == 422:
                assert js["error"]["field"] == "X-Hone-Sha256", js
        files = {f["name"] for f in c.ok("GET", art[:-1], headers=ADMIN)["files"]}
        assert files == {"good.bin"}, files
        job_dir = os.path.join(root, "artifacts", job["id"])
        assert sorted(os.listdir(job_dir)) == ["good.bin"], os.listdir(job_dir)  # no temp left
        st, got = c.req("GET", art + "good.bin", headers=ADMIN)
        assert st == 200 and got == body
        st, got = c.req("GET", art + "good.bin", headers=w.headers)  # its own lease: readable
        assert st == 200 and got == body
        w.complete(job, "done")
        st, js = c.req("GET", art + "good.bin", headers=w.headers)  # no longer its job
        assert st == 403 and js["error"]["field"] == "Authorization", (st, js)
        st, js = w.req("GET", base + "/files")
        assert st == 403, (st, js)

        # A convert job's packed file: only its lease holder may upload it, under its own name;
        # then it is a file of the dataset like the others (manifest "packed", GET /packed/).
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
        from pngfolder import write_folder
        write_folder(os.path.join(root, "pngs"), classes=2, per_class=4, size=16)
        pds = c.ok("POST", "/api/v1/datasets", {"name": "p", "path": os.path.join(root, "pngs"),
                                                "format": "image_folder"}, headers=ADMIN)["id"]
        cv = c.ok("POST", "/api/v1/datasets/%s/convert" % pds, {"input_size": 16},
                  headers=ADMIN)
        name = os.path.basename(cv["config"]["out"])
        lease = w.lease()
        assert lease and lease["id"] == cv["id"], lease
        blob = os.urandom(5000)
        up = "/api/v1/datasets/%s/packed/" % pds
        hdr = dict(w.headers, **{"Content-Type": "application/octet-stream",
                                 "X-Hone-Sha256": hashlib.sha256(blob).hexdigest()})
        st, js = c.req("PUT", up + "other.hpk", raw=blob, headers=hdr)
        assert st == 403, (st, js)
        st, js = c.req("POST", "/api/v1/workers", {"name": "w2", "resources": {"cpus": 1}},
                       headers={"Authorization": "Bearer enrol-me"})
        w2 = {"Authorization": "Bearer " + js["token"], "Content-Type": "application/octet-stream"}
        st, js = c.req("PUT", up + name, raw=blob, headers=w2)
        assert st == 403, (st, js)
        st, js = c.req("PUT", up + name, raw=blob, headers=dict(hdr, **{"X-Hone-Sha256": "1" * 64}))
        assert st == 422 and js["error"]["field"] == "X-Hone-Sha256", (st, js)
        assert not os.path.exists(cv["config"]["out"])
        st, js = c.req("PUT", up + name, raw=blob, headers=hdr)
        assert st == 201 and js["bytes"] == len(blob), (st, js)
        man = c.ok("GET", "/api/v1/datasets/%s/files" % pds, headers=ADMIN)
        assert [(f["name"], f["sha256"]) for f in man["packed"]] == \
            [(name, hashlib.sha256(blob).hexdigest())], man
        st, body = c.req("GET", up + name, headers=ADMIN)
        assert st == 200 and body == blob
        w.complete(lease, "done")
        st, js = c.req("PUT", up + name, raw=blob, headers=hdr)
        assert st == 403, (st, js)
        # the dataset id is a folder's name: not one that leaves packed/, even for the admin
        esc = "/api/v1/datasets/..%2F..%2Fescape/packed/x.hpk"
        st, js = c.req("PUT", esc, raw=blob, headers=dict(ADMIN, **{
            "Content-Type": "application/octet-stream",
            "X-Hone-Sha256": hashlib.sha256(blob).hexdigest()}))
        assert st == 404 and js["error"]["field"] == "id", (st, js)
        out = os.path.normpath(os.path.join(root, "packed", "..", "..", "escape"))
        assert not os.path.exists(out), "a PUT wrote outside packed/: " + out

        # An inference job's image folder: its lease holder (or the admin) reads it; not another
        # worker, and a job that is not an inference job has no input.
        for f in ("model.bin", "model.json", "spec.yaml"):  # a model for the done train job
            open(os.path.join(job_dir, f), "w").write("x")
        inf = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp,
                   {"action": "inference", "parent_job_id": job["id"],
                    "folder": os.path.join(root, "pngs")}, headers=ADMIN)["id"]
        st, js = c.req("GET", "/api/v1/jobs/%s/input" % inf, headers=w.headers)
        assert st == 403, (st, js)
        lease = w.lease()
        assert lease and lease["id"] == inf and lease["parent_job_id"] == job["id"], lease
        st, js = c.req("GET", "/api/v1/jobs/%s/input" % inf, headers=w.headers)
        assert st == 200 and len(js["files"]) == 8 and js["job_id"] == inf, (st, js)
        one = js["files"][0]
        st, body = c.req("GET", "/api/v1/jobs/%s/input/%s" % (inf, urllib.parse.quote(
            one["name"], safe="")), headers=dict(w.headers, Range="bytes=0-"))
        assert st == 206 and hashlib.sha256(body).hexdigest() == one["sha256"], st
        st, js = c.req("GET", "/api/v1/jobs/%s/input" % inf,
                       headers={"Authorization": w2["Authorization"]})
        assert st == 403, (st, js)
        st, js = c.req("GET", "/api/v1/jobs/%s/input" % job["id"], headers=ADMIN)
        assert st == 404 and js["error"]["field"] == "id", (st, js)
        st, js = c.req("GET", "/api/v1/jobs/%s/artifacts/model.bin" % job["id"], headers=w.headers)
        assert st == 200, (st, js)  # the parent's model, while its inference job runs here

        metrics = c.req("GET", "/metrics", headers=ADMIN)[1].decode()
        reads = [ln for ln in metrics.splitlines() if ln.startswith("hone_dataset_file_reads")]
        assert reads and int(reads[0].split()[1]) == 8, reads
    finally:
        if c.alive():
            c.stop()
    print("transfer: ok")


if __name__ == "__main__":
    main()
