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
PGS_CAP = 20000   # pgs sweep cap on the grasp family


def _solve(ctx, cl, problem, method, reps, **opts):
    """Warm up, then the best of ``reps`` end-to-end ``cl.solve`` times: (seconds, solution, note).
    A crash gives (nan, None, note): the caller prints it as a failure, never as a time."""
    try:
        t, sol = ctx.best_time(cl.solve, problem, method, repeat=reps, **opts)
    except Exception as exc:   # a solver bug shows in the report instead of ending it
        return np.nan, None, f"raised {type(exc).__name__}: {exc}"
    return t, sol, sol.status.name


def _stats(a):
    a = np.asarray(a, dtype=float)
    return (float(a.min()), float(a.max()), float(a.mean())) if a.size else ("-", "-", "-")


def table_one(ctx) -> str:
    import contactlab as cl
    from ..problems.grasp import grasp_lcp
    count = 12 if ctx.quick else 60
    reps = 2 if ctx.quick else 3
    methods = (("lemke", {}), ("pgs", {"tol": 1e-8, "max_iterations": PGS_CAP}), ("pgs-sm", {"tol": 1e-8}))
    rows, notes, flags = [], [], []
    for fingers in (3, 5):
        rng = ctx.rng(3000 + fingers)
        times = {m: [] for m, _ in methods}
        misses = {m: [] for m, _ in methods}     # (status, certified residual) of solves that did not reach 1e-8
        lcp_times, reduced_n, lemke_pivots, pgs_sweeps, sm_work, ns, conds = [], [], [], [], [], [], []
        for _ in range(count):
            g = grasp_lcp(int(rng.integers(4, 13)), rng, fingers=fingers, mu_hand=float(rng.choice([0.2, 1.0])),
                          limits=int(rng.integers(0, 3)))
            ns.append(g.problem.n)
            conds.append(g.condition)
            for m, opts in methods:
                t, sol, note = _solve(ctx, cl, g.problem, m, reps, **opts)
                if sol is not None and sol.success:
                    times[m].append(t)
                elif m == "pgs" and sol is not None:
                    # is the cap the only reason? one untimed run with 20x the sweeps says
                    more = cl.solve(g.problem, "pgs", tol=1e-8, max_iterations=20 * PGS_CAP)
                    misses[m].append(f"{note}, residual {sol.relative_residual:.0e} (reaches 1e-8 after "
                                     f"{more.iterations} sweeps)" if more.success else
                                     f"{note}, residual {sol.relative_residual:.0e} (not even after {20 * PGS_CAP})")
                else:
                    misses[m].append(note if sol is None else f"{note}, residual {sol.relative_residual:.0e}")
                if sol is None:
                    continue
                if m == "pgs-sm":
                    sm_work.append((sol.info.get("pgs_sweeps", 0), sol.info.get("sm_steps", 0)))
                elif m == "pgs":
                    pgs_sweeps.append(sol.iterations)
                elif m == "lemke":
                    lemke_pivots.append(sol.pivots)
            # Lemke on the standard LCP the boxed problem reduces to, built once outside the timing:
            # separates the pivoting from the per-call reduction (problems/lcp.py BoxedLCP.lcp_reduction)
            L, _ = g.problem.lcp_reduction()
            reduced_n.append(L.n)
            t, sol, note = _solve(ctx, cl, L, "lemke", reps)
            if sol is not None and sol.success:
                lcp_times.append(t)
            else:
                misses.setdefault("lemke on the pre-built LCP", []).append(note)
            ctx.advance(f"grasp {fingers} fingers")
        for m, _ in methods:
            p = PAPER_TABLE_I[fingers][m]
            lo, hi, mean = _stats(np.array(times[m]) * 1e6)
            bad = misses[m]
            reached = f"{len(times[m])}/{count}"
            if bad:
                # pgs has a sweep cap on cond ~1e16 problems (a limit of the method, explained below);
                # lemke and pgs-sm are expected to certify every problem: a miss is a failure
                reached = (f"{reached}; not reached: {'; '.join(sorted(set(bad)))}" if m == "pgs"
                           else ctx.failed(f"{reached} reached 1e-8; {'; '.join(sorted(set(bad)))}"))
            rows.append([f"{fingers}-fingered", m, lo, hi, mean, f"{p[0]} / {p[1]} / {p[2]}", reached])
            for what, ours, theirs in (("min", lo, p[0]), ("mean", mean, p[2])):
                if isinstance(ours, float) and not 1 / 3 <= ours / theirs <= 3:
                    flags.append(f"{m} {fingers} fingers {what} {ours:.0f} us vs {theirs} us ({ours / theirs:.1f}x)")
        lo, hi, mean = _stats(np.array(lcp_times) * 1e6)
        extra = misses.get("lemke on the pre-built LCP")
        rows.append([f"{fingers}-fingered", "lemke, pivoting only (LCP reduction built outside the timing)", lo, hi,
                     mean, "", f"{len(lcp_times)}/{count}" if not extra else ctx.failed("; ".join(sorted(set(extra))))])
        sw = np.array(sm_work) if sm_work else np.zeros((1, 2))
        notes.append(f"{fingers}-fingered hand: n = {min(ns)}-{max(ns)} (standard-LCP reduction for lemke: "
                     f"{min(reduced_n)}-{max(reduced_n)}), median cond(A) = {np.median(conds):.1e}; pgs-sm used "
                     f"{sw[:, 0].mean():.1f} PGS sweeps and {sw[:, 1].mean():.1f} subspace steps on average (paper: "
                     f"3-6 PGS iterations, one SM cycle); pgs used {np.mean(pgs_sweeps):.0f} sweeps on average "
                     f"(median {np.median(pgs_sweeps):.0f}); lemke {np.mean(lemke_pivots):.0f} pivots on average.")
        if times["lemke"] and lcp_times:
            share = 1 - np.mean(lcp_times) / np.mean(times["lemke"])
            notes.append(f"{fingers}-fingered hand: the boxed-to-standard LCP reduction is {100 * share:.0f} % of "
                         "lemke's mean end-to-end time (lemke end to end vs lemke on the pre-built LCP).")
    table = markdown_table(["hand", "method", "min [us]", "max [us]", "mean [us]", "paper min / max / mean [us]",
                            "reached 1e-8"], rows)
    flag_text = "; ".join(flags)
    lemke_only = [r[2:5] for r in rows if r[1].startswith("lemke, pivoting only")]
    return "\n".join([
        "**This is a synthetic stress test, not the paper's experiment.** The problems are random grasp-shaped "
        f"boxed LCPs (`contactlab.problems.grasp.grasp_lcp`: {count} per hand, 4-12 contacts, two tangent "
        "directions, joints eliminated as in eq. 15, 0-2 joint-limit rows, CFM 1e-11, static friction boxes), "
        "not the LCPs of the paper's simulated hands (those are measured in the grasping section). They are far "
        "harder than the paper's: cond(A) ~1e15-1e16 (rank-deficient contact rows under CFM 1e-11), so pgs-sm "
        "needs ~30 PGS sweeps and ~13 subspace steps where the paper reports 3-6 sweeps and one SM cycle. The "
        "paper's column (Fortran 77 / C++ on a 2009 AMD Turion 64 X2) is printed for scale only: a mean time "
        "near the paper's is **not** agreement, because the work per solve and the machine both differ by large "
        "factors. Every solve goes through `contactlab.solve` end to end (checks, dispatch, solver, "
        f"certification), after one untimed warm-up call, best of {reps}; times are over the solves that reached "
        "the certified relative residual 1e-8 (the paper's tolerance); the others are listed with their status. "
        "Lemke solves the boxed problem through its standard-LCP reduction.",
        "", table, "", *[f"- {s}" for s in notes], "",
        "**Differences from the paper beyond 3x** (min or mean time): " + (flag_text or "none in this run")
        + ". Causes, as far as measured here:",
        "",
        "- **lemke**: most of its end-to-end time is not pivoting but the boxed-to-standard LCP reduction that "
        "`solve()` builds on every call with scipy.sparse (`BoxedLCP.lcp_reduction`, problems/lcp.py; its share "
        "is in the notes above). The row 'pivoting only' times Lemke through `solve()` on the pre-built reduced "
        "LCP (n plus one multiplier per two-sided friction row): min / max / mean "
        + (" and ".join(f"{a:.0f} / {b:.0f} / {c:.0f} us" for a, b, c in lemke_only
                        if isinstance(a, float)) or "n/a")
        + " for 3 / 5 fingers, the same order as the paper's Lemke (146-220 us min). So the gap is the per-call "
        "reduction, a cost of our boxed-LCP front end, not of the pivoting. The formulation also differs from the "
        "paper's Lemke (GraspIt!'s friction-pyramid LCP; the grasping section compares that one), so even the "
        "'pivoting only' row is not the paper's experiment.",
        "- **pgs**: plain PGS converges linearly at a rate set by the conditioning; at cond ~1e16 it needs "
        f"hundreds to thousands of sweeps (capped at {PGS_CAP}) where the paper's problems needed few, hence "
        "the larger mean and spread. A solve that hits the cap is not counted in the times and is listed in "
        "the last column with its status (MAX_ITERATIONS), its certified residual and the sweeps an untimed "
        "rerun with 20x the cap needed to reach 1e-8: slow linear convergence of the method on these "
        "synthetic problems, not a defect (pgs-sm certifies the same problems).",
        "- **pgs-sm**: its times land within a few x of the paper's while it does ~10x the paper's PGS sweeps "
        "and ~13x its subspace steps on a machine of another generation and in another language: the "
        "differences happen to offset; this is not agreement and not a reproduction of Table I.",
    ])


