#!/usr/bin/env python3
"""Hostile-input test: starts a real hone-controller (port 0, temp data dir, one data root) and
sends every case of hostile_cases.py. Each must get an acceptable answer (a JSON 4xx naming the
field where one is expected), leave the controller up, and leave the store's row counts unchanged.
At the end the controller must exit cleanly on SIGTERM (under ASan: no leaks).
Usage: test_hostile.py HONE_CONTROLLER [--write-table docs/hostile-inputs.md] [--only SUBSTR]"""
import argparse
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_cases import CASES, KNOWN_BUGS  # noqa: E402
from hostile_http import Controller, call, exchange, write_idx  # noqa: E402


def fixtures(ctl, x):
    p = ctl.port
    r = call(p, "POST", "/api/v1/datasets", {"name": "d", "type": "image_classification",
                                            "format": "idx", "path": x["roots"] + "/ds"})
    assert r.status == 201, r
    x["ds"] = r.json()["id"]
    r = call(p, "POST", "/api/v1/experiments", {"name": "e", "network_arch": "mlp",
                                               "train_datasets": [x["ds"]],
                                               "metric": "val_accuracy",
                                               "specs": {"train": {"epochs": 5}}})
    assert r.status == 201, r
    x["exp"] = r.json()["id"]
    r = call(p, "POST", "/api/v1/workers", {"name": "w1", "resources": {"cpus": 1, "gpus": []}})
    assert r.status == 201, r
    x["wrk"] = r.json()["id"]
    x["auth"] = {x["wrk"]: {"Authorization": "Bearer " + r.json()["token"]}}
    # A worker that gives no resources (optional in the contract).
    r = call(p, "POST", "/api/v1/workers", {"name": "w2"})
    assert r.status == 201, r
    x["wrk2"] = r.json()["id"]
    x["auth"][x["wrk2"]] = {"Authorization": "Bearer " + r.json()["token"]}
    r = call(p, "POST", "/api/v1/experiments/%s/jobs" % x["exp"], {"action": "train"})
    assert r.status == 201, r
    x["job"] = r.json()["id"]
    r = call(p, "POST", "/api/v1/workers/%s/lease?wait=0" % x["wrk"], b"", ctype=None,
             headers=x["auth"][x["wrk"]])
    assert r.status == 200 and r.json()["job"]["id"] == x["job"], r
    os.makedirs(os.path.join(x["data"], "artifacts", x["job"]), exist_ok=True)
    with open(os.path.join(x["data"], "artifacts", x["job"], "dl.bin"), "wb") as f:
        f.write(bytes(range(250)) * 4)  # 1000 bytes, for the Range rows
    r = call(p, "POST", "/api/v1/jobs/%s/report" % x["job"],
             {"worker_id": x["wrk"], "epoch": 1, "metrics": {"val_accuracy": 0.5}},
             headers=x["auth"][x["wrk"]])
    assert r.status == 200, r


def judge(c, x, rs, closed, ctl, before):
    """Returns (ok, answer text, problems)."""
    problems = []
    first = rs[0] if rs else None
    if first is None:
        answer = "connection closed, no answer" if closed else "no answer (timeout)"
        if "close" not in c["expect"]:
            problems.append("expected %s" % sorted(map(str, c["expect"])))
    else:
        answer = str(first.status)
        if first.status not in c["expect"]:
            problems.append("status %d, expected %s" % (first.status,
                                                        sorted(map(str, c["expect"]))))
        if first.status >= 500:
            problems.append("5xx answer")
        if 400 <= first.status < 500:
            js = first.json()
            err = js.get("error") if isinstance(js, dict) else None
            if not isinstance(err, dict) or err.get("status") != first.status or \
                    not err.get("message"):
                problems.append("4xx without a JSON error body: %r" % first.body[:120])
            else:
                answer += " `%s`" % err.get("code")
                if err.get("field"):
                    answer += " field=`%s`" % err["field"]
                if c["field"] and err.get("field") != c["field"]:
                    problems.append("field %r, expected %r" % (err.get("field"), c["field"]))
        if c["n"] > 1:
            statuses = [r.status for r in rs]
            answer += " (%d answers%s)" % (len(rs), ", then closed" if closed else "")
            if 200 in c["expect"] and len(rs) != c["n"]:
                problems.append("%d of %d pipelined requests answered" % (len(rs), c["n"]))
            if 200 not in c["expect"] and 200 in statuses[1:]:
                problems.append("a smuggled request was answered: %s" % statuses)
        elif closed:
            answer += ", closed"
        if c.get("closes") and not closed:
            problems.append("connection left open after the answer")
    if c["check"] and first is not None and not c["check"](x, first):
        problems.append("post-condition failed")
    if not ctl.alive():
        problems.append("controller is down")
        return False, answer, problems
    after = ctl.snapshot()
    if after != before:
        diff = {k: (before.get(k), after.get(k)) for k in set(before) | set(after)
                if before.get(k) != after.get(k)}
        problems.append("store changed: %s" % diff)
    return not problems, answer, problems


