"""The hone command never prints server text raw (issue 26 item 8): names and descriptions planted
straight into the store with sqlite3 (as rows from before the API refused them, or from an older
server, would be) holding ESC sequences, OSC titles, BEL, CR, C1 controls and a right-to-left
override come out of `hone experiment list|get` and `hone dataset list|get` as \\x1b, \\u202e
escapes, with no control byte on stdout; --json prints the exact strings. The old CLI printed them
raw."""
import json
import os
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "controller"))
from hone_test import Controller, tempdir, write_idx  # noqa: E402

EVIL = "x\x1b]0;pwned\x07\x1b[2J\rok\u202egnp.exe\x9b31m"
SHOWN = "x\\x1b]0;pwned\\x07\\x1b[2J\\rok\\u202egnp.exe\\u009b31m"
RAW = ["\x1b", "\x07", "\r", "\u202e", "\x9b"]


def hone(binary, url, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("HONE_URL", "HONE_TOKEN")}
    env["HONE_CONFIG"] = os.path.join(tempdir(), "none")
    p = subprocess.run([binary, "--url", url] + list(args), capture_output=True, timeout=60,
                       env=env)
    assert p.returncode == 0, (args, p.returncode, p.stdout, p.stderr)
    return p.stdout.decode("utf-8")


def main():
    hone_bin, ctl_bin = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    d = tempdir()
    src = os.path.join(d, "src")
    write_idx(src)
    data = os.path.join(d, "data")
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write("data_roots: [%s]\n" % d)
    c = Controller(ctl_bin, data, config=cfg).start()
    try:
        ds = c.ok("POST", "/api/v1/datasets", {"name": "ds", "path": src})
        ex = c.ok("POST", "/api/v1/experiments",
                  {"name": "ex", "network_arch": "mlp", "train_datasets": [ds["id"]]})
        db = sqlite3.connect(os.path.join(data, "hone.db"), timeout=30)
        with db:
            db.execute("UPDATE datasets SET name = ?, description = ? WHERE id = ?",
                       (EVIL, EVIL, ds["id"]))
            db.execute("UPDATE experiments SET name = ?, description = ? WHERE id = ?",
                       (EVIL, EVIL, ex["id"]))
        db.close()
        for args in (("experiment", "list"), ("experiment", "get", ex["id"]),
                     ("dataset", "list"), ("dataset", "get", ds["id"])):
            out = hone(hone_bin, c.base, *args)
            bad = [ch for ch in RAW if ch in out]
            assert not bad, (args, bad, out)
            assert SHOWN in out, (args, out)
        # --json stays exact JSON: the stored strings as they are
        js = json.loads(hone(hone_bin, c.base, "--json", "experiment", "list"))
        assert js["experiments"][0]["name"] == EVIL, js
        js = json.loads(hone(hone_bin, c.base, "--json", "dataset", "get", ds["id"]))
        assert js["name"] == EVIL and js["description"] == EVIL, js
    finally:
        c.stop()
    print("ok")


if __name__ == "__main__":
    main()
