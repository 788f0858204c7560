"""Iterative and convex LCP solvers side by side with their peers, in one run (issue 3).

Families
  grasp     arechavaleta Table I shape: grasp-shaped boxed friction LCPs, 4-12 contacts, 2 tangent
            directions, joints eliminated (paper eq. 15), joint-limit rows, CFM 1e-11, static friction boxes;
            3- and 5-fingered hands. contactlab: lemke, pgs, pgs-sm (and interior-point, qp);
            Siconos on the same problems in their standard-LCP form (BoxedLCP.lcp_reduction).
  illcond   SPD with cond 1e6 and 1e10, dense (n = 250..2000) and sparse CSR (n = 1e3..1e5), known
            nondegenerate solution (contactlab.problems.conditioning).
  piles     frictionless contact LCPs N M^-1 N' of random piles of N boxes (N = 10..300).
Peers (optional, benchmarks/setup_peers.sh): Siconos numerics (PGS, PSOR, RPGS, CPG, NEWTON_FB,
NEWTON_MIN, CONVEXQP_PG, LEMKE; in /usr/bin/python3, timed inside that process), and the QP route
through proxsuite (contactlab "qp"), quadprog and OSQP.
Measure: time per solve to certified residual 1e-8 (the scale-free residual of problems/residual.py:
z in units of ||z||_inf, each w_i in units of its terms |q_i| + sum_j |M_ij z_j|; box form for boxed
problems; computed here from every returned z, peers included); a solve "reaches" when it is <= 1e-8. Siconos peers run at tol 1e-8 and again at 1e-12 when 1e-8 does not reach;
the faster run that reaches is reported. Iteration limits: Siconos 5000 on the grasp family (pgs: 20000
sweeps), elsewhere the same cap for every iterative method (a few seconds of sweeps); Siconos' Newton methods
(a factorisation per iteration) 200.

Usage: python benchmarks/bench_iterative.py [--quick] [--no-peers] [--out FILE.md | --update-docs]
"""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")   # time compiled kernels, not interpreted first calls (kernels/_jit.py)

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import contactlab as cl  # noqa: E402
from contactlab.problems import generators as gen  # noqa: E402
from contactlab.problems.conditioning import dense_ill_conditioned_lcp, sparse_ill_conditioned_lcp  # noqa: E402
from contactlab.problems.grasp import grasp_lcp  # noqa: E402
from contactlab.files import atomic_write  # noqa: E402
from contactlab.solvers import get_solver  # noqa: E402

SYSTEM_PYTHON = "/usr/bin/python3"
TARGET = 1e-8
PAPER_TABLE_I = {  # arechavaleta Table I, microseconds per solve (AMD Turion 64 X2, Fortran 77 / C++)
    3: {"lemke": (146, 7050, 672), "pgs": (97, 1332, 207), "pgs-sm": (84, 355, 145)},
    5: {"lemke": (220, 11820, 1885), "pgs": (95, 3348, 238), "pgs-sm": (79, 452, 155)},
}
SICONOS_ITERATIVE = ["PGS", "PSOR", "RPGS", "CPG", "NEWTON_FB", "NEWTON_MIN", "CONVEXQP_PG"]

warnings.filterwarnings("ignore")


# ------------------------------------------------------------------------------------------------
def natural_residual(problem, z) -> float:
    """The certified (scale-free) residual solve() uses (problems/residual.py relative_residuals)."""
    if z is None or not np.all(np.isfinite(z)):
        return float("inf")
    r = problem.relative_residuals(np.asarray(z, dtype=float))
    return float(max(r.natural, r.infeasibility))


def reaches(problem, res) -> bool:
    return res <= TARGET


def timed_solve(problem, method, reps, **opts):
    """Median wall time of ``cl.solve`` over reps (end to end: checks, dispatch, certification)."""
    times, sol = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        try:
            sol = cl.solve(problem, method, **opts)
        except Exception as exc:  # a failure is a result
            return {"time": time.perf_counter() - t0, "residual": float("inf"), "ok": False,
                    "error": f"{type(exc).__name__}: {exc}"[:120], "iterations": None}
        times.append(time.perf_counter() - t0)
        if sum(times) > 20.0 or not sol.success:   # a failed solve is not worth repeating
            break
    res = natural_residual(problem, sol.z)
    return {"time": float(np.median(times)), "residual": res, "ok": bool(reaches(problem, res)),
            "iterations": int(sol.iterations), "status": sol.status.name}


