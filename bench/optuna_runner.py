#!/usr/bin/env python3
"""Optuna TPE and GP samplers on the black-box functions of bench/search.c (same spaces, optima,
seeds 1000..1000+seeds-1 and report format), so bench/compare_search.py can put them side by side.

    python3 bench/optuna_runner.py --samplers tpe,gp --seeds 20 --evals 100 > optuna.jsonl
"""
import argparse
import json
import math
import sys
import time

import optuna

BRANIN_OPT = 0.397887357729739
HARTMANN6_OPT = -3.32236801141551


def branin(p):
    x, y = p["x1"], p["x2"]
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    return (y - b * x * x + c * x - 6) ** 2 + 10 * (1 - t) * math.cos(x) + 10


H_ALPHA = [1.0, 1.2, 3.0, 3.2]
H_A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8],
       [17, 8, 0.05, 10, 0.1, 14]]
H_P = [[0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
       [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
       [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
       [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381]]


def hartmann6(p):
    v = [p[f"x{i + 1}"] for i in range(6)]
    s = 0.0
    for i in range(4):
        e = sum(H_A[i][j] * (v[j] - H_P[i][j]) ** 2 for j in range(6))
        s += H_ALPHA[i] * math.exp(-e)
    return -s


def rosenbrock4(p):
    v = [p[f"x{i + 1}"] for i in range(4)]
    return sum(100 * (v[i + 1] - v[i] ** 2) ** 2 + (1 - v[i]) ** 2 for i in range(3))


def ackley5(p):
    v = [p[f"x{i + 1}"] for i in range(5)]
    s1 = sum(x * x for x in v)
    s2 = sum(math.cos(2 * math.pi * x) for x in v)
    return -20 * math.exp(-0.2 * math.sqrt(s1 / 5)) - math.exp(s2 / 5) + 20 + math.e


MX = {"a": (2, -1, 7, 0.3), "b": (-3, 2.5, 2, 0.0), "c": (0.5, 3, 5, 0.6)}


def mixed(p):
    sx, sy, sk, off = MX[p["c"]]
    return (p["x"] - sx) ** 2 + (p["y"] - sy) ** 2 + 0.5 * (p["k"] - sk) ** 2 + off


def floats(names, lo, hi):
    return lambda t: {n: t.suggest_float(n, lo, hi) for n in names}


def mixed_params(t):
    return {"x": t.suggest_float("x", -5, 5), "y": t.suggest_float("y", -5, 5),
            "k": t.suggest_int("k", 0, 10), "c": t.suggest_categorical("c", ["a", "b", "c"])}


PROBLEMS = {
    "branin": (lambda t: {"x1": t.suggest_float("x1", -5, 10), "x2": t.suggest_float("x2", 0, 15)},
               branin, BRANIN_OPT),
    "hartmann6": (floats([f"x{i + 1}" for i in range(6)], 0, 1), hartmann6, HARTMANN6_OPT),
    "rosenbrock4": (floats([f"x{i + 1}" for i in range(4)], -5, 10), rosenbrock4, 0.0),
    "ackley5": (floats([f"x{i + 1}" for i in range(5)], -32.768, 32.768), ackley5, 0.0),
    "mixed": (mixed_params, mixed, 0.0),
}


def make_sampler(name, seed):
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise SystemExit(f"unknown sampler {name}")


def quantile(v, q):
    """numpy's default linear interpolation, as bench/search.c computes it."""
    v = sorted(v)
    pos = q * (len(v) - 1)
    i = int(math.floor(pos))
    if i >= len(v) - 1:
        return v[-1]
    return v[i] + (pos - i) * (v[i + 1] - v[i])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--samplers", default="tpe,gp")
    ap.add_argument("--functions", default=",".join(PROBLEMS))
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--evals", type=int, default=100)
    ap.add_argument("--seed-start", type=int, default=0, help="first seed index (to split runs)")
    ap.add_argument("--raw", action="store_true",
                    help="print each seed's regret curve instead of quartiles (compare_search.py "
                         "merges raw lines from several runs)")
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for fname in args.functions.split(","):
        params, f, opt = PROBLEMS[fname]
        for sname in args.samplers.split(","):
            t0 = time.time()
            regrets = []  # per seed, best-so-far regret after each evaluation
            for sd in range(args.seed_start, args.seed_start + args.seeds):
                study = optuna.create_study(sampler=make_sampler(sname, 1000 + sd))
                best, curve = math.inf, []
                for _ in range(args.evals):
                    trial = study.ask()
                    y = f(params(trial))
                    study.tell(trial, y)
                    best = min(best, y)
                    curve.append(best - opt)
                regrets.append(curve)
                if args.raw:
                    print(json.dumps({"function": fname, "method": "optuna-" + sname, "seed": sd,
                                      "regret": curve}), flush=True)
                print(f"{fname} {sname} seed {sd} done ({time.time() - t0:.0f}s)", file=sys.stderr)
            secs = time.time() - t0
            if args.raw:
                continue
            for e in (10, 25, 50, 100):
                if e > args.evals:
                    break
                col = [c[e - 1] for c in regrets]
                print(json.dumps({"function": fname, "method": "optuna-" + sname, "evals": e,
                                  "seeds": args.seeds, "median": quantile(col, 0.5),
                                  "q25": quantile(col, 0.25), "q75": quantile(col, 0.75),
                                  "seconds": round(secs, 2)}), flush=True)


if __name__ == "__main__":
    main()
