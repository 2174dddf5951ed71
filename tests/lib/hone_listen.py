#!/usr/bin/env python3
"""tests/lib/hone_listen.py: a tiny client of `hone-train --serve --listen SOCKET` (packed trials),
for tests and bench/packed.sh. One Conn is one connection: hello, then one job at a time.

As a program: hone_listen.py SOCKET ARGS... runs one job (the arguments of one hone-train run):
its stdout lines go to stdout, its log lines to stderr, and the exit status is the job's code."""
import json
import socket
import sys


class Conn:
    def __init__(self, path, timeout=None):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.f = self.s.makefile("r", encoding="utf-8", newline="\n")
        hello = self.event()
        if not hello or hello.get("event") != "hello":
            raise RuntimeError("no hello from %s: %r" % (path, hello))
        self.pid = hello["pid"]

    def event(self):
        """The next line as a dict; None at the end of the connection."""
        line = self.f.readline()
        return json.loads(line) if line else None

    def send_line(self, text):
        self.s.sendall(text.encode() + b"\n")

    def send_run(self, args):
        self.send_line(json.dumps({"run": list(args)}))

    def cancel(self):
        self.send_line('{"cancel":true}')

    def lines(self, on_line=None):
        """The job's events up to its exit: (stdout lines as dicts, log lines, exit event or None
        when the connection ended first)."""
        out, logs = [], []
        while True:
            d = self.event()
            if d is None:
                return out, logs, None
            ev = d.get("event")
            if ev == "exit":
                return out, logs, d
            if ev in ("accepted", "alive"):
                continue
            if ev == "log":
                logs.append(d["line"])
                continue
            out.append(d)
            if on_line:
                on_line(d)

    def job(self, args, on_line=None):
        self.send_run(args)
        return self.lines(on_line)

    def close(self):
        try:
            self.f.close()
            self.s.close()
        except OSError:
            pass


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    c = Conn(argv[1])

    def show(d):
        print(json.dumps(d, separators=(",", ":")), flush=True)
    out, logs, ex = c.job(argv[2:], on_line=show)
    for l in logs:
        print(l, file=sys.stderr)
    c.close()
    return ex["code"] if ex else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
