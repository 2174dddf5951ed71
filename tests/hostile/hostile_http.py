"""Helpers for the hostile-input test: a raw-socket HTTP/1.1 client (so malformed requests go out
byte for byte), the controller process (tests/lib/honeproc.py: port 0, temp data dir, config with
data roots) and a read-only snapshot of the SQLite store (row counts per table). Stdlib only."""
import gzip
import json
import os
import socket
import sqlite3
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from honeproc import ControllerProcess  # noqa: E402


class Resp:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def __repr__(self):
        return "<%s %r>" % (self.status, self.body[:200])


def _read_until(sock, buf, token, deadline):
    while token not in buf:
        sock.settimeout(max(0.01, deadline - time.time()))
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def _read_n(sock, buf, n, deadline):
    while len(buf) < n:
        sock.settimeout(max(0.01, deadline - time.time()))
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def read_response(sock, buf=b"", timeout=15.0, head=False):
    """Reads one response; returns (Resp, leftover bytes). Raises EOFError when the peer closed
    before a whole response, socket.timeout when nothing came in time."""
    deadline = time.time() + timeout
    buf = _read_until(sock, buf, b"\r\n\r\n", deadline)
    head_b, buf = buf.split(b"\r\n\r\n", 1)
    lines = head_b.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    body = b""
    if head or status in (204, 304) or 100 <= status < 200:
        pass
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            buf = _read_until(sock, buf, b"\r\n", deadline)
            size_line, buf = buf.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            buf = _read_n(sock, buf, size + 2, deadline)
            body += buf[:size]
            buf = buf[size + 2:]
            if size == 0:
                break
    elif "content-length" in headers:
        n = int(headers["content-length"])
        buf = _read_n(sock, buf, n, deadline)
        body, buf = buf[:n], buf[n:]
    else:  # close-delimited
        while True:
            try:
                sock.settimeout(max(0.01, deadline - time.time()))
                chunk = sock.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            buf += chunk
        body, buf = buf, b""
    return Resp(status, headers, body), buf


def exchange(port, data, n=1, timeout=15.0, pause=None, probe=0.05):
    """Sends raw bytes (a list of byte strings is sent piece by piece with `pause` seconds
    between them) and reads up to n responses. Returns (responses, closed_by_peer)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out, closed, buf = [], False, b""
    try:
        pieces = data if isinstance(data, list) else [data]
        for i, p in enumerate(pieces):
            try:
                s.sendall(p)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            if pause and i + 1 < len(pieces):
                time.sleep(pause)
        for _ in range(n):
            try:
                r, buf = read_response(s, buf, timeout)
                out.append(r)
            except (EOFError, ConnectionResetError):
                closed = True
                break
            except socket.timeout:
                break
        if not closed and probe:
            try:
                s.settimeout(probe)
                closed = s.recv(1) == b""
            except socket.timeout:
                pass
            except (ConnectionResetError, OSError):
                closed = True
    finally:
        s.close()
    return out, closed


def request_bytes(method, path, body=None, headers=None, ctype="application/json", version="1.1"):
    h = {"Host": "127.0.0.1"}
    if body is not None:
        if not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body).encode()
        if ctype:
            h["Content-Type"] = ctype
        h["Content-Length"] = str(len(body))
    h.update(headers or {})
    head = "%s %s HTTP/%s\r\n" % (method, path, version)
    head += "".join("%s: %s\r\n" % (k, v) for k, v in h.items() if v is not None)
    return head.encode("latin-1") + b"\r\n" + (body or b"")


def call(port, method, path, body=None, **kw):
    rs, _ = exchange(port, request_bytes(method, path, body, **kw), probe=0)
    if not rs:
        raise AssertionError("no answer to %s %s" % (method, path))
    return rs[0]


def write_idx(dirname, n_train=60, n_test=20, rows=4, cols=4):
    os.makedirs(dirname, exist_ok=True)
    for split, n in (("train", n_train), ("t10k", n_test)):
        with gzip.open(os.path.join(dirname, "%s-images-idx3-ubyte.gz" % split), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, n, rows, cols) +
                    bytes((i * 7) % 256 for i in range(n * rows * cols)))
        with gzip.open(os.path.join(dirname, "%s-labels-idx1-ubyte.gz" % split), "wb") as f:
            f.write(struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n)))


class Controller(ControllerProcess):
    """The controller under attack (started by tests/lib/honeproc.py), its config written from
    text, alive when /healthz answers over a raw socket, with a snapshot of the store's rows."""

    def __init__(self, binary, root, config_text):
        self.root = root
        config = os.path.join(root, "controller.yaml")
        with open(config, "w") as f:
            f.write(config_text)
        super().__init__(binary, os.path.join(root, "data"), config=config,
                         log_path=os.path.join(root, "controller.log"))

    def alive(self):
        if self.proc.poll() is not None:
            return False
        try:
            return call(self.port, "GET", "/healthz").status == 200
        except (OSError, AssertionError):
            return False

    def tail(self, n=6000):
        return super().tail(n)

    def snapshot(self):
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(self.data_dir, "hone.db"), uri=True,
                             timeout=10)
        try:
            tables = [r[0] for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
            return {t: db.execute('SELECT COUNT(*) FROM "%s"' % t).fetchone()[0] for t in tables}
        finally:
            db.close()
