#!/usr/bin/env python3
"""Authentication before the body (issue 26, case 3) against a real hone-controller with auth on:
200 connections with no token, each announcing a 1 MiB JSON body and sending 900 KiB of it, get
401 without the controller's memory growing by more than a few MB (the old controller kept every
body until it was whole: ~200 MB); nothing stored changes; a request with the admin key is still
answered. Memory is VmRSS from /proc/<pid>/status. No timing assertions.
Usage: test_auth_before_body.py HONE_CONTROLLER"""
import os
import shutil
import socket
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_http import Controller, call, read_response  # noqa: E402

ADMIN = "admin-key-0123456789"
CONNS, ANNOUNCED, SENT = 200, 1 << 20, 900 << 10
LIMIT_MB = 24  # a few MB of allocator noise, against ~180 MB kept by the old controller


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/%d/status" % pid)


def main():
    root = tempfile.mkdtemp(prefix="hone-auth-body-")
    ctl = Controller(sys.argv[1], root, "auth: {admin_key: %s}\n" % ADMIN)
    ctl.start()
    socks = []
    try:
        for _ in range(3):  # the allocator's first pages, before the baseline
            call(ctl.port, "GET", "/api/v1/datasets", headers={"Authorization": "Bearer " + ADMIN})
        before, rows = rss_kb(ctl.proc.pid), ctl.snapshot()
        head = ("POST /api/v1/datasets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % ANNOUNCED).encode()
        body = b'{"name": "' + b"a" * (SENT - 10)
        for _ in range(CONNS):
            s = socket.create_connection(("127.0.0.1", ctl.port), timeout=10)
            socks.append(s)
            try:
                s.sendall(head + body)
            except OSError:
                pass  # answered and closed before all of it went: what we want
        after = rss_kb(ctl.proc.pid)
        grew = (after - before) / 1024.0
        print("controller RSS %.1f -> %.1f MB (+%.1f MB) with %d bodies of %d KiB pending"
              % (before / 1024.0, after / 1024.0, grew, CONNS, SENT >> 10))
        if grew > LIMIT_MB:
            raise AssertionError("the controller kept unauthenticated bodies: +%.1f MB" % grew)
        for i, s in enumerate(socks):
            try:
                r, _ = read_response(s, timeout=15)
            except (OSError, EOFError) as e:
                raise AssertionError("connection %d: no answer (%r)" % (i, e))
            if r.status != 401 or (r.json() or {}).get("error", {}).get("field") != "Authorization":
                raise AssertionError("connection %d: %r" % (i, r))
            if r.headers.get("connection", "").lower() != "close":
                raise AssertionError("connection %d stays open after a refusal: %r" % (i, r.headers))
        if ctl.snapshot() != rows:
            raise AssertionError("the store changed: %r -> %r" % (rows, ctl.snapshot()))
        r = call(ctl.port, "POST", "/api/v1/datasets", {"name": "x"},
                 headers={"Authorization": "Bearer " + ADMIN})
        if r.status != 422:  # let in, then judged on its body (no path)
            raise AssertionError(("the admin's request", r))
        print("auth before body: ok (%d refused at their headers)" % CONNS)
    finally:
        for s in socks:
            s.close()
        ctl.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