def timed_kernel_call(problem, method, reps, **opts):
    """Median time of the registered solver function alone (no trivial check, no certification)."""
    spec = get_solver(method)
    o = spec.make_options(opts)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        spec.func(problem, o, None)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def peers_available():
    import qpsolvers
    have = {"siconos": False, "quadprog": "quadprog" in qpsolvers.available_solvers,
            "osqp": "osqp" in qpsolvers.available_solvers, "proxsuite": "proxqp" in qpsolvers.available_solvers}
    if shutil.which(SYSTEM_PYTHON):
        r = subprocess.run([SYSTEM_PYTHON, "-c", "import siconos.numerics"], capture_output=True)
        have["siconos"] = r.returncode == 0
    return have


def run_siconos(jobs, workdir: Path, timeout: float = 1800.0, budget: float = 0.5):
    """jobs: list of (key, M dense, q, solver, tol, itermax, reps). Returns {key: (z, meta)}.
    Repetitions of one run stop once they have taken ``budget`` seconds (at least one runs)."""
    tasks = {"problems": {}, "runs": []}
    for k, (key, M, q, solver, tol, itermax, reps) in enumerate(jobs):
        path = workdir / f"p{k}.npz"
        np.savez(path, M=np.asarray(M, dtype=float), q=np.asarray(q, dtype=float))
        tasks["problems"][f"p{k}"] = str(path)
        tasks["runs"].append({"problem": f"p{k}", "solver": solver, "tol": tol, "itermax": itermax,
                              "reps": reps, "budget": budget})
    tpath, out = workdir / "tasks.json", workdir / "results.npz"
    tpath.write_text(json.dumps(tasks))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    with open(workdir / "siconos.log", "w") as log:
        proc = subprocess.run([SYSTEM_PYTHON, str(ROOT / "benchmarks/peers/siconos_iterative_runner.py"),
                               str(tpath), str(out)], stdout=log, stderr=subprocess.STDOUT, timeout=timeout, env=env)
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError("Siconos runner failed: " + (workdir / "siconos.log").read_text()[-1500:])
    with np.load(out) as d:
        meta = json.loads(str(d["meta"]))
        return {job[0]: (d[f"z_{k}"], meta[k]) for k, job in enumerate(jobs)}


def siconos_results(problem_items, solvers, workdir, reps):
    """problem_items: list of (pid, problem, M, q, lift, itermax). Per (pid, solver): the run at tol 1e-8, and when
    Siconos reported convergence (info 0) but our residual is above 1e-8, a second run at tol 1e-12; the
    faster run that reaches 1e-8 is kept, else the one with the lower residual."""
    out = {}
    for tol in (1e-8, 1e-12):
        jobs = []
        for pid, problem, M, q, lift, itermax in problem_items:
            for s in solvers:
                prev = out.get((pid, s))
                if prev is not None and (prev["ok"] or prev["info"] != 0):
                    continue
                # Newton methods factor a matrix per iteration: 200 iterations is generous for them
                its = 100 * len(q) + 100 if s == "LEMKE" else min(itermax, 200) if s.startswith("NEWTON") else itermax
                jobs.append(((pid, s, tol), M, q, s, tol, its, reps))
        if not jobs:
            break
        res = run_siconos(jobs, workdir)
        for pid, problem, M, q, lift, _ in problem_items:
            for s in solvers:
                if (pid, s, tol) not in res:
                    continue
                z, meta = res[(pid, s, tol)]
                r = natural_residual(problem, lift(z))
                t = float(np.median(meta["times"])) if meta["times"] else float("inf")
                entry = {"time": t, "residual": r, "ok": bool(reaches(problem, r)), "iterations": meta["iterations"],
                         "info": meta["info"], "tol": tol}
                prev = out.get((pid, s))
                if prev is None or (entry["ok"] and not prev["ok"]) or (entry["ok"] and prev["ok"] and t < prev["time"]) \
                        or (not entry["ok"] and not prev["ok"] and r < prev["residual"]):
                    out[(pid, s)] = entry
    return out


