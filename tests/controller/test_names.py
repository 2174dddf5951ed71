"""Names and descriptions a user sets, which other users' terminals and pages print later (issue 26
item 8), against a real hone-controller: C0 and C1 control characters (ESC, BEL, CR, LF, DEL, CSI),
bidi embeddings, overrides, isolates and marks (U+202A-202E, U+2066-2069, U+200E/200F, U+061C),
line separators and invalid UTF-8 are refused with 422 naming the field (name, description) in
dataset create and upload, experiment create and PATCH, and job create; nothing is stored (no new
row, the patched row unchanged, no uploaded folder). Descriptions may hold new lines and tabs;
other scripts (accents, CJK, emoji, Arabic, Hebrew letters) pass. The old controller stored them."""
import io
import os
import sys
import tarfile
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hone_test import Controller, binary_from_argv, tempdir, write_idx  # noqa: E402

BAD = ["\x1b[31mred", "\x1b]0;title\x07", "a\rb", "a\nb", "a\x7fb", "a\x9bb", "a\u202eb",
       "a\u202ab", "a\u2066b", "a\u2069b", "a\u200fb", "a\u200eb", "a\u061cb", "a\u2028b", "\tb"]
GOOD = ["plain", "café ñ", "模型-1", "🚀 run", "شبكة", "רשת", "a b.c_d-e (2)"]


def tar_dir(src):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for f in sorted(os.listdir(src)):
            data = open(os.path.join(src, f), "rb").read()
            ti = tarfile.TarInfo(f)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    return bio.getvalue()


def counts(c):
    return (c.ok("GET", "/api/v1/datasets")["datasets"],
            c.ok("GET", "/api/v1/experiments")["experiments"],
            c.ok("GET", "/api/v1/jobs")["jobs"])


def main():
    binary = binary_from_argv()
    d = tempdir()
    src = os.path.join(d, "src")
    write_idx(src)
    data = os.path.join(d, "data")
    os.makedirs(data)
    c = Controller(binary, data, config=_cfg(d)).start()
    dsdir = os.path.join(data, "datasets")
    tar = tar_dir(src)
    TAR = {"Content-Type": "application/x-tar"}
    try:
        ds = c.ok("POST", "/api/v1/datasets", {"name": "base", "path": src}, want=(201,))
        ex = c.ok("POST", "/api/v1/experiments",
                  {"name": "e", "network_arch": "mlp", "train_datasets": [ds["id"]]})
        before = counts(c)
        dirs = sorted(os.listdir(dsdir)) if os.path.isdir(dsdir) else []

        def refused(method, path, body=None, field="name", raw=None, headers=None):
            st, js = c.req(method, path, body, raw=raw, headers=headers)
            assert st == 422 and js["error"]["field"] == field, (method, path, body, st, js)
            assert counts(c) == before, ("stored", method, path, body)
            now = sorted(os.listdir(dsdir)) if os.path.isdir(dsdir) else []
            assert now == dirs, ("folder left", now)

        for bad in BAD:
            refused("POST", "/api/v1/datasets", {"name": bad, "path": src})
            exp = {"name": bad, "network_arch": "mlp", "train_datasets": [ds["id"]]}
            refused("POST", "/api/v1/experiments", exp)
            refused("PATCH", "/api/v1/experiments/" + ex["id"], {"name": bad})
            refused("POST", "/api/v1/experiments/%s/jobs" % ex["id"],
                    {"action": "train", "name": bad})
            q = urllib.parse.quote(bad.encode())
            refused("POST", "/api/v1/datasets:upload?name=" + q, raw=tar, headers=TAR)
            if bad not in ("a\nb", "\tb"):  # descriptions may hold new lines and tabs
                refused("POST", "/api/v1/datasets", {"name": "n", "path": src,
                                                     "description": bad}, field="description")
                refused("PATCH", "/api/v1/experiments/" + ex["id"], {"description": bad},
                        field="description")
                refused("POST", "/api/v1/experiments/%s/jobs" % ex["id"],
                        {"action": "train", "description": bad}, field="description")
                refused("POST", "/api/v1/datasets:upload?name=n&description=" + q, raw=tar,
                        headers=TAR, field="description")
        # invalid UTF-8 can only come in a query (JSON bodies are checked by the parser)
        for q in ("%ff", "a%c0%afb", "%ed%a0%80", "%e2%80"):
            refused("POST", "/api/v1/datasets:upload?name=" + q, raw=tar, headers=TAR)
        # what stays allowed
        for i, good in enumerate(GOOD):
            c.ok("POST", "/api/v1/datasets", {"name": good, "path": src,
                                              "description": "line 1\n\tline 2"}, want=(201,))
            c.ok("PATCH", "/api/v1/experiments/" + ex["id"], {"name": good,
                                                               "description": "a\nb"})
            c.ok("POST", "/api/v1/experiments/%s/jobs" % ex["id"],
                 {"action": "train", "name": good}, want=(201,))
        up = c.ok("POST", "/api/v1/datasets:upload?name=" + urllib.parse.quote("ünï"), raw=tar,
                  headers=TAR, want=(201,))
        assert up["name"] == "ünï", up
    finally:
        c.stop()
    print("ok")


def _cfg(d):
    p = os.path.join(d, "c.yaml")
    with open(p, "w") as f:
        f.write("data_roots: [%s]\nlog_format: json\n" % d)
    return p


if __name__ == "__main__":
    main()
