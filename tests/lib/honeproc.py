"""The one way the Python tests start Hone's processes: hone-controller as a child process (its
store in a data dir, an optional YAML config, its log appended to one file across restarts, a free
port read back through --port-file or a fixed one so that a restart after kill -9 comes back on the
same address) and hone-worker (in its own process group, so kill -9 takes its trainer too, as a
lost node would). Stdlib only; each test folder's helper builds on these."""
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request


class ControllerProcess:
    def __init__(self, binary, data_dir, config=None, port=0, log_path=None, extra=None):
        self.binary = binary
        self.data_dir = data_dir
        self.config = config
        self.port = port
        self.fixed_port = port != 0
        self.log_path = log_path or os.path.join(data_dir, "controller.log")
        self.extra = list(extra or [])
        self.port_file = self.log_path + ".port"
        self.proc = None
        self.log = None
        self.starts = 0

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port if self.port else None

    def _ready(self):
        try:
            with urllib.request.urlopen(self.base + "/readyz", timeout=2) as r:
                return r.status == 200
        except (OSError, urllib.error.HTTPError):
            return False

    def start(self, timeout=60):
        """Starts it and waits until /readyz answers 200. A fixed port may linger for a moment
        after a kill: then the controller exits at once and is started again."""
        os.makedirs(self.data_dir, exist_ok=True)
        deadline = time.time() + timeout
        while True:
            if os.path.exists(self.port_file):
                os.unlink(self.port_file)
            self.log = open(self.log_path, "ab")
            self.log.write(b"---- start %d\n" % self.starts)
            self.log.flush()
            args = [self.binary, "--listen", "127.0.0.1:%d" % (self.port if self.fixed_port else 0),
                    "--data-dir", self.data_dir, "--port-file", self.port_file] + self.extra
            if self.config:
                args += ["--config", self.config]
            self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log)
            while time.time() < deadline and self.proc.poll() is None:
                if os.path.exists(self.port_file):
                    try:
                        self.port = int(open(self.port_file).read().strip())
                    except ValueError:
                        self.port = 0
                    if self.port and self._ready():
                        self.starts += 1
                        return self
                time.sleep(0.02)
            self.log.close()
            if time.time() >= deadline:
                if self.proc.poll() is None:
                    self.proc.kill()
                    self.proc.wait()
                raise RuntimeError("controller did not start:\n" + self.tail())
            if not self.fixed_port:
                raise RuntimeError("controller exited %d:\n%s" % (self.proc.returncode,
                                                                   self.tail()))
            time.sleep(0.3)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None and self._ready()

    def stop(self, timeout=30):
        """SIGTERM; returns the exit code (non-zero under ASan when LeakSanitizer found leaks;
        -9 when it had to be killed)."""
        if not self.proc:
            return 0
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = -9
        self.log.close()
        return rc

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.log.close()

    def tail(self, n=4000):
        try:
            return open(self.log_path, "rb").read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""


class WorkerProcess:
    """A real hone-worker on the CPU with one trainer thread (CI has 2 cores)."""

    def __init__(self, binary, trainer, root, name, url, extra=None):
        self.name = name
        self.log_path = os.path.join(root, "worker-%s.log" % name)
        self.args = [binary, "--controller", url, "--name", name, "--work-dir",
                     os.path.join(root, "w-" + name), "--device", "cpu", "--threads", "1",
                     "--trainer", trainer, "--lease-wait", "2"] + list(extra or [])
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=self.log,
                                     start_new_session=True)
        return self

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
