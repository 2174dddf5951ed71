"""Artifact uploads streamed to disk (PUT /api/v1/jobs/{id}/artifacts/{name}) against a real
hone-controller: a 64 MiB upload by the lease holder and a chunked one arrive byte-exact (sha256);
memory stays within limits.upload_inflight_bytes; more uploads than limits.uploads wait their turn
and all arrive; a client that leaves half-way leaves no temp file; an unauthorised upload (no
credential, another worker's, a job that is not running) is refused before its body is sent and
leaves no file; a body over limits.upload_bytes is 413 before it is read. A dataset archive (POST
datasets:upload, chunked) is spooled the same way and its spooled file is gone once answered."""
import hashlib
import http.client
import io
import json
import os
import shutil
import socket
import sys
import tarfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, FakeWorker, binary_from_argv, tempdir, write_idx  # noqa: E402

MiB = 1 << 20
LIMIT = 96 * MiB
INFLIGHT = 2 * MiB


def pattern(n, seed):
    """n pseudo-random bytes (fast: a repeated sha256 chain)."""
    block = b"".join(hashlib.sha256(b"%d-%d" % (seed, i)).digest() for i in range(2048))
    reps = n // len(block) + 1
    return (block * reps)[:n]


def sha(b):
    return hashlib.sha256(b).hexdigest()


def file_sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(MiB), b""):
            h.update(chunk)
    return h.hexdigest()


def port_of(c):
    return int(c.base.rsplit(":", 1)[1])


def put(c, path, body, headers, chunked=False, method="PUT", ctype="application/octet-stream"):
    conn = http.client.HTTPConnection("127.0.0.1", port_of(c), timeout=120)
    h = dict(headers, **{"Content-Type": ctype})
    if chunked:
        def parts():
            for off in range(0, len(body), 777 * 1024):
                yield body[off:off + 777 * 1024]
        conn.request(method, path, body=parts(), headers=h, encode_chunked=True)
    else:
        conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    out = (r.status, r.read())
    conn.close()
    return out


def raw_head(c, path, headers, length):
    """Sends only the request line and headers of a PUT announcing length bytes."""
    s = socket.create_connection(("127.0.0.1", port_of(c)), timeout=30)
    lines = ["PUT %s HTTP/1.1" % path, "Host: x", "Content-Length: %d" % length,
             "Content-Type: application/octet-stream"]
    lines += ["%s: %s" % kv for kv in headers.items()]
    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    return s


