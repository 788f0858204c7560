"""Iterative solvers on grasp-shaped LCPs (arechavaleta Table I shape) and on ill-conditioned SPD LCPs,
without peers (the Siconos / QP-library comparison is benchmarks/bench_iterative.py)."""
from __future__ import annotations

import time

import numpy as np

from . import markdown_table

TITLE = "Iterative solvers: PGS-SM on synthetic grasp-shaped LCPs (stress test) and ill-conditioned problems"
ORDER = 20

# arechavaleta Table I (microseconds per solve; Fortran 77 / C++ on an AMD Turion 64 X2): (min, max, mean)
PAPER_TABLE_I = {
    3: {"lemke": (146, 7050, 672), "pgs": (97, 1332, 207), "pgs-sm": (84, 355, 145)},
    5: {"lemke": (220, 11820, 1885), "pgs": (95, 3348, 238), "pgs-sm": (79, 452, 155)},
}


def _solve_timed(cl, problem, method, reps, **opts):
    best, sol = np.inf, None
    for _ in range(reps):
        t0 = time.perf_counter()
        try:
            sol = cl.solve(problem, method, **opts)
        except Exception as exc:   # a solver bug shows in the report instead of ending it
            return np.nan, None, f"raised {type(exc).__name__}"
        best = min(best, time.perf_counter() - t0)
    return best, sol, sol.status.name


def table_one(ctx) -> str:
    import contactlab as cl
    from ..problems.grasp import grasp_lcp
    count = 12 if ctx.quick else 60
    reps = 2 if ctx.quick else 3
    cl.solve(grasp_lcp(4, ctx.rng(0)).problem, "pgs-sm")       # numba compilation outside the timings
    cl.solve(grasp_lcp(4, ctx.rng(0)).problem, "pgs")
    rows, notes = [], []
    for fingers in (3, 5):
        rng = ctx.rng(3000 + fingers)
        times = {m: [] for m in ("lemke", "pgs", "pgs-sm")}
        solved = {m: 0 for m in times}
        sweeps = []
        ns, conds = [], []
        for _ in range(count):
            g = grasp_lcp(int(rng.integers(4, 13)), rng, fingers=fingers, mu_hand=float(rng.choice([0.2, 1.0])),
                          limits=int(rng.integers(0, 3)))
            ns.append(g.problem.n)
            conds.append(g.condition)
            for m, opts in (("lemke", {}), ("pgs", {"tol": 1e-8, "max_sweeps": 20000}), ("pgs-sm", {"tol": 1e-8})):
                t, sol, status = _solve_timed(cl, g.problem, m, reps, **opts)
                times[m].append(t)
                ok = sol is not None and sol.success and sol.residual <= 1e-8 * g.problem.scale()
                solved[m] += int(ok)
                if m == "pgs-sm" and sol is not None:
                    sweeps.append((sol.info.get("pgs_sweeps", 0), sol.info.get("sm_steps", 0)))
            ctx.advance(f"grasp {fingers} fingers")
        for m, ts in times.items():
            a = np.array(ts) * 1e6
            a = a[np.isfinite(a)]
            p = PAPER_TABLE_I[fingers][m]
            rows.append([f"{fingers}-fingered", m, float(a.min()), float(a.max()), float(a.mean()),
                         f"{p[0]} / {p[1]} / {p[2]}", f"{solved[m]}/{count}"])
        sw = np.array(sweeps)
        notes.append(f"{fingers}-fingered hand: n = {min(ns)}-{max(ns)}, median cond(A) = {np.median(conds):.1e}; "
                     f"pgs-sm used {sw[:, 0].mean():.1f} PGS sweeps and {sw[:, 1].mean():.1f} subspace steps on "
                     f"average (paper: 3-6 PGS iterations, one SM cycle).")
    table = markdown_table(["hand", "method", "min [us]", "max [us]", "mean [us]", "paper min / max / mean [us]",
                            "reached 1e-8"], rows)
    return (f"{count} random grasp problems per hand (`contactlab.problems.grasp.grasp_lcp`: 4-12 contacts, two "
            "tangent directions, joints eliminated as in eq. 15, 0-2 joint-limit rows, CFM 1e-11, static friction "
            "boxes), each solved by `contactlab.solve` end to end (best of "
            f"{reps}); pgs and pgs-sm stop at residual 1e-8 like the paper. Lemke solves the boxed problem through "
            "its standard-LCP reduction. The paper's numbers are Fortran on 2009 hardware: compare the ordering "
            "and spread, not the absolute times.\n\n" + table + "\n\n" + "\n".join(f"- {s}" for s in notes))


def ill_conditioned(ctx) -> str:
    import contactlab as cl
    from ..problems.conditioning import dense_ill_conditioned_lcp, sparse_ill_conditioned_lcp
    cases = [("dense", 200 if ctx.quick else 500), ("sparse", 10000 if ctx.quick else 100000)]
    rows = []
    warm, _ = dense_ill_conditioned_lcp(20, 1e3, ctx.rng(1))
    for m in ("pgs-sm", "pgs", "interior-point"):       # compilation and first calls outside the timings
        cl.solve(warm, m)
    for kind, n in cases:
        for cond in (1e6, 1e10):
            make = dense_ill_conditioned_lcp if kind == "dense" else sparse_ill_conditioned_lcp
            P, z_star = make(n, cond, ctx.rng(int(np.log10(cond)) + n))
            t_sm, sm, _ = _solve_timed(cl, P, "pgs-sm", 1, tol=1e-8)
            budget = 10 * (sm.info["pgs_sweeps"] + sm.info["sm_steps"])
            t_pgs, pg, _ = _solve_timed(cl, P, "pgs", 1, tol=1e-8, max_sweeps=budget)
            t_ip, ip, _ = _solve_timed(cl, P, "interior-point", 1)
            rows.append([kind, n, f"{cond:.0e}", f"{sm.residual:.1e}", sm.iterations, f"{t_sm * 1e3:.1f}",
                         f"{pg.residual:.1e}", pg.iterations, f"{t_pgs * 1e3:.1f}", f"{ip.residual:.1e}",
                         ip.iterations, f"{t_ip * 1e3:.1f}", f"{np.max(np.abs(sm.z - z_star)):.1e}"])
            ctx.advance(f"{kind} cond {cond:.0e}")
    table = markdown_table(["M", "n", "cond", "pgs-sm residual", "pgs-sm iters", "pgs-sm ms", "pgs residual",
                            "pgs sweeps (10x pgs-sm's)", "pgs ms", "interior-point residual", "IP iters", "IP ms",
                            "pgs-sm max |z - z*|"], rows)
    return ("SPD LCPs with a known nondegenerate solution z* (`contactlab.problems.conditioning`). PGS gets ten "
            "times the iterations PGS-SM needed (sweeps + subspace steps) and still stops short of 1e-8 where the "
            "conditioning bites.\n\n" + table)


def run(ctx) -> str:
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1):     # BLAS on one thread: timings not at the mercy of oversubscription
        return "\n\n".join(["### Synthetic grasp-shaped LCPs (stress test, not the paper's experiment; Table I from "
                            "the grasp simulations is in the grasping section)", table_one(ctx),
                            "### Ill-conditioned SPD LCPs", ill_conditioned(ctx)])
