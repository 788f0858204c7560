"""Box-gripper benchmark (drumwright Sec. VII-A, Table I): LCP variables, time per step, total time,
held or dropped, per contact model and solver, side by side in one run.

    .venv/bin/python benchmarks/bench_box_gripper.py [--steps 10 100] [--trials 5] [--json out.json]

Every configuration steps the same scene through ``contactlab.sim.Simulator`` with the paper's
12-point contact grid per touching pair (36 contacts); times include contact generation, system
assembly, the solve, recovery and integration (as the paper's "all aspects of the simulation").
BLAS runs on one thread (small dense matrices; see docs/box-gripper.md).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from contactlab.problems.io import atomic_write  # noqa: E402
from contactlab.scenarios.box_gripper import (DEFAULT_CONFIGS, PAPER_LCP_VARIABLES, PAPER_TABLE_I,  # noqa: E402
                                              table_one)
from contactlab.solvers import available_solvers  # noqa: E402


def markdown(rows) -> str:
    head = ("| model | method | steps | LCP variables (paper) | total s mean ± sd | per step ms | model ms/step "
            "| solve ms/step | held | max vertical drift | statuses | paper total s (10 steps) |")
    out = [head, "|" + "---|" * 12]
    for r in rows:
        paper = PAPER_TABLE_I.get((r["model"], r["method"].split("(")[0]))
        ptxt = f"{paper[0]:.2f} ± {paper[1]:.2f}" if paper and r["steps"] == 10 else ""
        pv = PAPER_LCP_VARIABLES.get(r["model"], "")
        out.append(f"| {r['model']} | {r['method']} | {r['steps']} | {r['lcp_variables']:.0f} ({pv}) | "
                   f"{r['total_s_mean']:.3f} ± {r['total_s_std']:.3f} | {1e3 * r['per_step_s']:.1f} | "
                   f"{1e3 * r['model_per_step_s']:.2f} | {1e3 * r['solve_per_step_s']:.2f} | "
                   f"{'held' if r['held'] else 'DROPPED'} | {r['drift_m']:.2e} m | "
                   f"{', '.join(f'{k} {v}' for k, v in sorted(r['statuses'].items()))} | {ptxt} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--json", default=None, help="write the rows as JSON (atomically)")
    args = ap.parse_args(argv)
    configs = list(DEFAULT_CONFIGS)
    if "qp" in available_solvers():
        configs.insert(2, ("no-slip", "qp"))
    rows = table_one(configs, steps=tuple(args.steps), trials=args.trials,
                     progress=lambda label: print(label, file=sys.stderr, flush=True))
    print(f"# box-gripper, {platform.processor() or platform.machine()}, python {platform.python_version()}, "
          f"{args.trials} trials\n")
    print(markdown(rows))
    for r in rows:
        for e in r["errors"]:
            print(f"\n- {r['model']}/{r['method']} {r['steps']} steps crashed at {e}")
    if args.json:
        atomic_write(args.json, lambda tmp: open(tmp, "w").write(json.dumps(rows, indent=1)))


if __name__ == "__main__":
    main()