def read_answer(s):
    """Status and header block of the answer, and whether the server then closes."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    status = int(head.split(" ", 2)[1]) if head.startswith("HTTP/") else 0
    return status, head.lower()


def dot_files(folder):
    return sorted(f for f in os.listdir(folder) if f.startswith(".")) \
        if os.path.isdir(folder) else []


def wait_no_dot_files(folder, seconds=10):
    deadline = time.time() + seconds
    while dot_files(folder) and time.time() < deadline:
        time.sleep(0.02)
    return dot_files(folder)


def metric(c, name):
    st, text = c.req("GET", "/metrics")
    assert st == 200
    for line in text.decode().splitlines():
        if line.startswith(name + " "):
            return int(line.split()[1])
    raise AssertionError("no metric " + name)


def main():
    binary = binary_from_argv()
    d = tempdir()
    data = os.path.join(d, "data")
    write_idx(os.path.join(data, "idx"))
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("limits: {upload_bytes: %d, uploads: 2, upload_inflight_bytes: %d}\n"
                "log_format: json\n" % (LIMIT, INFLIGHT))
    c = Controller(binary, data, config=cfg).start()
    try:
        ds = c.ok("POST", "/api/v1/datasets", {"name": "d", "path": os.path.join(data, "idx")})
        exp = c.ok("POST", "/api/v1/experiments", {"name": "e", "network_arch": "mlp",
                                                  "train_datasets": [ds["id"]]})
        jobs = [c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"],
                     {"action": "train", "specs": {"train": {"epochs": 2}}}) for _ in range(2)]
        w, other = FakeWorker(c, "w"), FakeWorker(c, "other")
        w.register()
        other.register()
        job = w.lease()
        assert job["id"] == jobs[0]["id"], job
        jdir = os.path.join(data, "artifacts", job["id"])
        url = "/api/v1/jobs/%s/artifacts/" % job["id"]

        # 64 MiB by the lease holder: byte-exact, listed, and memory within the bound
        big = pattern(64 * MiB, 1)
        st, body = put(c, url + "model.bin", big, w.headers)
        assert st == 201, (st, body)
        assert file_sha(os.path.join(jdir, "model.bin")) == sha(big)
        files = c.ok("GET", url.rstrip("/"))["files"]
        assert {"name": "model.bin", "bytes": 64 * MiB} in files, files
        # chunked, over a different name
        st, body = put(c, url + "chunked.bin", big[:10 * MiB + 12345], w.headers, chunked=True)
        assert st == 201, (st, body)
        assert file_sha(os.path.join(jdir, "chunked.bin")) == sha(big[:10 * MiB + 12345])
        st, small = c.req("GET", url + "chunked.bin")
        assert st == 200 and len(small) == 10 * MiB + 12345
        del small
        assert wait_no_dot_files(jdir) == []
        peak = metric(c, "hone_http_upload_buffered_peak_bytes")
        assert 0 < peak <= INFLIGHT + 8 * 16384, peak

        # more uploads than slots (2): the others wait, unread, and all arrive
        bodies = [pattern(6 * MiB + i, 10 + i) for i in range(5)]
        results = [None] * len(bodies)

        def one(i):
            results[i] = put(c, url + "part%d.bin" % i, bodies[i], w.headers)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i, b in enumerate(bodies):
            assert results[i][0] == 201, results[i]
            assert file_sha(os.path.join(jdir, "part%d.bin" % i)) == sha(b), i
        assert metric(c, "hone_http_upload_buffered_peak_bytes") <= INFLIGHT + 8 * 16384

        # a client that leaves half-way: its temp file goes
        s = raw_head(c, url + "gone.bin", w.headers, 64 * MiB)
        s.sendall(big[:8 * MiB])
        deadline = time.time() + 10
        while not dot_files(jdir) and time.time() < deadline:
            time.sleep(0.01)
        assert dot_files(jdir), "no temp file while the body comes in"
        s.close()
        assert wait_no_dot_files(jdir) == [], os.listdir(jdir)
        assert "gone.bin" not in os.listdir(jdir)

        # refused before the body is sent: no credential, another worker's, a job not running;
        # the answer comes without a byte of the 64 MiB, and the connection closes after it
        other_job = other.lease()
        assert other_job and other_job["id"] == jobs[1]["id"], other_job
        queued = c.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"})
        cases = [(url + "evil.bin", {}, 401),
                 (url + "evil.bin", other.headers, 403),
                 ("/api/v1/jobs/%s/artifacts/evil.bin" % queued["id"], w.headers, 409),
                 ("/api/v1/jobs/job-nope/artifacts/evil.bin", w.headers, 404),
                 (url + ".hidden", w.headers, 422)]
        for path, headers, want in cases:
            s = raw_head(c, path, headers, 64 * MiB)
            status, head = read_answer(s)
            assert status == want, (path, status, head)
            assert "connection: close" in head, head
            s.close()
        for j in (job["id"], queued["id"]):
            folder = os.path.join(data, "artifacts", j)
            assert dot_files(folder) == [] and "evil.bin" not in (
                os.listdir(folder) if os.path.isdir(folder) else []), folder

        # over limits.upload_bytes: 413 from the headers alone
        s = raw_head(c, url + "huge.bin", w.headers, LIMIT + 1)
        status, head = read_answer(s)
        assert status == 413, (status, head)
        s.close()
        assert "huge.bin" not in os.listdir(jdir) and dot_files(jdir) == []
        # the worker still works normally afterwards
        assert w.report(job, 1, {"val_accuracy": 0.5})[0] == 200

        # a dataset archive, chunked: spooled, checked and extracted from the file
        src, extra = os.path.join(data, "idx"), pattern(20 * MiB, 3)
        bio = io.BytesIO()
        with tarfile.open(fileobj=bio, mode="w", format=tarfile.USTAR_FORMAT) as t:
            for f in sorted(os.listdir(src)):
                t.add(os.path.join(src, f), arcname=f)
            ti = tarfile.TarInfo("extra.bin")
            ti.size = len(extra)
            t.addfile(ti, io.BytesIO(extra))
        st, body = put(c, "/api/v1/datasets:upload?name=up", bio.getvalue(), {}, chunked=True,
                       method="POST", ctype="application/x-tar")
        assert st == 201, (st, body)
        path = json.loads(body)["path"]
        assert file_sha(os.path.join(path, "extra.bin")) == sha(extra)
        assert dot_files(os.path.join(data, "datasets")) == []
    finally:
        c.stop()
    shutil.rmtree(d)  # some 100 MB of uploads; kept when the test fails
    print("ok")


if __name__ == "__main__":
    main()