def run_case(ctl, x, c):
    try:
        rs, closed = exchange(ctl.port, c["build"](x), n=c["n"], timeout=c["timeout"],
                              pause=c["pause"], probe=3.0 if c.get("closes") else 0.05)
    except OSError as e:
        rs, closed = [], True
        print("  (%s)" % e)
    return rs, closed


def write_table(path, rows, counts):
    kinds = sorted({c["kind"] for c, _, _, _ in rows})
    with open(path, "w") as f:
        f.write("# Hostile inputs tried against hone-controller\n\n")
        f.write("Generated by `tests/hostile/test_hostile.py --write-table` (CTest `hostile_inputs`"
                "), which\nstarts a real controller and sends each input on its own connection. "
                "After every case the\ncontroller must answer `GET /healthz` and the row count of "
                "every store table must be\nunchanged. `close` in *accepted* means the server may "
                "drop the connection instead of\nanswering. Result: %d cases, %d passed, %d failed; "
                "%d answered 5xx; %d left the controller down.\n\n" % counts)
        f.write("| # | kind | input | accepted | answer | result |\n|---|---|---|---|---|---|\n")
        for i, (c, ok, answer, problems) in enumerate(rows, 1):
            acc = ", ".join(sorted(map(str, c["expect"])))
            if c["field"]:
                acc += " field=`%s`" % c["field"]
            if c.get("closes"):
                acc += ", then closed"
            res = "ok" if ok else "**FAIL**: " + "; ".join(problems)
            if not ok and c["kind"] in KNOWN_BUGS:
                res += " (%s)" % KNOWN_BUGS[c["kind"]]
            f.write("| %d | %s | %s | %s | %s | %s |\n" % (i, c["kind"], c["name"], acc,
                                                             answer.replace("|", "\\|"),
                                                             res.replace("|", "\\|")))
        f.write("\nKinds: %s.\n" % ", ".join(kinds))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("controller")
    ap.add_argument("--write-table")
    ap.add_argument("--only")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="hone-hostile-")
    x = {"roots": os.path.join(root, "roots"), "outside": os.path.join(root, "outside", "ds"),
         "data": os.path.join(root, "data")}
    write_idx(x["roots"] + "/ds")
    write_idx(x["outside"])
    os.makedirs(x["roots"] + "/empty")
    os.symlink(x["outside"], x["roots"] + "/escape")
    ctl = Controller(args.controller, root, "data_roots: [%s]\nlimits:\n  body_bytes: 65536\n"
                     "  header_bytes: 8192\n  upload_bytes: 1048576\n" % x["roots"])
    ctl.start()
    failed = True
    try:
        fixtures(ctl, x)
        cases = [c for c in CASES if not args.only or args.only in c["name"]]
        # Slow cases (slowloris) run on a thread beside the others.
        slow = [c for c in cases if c["pause"]]
        slow_res = {}

        def run_slow():
            for c in slow:
                slow_res[c["name"]] = run_case(ctl, x, c)
        th = threading.Thread(target=run_slow)
        th.start()
        rows = []
        before = ctl.snapshot()
        for c in cases:
            if c["pause"]:
                continue
            rs, closed = run_case(ctl, x, c)
            ok, answer, problems = judge(c, x, rs, closed, ctl, before)
            rows.append((c, ok, answer, problems))
            print("%-4s %-7s %-55s %s %s" % ("ok" if ok else "FAIL", c["kind"], c["name"][:55],
                                             answer, "; ".join(problems)))
            sys.stdout.flush()
            before = ctl.snapshot()  # one bad case must not fail every later one
            if not ctl.alive():
                break
        th.join()
        for c in slow:
            rs, closed = slow_res[c["name"]]
            ok, answer, problems = judge(c, x, rs, closed, ctl, before)
            rows.append((c, ok, answer, problems))
            print("%-4s %-7s %-55s %s %s" % ("ok" if ok else "FAIL", c["kind"], c["name"][:55],
                                             answer, "; ".join(problems)))
        n_fail = sum(1 for r in rows if not r[1])
        n_5xx = sum(1 for r in rows if any("5xx" in p for p in r[3]))
        n_down = sum(1 for r in rows if any("down" in p for p in r[3]))
        up = ctl.alive()
        rc = ctl.stop()
        exit_ok = rc == 0
        rows.append((dict(kind="daemon", name="SIGTERM after all cases: clean exit (ASan: no leaks)",
                          expect={"exit 0"}, field=None), exit_ok, "exit %d" % rc,
                     [] if exit_ok else ["exit code %d (see the LeakSanitizer report)" % rc]))
        if not exit_ok:
            n_fail += 1
            print("FAIL daemon exit code %d\n%s" % (rc, ctl.tail()))
        counts = (len(rows), len(rows) - n_fail, n_fail, n_5xx, n_down)
        print("%d cases, %d passed, %d failed, %d answered 5xx, %d left it down; kinds: %s" % (
            counts[0], counts[1], counts[2], n_5xx, n_down,
            ", ".join(sorted({r[0]["kind"] for r in rows}))))
        if args.write_table:
            write_table(args.write_table, rows, counts)
        failed = n_fail > 0 or not up
    finally:
        if ctl.proc.poll() is None:
            ctl.proc.kill()
        if failed:
            print("controller log tail:\n" + ctl.tail(3000))
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
