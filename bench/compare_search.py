#!/usr/bin/env python3
"""Reads the JSON lines of bench_search and bench/optuna_runner.py and prints, per function, the
median simple regret at one evaluation count for our BO, random search, Optuna TPE and Optuna GP.

    python3 bench/compare_search.py ours.jsonl optuna*.jsonl [--evals 50]
"""
import argparse
import collections
import json

def quantile(v, q):
    v = sorted(v)
    pos = q * (len(v) - 1)
    i = int(pos)
    return v[-1] if i >= len(v) - 1 else v[i] + (pos - i) * (v[i + 1] - v[i])


COLUMNS = [("bo", "ours-BO"), ("random", "random"), ("optuna-tpe", "TPE"), ("optuna-gp", "GP")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--evals", type=int, default=50)
    args = ap.parse_args()
    table, functions = {}, []
    raw = collections.defaultdict(dict)  # (function, method) -> seed -> regret curve
    rows = []
    for path in args.files:
        with open(path) as fh:
            for line in fh:
                if line.startswith("{"):
                    rows.append(json.loads(line))
    for r in rows:
        if "regret" in r and len(r["regret"]) >= args.evals:
            raw[(r["function"], r["method"])][r["seed"]] = r["regret"][args.evals - 1]
    for (f, m), by_seed in raw.items():
        col = list(by_seed.values())
        rows.append({"function": f, "method": m, "evals": args.evals, "seeds": len(col),
                     "median": quantile(col, 0.5), "q25": quantile(col, 0.25),
                     "q75": quantile(col, 0.75)})
    for r in rows:
        if "function" not in r or r.get("evals") != args.evals:
            continue
        if r["function"] not in functions:
            functions.append(r["function"])
        table[(r["function"], r["method"])] = r
    print(f"median simple regret at {args.evals} evaluations (q25-q75 in brackets)")
    print(f"{'function':12s}" + "".join(f"{name:>26s}" for _, name in COLUMNS) + "  ours<TPE  ours<=GP")
    wins_tpe = wins_gp = 0
    for f in functions:
        cells = []
        for key, _ in COLUMNS:
            r = table.get((f, key))
            cells.append("-" if r is None else
                         f"{r['median']:.3g} [{r['q25']:.2g}-{r['q75']:.2g}]")
        ours, tpe, gp = (table.get((f, k)) for k in ("bo", "optuna-tpe", "optuna-gp"))
        bt = ours and tpe and ours["median"] < tpe["median"]
        bg = ours and gp and ours["median"] <= gp["median"]
        wins_tpe += bool(bt)
        wins_gp += bool(bg)
        print(f"{f:12s}" + "".join(f"{c:>26s}" for c in cells) +
              f"  {'yes' if bt else 'no':>8s}  {'yes' if bg else 'no':>8s}")
    print(f"ours better than TPE on {wins_tpe}/{len(functions)}, "
          f"no worse than GP on {wins_gp}/{len(functions)}")


if __name__ == "__main__":
    main()
