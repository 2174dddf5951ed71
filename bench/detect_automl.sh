#!/usr/bin/env bash
# Detection: the default spec against the AutoML best (issue 12; TAO's Table 2, baseline vs best).
# Through the real product: a local stack (`hone local`: controller and workers, on a GPU 4 workers
# packed on it), the hone CLI, hone-train. Generates gen_detect.py's full KITTI set once (its
# default sizes: 5000 + 500 images at 160x160) into a cache folder, creates the kitti dataset and
# a detectnet_v2 experiment (metric val_map, spec: the defaults plus train.epochs=EPOCHS), packs
# the set once (a convert job, not timed: every job after it reuses it), then
#   1. baseline: one train job of the default spec, timed from submission to done;
#   2. AutoML: one AutoML job over the default detection sweep (`hone experiment automl-defaults`),
#      ALGO (bohb by default, automl_R = EPOCHS so the best trial trains EPOCHS epochs like the
#      baseline), timed the same way;
# and evaluates each one's model on the test part (`hone job evaluate`). Prints a markdown table
# (spec, val mAP@0.5, test mAP@0.5, wall s, trials) and one JSON line with the same and the lift
# (AutoML minus baseline, in points). Exits 1 when any job failed (its error printed), 77 when
# Fashion-MNIST or the photographs are missing.
# Usage: bench/detect_automl.sh [--device cpu|cuda] [--epochs N] [--algorithm A] [--max-trials N]
#          [--nu N] [--seed N] [--size N] [--count N] [--set KEY=VALUE]... [--tiny] [--prepare]
#   --device     default cuda when hone-train lists a GPU, else cpu
#   --epochs     the baseline's epochs and the AutoML's full budget (default 60)
#   --algorithm  bohb (default: on this set it found 6.9 points where plain Hyperband's random
#                draws found 2.5), hyperband, asha, bayesian or random
#   --max-trials the trial cap (default 50): automl_max_recommendations for bayesian, random and
#                asha; Hyperband and BOHB have no such cap, their brackets fix the count, so nu
#                (default 3) is raised until the brackets hold at most this many trials
#   --size       model.input_size (default: the spec's, 128 for KITTI sets)
#   --set        a spec value for the experiment (baseline and AutoML alike), e.g.
#                train.math=bf16; repeatable. A swept key's value is where the search starts
#   --count      training images of the generated set (gen_detect.py --count; default its 5000, with
#                a tenth as many for val and for test); each count is generated and kept apart
#   --tiny       gen_detect.py --tiny (300 + 30 images at 128x128): a quick CPU smoke run
#   --prepare    only build and generate the set, then exit (a device command's 10 minutes: build
#                and generate in one, time in the next; both are kept in the build folder)
# Environment: HONE_BENCH_BUILD (build folder to use or make, default build-bench-detect;
# HONE_BENCH_CMAKE_ARGS are added to its configure), HONE_BENCH_CACHE (where the generated sets
# are kept, default <build>/detect-sets), HONE_FASHION_MNIST, HONE_PHOTOS_DIR, HONE_BENCH_KEEP=1
# (keep the stack's data dir, logs included; it is kept anyway when a job failed).
set -euo pipefail
{ # read whole before it runs: editing or checking out this file during a run cannot derail it
cd "$(dirname "$0")/.."
dev="" epochs=60 algo=bohb max_trials=50 nu="" seed=1 size=0 count="" tiny=0 prepare=0 sets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --device) dev=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --algorithm) algo=$2; shift 2 ;;
    --max-trials) max_trials=$2; shift 2 ;;
    --nu) nu=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --set) sets+=("$2"); shift 2 ;;
    --tiny) tiny=1; shift ;;
    --prepare) prepare=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "detect_automl: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
build=${HONE_BENCH_BUILD:-build-bench-detect}
need="cli/hone controller/hone-controller worker/hone-worker train/hone-train data/hone-pack"
missing=0
for b in $need; do [ -x "$build/$b" ] || missing=1; done
if [ $missing = 1 ]; then
  echo "detect_automl: building $build (Release)" >&2
  # shellcheck disable=SC2086 # HONE_BENCH_CMAKE_ARGS: several words on purpose
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release ${HONE_BENCH_CMAKE_ARGS:-} >/dev/null
  cmake --build "$build" -j"$(nproc)" --target hone hone-controller hone-worker hone-train \
    hone-pack >/dev/null