def _timed_once(cl, problem, method, **opts):
    """One end-to-end ``cl.solve`` call, timed (the caller warmed the kernels up): (seconds, solution, note)."""
    t0 = time.perf_counter()
    try:
        sol = cl.solve(problem, method, **opts)
    except Exception as exc:   # a solver bug shows in the report instead of ending it
        return np.nan, None, f"raised {type(exc).__name__}: {exc}"
    return time.perf_counter() - t0, sol, sol.status.name


def ill_conditioned(ctx) -> str:
    import contactlab as cl
    from ..problems.conditioning import dense_ill_conditioned_lcp, sparse_ill_conditioned_lcp
    cases = [("dense", 200 if ctx.quick else 500), ("sparse", 10000 if ctx.quick else 100000)]
    rows = []
    for make in (dense_ill_conditioned_lcp, sparse_ill_conditioned_lcp):   # dense and CSR kernels compiled
        warm, _ = make(20, 1e3, ctx.rng(1))                                 # (or loaded) outside the timings
        for m, opts in (("pgs-sm", {"tol": 1e-8}), ("pgs", {"tol": 1e-8, "max_iterations": 50}),
                        ("interior-point", {})):
            ctx.warm_up(cl.solve, warm, m, **opts)

    def cells(t, sol, note, expected_to_certify=True):
        if sol is None:
            return [ctx.failed(note), "-", "-"]
        if sol.success:
            return [f"{sol.relative_residual:.1e}", sol.iterations, f"{t * 1e3:.1f}"]
        if expected_to_certify:
            return [ctx.failed(f"{note}, residual {sol.relative_residual:.1e}"), sol.iterations, "-"]
        # pgs under the budget it is given: not reaching 1e-8 is what the row demonstrates
        return [f"{sol.relative_residual:.1e} (not certified: {note})", sol.iterations, f"{t * 1e3:.1f} (stopped)"]

    for kind, n in cases:
        for cond in (1e6, 1e10):
            make = dense_ill_conditioned_lcp if kind == "dense" else sparse_ill_conditioned_lcp
            P, z_star = make(n, cond, ctx.rng(int(np.log10(cond)) + n))
            t_sm, sm, note_sm = _timed_once(cl, P, "pgs-sm", tol=1e-8)
            budget = 10 * (sm.info["pgs_sweeps"] + sm.info["sm_steps"]) if sm is not None else 1000
            pg = _timed_once(cl, P, "pgs", tol=1e-8, max_iterations=budget)
            ip = _timed_once(cl, P, "interior-point")
            err = f"{np.max(np.abs(sm.z - z_star)):.1e}" if sm is not None else "-"
            rows.append([kind, n, f"{cond:.0e}", *cells(t_sm, sm, note_sm), *cells(*pg, expected_to_certify=False),
                         *cells(*ip), err])
            ctx.advance(f"{kind} cond {cond:.0e}")
    table = markdown_table(["M", "n", "cond", "pgs-sm residual", "pgs-sm iters", "pgs-sm ms", "pgs residual",
                            "pgs sweeps (10x pgs-sm's)", "pgs ms", "interior-point residual", "IP iters", "IP ms",
                            "pgs-sm max |z - z*|"], rows)
    return ("SPD LCPs with a known nondegenerate solution z* (`contactlab.problems.conditioning`); no paper "
            "reports these, so nothing here is compared with a paper. Each method is warmed up on a small "
            "problem of the same kind (dense / CSR) first, then timed on one call. PGS gets ten times the "
            "iterations PGS-SM needed (sweeps + subspace steps) and is expected to stop short of 1e-8 where the "
            "conditioning bites: its residual and time are then marked 'not certified' and 'stopped' (the row's "
            "point, not a fast solve). pgs-sm and interior-point must certify; if they do not, the cell reads "
            "**FAILED**.\n\n" + table)


def run(ctx) -> str:
    from ..blas import blas_threads
    with blas_threads(1):     # BLAS on one thread: timings not at the mercy of oversubscription
        return "\n\n".join(["### Synthetic grasp-shaped LCPs (stress test, not the paper's experiment; Table I from "
                            "the grasp simulations is in the grasping section)", table_one(ctx),
                            "### Ill-conditioned SPD LCPs", ill_conditioned(ctx)])
