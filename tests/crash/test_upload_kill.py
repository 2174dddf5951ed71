"""kill -9 of the controller mid-upload leaves its temp files behind; the next start sweeps them
(controller/sweep.c), and nothing else. A real controller and a real upload over loopback:

  1. a dataset archive upload (POST /datasets:upload) sends its headers and 1 MiB of a 32 MiB body
     and stalls; the controller spools it to datasets/.upload-XXXXXX; kill -9 then, and the
     spool file is still there (so this test can fail);
  2. beside it, what other cut uploads leave: a half-extracted archive folder
     datasets/.upload-ds-<id>/ with files in it, artifacts/<job>/.upload-XXXXXX and
     packed/<dataset>/.upload-XXXXXX; and what must stay: datasets/ds-kept/, artifacts/<job>/
     model.bin, an `.upload` without the dash;
  3. the controller starts again: every .upload-* is gone, the rest is there, its log says
     uploads_swept with the count, and the store still answers.

usage: test_upload_kill.py HONE-CONTROLLER"""
import json
import os
import shutil
import socket
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crash_util import Controller, wait_for  # noqa: E402


def write(path, data=b"x"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = tempfile.mkdtemp(prefix="hone-upkill-")
    c = Controller(os.path.abspath(sys.argv[1]), root, "log_format: json\n")
    data = os.path.join(root, "data")
    sock = None
    try:
        c.start()
        # 1. a stalled archive upload, spooled
        port = int(c.base.rsplit(":", 1)[1])
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"POST /api/v1/datasets:upload?name=cut&type=image_classification"
                     b"&format=image_folder HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/x-tar\r\nContent-Length: %d\r\n\r\n"
                     % (32 << 20))
        sock.sendall(b"\0" * (1 << 20))
        dsdir = os.path.join(data, "datasets")

        def spooled():
            try:
                return [f for f in os.listdir(dsdir) if f.startswith(".upload-")
                        and os.path.getsize(os.path.join(dsdir, f)) > 0]
            except OSError:
                return None
        spool = wait_for(spooled, 30, 0.02, what="the upload's spool file")
        c.kill9()
        assert spooled() == spool, ("the spool file went with the kill", os.listdir(dsdir))

        # 2. what other cut uploads leave, and what must stay
        left = [os.path.join(dsdir, spool[0])]
        for p in ("datasets/.upload-ds-0123456789abcdef/train/a/1.png",
                  "datasets/.upload-ds-0123456789abcdef/train/b/2.png",
                  "artifacts/job-0123456789abcdef/.upload-Ab12Cd",
                  "packed/ds-0123456789abcdef/.upload-Zx98Yw"):
            write(os.path.join(data, p))
        left += [os.path.join(data, p) for p in ("datasets/.upload-ds-0123456789abcdef",
                                                 "artifacts/job-0123456789abcdef/.upload-Ab12Cd",
                                                 "packed/ds-0123456789abcdef/.upload-Zx98Yw")]
        kept = [os.path.join(data, p) for p in ("datasets/ds-kept/train/a/1.png",
                                                "artifacts/job-0123456789abcdef/model.bin",
                                                "artifacts/job-0123456789abcdef/.upload",
                                                "packed/ds-0123456789abcdef/28x28x1.hpk")]
        for p in kept:
            write(p)

        # 3. the next start sweeps them
        sock.close()
        sock = None
        c.start()
        still = [p for p in left if os.path.exists(p)]
        assert not still, ("left after the restart", still)
        gone = [p for p in kept if not os.path.exists(p)]
        assert not gone, ("swept what was not a temp file", gone)
        swept = [json.loads(line) for line in open(c.log_path, errors="replace")
                 if '"uploads_swept"' in line]
        assert len(swept) == 1 and swept[0]["removed"] == 4 and not swept[0]["failed"], swept
        assert c.ok("GET", "/api/v1/datasets")["datasets"] == [], "the cut upload made a dataset"
        rc = c.stop()
        assert rc == 0, "controller exit %d:\n%s" % (rc, c.tail())
    except BaseException:
        sys.stderr.write("---- controller log\n%s\n" % c.tail())
        raise
    finally:
        if sock:
            sock.close()
        if c.proc and c.proc.poll() is None:
            c.stop()
    shutil.rmtree(root, ignore_errors=True)
    print("upload kill: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