# ------------------------------------------------------------------------------------------------
# family 1: grasp (Table I)
# ------------------------------------------------------------------------------------------------
def bench_grasp(count, reps, peers, workdir, seed=2010):
    rng = np.random.default_rng(seed)
    rows = {}
    per_problem = {}
    for fingers in (3, 5):
        problems = []
        for k in range(count):
            nc = int(rng.integers(4, 13))
            g = grasp_lcp(nc, rng, fingers=fingers, mu_hand=float(rng.choice([0.2, 1.0])),
                          limits=int(rng.integers(0, 3)))
            problems.append(g)
        methods = {"lemke": {}, "pgs": {"tol": TARGET, "max_sweeps": 20000}, "pgs-sm": {"tol": TARGET},
                   "interior-point": {}, "qp": {}}
        if peers.get("quadprog"):
            methods["qp-quadprog"] = {"backend": "quadprog"}
        if peers.get("osqp"):
            methods["qp-osqp"] = {"backend": "osqp"}
        results = {m: [] for m in methods}
        kernel_times = {"pgs": [], "pgs-sm": []}
        for g in problems:
            P = g.problem
            for label, opts in methods.items():
                method = "qp" if label.startswith("qp") else label
                results[label].append(timed_solve(P, method, reps, **opts))
            for m in kernel_times:
                kernel_times[m].append(timed_kernel_call(P, m, reps, **methods[m]))
        if peers.get("siconos"):
            items = []
            for k, g in enumerate(problems):
                lcp, lift = g.problem.lcp_reduction()
                items.append((k, g.problem, lcp.dense_M(), lcp.q, lift, 5000))
            sic = siconos_results(items, SICONOS_ITERATIVE + ["LEMKE"], workdir, reps)
            for s in SICONOS_ITERATIVE + ["LEMKE"]:
                results[f"siconos-{s.lower()}"] = [sic[(k, s)] for k in range(len(problems))]
        rows[fingers] = results
        per_problem[fingers] = {"n": [g.problem.n for g in problems], "contacts": [g.n_contacts for g in problems],
                                "cond": [g.condition for g in problems], "kernel": kernel_times}
    return rows, per_problem


# ------------------------------------------------------------------------------------------------
# family 2: ill-conditioned SPD, dense and sparse
# ------------------------------------------------------------------------------------------------
def sweep_cap(problem, seconds=8.0):
    nnz = problem.M.nnz if sp.issparse(problem.M) else problem.n ** 2
    return int(max(50, min(20000, seconds * 3e8 / max(nnz, 1))))


def bench_illcond(sizes_dense, sizes_sparse, reps, peers, workdir, seed=77):
    rng = np.random.default_rng(seed)
    out = []
    cases = []
    for cond in (1e6, 1e10):
        for n in sizes_dense:
            P, _ = dense_ill_conditioned_lcp(n, cond, rng)
            cases.append(("dense", n, cond, P))
        for n in sizes_sparse:
            P, _ = sparse_ill_conditioned_lcp(n, cond, rng)
            cases.append(("sparse", n, cond, P))
    for kind, n, cond, P in cases:
        cap = sweep_cap(P)
        methods = {"pgs": {"tol": TARGET, "max_sweeps": cap}, "psor": {"tol": TARGET, "max_sweeps": cap},
                   "pgs-sm": {"tol": TARGET}, "interior-point": {}}
        if kind == "dense" and n <= 1000 or kind == "sparse" and n <= 10000:
            methods["qp"] = {}
        if kind == "dense" and n <= 1000 and peers.get("quadprog"):
            methods["qp-quadprog"] = {"backend": "quadprog"}
        if peers.get("osqp") and n <= 10000 and (kind == "sparse" or n <= 1000):
            methods["qp-osqp"] = {"backend": "osqp"}
        if kind == "dense" and n <= 1000:
            methods["lemke"] = {}
        row = {"kind": kind, "n": n, "cond": cond, "results": {}}
        for label, opts in methods.items():
            method = "qp" if label.startswith("qp") else label
            row["results"][label] = timed_solve(P, method, reps if n <= 2000 else 1, **opts)
        out.append(row)
    if peers.get("siconos"):
        items = [(k, r_P[3], r_P[3].M, r_P[3].q, lambda z: z, sweep_cap(r_P[3])) for k, r_P in enumerate(cases)
                 if r_P[0] == "dense"]
        sic = siconos_results(items, SICONOS_ITERATIVE, workdir, reps)
        for k, row in enumerate(out):
            if row["kind"] != "dense":
                continue
            for s in SICONOS_ITERATIVE:
                if (k, s) in sic:
                    row["results"][f"siconos-{s.lower()}"] = sic[(k, s)]
    return out


