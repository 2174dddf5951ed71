#!/usr/bin/env python3
"""bench/record.py: the bench record (JSON lines, one per measurement, per commit and device) and
its check. The GPU benches print RESULT lines (`RESULT impl=hone arch=cnn batch=128 ...
s_per_epoch=0.1374 ...`); this script turns them into record lines and compares a run with the
committed record (bench/results/record.jsonl), failing on a slowdown beyond noise. Stdlib only.

  record.py lines --bench NAME [--commit C] [--device D] [--date D] [--source S] [FILE...]
      RESULT lines (FILEs or stdin) -> record lines on stdout
  record.py table --bench NAME --commit C --device D --date D --source S FILE
      a table as bench/train_gpu.sh prints it (impl arch batch math s/epoch img/s ... acc@N)
      -> record lines (how the record was seeded from bench/results/*.txt)
  record.py compare [--record FILE] [--tolerance 0.10] NEW.jsonl
      each measurement of NEW against the last record line of the same device, bench and
      config: a table (old, new, ratio); exit 1 when a gated one is slower by more than the
      tolerance; faster, new configs and other devices are reported, never failed; exit 2 on a
      record or run that is not record lines, or a run without measurements

A record line: {"commit", "date", "device" (nvidia-smi's name), "bench", "config" {impl, arch,
batch, math, epochs}, "metric" ("s_per_epoch"; lower is better), "value", "img_per_s",
"acc" (test accuracy where printed), "first_epoch", "gate" (false for PyTorch's rows: a
reference, not our code), "source" (where the figure came from)}. Seconds never go into a test:
this script is run by tests/gpu/run.sh on a GPU machine, and its own test feeds it made-up lines.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

CONFIG_KEYS = ("impl", "arch", "batch", "math", "epochs")
INT_KEYS = ("batch", "epochs")
DEFAULT_RECORD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "record.jsonl")


def die(msg):
    print("record.py: " + msg, file=sys.stderr)
    sys.exit(2)


def number(v):
    try:
        return int(v)
    except ValueError:
        return float(v)


def is_number(v):
    try:
        float(v)
        return True
    except ValueError:
        return v == "-"  # a ratio column without its PyTorch row


def commit_of(given):
    """--commit, else $HONE_COMMIT, else git's short hash of this checkout (none on the device
    machine, which gets a copy of the tree without .git: the caller passes HONE_COMMIT there)."""
    if given:
        return given
    if os.environ.get("HONE_COMMIT"):
        return os.environ["HONE_COMMIT"]
    try:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        out = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "-uno"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def device_of(given):
    """--device, else $HONE_BENCH_DEVICE, else nvidia-smi's name of the first GPU."""
    if given:
        return given
    if os.environ.get("HONE_BENCH_DEVICE"):
        return os.environ["HONE_BENCH_DEVICE"]
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        names = [l.strip() for l in out.stdout.splitlines() if l.strip()]
        if out.returncode == 0 and names:
            return names[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def make_line(bench, fields, commit, device, date, source):
    """One record line from a RESULT line's key=value fields."""
    missing = [k for k in ("impl", "s_per_epoch") if k not in fields]
    if missing:
        raise ValueError("RESULT line without " + ", ".join(missing))
    config = {}
    for k in CONFIG_KEYS:
        if k in fields:
            config[k] = int(fields[k]) if k in INT_KEYS else fields[k]
    line = {"commit": commit, "date": date, "device": device, "bench": bench, "config": config,
            "metric": "s_per_epoch", "value": float(fields["s_per_epoch"])}
    for k in ("img_per_s", "acc", "first_epoch"):
        if k in fields:
            line[k] = number(fields[k])
    line["gate"] = not fields["impl"].startswith("torch")
    if source:
        line["source"] = source
    return line


def today():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def cmd_lines(a):
    commit, device, date = commit_of(a.commit), device_of(a.device), a.date or today()
    streams = [open(f) for f in a.files] if a.files else [sys.stdin]
    n = 0
    for s in streams:
        for raw in s:
            if not raw.startswith("RESULT "):
                continue
            try:
                fields = dict(kv.split("=", 1) for kv in raw.split()[1:])
                print(json.dumps(make_line(a.bench, fields, commit, device, date, a.source)))
            except ValueError as e:
                die("%s: %s" % (e, raw.strip()))
            n += 1
    if n == 0:
        print("record.py: no RESULT lines", file=sys.stderr)


def cmd_table(a):
    """The table bench/train_gpu.sh prints: a header starting 'impl' whose last column is acc@N,
    then one row a measurement, until the first line that is not one."""
    rows, epochs = [], None
    with open(a.file) as f:
        lines = f.read().splitlines()
    for i, l in enumerate(lines):
        cols = l.split()
        if cols[:4] == ["impl", "arch", "batch", "math"] and cols[-1].startswith("acc@"):
            epochs = int(cols[-1][4:])
            for r in lines[i + 1:]:  # "x eager" and "x r-o" are one column each in a row
                c = r.split()
                if len(c) < 7 or not all(is_number(v) for v in c[2:3] + c[4:]):
                    break
                rows.append(c)
            break
    if epochs is None or not rows:
        die("%s: no bench/train_gpu.sh table" % a.file)
    for c in rows:
        fields = {"impl": c[0], "arch": c[1], "batch": c[2], "math": c[3], "s_per_epoch": c[4],
                  "img_per_s": c[5], "acc": c[-1], "epochs": str(epochs)}
        print(json.dumps(make_line(a.bench, fields, a.commit, a.device, a.date, a.source)))


def key_of(line):
    return (line.get("device"), line.get("bench"),
            json.dumps(line.get("config", {}), sort_keys=True), line.get("metric", "s_per_epoch"))


def read_jsonl(path, what):
    out = []
    try:
        with open(path) as f:
            for no, raw in enumerate(f, 1):
                raw = raw.strip()
                if not raw or raw.startswith("#"):
                    continue
                try:
                    j = json.loads(raw)
                except ValueError as e:
                    die("%s %s:%d: not JSON: %s" % (what, path, no, e))
                if not isinstance(j, dict) or not isinstance(j.get("value"), (int, float)) or \
                        not isinstance(j.get("config"), dict):
                    die("%s %s:%d: not a record line (value, config)" % (what, path, no))
                out.append(j)
    except OSError as e:
        die("%s: %s" % (what, e))
    return out


def describe(cfg):
    return " ".join(str(cfg[k]) for k in CONFIG_KEYS if k in cfg) or "-"


def cmd_compare(a):
    if not a.tolerance >= 0:
        die("--tolerance must be a fraction >= 0 (0.10 is 10%)")
    record = read_jsonl(a.record, "record") if os.path.exists(a.record) else []
    new = read_jsonl(a.new, "run")
    if not new:
        die("%s: no measurements to compare (did the bench run?)" % a.new)
    last = {}
    for l in record:  # the record is appended to: the last line of a key is its latest figure
        last[key_of(l)] = l
    devices = {l.get("device") for l in record}
    slower, rows = [], []
    for l in new:
        old = last.get(key_of(l))
        gate = l.get("gate", True)
        if old is None:
            status = "new (no record)" if l.get("device") in devices else "new device"
            rows.append((l, None, None, status))
            continue
        ratio = l["value"] / old["value"] if old["value"] > 0 else float("inf")
        if ratio > 1 + a.tolerance:
            status = "SLOWER" if gate else "slower (reference, not gated)"
            if gate:
                slower.append((l, old, ratio))
        elif ratio < 1 - a.tolerance:
            status = "faster"
        else:
            status = "ok"
        rows.append((l, old, ratio, status))
    print("%-10s %-32s %-10s %9s %9s %7s  %s" % ("bench", "config (impl arch batch math epochs)",
                                                "old commit", "old", "new", "ratio", "status"))
    for l, old, ratio, status in rows:
        acc = ""
        if old is not None and "acc" in old and "acc" in l:
            acc = "  acc %.4f -> %.4f" % (old["acc"], l["acc"])
        print("%-10s %-32s %-10s %9s %9.4f %7s  %s%s" % (
            l.get("bench", "-"), describe(l["config"]),
            old.get("commit", "-") if old else "-",
            "%.4f" % old["value"] if old else "-", l["value"],
            "%.3f" % ratio if ratio is not None else "-", status, acc))
    run_devices = sorted({str(l.get("device")) for l in new})
    print("record.py: %d measurement(s) on %s against %s (tolerance %.0f%%)" % (
        len(new), ", ".join(run_devices) or "-", a.record, a.tolerance * 100))
    if slower:
        worst = max(slower, key=lambda s: s[2])
        print("record.py: FAIL: %d measurement(s) slower than the record by more than %.0f%%; "
              "worst %s %s: %.4f -> %.4f s (%.2fx, record from %s)" % (
                  len(slower), a.tolerance * 100, worst[0].get("bench"),
                  describe(worst[0]["config"]), worst[1]["value"], worst[0]["value"], worst[2],
                  worst[1].get("commit", "?")))
        return 1
    print("record.py: ok: no measurement slower than the record by more than %.0f%%" %
          (a.tolerance * 100))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    pl = sub.add_parser("lines", help="RESULT lines -> record lines")
    pl.add_argument("--bench", required=True)
    pl.add_argument("--commit")
    pl.add_argument("--device")
    pl.add_argument("--date")
    pl.add_argument("--source")
    pl.add_argument("files", nargs="*")
    pt = sub.add_parser("table", help="a bench/train_gpu.sh table -> record lines")
    for k in ("bench", "commit", "device", "date", "source"):
        pt.add_argument("--" + k, required=True)
    pt.add_argument("file")
    pc = sub.add_parser("compare", help="a run against the record")
    pc.add_argument("--record", default=DEFAULT_RECORD)
    pc.add_argument("--tolerance", type=float, default=os.environ.get("BENCH_TOLERANCE", "0.10"))
    pc.add_argument("new")
    a = p.parse_args()
    if a.cmd == "lines":
        cmd_lines(a)
    elif a.cmd == "table":
        cmd_table(a)
    else:
        sys.exit(cmd_compare(a))


if __name__ == "__main__":
    main()
