"""Helpers for the kill -9 tests: a hone-controller on a fixed port that can be killed and
restarted on the same data dir, hone-workers in their own process groups (so kill -9 takes the
trainer with them, as a lost node would), JSON over urllib, and the acknowledged reports each
worker logged ("job J: epoch N reported"). Stdlib only."""
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request


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


class Controller:
    def __init__(self, binary, root, config_text):
        self.binary, self.root = binary, root
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.config = os.path.join(root, "controller.yaml")
        with open(self.config, "w") as f:
            f.write(config_text)
        self.proc = None
        self.starts = 0

    def start(self):
        self.log = open(os.path.join(self.root, "controller.log"), "ab")
        self.log.write(b"---- start %d\n" % self.starts)
        self.log.flush()
        deadline = time.time() + 60
        while True:  # the port may linger a moment after a kill
            self.proc = subprocess.Popen(
                [self.binary, "--config", self.config, "--listen", "127.0.0.1:%d" % self.port,
                 "--data-dir", os.path.join(self.root, "data")], stdout=self.log, stderr=self.log)
            while time.time() < deadline and self.proc.poll() is None:
                try:
                    if self.req("GET", "/readyz", timeout=2)[0] == 200:
                        self.starts += 1
                        return
                except OSError:
                    pass
                time.sleep(0.05)
            if time.time() >= deadline:
                raise RuntimeError("controller did not start:\n" + self.tail())
            time.sleep(0.3)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.log.close()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = -9
            self.log.close()
            return rc
        return self.proc.returncode if self.proc else 0

    def tail(self, n=4000):
        try:
            return open(os.path.join(self.root, "controller.log"), "rb").read()[-n:].decode(
                "utf-8", "replace")
        except OSError:
            return ""

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


class Worker:
    def __init__(self, binary, trainer, root, name, url):
        self.name = name
        self.log_path = os.path.join(root, "worker-%s.log" % name)
        self.args = [binary, "--controller", url, "--name", name, "--work-dir",
                     os.path.join(root, "w-" + name), "--device", "cpu", "--threads", "1",
                     "--trainer", trainer, "--lease-wait", "2", "--verbose"]
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=self.log,
                                     start_new_session=True)

    def kill9(self):
        """The whole process group: the worker and its trainer, like a node that died."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.log.close()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            self.log.close()
        elif self.proc:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # an orphaned trainer
            except OSError:
                pass

    def text(self):
        try:
            return open(self.log_path, "rb").read().decode("utf-8", "replace")
        except OSError:
            return ""

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
