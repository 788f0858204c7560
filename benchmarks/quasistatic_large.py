"""Time to decision on larger quasistatic UCPs (Pang-Trinkle-Lo section 5 generator): bilinear-lp vs
mip vs contact-mode enumeration, n_c = 100 and 200, one process, one problem at a time.

    OPENBLAS_NUM_THREADS=1 python benchmarks/quasistatic_large.py [--out results.jsonl] [--sizes 100,200]

Prints a Markdown table (docs/quasistatic.md) and appends one JSON line per run to --out.
"""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")   # time compiled kernels, not interpreted first calls (kernels/_jit.py)

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

import contactlab as cl
from contactlab.models.quasistatic import build_ucp, equation_residuals, recover
from contactlab.scenarios.quasistatic_data import random_task

METHODS = (("bilinear-lp", {}), ("mip", {"time_limit": 300.0}), ("mode-enumeration", {"max_candidates": 5000}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "out/bench/quasistatic_large.jsonl"),
                    help="JSON lines output (default out/bench/, untracked)")
    ap.add_argument("--sizes", default="100,200")
    ap.add_argument("--seeds", type=int, default=2)
    args = ap.parse_args()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for n_c in map(int, args.sizes.split(",")):
        for n_ab in (0, n_c // 2):
            for seed in range(args.seeds):
                task = random_task(np.random.default_rng([2026, n_c, n_ab, seed]), n_c, mu_max=1.0, n_alpha_bar=n_ab)
                t0 = time.perf_counter()
                problem = build_ucp(task)
                t_build = time.perf_counter() - t0
                for method, opts in METHODS:
                    t0 = time.perf_counter()
                    sol = cl.solve(problem, method=method, **opts)
                    dt = time.perf_counter() - t0
                    eq = None
                    if sol.success:
                        eq = max(equation_residuals(task, recover(task, *problem.split(sol.z))).values())
                    rec = {"n_c": n_c, "alpha_bar": n_ab, "seed": seed, "method": method, "status": sol.status.name,
                           "seconds": dt, "build_seconds": t_build, "pairs": sol.info.get("pairs"),
                           "candidates": sol.info.get("candidates"), "lps": sol.info.get("lps"),
                           "nodes": sol.info.get("nodes"), "eq_worst": eq, "machine": platform.node()}
                    with open(args.out, "a") as fh:
                        fh.write(json.dumps(rec) + "\n")
                    rows.append(rec)
                    print(json.dumps(rec), flush=True)
    print("\n| n_c | |alpha-bar| | seed | method | status | s | pairs / candidates | LPs | MIP nodes | eq. (2)-(10) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cnt = r["candidates"] if r["method"] == "mode-enumeration" else r["pairs"]
        print(f"| {r['n_c']} | {r['alpha_bar']} | {r['seed']} | {r['method']} | {r['status']} | {r['seconds']:.2f} | "
              f"{cnt if cnt is not None else '-'} | {r['lps']} | {r['nodes'] if r['nodes'] is not None else '-'} | "
              f"{'-' if r['eq_worst'] is None else format(r['eq_worst'], '.0e')} |")


if __name__ == "__main__":
    main()
