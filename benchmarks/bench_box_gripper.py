"""Box-gripper benchmark (drumwright Sec. VII-A, Table I): LCP variables, time per step, total time,
held or dropped, per contact model and solver, side by side in one run.

    .venv/bin/python benchmarks/bench_box_gripper.py [--steps 10 100] [--trials 5] [--json out.json]

Every configuration steps the same scene through ``contactlab.sim.Simulator`` with the paper's
12-point contact grid per touching pair (36 contacts); times include contact generation, system
assembly, the solve, recovery and integration (as the paper's "all aspects of the simulation").
BLAS runs on one thread (small dense matrices; see docs/box-gripper.md).
"""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")   # time compiled kernels, not interpreted first calls (kernels/_jit.py)

import argparse
import json
import os
import platform
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from contactlab.files import atomic_write  # noqa: E402
from contactlab.scenarios.box_gripper import (DEFAULT_CONFIGS, PAPER_LCP_VARIABLES, paper_row,  # noqa: E402
                                              ratios, table_one)
from contactlab.solvers import available_solvers  # noqa: E402


def markdown(rows) -> str:
    head = ("| model | method | steps (done) | LCP variables (paper) | total s mean ± sd | per step ms | model ms/step "
            "| method ms/step | solve ms/step | held | max vertical drift | statuses | paper total s (10 steps) |")
    out = [head, "|" + "---|" * 13]
    for r in rows:
        paper = paper_row(r)
        ptxt = f"{paper[0]:.2f} ± {paper[1]:.2f}" if paper else ""
        pv = PAPER_LCP_VARIABLES.get(r["model"], "")
        first = f" (first uncertified: step {r['first_failure']})" if r["first_failure"] else ""
        out.append(f"| {r['model']} | {r['method']} | {r['steps']} ({r['steps_done']}) | {r['lcp_variables']:.0f} ({pv}) | "
                   f"{r['total_s_mean']:.3f} ± {r['total_s_std']:.3f} | {1e3 * r['per_step_s']:.1f} | "
                   f"{1e3 * r['model_per_step_s']:.2f} | {1e3 * r['method_per_step_s']:.2f} | "
                   f"{1e3 * r['solve_per_step_s']:.2f} | "
                   f"{'held' if r['held'] else ('STOPPED' if r['errors'] else 'DROPPED')} ({r['held_trials']}/{r['trials']}) | {r['drift_m']:.2e} m | "
                   f"{', '.join(f'{k} {v}' for k, v in sorted(r['statuses'].items()))}{first} | {ptxt} |")
    return "\n".join(out)


