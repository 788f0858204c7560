"""Table I of arechavaleta §V-B, both halves, from the grasp simulations (issues 12, 39).

    .venv/bin/python benchmarks/bench_grasp.py [--object glass] [--hold 2.0] [--every 1] [--repeats 7]
                                               [--hands 3 5] [--json benchmarks/results/grasp.json]

3-fingered half: runs barrett-grasp with plastic and rubber links (box-friction with joints eliminated, eq. 15, and
previous-step friction bounds, eq. 16, solved by pgs-sm), records every ``every``-th step's
constraint system and solves each step's problem with lemke (friction-pyramid LCP), pgs and pgs-sm
(friction-box LCP), timing the solver call only (median of ``repeats`` after a warm-up). Prints the
grasp outcome, the wall time of each simulation and the Table I rows (min / max / mean us by contact
group) beside the paper's. 5-fingered half (``--hands 5``): hand5-grasp (metal hand, rubber ball,
arechavaleta Fig. 1) at its defaults, same recording and timing; its 4-12-contact rows are printed
beside the paper's 5-fingered figures. BLAS on one thread.
"""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")   # time compiled kernels, not interpreted first calls (kernels/_jit.py)

import argparse
import json
import os
import platform
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from contactlab.files import atomic_write  # noqa: E402
from contactlab.scenarios.grasp_runs import (PAPER_TABLE_I, TABLE_METHODS, TABLE_VARIANTS, run_grasp,  # noqa: E402
                                             step_table, summarize, table_i)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--object", default="glass")
    ap.add_argument("--hold", type=float, default=2.0)
    ap.add_argument("--dt", type=float, default=0.005)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--friction-directions", type=int, default=8,
                    help="edges of the friction pyramid in lemke's LCP (GraspIt!: 8); the box model uses 2 tangents")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--materials", nargs="+", default=["plastic", "rubber"])
    ap.add_argument("--hands", nargs="+", type=int, default=[3, 5], choices=[3, 5],
                    help="Table I halves: 3 (barrett-grasp, plastic and rubber) and/or 5 (hand5-grasp)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    rows, runs, rows5 = [], {}, []
    for material in (a.materials if 3 in a.hands else []):
        r = run_grasp("barrett-grasp", record_systems=True, record_every=a.every, object=a.object,
                      material=material, hold=a.hold, dt=a.dt, friction_directions=a.friction_directions)
        runs[material] = {"summary": r.summary, "wall_s": r.wall_s, "simulated_s": float(r.time[-1]) if r.time.size else 0.0,
                          "steps": int(r.time.size), "error": r.error, "failures": int((~r.success.astype(bool)).sum()),
                          "max_penetration_m": float(r.penetration.max(initial=0.0)),
                          "max_joint_error": float(r.joint_error.max(initial=0.0))}
        print(f"{material}: {runs[material]}", flush=True)
        rows += step_table(r, repeats=a.repeats)
    if 5 in a.hands:
        r = run_grasp("hand5-grasp", record_systems=True, record_every=a.every, hold=a.hold, dt=a.dt,
                      friction_directions=a.friction_directions)
        runs["hand5"] = {"summary": r.summary, "wall_s": r.wall_s, "simulated_s": float(r.time[-1]) if r.time.size else 0.0,
                         "steps": int(r.time.size), "error": r.error, "failures": int((~r.success.astype(bool)).sum()),
                         "max_penetration_m": float(r.penetration.max(initial=0.0)),
                         "max_joint_error": float(r.joint_error.max(initial=0.0))}
        print(f"hand5: {runs['hand5']}", flush=True)
        rows5 = step_table(r, repeats=a.repeats)
    summ = summarize(rows)
    print("\n| contacts | steps | method | min us | max us | mean us | paper 3-finger (min/max/mean) | iterations | pivots | certified |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for e in summ:
        for m in TABLE_METHODS:
            x = e[m]
            p = PAPER_TABLE_I["3-fingered"][TABLE_VARIANTS.get(m, (m,))[0]]
            print(f"| {e['contacts']} | {e['steps']} | {m} | {x['min']:.0f} | {x['max']:.0f} | {x['mean']:.0f} | "
                  f"{p[0]}/{p[1]}/{p[2]} | {x['iterations_mean']:.1f} | {x['pivots_mean']:.1f} | {x['certified']}/{e['steps']} |")
        print(f"| {e['contacts']} | | lemke/pgs-sm mean | {e['ratio_lemke_pgs_sm']:.2f} (paper 4.6-12.2) | "
              f"pgs-sm faster every step: {e['pgs_sm_faster_every_step']} ({e['pgs_sm_faster_steps']}/{e['steps']}) | LCP box {e['n_box']}, pyramid {e['n_lemke']} | "
              f"median cond {e['cond_box_median']:.1e} | | | |")
    summ5 = summarize(rows5)
    halves = {k: v for k, v in (("3-fingered", summ), ("5-fingered", summ5)) if v}
    both = table_i(halves)
    print("\nTable I (4-12 contacts), ours beside the paper's (box-link hands, our Lemke on the 8-edge pyramid, a 2026 CPU)")
    print("| hand | method | steps | min us | max us | mean us | paper min/max/mean | iterations | pivots | certified |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for x in both:
        p = x["paper"]
        print(f"| {x['hand']} | {x['method']} | {x['steps']} | {x['min']:.0f} | {x['max']:.0f} | {x['mean']:.0f} | "
              f"{p[0]}/{p[1]}/{p[2]} | {x['iterations_mean']:.1f} | {x['pivots_mean']:.1f} | {x['certified']}/{x['steps']} |")
    for x in both:
        if x["method"] == "lemke" and x["ratio_lemke_pgs_sm"] is not None:
            print(f"{x['hand']}: lemke/pgs-sm mean ratio {x['ratio_lemke_pgs_sm']:.2f} (paper {x['paper_ratio_lemke_pgs_sm']:.1f})")
    if a.json:
        payload = {"machine": platform.platform(), "python": sys.version.split()[0], "args": vars(a),
                   "runs": runs, "summary": summ, "steps": rows, "summary_5": summ5, "steps_5": rows5,
                   "table_i": both}
        atomic_write(a.json, lambda tmp: Path(tmp).write_text(json.dumps(payload, indent=1, default=str)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
