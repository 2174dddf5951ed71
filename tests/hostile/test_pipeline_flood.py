#!/usr/bin/env python3
"""Pipelined requests from a client that never reads its answers (found by a review): reading
stops once 16 requests wait, but one 16 KiB read holds about 430 short GETs, and every one was
answered into memory; a public route with a 50 KB answer made about 22 MB per connection, and
256 connections per address could each do it. Now no request is dispatched while 4 MiB of
answers wait to be written; the rest are made as the client reads.

A real controller (auth off); the client sets a small receive buffer, sends as many pipelined
GET /api/v1/openapi.yaml as one read takes (356) in one write and reads nothing. After 2 s the
answers made may fill the 4 MiB queue, the kernel's send buffer (tcp_wmem's maximum) and the
client's receive buffer, and no more (161 here; all 356 before the fix); a kernel whose send
buffer alone could hold them all makes the check moot (exit 77). The controller answers other
clients meanwhile. Then the client reads: every answer comes, whole.

Usage: test_pipeline_flood.py HONE_CONTROLLER"""
import os
import re
import shutil
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_http import Controller, call  # noqa: E402

REQ = b"GET /api/v1/openapi.yaml HTTP/1.1\r\nHost: x\r\n\r\n"
N = 16384 // len(REQ)  # 356: as many as one read takes
WRITE_QUEUE_HIGH = 4 << 20  # api/conn.c


def answered(port):
    text = call(port, "GET", "/metrics").body.decode()
    return int(re.search(r'hone_http_responses_total\{class="2xx"\} (\d+)', text).group(1))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = tempfile.mkdtemp(prefix="hone-pipeflood-")
    c = Controller(os.path.abspath(sys.argv[1]), root, "log_format: json\n")
    s = None
    try:
        c.start()
        one = len(call(c.port, "GET", "/api/v1/openapi.yaml").body)
        assert one > 20000, one
        base = answered(c.port)
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.connect(("127.0.0.1", c.port))
        s.sendall(REQ * N)
        time.sleep(2)
        made = answered(c.port) - base - 1  # the /metrics call itself counts once
        wmem = int(open("/proc/sys/net/ipv4/tcp_wmem").read().split()[2])
        rcv = s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        bound = (WRITE_QUEUE_HIGH + wmem + rcv) // one + 2
        print("answers made for a client that reads nothing: %d of %d (%d bytes each; bound %d)"
              % (made, N, one, bound))
        if bound >= N:
            print("SKIP: this kernel's buffers (tcp_wmem max %d) would take every answer" % wmem)
            return 77
        assert 0 < made <= bound, "made %d answers nobody reads (%d bytes each)" % (made, one)
        assert call(c.port, "GET", "/healthz").status == 200
        # now it reads: every answer, in order
        s.settimeout(30)
        got, want = b"", None
        while got.count(b"HTTP/1.1 200") < N or len(got) < (want or 0):
            b = s.recv(1 << 20)
            assert b, "the connection closed after %d answers" % got.count(b"HTTP/1.1 200")
            got += b
            if got.count(b"HTTP/1.1 200") == N and want is None:
                last = got.rfind(b"HTTP/1.1 200")
                m = re.search(rb"Content-Length: (\d+)\r\n", got[last:])
                want = last + got[last:].index(b"\r\n\r\n") + 4 + int(m.group(1))
        assert got.count(b"HTTP/1.1 200") == N, got.count(b"HTTP/1.1 200")
        print("then read: %d answers, %d bytes" % (N, len(got)))
        assert c.stop() == 0, "controller exit at SIGTERM:\n%s" % c.tail()
    except BaseException:
        sys.stderr.write("---- controller log\n%s\n" % c.tail())
        raise
    finally:
        if s:
            s.close()
        if c.proc and c.proc.poll() is None:
            c.stop()
    shutil.rmtree(root, ignore_errors=True)
    print("pipeline flood: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
