#!/usr/bin/env python3
"""Idle-connection flood against a real hone-controller (default limits: 1,024 connections, 256
per address): 1,100 connections from 127.0.0.1 that never send a byte. /healthz, a worker
registration and an ordinary request from that same address must still be answered (not 503),
and the oldest idle connection must have been closed to make room. No timing assertions.
Usage: test_idle_flood.py HONE_CONTROLLER"""
import os
import resource
import shutil
import socket
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_http import Controller, call  # noqa: E402

FLOOD = 1100


def closed_within(sock, seconds):
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < FLOOD + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    root = tempfile.mkdtemp(prefix="hone-idle-flood-")
    ctl = Controller(sys.argv[1], root, "")
    ctl.start()
    flood, failed = [], []
    try:
        for _ in range(FLOOD):
            flood.append(socket.create_connection(("127.0.0.1", ctl.port), timeout=10))
        for method, path, body, want in (("GET", "/healthz", None, 200),
                                         ("GET", "/readyz", None, 200),
                                         ("POST", "/api/v1/workers", {"name": "w"}, 201),
                                         ("GET", "/api/v1/jobs", None, 200)):
            r = call(ctl.port, method, path, body)
            print("%s %s: %d" % (method, path, r.status))
            if r.status != want:
                failed.append("%s %s answered %d %r" % (method, path, r.status, r.body[:200]))
        if not closed_within(flood[0], 10):
            failed.append("the oldest idle connection was not closed")
        else:
            print("oldest idle connection: closed")
    finally:
        for s in flood:
            s.close()
        rc = ctl.stop()
        if rc != 0:
            failed.append("controller exit code %d" % rc)
        if failed:
            print("controller log tail:\n" + ctl.tail(3000))
        shutil.rmtree(root, ignore_errors=True)
    for f in failed:
        print("FAIL " + f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