# ------------------------------------------------------------------------------------------------
# family 3: piles of boxes
# ------------------------------------------------------------------------------------------------
def bench_piles(sizes, reps, peers, workdir, seed=5):
    rng = np.random.default_rng(seed)
    out, probs = [], []
    for N in sizes:
        P = gen.box_stack_contact_lcp(N, rng)
        probs.append(P)
        cap = sweep_cap(P)
        methods = {"pgs": {"tol": TARGET, "max_sweeps": cap}, "psor": {"tol": TARGET, "max_sweeps": cap},
                   "pgs-sm": {"tol": TARGET}, "pgs-sm-cfm": {"tol": TARGET, "cfm": 1e-11},
                   "interior-point": {}, "lemke": {}, "dantzig": {}, "qp": {}}
        row = {"N": N, "n": P.n, "results": {}}
        for label, opts in methods.items():
            method = "pgs-sm" if label == "pgs-sm-cfm" else label
            row["results"][label] = timed_solve(P, method, reps, **opts)
        out.append(row)
    if peers.get("siconos"):
        items = [(k, P, P.M, P.q, lambda z: z, sweep_cap(P)) for k, P in enumerate(probs)]
        sic = siconos_results(items, SICONOS_ITERATIVE, workdir, reps)
        for k, row in enumerate(out):
            for s in SICONOS_ITERATIVE:
                row["results"][f"siconos-{s.lower()}"] = sic[(k, s)]
    return out


def sparse_pile(N, rng):
    """The pile LCP N M^-1 N' kept sparse (CSR): M is block diagonal, so each row couples two bodies."""
    F = gen.box_stack_factored(N, rng)
    Nc = sp.csr_matrix(F.N)
    Minv = sp.csr_matrix(np.linalg.inv(F.M)) if not sp.issparse(F.M) else sp.csr_matrix(sp.linalg.inv(F.M.tocsc()))
    Minv.data[np.abs(Minv.data) < 1e-14 * np.abs(Minv.data).max()] = 0.0
    Minv.eliminate_zeros()
    Q = (Nc @ Minv @ Nc.T).tocsr()
    Q = ((Q + Q.T) * 0.5).tocsr()
    return cl.LCP(Q, F.q)


def bench_piles_sparse(sizes, seed=6):
    """Piles of N boxes with the LCP matrix in CSR (not densified): pgs, psor, pgs-sm (+CFM), interior-point."""
    rng = np.random.default_rng(seed)
    rows = []
    for N in sizes:
        P = sparse_pile(N, rng)
        cap = sweep_cap(P, 20.0)
        row = {"N": N, "n": P.n, "nnz": P.M.nnz, "results": {}}
        for label, method, opts in (("pgs", "pgs", {"tol": TARGET, "max_sweeps": cap}),
                                    ("psor", "psor", {"tol": TARGET, "max_sweeps": cap}),
                                    ("pgs-sm", "pgs-sm", {"tol": TARGET, "max_outer": 200}),
                                    ("pgs-sm-cfm", "pgs-sm", {"tol": TARGET, "cfm": 1e-11, "max_outer": 200}),
                                    ("interior-point", "interior-point", {})):
            row["results"][label] = timed_solve(P, method, 1, **opts)
        rows.append(row)
        print(f"  N={N} done", flush=True)
    labels = ["pgs", "psor", "pgs-sm", "pgs-sm-cfm", "interior-point"]
    L = ["| N | n | nnz | " + " | ".join(labels) + " |", "|---|---|---|" + "---|" * len(labels)]
    for r in rows:
        L.append(f"| {r['N']} | {r['n']} | {r['nnz']} | " + " | ".join(cell(r["results"].get(l)) for l in labels) + " |")
    return rows, "\n".join(L)


# ------------------------------------------------------------------------------------------------
def fmt_t(t):
    if t is None or not np.isfinite(t):
        return "-"
    return f"{t * 1e6:.0f} us" if t < 1e-2 else f"{t * 1e3:.1f} ms" if t < 10 else f"{t:.1f} s"


