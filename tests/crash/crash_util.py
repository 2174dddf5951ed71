"""Helpers for the kill -9 tests: a hone-controller on a fixed port that can be killed and
restarted on the same data dir, hone-workers in their own process groups (so kill -9 takes the
trainer with them, as a lost node would), both started by tests/lib/honeproc.py, JSON over urllib, and the acknowledged reports each
worker logged ("job J: epoch N reported"). Stdlib only."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from honeproc import ControllerProcess, WorkerProcess  # noqa: E402


def fmnist_dir():
    d = os.environ.get("HONE_FMNIST_DIR")
    if d and os.path.isdir(d):
        return d
    for c in ("/usr/share/datasets/fashion-mnist", "/usr/share/dataset-fashion-mnist"):
        if os.path.exists(os.path.join(c, "train-images-idx3-ubyte.gz")):
            return c
    try:
        out = subprocess.run(["dpkg", "-L", "dataset-fashion-mnist"], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            if "train-images-idx3" in line:
                return os.path.dirname(line)
    except OSError:
        pass
    return None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Controller(ControllerProcess):
    """A controller on a fixed port (so that it comes back on the same address after kill -9 and
    the workers find it again), with its config written from text and JSON calls."""

    def __init__(self, binary, root, config_text):
        self.root = root
        config = os.path.join(root, "controller.yaml")
        with open(config, "w") as f:
            f.write(config_text)
        super().__init__(binary, os.path.join(root, "data"), config=config, port=free_port(),
                         log_path=os.path.join(root, "controller.log"))

    def req(self, method, path, body=None, timeout=30):
        data = json.dumps(body).encode() if body is not None else None
        h = {"Content-Type": "application/json"} if data is not None else {}
        r = urllib.request.Request(self.base + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(r, timeout=timeout) as resp:
                status, payload = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, payload = e.code, e.read()
        try:
            return status, json.loads(payload) if payload else None
        except ValueError:
            return status, payload

    def ok(self, method, path, body=None):
        st, js = self.req(method, path, body)
        if st not in (200, 201):
            raise AssertionError("%s %s -> %d %s" % (method, path, st, js))
        return js


class Worker(WorkerProcess):
    """A real hone-worker that logs each acknowledged report (--verbose)."""

    def __init__(self, binary, trainer, root, name, url):
        super().__init__(binary, trainer, root, name, url, extra=["--verbose"])

    def acked(self):
        """[(job, epoch)] in the order the controller acknowledged them (answered 200)."""
        return [(m.group(1), int(m.group(2))) for m in
                re.finditer(r"job (\S+): epoch (\d+) reported, decision", self.text())]


def wait_for(pred, timeout, step=0.2, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("timed out waiting for " + what)


def sigterm_within(w, grace, then=None):
    """SIGTERM to the worker alone (as Kubernetes sends it), then() right after it; asserts that
    the worker exits 0 within grace seconds and returns the seconds it took."""
    t0 = time.time()
    w.proc.send_signal(signal.SIGTERM)
    if then:
        then()
    try:
        w.proc.wait(timeout=grace + 10)
    except subprocess.TimeoutExpired:
        raise AssertionError("worker %s still runs %d s after SIGTERM" % (w.name, grace + 10))
    took = time.time() - t0
    w.log.close()
    assert w.proc.returncode == 0, (w.name, w.proc.returncode)
    assert took < grace, "worker %s took %.1f s to exit (grace %d s)" % (w.name, took, grace)
    return took


def dump_logs(c, workers, n=4000):
    """After a failure: the controller's log tail and each worker's, on stderr."""
    sys.stderr.write("---- controller log\n%s\n" % c.tail())
    for w in workers:
        sys.stderr.write("---- %s\n%s\n" % (w.log_path, w.text()[-n:]))


def stop_all(c, workers):
    """The workers still running, then the controller."""
    for w in workers:
        if w.proc and w.proc.poll() is None:
            w.stop()
    c.stop()
