"""Artifact downloads against a real controller (issue 26, item 1): the file streams from disk in
bounded chunks read off the loop, so the controller's memory stays flat whatever the file's size;
a full GET is the file's bytes, HEAD its length and no body; one Range (206 with Content-Range,
416 with Content-Range: bytes */SIZE, several or malformed ranges answered whole); a user's
downloads at once are capped by limits.downloads_per_user (503 naming it, with Retry-After; another
user and the admin are not refused; the count drops when a download ends or its client leaves).
The old controller read the whole file into memory on the loop, and knew no Range."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir, write_idx  # noqa: E402

ADMIN = "admin-key-0123456789"
CAP = 3
BIG = 200 << 20  # the sparse artifact of the memory bound


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def bearer(tok):
    return {"Authorization": "Bearer " + tok}


class Answer:
    """One raw HTTP/1.1 GET or HEAD (Connection: close) whose head is read; the body is left in
    the socket for the caller to read, slowly, in full, or not at all."""

    def __init__(self, port, path, headers, method="GET"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        hdr = "".join("%s: %s\r\n" % kv for kv in headers.items())
        self.sock.sendall(("%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s\r\n"
                           % (method, path, hdr)).encode())
        got = b""
        while b"\r\n\r\n" not in got:
            b = self.sock.recv(65536)
            check(b, ("closed before the head", got))
            got += b
        head, self.rest = got.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip()
                        for k, v in (ln.split(":", 1) for ln in lines[1:])}

    def body(self):
        """The rest, to the end (the server closes after it)."""
        parts = [self.rest]
        while True:
            b = self.sock.recv(1 << 20)
            if not b:
                break
            parts.append(b)
        self.sock.close()
        return b"".join(parts)

    def json(self):
        return json.loads(self.body())

    def close(self):
        self.sock.close()


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def make_job(ctl, d, name, h):
    root = os.path.join(d, "idx-" + name)
    write_idx(root)
    ds = ctl.ok("POST", "/api/v1/datasets", {"name": name, "path": root}, headers=h)
    exp = ctl.ok("POST", "/api/v1/experiments",
                 {"name": name, "network_arch": "mlp", "train_datasets": [ds["id"]]}, headers=h)
    return ctl.ok("POST", "/api/v1/experiments/%s/jobs" % exp["id"], {"action": "train"},
                  headers=h)["id"]


def plant(d, job, name, data=None, sparse=0):
    folder = os.path.join(d, "data", "artifacts", job, os.path.dirname(name))
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(d, "data", "artifacts", job, name), "wb") as f:
        if data is not None:
            f.write(data)
        else:
            f.truncate(sparse)


def whole_and_head(ctl, url, data, h):
    a = Answer(ctl.port, url, h)
    check(a.status == 200 and a.headers.get("accept-ranges") == "bytes" and
          a.headers["content-length"] == str(len(data)), (a.status, a.headers))
    check(a.body() == data, "the full GET is not the file's bytes")
    a = Answer(ctl.port, url, h, method="HEAD")
    check(a.status == 200 and a.headers["content-length"] == str(len(data)),
          (a.status, a.headers))
    check(a.body() == b"", "HEAD sent a body")


def ranges(ctl, url, data, h):
    n = len(data)
    for spec, lo, hi in (("bytes=100-199", 100, 199), ("bytes=%d-" % (n - 7), n - 7, n - 1),
                         ("bytes=-10", n - 10, n - 1), ("bytes=5-%d" % (n + 99), 5, n - 1),
                         ("bytes=-%d" % (n + 5), 0, n - 1), ("BYTES = 0-0", 0, 0)):
        a = Answer(ctl.port, url, dict(h, Range=spec))
        check(a.status == 206 and a.headers.get("content-range") == "bytes %d-%d/%d" % (lo, hi, n)
              and a.headers["content-length"] == str(hi - lo + 1), (spec, a.status, a.headers))
        check(a.body() == data[lo:hi + 1], ("the bytes of", spec))
    for spec in ("bytes=%d-" % n, "bytes=%d-%d" % (n + 10, n + 20), "bytes=-0"):
        a = Answer(ctl.port, url, dict(h, Range=spec))
        check(a.status == 416 and a.headers.get("content-range") == "bytes */%d" % n,
              (spec, a.status, a.headers))
        js = a.json()
        check(js["error"]["field"] == "Range", js)
    # several ranges, another unit, malformed, reversed: the whole file (RFC 9110 allows it)
    for spec in ("bytes=0-1,5-6", "items=0-5", "bytes=abc", "bytes=9-2", "bytes=-", "bytes 0-5"):
        a = Answer(ctl.port, url, dict(h, Range=spec))
        check(a.status == 200 and "content-range" not in a.headers, (spec, a.status, a.headers))
        check(a.body() == data, ("the whole file for", spec))
    # HEAD ignores Range; If-Range (we send no validators) gets the whole file
    a = Answer(ctl.port, url, dict(h, Range="bytes=0-9"), method="HEAD")
    check(a.status == 200 and a.headers["content-length"] == str(n), (a.status, a.headers))
    a.close()
    a = Answer(ctl.port, url, dict(h, Range="bytes=0-9", **{"If-Range": '"x"'}))
    check(a.status == 200 and a.body() == data, ("If-Range", a.status))


def user_cap(ctl, ja, jb, ta, tb, adm, data):
    """CAP downloads of Alice's are held open by not reading: her next is 503; Bob's and the
    admin's are answered; once hers end (one read to its end, the others' clients leave), hers is
    answered again."""
    big = "/api/v1/jobs/%s/artifacts/big.bin" % ja
    held = [Answer(ctl.port, big, ta) for _ in range(CAP)]
    for a in held:
        check(a.status == 200 and a.headers["content-length"] == str(BIG), (a.status, a.headers))
    a = Answer(ctl.port, big, ta)
    check(a.status == 503 and a.headers.get("retry-after"), (a.status, a.headers))
    js = a.json()
    check(js["error"]["field"] == "limits.downloads_per_user", js)
    a = Answer(ctl.port, "/api/v1/jobs/%s/artifacts/model.bin" % ja, ta, method="HEAD")
    check(a.status == 200 and a.body() == b"", ("a HEAD reads nothing: not counted", a.status))
    a = Answer(ctl.port, "/api/v1/jobs/%s/artifacts/model.bin" % jb, tb)
    check(a.status == 200 and a.body() == data, ("bob's download", a.status))
    a = Answer(ctl.port, "/api/v1/jobs/%s/artifacts/model.bin" % ja, adm)
    check(a.status == 200 and a.body() == data, ("the admin's download", a.status))
    # one is read to its end, the other clients leave mid-file
    check(len(held[0].body()) == BIG, "a held download did not come whole")
    for x in held[1:]:
        x.close()
    deadline = time.time() + 20
    while True:
        a = Answer(ctl.port, "/api/v1/jobs/%s/artifacts/model.bin" % ja, ta)
        if a.status == 200:
            check(a.body() == data, "alice's download after hers ended")
            break
        a.close()
        check(a.status == 503 and time.time() < deadline, ("after hers ended", a.status))
        time.sleep(0.1)


def memory_bound(ctl, ja, adm):
    """Six parallel downloads of a 200 MiB (sparse) artifact whose clients read slowly: the
    controller's resident memory grows by less than 100 MB (the old one read each file whole into
    memory: +1.2 GB). /healthz is answered meanwhile."""
    big = "/api/v1/jobs/%s/artifacts/big.bin" % ja
    before = rss_kib(ctl.proc.pid)
    peak = [before]
    stop = threading.Event()
    got = [0] * 6

    def slow(i):
        a = Answer(ctl.port, big, adm)
        check(a.status == 200, a.status)
        a.sock.settimeout(30)
        n = len(a.rest)
        while not stop.is_set() and n < BIG:
            b = a.sock.recv(64 << 10)
            if not b:
                break
            n += len(b)
            time.sleep(0.005)
        got[i] = n
        a.close()  # mid-file: the controller gives the rest up

    def sample():  # on its own: a controller busy on its loop must not stop the sampling
        while not stop.is_set():
            peak[0] = max(peak[0], rss_kib(ctl.proc.pid))
            time.sleep(0.01)

    ts = [threading.Thread(target=slow, args=(i,)) for i in range(6)]
    ts.append(threading.Thread(target=sample))
    for t in ts:
        t.start()
    t0 = time.time()
    while time.time() - t0 < 3:
        st, _ = ctl.req("GET", "/healthz", timeout=30)
        check(st == 200, st)
        time.sleep(0.02)
    stop.set()
    for t in ts:
        t.join()
    grew = (peak[0] - before) / 1024.0
    print("memory bound: RSS %.1f MB before, peak %.1f MB (+%.1f MB) during 6 downloads of "
          "200 MiB; %.1f MB read by the clients" % (before / 1024.0, peak[0] / 1024.0, grew,
                                                   sum(got) / 1e6))
    check(min(got) > 0, ("a download got nothing", got))
    check(grew < 100, "the controller's RSS grew by %.1f MB" % grew)


def disabled_mid_download(ctl, ja, ta, alice_id, adm):
    """A download under way when its user is disabled ends within a few MiB (the file answer asks
    again every 4 MiB), where it used to run to the end of the file."""
    a = Answer(ctl.port, "/api/v1/jobs/%s/artifacts/big.bin" % ja, ta)
    check(a.status == 200, ("alice's download", a.status))
    got = len(a.rest)
    while got < (1 << 20):
        b = a.sock.recv(1 << 16)
        check(b, "closed before the first MiB")
        got += len(b)
    ctl.ok("PATCH", "/api/v1/users/%s" % alice_id, {"disabled": True}, headers=adm)
    total = got + len(a.body())
    check(total < BIG // 4, ("a disabled user's download went on", total, BIG))


def bad_config(binary, d):
    """A cap outside [1, 1024] is refused at start, naming the key."""
    for v in ("0", "2000", "many"):
        cfg = os.path.join(d, "bad.yaml")
        with open(cfg, "w") as f:
            f.write("limits: {downloads_per_user: %s}\n" % v)
        p = subprocess.run([binary, "--listen", "127.0.0.1:0", "--data-dir",
                            os.path.join(d, "bad-data"), "--config", cfg],
                           capture_output=True, timeout=60)
        check(p.returncode != 0 and b"limits.downloads_per_user" in p.stderr,
              (v, p.returncode, p.stderr[-300:]))


def main():
    binary = binary_from_argv()
    # ASan keeps freed blocks in a quarantine (256 MB by default), which would count as resident
    os.environ["ASAN_OPTIONS"] = (os.environ.get("ASAN_OPTIONS", "") +
                                  ":quarantine_size_mb=8").lstrip(":")
    d = tempdir()
    bad_config(binary, d)
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("auth: {admin_key: %s}\ndata_roots: [\"%s\"]\nlimits: {downloads_per_user: %d}\n"
                % (ADMIN, d, CAP))
    ctl = Controller(binary, os.path.join(d, "data"), config=cfg).start()
    try:
        adm = bearer(ADMIN)
        toks, ids = [], []
        for name in ("alice", "bob"):
            u = ctl.ok("POST", "/api/v1/users", {"name": name}, headers=adm)
            ids.append(u["id"])
            k = ctl.ok("POST", "/api/v1/users/%s/keys" % u["id"], headers=adm)
            toks.append(bearer(ctl.ok("POST", "/api/v1/login", {"key": k["key"]})["token"]))
        ta, tb = toks
        ja, jb = make_job(ctl, d, "a", ta), make_job(ctl, d, "b", tb)
        data = os.urandom(3 << 20) + b"end"
        plant(d, ja, "model.bin", data)
        plant(d, ja, "best_model/model.bin", data[::-1])
        plant(d, jb, "model.bin", data)
        plant(d, ja, "big.bin", sparse=BIG)
        plant(d, ja, "empty.bin", b"")

        url = "/api/v1/jobs/%s/artifacts/model.bin" % ja
        whole_and_head(ctl, url, data, ta)
        whole_and_head(ctl, "/api/v1/jobs/%s/artifacts/best_model/model.bin" % ja, data[::-1], ta)
        whole_and_head(ctl, "/api/v1/jobs/%s/artifacts/empty.bin" % ja, b"", ta)
        a = Answer(ctl.port, "/api/v1/jobs/%s/artifacts/empty.bin" % ja, dict(ta, Range="bytes=0-"))
        check(a.status == 416 and a.headers.get("content-range") == "bytes */0", a.status)
        a.close()
        ranges(ctl, url, data, ta)
        # a folder of the job's replaced by a link out (a shared disk): not followed, 404
        outside = os.path.join(d, "outside")
        os.makedirs(outside)
        with open(os.path.join(outside, "model.bin"), "wb") as f:
            f.write(b"secret bytes behind a link")
        os.symlink(outside, os.path.join(d, "data", "artifacts", jb, "best_model"))
        a = Answer(ctl.port, "/api/v1/jobs/%s/artifacts/best_model/model.bin" % jb, tb)
        check(a.status == 404 and b"secret" not in a.body(), ("a linked folder", a.status))
        a.close()
        # bob cannot read alice's (404, as if it did not exist), nor by a Range
        a = Answer(ctl.port, url, dict(tb, Range="bytes=0-9"))
        check(a.status == 404, ("bob on alice's", a.status))
        a.close()
        # keep-alive: two downloads and a JSON call answered in turn on one connection
        s = socket.create_connection(("127.0.0.1", ctl.port), timeout=30)
        auth = "Authorization: %s\r\n" % ta["Authorization"]
        one = "GET %s HTTP/1.1\r\nHost: x\r\nRange: bytes=0-3\r\n%s\r\n" % (url, auth)
        s.sendall((one + one + "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                  .encode())
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
        s.close()
        check(out.count(b"HTTP/1.1 206") == 2 and out.count(data[:4]) >= 2 and
              b"HTTP/1.1 200" in out.split(data[:4])[-1], ("pipelined", out[:600]))

        user_cap(ctl, ja, jb, ta, tb, adm, data)
        memory_bound(ctl, ja, adm)
        disabled_mid_download(ctl, ja, ta, ids[0], adm)
        st, js = ctl.req("GET", "/healthz")
        check(st == 200, st)
    finally:
        ctl.stop()
    print("ok")


if __name__ == "__main__":
    main()