def cell(r):
    if r is None:
        return "-"
    if "error" in r:
        return "error"
    return f"{fmt_t(r['time'])}{'' if r['ok'] else ' ✗'} ({r['residual']:.0e})"


def figure(ill, piles, path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [("dense", 1e6), ("dense", 1e10), ("sparse", 1e6), ("sparse", 1e10), ("piles", None)]
    all_labels = sorted({l for r in list(ill) + list(piles) for l in r["results"]})
    cmap = plt.get_cmap("tab20")
    colors = {l: cmap(k % 20) for k, l in enumerate(all_labels)}
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), sharey=False)
    for ax, (kind, cond) in zip(axes, panels):
        rows = piles if kind == "piles" else [r for r in ill if r["kind"] == kind and r["cond"] == cond]
        if not rows:
            ax.set_visible(False)
            continue
        labels = sorted({l for r in rows for l in r["results"]})
        for label in labels:
            style = "--" if label.startswith("siconos") else ":" if label.startswith("qp-") else "-"
            xs, ys, ok = [], [], []
            for r in rows:
                v = r["results"].get(label)
                if v is None or "error" in v:
                    continue
                xs.append(r["n"])
                ys.append(v["time"])
                ok.append(v["ok"])
            if not xs:
                continue
            line, = ax.loglog(xs, ys, style, label=label, lw=1.4, color=colors[label])
            ax.loglog([x for x, o in zip(xs, ok) if o], [y for y, o in zip(ys, ok) if o], "o", color=line.get_color(), ms=4)
            ax.loglog([x for x, o in zip(xs, ok) if not o], [y for y, o in zip(ys, ok) if not o], "x",
                      color=line.get_color(), ms=6)
        ax.set_title("piles of boxes" if kind == "piles" else f"{kind} SPD, cond {cond:.0e}")
        ax.set_xlabel("n")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("time per solve [s] (x: residual 1e-8 not reached)")
    handles, labels = [], []
    for ax in axes:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    fig.legend(handles, labels, loc="lower center", ncol=min(8, len(labels)), fontsize=8, bbox_to_anchor=(0.5, -0.12))
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png"))
    plt.close(fig)


def stats_us(vals):
    a = np.array(vals) * 1e6
    return a.min(), a.max(), a.mean()