def find_indices_timing(sizes=((24, 36), (60, 100), (120, 200)), repeats: int = 10) -> str:
    """FIND-INDICES with the bordered O(m^2) Cholesky update vs a fresh Cholesky per candidate."""
    import time

    import numpy as np
    import scipy.linalg as sla

    from contactlab.models.find_indices import find_indices

    def refactor(M, J, S, T):   # drumwright Alg. 2 as printed: factor X' M^-1 X anew for each candidate
        Minv = np.linalg.inv(M)
        rows = list(J) + [r for i in range(S.shape[0]) for r in (S[i], T[i])]
        kept = []
        for g in rows:
            X = np.array(kept + [g])
            try:
                d = sla.cholesky(X @ Minv @ X.T, lower=True)[-1, -1] ** 2
                if d > 1e-9 * (g @ Minv @ g):
                    kept.append(g)
            except np.linalg.LinAlgError:
                pass
        return len(kept)

    out = ["| m | contacts | candidate rows | kept (refactor) | bordered update ms | refactor per candidate ms |", "|---|---|---|---|---|---|"]
    rng = np.random.default_rng(0)
    for m, n in sizes:
        A = rng.normal(size=(m, m))
        M = A @ A.T + m * np.eye(m)
        J = rng.normal(size=(m // 6, m))
        S, T = rng.normal(size=(n, m)), rng.normal(size=(n, m))
        find_indices(M, J, S, T)
        t_inc = t_ref = np.inf     # best of ``repeats`` (a shared, loaded machine)
        for _ in range(repeats):
            t = time.perf_counter()
            k = find_indices(M, J, S, T).rank
            t_inc = min(t_inc, time.perf_counter() - t)
        for _ in range(max(1, repeats // 5)):
            t = time.perf_counter()
            k2 = refactor(M, J, S, T)
            t_ref = min(t_ref, time.perf_counter() - t)
        out.append(f"| {m} | {n} | {J.shape[0] + 2 * n} | {k} ({k2}) | {1e3 * t_inc:.2f} | {1e3 * t_ref:.1f} |")
    return "\n".join(out)


def solver_only_timing(steps: int = 10, repeats: int = 20) -> str:
    """Best-of-``repeats`` times on the steps of one run (robust to a loaded machine): Stewart-Trinkle's
    LCP with Lemke vs the no-slip method. The no-slip method is FIND-INDICES + the null-space reduction
    (drumwright Alg. 2, eq. 56-57: the model's build) + the factored-LCP solve, so its "method" time
    includes both; the solve column alone is shown for reference, not as the method's cost."""
    import time

    import numpy as np

    from contactlab import solve
    from contactlab.models.noslip import build_noslip
    from contactlab.models.built import tangent_rows, touching
    from contactlab.blas import blas_threads
    from contactlab.scenarios.box_gripper import make_simulator

    def best_of(fn):
        fn()
        t_best = np.inf
        for _ in range(repeats):
            t = time.perf_counter()
            out = fn()
            t_best = min(t_best, time.perf_counter() - t)
        return t_best, out

    def steps_of(model, method):
        sim = make_simulator(model, method)
        out = []
        for _ in range(steps):
            sim.step()
            out.append((sim.last_system, sim.last_problem))
        return out

    def reduction(sys_):
        """FIND-INDICES + null-space reduction of the no-slip model on this step's system."""
        d = lambda X: X.toarray() if hasattr(X, "toarray") else np.asarray(X)
        m = sys_.ndof
        U = np.vstack([d(sys_.L).reshape(-1, m), d(sys_.N).reshape(-1, m)])
        S, T = tangent_rows(sys_, touching(sys_))
        from contactlab.models.noslip import motor_forces
        fm, _ = motor_forces(sys_)
        Mm, Jm, bias = d(sys_.M), d(sys_.J).reshape(-1, m), np.concatenate([sys_.l_bias, sys_.n_bias])
        return lambda: build_noslip(Mm, sys_.v, sys_.f + fm, sys_.h, U, S, T, Jm, J_rhs=sys_.j_rhs,
                                    normal_bias=bias, cfm=float(sys_.cfm))

    rows = ["| model | method | LCP variables | best solve ms | best FIND-INDICES + reduction ms | method ms "
            "(mean over steps) | pivots/iterations |", "|---|---|---|---|---|---|---|"]
    with blas_threads(1):
        cases = [("stewart-trinkle", "lemke"), ("no-slip", "ppm"), ("no-slip", "dantzig")]
        if "qp" in available_solvers():
            cases.append(("no-slip", "qp"))
        for model, method in cases:
            solve_t, red_t, piv = [], [], []
            run = steps_of(model, method)
            for sys_, p in run:
                t, sol = best_of(lambda: solve(p, method))
                solve_t.append(t)
                piv.append(max(sol.pivots, sol.iterations))
                red_t.append(best_of(reduction(sys_))[0] if model == "no-slip" else 0.0)
            rows.append(f"| {model} | {method} | {run[0][1].n} | {1e3 * np.mean(solve_t):.3f} | "
                        f"{1e3 * np.mean(red_t):.3f} | {1e3 * (np.mean(solve_t) + np.mean(red_t)):.3f} | "
                        f"{np.mean(piv):.1f} |")
    return "\n".join(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--json", default=None, help="write the rows as JSON (atomically)")
    ap.add_argument("--find-indices", action="store_true", help="also time FIND-INDICES (incremental vs refactor)")
    ap.add_argument("--find-indices-only", action="store_true", help="only the FIND-INDICES timing")
    ap.add_argument("--solver-only", action="store_true", help="only best-of-20 solve times per method")
    args = ap.parse_args(argv)
    if args.solver_only:
        print("## Solver alone (best of 20 per problem)\n")
        print(solver_only_timing())
        return
    if args.find_indices or args.find_indices_only:
        print("## FIND-INDICES\n")
        print(find_indices_timing())
        print()
        if args.find_indices_only:
            return
    configs = list(DEFAULT_CONFIGS)
    if "qp" in available_solvers():
        configs.insert(2, ("no-slip", "qp"))
    rows = table_one(configs, steps=tuple(args.steps), trials=args.trials,
                     progress=lambda label: print(label, file=sys.stderr, flush=True))
    print(f"# box-gripper, {platform.processor() or platform.machine()}, python {platform.python_version()}, "
          f"{args.trials} trials\n")
    print(markdown(rows))
    print()
    print(ratios(rows))
    print()
    for r in rows:
        for e in sorted(set(r["errors"])):
            print(f"- {r['model']}/{r['method']}, {r['steps']} steps: {r['errors'].count(e)} of "
                  f"{r['trials']} trials crashed at {e}")
    if args.json:
        atomic_write(args.json, lambda tmp: open(tmp, "w").write(json.dumps(rows, indent=1)))


if __name__ == "__main__":
    main()
