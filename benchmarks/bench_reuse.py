"""Computation reuse benchmark (issue 14, loomis-balkcom): Table I (planner pivots and wall time per
stability test, beside the paper) and motionless-set reuse in simulation (LCP time, pivots and major
cycles cold / reuse / previous-step, per segment of constant motionless set).

    .venv/bin/python benchmarks/bench_reuse.py [--repeats 5] [--json out.json] [--out table.md]

Every timing is one run on this machine; the simulation timings pair the three solves on each
step's problem (best of --repeats), so a shared machine's load affects all three alike.
"""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")   # time compiled kernels, not interpreted first calls (kernels/_jit.py)

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from contactlab.files import atomic_write  # noqa: E402
from contactlab.reproduce import sec_reuse as R  # noqa: E402


def solve_overhead(reps: int = 200) -> float:
    """Seconds per contactlab.solve call on a 1x1 Dantzig LCP: the fixed cost of a call
    (validation, certification), which reuse cannot remove."""
    import contactlab as cl
    P = cl.LCP(np.array([[2.0]]), np.array([-1.0]))
    cl.solve(P, method="dantzig")
    best, _ = R._best(reps, lambda: cl.solve(P, method="dantzig"))
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    plans = R.table_one()
    plans3 = R.table_one(R.EXTRA_3D)
    lines = [f"# Computation reuse benchmark ({time.strftime('%Y-%m-%d %H:%M')}, {platform.processor() or platform.machine()})",
             "", "## Table I (pivots: ours (paper); wall time of the whole plan in ms)", "",
             R.table_one_markdown(plans), "", "3D (not in the paper):", "", R.table_one_markdown(plans3), "",
             f"Theorem 1 on every reuse solve: max(majors - (n - k)) = {R.theorem1_worst(plans)}", ""]
    sims = {}
    for scene, steps in (("column-collapse", 300), ("reuse-slowdown", 120)):
        sims[scene] = R.simulate_modes(scene, steps, repeats=a.repeats)
        warm, ok = R.theorem1_sim(sims[scene])
        lines += [f"## {scene}: frictionless / dantzig, {steps} frames, set changes after frames "
                  f"{sims[scene]['changes'][1:]}", "", R.simulation_markdown(sims[scene], scene), "",
                  f"same answer with and without reuse: {sims[scene]['same_answer']}; Theorem 1 on {warm} warm "
                  f"solves: {'held' if ok else 'VIOLATED'}", ""]
    ov = solve_overhead()
    lines += [f"Fixed cost of one contactlab.solve call (1x1 Dantzig LCP): {1e6 * ov:.0f} us", "",
              f"(benchmark wall time {time.perf_counter() - t0:.0f} s)"]
    text = "\n".join(lines)
    print(text)
    if a.out:
        atomic_write(a.out, lambda tmp: Path(tmp).write_text(text + "\n"))
    if a.json:
        rec = {"table_i": {s: {t: {"pivots": r.pivots, "nodes": r.nodes_visited, "time_s": r.time_s,
                                   "stable": r.stable} for t, r in by.items()} for s, by in {**plans, **plans3}.items()},
               "simulation": {s: {m: {"lcp_s": float(v[m]["time"].sum()), "pivots": int(v[m]["pivots"].sum()),
                                      "majors": int(v[m]["majors"].sum())} for m in R.MODES} | {
                   "cold_reuse_call_lcp_s": float(v["cold"]["time_direct"].sum()),
                   "changes": v["changes"]} for s, v in sims.items()},
               "solve_overhead_s": ov}
        atomic_write(a.json, lambda tmp: Path(tmp).write_text(json.dumps(rec, indent=1)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