fi
if [ -z "$dev" ]; then
  dev=cpu
  if grep -q '"index"' <<<"$("$build/train/hone-train" --list-devices)"; then dev=cuda; fi
fi
# gen_detect.py finds Fashion-MNIST through HONE_FMNIST_DIR or the Debian package
if [ -n "${HONE_FASHION_MNIST:-}" ]; then export HONE_FMNIST_DIR=$HONE_FASHION_MNIST; fi
py=/usr/bin/python3 # gen_detect.py needs Pillow: Debian's, else the first python3 that has it
$py -c 'import PIL' 2>/dev/null || py=python3
cache=${HONE_BENCH_CACHE:-$build/detect-sets}
name=full gen_args=()
if [ $tiny = 1 ]; then name=tiny gen_args=(--tiny); fi
if [ -n "$count" ]; then name=$name-$count gen_args+=(--count "$count"); fi
set_dir=$cache/$name/kitti
stamp="gen_detect ${gen_args[*]} $(cksum <tests/data/gen_detect.py)"
if [ "$(cat "$cache/$name/.complete" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "${cache:?}/$name"
  mkdir -p "$cache/$name"
  echo "detect_automl: generating the $name set into $set_dir" >&2
  t0=$(date +%s)
  if ! $py tests/data/gen_detect.py "${gen_args[@]}" "$set_dir" >&2; then
    echo "detect_automl: gen_detect.py could not write the set (Fashion-MNIST: HONE_FASHION_MNIST;" \
      "photographs: .cache/photos from scripts/bootstrap.sh, or HONE_PHOTOS_DIR)" >&2
    exit 77
  fi
  echo "$stamp" >"$cache/$name/.complete"
  echo "detect_automl: generated in $(($(date +%s) - t0)) s" >&2
fi
if [ $prepare = 1 ]; then
  echo "detect_automl: prepared $build and $set_dir"
  exit 0
fi
# the stack's data dir (short: it holds the trainer servers' unix sockets), with the set inside it
# (a dataset path must lie in a data root): hard links to the cache where the file system allows
data=$(mktemp -d "${TMPDIR:-/tmp}/hone-detbench.XXXXXX")
mkdir -p "$data/sets"
cp -al "$set_dir" "$data/sets/kitti" 2>/dev/null || cp -R "$set_dir" "$data/sets/kitti"
python3 - "$build" "$data" "$dev" "$epochs" "$algo" "$max_trials" "$nu" "$seed" "$size" \
  "$name" "${sets[@]}" <<'PY'
import json, math, os, shutil, signal, subprocess, sys, time

build, data, dev = sys.argv[1], sys.argv[2], sys.argv[3]
epochs, algo, max_trials = int(sys.argv[4]), sys.argv[5], int(sys.argv[6])
nu = int(sys.argv[7]) if sys.argv[7] else None
seed, size, setname = int(sys.argv[8]), int(sys.argv[9]), sys.argv[10]
extra = sys.argv[11:]  # --set KEY=VALUE
hone_bin = os.path.join(build, "cli", "hone")
setdir = os.path.join(data, "sets", "kitti")


def hb_plan(R, eta):
    """(trials, epochs) of one Hyperband pass, as search/hyperband.c builds its brackets: trials
    paused at a rung resume from their checkpoints, so a rung costs the epochs beyond the last."""
    smax, pw = 0, 1
    while pw * eta <= R:
        pw *= eta
        smax += 1
    trials = total = 0
    for s in range(smax, -1, -1):
        es = eta ** s
        n = ((smax + 1) * es + s) // (s + 1)
        trials += n
        prev, div = 0, 1
        for i in range(s + 1):
            ep = max(1, math.floor(R / es * div + 0.5))
            if i > 0 and ep <= prev:
                ep = prev + 1
            if i == s:
                ep = R
            total += (n // div) * (ep - prev)
            prev, div = ep, div * eta
    return trials, total


def run(*args, check=True, timeout=None):
    p = subprocess.run([hone_bin, "--url", url] + list(args), capture_output=True, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise SystemExit("detect_automl: hone %s -> %d\n%s%s" % (" ".join(args), p.returncode,
                                                                p.stdout, p.stderr))
    return p


def js(*args, **kw):
    return json.loads(run(*(list(args) + ["--json"]), **kw).stdout)


def log(msg):
    sys.stderr.write("detect_automl: %s\n" % msg)
    sys.stderr.flush()


def wait(job_id):
    """Waits for a job; returns its status row (hone job wait exits non-zero on a failed job)."""
    run("job", "wait", job_id, check=False)
    return js("job", "status", job_id)


def failed(what, st):
    log("%s %s ended %s: %s" % (what, st.get("id"), st.get("status"), st.get("error")))


def evaluate(job_id):
    p = run("job", "evaluate", job_id, "--timeout", "1200", "--json", check=False)
    try:
        ev = json.loads(p.stdout)
    except ValueError:
        ev = {"id": job_id, "status": "exit %d" % p.returncode, "error": p.stderr.strip()}
    if ev.get("status") != "done":
        failed("evaluate of", ev)
        return None
    return ev["result"]["map"]


if algo in ("hyperband", "bohb"):
    if nu is None:
        nu = 3
        while hb_plan(epochs, nu)[0] > max_trials and nu < epochs:
            nu += 1
    plan_trials, plan_epochs = hb_plan(epochs, nu)
    if plan_trials > max_trials:
        log("note: --nu %d runs %d trials, more than --max-trials %d" % (nu, plan_trials,
                                                                        max_trials))
    plan = "%s R=%d nu=%d: %d trial(s), %d epochs in all" % (algo, epochs, nu, plan_trials,
                                                             plan_epochs)
else:
    nu = nu or 3
    plan = "%s: at most %d trials of up to %d epochs" % (algo, max_trials, epochs)

# a SIGTERM (timeout(1), a device command's limit) still stops the stack: the finally below
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
env = dict(os.environ)
stack = subprocess.Popen([hone_bin, "local", "--data-dir", data, "--port", "0", "--device", dev,
                          "--json"], stdout=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
ok = False
try:
    info = json.loads(stack.stdout.readline() or "{}")
    if "url" not in info:
        raise SystemExit("detect_automl: hone local did not start (logs in %s/logs)" % data)
    url = info["url"]
    log("stack at %s: %d worker(s), %d GPU(s), pack %d; %s" % (
        url, info["workers"], info["gpus"], info["pack"], plan))
    ds = js("dataset", "create", "--name", "detect-" + setname, "--path", setdir, "--type",
            "object_detection", "--format", "kitti")
    spec = ["train.epochs=%d" % epochs]
    if size:
        spec.append("model.input_size=%d" % size)
    spec += extra
    args = ["experiment", "create", "--name", "detect-bench", "--network", "detectnet_v2",
            "--train-dataset", ds["id"], "--metric", "val_map"]
    for s in spec:
        args += ["--spec", s]
    exp = js(*args)["id"]
    swept = list(js("experiment", "automl-defaults", exp)["default_hyperparameters"])
    # one convert job packs the set at the spec's input size; every job after it reuses it
    t0 = time.time()
    cvt = js("dataset", "convert", ds["id"], "--size", str(size or 128))["id"]
    cst = wait(cvt)
    if cst["status"] != "done":
        failed("convert job", cst)
        raise SystemExit(1)
    t_convert = time.time() - t0
    log("packed the set in %.1f s (convert job %s)" % (t_convert, cvt))

    rows, bad = [], 0
    t0 = time.time()
    base_id = js("train", "start", "--experiment", exp, "--name", "baseline")["id"]
    st = wait(base_id)
    t_base = time.time() - t0
    if st["status"] != "done":
        failed("baseline train job", st)
        raise SystemExit(1)
    if st.get("convert_job_id") not in (None, cvt):
        log("note: the baseline packed the set again (convert job %s)" % st["convert_job_id"])
    res = st.get("result") or {}
    base = {"spec": "default", "val_map": res.get("best_metric"), "test_map": evaluate(base_id),
            "wall_s": round(t_base, 1), "trials": 1, "epochs": epochs,
            "job": base_id}
    bad += base["test_map"] is None
    if base["test_map"] is not None and abs(base["test_map"] - res.get("test_map", -1)) > 1e-6:
        log("note: evaluate's test mAP %s differs from the job's own test_map %s"
            % (base["test_map"], res.get("test_map")))
    log("baseline: val mAP %s, test mAP %s in %.1f s" % (base["val_map"], base["test_map"],
                                                          t_base))

    t0 = time.time()
    am = js("automl", "start", "--experiment", exp, "--algorithm", algo, "--R", str(epochs),
            "--nu", str(nu), "--epoch-multiplier", "1", "--max-recommendations",
            str(max_trials), "--seed", str(seed), "--name", "automl")["id"]
    st = wait(am)
    t_am = time.time() - t0
    trials = js("job", "list", "--parent", am)
    trials = trials["jobs"] if isinstance(trials, dict) else trials
    # Hyperband's trials that a rung did not promote end "stopped": that is no failure
    tfail = [t for t in trials if t.get("status") not in ("done", "stopped")]
    for t in tfail:
        failed("trial", t)
    bad += len(tfail)
    if st["status"] != "done":
        failed("AutoML job", st)
        raise SystemExit(1)
    a = st.get("automl") or {}
    best = {"spec": "AutoML best (%s)" % algo,
            "val_map": a.get("best_map"), "test_map": evaluate(am), "wall_s": round(t_am, 1),
            "trials": len(trials), "epochs": sum(int(t.get("epoch") or 0) for t in trials),
            "job": am, "best_trial": a.get("best_trial"), "best_config": None}
    bad += best["test_map"] is None
    own = (st.get("result") or {}).get("best_test_map")
    if best["test_map"] is not None and own is not None and abs(best["test_map"] - own) > 1e-6:
        log("note: evaluate's test mAP %s differs from the best trial's own %s"
            % (best["test_map"], own))
    if a.get("best_job_id"):
        best["best_config"] = js("job", "status", a["best_job_id"]).get("config")

    def pts(x, y):
        return None if x is None or y is None else round(100 * (x - y), 2) + 0.0  # no -0.0

    def f4(x):
        return "-" if x is None else "%.4f" % x

    print("detectnet_v2 on the %s generated set (%s), %d epochs; %s; packed in %.1f s"
          % (setname, dev, epochs, plan, t_convert))
    print()
    print("| spec | val mAP@0.5 | test mAP@0.5 | wall s | trials |")
    print("| --- | --- | --- | --- | --- |")
    for r in (base, best):
        print("| %s | %s | %s | %.1f | %d |" % (r["spec"], f4(r["val_map"]), f4(r["test_map"]),
                                               r["wall_s"], r["trials"]))
    lift_val, lift_test = pts(best["val_map"], base["val_map"]), pts(best["test_map"],
                                                                     base["test_map"])
    print()
    print("lift: %s points val, %s points test; best trial's config: %s"
          % (lift_val, lift_test, json.dumps(best["best_config"], sort_keys=True)))
    print(json.dumps({"bench": "detect_automl", "device": dev, "set": setname, "epochs": epochs,
                      "algorithm": algo, "nu": nu, "max_trials": max_trials, "seed": seed,
                      "input_size": size or 128, "spec_set": extra, "swept": swept,
                      "convert_s": round(t_convert, 1),
                      "baseline": base, "automl": best, "lift_val_points": lift_val,
                      "lift_test_points": lift_test}))
    ok = bad == 0
    if bad:
        log("%d job(s) failed" % bad)
finally:
    if stack.poll() is None:
        stack.send_signal(signal.SIGINT)
        try:
            stack.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(stack.pid, signal.SIGKILL)
            stack.wait()
    if ok and os.environ.get("HONE_BENCH_KEEP") != "1":
        shutil.rmtree(data, ignore_errors=True)
    else:
        log("the stack's data dir and logs: %s" % data)
sys.exit(0 if ok else 1)
PY
exit
}
