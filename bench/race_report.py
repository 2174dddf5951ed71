#!/usr/bin/env python3
"""bench/race_report.py: the JSON work of bench/race.sh, standard library only (it runs where the
race runs, on a bare GPU machine too).

  race_report.py wait URL JOB HARD_DEADLINE      polls the job until it ends; past HARD_DEADLINE
                                                 (Unix s) cancels it; prints its final status
  race_report.py hone URL JOB T0 BUDGET_S UTIL SKIP DEFAULTS
                                                 one JSON line for Hone's AutoML side (and the
                                                 space it swept written into DEFAULTS' copy);
                                                 UTIL's first SKIP samples came before the search
  race_report.py default JOB_JSON T0 EPOCHS UTIL one JSON line for the default spec trained alone
  race_report.py util FILE                       mean GPU utilisation of nvidia-smi's samples
  race_report.py table JSONL...                  the closing table (of one or several runs)
"""
import json
import sys
import time
import urllib.error
import urllib.request


def get(url, path):
    with urllib.request.urlopen(url + path, timeout=30) as r:
        return json.load(r)


def post(url, path):
    req = urllib.request.Request(url + path, data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def get_all(url, path, key):
    """Every item of a paged list (offset/next_offset)."""
    items, offset = [], 0
    sep = "&" if "?" in path else "?"
    while True:
        page = get(url, f"{path}{sep}limit=500&offset={offset}")
        items += page.get(key) or []
        nxt = page.get("next_offset")
        if not isinstance(nxt, int) or nxt <= offset:
            return items
        offset = nxt


ENDED = {"done", "failed", "canceled", "error"}


def wait(url, job, hard_deadline):
    canceled = False
    while True:
        try:
            st = get(url, f"/api/v1/jobs/{job}").get("status")
        except (urllib.error.URLError, OSError) as e:
            print(f"race_report: controller unreachable: {e}", file=sys.stderr)
            return 1
        if st in ENDED:
            print(st + (" (canceled at the hard deadline)" if canceled else ""))
            return 0
        if not canceled and time.time() > hard_deadline:
            print("race_report: past the budget and its grace: canceling the search",
                  file=sys.stderr)
            try:
                post(url, f"/api/v1/jobs/{job}:cancel")
            except (urllib.error.URLError, OSError) as e:
                print(f"race_report: cancel failed: {e}", file=sys.stderr)
            canceled = True
        time.sleep(1.0)


def util_mean(path, skip=0):
    """Mean of the numeric lines nvidia-smi wrote (one per sample) after the first skip lines, or
    None without any."""
    vals = []
    try:
        with open(path) as f:
            for i, line in enumerate(f):
                if i < skip:
                    continue
                try:
                    vals.append(float(line.strip()))
                except ValueError:
                    pass
    except OSError:
        return None
    return round(sum(vals) / len(vals), 1) if vals else None


def num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def hone(url, job_id, t0, budget_s, util, skip, defaults):
    job = get(url, f"/api/v1/jobs/{job_id}")
    trials = get_all(url, f"/api/v1/jobs?parent={job_id}", "jobs")
    a = job.get("automl") or {}
    res = job.get("result") or {}
    end = num(job.get("finished_unix")) or time.time()
    # the job's answer (with a budget: the best *finished* trial), else the view's best so far
    best_id = res.get("best_job_id") or a.get("best_job_id")
    best = next((t for t in trials if t.get("id") == best_id), None)
    test = num(res.get("best_test_accuracy"))
    tested = best_id
    if test is None:  # the best trial did not finish: the best finished one's (as hone demo)
        fin = [t for t in trials if num((t.get("result") or {}).get("test_accuracy")) is not None
               and num((t.get("result") or {}).get("best_metric")) is not None]
        if fin:
            t = max(fin, key=lambda t: t["result"]["best_metric"])
            test, tested = t["result"]["test_accuracy"], t.get("id")
        else:
            tested = None
    bres = (best or {}).get("result") or {}
    tres = next((t.get("result") or {} for t in trials if tested and t.get("id") == tested), {})
    out = {
        "side": "hone",
        "budget_s": round(budget_s, 1),
        "wall_s": round(end - t0, 1),
        "job_id": job_id,
        "status": job.get("status"),
        "algorithm": a.get("algorithm"),
        "best_val_accuracy": num(res.get("best_metric")) if num(res.get("best_metric")) is not None
        else num(a.get("best_metric")),
        "test_accuracy": test,
        "tested_job_id": tested,
        "trials": len(trials),
        "trials_stopped_early": a.get("trials_stopped_early"),
        "trials_failed": a.get("trials_failed"),
        "epochs": a.get("epochs_done"),
        "best_trial": res.get("best_trial", a.get("best_trial")),
        "best_epochs": bres.get("epochs_trained", (best or {}).get("epoch")),
        "best_epoch": bres.get("best_epoch"),
        "tested_epochs": tres.get("epochs_trained"),  # the epochs of the trial whose test it is
        "best_config": res.get("best_config") or a.get("best_config"),
        "hone_gpu_util_mean": num(a.get("gpu_util_mean")),
        "search_started_s": round(num(job.get("started_unix")) - t0, 1)
        if num(job.get("started_unix")) else None,
        "gpu_util_mean": util_mean(util) if util else None,
        "gpu_util_search": util_mean(util, skip) if util else None,
    }
    # the budget's own fields, where the job has them (hone automl start --budget-minutes)
    for k, v in a.items():
        if k.startswith("budget"):
            out["automl_" + k] = v
    if isinstance(res.get("budget"), dict):  # what the budget cut, at the end
        out["budget_result"] = res["budget"]
    if defaults:  # what Hone really swept is what the other side sweeps
        with open(defaults) as f:
            d = json.load(f)
        if isinstance(a.get("search_space"), dict) and a["search_space"]:
            d["default_hyperparameters"] = a["search_space"]
        with open(defaults, "w") as f:
            json.dump(d, f)
    return out


def default(job_json, t0, epochs, util):
    with open(job_json) as f:
        job = json.load(f)
    res = job.get("result") or {}
    end = num(job.get("finished_unix")) or time.time()
    return {
        "side": "default-spec",
        "budget_s": None,
        "wall_s": round(end - t0, 1),
        "job_id": job.get("id"),
        "status": job.get("status"),
        "best_val_accuracy": num(res.get("best_val_accuracy", res.get("best_metric"))),
        "test_accuracy": num(res.get("test_accuracy")),
        "trials": 1,
        "epochs": res.get("epochs_trained", epochs),
        "gpu_util_mean": util_mean(util) if util else None,
    }


def cell(v, fmt):
    if v is None:
        return "-"
    try:
        return fmt.format(v)
    except (ValueError, TypeError):
        return str(v)


def table(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    rows.append(json.loads(line))
    h = f"{'side':<14}{'budget s':>9}{'wall s':>8}{'used':>6}{'best val':>10}{'test':>8}" \
        f"{'trials':>8}{'epochs':>8}{'ep/s':>7}{'GPU %':>7}"
    print(h)
    for r in rows:
        used = r["wall_s"] / r["budget_s"] if r.get("budget_s") and r.get("wall_s") else None
        eps = r["epochs"] / r["wall_s"] if num(r.get("epochs")) and num(r.get("wall_s")) else None
        print(f"{r.get('side', '?'):<14}{cell(r.get('budget_s'), '{:.0f}'):>9}"
              f"{cell(r.get('wall_s'), '{:.0f}'):>8}{cell(used, '{:.0%}'):>6}"
              f"{cell(r.get('best_val_accuracy'), '{:.4f}'):>10}"
              f"{cell(r.get('test_accuracy'), '{:.4f}'):>8}{cell(r.get('trials'), '{}'):>8}"
              f"{cell(r.get('epochs'), '{}'):>8}{cell(eps, '{:.2f}'):>7}"
              f"{cell(r.get('gpu_util_mean'), '{:.0f}'):>7}")
    by = {r.get("side"): r for r in rows}
    h_, o_, d_ = by.get("hone"), by.get("optuna-torch"), by.get("default-spec")
    if h_ and d_ and num(h_.get("test_accuracy")) is not None and \
            num(d_.get("test_accuracy")) is not None:
        print(f"Hone's AutoML best over the default spec alone ({d_.get('epochs')} epochs): "
              f"{100 * (h_['test_accuracy'] - d_['test_accuracy']):+.2f} points of test accuracy")
    if h_ and o_ and num(h_.get("test_accuracy")) is not None and \
            num(o_.get("test_accuracy")) is not None:
        print(f"Hone over Optuna + PyTorch: "
              f"{100 * (h_['test_accuracy'] - o_['test_accuracy']):+.2f} points of test accuracy")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, a = argv[1], argv[2:]
    if cmd == "wait" and len(a) == 3:
        return wait(a[0], a[1], float(a[2]))
    if cmd == "hone" and len(a) == 7:
        print(json.dumps(hone(a[0], a[1], float(a[2]), float(a[3]), a[4], int(a[5]), a[6])))
        return 0
    if cmd == "default" and len(a) == 4:
        print(json.dumps(default(a[0], float(a[1]), int(a[2]), a[3])))
        return 0
    if cmd == "util" and len(a) == 1:
        print(json.dumps(util_mean(a[0])))
        return 0
    if cmd == "table" and a:
        table(a)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