def report(grasp, grasp_meta, ill, piles, peers, args, elapsed) -> str:
    L = ["# Benchmarks: iterative and convex LCP solvers (issue 3)", "",
         f"Generated by `python benchmarks/bench_iterative.py{' --quick' if args.quick else ''}` on "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} in {elapsed:.0f} s; {os.cpu_count()} CPU cores "
         "(shared with other jobs: absolute times are noisy, ratios within one run are the measurement). "
         f"Peers found: {', '.join(k for k, v in peers.items() if v) or 'none'}"
         f"{'' if peers.get('siconos') else ' (Siconos missing: run benchmarks/setup_peers.sh)'}.", "",
         "Every time is the median over repetitions of one solve, **end to end** for contactlab (`cl.solve`: "
         "checks, dispatch, solver, certification) and the driver call alone for Siconos (timed inside its own "
         "process). A cell reads `time (certified residual reached)`; ✗ marks a solve that did not reach the "
         "scale-free residual 1e-8 of problems/residual.py (always recomputed here from the returned z, peers "
         "included).", ""]
    # ---- Table I ----
    L += ["## Grasp-shaped boxed friction LCPs: arechavaleta Table I", "",
          "Same shape as the paper: min / max / mean time per solve over the problems of each hand, beside the "
          "paper's numbers (Fortran 77 on an AMD Turion 64 X2, 2009). Problems: `contactlab.problems.grasp.grasp_lcp` "
          "(4-12 contacts, 2 tangent directions, joints eliminated as in eq. 15, 0-2 joint-limit rows, CFM 1e-11, "
          "static friction boxes +-mu c~_n, mu in {0.2, 1.0}); pgs and pgs-sm stop at residual 1e-8 (paper: tol 1e-8, "
          "k_PGS = 5, k_SM = 2). `solved` counts solves that reached 1e-8.", ""]
    for fingers, res in grasp.items():
        meta = grasp_meta[fingers]
        L += [f"### {fingers}-fingered hand ({len(meta['n'])} problems, n = {min(meta['n'])}-{max(meta['n'])}, "
              f"cond(A) median {np.median(meta['cond']):.1e})", "",
              "| method | min | max | mean | paper min / max / mean | solved | worst residual |", "|---|---|---|---|---|---|---|"]
        for label, rs in res.items():
            t = [r["time"] for r in rs]
            mn, mx, me = stats_us(t)
            paper = PAPER_TABLE_I[fingers].get(label)
            ptxt = " / ".join(f"{v}" for v in paper) + " us" if paper else ""
            ok = sum(r["ok"] for r in rs)
            worst = max(r["residual"] for r in rs)
            L.append(f"| {label} | {mn:.0f} us | {mx:.0f} us | {me:.0f} us | {ptxt} | {ok}/{len(rs)} | {worst:.1e} |")
        for m, ts in meta["kernel"].items():
            mn, mx, me = stats_us(ts)
            L.append(f"| {m} (solver function only) | {mn:.0f} us | {mx:.0f} us | {me:.0f} us | | | |")
        L.append("")
    # targets
    L += ["### Targets on the grasp family", ""]
    for fingers, res in grasp.items():
        sm = np.array([r["time"] for r in res["pgs-sm"]])
        sm_ok = np.array([r["ok"] for r in res["pgs-sm"]])
        le = np.array([r["time"] for r in res["lemke"]])
        le_ok = np.array([r["ok"] for r in res["lemke"]])
        both = sm_ok & le_ok
        faster = int(np.sum(sm[both] < le[both]))
        L.append(f"- {fingers} fingers: pgs-sm faster than lemke on {faster}/{int(both.sum())} problems both solved "
                 f"(lemke solved {int(le_ok.sum())}/{len(le)}; mean time ratio lemke/pgs-sm on those "
                 f"{np.mean(le[both] / sm[both]) if both.any() else float('nan'):.2f}).")
        sic = {k: v for k, v in res.items() if k.startswith("siconos-") and k != "siconos-lemke"}
        if sic:
            kern = np.array(grasp_meta[fingers]["kernel"]["pgs-sm"])
            parts = []
            for k, rs in sic.items():
                ok = np.array([r["ok"] for r in rs]) & sm_ok
                if not ok.any():
                    parts.append(f"{k[8:]} reached 1e-8 on 0/{len(rs)}")
                    continue
                t = np.array([r["time"] for r in rs])[ok]
                parts.append(f"{k[8:]} reached 1e-8 on {int(ok.sum())}/{len(rs)}, mean {t.mean() * 1e6:.0f} us there "
                             f"vs pgs-sm {sm[ok].mean() * 1e6:.0f} us end to end ({t.mean() / sm[ok].mean():.1f}x) and "
                             f"{kern[ok].mean() * 1e6:.0f} us solver function ({t.mean() / kern[ok].mean():.1f}x)")
            L.append("  Siconos iterative solvers on the problems they solved (time ratio Siconos / pgs-sm): " +
                     "; ".join(parts) + ".")
    L.append("")
    # ---- ill-conditioned ----
    L += ["## Ill-conditioned SPD LCPs (dense and sparse CSR)", "",
          "`contactlab.problems.conditioning`: eigenvalues geometric in [1/cond, 1] with a Haar-random basis (dense), "
          "or a shifted 1-D Laplacian (or its square) scaled to the same condition number (sparse, banded). "
          "PGS/PSOR sweep limits are capped so one solve costs at most a few seconds; ✗ = limit hit first.", ""]
    labels = []
    for r in ill:
        for l in r["results"]:
            if l not in labels:
                labels.append(l)
    L += ["| matrix | n | cond | " + " | ".join(labels) + " |", "|---|---|---|" + "---|" * len(labels)]
    for r in ill:
        L.append(f"| {r['kind']} | {r['n']} | {r['cond']:.0e} | " + " | ".join(cell(r["results"].get(l)) for l in labels) + " |")
    L.append("")
    speed = []
    for r in ill:
        a, b = r["results"]["pgs-sm"], r["results"]["pgs"]
        if a["ok"]:
            lower = "" if b["ok"] else " (pgs did not reach 1e-8: a lower bound)"
            speed.append(f"{r['kind']} n={r['n']} cond={r['cond']:.0e}: {b['time'] / a['time']:.1f}x{lower}")
    L += ["Target `pgs-sm` >= 5x faster than `pgs` to 1e-8 (time pgs / time pgs-sm): " + "; ".join(speed) + ".", ""]
    # ---- piles ----
    labels = []
    for r in piles:
        for l in r["results"]:
            if l not in labels:
                labels.append(l)
    L += ["## Contact LCPs of piles of boxes", "",
          "`generators.box_stack_contact_lcp(N)`: frictionless N M^-1 N' (symmetric PSD, rank-deficient).", "",
          "| N | n | " + " | ".join(labels) + " |", "|---|---|" + "---|" * len(labels)]
    for r in piles:
        L.append(f"| {r['N']} | {r['n']} | " + " | ".join(cell(r["results"].get(l)) for l in labels) + " |")
    L += ["", "![time vs n](figures/bench_iterative_time_vs_n.png)", ""]
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--out", default=None, help="Markdown output (default out/bench/benchmarks-iterative.md, "
                    "untracked; the figure and raw JSON go beside it)")
    ap.add_argument("--update-docs", action="store_true", help="write docs/benchmarks-iterative.md, its figure "
                    "and benchmarks/results/iterative.json (the tracked copies)")
    ap.add_argument("--piles-sparse", action="store_true", help="only the sparse (CSR) pile family, N = 100..1000; "
                    "prints a Markdown table")
    ap.add_argument("--replot", action="store_true", help="redraw the figure from benchmarks/results/iterative.json")
    args = ap.parse_args()
    if args.out is None:
        args.out = str(ROOT / ("docs" if args.update_docs else "out/bench") / "benchmarks-iterative.md")
    raw_json = ROOT / "benchmarks/results/iterative.json" if args.update_docs else Path(args.out).parent / "iterative.json"
    if args.piles_sparse:
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
        _, table = bench_piles_sparse([100, 300, 1000])
        print(table)
        return
    if args.replot:
        raw = json.loads((ROOT / "benchmarks/results/iterative.json").read_text())
        figure(raw["illcond"], raw["piles"], Path(args.out).parent / "figures" / "bench_iterative_time_vs_n.png")
        return
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)          # BLAS on one thread for every method (Siconos too, through its env)
    peers = {} if args.no_peers else peers_available()
    t0 = time.perf_counter()
    # warm the numba caches so compilation is not timed
    warm = gen.random_spd(6, np.random.default_rng(0))
    for m in ("pgs", "psor", "pgs-sm", "interior-point"):
        cl.solve(warm, m)
        cl.solve(cl.LCP(sp.csr_matrix(warm.M), warm.q), m)
    for m in ("lemke", "dantzig"):          # timed on the grasp, ill-conditioned and pile families too
        cl.solve(warm, m)
    for m in ("pgs-sm", "pgs", "lemke"):
        cl.solve(grasp_lcp(4, np.random.default_rng(0)).problem, m)
    if args.quick:
        count, reps, dense, sparse_, piles_n = 25, 3, [250, 500], [1000, 10000], [10, 30, 100]
    else:
        count, reps, dense, sparse_, piles_n = 100, 5, [250, 500, 1000, 2000], [1000, 10000, 100000], [10, 30, 100]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print("grasp family ...", flush=True)
        grasp, grasp_meta = bench_grasp(count, reps, peers, work)
        print(f"  {time.perf_counter() - t0:.0f} s; ill-conditioned family ...", flush=True)
        ill = bench_illcond(dense, sparse_, reps, peers, work)
        print(f"  {time.perf_counter() - t0:.0f} s; piles of boxes ...", flush=True)
        piles = bench_piles(piles_n, reps, peers, work)
    elapsed = time.perf_counter() - t0
    out = Path(args.out)
    figure(ill, piles, out.parent / "figures" / "bench_iterative_time_vs_n.png")
    text = report(grasp, grasp_meta, ill, piles, peers, args, elapsed)
    atomic_write(out, lambda tmp: Path(tmp).write_text(text))
    raw = {"grasp": {str(k): v for k, v in grasp.items()}, "grasp_meta": {str(k): v for k, v in grasp_meta.items()},
           "illcond": ill, "piles": piles, "peers": peers}
    atomic_write(raw_json,
                 lambda tmp: Path(tmp).write_text(json.dumps(raw, default=float, indent=1)))
    print(text)
    print(f"done in {elapsed:.0f} s -> {out}")


if __name__ == "__main__":
    main()
