"""Packed trials, the worker side (issue 9): several hone-worker processes with the same
--trainer-socket run their train jobs on ONE shared `hone-train --serve --listen` server, against a
real controller, on the CPU and a small IDX dataset made here.

  1. three workers started at once, three jobs at once: exactly one server process is started
     (the flock on PATH.lock), every worker reports its jobs as run on that server's pid, and the
     three jobs run at the same time on it;
  2. a stop answer (the job canceled through the REST API: its next report is answered `stop`)
     ends only that job: it is canceled, the server keeps its pid, the other two finish;
  3. kill -9 of the shared server mid-trial: both jobs running on it fail, are retried by the
     controller and resume from their checkpoints on a new server (again exactly one), and end
     with exactly the epochs of a job run without interruption.

Skips (77) while `hone-train --serve --listen` is refused as an unknown option.
usage: test_worker_pack.py HONE-CONTROLLER HONE-WORKER HONE-TRAIN"""
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from honeproc import ControllerProcess, WorkerProcess  # noqa: E402
from blob_idx import write_blob_idx  # noqa: E402

EPOCHS = 30
SPEC = {"data": {"val_size": 200}, "model": {"hidden": 256}, "train": {"epochs": EPOCHS}}


def call(ctl, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    h = {"Content-Type": "application/json"} if data else {}
    r = urllib.request.Request(ctl.base + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(r, timeout=60) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def ok(ctl, method, path, body=None):
    st, js = call(ctl, method, path, body)
    assert st in (200, 201), (method, path, st, js)
    return js


def job(ctl, jid):
    return ok(ctl, "GET", "/api/v1/jobs/" + jid)


def wait_until(what, cond, timeout=300):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def final(ctl, jid, timeout=300):
    """The job once it is over (a failed attempt that is retried goes back to queued)."""
    return wait_until("job %s to end" % jid,
                      lambda: (lambda j: j if j["status"] in ("done", "failed", "canceled",
                                                               "stopped", "paused") else None)(
                          job(ctl, jid)), timeout)


def epochs(ctl, jid):
    m = ok(ctl, "GET", "/api/v1/jobs/%s/metrics?limit=1000" % jid)["metrics"]
    return [(r["epoch"], r.get("train_loss"), r.get("val_loss"), r.get("val_accuracy"))
            for r in m]


def servers(sock):
    """Pids of the processes serving sock (their command line has --listen SOCK)."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            argv = open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")
            state = open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and b"--listen" in argv and sock.encode() in argv:
            found.append(int(p))
    return sorted(found)


def peer_pid(sock):
    """The pid of the process listening on sock (SO_PEERCRED), or None."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock)
        cred = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", cred)[0]
    except OSError:
        return None
    finally:
        s.close()


def listen_supported(train, root):
    """False when hone-train refuses --listen (packtrain's server not there yet)."""
    sock = os.path.join(root, "probe.sock")
    p = subprocess.Popen([train, "--serve", "--listen", sock, "--idle-exit", "1"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return True
    if p.returncode != 0 and b"listen" in err:
        print("SKIP: hone-train refuses --serve --listen: %s" % err.decode(errors="replace"))
        return False
    return True


def starts(workers):
    """Servers started by the workers, as their logs say."""
    return sum(len(re.findall(r"started the trainer server at", w.text())) for w in workers)


def worker_pids(w, jid):
    return [int(x) for x in re.findall(r"job %s: ran on the trainer server pid (\d+)" % jid,
                                       w.text())]


def main():
    ctl_bin, wrk_bin, trn_bin = (os.path.abspath(a) for a in sys.argv[1:4])
    root = tempfile.mkdtemp(prefix="hone-pack-")
    if not listen_supported(trn_bin, root):
        shutil.rmtree(root, ignore_errors=True)
        return 77
    data_dir = os.path.join(root, "ctl")
    ds_dir = os.path.join(data_dir, "datasets", "tiny")
    os.makedirs(os.path.dirname(ds_dir))
    write_blob_idx(ds_dir, 1200, 200)
    cfg = os.path.join(root, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("log_format: text\nheartbeat_seconds: 1\nlease_seconds: 5\n"
                "data_roots: [\"%s\"]\n" % data_dir)
    sock = os.path.join(root, "trainer.sock")
    ctl = ControllerProcess(ctl_bin, data_dir, config=cfg,
                            log_path=os.path.join(root, "controller.log"))
    workers = []
    passed = False
    try:
        ctl.start()
        ds = ok(ctl, "POST", "/api/v1/datasets", {"name": "tiny", "path": ds_dir})["id"]
        exp = ok(ctl, "POST", "/api/v1/experiments",
                 {"name": "e", "network_arch": "mlp", "train_datasets": [ds],
                  "specs": SPEC})["id"]
        for name in ("a", "b", "c"):
            workers.append(WorkerProcess(wrk_bin, trn_bin, root, name, ctl.base,
                                         extra=["--trainer-socket", sock, "--grace", "5"]))
        for w in workers:  # at once: they race to start the server
            w.start()

        # 1. Three jobs at once on one server.
        first = [ok(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp,
                    {"action": "train"})["id"] for _ in range(3)]
        wait_until("three jobs running past epoch 1",
                   lambda: all(job(ctl, j)["status"] == "running" and
                               (job(ctl, j).get("epoch") or 0) >= 2 for j in first), 240)
        pid = peer_pid(sock)
        assert pid, "nobody listens on %s" % sock
        assert servers(sock) == [pid], (servers(sock), pid)

        # 2. Cancel one (its next report is answered stop): only it ends, by the cancel line.
        victim, rest = first[0], first[1:]
        ok(ctl, "POST", "/api/v1/jobs/%s/cancel" % victim)
        ended = r"job %s: (stopped|canceled) after \d+ epoch line\(s\), exit 143" % victim
        wait_until("the canceled job to end",
                   lambda: any(re.search(ended, w.text()) for w in workers), 120)
        for j in rest:
            st = job(ctl, j)
            assert st["status"] == "running" and st["epoch"] < EPOCHS, \
                "job %s did not keep running after another job's cancel: %s" % (j, st)
        assert peer_pid(sock) == pid and servers(sock) == [pid], "the cancel touched the server"
        for j in rest:
            st = final(ctl, j)
            assert st["status"] == "done" and st["attempts"] == 0, st
        whole = epochs(ctl, rest[0])
        assert [e[0] for e in whole] == list(range(1, EPOCHS + 1)), whole
        assert epochs(ctl, rest[1]) == whole, "two runs of one spec on one server differ"
        for j in first:
            ran = [p for w in workers for p in worker_pids(w, j)]
            assert ran == [pid], (j, ran, pid)
        assert starts(workers) == 1, "%d servers started" % starts(workers)
        assert servers(sock) == [pid]

        # 3. kill -9 of the shared server mid-trial: both jobs retried, resumed, finished.
        second = [ok(ctl, "POST", "/api/v1/experiments/%s/jobs" % exp,
                     {"action": "train"})["id"] for _ in range(2)]
        wait_until("two jobs running past epoch 2",
                   lambda: all(job(ctl, j)["status"] == "running" and
                               (job(ctl, j).get("epoch") or 0) >= 3 for j in second), 240)
        os.kill(pid, signal.SIGKILL)
        killed_at = {j: job(ctl, j)["epoch"] for j in second}
        assert all(e < EPOCHS for e in killed_at.values()), "ended before the kill: make it longer"
        for j in second:
            st = final(ctl, j)
            assert st["status"] == "done" and st["attempts"] >= 1, st
            assert epochs(ctl, j) == whole, "job %s resumed differs from the whole run" % j
        new = peer_pid(sock)
        assert new and new != pid, (new, pid)
        assert starts(workers) == 2, "%d servers started in all" % starts(workers)
        assert servers(sock) == [new], (servers(sock), new)
        logs = "".join(w.text() for w in workers)
        for j in second:
            assert re.search(r"job %s: starting .*resumed" % j, logs), logs
            assert "job %s: ran on the trainer server pid %d" % (j, new) in logs, logs
        passed = True
    finally:
        for w in workers:
            w.stop()
        for p in servers(sock):  # it would end by itself after --idle-exit 60
            os.kill(p, signal.SIGKILL)
        rc = ctl.stop()
        if not passed:
            for w in workers:
                print("---- worker %s\n%s" % (w.name, w.text()[-6000:]))
                srv = os.path.join(root, "w-%s" % w.name, "trainer-server.log")
                if os.path.exists(srv):
                    print("---- its trainer-server.log\n" + open(srv).read()[-4000:])
            print("---- controller\n" + ctl.tail())
    assert rc == 0, "controller exited %d" % rc
    for w in workers:  # non-zero under ASan when LeakSanitizer found leaks
        assert w.proc.returncode == 0, "worker %s exited %d:\n%s" % (
            w.name, w.proc.returncode, w.text()[-4000:])
    shutil.rmtree(root, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
